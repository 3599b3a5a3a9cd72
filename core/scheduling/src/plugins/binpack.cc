// The "binpack" plugin.
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

}  // namespace

std::unique_ptr<Plugin> NewBinpackPlugin(const PluginOption& option) {
  return std::make_unique<BinpackPlugin>(option);
}

}  // namespace tephra::sched::plugins
