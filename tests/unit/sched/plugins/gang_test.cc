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

// A job whose tasks form sub-groups by their `partition` label: policy "worker", 2 tasks each, 2 needed.
JobInfo PartitionedJob(int32_t min_member) {
  JobInfo j;
  j.key = "ns/tp";
  j.ns = "ns";
  j.name = "tp";
  j.min_member = min_member;
  SubGroupPolicy p;
  p.name = "worker";
  p.size = 2;
  p.min_groups = 2;
  p.match_label_keys = {"partition"};
  j.sub_group_policies.push_back(p);
  return j;
}

// Volcano's CheckSubJobReady / CheckSubJobPipelined: a job with subGroupPolicy is ready when minSubGroups of
// each policy's sub-groups have subGroupSize tasks ready; tasks no policy takes (no partition label, or an
// empty one) are in the default group, which counts for minMember only.
TEST(Gang, SubGroupsReadyAndPipelinedNeedMinSubGroupsOfEachPolicy) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  h.AddNode("n1", Resource::CpuMem(64000, 64 * kGi));
  JobInfo j = PartitionedJob(4);
  h.st.UpsertJob(j);
  // Partitions 0 and 1 of two pods; one pod with an empty partition label (default group).
  auto pod = [&](const std::string& uid, const std::string& part, TaskStatus st) {
    TaskInfo t = Harness::Pod(uid, Resource::Cpu(1000));
    t.ns = "ns";
    t.job = j.key;
    t.labels = {{"partition", part}};
    t.status = st;
    if (st != TaskStatus::kPending) t.node = "n1";
    h.AddPod(t);
  };
  pod("a0", "0", TaskStatus::kRunning);
  pod("a1", "0", TaskStatus::kRunning);
  pod("b0", "1", TaskStatus::kRunning);
  pod("b1", "1", TaskStatus::kPending);
  pod("x", "", TaskStatus::kRunning);
  Session& s = h.Open();
  const JobInfo& job = *h.st.FindJob(j.key);
  std::string id;
  EXPECT_EQ(job.SubGroupOf(*h.st.FindTask("b1"), &id), 0);
  EXPECT_EQ(id, "1");
  EXPECT_EQ(job.SubGroupOf(*h.st.FindTask("x"), &id), -1);
  EXPECT_TRUE(s.JobValid(job).pass);
  // Four ready pods meet minMember, but only partition 0 is whole.
  EXPECT_EQ(job.ReadyCount(), 4);
  EXPECT_FALSE(s.JobReady(job));
  EXPECT_FALSE(s.JobPipelined(job));
  {
    Statement st(&h.st);
    ASSERT_TRUE(st.Pipeline("b1", "n1").ok());
    EXPECT_FALSE(s.JobReady(job));
    EXPECT_TRUE(s.JobPipelined(job));
  }
  {
    Statement st(&h.st);
    ASSERT_TRUE(st.Allocate("b1", "n1").ok());
    EXPECT_TRUE(s.JobReady(job));
  }
  // A policy without matchLabelKeys takes no task (Volcano's rule): minSubGroups 1 of it can never be met.
  JobInfo k = job;
  k.sub_group_policies[0].match_label_keys.clear();
  k.sub_group_policies[0].min_groups = 1;
  EXPECT_EQ(k.SubGroupOf(*h.st.FindTask("a0"), &id), -1);
  h.st.UpsertJob(k);
  ValidateResult v = s.JobValid(*h.st.FindJob(j.key));
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.message, "Not enough valid subGroups of policy worker for gang-scheduling, valid: 0, min: 1");
}

// Volcano's gang victim rule: only tasks above minAvailable are offered, even when every placed task of the
// job is a candidate (the whole job is never offered).
TEST(Gang, VictimsAreOnlyTheSurplusAboveMinMemberNeverTheWholeJob) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  h.AddNode("n1", Resource::CpuMem(64000, 64 * kGi));
  JobInfo j;
  j.key = "ns/g";
  j.min_member = 2;
  h.st.UpsertJob(j);
  std::vector<const TaskInfo*> all;
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = Harness::Pod("g" + std::to_string(i), Resource::Cpu(1000));
    t.job = j.key;
    t.status = TaskStatus::kRunning;
    t.node = "n1";
    h.AddPod(t);
  }
  for (int i = 0; i < 3; ++i) all.push_back(h.st.FindTask("g" + std::to_string(i)));
  Session& s = h.Open();
  TaskInfo preemptor = Harness::Pod("hi", Resource::Cpu(1000));
  preemptor.priority = 100;
  EXPECT_EQ(s.Preemptable(preemptor, all), (std::vector<const TaskInfo*>{all[0]})) << "3 running, minMember 2";
  EXPECT_EQ(s.Reclaimable(preemptor, all), (std::vector<const TaskInfo*>{all[0]}));
  JobInfo at_min = *h.st.FindJob(j.key);
  at_min.min_member = 3;
  h.st.UpsertJob(at_min);
  EXPECT_TRUE(s.Preemptable(preemptor, all).empty()) << "a job at its minimum offers nothing";
}

// A deliberate difference from Volcano's preempt/reclaim (which check minAvailable only): a victim job keeps
// minSubGroups whole sub-groups of each policy. Here minMember 5 of 8 running tasks allows 3 victims, but only
// one whole partition beyond the two that minSubGroups needs may be broken; tasks of an already broken
// partition and of the default group are free to go.
TEST(Gang, VictimsNeverBreakMoreSubGroupsThanMinSubGroupsAllows) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  h.AddNode("n1", Resource::CpuMem(64000, 64 * kGi));
  JobInfo j = PartitionedJob(5);
  h.st.UpsertJob(j);
  auto pod = [&](const std::string& uid, const std::string& part) {
    TaskInfo t = Harness::Pod(uid, Resource::Cpu(1000));
    t.ns = "ns";
    t.job = j.key;
    t.labels = {{"partition", part}};
    t.status = TaskStatus::kRunning;
    t.node = "n1";
    h.AddPod(t);
    return h.st.FindTask(uid);
  };
  // Partitions 0, 1 and 2 are whole; partition 3 has one of its two pods; x is in the default group.
  const TaskInfo* a0 = pod("a0", "0");
  const TaskInfo* a1 = pod("a1", "0");
  const TaskInfo* b0 = pod("b0", "1");
  pod("b1", "1");
  pod("c0", "2");
  pod("c1", "2");
  const TaskInfo* d0 = pod("d0", "3");
  const TaskInfo* x = pod("x", "");
  Session& s = h.Open();
  TaskInfo preemptor = Harness::Pod("hi", Resource::Cpu(1000));
  preemptor.priority = 100;
  // a0 breaks partition 0 (3 whole -> 2); a1 then leaves it broken; b0 would break a second one (2 -> 1).
  EXPECT_EQ(s.Preemptable(preemptor, {a0, a1, b0}), (std::vector<const TaskInfo*>{a0, a1}));
  // The broken partition and the default group go first without touching the whole ones; then minMember stops.
  EXPECT_EQ(s.Preemptable(preemptor, {d0, x, b0, a0}), (std::vector<const TaskInfo*>{d0, x, b0}));
  EXPECT_EQ(s.Reclaimable(preemptor, {b0, a0}), (std::vector<const TaskInfo*>{b0}));
  // Without minSubGroups only minMember counts.
  JobInfo loose = *h.st.FindJob(j.key);
  loose.sub_group_policies[0].min_groups = 0;
  h.st.UpsertJob(loose);
  EXPECT_EQ(s.Preemptable(preemptor, {a0, a1, b0}), (std::vector<const TaskInfo*>{a0, a1, b0}));
}

}  // namespace
}  // namespace tephra::sched
