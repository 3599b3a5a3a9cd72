#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

TEST(TaskTopology, AffinityScoresNodesHoldingAffineRoles) {
  Harness h;
  h.Add(PluginOption::Named("task-topology"));
  h.AddNode("a", Resource::Cpu(8000));
  h.AddNode("b", Resource::Cpu(8000));
  JobInfo j;
  j.key = "ns/j";
  j.task_topology_affinity = "ps,worker";
  j.task_topology_anti_affinity = "chief";
  j.task_topology_order = "ps,worker";
  h.st.UpsertJob(j);
  TaskInfo ps = Harness::Pod("ps0", Resource::Cpu(100));
  ps.job = j.key;
  ps.role = "ps";
  ps.status = TaskStatus::kRunning;
  ps.node = "a";
  h.AddPod(ps);
  Session& s = h.Open();
  const NodeInfo& with_ps = h.N("a");
  const NodeInfo& other = h.N("b");
  TaskInfo w = Harness::Pod("w0", Resource::Cpu(100));
  w.job = j.key;
  w.role = "worker";
  EXPECT_GT(s.NodeScore(w, with_ps), s.NodeScore(w, other));
  TaskInfo p2 = ps;
  p2.uid = "ps1";
  EXPECT_TRUE(s.TaskLess(p2, w));  // task order: ps before worker
}

}  // namespace
}  // namespace tephra::sched
