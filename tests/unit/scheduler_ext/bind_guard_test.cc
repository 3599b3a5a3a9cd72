// The bind guard (docs/scheduler.md, "Bind guard"): a decision that breaks a hard constraint of its pod on the
// node as the cache holds it at bind time is refused, never posted, and its gang goes back to pending. One
// test per reason: the core places a gang, then the node (or the pod's world) changes the way the reason
// names, and GuardBinds must refuse it.
#include <gtest/gtest.h>

#include <functional>

#include "tephra/sched/guard.h"
#include "tephra/sched/scheduler.h"
#include "tephra/scheduler/binder.h"

namespace tephra::scheduler {
namespace {

using sched::NodeInfo;
using sched::Resource;
using sched::TaskInfo;
using sched::TaskStatus;

struct Placed {
  std::unique_ptr<sched::Scheduler> s;
  std::vector<sched::BindDecision> binds;
  sched::ClusterState& st() { return s->state(); }

  // Two nodes (n1, n2: 4 cpu, pool=a, one shareable card each) and a gang of `pods` pods of one cpu, each
  // shaped by `shape`; runs one cycle. Only n1 is offered when `one_node`.
  Placed(int pods, const std::function<void(TaskInfo&)>& shape, bool one_node = false, bool expect_placed = true) {
    auto c = sched::Scheduler::Create(sched::SchedulerConf::Default());
    EXPECT_TRUE(c.ok()) << c.status();
    s = std::move(*c);
    sched::QueueInfo q;
    q.name = "default";
    st().UpsertQueue(q);
    for (const char* name : {"n1", "n2"}) {
      if (one_node && std::string(name) == "n2") continue;
      st().UpsertNode(Node(name));
    }
    sched::JobInfo j;
    j.key = "ns/pg";
    j.ns = "ns";
    j.name = "pg";
    j.min_member = pods;
    st().UpsertJob(j);
    for (int i = 0; i < pods; ++i) {
      TaskInfo t;
      t.uid = "u" + std::to_string(i);
      t.ns = "ns";
      t.name = "p" + std::to_string(i);
      t.job = "ns/pg";
      t.request = Resource::CpuMem(1000, 1LL << 30);
      t.creation_index = static_cast<uint64_t>(i);
      shape(t);
      st().UpsertPod(t);
    }
    binds = s->RunCycle(sched::WallTime(std::chrono::seconds(1'000'000))).binds;
    if (expect_placed) {
      EXPECT_EQ(binds.size(), static_cast<size_t>(pods));
    }
  }
  static NodeInfo Node(const std::string& name) {
    NodeInfo n;
    n.name = name;
    n.allocatable = Resource::CpuMem(4000, 8LL << 30).With(sched::kPods, 110);
    n.labels = {{"pool", "a"}, {"kubernetes.io/hostname", name}};
    n.devices.kind = sched::DeviceKind::kNvidiaGpu;
    n.devices.model = "A100";
    n.devices.cards.push_back({.id = name + "-gpu0", .index = 0, .memory = 16000, .max_sharers = 2});
    return n;
  }
  // Changes node `name` as `edit` says (the caller's fields only, as an informer update would).
  void EditNode(const std::string& name, const std::function<void(NodeInfo&)>& edit) {
    const NodeInfo* cur = st().FindNode(name);
    ASSERT_NE(cur, nullptr);
    NodeInfo n = Node(name);
    n.labels = cur->labels;
    n.taints = cur->taints;
    n.unschedulable = cur->unschedulable;
    n.ready = cur->ready;
    n.allocatable = cur->allocatable;
    n.devices.cards = cur->devices.cards;
    edit(n);
    st().UpsertNode(n);
  }
  // Runs the guard on the cycle's binds; expects exactly one refusal for `reason`, and the gang back to pending.
  void ExpectRefused(const char* reason) {
    const size_t before = binds.size();
    auto refused = GuardBinds(st(), &binds);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(refused[0].check.reason, reason) << refused[0].check.detail;
    EXPECT_FALSE(refused[0].check.detail.empty());
    EXPECT_TRUE(binds.empty()) << "the rest of the gang must not be posted either (" << before << " decisions)";
    for (const auto& r : refused[0].rolled_back) EXPECT_EQ(st().FindTask(r)->status, TaskStatus::kPending);
    EXPECT_EQ(st().FindTask(refused[0].decision.task_uid)->status, TaskStatus::kPending);
  }
};

TEST(BindGuard, UnchangedDecisionsPass) {
  Placed s(2, [](TaskInfo& t) { t.node_selector = {{"pool", "a"}}; });
  auto refused = GuardBinds(s.st(), &s.binds);
  EXPECT_TRUE(refused.empty());
  EXPECT_EQ(s.binds.size(), 2u);
}

TEST(BindGuard, NodeSelectorNoLongerMatched) {
  Placed s(1, [](TaskInfo& t) { t.node_selector = {{"pool", "a"}}; });
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.labels["pool"] = "b"; });
  s.ExpectRefused(sched::kGuardSelector);
}

TEST(BindGuard, RequiredNodeAffinityNoLongerMatched) {
  Placed s(1, [](TaskInfo& t) {
    sched::NodeSelectorTerm term;
    term.match_expressions.push_back({"pool", sched::SelectorOp::kIn, {"a"}});
    t.required_affinity.push_back(term);
  });
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.labels.erase("pool"); });
  s.ExpectRefused(sched::kGuardSelector);
}

TEST(BindGuard, UntoleratedTaint) {
  Placed s(1, [](TaskInfo&) {});
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.taints.push_back({"dedicated", "x", sched::TaintEffect::kNoExecute}); });
  s.ExpectRefused(sched::kGuardTaint);
}

TEST(BindGuard, ToleratedTaintPasses) {
  Placed s(1, [](TaskInfo& t) { t.tolerations.push_back({"dedicated", true, "", std::nullopt}); });
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.taints.push_back({"dedicated", "x", sched::TaintEffect::kNoSchedule}); });
  EXPECT_TRUE(GuardBinds(s.st(), &s.binds).empty());
}

TEST(BindGuard, CordonedOrFaultAvoided) {
  Placed s(1, [](TaskInfo&) {});
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.unschedulable = true; });
  s.ExpectRefused(sched::kGuardCordoned);
}

TEST(BindGuard, NodeNotReady) {
  Placed s(1, [](TaskInfo&) {});
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.ready = false; });
  s.ExpectRefused(sched::kGuardNotReady);
}

TEST(BindGuard, NodeGone) {
  Placed s(1, [](TaskInfo&) {});
  s.st().RemoveNode(s.binds[0].node);
  s.ExpectRefused(sched::kGuardNodeGone);
}

TEST(BindGuard, ResourcesNoLongerFree) {
  Placed s(1, [](TaskInfo& t) { t.request = Resource::CpuMem(3000, 1LL << 30); });
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.allocatable.Set(sched::kCpu, 2000); });
  s.ExpectRefused(sched::kGuardResources);
}

TEST(BindGuard, CardTurnedUnhealthy) {
  Placed s(1, [](TaskInfo& t) {
    t.devices.kind = sched::DeviceKind::kNvidiaGpu;
    t.devices.shared = 1;
    t.devices.memory = 4000;
  });
  ASSERT_EQ(s.binds[0].cards.size(), 1u);
  s.EditNode(s.binds[0].node, [](NodeInfo& n) { n.devices.cards[0].health = sched::CardHealth::kUnhealthy; });
  s.ExpectRefused(sched::kGuardDevices);
}

TEST(BindGuard, HostPortTakenMeanwhile) {
  Placed s(1, [](TaskInfo& t) { t.host_ports.push_back({"", "TCP", 8080}); });
  // Another scheduler's pod shows up running on the node with the same port.
  TaskInfo other;
  other.uid = "other";
  other.ns = "ns";
  other.name = "other";
  other.request = Resource::CpuMem(100, 1 << 20);
  other.host_ports.push_back({"", "TCP", 8080});
  other.status = TaskStatus::kRunning;
  other.node = s.binds[0].node;
  s.st().UpsertPod(other);
  s.ExpectRefused(sched::kGuardHostPorts);
}

TEST(BindGuard, BoundVolumeUsableOnlyElsewhere) {
  Placed s(1, [](TaskInfo& t) { t.claims = {"data"}; }, /*one_node=*/true, /*expect_placed=*/false);
  // No claim yet: the pod cannot be placed at all (VolumeBinding). Give it a bound claim on a volume for n1,
  // place it, then the volume turns out to belong to another host.
  ASSERT_TRUE(s.binds.empty());
  sched::ClaimInfo claim;
  claim.volume = "pv1";
  s.st().UpsertClaim("ns/data", claim);
  sched::VolumeInfo pv;
  sched::NodeSelectorTerm term;
  term.match_expressions.push_back({"kubernetes.io/hostname", sched::SelectorOp::kIn, {"n1"}});
  pv.node_affinity.push_back(term);
  s.st().UpsertVolume("pv1", pv);
  s.binds = s.s->RunCycle(sched::WallTime(std::chrono::seconds(1'000'100))).binds;
  ASSERT_EQ(s.binds.size(), 1u);
  pv.node_affinity[0].match_expressions[0].values = {"n9"};
  s.st().UpsertVolume("pv1", pv);
  s.ExpectRefused(sched::kGuardVolumes);
}

TEST(BindGuard, OneRefusalTakesTheWholeGangBack) {
  // Two pods spread by a selector onto two nodes; one node loses the label: both decisions are dropped.
  Placed s(2, [](TaskInfo& t) {
    t.node_selector = {{"pool", "a"}};
    t.request = Resource::CpuMem(3000, 1LL << 30);
  });
  ASSERT_NE(s.binds[0].node, s.binds[1].node);
  s.EditNode(s.binds[1].node, [](NodeInfo& n) { n.labels["pool"] = "b"; });
  s.ExpectRefused(sched::kGuardSelector);
  EXPECT_EQ(s.st().FindTask("u0")->status, TaskStatus::kPending);
  EXPECT_EQ(s.st().FindTask("u1")->status, TaskStatus::kPending);
}

TEST(BindGuard, SupersededDecision) {
  Placed s(1, [](TaskInfo&) {});
  s.st().BindFailed(s.binds[0].task_uid, "test");
  auto refused = GuardBinds(s.st(), &s.binds);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].check.reason, sched::kGuardSuperseded);
  EXPECT_TRUE(s.binds.empty());
}

}  // namespace
}  // namespace tephra::scheduler
