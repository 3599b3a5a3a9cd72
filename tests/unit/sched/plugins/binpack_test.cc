#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

TEST(Binpack, ExactFormula) {
  Harness h;
  PluginOption o = PluginOption::Named("binpack");
  o.arguments = {{"binpack.weight", "10"}, {"binpack.cpu", "5"}, {"binpack.memory", "1"},
                 {"binpack.resources", "nvidia.com/gpu"}, {"binpack.resources.nvidia.com/gpu", "2"}};
  h.Add(o);
  h.AddNode("n1", Resource::CpuMem(4000, 8 * kGi).With(h.gpu, 8));
  TaskInfo running = Harness::Pod("r", Resource::CpuMem(1000, 2 * kGi));
  running.status = TaskStatus::kRunning;
  running.node = "n1";
  h.AddPod(running);
  h.AddNode("n2", Resource::CpuMem(4000, 8 * kGi).With(h.gpu, 8));
  Session& s = h.Open();
  const NodeInfo& n = h.N("n1");
  const NodeInfo& empty = h.N("n2");
  // cpu: (1000+1000)*5/4000 = 2.5; memory: (2Gi+2Gi)*1/8Gi = 0.5; sum 3 / weights 6 * 100 * 10 = 500.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::CpuMem(1000, 2 * kGi)), n), 500);
  // + gpu: 4*2/8 = 1 -> (2.5+0.5+1)/8*1000 = 500.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::CpuMem(1000, 2 * kGi).With(h.gpu, 4)), n), 500);
  // Overflow on any requested resource zeroes the node.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::Cpu(3001)), n), 0);
  // Fuller node scores higher.
  EXPECT_GT(s.NodeScore(Harness::Pod("t", Resource::Cpu(1000)), n), s.NodeScore(Harness::Pod("t", Resource::Cpu(1000)), empty));
}

}  // namespace
}  // namespace tephra::sched
