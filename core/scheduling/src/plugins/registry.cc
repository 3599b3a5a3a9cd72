// PluginRegistry::Builtin(): every built-in plugin by its Volcano name.
#include <algorithm>

#include "plugins/builtin.h"

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
  (void)r.Register("gang", &plugins::NewGangPlugin);
  (void)r.Register("priority", &plugins::NewPriorityPlugin);
  (void)r.Register("conformance", &plugins::NewConformancePlugin);
  (void)r.Register("drf", &plugins::NewDrfPlugin);
  (void)r.Register("proportion", &plugins::NewProportionPlugin);
  (void)r.Register("overcommit", &plugins::NewOvercommitPlugin);
  (void)r.Register("predicates", &plugins::NewPredicatesPlugin);
  (void)r.Register("nodeorder", &plugins::NewNodeorderPlugin);
  (void)r.Register("binpack", &plugins::NewBinpackPlugin);
  (void)r.Register("task-topology", &plugins::NewTaskTopologyPlugin);
  (void)r.Register("network-topology-aware", &plugins::NewNetworkTopologyAwarePlugin);
  return r;
}

}  // namespace tephra::sched
