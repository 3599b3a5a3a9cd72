// The "nodeorder" plugin: Volcano's nodeorder runs kube-scheduler's score plugins and sums each plugin's
// integer score (0..100) times its weight. The resource scores are kube-scheduler v1.20.2's
// (pkg/scheduler/framework/plugins/noderesources), reproduced to the integer so that node choices agree:
//   LeastAllocated      per resource ((capacity - requested) * 100) / capacity, 0 when requested > capacity
//   MostAllocated       per resource (requested * 100) / capacity, 0 when requested > capacity
//                       both averaged over cpu and memory with weight 1 each, integer division
//   BalancedAllocation  fractions requested / capacity; 0 if either is >= 1, else int64((1 - |cpu - mem|) * 100)
// where requested = the node's scoring requests (NodeInfo::score_cpu/score_memory, kube-scheduler's
// NonZeroRequested) + the pod's (ScoreCpu/ScoreMemory), and capacity = the node's allocatable. Weights and
// their defaults are Volcano's: leastrequested 1, balancedresource 1, mostrequested 0; a zero weight turns
// the score off.
//   NodeAffinity        the sum of the weights of the pod's preferred node-affinity terms that the node
//                       matches (kube-scheduler's raw score), times nodeaffinity.weight (Volcano's default 2).
//                       Volcano adds it without kube-scheduler's normalisation to 0..100, and so does Tephra.
//   TaintToleration     the node's PreferNoSchedule taints the pod does not tolerate (tolerations whose effect
//                       is PreferNoSchedule or empty count), normalised in reverse as kube-scheduler does:
//                       100 - 100 * count / max, every node 100 when max is 0; times tainttoleration.weight
//                       (Volcano's default 3). Volcano normalises over the nodes that passed the predicates for
//                       the task; Tephra over every schedulable node of the cycle (the same order of nodes;
//                       a node's score never depends on which other nodes are full, the NodeScore contract
//                       that lets allocate keep its per-shape heaps). See docs/volcano-conformance.md.
//   InterPodAffinity    a batch score (podaffinity.weight, Volcano's default 2), kube-scheduler's: for each
//                       placed pod E on node M and each preferred term, weight (affinity) or -weight (anti)
//                       is added to the domain (M's value of the term's topology key) when the pending pod's
//                       term selects E, or when E's term selects the pending pod (symmetry; required terms of
//                       E add nothing: Volcano builds the plugin with hardPodAffinityWeight 0). A node scores
//                       the sum over the domains it is in, normalised over the candidate nodes:
//                       int64(100 * (s - min) / (max - min)), every node 0 when max == min.
//   PodTopologySpread   a batch score (podtopologyspread.weight, Volcano's default 2) for ScheduleAnyway
//                       constraints, kube-scheduler's: a candidate node without every constraint's key is
//                       ignored (scores 0); per constraint, cnt = the matching pods of the pod's namespace in
//                       the node's domain (its own pods for kubernetes.io/hostname; otherwise counted over
//                       every node with all the keys that passes the constraint's node inclusion policies),
//                       raw = round(sum of cnt * log(size + 2) + maxSkew - 1) where size is the number of
//                       domains among the candidates (for hostname, the candidates not ignored); normalised
//                       100 * (max + min - raw) / max over the candidates not ignored (100 when max is 0).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

constexpr int64_t kMaxNodeScore = 100;

int64_t LeastRequestedScore(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return ((capacity - requested) * kMaxNodeScore) / capacity;
}

int64_t MostRequestedScore(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return (requested * kMaxNodeScore) / capacity;
}

double FractionOfCapacity(int64_t requested, int64_t capacity) {
  if (capacity == 0) return 1;  // kube-scheduler: no capacity counts as full
  return static_cast<double>(requested) / static_cast<double>(capacity);
}

int64_t IntolerablePreferNoSchedule(const TaskInfo& t, const NodeInfo& n) {
  int64_t count = 0;
  for (const auto& taint : n.taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = false;
    for (const auto& tol : t.tolerations)
      if ((!tol.effect || *tol.effect == TaintEffect::kPreferNoSchedule) && tol.Tolerates(taint)) {
        tolerated = true;
        break;
      }
    if (!tolerated) ++count;
  }
  return count;
}

class NodeOrderPlugin final : public Plugin {
 public:
  explicit NodeOrderPlugin(ArgParser& args)
      : least_(args.Double("leastrequested.weight", 1)),
        balanced_(args.Double("balancedresource.weight", 1)),
        most_(args.Double("mostrequested.weight", 0)),
        node_affinity_(args.Double("nodeaffinity.weight", 2)),
        taint_(args.Double("tainttoleration.weight", 3)),
        pod_affinity_(args.Double("podaffinity.weight", 2)),
        spread_(args.Double("podtopologyspread.weight", 2)) {}
  std::string Name() const override { return "nodeorder"; }
  uint32_t Hooks() const override { return kHookNodeOrder; }
  double NodeScore(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    const int64_t cpu_cap = n.allocatable.Get(kCpu), mem_cap = n.allocatable.Get(kMemory);
    const int64_t cpu_req = n.score_cpu + ScoreCpu(t), mem_req = n.score_memory + ScoreMemory(t);
    double score = 0;
    // Weighted average over cpu and memory, weight 1 each (kube-scheduler's resourceToWeightMap).
    if (least_ != 0)
      score += least_ * static_cast<double>((LeastRequestedScore(cpu_req, cpu_cap) + LeastRequestedScore(mem_req, mem_cap)) / 2);
    if (most_ != 0)
      score += most_ * static_cast<double>((MostRequestedScore(cpu_req, cpu_cap) + MostRequestedScore(mem_req, mem_cap)) / 2);
    if (balanced_ != 0) {
      const double cpu = FractionOfCapacity(cpu_req, cpu_cap), mem = FractionOfCapacity(mem_req, mem_cap);
      if (cpu < 1 && mem < 1)
        score += balanced_ * static_cast<double>(static_cast<int64_t>((1 - std::fabs(cpu - mem)) * kMaxNodeScore));
    }
    if (node_affinity_ != 0 && !t.preferred_affinity.empty()) {
      int64_t matched = 0;
      for (const auto& term : t.preferred_affinity)
        if (term.Matches(n.labels)) matched += term.weight;
      score += node_affinity_ * static_cast<double>(matched);
    }
    if (taint_ != 0) {
      const int64_t max = MaxIntolerable(ssn.state(), t);
      const int64_t normalised =
          max == 0 ? kMaxNodeScore : kMaxNodeScore - kMaxNodeScore * IntolerablePreferNoSchedule(t, n) / max;
      score += taint_ * static_cast<double>(normalised);
    }
    return score;
  }

  bool BatchScored(const Session& ssn, const TaskInfo& t) const override {
    return SoftSpreadOf(ssn.state(), t).scored || AffinityScored(ssn.state(), t);
  }

  void BatchNodeScore(const Session& ssn, const TaskInfo& t, std::span<const int> slots,
                      std::span<double> scores) const override {
    if (AffinityScored(ssn.state(), t)) AffinityScores(ssn.state(), t, slots, scores);
    if (SoftSpread s = SoftSpreadOf(ssn.state(), t); s.scored) SpreadScores(ssn.state(), t, s, slots, scores);
  }

  // The spread score when only hostname domains can differ: every constraint is on kubernetes.io/hostname,
  // or is a system default on a key no node carries (the zone, on clusters without zone labels), which
  // scores no node. A node without matching pods then scores what every such node scores, and only the
  // nodes that hold matching pods are listed: the pods of a gang being placed, typically. The arithmetic is
  // SpreadScores', term for term, so the two agree exactly (NodeOrder.SparseSpreadScoresAreTheScannedOnes).
  std::optional<SparseScores> SparseBatchNodeScore(const Session& ssn, const TaskInfo& t, size_t candidates,
                                                   const std::function<bool(int)>& is_candidate) const override {
    const ClusterState& st = ssn.state();
    if (AffinityScored(st, t)) return std::nullopt;
    SoftSpread soft = SoftSpreadOf(st, t);
    if (!soft.scored || candidates == 0) return SparseScores{};
    const auto& cs = soft.Of(t);
    for (const auto& c : cs)
      if (c.topology_key != kHostnameKey && !(soft.system && !KeyCarried(st, c.topology_key))) return std::nullopt;
    const auto& counts = SpreadFor(st, t, soft).counts;
    const double weight = std::log(static_cast<double>(candidates + 2));
    // raw for a node whose matching pods per constraint are `cnt(c)`, as SpreadScores sums it.
    auto raw = [&](auto&& cnt) {
      double s = 0;
      for (size_t c = 0; c < cs.size(); ++c) {
        if (cs[c].topology_key != kHostnameKey) continue;  // no node carries the key: no term
        s += static_cast<double>(cnt(c)) * weight + static_cast<double>(cs[c].max_skew - 1);
      }
      return static_cast<int64_t>(std::llround(s));
    };
    const int64_t clean = raw([](size_t) { return int64_t{0}; });
    // The candidates holding matching pods, and their raw scores.
    std::vector<std::pair<int, int64_t>> dirty;
    const auto& hosts = HostnameSlots(st);
    for (size_t c = 0; c < cs.size(); ++c) {
      if (cs[c].topology_key != kHostnameKey) continue;
      for (const auto& [domain, n] : counts[c]) {
        auto it = hosts.find(domain);
        if (it == hosts.end()) continue;
        for (int slot : it->second)
          if (is_candidate(slot)) dirty.emplace_back(slot, 0);
      }
    }
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    if (dirty.size() < candidates) lo = hi = clean;  // some candidate holds none
    for (auto& [slot, r] : dirty) {
      const std::string& domain = *DomainOf(st.NodeAt(slot), kHostname);
      r = raw([&](size_t c) {
        if (cs[c].topology_key != kHostnameKey) return int64_t{0};
        auto it = counts[c].find(domain);
        return it == counts[c].end() ? int64_t{0} : it->second;
      });
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
    auto score = [&](int64_t r) {
      const int64_t normalised = hi == 0 ? kMaxNodeScore : kMaxNodeScore * (hi + lo - r) / hi;
      return spread_ * static_cast<double>(normalised);
    };
    SparseScores out;
    out.uniform = score(clean);
    for (const auto& [slot, r] : dirty) out.exceptions.emplace_back(slot, score(r));
    return out;
  }

 private:
  bool AffinityScored(const ClusterState& st, const TaskInfo& t) const {
    if (pod_affinity_ == 0) return false;
    if (t.preferred_pod_terms.empty() && st.preferred_pod_term_tasks().empty()) return false;
    return !AffinityFor(st, t).by_key.empty();
  }

  // The ScheduleAnyway constraints that score a pod: its own; or, for a pod with no constraint at all,
  // kube-scheduler's system defaults (nodeorder runs PodTopologySpread with DefaultingType
  // SystemDefaulting) when a Service or its controller selects it.
  struct SoftSpread {
    bool scored = false;
    bool system = false;  // system defaults: nodes missing a key are kept (kube: "requireAllTopologies")
    std::vector<SpreadConstraint> defaults;
    const std::vector<SpreadConstraint>& Of(const TaskInfo& t) const { return system ? defaults : t.soft_spread; }
  };
  SoftSpread SoftSpreadOf(const ClusterState& st, const TaskInfo& t) const {
    SoftSpread s;
    if (spread_ == 0) return s;
    if (!t.soft_spread.empty()) {
      s.scored = true;
      return s;
    }
    if (!t.spread.empty()) return s;
    LabelSelector selector = st.DefaultSpreadSelector(t);
    if (selector.match_labels.empty() && selector.match_expressions.empty()) return s;
    s.scored = s.system = true;
    s.defaults.resize(2);
    s.defaults[0].max_skew = 3;
    s.defaults[0].topology_key = kHostnameKey;
    s.defaults[0].selector = selector;
    s.defaults[1].max_skew = 5;
    s.defaults[1].topology_key = kZoneKey;
    s.defaults[1].selector = std::move(selector);
    return s;
  }
  // A node's value for constraint `c`: its label; for system defaults a node without the key is in the ""
  // domain (counted among the domains, never scored by it), otherwise in none.
  static const std::string* ValueOf(const NodeInfo& n, const SpreadConstraint& c, bool system) {
    static const std::string kNone;
    const std::string* v = DomainOf(n, c.topology_key);
    return v || !system ? v : &kNone;
  }

  void SpreadScores(const ClusterState& st, const TaskInfo& t, const SoftSpread& soft, std::span<const int> slots,
                    std::span<double> scores) const {
    const auto& cs = soft.Of(t);
    const auto& counts = SpreadFor(st, t, soft).counts;
    const size_t nc = cs.size();
    // Each candidate's domain per constraint, looked up once (null: the node lacks the key). Candidates missing
    // a key are ignored (not for system defaults); the number of domains among the others sets each weight.
    domain_scratch_.assign(slots.size() * nc, nullptr);
    raw_scratch_.assign(slots.size(), -1);  // -1: ignored
    std::vector<std::unordered_set<std::string_view>> domains(nc);
    size_t kept = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      const NodeInfo& n = st.NodeAt(slots[i]);
      const std::string** d = &domain_scratch_[i * nc];
      bool all = true;
      for (size_t c = 0; c < nc; ++c) all = (d[c] = DomainOf(n, cs[c].topology_key)) != nullptr && all;
      if (!all && !soft.system) continue;
      raw_scratch_[i] = 0;
      ++kept;
      for (size_t c = 0; c < nc; ++c)
        if (cs[c].topology_key != kHostnameKey) domains[c].insert(d[c] ? std::string_view(*d[c]) : std::string_view());
    }
    if (kept == 0) return;  // every candidate ignored: all 0
    std::vector<double> weight(nc);
    for (size_t c = 0; c < nc; ++c)
      weight[c] = std::log(static_cast<double>((cs[c].topology_key == kHostnameKey ? kept : domains[c].size()) + 2));
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (raw_scratch_[i] < 0) continue;
      const std::string* const* d = &domain_scratch_[i * nc];
      double s = 0;
      for (size_t c = 0; c < nc; ++c) {
        if (!d[c]) continue;  // system defaults only: no term for a key the node lacks
        int64_t cnt = 0;
        if (!counts[c].empty())
          if (auto it = counts[c].find(*d[c]); it != counts[c].end()) cnt = it->second;
        s += static_cast<double>(cnt) * weight[c] + static_cast<double>(cs[c].max_skew - 1);
      }
      raw_scratch_[i] = static_cast<int64_t>(std::llround(s));
      lo = std::min(lo, raw_scratch_[i]);
      hi = std::max(hi, raw_scratch_[i]);
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (raw_scratch_[i] < 0) continue;
      const int64_t normalised = hi == 0 ? kMaxNodeScore : kMaxNodeScore * (hi + lo - raw_scratch_[i]) / hi;
      scores[i] += spread_ * static_cast<double>(normalised);
    }
  }

  // The matching pods per domain for one pending pod's ScheduleAnyway constraints (kube-scheduler's
  // PreScore counts): pods of its namespace that are placed and not being deleted; for a hostname
  // constraint every such pod on its node, for other keys only on nodes that carry every constraint's key and
  // pass the constraint's node inclusion policies (which read the pod's node selector, affinity and
  // tolerations, so those are part of the question).
  // With system defaults (`system`), a node needs only the constraint's own key to count for it, and one
  // without the key counts in the "" domain.
  struct Spread {
    TaskInfo task;  // soft_spread holds the constraints asked about (the pod's own or the system defaults)
    bool system = false;
    std::vector<std::unordered_map<std::string, int64_t>> counts;  // per constraint: domain -> pods
  };
  static void CountSpread(Spread& q, const TaskInfo& e, TaskStatus status, const NodeInfo& n, int sign) {
    if (e.ns != q.task.ns || !CountsForSpread(status)) return;
    const auto& cs = q.task.soft_spread;
    for (size_t c = 0; c < cs.size(); ++c) {
      if (!cs[c].Matches(e.labels)) continue;
      if (cs[c].topology_key != kHostnameKey &&
          ((!q.system && !HasSpreadKeys(cs, n)) || !SpreadIncludes(q.task, cs[c], n)))
        continue;
      const std::string* domain =
          cs[c].topology_key == kHostnameKey ? DomainOf(n, cs[c].topology_key) : ValueOf(n, cs[c], q.system);
      if (!domain) continue;
      int64_t& v = q.counts[c][*domain];
      v += sign;
      if (v <= 0) q.counts[c].erase(*domain);
    }
  }
  const Spread& SpreadFor(const ClusterState& st, const TaskInfo& t, const SoftSpread& soft) const {
    const auto& cs = soft.Of(t);
    return spread_memo_.Get(
        st,
        [&](const Spread& q) {
          return q.task.ns == t.ns && q.system == soft.system && q.task.soft_spread == cs &&
                 q.task.node_selector == t.node_selector && q.task.required_affinity == t.required_affinity &&
                 q.task.tolerations == t.tolerations;
        },
        [&](Spread& q) {
          q.task = TaskInfo{};
          q.task.ns = t.ns;
          q.system = soft.system;
          q.task.soft_spread = cs;
          q.task.node_selector = t.node_selector;
          q.task.required_affinity = t.required_affinity;
          q.task.tolerations = t.tolerations;
        },
        [&](Spread& q) {
          q.counts.assign(q.task.soft_spread.size(), {});
          st.ForEachPlacedTaskInNamespace(q.task.ns, [&](const TaskInfo& e) {
            if (const NodeInfo* n = st.FindNode(e.node)) CountSpread(q, e, e.status, *n, +1);
          });
        },
        [](Spread& q, const TaskInfo& e, TaskStatus status, const NodeInfo& n, int sign) {
          CountSpread(q, e, status, n, sign);
        },
        [](Spread&) {});
  }

  void AffinityScores(const ClusterState& st, const TaskInfo& t, std::span<const int> slots,
                      std::span<double> scores) const {
    const auto& by_key = AffinityFor(st, t).by_key;
    std::vector<int64_t> raw(slots.size(), 0);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < slots.size(); ++i) {
      const NodeInfo& n = st.NodeAt(slots[i]);
      for (const auto& [key, values] : by_key)
        if (const std::string* domain = DomainOf(n, key))
          if (auto v = values.find(*domain); v != values.end()) raw[i] += v->second;
      lo = std::min(lo, raw[i]);
      hi = std::max(hi, raw[i]);
    }
    if (slots.empty() || hi == lo) return;  // kube-scheduler: every node 0
    for (size_t i = 0; i < slots.size(); ++i) {
      const auto normalised = static_cast<int64_t>(static_cast<double>(kMaxNodeScore) *
                                                   (static_cast<double>(raw[i] - lo) / static_cast<double>(hi - lo)));
      scores[i] += pod_affinity_ * static_cast<double>(normalised);
    }
  }

  // kube-scheduler's InterPodAffinity PreScore state for one pending pod: topology key -> domain -> summed
  // weights. Built with one walk (the pods its own terms may select, plus the pods that carry preferred
  // terms) and kept by a PlacedPodsMemo (plugins.h), like the predicates' domains for required terms.
  using DomainWeights = std::unordered_map<std::string, std::unordered_map<std::string, int64_t>>;
  struct Affinity {
    std::string ns;
    Labels labels;
    std::vector<WeightedPodAffinityTerm> terms;
    DomainWeights by_key;
  };

  static void Add(DomainWeights& d, const NodeInfo& n, const WeightedPodAffinityTerm& w, int sign) {
    const std::string* domain = DomainOf(n, w.term.topology_key);
    if (!domain) return;  // a node without the key is in no domain
    auto& values = d[w.term.topology_key];
    int64_t& v = values[*domain];
    v += sign * (w.anti ? -w.weight : w.weight);
    if (v == 0) {
      values.erase(*domain);
      if (values.empty()) d.erase(w.term.topology_key);
    }
  }
  // What placed pod `e` on node `n` adds to the question `q`: through q's terms (Own) and through e's (Theirs).
  static void Own(Affinity& q, const TaskInfo& e, const NodeInfo& n, int sign) {
    for (const auto& w : q.terms)
      if (w.term.Selects(e)) Add(q.by_key, n, w, sign);
  }
  static void Theirs(Affinity& q, const TaskInfo& e, const NodeInfo& n, int sign) {
    for (const auto& w : e.preferred_pod_terms) {
      if (w.term.null_selector) continue;
      if (!w.term.all_namespaces && std::find(w.term.namespaces.begin(), w.term.namespaces.end(), q.ns) == w.term.namespaces.end())
        continue;
      if (w.term.selector.Matches(q.labels)) Add(q.by_key, n, w, sign);
    }
  }
  static bool Placed(const TaskInfo& e) { return !e.node.empty() && OnNodeForScheduling(e.status); }

  void Rebuild(Affinity& q, const ClusterState& st) const {
    q.by_key.clear();
    if (!q.terms.empty()) {
      bool every_namespace = false;
      std::vector<std::string> namespaces;
      for (const auto& w : q.terms) {
        every_namespace = every_namespace || w.term.all_namespaces;
        for (const auto& ns : w.term.namespaces)
          if (std::find(namespaces.begin(), namespaces.end(), ns) == namespaces.end()) namespaces.push_back(ns);
      }
      auto own = [&](const NodeInfo& n, const TaskInfo& e) { Own(q, e, n, +1); };
      if (every_namespace) {
        st.ForEachPlacedTask(own);
      } else {
        for (const auto& ns : namespaces)
          st.ForEachPlacedTaskInNamespace(ns, [&](const TaskInfo& e) {
            if (const NodeInfo* n = st.FindNode(e.node)) own(*n, e);
          });
      }
    }
    for (const TaskInfo* e : st.preferred_pod_term_tasks())
      if (Placed(*e))
        if (const NodeInfo* n = st.FindNode(e->node)) Theirs(q, *e, *n, +1);
  }

  const Affinity& AffinityFor(const ClusterState& st, const TaskInfo& t) const {
    return affinity_memo_.Get(
        st,
        [&](const Affinity& q) { return q.ns == t.ns && q.labels == t.labels && q.terms == t.preferred_pod_terms; },
        [&](Affinity& q) {
          q.ns = t.ns;
          q.labels = t.labels;
          q.terms = t.preferred_pod_terms;
        },
        [&](Affinity& q) { Rebuild(q, st); },
        [](Affinity& q, const TaskInfo& e, TaskStatus, const NodeInfo& n, int sign) {
          Own(q, e, n, sign);
          Theirs(q, e, n, sign);
        },
        [](Affinity&) {});
  }

  // The largest intolerable PreferNoSchedule count over the schedulable nodes for this task's tolerations.
  // Memoised per task shape (tolerations are part of it) until the node set may have changed
  // (capacity_epoch moves on every node change); within a cycle nodes do not change, so every score of a
  // cycle is normalised by the same number. Tasks without a shape (not in the state) are computed afresh.
  int64_t MaxIntolerable(const ClusterState& st, const TaskInfo& t) const {
    if (memo_epoch_ != st.capacity_epoch()) {
      max_by_shape_.clear();
      memo_epoch_ = st.capacity_epoch();
    }
    if (t.shape != 0)
      if (auto it = max_by_shape_.find(t.shape); it != max_by_shape_.end()) return it->second;
    int64_t max = 0;
    for (int slot : st.CandidateNodes()) max = std::max(max, IntolerablePreferNoSchedule(t, st.NodeAt(slot)));
    if (t.shape != 0) max_by_shape_[t.shape] = max;
    return max;
  }

  // Whether any node carries label `key`, and the node slots of each hostname domain: kept until the node set
  // or a node's labels change (topology_version).
  bool KeyCarried(const ClusterState& st, const std::string& key) const {
    RefreshTopology(st);
    if (auto it = key_carried_.find(key); it != key_carried_.end()) return it->second;
    bool carried = false;
    st.ForEachNode([&](const NodeInfo& n) { carried = carried || n.labels.count(key) > 0; });
    key_carried_.emplace(key, carried);
    return carried;
  }
  const std::unordered_map<std::string, std::vector<int>>& HostnameSlots(const ClusterState& st) const {
    RefreshTopology(st);
    if (!hostname_slots_built_) {
      st.ForEachNode([&](const NodeInfo& n) { hostname_slots_[*DomainOf(n, kHostname)].push_back(st.NodeIndex(n.name)); });
      hostname_slots_built_ = true;
    }
    return hostname_slots_;
  }
  void RefreshTopology(const ClusterState& st) const {
    if (topology_seen_ == st.topology_version()) return;
    topology_seen_ = st.topology_version();
    key_carried_.clear();
    hostname_slots_.clear();
    hostname_slots_built_ = false;
  }

  inline static const std::string kHostname{kHostnameKey};  // DomainOf takes a std::string key
  double least_, balanced_, most_, node_affinity_, taint_, pod_affinity_, spread_;
  mutable uint64_t topology_seen_ = 0;
  mutable std::unordered_map<std::string, bool> key_carried_;
  mutable std::unordered_map<std::string, std::vector<int>> hostname_slots_;
  mutable bool hostname_slots_built_ = false;
  mutable PlacedPodsMemo<Affinity, 4> affinity_memo_;
  mutable PlacedPodsMemo<Spread, 4> spread_memo_;
  mutable std::vector<const std::string*> domain_scratch_;  // SpreadScores' per-call buffers, kept to reuse
  mutable std::vector<int64_t> raw_scratch_;
  // Single-threaded: a plugin instance belongs to one state thread (the extender has its own instances).
  mutable std::unordered_map<uint32_t, int64_t> max_by_shape_;
  mutable uint64_t memo_epoch_ = 0;
};

}  // namespace

Made NewNodeOrder(const PluginOption& o) { return Make<NodeOrderPlugin>(o); }

}  // namespace tephra::sched::plugins
