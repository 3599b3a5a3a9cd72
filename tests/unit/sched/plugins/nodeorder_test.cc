#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

TEST(NodeOrder, PrefersLessLoadedAndBalanced) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("e", Resource::CpuMem(4000, 8 * kGi));
  h.AddNode("b", Resource::CpuMem(4000, 8 * kGi));
  TaskInfo r = Harness::Pod("r", Resource::CpuMem(3000, 6 * kGi));
  r.status = TaskStatus::kRunning;
  r.node = "b";
  h.AddPod(r);
  Session& s = h.Open();
  const NodeInfo& empty = h.N("e");
  const NodeInfo& busy = h.N("b");
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(500, kGi));
  EXPECT_GT(s.NodeScore(t, empty), s.NodeScore(t, busy));
}

// Exact kube-scheduler v1.20.2 scores, computed by hand. Node 4 cpu / 8Gi holding 1 cpu / 2Gi; the pod asks
// 1 cpu / 1Gi, so requested = 2000m of 4000m and 3Gi of 8Gi:
//   LeastAllocated      cpu (2000 * 100) / 4000 = 50, memory (5Gi * 100) / 8Gi = 62; (50 + 62) / 2 = 56
//   MostAllocated       cpu 50, memory (3Gi * 100) / 8Gi = 37; (50 + 37) / 2 = 43
//   BalancedAllocation  int64((1 - |0.5 - 0.375|) * 100) = 87
TEST(NodeOrder, IntegerScoresOfKubeSchedulerWithVolcanoWeights) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("n", Resource::CpuMem(4000, 8 * kGi));
  TaskInfo r = Harness::Pod("r", Resource::CpuMem(1000, 2 * kGi));
  r.status = TaskStatus::kRunning;
  r.node = "n";
  h.AddPod(r);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(1000, kGi));
  // Volcano's defaults: leastrequested 1, balancedresource 1, mostrequested 0.
  EXPECT_EQ(s.NodeScore(t, h.N("n")), 56 + 87);

  Harness w;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["leastrequested.weight"] = "2";
  o.arguments["mostrequested.weight"] = "3";
  o.arguments["balancedresource.weight"] = "0";
  w.Add(o);
  w.AddNode("n", Resource::CpuMem(4000, 8 * kGi));
  w.AddPod(r);
  Session& ws = w.Open();
  EXPECT_EQ(ws.NodeScore(t, w.N("n")), 2 * 56 + 3 * 43);
}

// requested > capacity: LeastAllocated and MostAllocated give that resource 0, BalancedAllocation gives 0.
// Node 1 cpu / 1Gi, pod scoring 1.5 cpu / 512Mi: least (0 + 50) / 2 = 25; balanced 0 (cpu fraction 1.5).
TEST(NodeOrder, OverCapacityScoresZeroLikeKubeScheduler) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("n", Resource::CpuMem(1000, kGi));
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(1500, kGi / 2));
  EXPECT_EQ(s.NodeScore(t, h.N("n")), 25);
}

// Scores use the non-zero requests: a best-effort pod counts 100m / 200Mi, and so does each best-effort pod
// already on the node. Node 1 cpu / 1Gi holding one best-effort pod: requested 200m and 400Mi;
//   least (80 + (624Mi * 100) / 1024Mi = 60) / 2 = 70; balanced int64((1 - |0.2 - 0.390625|) * 100) = 80.
// With zero requests both nodes below would score 200 and best-effort pods would pile onto one node.
TEST(NodeOrder, BestEffortPodsScoreWithDefaultRequests) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("busy", Resource::CpuMem(1000, kGi));
  h.AddNode("empty", Resource::CpuMem(1000, kGi));
  TaskInfo r = Harness::Pod("r", Resource());
  r.status = TaskStatus::kRunning;
  r.node = "busy";
  h.AddPod(r);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource());
  EXPECT_EQ(s.NodeScore(t, h.N("busy")), 70 + 80);
  EXPECT_GT(s.NodeScore(t, h.N("empty")), s.NodeScore(t, h.N("busy")));
  // Scoring requests set by the caller (convert.cc, per container) win over the request.
  TaskInfo c = Harness::Pod("c", Resource());
  c.score_cpu = 300;
  c.score_memory = 0;
  // requested 400m and 200Mi: least (60 + 80) / 2 = 70; balanced int64((1 - |0.4 - 0.1953125|) * 100) = 79.
  EXPECT_EQ(s.NodeScore(c, h.N("busy")), 70 + 79);
}

}  // namespace
}  // namespace tephra::sched
