#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

TEST(Gang, ValidReadyAndOrder) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  h.Add(PluginOption::Named("priority"));
  Session& s = h.Open();
  JobInfo j;
  j.min_member = 3;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 2;
  ValidateResult v = s.JobValid(j);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughTasks");
  j.status_count[static_cast<size_t>(TaskStatus::kRunning)] = 1;
  EXPECT_TRUE(s.JobValid(j).pass);
  EXPECT_FALSE(s.JobReady(j));
  j.status_count[static_cast<size_t>(TaskStatus::kAllocated)] = 2;
  EXPECT_TRUE(s.JobReady(j));
  JobInfo hi = j, lo = j;
  hi.priority = 10;
  hi.key = "b";
  lo.key = "a";
  EXPECT_TRUE(s.JobLess(hi, lo));  // gang ties (both ready), priority decides
  JobInfo notready = lo;
  notready.status_count.fill(0);
  notready.status_count[static_cast<size_t>(TaskStatus::kPending)] = 3;
  EXPECT_TRUE(s.JobLess(notready, hi));  // gang tier first: not-ready jobs first
}

// Volcano's CheckTaskValid: per-task minimums are checked only when minMember >= their sum. An MPI job whose
// launcher dependsOn 2 workers (minAvailable 2; minTaskMember launcher 1, worker 2) must be valid with only the
// 2 worker pods existing; with minAvailable 3 the launcher's minimum binds and the job is not valid.
TEST(Gang, PerTaskMinimumsBindOnlyWhenMinMemberCoversThem) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  Session& s = h.Open();
  JobInfo j;
  j.min_member = 2;
  j.min_task_member = {{"mpimaster", 1}, {"mpiworker", 2}};
  j.role_valid["mpiworker"] = 2;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 2;
  EXPECT_TRUE(s.JobValid(j).pass);
  j.min_member = 3;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 3;  // enough tasks overall...
  j.role_valid["mpiworker"] = 3;
  ValidateResult v = s.JobValid(j);  // ...but none of the launcher
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughPodsOfTask");
  EXPECT_EQ(v.message, "Not enough valid pods of task mpimaster, valid: 0, min: 1");
}

}  // namespace
}  // namespace tephra::sched
