#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

TEST(Proportion, WeightedDeservedCappedByCapabilityAndRequest) {
  Harness h;
  h.Add(PluginOption::Named("proportion"));
  h.AddNode("n1", Resource::CpuMem(8000, 16 * kGi));
  h.AddNode("n2", Resource::CpuMem(8000, 16 * kGi));
  for (auto [name, w] : {std::pair<std::string, int>{"a", 1}, {"b", 3}, {"c", 4}}) {
    QueueInfo q;
    q.name = name;
    q.weight = w;
    if (name == "c") q.capability = Resource::Unlimited().With(kCpu, 1000);
    h.st.UpsertQueue(q);
    JobInfo j;
    j.key = "ns/" + name;
    j.queue = name;
    j.min_member = 1;
    h.st.UpsertJob(j);
    for (int i = 0; i < 40; ++i) {
      TaskInfo t = Harness::Pod(name + std::to_string(i), Resource::CpuMem(1000, kGi));
      t.job = j.key;
      h.st.UpsertPod(t);
    }
  }
  Session& s = h.Open();
  const auto& d = s.queue_deserved();
  // c is capped at 1000m; the remaining 15000m is split 1:3 between a and b.
  EXPECT_EQ(d.at("c").Get(kCpu), 1000);
  // Integer rounding per round may leave a few millicores undistributed.
  EXPECT_NEAR(static_cast<double>(d.at("a").Get(kCpu)), 3750, 5);
  EXPECT_NEAR(static_cast<double>(d.at("b").Get(kCpu)), 11250, 5);
  const QueueInfo& qa = *h.st.FindQueue("a");
  EXPECT_FALSE(s.Overused(qa));
  EXPECT_TRUE(s.Allocatable(qa, Harness::Pod("z", Resource::Cpu(1000))));
  EXPECT_FALSE(s.Allocatable(qa, Harness::Pod("z", Resource::Cpu(4000))));
}

}  // namespace
}  // namespace tephra::sched
