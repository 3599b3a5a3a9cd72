#include <gtest/gtest.h>

#include <tuple>

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

// 16 CPUs shared 3:1 by two busy queues, beside the empty root and default queues (which count in the first
// round's weights): b deserves exactly 4 CPUs, so its 4th 1-CPU pod is allocatable (a share rounded down to
// 3999m refused it and left a CPU idle while b had pods waiting).
// Enqueue does not count what a queue's jobs hold beyond their minResources: an elastic job (minAvailable 1
// of 4 replicas) that filled its 4-CPU queue leaves room for a new job's minimum, which reclaim or preempt
// can then take back from the surplus. Counting the surplus kept every later job of the queue out for good.
TEST(Proportion, EnqueueDoesNotCountTheElasticSurplus) {
  Harness h;
  h.Add(PluginOption::Named("proportion"));
  h.AddNode("n1", Resource::CpuMem(16000, 64 * kGi));
  QueueInfo q;
  q.name = "q";
  q.capability = Resource::Unlimited().With(kCpu, 4000);
  h.st.UpsertQueue(q);
  JobInfo elastic;
  elastic.key = "ns/elastic";
  elastic.queue = "q";
  elastic.min_member = 1;
  elastic.min_resources = Resource::CpuMem(1000, kGi);
  elastic.phase = PodGroupPhase::kRunning;
  h.st.UpsertJob(elastic);
  for (int i = 0; i < 4; ++i) {
    TaskInfo t = Harness::Pod("e" + std::to_string(i), Resource::CpuMem(1000, kGi));
    t.job = elastic.key;
    t.status = TaskStatus::kRunning;
    t.node = "n1";
    h.st.UpsertPod(t);
  }
  JobInfo next;
  next.key = "ns/next";
  next.queue = "q";
  next.min_member = 2;
  next.min_resources = Resource::CpuMem(2000, 2 * kGi);
  h.st.UpsertJob(next);
  JobInfo wide = next;
  wide.key = "ns/wide";
  wide.min_resources = Resource::CpuMem(4000, 4 * kGi);
  h.st.UpsertJob(wide);
  Session& s = h.Open();
  // 2 (minimum) + 4 (allocated) - 3 (surplus over elastic's 1-CPU minimum) = 3 <= 4.
  EXPECT_TRUE(s.JobEnqueueable(*h.st.FindJob("ns/next")));
  // 4 + 4 - 3 = 5 > 4: the queue's capability still binds.
  EXPECT_FALSE(s.JobEnqueueable(*h.st.FindJob("ns/wide")));
  Refusal why = s.ExplainEnqueue(*h.st.FindJob("ns/wide"));
  EXPECT_EQ(why.reason, "OverCapability");
  EXPECT_NE(why.message.find("not counting cpu 3"), std::string::npos) << why.message;
}

// Queue.spec.priority orders queues before their shares (higher first); equal priorities fall back to the
// smaller share.
TEST(Proportion, QueueOrderIsPriorityThenShare) {
  Harness h;
  h.Add(PluginOption::Named("proportion"));
  h.AddNode("n1", Resource::CpuMem(8000, 16 * kGi));
  for (auto [name, prio, running] : {std::tuple<std::string, int, int>{"busy-high", 10, 3}, {"idle-low", 0, 0},
                                     {"busy-low", 0, 3}}) {
    QueueInfo q;
    q.name = name;
    q.priority = prio;
    h.st.UpsertQueue(q);
    JobInfo j;
    j.key = "ns/" + name;
    j.queue = name;
    j.min_member = 1;
    h.st.UpsertJob(j);
    for (int i = 0; i < 4; ++i) {
      TaskInfo t = Harness::Pod(name + std::to_string(i), Resource::CpuMem(1000, kGi));
      t.job = j.key;
      if (i < running) {
        t.status = TaskStatus::kRunning;
        t.node = "n1";
      }
      h.st.UpsertPod(t);
    }
  }
  Session& s = h.Open();
  const QueueInfo& high = *h.st.FindQueue("busy-high");
  const QueueInfo& idle = *h.st.FindQueue("idle-low");
  const QueueInfo& busy = *h.st.FindQueue("busy-low");
  EXPECT_TRUE(s.QueueLess(high, idle)) << "priority first, whatever the shares";
  EXPECT_FALSE(s.QueueLess(idle, high));
  EXPECT_TRUE(s.QueueLess(idle, busy)) << "equal priority: the smaller share first";
  EXPECT_FALSE(s.QueueLess(busy, idle));
}

TEST(Proportion, ExactSharesAreNotLostToRounding) {
  Harness h;
  h.Add(PluginOption::Named("proportion"));
  for (int n = 0; n < 4; ++n) h.AddNode("n" + std::to_string(n), Resource::CpuMem(4000, 8 * kGi));
  for (auto [name, w] : {std::pair<std::string, int>{"root", 1}, {"default", 1}, {"a", 3}, {"b", 1}}) {
    QueueInfo q;
    q.name = name;
    q.weight = w;
    h.st.UpsertQueue(q);
    if (name != "a" && name != "b") continue;
    JobInfo j;
    j.key = "ns/" + name;
    j.queue = name;
    j.min_member = 1;
    h.st.UpsertJob(j);
    for (int i = 0; i < 30; ++i) {
      TaskInfo t = Harness::Pod(name + std::to_string(i), Resource::CpuMem(1000, kGi / 4));
      t.job = j.key;
      h.st.UpsertPod(t);
    }
  }
  Session& s = h.Open();
  const auto& d = s.queue_deserved();
  EXPECT_GE(d.at("a").Get(kCpu), 12000);
  EXPECT_GE(d.at("b").Get(kCpu), 4000);
  EXPECT_LE(d.at("a").Get(kCpu) + d.at("b").Get(kCpu), 16000 + 4);  // at most a unit per queue and round over
  QueueInfo b = *h.st.FindQueue("b");
  b.allocated = Resource::CpuMem(3000, 3 * kGi / 4);
  EXPECT_TRUE(s.Allocatable(b, Harness::Pod("b-4th", Resource::CpuMem(1000, kGi / 4))));
  b.allocated = Resource::CpuMem(4000, kGi);
  EXPECT_FALSE(s.Allocatable(b, Harness::Pod("b-5th", Resource::CpuMem(1000, kGi / 4))));
}

}  // namespace
}  // namespace tephra::sched
