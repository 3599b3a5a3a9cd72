// Whole-cycle behaviour of the scheduling core.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "fixture.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;
using testing::HostnameTerm;
using testing::Spread;
using testing::Term;

const PodGroupStatusUpdate* FindPg(const CycleResult& r, const std::string& key) {
  for (const auto& u : r.pod_groups)
    if (u.job == key) return &u;
  return nullptr;
}

TEST(Cycle, TwoWholeClusterGangsOneWinsOtherBindsNothing) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 4; ++i) c.Node("n" + std::to_string(i), 32000, 256 * kGi, 8);
  Resource req = Resource::CpuMem(4000, 32 * kGi).With(c.gpu(), 8);
  c.Gang("a", 4, req);
  c.Gang("b", 4, req);
  CycleResult r = c.Run();
  EXPECT_EQ(r.binds.size(), 4u);
  int a = c.BoundCount("ns/a"), b = c.BoundCount("ns/b");
  EXPECT_EQ(a + b, 4);
  EXPECT_TRUE((a == 4 && b == 0) || (a == 0 && b == 4));
  EXPECT_EQ(a, 4) << "older gang goes first (creation time tie-break)";
  const PodGroupStatusUpdate* pb = FindPg(r, "ns/b");
  ASSERT_NE(pb, nullptr);
  ASSERT_EQ(pb->conditions.size(), 2u);
  EXPECT_EQ(pb->conditions[0].type, "Unschedulable");
  EXPECT_EQ(pb->conditions[0].reason, "NotEnoughResources");
  EXPECT_EQ(pb->conditions[0].message,
            "4/4 tasks in gang unschedulable: 4 node(s) had insufficient nvidia.com/gpu; short by nvidia.com/gpu 32: "
            "the gang still needs 4 pod(s) (cpu 16, memory 128Gi, nvidia.com/gpu 32) and the cluster has cpu 112, "
            "memory 896Gi, nvidia.com/gpu 0 free");
  EXPECT_EQ(pb->conditions[1].type, "Queued");
  EXPECT_EQ(pb->conditions[1].status, "True");
  EXPECT_EQ(pb->conditions[1].message, "position 1 in queue default");
  const PodGroupStatusUpdate* pa = FindPg(r, "ns/a");
  ASSERT_NE(pa, nullptr);
  EXPECT_EQ(pa->phase, PodGroupPhase::kRunning);
  EXPECT_EQ(pa->conditions[0].type, "Scheduled");
  // Volcano's fields: the sentence is the reason, the message is empty.
  EXPECT_EQ(pa->conditions[0].reason, "tasks in gang are ready to be scheduled");
  EXPECT_EQ(pa->conditions[0].message, "");
  // Nothing is freed: the loser keeps binding nothing.
  r = c.Run();
  EXPECT_TRUE(r.binds.empty());
  EXPECT_EQ(c.BoundCount("ns/b"), 0);
}

TEST(Cycle, QueueWeightsSplitOneToThreeUnderContention) {
  Cluster c;
  c.Queue("default");
  c.Queue("a", 1);
  c.Queue("b", 3);
  for (int i = 0; i < 4; ++i) c.Node("n" + std::to_string(i), 4000, 64 * kGi);
  for (int i = 0; i < 20; ++i) {
    c.Gang("a" + std::to_string(i), 1, Resource::CpuMem(1000, kGi), "a");
    c.Gang("b" + std::to_string(i), 1, Resource::CpuMem(1000, kGi), "b");
  }
  c.Run();
  EXPECT_EQ(c.st().FindQueue("a")->allocated.Get(kCpu), 4000);
  EXPECT_EQ(c.st().FindQueue("b")->allocated.Get(kCpu), 12000);
}

TEST(Cycle, QueueCapabilityNeverExceeded) {
  Cluster c;
  c.Queue("default");
  c.Queue("capped", 1, Resource::Unlimited().With(kCpu, 3000));
  for (int i = 0; i < 10; ++i) c.Node("n" + std::to_string(i), 4000, 64 * kGi);
  for (int i = 0; i < 10; ++i) c.Gang("j" + std::to_string(i), 1, Resource::CpuMem(1000, kGi), "capped");
  for (int cycle = 0; cycle < 5; ++cycle) {
    c.Run();
    EXPECT_LE(c.st().FindQueue("capped")->allocated.Get(kCpu), 3000);
  }
  EXPECT_EQ(c.st().FindQueue("capped")->allocated.Get(kCpu), 3000);
}

// Two spines of two leaves each, as HyperNode objects; leaf sizes 2,4 | 3,1 nodes of 8 GPUs.
void BuildFabric(Cluster& c) {
  std::vector<std::pair<std::string, int>> leaves = {{"l1", 2}, {"l2", 4}, {"l3", 3}, {"l4", 1}};
  for (const auto& [leaf, n] : leaves) {
    HyperNodeInfo h;
    h.name = leaf;
    h.tier = 1;
    h.tier_name = "leaf";
    HyperNodeMember m;
    m.kind = MemberSelectorKind::kRegex;
    m.name_or_pattern = leaf + "-n[0-9]+";
    h.members.push_back(m);
    c.st().UpsertHyperNode(h);
    for (int i = 0; i < n; ++i) c.Node(leaf + "-n" + std::to_string(i), 64000, 512 * kGi, 8);
  }
  for (auto [spine, kids] : {std::pair<std::string, std::vector<std::string>>{"s1", {"l1", "l2"}}, {"s2", {"l3", "l4"}}}) {
    HyperNodeInfo h;
    h.name = spine;
    h.tier = 2;
    h.tier_name = "spine";
    for (const auto& k : kids) {
      HyperNodeMember m;
      m.type = HyperNodeMemberType::kHyperNode;
      m.name_or_pattern = k;
      h.members.push_back(m);
    }
    c.st().UpsertHyperNode(h);
  }
}

std::set<std::string> LeavesOf(Cluster& c, const std::string& job) {
  std::set<std::string> leaves;
  for (const TaskInfo* t : c.st().TasksOfJob(job))
    if (!t->node.empty()) leaves.insert(t->node.substr(0, 2));
  return leaves;
}

TEST(Cycle, GangLandsInFewestLeafSwitches) {
  Cluster c;
  c.Queue("default");
  BuildFabric(c);
  Resource full = Resource::CpuMem(8000, 64 * kGi).With(c.gpu(), 8);
  // 3 whole-node pods, confined to one leaf: the tightest leaf that fits is l3 (3 nodes), not l2 (4).
  JobInfo small = c.Job("small", 3);
  small.network_topology = {TopologyMode::kHard, 1, ""};
  c.AddJob(small);
  for (int i = 0; i < 3; ++i) c.st().UpsertPod(c.Pod(small, i, full));
  // 5 whole-node pods within one spine: only s1 (2+4 nodes) fits; it must use 2 leaves, not 3.
  JobInfo big = c.Job("big", 5);
  big.network_topology = {TopologyMode::kHard, 0, "spine"};
  c.AddJob(big);
  for (int i = 0; i < 5; ++i) c.st().UpsertPod(c.Pod(big, i, full));
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/small"), 3);
  EXPECT_EQ(LeavesOf(c, "ns/small"), (std::set<std::string>{"l3"}));
  EXPECT_EQ(c.BoundCount("ns/big"), 5);
  EXPECT_EQ(LeavesOf(c, "ns/big"), (std::set<std::string>{"l1", "l2"}));
  // A hard tier-1 gang of 5 fits no leaf: it binds nothing and says why.
  JobInfo wide = c.Job("wide", 2);
  wide.network_topology = {TopologyMode::kHard, 1, ""};
  c.AddJob(wide);
  for (int i = 0; i < 2; ++i) c.st().UpsertPod(c.Pod(wide, i, full));
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/wide"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/wide");
  ASSERT_NE(pg, nullptr);
  EXPECT_NE(pg->conditions[0].message.find("no HyperNode with tier <= 1"), std::string::npos);
}

TEST(Cycle, ReplacementAfterANodeLossStaysInTheGangsLeaf) {
  // docs/faults.md: a gang confined to one leaf loses a node; its replacement pod goes to the leaf's spare
  // node, not to the emptier leaf that comes first in the node order.
  Cluster c;
  c.Queue("default");
  BuildFabric(c);
  Resource full = Resource::CpuMem(8000, 64 * kGi).With(c.gpu(), 8);
  JobInfo j = c.Job("train", 3);
  j.network_topology = {TopologyMode::kHard, 1, ""};
  c.AddJob(j);
  for (int i = 0; i < 3; ++i) c.st().UpsertPod(c.Pod(j, i, full));
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 3u);
  ASSERT_EQ(LeavesOf(c, "ns/train"), (std::set<std::string>{"l3"}));
  for (const auto& b : r.binds) {
    c.st().BindSucceeded(b.task_uid);
    TaskInfo t = *c.st().FindTask(b.task_uid);
    t.status = TaskStatus::kRunning;
    c.st().UpsertPod(t);
  }
  c.Node("l3-n3", 64000, 512 * kGi, 8);  // a spare joins the leaf
  const std::string lost = c.st().FindTask("train-0")->node;
  c.st().RemovePod("train-0");
  c.st().RemoveNode(lost);
  c.st().UpsertPod(c.Pod(j, 3, full));
  r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "l3-n3");
  EXPECT_EQ(LeavesOf(c, "ns/train"), (std::set<std::string>{"l3"}));
}

TEST(Cycle, ReplacementPrefersTheGangsLeafWithoutNetworkTopology) {
  // docs/faults.md: a job that declared no topology but runs in one leaf gets its replacement there when the
  // leaf has room; when it has none, the replacement goes anywhere rather than wait.
  Cluster c;
  c.Queue("default");
  BuildFabric(c);
  Resource full = Resource::CpuMem(8000, 64 * kGi).With(c.gpu(), 8);
  JobInfo j = c.Job("train", 3);
  c.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = c.Pod(j, i, full);
    t.status = TaskStatus::kRunning;
    t.node = "l3-n" + std::to_string(i);
    c.st().UpsertPod(t);
  }
  c.Node("l3-n3", 64000, 512 * kGi, 8);  // a spare in the gang's leaf, last in the node order
  const std::string lost = c.st().FindTask("train-0")->node;
  c.st().RemovePod("train-0");
  c.st().RemoveNode(lost);
  c.st().UpsertPod(c.Pod(j, 3, full));
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "l3-n3");
  // Another node of the leaf is lost and the leaf has no spare left: the replacement goes elsewhere.
  c.st().BindSucceeded(r.binds[0].task_uid);
  const std::string lost2 = c.st().FindTask("train-1")->node;
  c.st().RemovePod("train-1");
  c.st().RemoveNode(lost2);
  c.st().UpsertPod(c.Pod(j, 4, full));
  r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_NE(r.binds[0].node.substr(0, 2), "l3");
}

// A vcjob task with partitionPolicy as the controller writes its PodGroup: `partitions` x `size` pods labelled
// with their partition, one subGroupPolicy keyed on the partition label.
JobInfo Partitioned(Cluster& c, const std::string& name, int partitions, int size, int min_partitions, Resource req,
                    NetworkTopology nt = {}) {
  JobInfo j = c.Job(name, (min_partitions > 0 ? min_partitions : partitions) * size);
  SubGroupPolicy p;
  p.name = "worker";
  p.size = size;
  p.min_groups = min_partitions;
  p.selector.emplace();
  p.selector->match_labels["volcano.sh/task-spec"] = "worker";
  p.match_label_keys = {"volcano.sh/partition-id"};
  p.network_topology = nt;
  j.sub_group_policies.push_back(p);
  c.AddJob(j);
  for (int i = 0; i < partitions * size; ++i) {
    TaskInfo t = c.Pod(j, i, req);
    t.labels = {{"volcano.sh/task-spec", "worker"}, {"volcano.sh/partition-id", std::to_string(i / size)}};
    c.st().UpsertPod(t);
  }
  return j;
}

// partition id -> the nodes its placed pods are on
std::map<std::string, std::set<std::string>> NodesByPartition(Cluster& c, const std::string& job) {
  std::map<std::string, std::set<std::string>> out;
  for (const TaskInfo* t : c.st().TasksOfJob(job))
    if (!t->node.empty()) out[t->labels.at("volcano.sh/partition-id")].insert(t->node);
  return out;
}

TEST(Cycle, EachSubGroupLandsInsideOneHyperNodeOfItsTier) {
  Cluster c;
  c.Queue("default");
  BuildFabric(c);  // leaves of 2, 4, 3 and 1 nodes
  Resource full = Resource::CpuMem(8000, 64 * kGi).With(c.gpu(), 8);
  // Two partitions of three whole-node pods, each confined to one leaf; the job itself is not. Only l2 (4
  // nodes) and l3 (3) can hold a partition, so they get one each, although the 6 pods would fit in s1 alone.
  Partitioned(c, "tp", 2, 3, 2, full, {TopologyMode::kHard, 1, ""});
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/tp"), 6);
  auto parts = NodesByPartition(c, "ns/tp");
  ASSERT_EQ(parts.size(), 2u);
  std::set<std::string> leaves;
  for (const auto& [part, nodes] : parts) {
    std::set<std::string> own;
    for (const auto& n : nodes) own.insert(n.substr(0, 2));
    EXPECT_EQ(own.size(), 1u) << "partition " << part << " spans leaves";
    leaves.insert(own.begin(), own.end());
  }
  EXPECT_EQ(leaves, (std::set<std::string>{"l2", "l3"}));
}

TEST(Cycle, SubGroupThatNoHyperNodeHoldsKeepsTheGangWaitingAndSaysWhich) {
  Cluster c;
  c.Queue("default");
  BuildFabric(c);
  Resource full = Resource::CpuMem(8000, 64 * kGi).With(c.gpu(), 8);
  // Five whole-node pods per partition: no leaf has five nodes, although the cluster has ten.
  Partitioned(c, "wide", 2, 5, 2, full, {TopologyMode::kHard, 1, ""});
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/wide"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/wide");
  ASSERT_NE(pg, nullptr);
  ASSERT_FALSE(pg->conditions.empty());
  EXPECT_NE(pg->conditions[0].message.find("subGroup worker 0: no HyperNode with tier <= 1 can hold its 5 pod(s)"),
            std::string::npos)
      << pg->conditions[0].message;
  // Soft mode: the same partitions are placed anyway, as tightly as the leaves allow.
  Cluster soft;
  soft.Queue("default");
  BuildFabric(soft);
  Partitioned(soft, "wide", 2, 5, 2, full, {TopologyMode::kSoft, 1, ""});
  soft.Run();
  EXPECT_EQ(soft.BoundCount("ns/wide"), 10);
}

TEST(Cycle, MinSubGroupsStartsTheJobAndNoSubGroupIsLeftHalfPlaced) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 5000, 64 * kGi);  // room for five 1-cpu pods
  // Three partitions of two pods, two of them needed: minAvailable 4. Plain gang scheduling would place a
  // fifth pod, half of the third partition; sub-groups place whole partitions only.
  Partitioned(c, "tp", 3, 2, 2, Resource::CpuMem(1000, kGi));
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/tp"), 4);
  auto parts = NodesByPartition(c, "ns/tp");
  EXPECT_EQ(parts.size(), 2u);
  for (const auto& [part, nodes] : parts) EXPECT_NE(part, "2") << "the lowest partitions go first";
  // A second node: the third partition follows whole.
  c.Node("n1", 2000, 64 * kGi);
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/tp"), 6);
}

TEST(Cycle, JobWithFewerSubGroupsThanMinSubGroupsIsNotValid) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 16000, 64 * kGi);
  // minSubGroups 3, but the pods make only two partitions.
  JobInfo j = Partitioned(c, "tp", 2, 2, 3, Resource::CpuMem(1000, kGi));
  j.min_member = 4;
  c.AddJob(j);
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/tp"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/tp");
  ASSERT_NE(pg, nullptr);
  ASSERT_FALSE(pg->conditions.empty());
  EXPECT_NE(pg->conditions[0].message.find("Not enough valid subGroups of policy worker for gang-scheduling, valid: 2, min: 3"),
            std::string::npos)
      << pg->conditions[0].message;
}

TEST(Cycle, LabelTopologyWithoutHyperNodes) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 4; ++i)
    c.Node("a" + std::to_string(i), 8000, 64 * kGi, 8, {{"volcano.sh/hypernode-leaf", i < 2 ? "x" : "y"}});
  JobInfo j = c.Job("j", 2);
  j.network_topology = {TopologyMode::kHard, 1, ""};
  c.AddJob(j);
  for (int i = 0; i < 2; ++i) c.st().UpsertPod(c.Pod(j, i, Resource::Cpu(1000).With(c.gpu(), 8)));
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/j"), 2);
  auto tasks = c.st().TasksOfJob("ns/j");
  auto leaf = [&](const TaskInfo* t) { return c.st().FindNode(t->node)->labels.at("volcano.sh/hypernode-leaf"); };
  EXPECT_EQ(leaf(tasks[0]), leaf(tasks[1]));
}

TEST(Cycle, BinpackFillsNodesBeforeOpeningNewOnes) {
  SchedulerConf conf = Cluster::Conf();
  for (auto& p : conf.tiers[1].plugins)
    if (p.name == "binpack") p.arguments = {{"binpack.weight", "10"}, {"binpack.resources", "nvidia.com/gpu"}};
  Cluster c(conf);
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 64000, 512 * kGi, 8);
  for (int i = 0; i < 4; ++i) c.Gang("j" + std::to_string(i), 1, Resource::CpuMem(1000, kGi).With(c.gpu(), 2));
  c.Run();
  std::set<std::string> used;
  for (int i = 0; i < 4; ++i)
    for (const TaskInfo* t : c.st().TasksOfJob("ns/j" + std::to_string(i))) used.insert(t->node);
  EXPECT_EQ(used.size(), 1u);
  c.Gang("j4", 1, Resource::CpuMem(1000, kGi).With(c.gpu(), 2));
  c.Run();
  used.clear();
  for (int i = 0; i < 5; ++i)
    for (const TaskInfo* t : c.st().TasksOfJob("ns/j" + std::to_string(i))) used.insert(t->node);
  EXPECT_EQ(used.size(), 2u) << "the full node forces exactly one new node";
}

TEST(Cycle, SharedScoreHeapsStayCorrectAfterDiscard) {
  // A failing gang places and discards on nodes first; a later job of the same shape family must still
  // see the true binpack order (the fuller node n2), not scores left over from the dry run.
  SchedulerConf conf = Cluster::Conf();
  for (auto& p : conf.tiers[1].plugins)
    if (p.name == "binpack") p.arguments = {{"binpack.weight", "10"}, {"binpack.resources", "nvidia.com/gpu"}};
  Cluster c(conf);
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 64000, 512 * kGi, 8);
  JobInfo run = c.Job("running", 1);
  c.AddJob(run);
  TaskInfo r = c.Pod(run, 0, Resource::Cpu(1000).With(c.gpu(), 4));
  r.status = TaskStatus::kRunning;
  r.node = "n2";
  c.st().UpsertPod(r);
  // b (older) takes 5 of the 5 free 4-GPU slots, misses its 6th and is discarded; z then sees the real
  // state, where the half-full n2 is the best binpack fit.
  c.Gang("b", 6, Resource::Cpu(1000).With(c.gpu(), 4));
  c.Gang("z", 1, Resource::Cpu(1000).With(c.gpu(), 4));
  CycleResult res = c.Run();
  EXPECT_EQ(c.BoundCount("ns/b"), 0);
  ASSERT_EQ(res.binds.size(), 1u);
  EXPECT_EQ(res.binds[0].task_uid, "z-0");
  EXPECT_EQ(res.binds[0].node, "n2");
}

std::vector<std::string> Decisions(bool reverse_insertion) {
  Cluster c;
  c.Queue("default");
  c.Queue("q2", 2);
  std::vector<int> idx(12);
  for (int i = 0; i < 12; ++i) idx[static_cast<size_t>(i)] = i;
  if (reverse_insertion) std::reverse(idx.begin(), idx.end());
  for (int i : idx) c.Node("n" + std::to_string(i), 16000, 128 * kGi, 4, {{"volcano.sh/hypernode-leaf", std::to_string(i % 3)}});
  for (int i : idx) {
    JobInfo j = c.Job("j" + std::to_string(i), 2 + i % 3, i % 2 ? "q2" : "default");
    j.creation_time = WallTime(std::chrono::seconds(100 + i));  // same inputs whatever the insertion order
    c.AddJob(j);
    for (int k = 0; k < 2 + i % 4; ++k) {
      TaskInfo t = c.Pod(j, k, Resource::CpuMem(2000, 8 * kGi).With(c.gpu(), 1 + k % 2));
      t.creation_index = static_cast<uint64_t>(i * 100 + k);
      c.st().UpsertPod(t);
    }
  }
  std::vector<std::string> out;
  for (int cycle = 0; cycle < 2; ++cycle) {
    CycleResult r = c.Run();
    for (const auto& b : r.binds) out.push_back(b.task_uid.substr(0, b.task_uid.find('-')) + b.task_uid.substr(b.task_uid.find('-')) + "@" + b.node);
  }
  return out;
}

TEST(Cycle, DeterministicAcrossRunsAndInsertionOrder) {
  auto a = Decisions(false);
  auto b = Decisions(false);
  auto c = Decisions(true);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

TEST(Cycle, NoChangeCycleDoesNoWork) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 64 * kGi, 8);
  c.Gang("fits", 1, Resource::Cpu(1000));
  c.Gang("too-big", 2, Resource::Cpu(1000).With(c.gpu(), 8));
  CycleResult r1 = c.Run();
  EXPECT_EQ(r1.binds.size(), 1u);
  EXPECT_EQ(r1.metrics.jobs_considered, 2);
  CycleResult r2 = c.Run();
  EXPECT_EQ(r2.metrics.jobs_considered, 0);
  EXPECT_EQ(r2.metrics.jobs_skipped_clean, 1);
  EXPECT_TRUE(r2.binds.empty());
  EXPECT_TRUE(r2.pod_groups.empty());
  EXPECT_TRUE(r2.queues.empty());
  EXPECT_TRUE(r2.events.empty());
  // A relevant change (new capacity) makes the gang eligible again at once.
  c.Node("n1", 8000, 64 * kGi, 8);
  CycleResult r3 = c.Run();
  EXPECT_EQ(r3.metrics.jobs_considered, 1);
  EXPECT_EQ(c.BoundCount("ns/too-big"), 2);
}

TEST(Cycle, UnchangedGangRetriedPeriodically) {
  SchedulerConf conf = Cluster::Conf();
  conf.core.retry_unchanged_every_cycles = 3;
  Cluster c(conf);
  c.Queue("default");
  c.Node("n0", 8000, 64 * kGi);
  c.Gang("too-big", 1, Resource::Cpu(9000));
  int considered = 0;
  for (int i = 0; i < 7; ++i) considered += static_cast<int>(c.Run().metrics.jobs_considered);
  EXPECT_EQ(considered, 3);  // cycles 1, 4, 7
}

TEST(Cycle, BindFailureRollsBackTheGang) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 8000, 64 * kGi);
  c.Gang("g", 3, Resource::Cpu(6000));
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 3u);
  c.st().BindSucceeded(r.binds[0].task_uid);
  auto rolled = c.st().BindFailed(r.binds[1].task_uid, "node n1 rejected the pod");
  EXPECT_EQ(rolled.size(), 2u) << "the confirmed bind stays, the other in-flight one is rolled back";
  EXPECT_EQ(c.st().FindTask(r.binds[0].task_uid)->status, TaskStatus::kBound);
  EXPECT_EQ(c.st().FindTask(r.binds[1].task_uid)->status, TaskStatus::kPending);
  EXPECT_EQ(c.st().FindTask(r.binds[2].task_uid)->status, TaskStatus::kPending);
  EXPECT_EQ(c.st().FindNode(r.binds[2].node)->used.Get(kCpu), 0);
  CycleResult r2 = c.Run();
  const PodGroupStatusUpdate* pg = FindPg(r2, "ns/g");
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->conditions[0].reason, "BindFailed");
  EXPECT_NE(pg->conditions[0].message.find("node n1 rejected the pod"), std::string::npos);
  EXPECT_EQ(r2.binds.size(), 2u) << "the gang is retried right away";
}

TEST(Cycle, GangThatLostAPodAndCannotReplaceItIsReleasedAfterTimeout) {
  // docs/faults.md: a running gang loses a pod to a dead node; its replacement fits nowhere. After the gang
  // timeout the pods it still holds are released, so the whole gang can be placed again later instead of
  // holding its nodes for nothing.
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 8000, 64 * kGi);
  JobInfo j = c.Gang("g", 3, Resource::Cpu(6000));
  CycleResult r = c.RunAt(0);
  ASSERT_EQ(r.binds.size(), 3u);
  for (const auto& b : r.binds) {
    c.st().BindSucceeded(b.task_uid);
    TaskInfo t = *c.st().FindTask(b.task_uid);
    t.status = TaskStatus::kRunning;
    c.st().UpsertPod(t);
  }
  EXPECT_TRUE(c.RunAt(1).evictions.empty());
  c.st().RemovePod(r.binds[2].task_uid);
  c.st().RemoveNode(r.binds[2].node);
  // Running but short of a replacement: the job controller's business, not a stuck gang.
  EXPECT_TRUE(c.RunAt(2).evictions.empty());
  EXPECT_TRUE(c.RunAt(400).evictions.empty());
  c.st().UpsertPod(c.Pod(j, 3, Resource::Cpu(6000)));  // the replacement, which fits nowhere
  EXPECT_TRUE(c.RunAt(401).evictions.empty());
  EXPECT_TRUE(c.RunAt(700).evictions.empty());  // 299 s
  CycleResult late = c.RunAt(702);
  ASSERT_EQ(late.evictions.size(), 2u);
  EXPECT_EQ(late.evictions[0].reason, "GangTimeout");
  const PodGroupStatusUpdate* pg = FindPg(late, "ns/g");
  ASSERT_NE(pg, nullptr);
  EXPECT_NE(pg->conditions[0].message.find("2/3 tasks of the gang were ready for 300s after it lost pods"),
            std::string::npos)
      << pg->conditions[0].message;
}

TEST(Cycle, StuckPartialGangReleasedAfterTimeout) {
  // docs/failure-scenarios.md, scenario 8: one pod of a gang got bound, the rest can no longer fit; after the configured
  // gang timeout the placed pod is evicted and the PodGroup says why.
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 8000, 64 * kGi);
  c.Gang("g", 3, Resource::Cpu(6000));
  CycleResult r = c.RunAt(0);
  ASSERT_EQ(r.binds.size(), 3u);
  c.st().BindSucceeded(r.binds[0].task_uid);
  (void)c.st().BindFailed(r.binds[1].task_uid, "node went away");
  for (const auto& b : r.binds)
    if (b.node != r.binds[0].node) c.st().RemoveNode(b.node);
  EXPECT_TRUE(c.RunAt(1).evictions.empty());    // partial from now on
  EXPECT_TRUE(c.RunAt(300).evictions.empty());  // 299 s: not yet
  CycleResult late = c.RunAt(302);
  ASSERT_EQ(late.evictions.size(), 1u);
  EXPECT_EQ(late.evictions[0].task_uid, r.binds[0].task_uid);
  EXPECT_EQ(late.evictions[0].reason, "GangTimeout");
  EXPECT_EQ(c.st().FindTask(r.binds[0].task_uid)->status, TaskStatus::kReleasing);
  const PodGroupStatusUpdate* pg = FindPg(late, "ns/g");
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->conditions[0].reason, "GangTimeout");
  EXPECT_NE(pg->conditions[0].message.find("1/3 tasks of the gang were ready for 300s"), std::string::npos);
}

TEST(Cycle, FitErrorsNameWhatIsShort) {
  Cluster c;
  c.Queue("default");
  c.Node("small0", 8000, 64 * kGi, 2);
  c.Node("small1", 8000, 64 * kGi, 2);
  NodeInfo t0 = c.Node("tainted0", 8000, 64 * kGi, 8);
  t0.taints = {{"k", "v", TaintEffect::kNoSchedule}};
  c.st().UpsertNode(t0);
  NodeInfo t1 = c.Node("tainted1", 8000, 64 * kGi, 8);
  t1.taints = {{"k", "v", TaintEffect::kNoExecute}};
  c.st().UpsertNode(t1);
  c.Gang("g", 1, Resource::Cpu(1000).With(c.gpu(), 8));
  CycleResult r = c.Run();
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/g");
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->conditions[0].message,
            "1/1 tasks in gang unschedulable: 2 node(s) had insufficient nvidia.com/gpu, "
            "2 node(s) had untolerated taint {k: v}; the cluster has enough free in total (cpu 32, nvidia.com/gpu 20) "
            "for the 1 pod(s) the gang still needs (cpu 1, nvidia.com/gpu 8), but no node that fits them");
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].type, "Warning");
  EXPECT_EQ(c.Run().events.size(), 0u) << "the same condition is not re-announced";
}

TEST(Cycle, EnqueueGatesOnOvercommit) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 64 * kGi);
  JobInfo huge = c.Job("huge", 1);
  huge.min_resources = Resource::Cpu(20000);  // > 8000 * 1.2
  c.AddJob(huge);
  c.st().UpsertPod(c.Pod(huge, 0, Resource::Cpu(1000)));
  JobInfo ok = c.Job("ok", 1);
  ok.min_resources = Resource::Cpu(1000);
  c.AddJob(ok);
  c.st().UpsertPod(c.Pod(ok, 0, Resource::Cpu(1000)));
  c.Run();
  EXPECT_EQ(c.st().FindJob("ns/huge")->phase, PodGroupPhase::kPending);
  EXPECT_EQ(c.BoundCount("ns/huge"), 0);
  EXPECT_EQ(c.st().FindJob("ns/ok")->phase, PodGroupPhase::kRunning);
  EXPECT_EQ(c.BoundCount("ns/ok"), 1);
}

TEST(Cycle, CapacityReturnGoesToOlderStuckGang) {
  // docs/failure-scenarios.md, scenario 10: equal priority, the documented tie-break is creation time.
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 64 * kGi);
  c.Gang("gang", 2, Resource::Cpu(8000));   // created first, needs two nodes
  c.Gang("filler", 1, Resource::Cpu(8000));  // created later
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/gang"), 0);
  EXPECT_EQ(c.BoundCount("ns/filler"), 1);
  // Remediation: the filler finishes and a second node returns; the gang gets both.
  TaskInfo f = *c.st().FindTask("filler-0");
  f.status = TaskStatus::kSucceeded;
  c.st().UpsertPod(f);
  c.Gang("filler2", 1, Resource::Cpu(8000));
  c.Node("n1", 8000, 64 * kGi);
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/gang"), 2);
  EXPECT_EQ(c.BoundCount("ns/filler2"), 0);
}

TEST(Cycle, HostnameAntiAffinitySpreadsTheGang) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 64000, 512 * kGi);
  JobInfo j = c.Job("spread", 3);
  c.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.labels = {{"app", "spread"}};
    t.pod_anti_affinity.push_back(HostnameTerm({{"app", "spread"}}));
    c.st().UpsertPod(t);
  }
  JobInfo k = c.Job("fourth", 4);  // a fourth replica cannot fit anywhere: the whole gang waits
  c.AddJob(k);
  for (int i = 0; i < 4; ++i) {
    TaskInfo t = c.Pod(k, i, Resource::Cpu(1000));
    t.labels = {{"app", "other"}};
    t.pod_anti_affinity.push_back(HostnameTerm({{"app", "other"}}));
    c.st().UpsertPod(t);
  }
  CycleResult r = c.Run();
  std::set<std::string> nodes;
  for (const TaskInfo* t : c.st().TasksOfJob("ns/spread")) nodes.insert(t->node);
  EXPECT_EQ(c.BoundCount("ns/spread"), 3);
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(c.BoundCount("ns/fourth"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/fourth");
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->conditions[0].message,
            "1/4 tasks in gang unschedulable: 3 node(s) didn't match pod anti-affinity rules; the cluster has enough "
            "free in total (cpu 183) for the 1 pod(s) the gang still needs (cpu 1), but no node that fits them");
}

// A gang with required affinity to itself on the zone key lands in one zone, even when the best-scored
// nodes for its later pods are in another zone (the first pod opens its zone; the others are rechecked as
// nodes come up). A second gang with zone anti-affinity to the first goes to the other zone.
// Volcano's default configuration without binpack, whose weight 10 outweighs the soft scores (weight 2 each),
// in Volcano as here.
SchedulerConf ConfWithoutBinpack() {
  SchedulerConf conf = Cluster::Conf();
  for (auto& tier : conf.tiers)
    std::erase_if(tier.plugins, [](const PluginOption& o) { return o.name == "binpack"; });
  return conf;
}

// Preferred anti-affinity on the hostname spreads replicas even where the resource score would stack them
// (one big node scores highest for every pod: 93, 87, 81, 75 against 75), and preferred zone affinity pulls a
// pod to the zone of the pods it likes although the other zone's nodes are emptier. Both are batch scores:
// they change with every placement in the domain, so each pod is placed by a scan, not from a shared heap.
TEST(Cycle, PreferredPodAffinityAndAntiAffinityScoreTheNodes) {
  Cluster c(ConfWithoutBinpack());
  c.Queue("default");
  c.Node("big", 16000, 64 * kGi, 0, {{"zone", "a"}});
  for (int i = 0; i < 3; ++i) c.Node("small" + std::to_string(i), 4000, 16 * kGi, 0, {{"zone", "a"}});
  c.Node("b0", 8000, 16 * kGi, 0, {{"zone", "b"}});
  JobInfo d = c.Job("db", 1);
  c.AddJob(d);
  TaskInfo db = c.Pod(d, 0, Resource::Cpu(3000));
  db.labels = {{"app", "db"}};
  db.status = TaskStatus::kRunning;
  db.node = "b0";
  c.st().UpsertPod(db);
  JobInfo j = c.Job("web", 4);
  c.AddJob(j);
  for (int i = 0; i < 4; ++i) {
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.labels = {{"app", "web"}};
    t.preferred_pod_terms.push_back({100, true, HostnameTerm({{"app", "web"}})});
    c.st().UpsertPod(t);
  }
  JobInfo k = c.Job("client", 1);
  c.AddJob(k);
  TaskInfo client = c.Pod(k, 0, Resource::Cpu(500));
  client.preferred_pod_terms.push_back({100, false, Term({{"app", "db"}}, "zone")});
  c.st().UpsertPod(client);
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/web"), 4);
  std::set<std::string> nodes;
  for (const TaskInfo* t : c.st().TasksOfJob("ns/web")) nodes.insert(t->node);
  EXPECT_EQ(nodes.size(), 4u) << "one replica per node";
  ASSERT_EQ(c.BoundCount("ns/client"), 1);
  EXPECT_EQ(c.st().TasksOfJob("ns/client")[0]->node, "b0") << "the zone of the pod it prefers";
}

TEST(Cycle, ZonePodAffinityKeepsTheGangInOneZone) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 4; ++i) c.Node("a" + std::to_string(i), 4000, 64 * kGi, 0, {{"zone", "a"}});
  for (int i = 0; i < 4; ++i) c.Node("b" + std::to_string(i), 4000, 64 * kGi, 0, {{"zone", "b"}});
  JobInfo j = c.Job("train", 6);
  c.AddJob(j);
  for (int i = 0; i < 6; ++i) {
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.labels = {{"job", "train"}};
    t.pod_affinity.push_back(Term({{"job", "train"}}, "zone"));
    c.st().UpsertPod(t);
  }
  JobInfo k = c.Job("apart", 2);
  c.AddJob(k);
  for (int i = 0; i < 2; ++i) {
    TaskInfo t = c.Pod(k, i, Resource::Cpu(1000));
    t.pod_anti_affinity.push_back(Term({{"job", "train"}}, "zone"));
    c.st().UpsertPod(t);
  }
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/train"), 6);
  std::set<std::string> zones;
  for (const TaskInfo* t : c.st().TasksOfJob("ns/train")) zones.insert(c.st().FindNode(t->node)->labels.at("zone"));
  EXPECT_EQ(zones.size(), 1u);
  ASSERT_EQ(c.BoundCount("ns/apart"), 2);
  for (const TaskInfo* t : c.st().TasksOfJob("ns/apart"))
    EXPECT_NE(c.st().FindNode(t->node)->labels.at("zone"), *zones.begin());
}

// A gang of `n` one-cpu pods labelled app=web, spread over the zones (maxSkew 1) with each other:
// DoNotSchedule, or ScheduleAnyway when `soft`.
void SpreadGang(Cluster& c, const std::string& name, int n, bool soft = false) {
  JobInfo j = c.Job(name, n);
  c.AddJob(j);
  for (int i = 0; i < n; ++i) {
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.labels = {{"app", "web"}};
    (soft ? t.soft_spread : t.spread).push_back(Spread({{"app", "web"}}, "zone"));
    c.st().UpsertPod(t);
  }
}
// The job's placed pods per zone.
std::map<std::string, int> PerZone(Cluster& c, const std::string& job) {
  std::map<std::string, int> per_zone;
  for (const TaskInfo* t : c.st().TasksOfJob(job))
    if (!t->node.empty()) ++per_zone[c.st().FindNode(t->node)->labels.at("zone")];
  return per_zone;
}

// A gang with a zone spread constraint (maxSkew 1) is split evenly across the zones even though zone a has
// more and emptier nodes that score higher; each placement is counted before the next pod is checked.
TEST(Cycle, TopologySpreadSplitsTheGangAcrossZones) {
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 4; ++i) c.Node("a" + std::to_string(i), 16000, 64 * kGi, 0, {{"zone", "a"}});
  c.Node("b0", 8000, 64 * kGi, 0, {{"zone", "b"}});
  SpreadGang(c, "web", 6);
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/web"), 6);
  EXPECT_EQ(PerZone(c, "ns/web"), (std::map<std::string, int>{{"a", 3}, {"b", 3}}));
}

// ScheduleAnyway spreading scores instead of filtering: the gang still splits across the zones although zone
// a's emptier nodes win on resources.
TEST(Cycle, ScheduleAnywaySpreadScoresTheGangAcrossZones) {
  Cluster c(ConfWithoutBinpack());
  c.Queue("default");
  for (int i = 0; i < 4; ++i) c.Node("a" + std::to_string(i), 16000, 64 * kGi, 0, {{"zone", "a"}});
  c.Node("b0", 8000, 64 * kGi, 0, {{"zone", "b"}});
  SpreadGang(c, "web", 6, /*soft=*/true);
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/web"), 6);
  EXPECT_EQ(PerZone(c, "ns/web"), (std::map<std::string, int>{{"a", 3}, {"b", 3}}));
}

// When the smaller zone runs out of room, the skew rule caps the other zone: a gang that would need more
// waits whole, with kube-scheduler's reason in its condition.
TEST(Cycle, TopologySpreadThatCannotBeMetKeepsTheGangWaiting) {
  Cluster c;
  c.Queue("default");
  c.Node("a0", 16000, 64 * kGi, 0, {{"zone", "a"}});
  c.Node("b0", 1000, 64 * kGi, 0, {{"zone", "b"}});  // room for one pod
  SpreadGang(c, "web", 4);
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/web"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/web");
  ASSERT_NE(pg, nullptr);
  ASSERT_FALSE(pg->conditions.empty());
  EXPECT_NE(pg->conditions[0].message.find("didn't match pod topology spread constraints"), std::string::npos)
      << pg->conditions[0].message;
  // With maxSkew 2 the same gang fits: three in zone a, one in zone b.
  for (const TaskInfo* t : c.st().TasksOfJob("ns/web")) {
    TaskInfo u = *t;
    u.spread[0].max_skew = 2;
    c.st().UpsertPod(u);
  }
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/web"), 4);
}

// A gang whose pods need a pod that is not there waits, and says why.
TEST(Cycle, PodAffinityToAMissingPodWaitsWithTheReason) {
  Cluster c;
  c.Queue("default");
  c.Node("a0", 4000, 64 * kGi, 0, {{"zone", "a"}});
  JobInfo j = c.Job("follower", 1);
  c.AddJob(j);
  TaskInfo t = c.Pod(j, 0, Resource::Cpu(1000));
  t.pod_affinity.push_back(Term({{"app", "leader"}}, "zone"));
  c.st().UpsertPod(t);
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/follower"), 0);
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/follower");
  ASSERT_NE(pg, nullptr);
  ASSERT_FALSE(pg->conditions.empty());
  EXPECT_NE(pg->conditions[0].message.find("1 node(s) didn't match pod affinity rules"), std::string::npos)
      << pg->conditions[0].message;
}

TEST(Cycle, MinTaskMemberPerRole) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 4000, 64 * kGi);
  JobInfo j = c.Job("roles", 2);
  j.min_task_member = {{"ps", 1}, {"worker", 1}};
  c.AddJob(j);
  // Two workers fit, the ps (3 cores) does not: minMember 2 is reachable but the ps minimum is not.
  c.st().UpsertPod(c.Pod(j, 0, Resource::Cpu(2000), "worker"));
  c.st().UpsertPod(c.Pod(j, 1, Resource::Cpu(2000), "worker"));
  c.st().UpsertPod(c.Pod(j, 2, Resource::Cpu(3000), "ps"));
  c.Run();
  EXPECT_EQ(c.BoundCount("ns/roles"), 0);
}

TEST(Cycle, BackfillPlacesBestEffortPods) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 1000, kGi);
  JobInfo j = c.Job("be", 1);
  c.AddJob(j);
  c.st().UpsertPod(c.Pod(j, 0, Resource()));
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "n0");
}

// kube-scheduler's NodeUnschedulable (which Volcano's predicates run): a cordoned node is a candidate only
// for pods that tolerate node.kubernetes.io/unschedulable:NoSchedule; least-requested prefers the empty
// cordoned node for those, and never offers it to the others.
TEST(Cycle, CordonedNodeTakesOnlyPodsThatTolerateTheCordon) {
  Cluster c;
  c.Queue("default");
  NodeInfo cordoned = c.Node("a-cordoned", 16000, 64 * kGi);
  cordoned.unschedulable = true;
  c.st().UpsertNode(cordoned);
  c.Node("b-open", 16000, 64 * kGi);
  TaskInfo foreign;  // 10 cpu held by a pod of another scheduler: not in any queue's share
  foreign.uid = foreign.name = "foreign";
  foreign.ns = "ns";
  foreign.request = Resource::Cpu(10000);
  foreign.status = TaskStatus::kRunning;
  foreign.node = "b-open";
  c.st().UpsertPod(foreign);
  JobInfo plain = c.Job("plain", 1), big = c.Job("big", 1), tolerant = c.Job("tolerant", 1), all = c.Job("all", 1);
  for (const JobInfo* j : {&plain, &big, &tolerant, &all}) c.AddJob(*j);
  c.st().UpsertPod(c.Pod(plain, 0, Resource::Cpu(1000)));
  c.st().UpsertPod(c.Pod(big, 0, Resource::Cpu(6000)));  // b-open has 5 left after plain
  TaskInfo t = c.Pod(tolerant, 0, Resource::Cpu(6000));
  t.tolerations.push_back({"node.kubernetes.io/unschedulable", true, "", TaintEffect::kNoSchedule});
  c.st().UpsertPod(t);
  TaskInfo a = c.Pod(all, 0, Resource::Cpu(6000));
  a.tolerations.push_back({"", true, "", std::nullopt});  // operator Exists without a key: every taint
  c.st().UpsertPod(a);
  c.Run();
  auto node_of = [&](const std::string& job) { return c.st().TasksOfJob(job)[0]->node; };
  EXPECT_EQ(node_of("ns/plain"), "b-open");
  EXPECT_EQ(node_of("ns/big"), "");  // fits only the cordoned node, which it does not tolerate
  EXPECT_EQ(node_of("ns/tolerant"), "a-cordoned");
  EXPECT_EQ(node_of("ns/all"), "a-cordoned");
}

// A pod whose claim is bound to a node-local volume goes to that node; a pod whose claim waits for its
// first consumer is placed, and its bind names the claim so the binder can tell the provisioner where.
TEST(Cycle, ClaimsSteerThePodAndWaitingClaimsTravelWithTheBind) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 32 * kGi, 0, {{"kubernetes.io/hostname", "n0"}});
  c.Node("n1", 8000, 32 * kGi, 0, {{"kubernetes.io/hostname", "n1"}});
  VolumeInfo local;
  local.node_affinity = {{{{"kubernetes.io/hostname", SelectorOp::kIn, {"n1"}}}, {}}};
  c.st().UpsertVolume("pv-n1", local);
  c.st().UpsertClaim("ns/local", {"pv-n1", "", false});
  c.st().UpsertClaim("ns/fresh", {"", "fast", false});
  c.st().UpsertStorageClass("fast", {true, false, {}, ""});
  JobInfo a = c.Job("a", 1), b = c.Job("b", 1);
  c.AddJob(a);
  c.AddJob(b);
  TaskInfo ta = c.Pod(a, 0, Resource::Cpu(1000));
  ta.claims = {"local"};
  c.st().UpsertPod(ta);
  TaskInfo tb = c.Pod(b, 0, Resource::Cpu(1000));
  tb.claims = {"local", "fresh"};
  c.st().UpsertPod(tb);
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 2u);
  for (const auto& bind : r.binds) {
    EXPECT_EQ(bind.node, "n1") << bind.name;
    EXPECT_EQ(bind.select_node_claims, bind.job == "ns/b" ? std::vector<std::string>{"fresh"} : std::vector<std::string>{})
        << bind.name;
  }
}

// Local NVMe for each worker of a gang (WaitForFirstConsumer, kubernetes.io/no-provisioner): each pod takes a
// free pre-created volume on its node, never one another pod of the cycle took, so the gang spreads over the
// nodes that have one; the binds carry the volume to write into. When the binds fail, the volumes are free
// again; when the volumes come back naming their claims, nothing stays set aside.
TEST(Cycle, GangWorkersEachTakeAPreCreatedLocalVolume) {
  Cluster c;
  c.Queue("default");
  for (const char* n : {"n0", "n1", "n2"}) c.Node(n, 8000, 32 * kGi, 0, {{"kubernetes.io/hostname", n}});
  for (const char* n : {"n0", "n2"}) {
    VolumeInfo v;
    v.node_affinity = {{{{"kubernetes.io/hostname", SelectorOp::kIn, {n}}}, {}}};
    v.storage_class = "local-nvme";
    v.capacity = 1LL << 40;
    v.access_modes = kReadWriteOnce;
    v.available = true;
    c.st().UpsertVolume(std::string("nvme-") + n, v);
  }
  c.st().UpsertStorageClass("local-nvme", {true, true, {}, "kubernetes.io/no-provisioner"});
  JobInfo j = c.Job("train", 2);
  c.AddJob(j);
  for (int i = 0; i < 2; ++i) {
    ClaimInfo claim{"", "local-nvme", false};
    claim.uid = "uid-scratch-" + std::to_string(i);
    claim.request = 100LL << 30;
    claim.access_modes = kReadWriteOnce;
    c.st().UpsertClaim("ns/scratch-" + std::to_string(i), claim);
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.claims = {"scratch-" + std::to_string(i)};
    c.st().UpsertPod(t);
  }
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 2u);
  std::map<std::string, std::string> node_of_volume;
  for (const auto& bind : r.binds) {
    ASSERT_EQ(bind.bind_volumes.size(), 1u) << bind.name;
    EXPECT_TRUE(bind.select_node_claims.empty());
    EXPECT_EQ(bind.bind_volumes[0].volume, "nvme-" + bind.node) << "the volume on the pod's own node";
    EXPECT_EQ(bind.bind_volumes[0].claim_uid, "uid-" + bind.bind_volumes[0].claim);
    node_of_volume[bind.bind_volumes[0].volume] = bind.node;
  }
  EXPECT_EQ(node_of_volume.size(), 2u) << "two volumes, two nodes";
  // The first bind fails: the gang goes back to pending and its volumes are free again.
  c.st().BindFailed(r.binds[0].task_uid, "volume write failed");
  EXPECT_EQ(c.st().AssumedVolume("ns/scratch-0"), nullptr);
  EXPECT_EQ(c.st().AssumedVolume("ns/scratch-1"), nullptr);
  r = c.Run();
  ASSERT_EQ(r.binds.size(), 2u);
  // The binder's writes come back through the informer: the volumes name their claims.
  for (const auto& bind : r.binds) {
    VolumeInfo v = *c.st().FindVolume(bind.bind_volumes[0].volume);
    v.claim_ref = "ns/" + bind.bind_volumes[0].claim;
    v.available = false;
    c.st().UpsertVolume(bind.bind_volumes[0].volume, v);
    EXPECT_EQ(c.st().AssumedVolume(v.claim_ref), nullptr);
  }
}

// Volcano's backfill puts a best-effort pod on the best-scored feasible node, not the first by name: with
// nodeorder's least-requested score the idle node wins over a busy one that sorts first.
TEST(Cycle, BackfillChoosesTheBestScoredNode) {
  Cluster c;
  c.Queue("default");
  c.Node("a-busy", 4000, 8 * kGi);
  c.Node("b-idle", 4000, 8 * kGi);
  JobInfo load = c.Job("load", 1);
  c.AddJob(load);
  TaskInfo running = c.Pod(load, 0, Resource::CpuMem(3000, 6 * kGi));
  running.status = TaskStatus::kRunning;
  running.node = "a-busy";
  c.st().UpsertPod(running);
  JobInfo j = c.Job("be", 1);
  c.AddJob(j);
  c.st().UpsertPod(c.Pod(j, 0, Resource()));
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "b-idle");
}

// The job controller deletes a job's PodGroup on every full restart and re-creates it under the same name
// with a new uid. When both happen between two cycles, the new PodGroup's first status (Inqueue, no pods)
// equals what was last emitted for the old one; it must still be emitted, for the new uid, or the job
// controller waits forever for a phase that is never written.
TEST(Cycle, PodGroupRecreatedUnderSameNameGetsItsOwnStatus) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  JobInfo j = c.Job("a", 2);
  c.AddJob(j);  // no pods yet: the controller creates them once the PodGroup is Inqueue
  CycleResult r = c.Run();
  const PodGroupStatusUpdate* u = FindPg(r, "ns/a");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->phase, PodGroupPhase::kInqueue);
  EXPECT_EQ(u->uid, "uid-a");
  EXPECT_EQ(FindPg(c.Run(), "ns/a"), nullptr) << "an unchanged status is not emitted again";

  c.st().RemoveJob("ns/a");
  j.uid = "uid-a-2";
  j.phase = PodGroupPhase::kPending;
  c.AddJob(j);
  r = c.Run();
  u = FindPg(r, "ns/a");
  ASSERT_NE(u, nullptr) << "the re-created PodGroup never got a status";
  EXPECT_EQ(u->uid, "uid-a-2");
  EXPECT_EQ(u->phase, PodGroupPhase::kInqueue);
}

// After a re-list the informer can report the replacement as one update of the old object (same key, new
// uid). The old gang's memos must not carry over: the new one gets its own status.
TEST(Cycle, PodGroupReplacedByUpdateWithNewUidStartsOver) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  JobInfo j = c.Job("a", 2);
  c.AddJob(j);
  ASSERT_NE(FindPg(c.Run(), "ns/a"), nullptr);
  j.uid = "uid-a-2";
  j.phase = PodGroupPhase::kPending;
  c.AddJob(j);  // no RemoveJob in between
  const PodGroupStatusUpdate* u = nullptr;
  CycleResult r = c.Run();
  u = FindPg(r, "ns/a");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->uid, "uid-a-2");
  EXPECT_EQ(u->phase, PodGroupPhase::kInqueue);
}

// ResyncStatus re-sends every status (so a failed or overwritten write is corrected) without repeating
// Events.
TEST(Cycle, ResyncStatusReemitsEverythingWithoutEvents) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Gang("fits", 2, Resource::CpuMem(1000, kGi));
  c.Gang("huge", 1, Resource::CpuMem(64000, kGi));
  CycleResult r = c.Run();
  ASSERT_NE(FindPg(r, "ns/fits"), nullptr);
  ASSERT_NE(FindPg(r, "ns/huge"), nullptr);
  r = c.Run();
  EXPECT_EQ(FindPg(r, "ns/fits"), nullptr);
  EXPECT_EQ(FindPg(r, "ns/huge"), nullptr);
  c.s().ResyncStatus();
  r = c.Run();
  const PodGroupStatusUpdate* fits = FindPg(r, "ns/fits");
  const PodGroupStatusUpdate* huge = FindPg(r, "ns/huge");
  ASSERT_NE(fits, nullptr);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(fits->phase, PodGroupPhase::kRunning);
  ASSERT_EQ(huge->conditions.size(), 2u);
  EXPECT_EQ(huge->conditions[0].type, "Unschedulable");
  EXPECT_EQ(huge->conditions[1].type, "Queued");
  EXPECT_TRUE(r.events.empty()) << r.events.size() << " events repeated by a resync";
  EXPECT_FALSE(r.queues.empty()) << "queue status is re-sent too";
  r = c.Run();
  EXPECT_EQ(FindPg(r, "ns/fits"), nullptr) << "a resync lasts one cycle";
}

// A job resumed after AbortJob keeps the pods that had finished (Volcano's soft kill), and the controller does
// not re-create a name that still exists: task t0 of 3 is one Succeeded pod of the old run plus two new
// pending ones. The succeeded pod counts towards the task's minimum, as in Volcano, or the gang stays
// unschedulable for good (found by the churn e2e: "Not enough valid pods of task t0, valid: 2, min: 3").
TEST(Cycle, SucceededPodKeptFromAnEarlierRunCountsTowardsTheTaskMinimum) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 16 * kGi);
  JobInfo j = c.Job("resumed", 6);
  j.min_task_member = {{"t0", 3}, {"t1", 3}};
  c.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t0 = c.Pod(j, i, Resource::CpuMem(500, kGi), "t0");
    if (i == 2) {
      t0.status = TaskStatus::kSucceeded;
      t0.node = "n0";
    }
    c.st().UpsertPod(t0);
    c.st().UpsertPod(c.Pod(j, 10 + i, Resource::CpuMem(500, kGi), "t1"));
  }
  CycleResult r = c.Run();
  EXPECT_EQ(r.binds.size(), 5u) << "the 5 pending pods of the resumed gang are bound";
  const PodGroupStatusUpdate* u = FindPg(r, "ns/resumed");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->phase, PodGroupPhase::kRunning);
}

TEST(Cycle, HostPortPodsSpreadAndNeverShareAPort) {
  // Three pods asking for hostPort 8080 on three nodes that could each hold all of them: one per node (the
  // allocate action re-checks host-port pods against a shape's shared heap), and a fourth finds no node,
  // with kube-scheduler's reason.
  Cluster c;
  c.Queue("default");
  for (int i = 0; i < 3; ++i) c.Node("n" + std::to_string(i), 8000, 16 * kGi);
  JobInfo j = c.Job("web", 3);
  c.AddJob(j);
  for (int i = 0; i < 3; ++i) {
    TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
    t.host_ports = {{"0.0.0.0", "TCP", 8080}};
    c.st().UpsertPod(t);
  }
  c.Run();
  std::set<std::string> nodes;
  for (const TaskInfo* t : c.st().TasksOfJob("ns/web")) nodes.insert(t->node);
  EXPECT_EQ(c.BoundCount("ns/web"), 3);
  EXPECT_EQ(nodes.size(), 3u);

  // A pod without host ports and one with them are different shapes, even with the same request: the one
  // without may go anywhere, the one with cannot share the first's node choice.
  JobInfo k = c.Job("mix", 1);
  c.AddJob(k);
  c.st().UpsertPod(c.Pod(k, 0, Resource::Cpu(1000)));
  TaskInfo port = c.Pod(k, 1, Resource::Cpu(1000));
  port.host_ports = {{"", "", 8080}};
  c.st().UpsertPod(port);
  c.Run();
  EXPECT_EQ(c.st().FindTask("mix-0")->status, TaskStatus::kBinding);
  EXPECT_EQ(c.st().FindTask("mix-1")->status, TaskStatus::kPending);
  // Alone in its gang, the pod that finds no free port says so with kube-scheduler's reason.
  JobInfo solo = c.Job("solo", 1);
  c.AddJob(solo);
  TaskInfo lone = c.Pod(solo, 0, Resource::Cpu(1000));
  lone.host_ports = {{"10.1.2.3", "TCP", 8080}};
  c.st().UpsertPod(lone);
  CycleResult r = c.Run();
  const PodGroupStatusUpdate* pg = FindPg(r, "ns/solo");
  ASSERT_NE(pg, nullptr);
  ASSERT_FALSE(pg->conditions.empty());
  EXPECT_NE(pg->conditions[0].message.find("3 node(s) didn't have free ports for the requested pod ports"),
            std::string::npos)
      << pg->conditions[0].message;
}

}  // namespace
}  // namespace tephra::sched

namespace tephra::sched::testing {
namespace {

// Advances 1 ms every time it is read: a deterministic stand-in for a cycle that takes time.
class TickClock final : public core::Clock {
 public:
  TimePoint Now() const override { return TimePoint(std::chrono::milliseconds(++ticks_)); }
  WallTime WallNow() const override { return WallTime(std::chrono::seconds(2'000'000'000)); }

 private:
  mutable int64_t ticks_ = 0;
};

TEST(Cycle, AllocateSliceYieldsAndTheRoundResumesWhereItStopped) {
  TickClock clock;
  SchedulerConf conf = SchedulerConf::Default();
  conf.actions = {"enqueue", "allocate", "backfill"};
  conf.core.allocate_slice_us = 5000;  // 5 ms = a handful of clock reads
  conf.core.retry_unchanged_every_cycles = 0;  // unschedulable gangs are retried every cycle
  auto s = Scheduler::Create(conf, PluginRegistry::Builtin(), &clock);
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c;  // only for its builders; the jobs go into `s`
  auto& st = (*s)->state();
  st.set_options(conf.core);
  QueueInfo q;
  q.name = "default";
  st.UpsertQueue(q);
  for (int i = 0; i < 4; ++i) {
    NodeInfo n;
    n.name = "n" + std::to_string(i);
    n.allocatable = Resource::CpuMem(64000, 256 * kGi).With(kPods, 110);
    st.UpsertNode(n);
  }
  // First in the order: gangs that never fit. Without the round's memory every cycle would spend its slice
  // on them and never reach the others.
  for (int g = 0; g < 10; ++g) {
    JobInfo j = c.Job("big" + std::to_string(g), 2);
    j.phase = PodGroupPhase::kInqueue;
    st.UpsertJob(j);
    for (int i = 0; i < 2; ++i) st.UpsertPod(c.Pod(j, i, Resource::CpuMem(1000000, kGi)));
  }
  const int jobs = 40;
  for (int g = 0; g < jobs; ++g) {
    JobInfo j = c.Job("g" + std::to_string(g), 2);
    j.phase = PodGroupPhase::kInqueue;
    st.UpsertJob(j);
    for (int i = 0; i < 2; ++i) st.UpsertPod(c.Pod(j, i, Resource::CpuMem(1000, kGi)));
  }
  // Every cycle yields after a few jobs, but together they place every job exactly once, in order.
  int cycles = 0, yielded = 0;
  std::vector<std::string> bound;
  while (cycles < 100) {
    CycleResult r = (*s)->RunCycle(clock.WallNow());
    ++cycles;
    yielded += r.yielded ? 1 : 0;
    for (const auto& b : r.binds) bound.push_back(b.task_uid);
    if (bound.size() == static_cast<size_t>(2 * jobs) && !r.yielded) break;
  }
  EXPECT_GT(yielded, 3) << "the slice never ran out: the test proves nothing";
  ASSERT_EQ(bound.size(), static_cast<size_t>(2 * jobs));
  std::set<std::string> unique(bound.begin(), bound.end());
  EXPECT_EQ(unique.size(), bound.size());
  EXPECT_EQ(bound.front(), "g0-0");  // the round started at the head of the placeable ones...
  EXPECT_EQ(bound.back(), "g" + std::to_string(jobs - 1) + "-1");  // ...and reached its end
}

TEST(Cycle, NoSliceMeansOneCycleConsidersEveryJob) {
  TickClock clock;
  SchedulerConf conf = SchedulerConf::Default();
  auto s = Scheduler::Create(conf, PluginRegistry::Builtin(), &clock);
  ASSERT_TRUE(s.ok());
  Cluster c;
  auto& st = (*s)->state();
  QueueInfo q;
  q.name = "default";
  st.UpsertQueue(q);
  NodeInfo n;
  n.name = "n0";
  n.allocatable = Resource::CpuMem(64000, 256 * kGi).With(kPods, 110);
  st.UpsertNode(n);
  for (int g = 0; g < 20; ++g) {
    JobInfo j = c.Job("g" + std::to_string(g), 1);
    j.phase = PodGroupPhase::kInqueue;
    st.UpsertJob(j);
    st.UpsertPod(c.Pod(j, 0, Resource::CpuMem(1000, kGi)));
  }
  CycleResult r = (*s)->RunCycle(clock.WallNow());
  EXPECT_FALSE(r.yielded);
  EXPECT_EQ(r.binds.size(), 20u);
}

// A shape's shared heap learns about nodes that other jobs' placements changed (Touch). A node that shape may
// never use (its nodeSelector, a taint) must not enter the heap that way: here A2 has the same shape as A1,
// whose heap was built before B's placement on the big unlabelled node, which would outscore the labelled one.
TEST(Cycle, NodeTouchedByAnotherJobNeverJoinsTheHeapOfAShapeThatCannotUseIt) {
  Cluster c;
  c.Queue("default");
  c.Node("gpu", 8000, 16 * kGi);
  c.Node("big", 64000, 256 * kGi);
  NodeInfo labelled = *c.st().FindNode("gpu");
  labelled.labels["accel"] = "yes";
  c.st().UpsertNode(labelled);
  auto selective = [&](const std::string& name) {
    JobInfo j = c.Job(name, 1);
    c.AddJob(j);
    TaskInfo t = c.Pod(j, 0, Resource::Cpu(1000));
    t.node_selector = {{"accel", "yes"}};
    c.st().UpsertPod(t);
  };
  selective("a1");
  c.Gang("b", 1, Resource::Cpu(60000));  // only "big" holds it; binpack then favours "big" for everyone
  selective("a2");
  c.Run();
  EXPECT_EQ(c.st().FindTask("a1-0")->node, "gpu");
  EXPECT_EQ(c.st().FindTask("b-0")->node, "big");
  EXPECT_EQ(c.st().FindTask("a2-0")->node, "gpu");
}

// Pods spread only by hostname (a Service's system defaults on nodes without zone labels, or their own
// ScheduleAnyway hostname constraint) are placed from the shape's heap with a sparse batch score instead of a
// scan of every node. The choice must be the scan's, node for node: the same random clusters are scheduled
// twice, the second time with an inert anti-affinity pod (no job, selects nothing), which sends every task
// to the scan.
TEST(Cycle, SparseSpreadPlacementsAreTheScansPlacements) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto run = [&](bool force_scan) {
      Cluster c;
      c.Queue("default");
      uint64_t x = seed * 0x9E3779B97F4A7C15ULL;
      auto next = [&](int n) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return static_cast<int>(x % static_cast<uint64_t>(n));
      };
      const int nodes = 6 + next(10);
      for (int i = 0; i < nodes; ++i) c.Node("n" + std::to_string(i), 4000 * (1 + next(4)), 64 * kGi);
      // Running pods of two services on random nodes.
      for (int i = 0; i < 8; ++i) {
        TaskInfo p;
        p.uid = "old-" + std::to_string(i);
        p.ns = "ns";
        p.name = p.uid;
        p.labels = {{"app", next(2) ? "web" : "db"}};
        p.request = Resource::Cpu(500);
        p.status = TaskStatus::kRunning;
        p.node = "n" + std::to_string(next(nodes));
        c.st().UpsertPod(p);
      }
      c.st().UpsertService("ns", "web", {{"app", "web"}});
      for (int g = 0; g < 3; ++g) {
        const int size = 2 + next(5);
        JobInfo j = c.Job("g" + std::to_string(g), size);
        c.AddJob(j);
        for (int i = 0; i < size; ++i) {
          TaskInfo t = c.Pod(j, i, Resource::Cpu(1000));
          t.labels = {{"app", g == 0 ? "web" : "job-" + std::to_string(g)}};
          if (g == 2) t.soft_spread.push_back(testing::Spread(t.labels, "kubernetes.io/hostname", 2));
          c.st().UpsertPod(t);
        }
        if (g == 1) c.st().UpsertService("ns", "job-1", {{"app", "job-1"}});
      }
      if (force_scan) {
        TaskInfo inert;
        inert.uid = "inert";
        inert.ns = "elsewhere";
        inert.name = "inert";
        inert.pod_anti_affinity.push_back(testing::HostnameTerm({{"nothing", "here"}}));
        c.st().UpsertPod(inert);
      }
      c.Run();
      std::map<std::string, std::string> placed;
      for (int g = 0; g < 3; ++g)
        for (const TaskInfo* t : c.st().TasksOfJob("ns/g" + std::to_string(g))) placed[t->uid] = t->node;
      return placed;
    };
    const auto sparse = run(false), scanned = run(true);
    EXPECT_EQ(sparse, scanned) << "seed " << seed;
    int bound = 0;
    for (const auto& [uid, node] : sparse) bound += !node.empty();
    EXPECT_GT(bound, 0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tephra::sched::testing
