// Device-level placement through whole cycles: cards are chosen inside the Statement (all-or-nothing with the
// gang), carried on the bind decisions, held by ClusterState across informer echoes and restarts, and never
// taken from unhealthy cards.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "fixture.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;

class DeviceCycle : public ::testing::Test {
 protected:
  DeviceCycle() {
    npu_ = *c_.st().resources().Intern("huawei.com/Ascend910");
    c_.Queue("default");
  }

  NodeDevices Cards(CardTopology topology, int n, const std::string& prefix = "Ascend910-") {
    NodeDevices d;
    d.kind = DeviceKind::kAscend;
    d.topology = topology;
    d.model = CardTopologyName(topology);
    for (int i = 0; i < n; ++i) d.cards.push_back({.id = prefix + std::to_string(i), .index = i});
    return d;
  }
  void NpuNode(const std::string& name, NodeDevices d) {
    NodeInfo n;
    n.name = name;
    n.allocatable = Resource::CpuMem(256000, 1024 * kGi).With(kPods, 110).With(npu_, static_cast<int64_t>(d.cards.size()));
    n.devices = std::move(d);
    c_.st().UpsertNode(n);
  }
  // A gang of `pods` pods of `cards` whole cards each.
  JobInfo NpuGang(const std::string& name, int pods, int cards) {
    JobInfo j = c_.Job(name, pods);
    c_.AddJob(j);
    for (int i = 0; i < pods; ++i) {
      TaskInfo t = c_.Pod(j, i, Resource::CpuMem(1000, kGi).With(npu_, cards));
      t.devices = {.kind = DeviceKind::kAscend, .whole = cards};
      c_.st().UpsertPod(t);
    }
    return j;
  }
  int Owners(const std::string& node) {
    int n = 0;
    for (const Card& c : c_.st().FindNode(node)->devices.cards) n += c.owners;
    return n;
  }

  Cluster c_;
  int npu_ = 0;
};

TEST_F(DeviceCycle, Box16GangOfEightCardPodsGetsDistinctCardsEachInsideOneRing) {
  for (int i = 0; i < 8; ++i) NpuNode("n" + std::to_string(i), Cards(CardTopology::kAscendBox16, 16));
  JobInfo j = NpuGang("train", 16, 8);
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 16u);
  std::set<std::pair<std::string, std::string>> taken;
  for (const auto& b : r.binds) {
    EXPECT_EQ(b.devices.kind, DeviceKind::kAscend);
    ASSERT_EQ(b.cards.size(), 8u) << b.name;
    std::set<int> rings;
    for (const auto& id : b.cards) {
      EXPECT_TRUE(taken.insert({b.node, id}).second) << id << " on " << b.node << " given twice";
      rings.insert(std::stoi(id.substr(std::string("Ascend910-").size())) / 8);
    }
    EXPECT_EQ(rings.size(), 1u) << b.name << " straddles the rings";
    EXPECT_EQ(c_.st().FindTask(b.task_uid)->cards, b.cards);
  }
  EXPECT_EQ(taken.size(), 128u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Owners("n" + std::to_string(i)), 16);
}

TEST_F(DeviceCycle, NineCardPodIsRefusedWithTheRingRule) {
  NpuNode("n0", Cards(CardTopology::kAscendBox16, 16));
  JobInfo j = NpuGang("odd", 1, 9);
  CycleResult r = c_.Run();
  EXPECT_TRUE(r.binds.empty());
  const JobInfo* got = c_.st().FindJob(j.key);
  ASSERT_NE(got, nullptr);
  EXPECT_NE(got->sched.message.find("cannot give one pod this many cards under their ring rule"), std::string::npos)
      << got->sched.message;
  EXPECT_NE(got->sched.message.find("module-910b-16"), std::string::npos) << got->sched.message;
  // Ten cards (five cross-ring pairs) are fine on the same node.
  JobInfo ten = NpuGang("even", 1, 10);
  r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].cards.size(), 10u);
}

TEST_F(DeviceCycle, GangThatCannotFitWholeLeavesNoCardHeld) {
  NpuNode("n0", Cards(CardTopology::kAscendRing4, 8));
  NpuNode("n1", Cards(CardTopology::kAscendRing4, 8));
  // A running pod holds card 0 of each ring of n1: 6 cards free there, but no ring has 4.
  JobInfo other = c_.Job("other", 1);
  c_.AddJob(other);
  TaskInfo running = c_.Pod(other, 0, Resource::CpuMem(1000, kGi).With(npu_, 2));
  running.devices = {.kind = DeviceKind::kAscend, .whole = 2};
  running.node = "n1";
  running.status = TaskStatus::kRunning;
  running.cards = {"Ascend910-0", "Ascend910-4"};
  c_.st().UpsertPod(running);
  EXPECT_EQ(Owners("n1"), 2);
  // 14 cards are free, enough by count for three 4-card pods; by rings only n0 takes two. The gang of three
  // places nothing, and the two placements it tried hold no card afterwards.
  JobInfo j = NpuGang("big", 3, 4);
  CycleResult r = c_.Run();
  EXPECT_TRUE(r.binds.empty());
  EXPECT_EQ(Owners("n0"), 0);
  EXPECT_EQ(Owners("n1"), 2);
  for (const TaskInfo* t : c_.st().TasksOfJob(j.key)) EXPECT_TRUE(t->cards.empty()) << t->name;
  JobInfo k = NpuGang("fits", 2, 4);
  r = c_.Run();
  ASSERT_EQ(r.binds.size(), 2u);
  for (const auto& b : r.binds) EXPECT_EQ(b.node, "n0");
  EXPECT_EQ(Owners("n0"), 8);
}

TEST_F(DeviceCycle, UnhealthyCardIsNeverAssignedUntilItRecovers) {
  NodeDevices d = Cards(CardTopology::kFlat, 8);
  d.cards[3].health = CardHealth::kUnhealthy;
  NpuNode("n0", d);
  JobInfo j = NpuGang("ones", 8, 1);
  JobInfo jj = c_.Job("ones", 1);  // one pod is enough to start: seven can place
  jj.min_member = 1;
  c_.AddJob(jj);
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 7u);
  for (const auto& b : r.binds) EXPECT_NE(b.cards[0], "Ascend910-3");
  // The card recovers: the eighth pod gets it.
  d.cards[3].health = CardHealth::kHealthy;
  NpuNode("n0", d);
  r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].cards, std::vector<std::string>{"Ascend910-3"});
  // Health changes keep the holds: every card is held once.
  d.cards[5].health = CardHealth::kUnhealthy;
  NpuNode("n0", d);
  EXPECT_EQ(Owners("n0"), 8);
}

TEST_F(DeviceCycle, HoldsSurviveInformerEchoesRestartsAndNodesArrivingLate) {
  NpuNode("n0", Cards(CardTopology::kAscendRing4, 8));
  JobInfo j = NpuGang("a", 1, 4);
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  const std::vector<std::string> cards = r.binds[0].cards;
  // The informer shows the pod bound before the binder's annotation is visible: the hold stays.
  TaskInfo echo = *c_.st().FindTask(r.binds[0].task_uid);
  echo.cards.clear();
  echo.status = TaskStatus::kBound;
  c_.st().UpsertPod(echo);
  EXPECT_EQ(c_.st().FindTask(echo.uid)->cards, cards);
  EXPECT_EQ(Owners("n0"), 4);
  // A new scheduler (restart) learns the pod with its cards from the API before the node: held on arrival.
  Cluster fresh;
  int npu = *fresh.st().resources().Intern("huawei.com/Ascend910");
  TaskInfo placed = echo;
  placed.cards = cards;
  fresh.st().UpsertPod(placed);
  NodeInfo n;
  n.name = "n0";
  n.allocatable = Resource::CpuMem(256000, 1024 * kGi).With(kPods, 110).With(npu, 8);
  n.devices = Cards(CardTopology::kAscendRing4, 8);
  fresh.st().UpsertNode(n);
  int owners = 0;
  for (const Card& c : fresh.st().FindNode("n0")->devices.cards) owners += c.owners;
  EXPECT_EQ(owners, 4);
  // The pod ends: its cards are free again.
  echo.status = TaskStatus::kSucceeded;
  c_.st().UpsertPod(echo);
  EXPECT_EQ(Owners("n0"), 0);
}

TEST_F(DeviceCycle, VgpuPodsShareAGpuUpToItsMemoryAndNoFurther) {
  NodeInfo n;
  n.name = "g0";
  n.allocatable = Resource::CpuMem(64000, 256 * kGi).With(kPods, 110).With(c_.gpu(), 1);
  n.devices.kind = DeviceKind::kNvidiaGpu;
  n.devices.cards.push_back({.id = "GPU-aaaa", .index = 0, .memory = 16000, .max_sharers = 10});
  c_.st().UpsertNode(n);
  JobInfo j = c_.Job("infer", 1);
  c_.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = c_.Pod(j, i, Resource::CpuMem(1000, kGi));
    t.devices = {.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 6000, .cores = 200};
    c_.st().UpsertPod(t);
  }
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 2u);
  for (const auto& b : r.binds) EXPECT_EQ(b.cards, std::vector<std::string>{"GPU-aaaa"});
  const Card& card = c_.st().FindNode("g0")->devices.cards[0];
  EXPECT_EQ(card.used_memory, 12000);
  EXPECT_EQ(card.sharers, 2);
  r = c_.Run();
  EXPECT_TRUE(r.binds.empty());
}

TEST_F(DeviceCycle, GpuProductFilterPicksNodesAndSaysWhyNot) {
  // Two nodes of counted GPUs (no card model), known only by GPU Feature Discovery's product label.
  for (const auto& [name, product] : {std::pair<std::string, std::string>{"v100", "Tesla-V100-SXM2-32GB"},
                                      {"a100", "A100-SXM4-80GB"}}) {
    NodeInfo n;
    n.name = name;
    n.allocatable = Resource::CpuMem(64000, 256 * kGi).With(kPods, 110).With(c_.gpu(), 8);
    n.devices.kind = DeviceKind::kNvidiaGpu;
    n.devices.model = product;
    c_.st().UpsertNode(n);
  }
  auto want = [](std::vector<std::string> use) {
    auto d = std::make_shared<DeviceDetail>();
    d->use_types = std::move(use);
    return DeviceRequest{.kind = DeviceKind::kNvidiaGpu, .detail = d};
  };
  JobInfo a = c_.Job("wants-a100", 1);
  c_.AddJob(a);
  TaskInfo t = c_.Pod(a, 0, Resource::CpuMem(1000, kGi).With(c_.gpu(), 1));
  t.devices = want({"A100"});
  c_.st().UpsertPod(t);
  JobInfo h = c_.Job("wants-h100", 1);
  c_.AddJob(h);
  TaskInfo u = c_.Pod(h, 0, Resource::CpuMem(1000, kGi).With(c_.gpu(), 1));
  u.devices = want({"H100"});
  c_.st().UpsertPod(u);
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "a100");
  EXPECT_TRUE(r.binds[0].cards.empty());  // counted: the device plugin picks the GPU
  const JobInfo* pending = c_.st().FindJob(h.key);
  ASSERT_NE(pending, nullptr);
  EXPECT_NE(pending->sched.message.find("had no GPU the pod accepts"), std::string::npos) << pending->sched.message;
}

TEST_F(DeviceCycle, MemoryPercentageTravelsAsMiBPerCard) {
  NodeInfo n;
  n.name = "g0";
  n.allocatable = Resource::CpuMem(64000, 256 * kGi).With(kPods, 110).With(c_.gpu(), 1);
  n.devices.kind = DeviceKind::kNvidiaGpu;
  n.devices.cards.push_back({.id = "GPU-aaaa", .index = 0, .memory = 40000, .max_sharers = 10});
  c_.st().UpsertNode(n);
  JobInfo j = c_.Job("infer", 1);
  c_.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = c_.Pod(j, i, Resource::CpuMem(1000, kGi));
    t.devices = {.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory_percent = 40};
    c_.st().UpsertPod(t);
  }
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 2u);  // 40% + 40%; a third would need 120%
  for (const auto& b : r.binds) EXPECT_EQ(b.card_memory, std::vector<int64_t>{16000});
  EXPECT_EQ(c_.st().FindNode("g0")->devices.cards[0].used_memory, 32000);
}

}  // namespace
}  // namespace tephra::sched
