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
#include <algorithm>
#include <cmath>
#include <unordered_map>

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
        taint_(args.Double("tainttoleration.weight", 3)) {}
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

 private:
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

  double least_, balanced_, most_, node_affinity_, taint_;
  // Single-threaded: a plugin instance belongs to one state thread (the extender has its own instances).
  mutable std::unordered_map<uint32_t, int64_t> max_by_shape_;
  mutable uint64_t memo_epoch_ = 0;
};

}  // namespace

Made NewNodeOrder(const PluginOption& o) { return Make<NodeOrderPlugin>(o); }

}  // namespace tephra::sched::plugins
