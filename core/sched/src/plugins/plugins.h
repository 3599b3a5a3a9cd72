// Built-in plugins (docs/volcano-behaviour.md, "Plugins"): one file per plugin in this folder, each
// exposing only its factory; PluginRegistry::Builtin() (registry.cc) registers them by name. Internal to
// tephra_sched: callers create plugins through the registry.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
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
Made NewFgd(const PluginOption& o);
Made NewTaskTopology(const PluginOption& o);
Made NewNetworkTopologyAware(const PluginOption& o);
Made NewSla(const PluginOption& o);

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

// The node's domain for a topology key. kubelet labels every node with its hostname, which is its name;
// a node object without that label (tests, simulators) is still its own hostname domain.
inline const std::string* DomainOf(const NodeInfo& n, const std::string& key) {
  auto it = n.labels.find(key);
  if (it != n.labels.end()) return &it->second;
  return key == kHostnameKey ? &n.name : nullptr;
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

// A few memoised answers about the placed pods for the pending pods asked about (Entry: the question and
// its answer), reused while the state does not change. The allocate loop places one task at a time
// (ClusterState::last_transition says which), so an answer one generation behind is carried forward by
// moving that one task's contribution instead of being rebuilt. Least recently used entries are replaced.
// Single-threaded like ClusterState.
template <typename Entry, size_t N>
class PlacedPodsMemo {
 public:
  // same(entry): the entry answers this question. init(entry): make a replaced entry ask it. rebuild(entry):
  // answer from scratch. move(entry, pod, status, node, sign): add (+1) or remove (-1) one placed pod's
  // contribution. settle(entry): finish after moves (e.g. recompute a minimum).
  template <typename Same, typename Init, typename Rebuild, typename Move, typename Settle>
  Entry& Get(const ClusterState& st, Same&& same, Init&& init, Rebuild&& rebuild, Move&& move, Settle&& settle) {
    ++clock_;
    Slot* hit = nullptr;
    for (auto& s : slots_)
      if (s.state == &st && same(s.entry)) {
        hit = &s;
        break;
      }
    const auto& last = st.last_transition();
    if (hit && hit->generation == st.generation()) {
      // current
    } else if (hit && hit->generation + 1 == st.generation() && last.generation == st.generation() && last.task) {
      const TaskInfo& e = *last.task;
      if (!last.old_node.empty() && OnNodeForScheduling(last.old_status))
        if (const NodeInfo* n = st.FindNode(last.old_node)) move(hit->entry, e, last.old_status, *n, -1);
      if (!e.node.empty() && OnNodeForScheduling(e.status))
        if (const NodeInfo* n = st.FindNode(e.node)) move(hit->entry, e, e.status, *n, +1);
      settle(hit->entry);
    } else {
      if (!hit) {
        hit = &slots_[0];
        for (auto& s : slots_)
          if (s.used < hit->used) hit = &s;
        hit->state = &st;
        init(hit->entry);
      }
      rebuild(hit->entry);
    }
    hit->generation = st.generation();
    hit->used = clock_;
    return hit->entry;
  }

 private:
  struct Slot {
    const ClusterState* state = nullptr;
    uint64_t generation = 0, used = 0;
    Entry entry;
  };
  std::array<Slot, N> slots_;
  uint64_t clock_ = 0;
};

// Three-way comparison of doubles (plugin orders return <0, 0, >0).
inline int Cmp(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

// Share of `used` in `total` on the most-used dimension (pods excluded: every task requests one).
double DominantShare(const Resource& used, const Resource& total);

}  // namespace tephra::sched::plugins
