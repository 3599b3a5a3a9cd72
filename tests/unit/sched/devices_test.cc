// The card-choice rules (core/sched devices.h): every whole-card count on every Ascend product, NVLink choice,
// sharing arithmetic, unhealthy cards never chosen, holds applied and released.
#include "tephra/sched/devices.h"

#include <gtest/gtest.h>

#include <set>

namespace tephra::sched {
namespace {

NodeDevices Ascend(CardTopology topology, int cards) {
  NodeDevices n;
  n.kind = DeviceKind::kAscend;
  n.topology = topology;
  for (int i = 0; i < cards; ++i) n.cards.push_back({.id = "Ascend910-" + std::to_string(i), .index = i});
  return n;
}

std::vector<int> Indices(const NodeDevices& n, const std::vector<int>& pos) {
  std::vector<int> out;
  for (int p : pos) out.push_back(n.cards[static_cast<size_t>(p)].index);
  return out;
}

// Takes the cards with these physical indices, as a whole-card pod would.
void Take(NodeDevices& n, std::initializer_list<int> indices) {
  for (int i : indices) ++n.cards[static_cast<size_t>(i)].owners;
}

DeviceRequest Whole(int n) { return {.kind = DeviceKind::kAscend, .whole = n}; }

int Ring(int index, int size) { return index / size; }

TEST(Devices, AscendTopologyFromTheAcceleratorTypeLabel) {
  EXPECT_EQ(AscendTopologyOf("module"), CardTopology::kAscendRing4);
  EXPECT_EQ(AscendTopologyOf("module-910b-16"), CardTopology::kAscendBox16);
  EXPECT_EQ(AscendTopologyOf("module-a3-16"), CardTopology::kAscendA3);
  EXPECT_EQ(AscendTopologyOf("module-910b-8"), CardTopology::kFlat);  // full mesh: no ring rule
  EXPECT_EQ(AscendTopologyOf(""), CardTopology::kFlat);
}

TEST(Devices, Ascend910AEveryCountOnAnEmptyNode) {
  NodeDevices n = Ascend(CardTopology::kAscendRing4, 8);
  for (int count = 1; count <= 9; ++count) {
    auto got = ChooseCards(n, Whole(count));
    const bool allowed = count == 1 || count == 2 || count == 4 || count == 8;
    ASSERT_EQ(got.ok(), allowed) << count << ": " << got.status();
    if (!allowed) {
      EXPECT_EQ(got.status().code(), core::StatusCode::kInvalidArgument) << count;
      EXPECT_NE(got.status().message().find("HCCS ring of 4"), std::string::npos) << got.status();
      EXPECT_FALSE(CardsFit(n, Whole(count))) << count;
      continue;
    }
    ASSERT_EQ(got->size(), static_cast<size_t>(count));
    std::set<int> rings;
    for (int i : Indices(n, *got)) rings.insert(Ring(i, 4));
    EXPECT_EQ(rings.size(), count == 8 ? 2u : 1u) << count;
    EXPECT_TRUE(CardsFit(n, Whole(count))) << count;
  }
}

TEST(Devices, Ascend910AOneCardPrefersTheRingThatKeepsPairsAndWholeRings) {
  // Free cards per ring 1 > 3 > 2 > 4: the published priority order for a one-card pod.
  NodeDevices n = Ascend(CardTopology::kAscendRing4, 8);
  Take(n, {0, 1, 2});  // ring 0: 1 free; ring 1: 4 free
  EXPECT_EQ(Indices(n, *ChooseCards(n, Whole(1))), std::vector<int>{3});
  NodeDevices m = Ascend(CardTopology::kAscendRing4, 8);
  Take(m, {0, 1, 4});  // ring 0: 2 free; ring 1: 3 free -> leave 2 (even) in ring 1
  EXPECT_EQ(Indices(m, *ChooseCards(m, Whole(1))), std::vector<int>{5});
  NodeDevices k = Ascend(CardTopology::kAscendRing4, 8);
  Take(k, {0, 1});  // ring 0: 2 free; ring 1: whole -> keep ring 1 whole
  EXPECT_EQ(Indices(k, *ChooseCards(k, Whole(1))), std::vector<int>{2});
  // Two cards: 2 free > 3 free > 4 free.
  NodeDevices p = Ascend(CardTopology::kAscendRing4, 8);
  Take(p, {0, 4, 5});  // ring 0: 3 free; ring 1: 2 free
  EXPECT_EQ(Indices(p, *ChooseCards(p, Whole(2))), (std::vector<int>{6, 7}));
}

TEST(Devices, Ascend910AFourCardsNeverStraddleTheRings) {
  NodeDevices n = Ascend(CardTopology::kAscendRing4, 8);
  Take(n, {0, 4});  // 6 free, but 3 in each ring
  auto got = ChooseCards(n, Whole(4));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(got.status().message().find("free per ring: 3, 3"), std::string::npos) << got.status();
  EXPECT_FALSE(CardsFit(n, Whole(4)));
  EXPECT_FALSE(ChooseCards(n, Whole(8)).ok());
}

TEST(Devices, Box16EveryCountOnAnEmptyNode) {
  NodeDevices n = Ascend(CardTopology::kAscendBox16, 16);
  for (int count = 1; count <= 17; ++count) {
    auto got = ChooseCards(n, Whole(count));
    const bool allowed = count <= 8 || (count % 2 == 0 && count <= 16);
    ASSERT_EQ(got.ok(), allowed) << count << ": " << got.status();
    EXPECT_EQ(CardsFit(n, Whole(count)), allowed) << count;
    if (!allowed) {
      EXPECT_NE(got.status().message().find("module-910b-16"), std::string::npos) << got.status();
      EXPECT_NE(got.status().message().find(std::to_string(count) + " cards cannot be placed"), std::string::npos)
          << got.status();
      continue;
    }
    auto idx = Indices(n, *got);
    ASSERT_EQ(idx.size(), static_cast<size_t>(count));
    std::set<int> unique(idx.begin(), idx.end());
    EXPECT_EQ(unique.size(), idx.size());
    if (count <= 8) {
      std::set<int> rings;
      for (int i : idx) rings.insert(Ring(i, 8));
      EXPECT_EQ(rings.size(), 1u) << count;
    } else {
      for (int i : idx) EXPECT_TRUE(unique.count(i < 8 ? i + 8 : i - 8)) << count << ": " << i << " without its pair";
    }
  }
}

TEST(Devices, Box16EightCardsNeedOneWholeRingAndCrossRingTakesPairs) {
  NodeDevices n = Ascend(CardTopology::kAscendBox16, 16);
  Take(n, {0, 9});  // 7 free in each ring
  EXPECT_FALSE(ChooseCards(n, Whole(8)).ok());
  // Pairs (i, i+8) with both free: (2,10) .. (7,15) = 6 pairs; (0,8) and (1,9) are broken.
  auto ten = ChooseCards(n, Whole(10));
  ASSERT_TRUE(ten.ok()) << ten.status();
  EXPECT_EQ(Indices(n, *ten), (std::vector<int>{2, 10, 3, 11, 4, 12, 5, 13, 6, 14}));
  EXPECT_FALSE(ChooseCards(n, Whole(14)).ok());  // 14 free cards, but only 6 whole pairs
  EXPECT_TRUE(ChooseCards(n, Whole(12)).ok());
}

TEST(Devices, A3TakesOneCardOrWholeHiamPairs) {
  NodeDevices n = Ascend(CardTopology::kAscendA3, 16);
  for (int count = 1; count <= 16; ++count) {
    const bool allowed = count == 1 || count % 2 == 0;
    EXPECT_EQ(ChooseCards(n, Whole(count)).ok(), allowed) << count;
  }
  Take(n, {0});  // pair (0,1) broken
  EXPECT_EQ(Indices(n, *ChooseCards(n, Whole(1))), std::vector<int>{1});  // the broken pair's other half
  EXPECT_EQ(Indices(n, *ChooseCards(n, Whole(2))), (std::vector<int>{2, 3}));
  EXPECT_FALSE(ChooseCards(n, Whole(16)).ok());
  EXPECT_TRUE(ChooseCards(n, Whole(14)).ok());
}

TEST(Devices, Mesh8TakesAnyFreeCards) {
  NodeDevices n = Ascend(CardTopology::kFlat, 8);
  Take(n, {0, 2, 4});
  auto got = ChooseCards(n, Whole(5));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Indices(n, *got), (std::vector<int>{1, 3, 5, 6, 7}));
  EXPECT_FALSE(ChooseCards(n, Whole(6)).ok());
}

TEST(Devices, UnhealthyAndRecoveringCardsAreNeverChosen) {
  for (auto topo : {CardTopology::kFlat, CardTopology::kAscendRing4, CardTopology::kAscendBox16, CardTopology::kAscendA3}) {
    int size = topo == CardTopology::kAscendRing4 || topo == CardTopology::kFlat ? 8 : 16;
    NodeDevices n = Ascend(topo, size);
    n.cards[1].health = CardHealth::kUnhealthy;
    n.cards[2].health = CardHealth::kRecovering;
    for (int count = 1; count <= size; ++count) {
      auto got = ChooseCards(n, Whole(count));
      if (!got.ok()) continue;
      for (int i : Indices(n, *got)) EXPECT_TRUE(i != 1 && i != 2) << CardTopologyName(topo) << " count " << count;
    }
    EXPECT_FALSE(ChooseCards(n, Whole(size)).ok()) << CardTopologyName(topo);
    auto msg = ChooseCards(n, Whole(size)).status().message();
    EXPECT_NE(msg.find(std::to_string(size - 2) + " healthy"), std::string::npos) << msg;
  }
}

TEST(Devices, NvLinkChoosesTheBestLinkedSet) {
  // Two NVLink islands {0,1,2,3} and {4,5,6,7} joined by PCIe (score 10); inside an island 100 per link, and
  // cards 1 and 3 are joined by two links.
  NodeDevices n;
  n.kind = DeviceKind::kNvidiaGpu;
  n.topology = CardTopology::kNvLink;
  for (int i = 0; i < 8; ++i) n.cards.push_back({.id = "GPU-" + std::to_string(i), .index = i});
  n.links.assign(8, std::vector<int32_t>(8, 10));
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b && a / 4 == b / 4) n.links[a][b] = 100;
  n.links[1][3] = n.links[3][1] = 200;
  DeviceRequest two{.kind = DeviceKind::kNvidiaGpu, .whole = 2};
  EXPECT_EQ(Indices(n, *ChooseCards(n, two)), (std::vector<int>{1, 3}));
  Take(n, {1, 4});
  DeviceRequest three{.kind = DeviceKind::kNvidiaGpu, .whole = 3};
  // Island 0 has 0,2,3 free (3 links of 100), island 1 has 5,6,7 (also 300): lower indices win the tie.
  EXPECT_EQ(Indices(n, *ChooseCards(n, three)), (std::vector<int>{0, 2, 3}));
  DeviceRequest four{.kind = DeviceKind::kNvidiaGpu, .whole = 4};
  auto got = ChooseCards(n, four);
  ASSERT_TRUE(got.ok());
  std::set<int> islands;
  for (int i : Indices(n, *got)) islands.insert(i / 4);
  EXPECT_EQ(islands.size(), 2u);  // no island has 4 free: the best set still has 3 in one island
  // Without link data the choice is the lowest free indices.
  n.links.clear();
  EXPECT_EQ(Indices(n, *ChooseCards(n, two)), (std::vector<int>{0, 2}));
}

TEST(Devices, NvLinkGreedyOnLargeNodesStillPicksAnIsland) {
  NodeDevices n;
  n.kind = DeviceKind::kNvidiaGpu;
  n.topology = CardTopology::kNvLink;
  for (int i = 0; i < 32; ++i) n.cards.push_back({.id = "GPU-" + std::to_string(i), .index = i});
  n.links.assign(32, std::vector<int32_t>(32, 10));
  for (int a = 0; a < 32; ++a)
    for (int b = 0; b < 32; ++b)
      if (a != b && a / 8 == b / 8) n.links[a][b] = 100;
  Take(n, {0, 8, 16});
  auto got = ChooseCards(n, {.kind = DeviceKind::kNvidiaGpu, .whole = 8});
  ASSERT_TRUE(got.ok());
  std::set<int> islands;
  for (int i : Indices(n, *got)) islands.insert(i / 8);
  EXPECT_EQ(islands, std::set<int>{3});  // the only island with 8 free
}

NodeDevices Gpus(int cards, int64_t memory, int32_t sharers) {
  NodeDevices n;
  n.kind = DeviceKind::kNvidiaGpu;
  for (int i = 0; i < cards; ++i)
    n.cards.push_back({.id = "GPU-" + std::to_string(i), .index = i, .memory = memory, .max_sharers = sharers});
  return n;
}

TEST(Devices, SharedCardsHoldMemoryAndComputeUpToTheirCapacity) {
  NodeDevices n = Gpus(1, 16000, 10);
  DeviceRequest r{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 6000, .cores = 300};
  std::vector<std::string> held;
  for (int i = 0; i < 2; ++i) {
    auto got = ChooseCards(n, r);
    ASSERT_TRUE(got.ok()) << i << got.status();
    HoldCards(n, r, {n.cards[static_cast<size_t>((*got)[0])].id}, +1);
  }
  EXPECT_EQ(n.cards[0].used_memory, 12000);
  EXPECT_EQ(n.cards[0].used_cores, 600);
  EXPECT_EQ(n.cards[0].sharers, 2);
  auto third = ChooseCards(n, r);  // 4000 MiB left: no
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("6000 MiB"), std::string::npos) << third.status();
  EXPECT_FALSE(CardsFit(n, r));
  DeviceRequest small{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 4000, .cores = 400};
  EXPECT_TRUE(CardsFit(n, small));
  DeviceRequest hot{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000, .cores = 500};
  EXPECT_FALSE(CardsFit(n, hot));  // 600 of 1000 compute used
  // A shared card is not free for a whole-card pod, and a whole-card pod's card takes no sharers.
  EXPECT_FALSE(CardsFit(n, {.kind = DeviceKind::kNvidiaGpu, .whole = 1}));
  HoldCards(n, r, {"GPU-0"}, -1);
  HoldCards(n, r, {"GPU-0"}, -1);
  EXPECT_EQ(n.cards[0], Gpus(1, 16000, 10).cards[0]);
  HoldCards(n, {.kind = DeviceKind::kNvidiaGpu, .whole = 1}, {"GPU-0"}, +1);
  EXPECT_FALSE(CardsFit(n, small));
}

TEST(Devices, SharerLimitAndMultiCardShares) {
  NodeDevices n = Gpus(3, 0, 2);  // memory unknown: only requests without memory fit
  DeviceRequest r{.kind = DeviceKind::kNvidiaGpu, .shared = 2, .cores = 100};
  EXPECT_FALSE(CardsFit(n, {.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1}));
  auto a = ChooseCards(n, r);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 2u);
  EXPECT_NE((*a)[0], (*a)[1]);
  for (int i = 0; i < 3; ++i) HoldCards(n, r, {"GPU-0", "GPU-1"}, +1);  // over the limit (API conflict): kept
  EXPECT_EQ(n.cards[0].sharers, 3);
  EXPECT_FALSE(CardsFit(n, r));  // only GPU-2 has room
  EXPECT_TRUE(CardsFit(n, {.kind = DeviceKind::kNvidiaGpu, .shared = 1, .cores = 100}));
}

TEST(Devices, BinpackTakesTheFullestCardAndSpreadTheEmptiest) {
  NodeDevices n = Gpus(3, 16000, 10);
  HoldCards(n, {.shared = 1, .memory = 2000, .cores = 200}, {"GPU-1"}, +1);
  HoldCards(n, {.shared = 1, .memory = 8000, .cores = 500}, {"GPU-2"}, +1);
  DeviceRequest r{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000, .cores = 100};
  EXPECT_EQ(*ChooseCards(n, r, SharePolicy::kBinpack), std::vector<int>{2});
  EXPECT_EQ(*ChooseCards(n, r, SharePolicy::kSpread), std::vector<int>{0});
  n.cards[0].health = CardHealth::kUnhealthy;
  EXPECT_EQ(*ChooseCards(n, r, SharePolicy::kSpread), std::vector<int>{1});
}

TEST(Devices, VgpuPluginRulesForAllOrNoCompute) {
  NodeDevices n = Gpus(1, 16000, 10);
  const DeviceRequest all{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000, .cores = 1000};
  const DeviceRequest none{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000, .cores = 0};
  EXPECT_TRUE(CardsFit(n, all));
  HoldCards(n, none, {"GPU-0"}, +1);
  EXPECT_FALSE(CardsFit(n, all));  // all of the compute = the card alone, even beside a pod asking none
  HoldCards(n, none, {"GPU-0"}, -1);
  HoldCards(n, all, {"GPU-0"}, +1);
  EXPECT_FALSE(CardsFit(n, none));  // no compute left at all: not even for a pod asking none
}

TEST(Devices, MemoryPercentageIsOfEachCard) {
  NodeDevices n = Gpus(2, 16000, 10);
  n.cards[1].memory = 40000;
  const DeviceRequest half{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory_percent = 50};
  HoldCards(n, half, {"GPU-0", "GPU-1"}, +1);
  EXPECT_EQ(n.cards[0].used_memory, 8000);
  EXPECT_EQ(n.cards[1].used_memory, 20000);
  HoldCards(n, half, {"GPU-0"}, +1);
  EXPECT_EQ(n.cards[0].used_memory, 16000);
  auto got = ChooseCards(n, half);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, std::vector<int>{1});  // GPU-0 is full
  HoldCards(n, half, {"GPU-1"}, +1);
  auto none = ChooseCards(n, half);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("50% of the memory"), std::string::npos) << none.status();
}

TEST(Devices, ProductAndIdFiltersPickAmongTheCards) {
  NodeDevices n = Gpus(3, 16000, 10);
  n.model = "NVIDIA-Tesla V100";
  n.cards[1].type = "NVIDIA-A100-SXM4-80GB";
  n.cards[2].type = "NVIDIA-A100-SXM4-80GB";
  auto detail = std::make_shared<DeviceDetail>();
  detail->use_types = {"a100"};
  DeviceRequest r{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000, .detail = detail};
  EXPECT_FALSE(r.Allows(n, n.cards[0]));  // "" type: the node's model, a V100
  HoldCards(n, r, {"GPU-2"}, +1);
  EXPECT_EQ(*ChooseCards(n, r), std::vector<int>{2});  // binpack among the A100s only
  detail->nouse_ids = {"GPU-2"};
  EXPECT_EQ(*ChooseCards(n, r), std::vector<int>{1});
  detail->use_ids = {"GPU-0"};  // a V100: no card passes both filters
  EXPECT_FALSE(CardsFit(n, r));
  auto why = ChooseCards(n, r);
  ASSERT_FALSE(why.ok());
  EXPECT_NE(why.status().message().find("among the GPUs the pod accepts"), std::string::npos) << why.status();
  // Filters count in a request's identity: two pods that differ only in them are different shapes.
  DeviceRequest plain{.kind = DeviceKind::kNvidiaGpu, .shared = 1, .memory = 1000};
  EXPECT_FALSE(r == plain);
  DeviceRequest same = r;
  same.detail = std::make_shared<DeviceDetail>(*detail);
  EXPECT_TRUE(r == same);
}

}  // namespace
}  // namespace tephra::sched
