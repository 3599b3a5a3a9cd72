// The "network-topology-aware" plugin.
#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

// Hard/soft HyperNode placement is driven by the allocate action (tier search, leaf-greedy packing); this
// plugin ranks candidate HyperNodes of one tier: the one the job fills most tightly wins (bin-packing
// HyperNodes keeps large free domains for large gangs).
class NetworkTopologyPlugin final : public Plugin {
 public:
  explicit NetworkTopologyPlugin(ArgParser& args) : weight_(args.Double("weight", 1)) {}
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

Made NewNetworkTopologyAware(const PluginOption& o) { return Make<NetworkTopologyPlugin>(o); }

}  // namespace tephra::sched::plugins
