// PluginRegistry::Builtin(): the plugins of this folder by their Volcano names.
#include "plugins.h"

#include <algorithm>

namespace tephra::sched {

namespace plugins {
double DominantShare(const Resource& used, const Resource& total) {
  double s = 0;
  for (int i = 0; i < kMaxResources; ++i) {
    if (i == kPods || total.Get(i) <= 0 || total.Get(i) >= kUnlimited) continue;
    s = std::max(s, static_cast<double>(used.Get(i)) / static_cast<double>(total.Get(i)));
  }
  return s;
}
}  // namespace plugins

PluginRegistry PluginRegistry::Builtin() {
  PluginRegistry r;
  auto add = [&r](const std::string& name, PluginFactory f) { (void)r.Register(name, std::move(f)); };
  add("gang", plugins::NewGang);
  add("priority", plugins::NewPriority);
  add("conformance", plugins::NewConformance);
  add("drf", plugins::NewDrf);
  add("proportion", plugins::NewProportion);
  add("overcommit", plugins::NewOvercommit);
  add("predicates", plugins::NewPredicates);
  add("nodeorder", plugins::NewNodeOrder);
  add("binpack", plugins::NewBinpack);
  add("fgd", plugins::NewFgd);
  add("task-topology", plugins::NewTaskTopology);
  add("network-topology-aware", plugins::NewNetworkTopologyAware);
  add("sla", plugins::NewSla);
  return r;
}

}  // namespace tephra::sched
