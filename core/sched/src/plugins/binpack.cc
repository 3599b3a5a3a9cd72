// The "binpack" plugin: Volcano's exact node score (docs/volcano-behaviour.md, "binpack score").
#include <array>
#include <sstream>
#include <utility>
#include <vector>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

class BinpackPlugin final : public Plugin {
 public:
  // Every weight is parsed here, so a malformed one fails the configuration; only the mapping of
  // extended resource names to registry indexes waits for the session (the registry may grow).
  explicit BinpackPlugin(ArgParser& args)
      : weight_(args.Double("binpack.weight", 1)),
        cpu_(args.Double("binpack.cpu", 1)),
        memory_(args.Double("binpack.memory", 1)) {
    auto it = args.args().find("binpack.resources");
    if (it == args.args().end()) return;
    std::stringstream ss(it->second);
    std::string name;
    while (std::getline(ss, name, ',')) {
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (name.empty()) continue;
      double w = args.Double("binpack.resources." + name, 1);
      extended_.emplace_back(std::move(name), w);
    }
  }
  std::string Name() const override { return "binpack"; }
  uint32_t Hooks() const override { return weight_ == 0 ? 0u : static_cast<uint32_t>(kHookNodeOrder); }
  core::Status OnSessionOpen(Session& ssn) override {
    weights_.fill(0);
    weights_[kCpu] = cpu_;
    weights_[kMemory] = memory_;
    for (const auto& [name, w] : extended_) {
      auto idx = ssn.state().resources().Find(name);
      if (!idx) continue;  // no node or pod has it yet: nothing to weigh
      weights_[static_cast<size_t>(*idx)] = w;
    }
    return core::Status::OK();
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
  double weight_, cpu_, memory_;
  std::vector<std::pair<std::string, double>> extended_;  // binpack.resources, in the order written
  std::array<double, kMaxResources> weights_{};
};

}  // namespace

Made NewBinpack(const PluginOption& o) { return Make<BinpackPlugin>(o); }

}  // namespace tephra::sched::plugins
