// Issue 40: the dashboards e2e's sequence on the core, with every bind checked by CheckPlacement (guard.h).
// Four 8-cpu 4-GPU nodes in two leaves (real HyperNodes selecting nodes by label), queues team-a and team-b
// (capped), EASY reservations, preempt; a GPU training gang in team-b loses a pod to a faulted node, which
// is then healed (fault-avoid 0: schedulable at once); a low-priority filler, a high-priority gang that
// preempts it, a gang too wide to start (reserved), and a pod whose nodeSelector matches no node.
#include <gtest/gtest.h>

#include <functional>

#include "fixture.h"
#include "tephra/sched/guard.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;

SchedulerConf DashboardsConf(int reservation_depth) {
  SchedulerConf c;
  c.actions = {"enqueue", "allocate", "preempt", "backfill"};
  Tier t1, t2;
  for (const char* p : {"priority", "gang", "conformance"}) t1.plugins.push_back(PluginOption::Named(p));
  PluginOption drf = PluginOption::Named("drf");
  drf.enable_preemptable = false;
  t2.plugins.push_back(drf);
  for (const char* p : {"predicates", "proportion", "nodeorder", "binpack"}) t2.plugins.push_back(PluginOption::Named(p));
  c.tiers = {t1, t2};
  c.core.reservation_depth = reservation_depth;
  return c;
}

class Replay {
 public:
  explicit Replay(int reservation_depth) : c_(DashboardsConf(reservation_depth)) {
    for (int i = 0; i < 4; ++i) {
      NodeInfo& n = c_.Node("node-" + std::to_string(i), 8000, 32 * kGi, 4,
                            {{"tephra.io/leaf", "leaf-" + std::to_string(i / 2)}});
      nodes_.push_back(n);
    }
    for (int l = 0; l < 2; ++l) {
      HyperNodeInfo h;
      h.name = "e2e-leaf-" + std::to_string(l);
      h.tier = 1;
      HyperNodeMember m;
      m.kind = MemberSelectorKind::kLabel;
      m.label_selector.match_labels = {{"tephra.io/leaf", "leaf-" + std::to_string(l)}};
      h.members.push_back(m);
      c_.st().UpsertHyperNode(h);
    }
    HyperNodeInfo spine;
    spine.name = "e2e-spine-0";
    spine.tier = 2;
    for (int l = 0; l < 2; ++l) {
      HyperNodeMember m;
      m.type = HyperNodeMemberType::kHyperNode;
      m.name_or_pattern = "e2e-leaf-" + std::to_string(l);
      spine.members.push_back(m);
    }
    c_.st().UpsertHyperNode(spine);
    c_.Queue("team-a", 2);
    c_.Queue("team-b", 1, Resource::Unlimited().With(kCpu, 16000).With(kMemory, 64 * kGi).With(c_.gpu(), 8));
  }

  Cluster& c() { return c_; }

  // A vcjob: its PodGroup and `replicas` pods, each shaped by `shape`.
  void Job(const std::string& name, const std::string& queue, int replicas, int min, Resource req, int priority,
           std::chrono::seconds estimate, const std::function<void(TaskInfo&)>& shape = {}) {
    JobInfo j = c_.Job(name, min, queue, priority);
    j.running_estimate = estimate;
    c_.AddJob(j);
    jobs_[name] = j;
    for (int i = 0; i < replicas; ++i) AddPod(name, req, shape);
  }
  void AddPod(const std::string& job, Resource req, const std::function<void(TaskInfo&)>& shape = {}) {
    const JobInfo& j = jobs_[job];
    TaskInfo t = c_.Pod(j, next_[job]++, req, "w");
    t.priority = j.priority;
    if (shape) shape(t);
    shapes_[t.uid] = shape;
    c_.st().UpsertPod(t);
    pods_[t.uid] = t;
  }

  // One cycle; every bind is checked, then confirmed (the pod runs there); evicted pods are deleted and
  // their job's controller creates a replacement of the same shape.
  void Cycle() {
    now_ += 1;
    CycleResult r = c_.RunAt(now_);
    for (const auto& b : r.binds) {
      const TaskInfo* t = c_.st().FindTask(b.task_uid);
      ASSERT_NE(t, nullptr);
      PlacementCheck chk = CheckPlacement(c_.st(), *t, b.node);
      ASSERT_TRUE(chk.ok()) << "cycle " << now_ << ": bind " << b.name << " -> " << b.node << " breaks " << chk.reason
                            << ": " << chk.detail;
    }
    for (const auto& b : r.binds) {
      c_.st().BindSucceeded(b.task_uid);
      TaskInfo& p = pods_[b.task_uid];
      p.node = b.node;
      p.status = TaskStatus::kRunning;
      p.start_time = WallTime(std::chrono::seconds(2'000'000'000 + now_));
      c_.st().UpsertPod(p);
    }
    for (const auto& e : r.evictions) {
      auto it = pods_.find(e.task_uid);
      if (it == pods_.end()) continue;
      const std::string job = it->second.job.substr(3);
      const Resource req = it->second.request;
      c_.st().RemovePod(e.task_uid);
      pods_.erase(it);
      AddPod(job, req, shapes_[e.task_uid]);
    }
  }
  void Cycles(int n) {
    for (int i = 0; i < n && !::testing::Test::HasFatalFailure(); ++i) Cycle();
  }
  std::string NodeOf(const std::string& uid) { return pods_[uid].node; }
  void SetUnschedulable(const std::string& node, bool u) {
    for (auto& n : nodes_)
      if (n.name == node) {
        n.unschedulable = u;
        c_.st().UpsertNode(n);
      }
  }
  // The fault controller deletes the batch pods of a faulted node; their jobs replace them.
  void DeletePodsOn(const std::string& node) {
    std::vector<std::string> gone;
    for (const auto& [uid, p] : pods_)
      if (p.node == node) gone.push_back(uid);
    for (const auto& uid : gone) {
      const std::string job = pods_[uid].job.substr(3);
      const Resource req = pods_[uid].request;
      c_.st().RemovePod(uid);
      pods_.erase(uid);
      AddPod(job, req, shapes_[uid]);
    }
  }
  int Placed(const std::string& job) { return c_.BoundCount("ns/" + job); }

 private:
  Cluster c_;
  std::vector<NodeInfo> nodes_;
  std::map<std::string, JobInfo> jobs_;
  std::map<std::string, int> next_;
  std::map<std::string, TaskInfo> pods_;
  std::map<std::string, std::function<void(TaskInfo&)>> shapes_;
  int64_t now_ = 0;
};

void RunDashboardsSequence(int reservation_depth) {
  Replay r(reservation_depth);
  using std::chrono::seconds;
  r.Job("train", "team-b", 2, 2, Resource::CpuMem(1000, 2 * kGi).With(r.c().gpu(), 4), 0, seconds(3600));
  r.Cycles(3);
  ASSERT_EQ(r.Placed("train"), 2);
  const std::string fault_node = r.NodeOf("train-0");
  r.SetUnschedulable(fault_node, true);  // the fault annotation: the converter makes the node unschedulable
  r.DeletePodsOn(fault_node);
  r.Cycles(3);
  ASSERT_EQ(r.Placed("train"), 2);
  r.SetUnschedulable(fault_node, false);  // healed, --fault-avoid-seconds 0
  r.Job("filler", "team-a", 12, 1, Resource::CpuMem(2000, 1 * kGi), 10, seconds(3600));
  r.Cycles(3);
  r.Job("urgent", "team-a", 2, 2, Resource::CpuMem(5000, 1 * kGi), 1000, seconds(3600));
  r.Cycles(6);
  EXPECT_EQ(r.Placed("urgent"), 2);
  r.Job("wide", "team-a", 4, 4, Resource::CpuMem(7000, 1 * kGi), 0, seconds(600));
  r.Job("stuck", "team-b", 1, 1, Resource::CpuMem(100, 128LL << 20), 0, seconds(60),
        [](TaskInfo& t) { t.node_selector = {{"e2e-pool", "none"}}; });
  r.Cycles(20);
  EXPECT_EQ(r.Placed("stuck"), 0);
}

TEST(BadBind, DashboardsSequenceWithEasyReservations) { RunDashboardsSequence(1); }
TEST(BadBind, DashboardsSequenceWithoutReservations) { RunDashboardsSequence(0); }

// Found by sched_invariant_test: a failed bind left the pod's card ids on it, and its next placement (another
// node) kept them, so the node it went to held none of its cards for it and the bind named another node's card.
TEST(BadBind, AFailedBindLeavesNoCardsOnThePod) {
  Cluster c;
  c.Queue("default");
  for (const char* name : {"a", "b"}) {
    NodeInfo& n = c.Node(name, 8000, 32 * kGi);
    NodeInfo copy = n;
    copy.devices.kind = DeviceKind::kNvidiaGpu;
    copy.devices.model = "A100";
    copy.devices.cards.push_back({.id = std::string(name) + "-gpu0", .index = 0, .memory = 16000, .max_sharers = 2});
    c.st().UpsertNode(copy);
  }
  JobInfo j = c.Job("vgpu", 1);
  c.AddJob(j);
  TaskInfo t = c.Pod(j, 0, Resource::CpuMem(1000, kGi));
  t.devices.kind = DeviceKind::kNvidiaGpu;
  t.devices.shared = 1;
  t.devices.memory = 4000;
  c.st().UpsertPod(t);
  CycleResult r = c.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  const std::string first = r.binds[0].node;
  c.st().BindFailed(t.uid, "test");
  EXPECT_TRUE(c.st().FindTask(t.uid)->cards.empty());
  NodeInfo gone = *c.st().FindNode(first);
  gone.unschedulable = true;
  c.st().UpsertNode(gone);
  r = c.RunAt(100);
  ASSERT_EQ(r.binds.size(), 1u);
  ASSERT_NE(r.binds[0].node, first);
  ASSERT_EQ(r.binds[0].cards.size(), 1u);
  EXPECT_EQ(r.binds[0].cards[0], r.binds[0].node + "-gpu0");
  PlacementCheck chk = CheckPlacement(c.st(), *c.st().FindTask(t.uid), r.binds[0].node);
  EXPECT_TRUE(chk.ok()) << chk.reason << ": " << chk.detail;
  EXPECT_EQ(c.st().FindNode(r.binds[0].node)->devices.cards[0].sharers, 1);
}

// Found by sched_invariant_test: the stuck-gang timer did not count pending best-effort pods, which gang counts
// as ready, so a best-effort gang that backfill had started half of was released (its pods evicted) in the
// very cycle that bound them.
TEST(BadBind, BackfilledBestEffortGangIsNotReleasedAsStuck) {
  SchedulerConf conf = Cluster::Conf();
  conf.core.gang_timeout_seconds = 5;
  Cluster c(conf);
  c.Queue("default");
  c.Node("only", 8000, 32 * kGi);
  JobInfo j = c.Job("be", 2);
  c.AddJob(j);
  for (int i = 0; i < 2; ++i) {
    TaskInfo t = c.Pod(j, i, Resource());
    t.host_ports.push_back({"", "TCP", 8080});  // one node, one port: only one of them can run
    c.st().UpsertPod(t);
  }
  for (int s = 0; s <= 30; s += 10) {
    CycleResult r = c.RunAt(s);
    EXPECT_TRUE(r.evictions.empty()) << "at " << s << " s: " << r.evictions[0].task_uid << " evicted as a stuck gang";
    for (const auto& b : r.binds) c.st().BindSucceeded(b.task_uid);
  }
  EXPECT_EQ(c.BoundCount(j.key), 1);
}

}  // namespace
}  // namespace tephra::sched
