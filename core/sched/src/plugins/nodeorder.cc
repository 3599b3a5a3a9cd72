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
#include <cmath>

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

class NodeOrderPlugin final : public Plugin {
 public:
  explicit NodeOrderPlugin(ArgParser& args)
      : least_(args.Double("leastrequested.weight", 1)),
        balanced_(args.Double("balancedresource.weight", 1)),
        most_(args.Double("mostrequested.weight", 0)) {}
  std::string Name() const override { return "nodeorder"; }
  uint32_t Hooks() const override { return kHookNodeOrder; }
  double NodeScore(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
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
    return score;
  }

 private:
  double least_, balanced_, most_;
};

}  // namespace

Made NewNodeOrder(const PluginOption& o) { return Make<NodeOrderPlugin>(o); }

}  // namespace tephra::sched::plugins
