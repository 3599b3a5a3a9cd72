// Built-in plugins (docs/volcano-behaviour.md, "Plugins"): one file per plugin in this folder, each
// exposing only its factory; PluginRegistry::Builtin() (registry.cc) registers them by name. Internal to
// tephra_sched: callers create plugins through the registry.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "tephra/core/status.h"
#include "tephra/sched/config.h"
#include "tephra/sched/framework.h"

namespace tephra::sched::plugins {

using Made = core::StatusOr<std::unique_ptr<Plugin>>;

Made NewGang(const PluginOption& o);
Made NewPriority(const PluginOption& o);
Made NewConformance(const PluginOption& o);
Made NewDrf(const PluginOption& o);
Made NewProportion(const PluginOption& o);
Made NewOvercommit(const PluginOption& o);
Made NewPredicates(const PluginOption& o);
Made NewNodeOrder(const PluginOption& o);
Made NewBinpack(const PluginOption& o);
Made NewTaskTopology(const PluginOption& o);
Made NewNetworkTopologyAware(const PluginOption& o);

// Builds P from the option's arguments: P(ArgParser&) parses them, and a malformed one fails the
// creation with a message naming the plugin and the argument. P() for plugins without arguments.
template <typename P>
Made Make(const PluginOption& o) {
  if constexpr (std::is_constructible_v<P, ArgParser&>) {
    ArgParser args("plugin \"" + o.name + "\"", o.arguments);
    auto p = std::make_unique<P>(args);
    if (!args.status().ok()) return args.status();
    return std::unique_ptr<Plugin>(std::move(p));
  } else {
    return std::unique_ptr<Plugin>(std::make_unique<P>());
  }
}

// Three-way comparison of doubles (plugin orders return <0, 0, >0).
// The node's domain for a topology key. kubelet labels every node with its hostname, which is its name;
// a node object without that label (tests, simulators) is still its own hostname domain.
inline const std::string* DomainOf(const NodeInfo& n, const std::string& key) {
  auto it = n.labels.find(key);
  if (it != n.labels.end()) return &it->second;
  return key == "kubernetes.io/hostname" ? &n.name : nullptr;
}

// Node tests shared by the predicates (filters) and nodeorder (scores); defined in predicates.cc.
// kube-scheduler's NodeAffinity filter: every nodeSelector label, and one of the ORed required terms.
bool MatchesNodeSelectorAndAffinity(const TaskInfo& t, const NodeInfo& n);
// The first NoSchedule/NoExecute taint of `n` that `t` does not tolerate, or nullptr.
const Taint* UntoleratedTaint(const TaskInfo& t, const NodeInfo& n);
// Topology spreading: a node counts only when it carries every constraint's key (of the same kind), and for
// constraint `c` only when it passes c's node inclusion policies (the pod's node selector and required
// affinity when nodeAffinityPolicy is Honor, the default; its tolerations when nodeTaintsPolicy is Honor).
inline bool HasSpreadKeys(const std::vector<SpreadConstraint>& constraints, const NodeInfo& n) {
  for (const auto& c : constraints)
    if (!DomainOf(n, c.topology_key)) return false;
  return true;
}
inline bool SpreadIncludes(const TaskInfo& t, const SpreadConstraint& c, const NodeInfo& n) {
  if (c.honor_node_affinity && !MatchesNodeSelectorAndAffinity(t, n)) return false;
  if (c.honor_node_taints && UntoleratedTaint(t, n)) return false;
  return true;
}
// Pods being deleted do not count for spreading (kube-scheduler skips them), nor do pods not on a node.
inline bool CountsForSpread(TaskStatus s) { return OnNodeForScheduling(s) && s != TaskStatus::kReleasing; }

inline int Cmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

// Share of `used` in `total` on the most-used dimension (pods excluded: every task requests one).
double DominantShare(const Resource& used, const Resource& total);

}  // namespace tephra::sched::plugins
