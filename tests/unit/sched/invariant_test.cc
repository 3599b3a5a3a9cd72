// Randomized invariants of the scheduling core (docs/scheduler.md, "Randomized invariants").
//
// Random clusters (labels, taints, cordons, faults, modelled vGPU cards, leaf/spine labels), random workloads
// (gangs and plain pods, selectors that match some nodes or none, required node affinity, tolerations, host
// ports, hostname anti-affinity, priorities, queues with capabilities, system-default spreading through a
// Service, hard network topology) and random event sequences (jobs and pods added and deleted, nodes added,
// removed, relabelled, tainted, cordoned, faulted and healed, allocatable changes, binds that fail or stay in
// flight, evictions that succeed or fail, pods finishing, informer relists). After every cycle:
//   - every bind decision satisfies its pod's hard constraints on its node (CheckPlacement, guard.h);
//   - a job that got binds has at least minMember pods placed (a gang whole or not at all);
//   - a queue that got binds holds no more than its capability in any dimension those pods ask for;
//   - the incremental state equals a state rebuilt from scratch from the same objects (node, job and queue
//     aggregates, card holds).
// A failure prints the episode's seed and its whole event sequence; episodes are short (kSteps cycles), so
// the sequence is short too.
//
// Replay and long runs: TEPHRA_INVARIANT_SEED=<n> sets the first episode's seed (default: from the clock,
// printed), TEPHRA_INVARIANT_SECONDS=<s> the time budget (default 8), TEPHRA_INVARIANT_EPISODES=<n> a fixed
// number of episodes instead. `TEPHRA_INVARIANT_SEED=123 TEPHRA_INVARIANT_EPISODES=1 sched_invariant_test`
// replays exactly the episode a failure printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tephra/sched/guard.h"
#include "tephra/sched/scheduler.h"

namespace tephra::sched {
namespace {

using core::Status;

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr int kSteps = 40;

SchedulerConf InvariantConf(std::mt19937_64& rng) {
  SchedulerConf c;
  c.actions = {"enqueue", "allocate", "preempt", "reclaim", "backfill"};
  Tier t1, t2;
  for (const char* p : {"priority", "gang", "conformance"}) t1.plugins.push_back(PluginOption::Named(p));
  for (const char* p : {"drf", "predicates", "proportion", "nodeorder", "binpack", "network-topology-aware"})
    t2.plugins.push_back(PluginOption::Named(p));
  c.tiers = {t1, t2};
  c.core.reservation_depth = static_cast<int>(rng() % 3);  // off, EASY, conservative
  c.core.retry_unchanged_every_cycles = static_cast<int>(rng() % 4);
  c.core.gang_timeout_seconds = rng() % 2 ? 300 : 5;
  c.core.queue_position_interval_ms = 0;
  c.core.allocate_slice_us = rng() % 2 ? 0 : 500 + static_cast<int64_t>(rng() % 5000);
  return c;
}

// A clock that moves 50 us on every reading: allocate's time slices (CoreOptions::allocate_slice_us) then
// yield at points that depend only on the work done, so an episode stays replayable from its seed.
class TickingClock final : public core::Clock {
 public:
  TimePoint Now() const override { return TimePoint(std::chrono::microseconds(t_ += 50)); }
  WallTime WallNow() const override { return WallTime(std::chrono::microseconds(t_)); }

 private:
  mutable int64_t t_ = 0;
};

template <typename T>
const T& Pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[rng() % v.size()];
}

class Episode {
 public:
  explicit Episode(uint64_t seed) : seed_(seed), rng_(seed) {
    auto s = Scheduler::Create(InvariantConf(rng_), PluginRegistry::Builtin(), &clock_);
    EXPECT_TRUE(s.ok()) << s.status().message();
    s_ = std::move(s).value();
    gpu_ = *st().resources().Intern("nvidia.com/gpu");
    for (const char* q : {"qa", "qb", "qc"}) {
      QueueInfo qi;
      qi.name = q;
      qi.weight = 1 + static_cast<int>(rng_() % 3);
      if (std::string(q) == "qc") qi.capability = Resource::Unlimited().With(kCpu, 6000).With(kMemory, 16 * kGi);
      queues_[q] = qi;
      st().UpsertQueue(qi);
    }
    const int nodes = 3 + static_cast<int>(rng_() % 6);
    for (int i = 0; i < nodes; ++i) AddNode();
    if (Chance(50)) {
      // HyperNode objects (they replace the tree the leaf/spine labels would give): leaves select nodes by
      // label, the spine lists the leaves by name.
      HyperNodeInfo spine;
      spine.name = "hn-spine";
      spine.tier = 2;
      for (const char* leaf : {"l1", "l2", "l3"}) {
        HyperNodeInfo h;
        h.name = std::string("hn-") + leaf;
        h.tier = 1;
        HyperNodeMember m;
        m.kind = MemberSelectorKind::kLabel;
        m.label_selector.match_labels = {{"volcano.sh/hypernode-leaf", leaf}};
        h.members.push_back(m);
        st().UpsertHyperNode(h);
        HyperNodeMember c;
        c.type = HyperNodeMemberType::kHyperNode;
        c.name_or_pattern = h.name;
        spine.members.push_back(c);
      }
      st().UpsertHyperNode(spine);
      Log("HyperNodes hn-l1..3 (by label), hn-spine");
    }
  }

  ClusterState& st() { return s_->state(); }

  // Runs the episode; false (with a report) on the first broken invariant.
  bool Run(std::string* report) {
    for (step_ = 0; step_ < kSteps; ++step_) {
      const int events = 1 + static_cast<int>(rng_() % 3);
      for (int e = 0; e < events; ++e) RandomEvent();
      now_ += 1 + static_cast<int64_t>(rng_() % 4);
      CycleResult res = s_->RunCycle(WallTime(std::chrono::seconds(2'000'000'000 + now_)));
      Log("cycle: " + std::to_string(res.binds.size()) + " bind(s), " + std::to_string(res.evictions.size()) +
          " eviction(s)");
      std::string broken = Check(res);
      if (!broken.empty()) {
        std::ostringstream o;
        o << "invariant broken at step " << step_ << " of episode seed " << seed_ << ": " << broken
          << "\nreplay: TEPHRA_INVARIANT_SEED=" << seed_ << " TEPHRA_INVARIANT_EPISODES=1\nevents:\n";
        for (const auto& l : log_) o << "  " << l << "\n";
        *report = o.str();
        return false;
      }
      Outcomes(res);
    }
    return true;
  }

 private:
  void Log(std::string s) { log_.push_back("[" + std::to_string(step_) + "] " + std::move(s)); }
  int64_t Rand(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }
  bool Chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }

  // ---------------------------------------------------------------------------------------- the cluster
  void AddNode() {
    NodeInfo n;
    n.name = "n" + std::to_string(next_node_++);
    n.allocatable = Resource::CpuMem(Rand(2, 8) * 1000, Rand(4, 32) * kGi).With(kPods, Rand(3, 110));
    if (Chance(30)) n.allocatable.Set(gpu_, Rand(1, 8));
    n.labels["kubernetes.io/hostname"] = n.name;
    n.labels["pool"] = Pick(rng_, std::vector<std::string>{"a", "b", "c"});
    if (Chance(70)) n.labels["topology.kubernetes.io/zone"] = Pick(rng_, std::vector<std::string>{"z1", "z2"});
    n.labels["volcano.sh/hypernode-leaf"] = Pick(rng_, std::vector<std::string>{"l1", "l2", "l3"});
    n.labels["volcano.sh/hypernode-spine"] = "s1";
    if (Chance(20)) n.taints.push_back({"dedicated", "gpu", Chance(50) ? TaintEffect::kNoSchedule : TaintEffect::kNoExecute});
    if (Chance(10)) n.unschedulable = true;
    if (Chance(25)) {
      n.devices.kind = DeviceKind::kNvidiaGpu;
      n.devices.model = "A100";
      const int cards = static_cast<int>(Rand(1, 4));
      for (int c = 0; c < cards; ++c)
        n.devices.cards.push_back({.id = n.name + "-gpu" + std::to_string(c), .index = c, .memory = 16000,
                                   .max_sharers = 4});
    }
    nodes_[n.name] = n;
    st().UpsertNode(n);
    Log("add node " + Describe(n));
  }
  static std::string Describe(const NodeInfo& n) {
    std::string s = n.name + " {";
    for (const auto& [k, v] : n.labels)
      if (k != "kubernetes.io/hostname" && k != "volcano.sh/hypernode-spine") s += k + "=" + v + " ";
    for (const auto& t : n.taints) s += "taint " + t.key + "=" + t.value + (t.effect == TaintEffect::kNoExecute ? ":NoExecute " : ":NoSchedule ");
    if (n.unschedulable) s += "cordoned ";
    if (!n.ready) s += "not-ready ";
    s += "cpu=" + std::to_string(n.allocatable.Get(kCpu)) + " cards=" + std::to_string(n.devices.cards.size()) + "}";
    return s;
  }
  NodeInfo* RandomNode() {
    if (nodes_.empty()) return nullptr;
    auto it = nodes_.begin();
    std::advance(it, static_cast<long>(rng_() % nodes_.size()));
    return &it->second;
  }
  void UpdateNode(NodeInfo& n, const std::string& what) {
    st().UpsertNode(n);
    Log(what + " " + Describe(n));
  }

  // ---------------------------------------------------------------------------------------- the workload
  struct Template {
    Resource request;
    Labels selector;
    std::vector<NodeSelectorTerm> affinity;
    std::vector<Toleration> tolerations;
    std::vector<HostPort> ports;
    bool anti = false;
    bool anti_all = false;  // anti-affinity to every job's pods that share the label, not only its own
    bool vgpu = false;
  };
  void AddJob() {
    JobInfo j;
    j.name = "j" + std::to_string(next_job_++);
    j.ns = "ns";
    j.key = "ns/" + j.name;
    j.uid = "uid-" + j.name;
    j.queue = Pick(rng_, std::vector<std::string>{"qa", "qb", "qc"});
    const int replicas = static_cast<int>(Rand(1, 4));
    j.min_member = static_cast<int32_t>(Rand(1, replicas));
    j.priority = static_cast<int32_t>(Pick(rng_, std::vector<int>{0, 10, 100}));
    j.creation_time = WallTime(std::chrono::seconds(1000 + next_job_));
    j.running_estimate = std::chrono::seconds(Rand(10, 600));
    if (Chance(10)) {
      j.network_topology.mode = TopologyMode::kHard;
      j.network_topology.highest_tier_allowed = 1;
    }
    Template tp;
    tp.request = Resource::CpuMem(Rand(1, 8) * 250, Rand(1, 8) * kGi / 2);
    if (Chance(15)) tp.request.Set(gpu_, Rand(1, 2));
    std::string shape;
    if (Chance(8)) {
      tp.request = Resource();  // best-effort: backfill's
      shape += " best-effort";
    }
    if (Chance(35)) {
      tp.selector["pool"] = Pick(rng_, std::vector<std::string>{"a", "b", "none"});
      shape += " selector pool=" + tp.selector["pool"];
    }
    if (Chance(20)) {
      NodeSelectorTerm term;
      term.match_expressions.push_back({"topology.kubernetes.io/zone", Chance(50) ? SelectorOp::kIn : SelectorOp::kNotIn, {"z1"}});
      tp.affinity.push_back(term);
      shape += std::string(" affinity zone ") + (term.match_expressions[0].op == SelectorOp::kIn ? "In" : "NotIn") + " z1";
    }
    if (Chance(30)) {
      tp.tolerations.push_back({"dedicated", false, "gpu", std::nullopt});
      shape += " tolerates dedicated";
    }
    if (Chance(10)) {
      tp.tolerations.push_back({"node.kubernetes.io/unschedulable", true, "", TaintEffect::kNoSchedule});
      shape += " tolerates cordon";
    }
    if (Chance(15)) {
      tp.ports.push_back({"", "TCP", 8080});
      shape += " hostPort 8080";
    }
    if (Chance(10)) {
      tp.anti = true;
      tp.anti_all = Chance(50);
      shape += tp.anti_all ? " hostname anti-affinity to app=shared" : " hostname anti-affinity";
    }
    if (Chance(15)) {
      tp.vgpu = true;
      shape += " vgpu share";
    }
    jobs_[j.key] = j;
    templates_[j.key] = tp;
    st().UpsertJob(j);
    if (Chance(40)) {
      st().UpsertService("ns", "svc-" + j.name, Labels{{"job", j.name}});
      shape += " service";
    }
    Log("add job " + j.key + " queue " + j.queue + " min " + std::to_string(j.min_member) + "/" +
        std::to_string(replicas) + " prio " + std::to_string(j.priority) + " cpu " +
        std::to_string(tp.request.Get(kCpu)) + (j.network_topology.mode == TopologyMode::kHard ? " hard-topology" : "") + shape);
    for (int i = 0; i < replicas; ++i) AddPod(j.key);
  }
  void AddPod(const std::string& job) {
    const Template& tp = templates_[job];
    const JobInfo& j = jobs_[job];
    TaskInfo t;
    t.uid = j.name + "-p" + std::to_string(next_pod_++);
    t.ns = j.ns;
    t.name = t.uid;
    t.job = job;
    t.role = "worker";
    t.request = tp.request;
    t.priority = j.priority;
    t.labels["job"] = j.name;
    t.node_selector = tp.selector;
    t.required_affinity = tp.affinity;
    t.tolerations = tp.tolerations;
    t.host_ports = tp.ports;
    t.labels["app"] = tp.anti_all ? "shared" : j.name;
    if (tp.anti) {
      PodAffinityTerm term;
      term.selector.match_labels = {{"app", tp.anti_all ? "shared" : j.name}};
      term.topology_key = "kubernetes.io/hostname";
      term.namespaces = {"ns"};
      t.pod_anti_affinity.push_back(term);
    }
    if (tp.vgpu) {
      t.devices.kind = DeviceKind::kNvidiaGpu;
      t.devices.shared = 1;
      t.devices.memory = 4000;
    }
    t.creation_index = static_cast<uint64_t>(next_pod_);
    pods_[t.uid] = t;
    st().UpsertPod(t);
  }
  void RemovePodEverywhere(const std::string& uid) {
    pods_.erase(uid);
    st().RemovePod(uid);
  }

  // ---------------------------------------------------------------------------------------- the events
  void RandomEvent() {
    const int r = static_cast<int>(rng_() % 100);
    if (r < 22) return AddJob();
    if (r < 27) {  // a job deleted with its pods
      if (jobs_.empty()) return;
      auto it = jobs_.begin();
      std::advance(it, static_cast<long>(rng_() % jobs_.size()));
      const std::string key = it->first;
      std::vector<std::string> uids;
      for (const auto& [uid, p] : pods_)
        if (p.job == key) uids.push_back(uid);
      for (const auto& u : uids) RemovePodEverywhere(u);
      st().RemoveJob(key);
      st().RemoveService("ns", "svc-" + it->second.name);
      templates_.erase(key);
      jobs_.erase(it);
      Log("delete job " + key);
      return;
    }
    if (r < 35) {  // a running pod finishes or is deleted; its job's controller makes a new one
      std::vector<std::string> running;
      for (const auto& [uid, p] : pods_)
        if (p.status == TaskStatus::kRunning || p.status == TaskStatus::kBound) running.push_back(uid);
      if (running.empty()) return;
      const std::string uid = Pick(rng_, running);
      TaskInfo& p = pods_[uid];
      const std::string job = p.job;
      if (Chance(50)) {
        p.status = TaskStatus::kSucceeded;
        st().UpsertPod(p);
        Log("pod " + uid + " succeeded on " + p.node);
      } else {
        Log("pod " + uid + " deleted from " + p.node + "; replaced");
        RemovePodEverywhere(uid);
        if (jobs_.count(job)) AddPod(job);
      }
      return;
    }
    NodeInfo* n = RandomNode();
    if (r < 42) {
      if (!n) return;
      n->labels["pool"] = Pick(rng_, std::vector<std::string>{"a", "b", "c"});
      return UpdateNode(*n, "relabel");
    }
    if (r < 48) {
      if (!n) return;
      if (n->taints.empty()) n->taints.push_back({"dedicated", "gpu", Chance(50) ? TaintEffect::kNoSchedule : TaintEffect::kNoExecute});
      else n->taints.clear();
      return UpdateNode(*n, "taints");
    }
    if (r < 58) {  // a fault (the converter makes a faulted or avoided node unschedulable) and its heal
      if (!n) return;
      n->unschedulable = !n->unschedulable;
      return UpdateNode(*n, n->unschedulable ? "fault/cordon" : "heal/uncordon");
    }
    if (r < 61) {
      if (!n) return;
      n->ready = !n->ready;
      return UpdateNode(*n, "readiness");
    }
    if (r < 65) {
      if (!n) return;
      n->allocatable.Set(kCpu, Rand(2, 8) * 1000);
      return UpdateNode(*n, "allocatable");
    }
    if (r < 68) {
      if (!n || n->devices.cards.empty()) return;
      Card& c = n->devices.cards[rng_() % n->devices.cards.size()];
      c.health = c.health == CardHealth::kHealthy ? CardHealth::kUnhealthy : CardHealth::kHealthy;
      return UpdateNode(*n, "card health " + c.id);
    }
    if (r < 71) {
      if (!n || nodes_.size() <= 2) return;
      const std::string name = n->name;
      Log("remove node " + name);
      nodes_.erase(name);
      st().RemoveNode(name);
      // The pods on it are gone with it (the pod GC); their jobs get replacements.
      std::vector<std::string> gone;
      for (const auto& [uid, p] : pods_)
        if (p.node == name) gone.push_back(uid);
      for (const auto& u : gone) {
        const std::string job = pods_[u].job;
        RemovePodEverywhere(u);
        if (jobs_.count(job)) AddPod(job);
      }
      if (Chance(50)) {
        // The same name comes back (a node re-registering), with new labels and maybe another slot.
        AddNode();
        auto it = nodes_.find("n" + std::to_string(next_node_ - 1));
        NodeInfo n = it->second;
        nodes_.erase(it);
        st().RemoveNode(n.name);
        n.name = name;
        n.labels["kubernetes.io/hostname"] = name;
        nodes_[name] = n;
        st().UpsertNode(n);
        Log("node " + name + " back as " + Describe(n));
      }
      return;
    }
    if (r < 72) {
      Status s = s_->UpdateConf(InvariantConf(rng_));
      Log("configuration reload: " + (s.ok() ? std::string("ok") : s.ToString()));
      return;
    }
    if (r < 75) return AddNode();
    if (r < 80) {  // an informer relist: every object again, as the API shows it
      for (const auto& [name, node] : nodes_) st().UpsertNode(node);
      for (const auto& [key, j] : jobs_) st().UpsertJob(j);
      for (const auto& [uid, p] : pods_) st().UpsertPod(p);
      for (const auto& [name, q] : queues_) st().UpsertQueue(q);
      Log("relist");
      return;
    }
    if (r < 84) {
      QueueInfo& q = queues_["qc"];
      q.capability.Set(kCpu, Rand(2, 12) * 1000);
      st().UpsertQueue(q);
      Log("queue qc capability cpu " + std::to_string(q.capability.Get(kCpu)));
      return;
    }
    // Otherwise a quiet step: the cycle runs on what it has (periodic retries, reservations coming due).
  }

  // What the binder and the evictor report back, and what the informer then shows.
  void Outcomes(const CycleResult& res) {
    std::set<std::string> rolled;
    for (const auto& b : in_flight_) Resolve(b, &rolled);
    in_flight_.clear();
    for (const auto& b : res.binds) {
      if (rolled.count(b.task_uid)) continue;
      if (Chance(8)) {
        in_flight_.push_back(b);
        Log("bind " + b.task_uid + " -> " + b.node + " in flight");
        continue;
      }
      Resolve(b, &rolled);
    }
    for (const auto& e : res.evictions) {
      if (!pods_.count(e.task_uid)) continue;
      if (Chance(10)) {
        st().EvictFailed(e.task_uid);
        Log("evict " + e.task_uid + " failed");
        continue;
      }
      const std::string job = pods_[e.task_uid].job;
      Log("evicted " + e.task_uid + " from " + e.node + " (" + e.reason + (e.preemptor.empty() ? "" : " for " + e.preemptor) + ")");
      RemovePodEverywhere(e.task_uid);
      if (jobs_.count(job) && Chance(70)) AddPod(job);
    }
  }
  void Resolve(const BindDecision& b, std::set<std::string>* rolled) {
    if (rolled->count(b.task_uid) || !pods_.count(b.task_uid)) return;
    const TaskInfo* t = st().FindTask(b.task_uid);
    if (!t || t->status != TaskStatus::kBinding || t->node != b.node) return;
    if (Chance(7)) {
      for (const auto& u : st().BindFailed(b.task_uid, "injected")) rolled->insert(u);
      Log("bind " + b.task_uid + " -> " + b.node + " failed");
      return;
    }
    st().BindSucceeded(b.task_uid);
    TaskInfo& p = pods_[b.task_uid];
    p.node = b.node;
    p.status = TaskStatus::kRunning;
    p.cards = b.cards;
    st().UpsertPod(p);
    Log("bound " + b.task_uid + " -> " + b.node);
  }

  // ---------------------------------------------------------------------------------------- the invariants
  std::string Check(const CycleResult& res) {
    std::map<std::string, int> jobs_bound;
    std::map<std::string, Resource> queue_asked;
    for (const auto& b : res.binds) {
      const TaskInfo* t = st().FindTask(b.task_uid);
      if (!t) return "bind for unknown task " + b.task_uid;
      if (t->status != TaskStatus::kBinding || t->node != b.node)
        return "bind " + b.task_uid + " -> " + b.node + " but the state has it " + TaskStatusName(t->status) + " on '" + t->node + "'";
      PlacementCheck c = CheckPlacement(st(), *t, b.node);
      if (!c.ok()) return "bind " + b.task_uid + " -> " + b.node + " breaks " + c.reason + ": " + c.detail;
      ++jobs_bound[t->job];
      if (const JobInfo* j = st().FindJob(t->job)) queue_asked[j->queue] += t->request;
    }
    // Preempt and reclaim take victims one by one, as Volcano does, so the same cycle may complete a gang and
    // then take one of its members for a more important job: that member counts as placed for the commit.
    std::map<std::string, int> evicted_for_others;
    for (const auto& e : res.evictions)
      if (e.reason != "GangTimeout" && !e.job.empty()) ++evicted_for_others[e.job];
    for (const auto& [key, n] : jobs_bound) {
      const JobInfo* j = st().FindJob(key);
      if (!j) continue;
      int placed = evicted_for_others.count(key) ? evicted_for_others[key] : 0;
      st().ForEachTaskOfJob(key, [&](const TaskInfo& t) {
        // Gang's "ready" counts pending best-effort pods too (Volcano's rule): backfill places them one by one.
        placed += t.status == TaskStatus::kBinding || t.status == TaskStatus::kBound || t.status == TaskStatus::kRunning ||
                  t.status == TaskStatus::kSucceeded || (t.status == TaskStatus::kPending && t.best_effort);
      });
      if (placed < j->min_member)
        return "job " + key + " got " + std::to_string(n) + " bind(s) but has " + std::to_string(placed) + "/" +
               std::to_string(j->min_member) + " placed: a broken gang";
    }
    for (const auto& [queue_name, asked] : queue_asked) {
      const std::string& name = queue_name;  // clang 14 cannot capture a structured binding in a lambda
      const QueueInfo* q = st().FindQueue(name);
      if (!q) continue;
      Resource held;
      st().ForEachJob([&](const JobInfo& j) {
        if (j.queue != name) return;
        st().ForEachTaskOfJob(j.key, [&](const TaskInfo& t) {
          if (IsAllocatedStatus(t.status)) held += t.request;
        });
      });
      for (int d = 0; d < kMaxResources; ++d)
        if (d != kPods && asked.Get(d) > 0 && held.Get(d) > q->capability.Get(d))
          return "queue " + name + " holds " + std::to_string(held.Get(d)) + " of " + st().resources().Name(d) +
                 " against a capability of " + std::to_string(q->capability.Get(d)) + " after this cycle's binds";
    }
    return CompareWithRebuild();
  }

  // A ClusterState rebuilt from the same objects (the world's nodes, jobs and queues; the scheduler's tasks
  // with their current status, node and cards) must hold the same aggregates as the incremental one.
  std::string CompareWithRebuild() {
    ClusterState fresh(st().options());
    for (int i = 0; i < st().resources().size(); ++i) fresh.resources().Intern(st().resources().Name(i));
    for (const auto& [name, n] : nodes_) fresh.UpsertNode(n);
    for (const auto& [name, q] : queues_) fresh.UpsertQueue(q);
    for (const auto& [key, j] : jobs_) fresh.UpsertJob(j);
    st().ForEachTask([&](const TaskInfo& t) {
      TaskInfo copy = t;
      copy.shape = 0;
      copy.placed_pos = UINT32_MAX;
      fresh.UpsertPod(copy);
    });
    std::string out;
    auto differs = [&](const std::string& what, const Resource& a, const Resource& b) {
      if (out.empty() && !(a == b)) out = what + " differs: incremental " + st().resources().Format(a) + ", rebuilt " + st().resources().Format(b);
    };
    for (const auto& [name, want] : nodes_) {
      const NodeInfo* a = st().FindNode(name);
      const NodeInfo* b = fresh.FindNode(name);
      if (!a || !b) return "node " + name + " missing from the state";
      if (a->labels != want.labels || a->taints != want.taints || a->unschedulable != want.unschedulable ||
          a->ready != want.ready || !(a->allocatable == want.allocatable))
        return "node " + name + " spec differs from the API object";
      differs("node " + name + " used", a->used, b->used);
      differs("node " + name + " releasing", a->releasing, b->releasing);
      differs("node " + name + " pipelined", a->pipelined, b->pipelined);
      if (!out.empty()) return out;
      if (a->task_count != b->task_count || a->score_cpu != b->score_cpu || a->score_memory != b->score_memory ||
          a->host_port_tasks != b->host_port_tasks)
        return "node " + name + " counters differ: tasks " + std::to_string(a->task_count) + "/" + std::to_string(b->task_count) +
               ", host-port tasks " + std::to_string(a->host_port_tasks) + "/" + std::to_string(b->host_port_tasks);
      if (a->devices.cards.size() != b->devices.cards.size()) return "node " + name + " card count differs";
      for (size_t i = 0; i < a->devices.cards.size(); ++i) {
        const Card& x = a->devices.cards[i];
        const Card& y = b->devices.cards[i];
        if (x.owners != y.owners || x.sharers != y.sharers || x.used_memory != y.used_memory || x.used_cores != y.used_cores)
          return "node " + name + " card " + x.id + " holds differ: sharers " + std::to_string(x.sharers) + "/" +
                 std::to_string(y.sharers) + ", memory " + std::to_string(x.used_memory) + "/" + std::to_string(y.used_memory);
      }
    }
    for (const auto& [key, want] : jobs_) {
      const JobInfo* a = st().FindJob(key);
      const JobInfo* b = fresh.FindJob(key);
      if (!a || !b) return "job " + key + " missing";
      if (a->status_count != b->status_count) return "job " + key + " status counts differ";
      differs("job " + key + " allocated", a->allocated, b->allocated);
      differs("job " + key + " pending request", a->pending_request, b->pending_request);
      // A role whose count went back to 0 may keep its key in the incremental map: compare the counts.
      auto nonzero = [](const std::map<std::string, int>& m) {
        std::map<std::string, int> out;
        for (const auto& [k, v] : m)
          if (v != 0) out[k] = v;
        return out;
      };
      if (nonzero(a->role_ready) != nonzero(b->role_ready) || nonzero(a->role_valid) != nonzero(b->role_valid))
        return "job " + key + " role counts differ";
      if (!out.empty()) return out;
    }
    for (const auto& [name, want] : queues_) {
      const QueueInfo* a = st().FindQueue(name);
      const QueueInfo* b = fresh.FindQueue(name);
      if (!a || !b) return "queue " + name + " missing";
      differs("queue " + name + " allocated", a->allocated, b->allocated);
      differs("queue " + name + " request", a->request, b->request);
      if (!out.empty()) return out;
    }
    return {};
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  TickingClock clock_;
  std::unique_ptr<Scheduler> s_;
  int gpu_ = 0;
  int step_ = 0;
  int64_t now_ = 0;
  int next_node_ = 0, next_job_ = 0, next_pod_ = 0;
  std::map<std::string, NodeInfo> nodes_;
  std::map<std::string, QueueInfo> queues_;
  std::map<std::string, JobInfo> jobs_;
  std::map<std::string, Template> templates_;
  std::map<std::string, TaskInfo> pods_;  // as the API shows them
  std::vector<BindDecision> in_flight_;
  std::vector<std::string> log_;
};

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(Invariants, RandomClustersWorkloadsAndEventsNeverBreakAHardConstraint) {
  const uint64_t seed = EnvU64("TEPHRA_INVARIANT_SEED",
                               static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ULL);
  const uint64_t seconds = EnvU64("TEPHRA_INVARIANT_SECONDS", 8);
  const uint64_t episodes = EnvU64("TEPHRA_INVARIANT_EPISODES", 0);
  std::cout << "invariants: TEPHRA_INVARIANT_SEED=" << seed << " (episode i uses seed + i), budget "
            << (episodes ? std::to_string(episodes) + " episode(s)" : std::to_string(seconds) + " s") << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  uint64_t ran = 0;
  for (uint64_t i = 0; episodes ? i < episodes : std::chrono::steady_clock::now() < deadline; ++i) {
    Episode e(seed + i);
    std::string report;
    if (!e.Run(&report)) {
      ADD_FAILURE() << report;
      return;
    }
    ++ran;
  }
  std::cout << "invariants: " << ran << " episode(s) of " << kSteps << " cycles held (" << ran * kSteps << " steps)" << std::endl;
}

}  // namespace
}  // namespace tephra::sched
