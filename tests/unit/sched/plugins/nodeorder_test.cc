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

}  // namespace
}  // namespace tephra::sched
