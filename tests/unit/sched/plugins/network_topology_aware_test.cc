#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;

TEST(NetworkTopologyAware, TightestHyperNodeScoresHighest) {
  Harness h;
  h.Add(PluginOption::Named("network-topology-aware"));
  // Synthetic tier-1 HyperNodes from the default leaf label.
  h.AddNode("a1", Resource::Cpu(4000), {{"volcano.sh/hypernode-leaf", "a"}});
  h.AddNode("b1", Resource::Cpu(4000), {{"volcano.sh/hypernode-leaf", "b"}});
  TaskInfo r = Harness::Pod("r", Resource::Cpu(3000));
  r.status = TaskStatus::kRunning;
  r.node = "a1";
  h.AddPod(r);
  Session& s = h.Open();
  JobInfo j;
  j.key = "ns/j";
  j.pending_request = Resource::Cpu(1000);
  double busy = s.HyperNodeScore(j, "volcano.sh/hypernode-leaf=a");
  double idle = s.HyperNodeScore(j, "volcano.sh/hypernode-leaf=b");
  EXPECT_DOUBLE_EQ(busy, 100);  // (3000 + 1000) / 4000
  EXPECT_DOUBLE_EQ(idle, 25);
  EXPECT_DOUBLE_EQ(s.HyperNodeScore(j, "no-such-hypernode"), 0);
}

}  // namespace
}  // namespace tephra::sched
