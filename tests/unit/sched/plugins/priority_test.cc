#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;

TEST(Priority, OrdersJobsAndTasksAndPreemptsOnlyStrictlyLower) {
  Harness h;
  h.Add(PluginOption::Named("priority"));
  JobInfo hi, lo, mid;
  hi.key = "ns/hi";
  hi.priority = 10;
  lo.key = "ns/lo";
  lo.priority = 1;
  mid.key = "ns/mid";
  mid.priority = 10;
  for (const JobInfo& j : {hi, lo, mid}) h.st.UpsertJob(j);
  h.AddNode("n", Resource::Cpu(8000));
  auto running = [&](const std::string& uid, const std::string& job, int32_t prio) {
    TaskInfo t = Harness::Pod(uid, Resource::Cpu(100));
    t.job = job;
    t.priority = prio;
    t.status = TaskStatus::kRunning;
    t.node = "n";
    return &h.AddPod(t);
  };
  const TaskInfo* v_lo = running("lo-0", lo.key, 1);
  const TaskInfo* v_mid = running("mid-0", mid.key, 10);
  const TaskInfo* v_same_low = running("hi-low", hi.key, 0);  // same job, lower pod priority
  Session& s = h.Open();
  EXPECT_TRUE(s.JobLess(*h.st.FindJob(hi.key), *h.st.FindJob(lo.key)));
  TaskInfo a = Harness::Pod("a", Resource::Cpu(1)), b = Harness::Pod("b", Resource::Cpu(1));
  a.priority = 5;
  EXPECT_TRUE(s.TaskLess(a, b));
  TaskInfo preemptor = Harness::Pod("hi-p", Resource::Cpu(100));
  preemptor.job = hi.key;
  preemptor.priority = 5;
  // Equal job priority (mid) is never a victim; a lower-priority pod of the same job is.
  std::vector<const TaskInfo*> victims = s.Preemptable(preemptor, {v_lo, v_mid, v_same_low});
  EXPECT_EQ(victims, (std::vector<const TaskInfo*>{v_lo, v_same_low}));
}

}  // namespace
}  // namespace tephra::sched
