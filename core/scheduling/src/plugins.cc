// Built-in plugins (docs/volcano-behaviour.md, "Plugins"). Each answers only the hooks it declares in Hooks().
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "tephra/sched/framework.h"

namespace tephra::sched {

namespace {

int Cmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

// Share of `used` in `total` on the most-used dimension (pods excluded: every task requests one).
double DominantShare(const Resource& used, const Resource& total) {
  double s = 0;
  for (int i = 0; i < kMaxResources; ++i) {
    if (i == kPods || total.Get(i) <= 0 || total.Get(i) >= kUnlimited) continue;
    s = std::max(s, static_cast<double>(used.Get(i)) / static_cast<double>(total.Get(i)));
  }
  return s;
}

// ------------------------------------------------------------------------------------------------ gang
class GangPlugin final : public Plugin {
 public:
  std::string Name() const override { return "gang"; }
  uint32_t Hooks() const override {
    return kHookJobValid | kHookJobReady | kHookJobPipelined | kHookJobOrder | kHookPreemptable | kHookReclaimable;
  }

  // A victim job either keeps minMember ready tasks (Volcano: only its surplus may go) or loses every
  // task it has on nodes (the whole gang goes, which the job controller handles like any gang failure);
  // never a gang left running below its minimum. The whole-job case needs all of the job's placed tasks
  // among the candidates, so the actions pass candidates from every node at once.
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Victims(ssn, c);
  }
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Victims(ssn, c);
  }
  static std::vector<const TaskInfo*> Victims(const Session& ssn, const std::vector<const TaskInfo*>& c) {
    // One hash per candidate and one job lookup per job (candidate lists reach tens of thousands).
    struct PerJob {
      const JobInfo* job = nullptr;
      int candidates = 0;
      int left = 0;  // ready tasks the job would keep
    };
    std::unordered_map<std::string_view, PerJob> jobs;
    jobs.reserve(c.size() / 8 + 1);
    for (const TaskInfo* t : c) {
      auto [it, fresh] = jobs.try_emplace(t->job);
      if (fresh && !t->job.empty()) {
        it->second.job = ssn.state().FindJob(t->job);
        if (it->second.job) it->second.left = it->second.job->ReadyCount();
      }
      ++it->second.candidates;
    }
    std::vector<const TaskInfo*> out;
    out.reserve(c.size());
    for (const TaskInfo* t : c) {
      PerJob& p = jobs.find(t->job)->second;
      const JobInfo* j = p.job;
      if (!j || j->min_member <= 0) {
        out.push_back(t);
        continue;
      }
      int placed = j->Count(TaskStatus::kAllocated) + j->Count(TaskStatus::kBinding) + j->Count(TaskStatus::kBound) +
                   j->Count(TaskStatus::kRunning);
      if (p.candidates >= placed) {  // every placed task of the job is a candidate: whole job
        out.push_back(t);
        continue;
      }
      if (p.left > j->min_member) {
        --p.left;
        out.push_back(t);
      }
    }
    return out;
  }

  ValidateResult JobValid(const Session&, const JobInfo& j) const override {
    int valid = j.ReadyCount() + j.Count(TaskStatus::kPipelined) + j.Count(TaskStatus::kPending);
    if (valid < j.min_member) {
      return {false, "NotEnoughTasks",
              "Not enough valid tasks for gang-scheduling, valid: " + std::to_string(valid) +
                  ", min: " + std::to_string(j.min_member)};
    }
    // Per-task minimums only bind when minMember covers them (Volcano's CheckTaskValid: minMember >=
    // sum(minTaskMember)), as in JobReady. Without this, a job whose launcher `dependsOn` its workers
    // (minAvailable = workers only) could never start: the launcher's pod does not exist yet.
    int64_t sum = 0;
    for (const auto& [role, min] : j.min_task_member) sum += min;
    if (j.min_member < sum) return {};
    for (const auto& [role, min] : j.min_task_member) {
      auto it = j.role_valid.find(role);
      int have = it == j.role_valid.end() ? 0 : it->second;
      if (have < min) {
        return {false, "NotEnoughPodsOfTask",
                "Not enough valid pods of task " + role + ", valid: " + std::to_string(have) +
                    ", min: " + std::to_string(min)};
      }
    }
    return {};
  }

  bool JobReady(const Session&, const JobInfo& j) const override {
    // Pending best-effort tasks count: backfill places them without needing resources.
    if (j.ReadyCount() + j.pending_best_effort < j.min_member) return false;
    // Per-task minimums only bind when minMember covers them (Volcano: minMember >= sum(minTaskMember)).
    int64_t sum = 0;
    for (const auto& [role, min] : j.min_task_member) sum += min;
    if (j.min_member < sum) return true;
    for (const auto& [role, min] : j.min_task_member) {
      auto it = j.role_ready.find(role);
      if ((it == j.role_ready.end() ? 0 : it->second) < min) return false;
    }
    return true;
  }

  Vote JobPipelined(const Session&, const JobInfo& j) const override {
    return j.ReadyCount() + j.Count(TaskStatus::kPipelined) >= j.min_member ? Vote::kPermit : Vote::kReject;
  }

  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    bool ra = a.ReadyCount() >= a.min_member, rb = b.ReadyCount() >= b.min_member;
    if (ra == rb) return 0;
    return ra ? 1 : -1;  // jobs that are not ready yet go first
  }
};

// -------------------------------------------------------------------------------------------- priority
class PriorityPlugin final : public Plugin {
 public:
  std::string Name() const override { return "priority"; }
  uint32_t Hooks() const override { return kHookJobOrder | kHookTaskOrder | kHookPreemptable; }
  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    return a.priority == b.priority ? 0 : (a.priority > b.priority ? -1 : 1);
  }
  // Only strictly lower priority: jobs compare by their PodGroup priority, tasks of the same job by pod
  // priority (Volcano priority.go).
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo& preemptor,
                                                          const std::vector<const TaskInfo*>& c) const override {
    const JobInfo* pj = ssn.state().FindJob(preemptor.job);
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      if (t->job == preemptor.job) {
        if (t->priority < preemptor.priority) out.push_back(t);
        continue;
      }
      const JobInfo* vj = ssn.state().FindJob(t->job);
      int32_t vp = vj ? vj->priority : t->priority;
      if (pj && vp < pj->priority) out.push_back(t);
    }
    return out;
  }
  int TaskOrder(const Session&, const TaskInfo& a, const TaskInfo& b) const override {
    return a.priority == b.priority ? 0 : (a.priority > b.priority ? -1 : 1);
  }
};

// ----------------------------------------------------------------------------------------- conformance
// Never evicts system-critical pods: kube-system, or priorityClassName system-cluster-critical /
// system-node-critical.
class ConformancePlugin final : public Plugin {
 public:
  std::string Name() const override { return "conformance"; }
  uint32_t Hooks() const override { return kHookPreemptable | kHookReclaimable; }
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session&, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Filter(c);
  }
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session&, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    return Filter(c);
  }

 private:
  static std::vector<const TaskInfo*> Filter(const std::vector<const TaskInfo*>& c) {
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      if (t->ns == "kube-system" || t->priority_class_name == "system-cluster-critical" ||
          t->priority_class_name == "system-node-critical")
        continue;
      out.push_back(t);
    }
    return out;
  }
};

// ------------------------------------------------------------------------------------------------- drf
class DrfPlugin final : public Plugin {
 public:
  std::string Name() const override { return "drf"; }
  uint32_t Hooks() const override { return kHookJobOrder | kHookPreemptable; }
  void OnSessionOpen(Session& ssn) override { total_ = ssn.total_allocatable(); }
  int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const override {
    return Cmp(DominantShare(a.allocated, total_), DominantShare(b.allocated, total_));
  }
  // A victim may go while its job's dominant share, after losing it, stays at or above the preemptor
  // job's share after gaining the preemptor (Volcano drf.go, shareDelta 1e-6).
  std::optional<std::vector<const TaskInfo*>> Preemptable(const Session& ssn, const TaskInfo& preemptor,
                                                          const std::vector<const TaskInfo*>& c) const override {
    const JobInfo* pj = ssn.state().FindJob(preemptor.job);
    double ls = DominantShare((pj ? pj->allocated : Resource()) + preemptor.request, total_);
    std::map<std::string, Resource> alloc;
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      auto it = alloc.find(t->job);
      if (it == alloc.end()) {
        const JobInfo* vj = ssn.state().FindJob(t->job);
        it = alloc.emplace(t->job, vj ? vj->allocated : t->request).first;
      }
      it->second -= t->request;
      double rs = DominantShare(it->second, total_);
      if (ls < rs || std::fabs(ls - rs) <= 1e-6) out.push_back(t);
    }
    return out;
  }

 private:
  Resource total_;
};

// ------------------------------------------------------------------------------------------ proportion
// Divides the cluster among queues by weight, iteratively (Volcano proportion.go): every round hands the
// remaining capacity to unmet queues in proportion to weight, clamps each queue's deserved to
// min(capability, request) and raises it to its guarantee; a queue is met once its request is covered or
// its capability reached. Stops when nothing is left or a round changes nothing.
class ProportionPlugin final : public Plugin {
 public:
  std::string Name() const override { return "proportion"; }
  uint32_t Hooks() const override {
    return kHookQueueOrder | kHookOverused | kHookAllocatable | kHookJobEnqueueable | kHookReclaimable;
  }

  // Reclaim takes only a queue's surplus: a victim may go when its (reclaimable) queue keeps at least its
  // deserved share on every dimension the victim uses. Volcano checks "still above deserved" before
  // subtracting, which lets the last eviction push the victim queue below deserved and reclaim back;
  // checking after subtracting cannot oscillate.
  std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session& ssn, const TaskInfo&,
                                                          const std::vector<const TaskInfo*>& c) const override {
    std::map<std::string, Resource> alloc;
    std::vector<const TaskInfo*> out;
    for (const TaskInfo* t : c) {
      const JobInfo* vj = ssn.state().FindJob(t->job);
      if (!vj) continue;
      const QueueInfo* vq = ssn.state().FindQueue(vj->queue);
      auto at = attrs_.find(vj->queue);
      if (!vq || !vq->reclaimable || at == attrs_.end()) continue;
      auto it = alloc.try_emplace(vj->queue, vq->allocated).first;
      Resource after = it->second - t->request;
      bool keeps = true;
      for (int i = 0; i < kMaxResources; ++i) {
        if (i == kPods || t->request.Get(i) <= 0) continue;
        if (after.Get(i) < at->second.deserved.Get(i)) { keeps = false; break; }
      }
      if (!keeps) continue;
      it->second = after;
      out.push_back(t);
    }
    return out;
  }

  void OnSessionOpen(Session& ssn) override {
    const ClusterState& st = ssn.state();
    total_ = ssn.total_allocatable();
    attrs_.clear();
    Resource guarantees;
    st.ForEachQueue([&](const QueueInfo& q) {
      Attr& a = attrs_[q.name];
      a.weight = std::max(1, q.weight);
      a.capability = q.capability;
      a.guarantee = q.guarantee;
      a.request = q.request;
      guarantees += q.guarantee;
    });
    st.ForEachJob([&](const JobInfo& j) {
      if (j.phase != PodGroupPhase::kInqueue || !j.min_resources) return;
      auto it = attrs_.find(j.queue);
      if (it != attrs_.end()) it->second.inqueue += (*j.min_resources - j.allocated).ClampZero();
    });
    for (auto& [name, a] : attrs_) {
      // realCapability: capability, bounded by what the others' guarantees leave.
      a.real_capability = a.capability.Min((total_ - guarantees + a.guarantee).ClampZero());
    }
    Resource remaining = total_;
    std::set<std::string> met;
    for (int round = 0; round < 64; ++round) {
      int64_t total_weight = 0;
      for (const auto& [name, a] : attrs_)
        if (!met.count(name)) total_weight += a.weight;
      if (total_weight == 0) break;
      Resource before = remaining;
      Resource increased, decreased;
      for (auto& [name, a] : attrs_) {
        if (met.count(name)) continue;
        Resource old = a.deserved;
        for (int i = 0; i < kMaxResources; ++i) {
          double add = static_cast<double>(remaining.Get(i)) * a.weight / static_cast<double>(total_weight);
          a.deserved.Set(i, a.deserved.Get(i) + static_cast<int64_t>(std::floor(add)));
        }
        a.deserved = a.deserved.Min(a.real_capability).Min(a.request).Max(a.guarantee.Min(a.request));
        if (a.request.LessEqual(a.deserved) || a.real_capability.LessEqual(a.deserved)) met.insert(name);
        for (int i = 0; i < kMaxResources; ++i) {
          int64_t d = a.deserved.Get(i) - old.Get(i);
          if (d > 0) increased.Set(i, increased.Get(i) + d);
          else decreased.Set(i, decreased.Get(i) - d);
        }
      }
      remaining = (remaining - increased + decreased).ClampZero();
      if (remaining.IsZero() || remaining == before) break;
    }
    auto& out = ssn.queue_deserved();
    out.clear();
    for (const auto& [name, a] : attrs_) out[name] = a.deserved;
  }

  int QueueOrder(const Session& ssn, const QueueInfo& a, const QueueInfo& b) const override {
    return Cmp(Share(a), Share(b));
  }
  bool Overused(const Session&, const QueueInfo& q) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return false;
    return it->second.deserved.LessEqual(q.allocated);
  }
  bool Allocatable(const Session&, const QueueInfo& q, const TaskInfo& t) const override {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return true;
    return (q.allocated + t.request).FitsIn(it->second.deserved);
  }
  Vote JobEnqueueable(const Session& ssn, const JobInfo& j) const override {
    if (!j.min_resources) return Vote::kPermit;
    auto it = attrs_.find(j.queue);
    if (it == attrs_.end()) return Vote::kReject;
    const QueueInfo* q = ssn.state().FindQueue(j.queue);
    Resource need = *j.min_resources + (q ? q->allocated : Resource()) + it->second.inqueue;
    return need.FitsIn(it->second.real_capability) ? Vote::kPermit : Vote::kReject;
  }
  void OnJobEnqueued(Session&, const JobInfo& j) override {
    auto it = attrs_.find(j.queue);
    if (it != attrs_.end() && j.min_resources) it->second.inqueue += (*j.min_resources - j.allocated).ClampZero();
  }

 private:
  struct Attr {
    int32_t weight = 1;
    Resource capability, real_capability, guarantee, request, deserved, inqueue;
  };
  double Share(const QueueInfo& q) const {
    auto it = attrs_.find(q.name);
    if (it == attrs_.end()) return 0;
    double s = 0;
    for (int i = 0; i < kMaxResources; ++i) {
      if (i == kPods) continue;
      int64_t d = it->second.deserved.Get(i);
      if (d <= 0) continue;
      s = std::max(s, static_cast<double>(q.allocated.Get(i)) / static_cast<double>(d));
    }
    return s;
  }
  Resource total_;
  std::map<std::string, Attr> attrs_;
};

// ------------------------------------------------------------------------------------------ overcommit
class OvercommitPlugin final : public Plugin {
 public:
  explicit OvercommitPlugin(const PluginOption& o) : factor_(ArgDouble(o.arguments, "overcommit-factor", 1.2)) {}
  std::string Name() const override { return "overcommit"; }
  uint32_t Hooks() const override { return kHookJobEnqueueable; }
  void OnSessionOpen(Session& ssn) override {
    const ClusterState& st = ssn.state();
    Resource total = ssn.total_allocatable(), used;
    for (int idx : ssn.node_order()) used += ssn.node(idx).used;
    budget_ = Resource();
    for (int i = 0; i < kMaxResources; ++i)
      budget_.Set(i, static_cast<int64_t>(static_cast<double>(total.Get(i)) * factor_) - used.Get(i));
    inqueue_ = Resource();
    st.ForEachJob([&](const JobInfo& j) {
      if (j.phase == PodGroupPhase::kInqueue && j.min_resources) inqueue_ += (*j.min_resources - j.allocated).ClampZero();
    });
  }
  Vote JobEnqueueable(const Session&, const JobInfo& j) const override {
    if (!j.min_resources) return Vote::kPermit;
    return (*j.min_resources + inqueue_).FitsIn(budget_) ? Vote::kPermit : Vote::kReject;
  }
  void OnJobEnqueued(Session&, const JobInfo& j) override {
    if (j.min_resources) inqueue_ += (*j.min_resources - j.allocated).ClampZero();
  }

 private:
  double factor_;
  Resource budget_, inqueue_;
};

// ------------------------------------------------------------------------------------------ predicates
bool TermMatches(const NodeSelectorTerm& term, const NodeInfo& n) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;  // k8s: empty term matches nothing
  for (const auto& r : term.match_expressions)
    if (!MatchesRequirement(r, n.labels)) return false;
  for (const auto& r : term.match_fields) {
    if (r.key != "metadata.name") return false;
    Labels fields{{"metadata.name", n.name}};
    if (!MatchesRequirement(r, fields)) return false;
  }
  return true;
}

class PredicatesPlugin final : public Plugin {
 public:
  explicit PredicatesPlugin(const PluginOption& o)
      : node_affinity_(ArgBool(o.arguments, "predicate.NodeAffinityEnable", true)),
        taints_(ArgBool(o.arguments, "predicate.TaintTolerationEnable", true)),
        pod_affinity_(ArgBool(o.arguments, "predicate.PodAffinityEnable", true)) {}
  std::string Name() const override { return "predicates"; }
  uint32_t Hooks() const override { return kHookPredicate; }

  std::string StaticPredicate(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    if (!n.ready) return "node(s) were not ready";
    if (n.unschedulable) return "node(s) were unschedulable";
    if (pod_affinity_)
      for (const auto& sel : t.anti_affinity)
        if (!sel.Valid()) return "pod anti-affinity selector uses an operator label selectors do not have";
    if (node_affinity_) {
      for (const auto& [k, v] : t.node_selector) {
        auto it = n.labels.find(k);
        if (it == n.labels.end() || it->second != v) return "node(s) didn't match Pod's node affinity/selector";
      }
      if (!t.required_affinity.empty()) {
        bool any = false;
        for (const auto& term : t.required_affinity)
          if (TermMatches(term, n)) { any = true; break; }
        if (!any) return "node(s) didn't match Pod's node affinity/selector";
      }
    }
    if (taints_) {
      for (const auto& taint : n.taints) {
        if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
        bool ok = false;
        for (const auto& tol : t.tolerations)
          if (tol.Tolerates(taint)) { ok = true; break; }
        if (!ok) {
          return "node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}";
        }
      }
    }
    return {};
  }

  std::string DynamicPredicate(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    if (!pod_affinity_) return {};
    if (t.anti_affinity.empty() && ssn.state().anti_affinity_pods() == 0) return {};
    std::string reason;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& other) {
      if (!reason.empty() || other.uid == t.uid || other.ns != t.ns) return;
      if (!OccupiesNode(other.status) && other.status != TaskStatus::kPipelined) return;
      for (const auto& sel : t.anti_affinity)
        if (sel.Matches(other.labels)) { reason = "node(s) didn't match pod anti-affinity rules"; return; }
      for (const auto& sel : other.anti_affinity)
        if (sel.Matches(t.labels)) { reason = "node(s) didn't satisfy existing pods anti-affinity rules"; return; }
    });
    return reason;
  }

 private:
  bool node_affinity_, taints_, pod_affinity_;
};

// ------------------------------------------------------------------------------------------- nodeorder
class NodeOrderPlugin final : public Plugin {
 public:
  explicit NodeOrderPlugin(const PluginOption& o)
      : least_(ArgDouble(o.arguments, "leastrequested.weight", 1)),
        balanced_(ArgDouble(o.arguments, "balancedresource.weight", 1)),
        most_(ArgDouble(o.arguments, "mostrequested.weight", 0)) {}
  std::string Name() const override { return "nodeorder"; }
  uint32_t Hooks() const override { return kHookNodeOrder; }
  double NodeScore(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    double frac[2] = {0, 0};
    int dims = 0;
    for (int i : {kCpu, kMemory}) {
      int64_t alloc = n.allocatable.Get(i);
      if (alloc <= 0) continue;
      frac[i] = std::min(1.0, static_cast<double>(n.used.Get(i) + t.request.Get(i)) / static_cast<double>(alloc));
      ++dims;
    }
    if (dims == 0) return 0;
    double avg = (frac[0] + frac[1]) / dims;
    double score = 0;
    if (least_ != 0) score += least_ * (1 - avg) * 100;
    if (most_ != 0) score += most_ * avg * 100;
    if (balanced_ != 0) score += balanced_ * (1 - std::fabs(frac[0] - frac[1])) * 100;
    return score;
  }

 private:
  double least_, balanced_, most_;
};

// --------------------------------------------------------------------------------------------- binpack
class BinpackPlugin final : public Plugin {
 public:
  explicit BinpackPlugin(const PluginOption& o) : option_(o) {
    weight_ = ArgDouble(o.arguments, "binpack.weight", 1);
  }
  std::string Name() const override { return "binpack"; }
  uint32_t Hooks() const override { return weight_ == 0 ? 0u : static_cast<uint32_t>(kHookNodeOrder); }
  void OnSessionOpen(Session& ssn) override {
    // Resolve resource names once per session (the registry may have grown).
    weights_.fill(0);
    weights_[kCpu] = ArgDouble(option_.arguments, "binpack.cpu", 1);
    weights_[kMemory] = ArgDouble(option_.arguments, "binpack.memory", 1);
    auto it = option_.arguments.find("binpack.resources");
    if (it == option_.arguments.end()) return;
    std::stringstream ss(it->second);
    std::string name;
    while (std::getline(ss, name, ',')) {
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (name.empty()) continue;
      auto idx = ssn.state().resources().Find(name);
      if (!idx) continue;
      weights_[static_cast<size_t>(*idx)] = ArgDouble(option_.arguments, "binpack.resources." + name, 1);
    }
  }
  // Volcano's binpack score: sum over requested, weighted resources of (used+request)*w/allocatable, divided by
  // the sum of weights, times 100 and binpack.weight; any requested resource overflowing zeroes the node.
  double NodeScore(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    double score = 0, wsum = 0;
    for (int i = 0; i < kMaxResources; ++i) {
      double w = weights_[static_cast<size_t>(i)];
      int64_t req = t.request.Get(i);
      if (req <= 0 || w <= 0) continue;
      wsum += w;
      int64_t alloc = n.allocatable.Get(i);
      if (alloc <= 0) continue;
      int64_t total = n.used.Get(i) + req;
      if (total > alloc) return 0;
      score += static_cast<double>(total) * w / static_cast<double>(alloc);
    }
    if (wsum == 0) return 0;
    return score / wsum * 100 * weight_;
  }

 private:
  PluginOption option_;
  double weight_ = 1;
  std::array<double, kMaxResources> weights_{};
};

// --------------------------------------------------------------------------------------- task-topology
// Annotations name task roles that should share nodes (affinity) or avoid each other (anti-affinity).
// Score for node N = weight * 10 * (#job tasks on N whose role is affine - #job tasks on N whose role is
// anti-affine); it depends only on this job's placements on N, honouring the NodeScore contract.
class TaskTopologyPlugin final : public Plugin {
 public:
  explicit TaskTopologyPlugin(const PluginOption& o) : weight_(ArgDouble(o.arguments, "task-topology.weight", 1)) {}
  std::string Name() const override { return "task-topology"; }
  uint32_t Hooks() const override { return kHookNodeOrder | kHookTaskOrder; }
  void OnSessionOpen(Session&) override { parsed_.clear(); }
  bool JobDependentScore(const Session& ssn, const JobInfo& job) const override {
    const Parsed* p = Get(ssn, job.key);
    return p && (!p->affinity.empty() || !p->anti.empty());
  }

  double NodeScore(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    const Parsed* p = Get(ssn, t.job);
    if (!p || (p->affinity.empty() && p->anti.empty())) return 0;
    auto aff = p->affinity.find(t.role);
    auto anti = p->anti.find(t.role);
    if (aff == p->affinity.end() && anti == p->anti.end()) return 0;
    int score = 0;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& o) {
      if (o.job != t.job || o.uid == t.uid) return;
      if (!OccupiesNode(o.status) && o.status != TaskStatus::kPipelined) return;
      if (aff != p->affinity.end() && aff->second.count(o.role)) ++score;
      if (anti != p->anti.end() && anti->second.count(o.role)) --score;
    });
    return weight_ * 10 * score;
  }
  int TaskOrder(const Session& ssn, const TaskInfo& a, const TaskInfo& b) const override {
    if (a.job != b.job) return 0;
    const Parsed* p = Get(ssn, a.job);
    if (!p || p->order.empty()) return 0;
    auto rank = [&](const std::string& role) {
      auto it = p->order.find(role);
      return it == p->order.end() ? (1 << 20) : static_cast<int>(it->second);
    };
    int ra = rank(a.role), rb = rank(b.role);
    return ra == rb ? 0 : (ra < rb ? -1 : 1);
  }

 private:
  struct Parsed {
    std::map<std::string, std::set<std::string>> affinity, anti;
    std::map<std::string, int> order;
  };
  static std::vector<std::string> Split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, sep)) {
      x.erase(0, x.find_first_not_of(' '));
      x.erase(x.find_last_not_of(' ') + 1);
      if (!x.empty()) out.push_back(x);
    }
    return out;
  }
  const Parsed* Get(const Session& ssn, const std::string& job) const {
    auto it = parsed_.find(job);
    if (it != parsed_.end()) return &it->second;
    const JobInfo* j = ssn.state().FindJob(job);
    Parsed p;
    if (j) {
      for (const auto& group : Split(j->task_topology_affinity, ';')) {
        auto roles = Split(group, ',');
        for (const auto& r : roles) p.affinity[r].insert(roles.begin(), roles.end());
      }
      for (const auto& group : Split(j->task_topology_anti_affinity, ';')) {
        auto roles = Split(group, ',');
        for (const auto& r : roles) p.anti[r].insert(roles.begin(), roles.end());
      }
      int i = 0;
      for (const auto& r : Split(j->task_topology_order, ',')) p.order.emplace(r, i++);
    }
    return &parsed_.emplace(job, std::move(p)).first->second;
  }
  double weight_;
  mutable std::map<std::string, Parsed> parsed_;
};

// ------------------------------------------------------------------------------ network-topology-aware
// Hard/soft HyperNode placement is driven by the allocate action (tier search, leaf-greedy packing); this
// plugin ranks candidate HyperNodes of one tier: the one the job fills most tightly wins (bin-packing
// HyperNodes keeps large free domains for large gangs).
class NetworkTopologyPlugin final : public Plugin {
 public:
  explicit NetworkTopologyPlugin(const PluginOption& o) : weight_(ArgDouble(o.arguments, "weight", 1)) {}
  std::string Name() const override { return "network-topology-aware"; }
  uint32_t Hooks() const override { return kHookHyperNodeOrder; }
  double HyperNodeScore(const Session& ssn, const JobInfo& job, const std::string& hn) const override {
    const auto& view = ssn.hypernodes();
    auto it = view.entries.find(hn);
    if (it == view.entries.end()) return 0;
    Resource alloc, used;
    for (int idx : it->second.nodes) {
      const NodeInfo& n = ssn.node(idx);
      alloc += n.allocatable;
      used += n.used;
    }
    used += job.pending_request;
    return weight_ * 100 * DominantShare(used, alloc);
  }

 private:
  double weight_;
};

}  // namespace

PluginRegistry PluginRegistry::Builtin() {
  PluginRegistry r;
  auto add = [&r](const std::string& name, PluginFactory f) { (void)r.Register(name, std::move(f)); };
  add("gang", [](const PluginOption&) { return std::make_unique<GangPlugin>(); });
  add("priority", [](const PluginOption&) { return std::make_unique<PriorityPlugin>(); });
  add("conformance", [](const PluginOption&) { return std::make_unique<ConformancePlugin>(); });
  add("drf", [](const PluginOption&) { return std::make_unique<DrfPlugin>(); });
  add("proportion", [](const PluginOption&) { return std::make_unique<ProportionPlugin>(); });
  add("overcommit", [](const PluginOption& o) { return std::make_unique<OvercommitPlugin>(o); });
  add("predicates", [](const PluginOption& o) { return std::make_unique<PredicatesPlugin>(o); });
  add("nodeorder", [](const PluginOption& o) { return std::make_unique<NodeOrderPlugin>(o); });
  add("binpack", [](const PluginOption& o) { return std::make_unique<BinpackPlugin>(o); });
  add("task-topology", [](const PluginOption& o) { return std::make_unique<TaskTopologyPlugin>(o); });
  add("network-topology-aware", [](const PluginOption& o) { return std::make_unique<NetworkTopologyPlugin>(o); });
  return r;
}

}  // namespace tephra::sched
