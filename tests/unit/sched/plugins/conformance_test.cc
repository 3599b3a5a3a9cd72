#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;

TEST(Conformance, NeverOffersCriticalPodsAsVictims) {
  Harness h;
  h.Add(PluginOption::Named("conformance"));
  Session& s = h.Open();
  TaskInfo plain = Harness::Pod("p", Resource::Cpu(1));
  TaskInfo system_ns = Harness::Pod("k", Resource::Cpu(1));
  system_ns.ns = "kube-system";
  TaskInfo cluster_critical = Harness::Pod("c", Resource::Cpu(1));
  cluster_critical.priority_class_name = "system-cluster-critical";
  TaskInfo node_critical = Harness::Pod("n", Resource::Cpu(1));
  node_critical.priority_class_name = "system-node-critical";
  std::vector<const TaskInfo*> c = {&plain, &system_ns, &cluster_critical, &node_critical};
  TaskInfo preemptor = Harness::Pod("x", Resource::Cpu(1));
  EXPECT_EQ(s.Preemptable(preemptor, c), (std::vector<const TaskInfo*>{&plain}));
  EXPECT_EQ(s.Reclaimable(preemptor, c), (std::vector<const TaskInfo*>{&plain}));
}

}  // namespace
}  // namespace tephra::sched
