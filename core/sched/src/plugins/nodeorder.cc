// The "nodeorder" plugin.
#include <cmath>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class NodeOrderPlugin final : public Plugin {
 public:
  explicit NodeOrderPlugin(ArgParser& args)
      : least_(args.Double("leastrequested.weight", 1)),
        balanced_(args.Double("balancedresource.weight", 1)),
        most_(args.Double("mostrequested.weight", 0)) {}
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

}  // namespace

Made NewNodeOrder(const PluginOption& o) { return Make<NodeOrderPlugin>(o); }

}  // namespace tephra::sched::plugins
