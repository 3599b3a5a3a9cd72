// The "predicates" plugin.
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

bool TermMatches(const NodeSelectorTerm& term, const NodeInfo& n) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;  // k8s: empty term matches nothing
  for (const auto& r : term.match_expressions)
    if (!MatchesRequirement(r, n.labels)) return false;
  for (const auto& r : term.match_fields) {
    if (r.key != "metadata.name") return false;
    Labels fields{{"metadata.name", n.name}};
    if (!MatchesRequirement(r, fields)) return false;
  }
  return true;
}

class PredicatesPlugin final : public Plugin {
 public:
  explicit PredicatesPlugin(const PluginOption& o)
      : node_affinity_(ArgBool(o.arguments, "predicate.NodeAffinityEnable", true)),
        taints_(ArgBool(o.arguments, "predicate.TaintTolerationEnable", true)),
        pod_affinity_(ArgBool(o.arguments, "predicate.PodAffinityEnable", true)) {}
  std::string Name() const override { return "predicates"; }
  uint32_t Hooks() const override { return kHookPredicate; }

  std::string StaticPredicate(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    if (!n.ready) return "node(s) were not ready";
    if (n.unschedulable) return "node(s) were unschedulable";
    if (pod_affinity_)
      for (const auto& sel : t.anti_affinity)
        if (!sel.Valid()) return "pod anti-affinity selector uses an operator label selectors do not have";
    if (node_affinity_) {
      for (const auto& [k, v] : t.node_selector) {
        auto it = n.labels.find(k);
        if (it == n.labels.end() || it->second != v) return "node(s) didn't match Pod's node affinity/selector";
      }
      if (!t.required_affinity.empty()) {
        bool any = false;
        for (const auto& term : t.required_affinity)
          if (TermMatches(term, n)) { any = true; break; }
        if (!any) return "node(s) didn't match Pod's node affinity/selector";
      }
    }
    if (taints_) {
      for (const auto& taint : n.taints) {
        if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
        bool ok = false;
        for (const auto& tol : t.tolerations)
          if (tol.Tolerates(taint)) { ok = true; break; }
        if (!ok) {
          return "node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}";
        }
      }
    }
    return {};
  }

  std::string DynamicPredicate(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    if (!pod_affinity_) return {};
    if (t.anti_affinity.empty() && ssn.state().anti_affinity_pods() == 0) return {};
    std::string reason;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& other) {
      if (!reason.empty() || other.uid == t.uid || other.ns != t.ns) return;
      if (!OccupiesNode(other.status) && other.status != TaskStatus::kPipelined) return;
      for (const auto& sel : t.anti_affinity)
        if (sel.Matches(other.labels)) { reason = "node(s) didn't match pod anti-affinity rules"; return; }
      for (const auto& sel : other.anti_affinity)
        if (sel.Matches(t.labels)) { reason = "node(s) didn't satisfy existing pods anti-affinity rules"; return; }
    });
    return reason;
  }

 private:
  bool node_affinity_, taints_, pod_affinity_;
};

}  // namespace

std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption& option) {
  return std::make_unique<PredicatesPlugin>(option);
}

}  // namespace tephra::sched::plugins
