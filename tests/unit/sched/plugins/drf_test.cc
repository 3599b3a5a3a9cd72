#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;

TEST(Drf, OrdersByDominantShareAndPreemptsOnlyLargerShares) {
  Harness h;
  h.Add(PluginOption::Named("drf"));
  h.AddNode("n", Resource::Cpu(10000));
  JobInfo big, small, pre;
  big.key = "ns/big";
  small.key = "ns/small";
  pre.key = "ns/pre";
  for (const JobInfo& j : {big, small, pre}) h.st.UpsertJob(j);
  auto running = [&](const std::string& uid, const std::string& job, int64_t cpu) {
    TaskInfo t = Harness::Pod(uid, Resource::Cpu(cpu));
    t.job = job;
    t.status = TaskStatus::kRunning;
    t.node = "n";
    return &h.AddPod(t);
  };
  const TaskInfo* b0 = running("big-0", big.key, 3000);
  const TaskInfo* b1 = running("big-1", big.key, 3000);
  const TaskInfo* s0 = running("small-0", small.key, 1000);
  Session& s = h.Open();
  // Smaller dominant share goes first.
  EXPECT_TRUE(s.JobLess(*h.st.FindJob(small.key), *h.st.FindJob(big.key)));
  TaskInfo preemptor = Harness::Pod("pre-0", Resource::Cpu(2000));
  preemptor.job = pre.key;
  // The preemptor's share after gaining 2000m is 0.2: big keeps 0.3 after losing one task (allowed) but 0
  // after losing both (the second is refused); small would fall to 0 (refused).
  std::vector<const TaskInfo*> victims = s.Preemptable(preemptor, {b0, b1, s0});
  EXPECT_EQ(victims, (std::vector<const TaskInfo*>{b0}));
}

}  // namespace
}  // namespace tephra::sched
