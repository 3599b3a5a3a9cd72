// The "nodeorder" plugin.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "plugins/builtin.h"

namespace tephra::sched::plugins {

namespace {

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

}  // namespace

std::unique_ptr<Plugin> NewNodeorderPlugin(const PluginOption& option) {
  return std::make_unique<NodeOrderPlugin>(option);
}

}  // namespace tephra::sched::plugins
