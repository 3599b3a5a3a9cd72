// The "predicates" plugin: readiness, cordon, nodeSelector, required node affinity, taints (static, cached
// per task shape), host ports (kube-scheduler's NodePorts) and hostname pod anti-affinity in both
// directions (dynamic). Resource and pod-count fit are checked by the actions, with Volcano-style reasons.
#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

constexpr const char* kAffinityReason = "node(s) didn't match Pod's node affinity/selector";

class PredicatesPlugin final : public Plugin {
 public:
  explicit PredicatesPlugin(ArgParser& args)
      : node_affinity_(args.Bool("predicate.NodeAffinityEnable", true)),
        taints_(args.Bool("predicate.TaintTolerationEnable", true)),
        pod_affinity_(args.Bool("predicate.PodAffinityEnable", true)),
        node_ports_(args.Bool("predicate.NodePortsEnable", true)) {}
  std::string Name() const override { return "predicates"; }
  uint32_t Hooks() const override { return kHookPredicate; }

  Fit StaticPredicate(const Session&, const TaskInfo& t, const NodeInfo& n) const override {
    if (!n.ready) return Fit::No("node(s) were not ready");
    if (n.unschedulable) return Fit::No("node(s) were unschedulable");
    if (pod_affinity_)
      for (const auto& sel : t.anti_affinity)
        if (!sel.Valid()) return Fit::No("pod anti-affinity selector uses an operator label selectors do not have");
    if (node_affinity_) {
      for (const auto& [k, v] : t.node_selector) {
        auto it = n.labels.find(k);
        if (it == n.labels.end() || it->second != v) return Fit::No(kAffinityReason);
      }
      if (!t.required_affinity.empty()) {
        bool any = false;
        for (const auto& term : t.required_affinity)
          if (term.Matches(n.labels, n.name)) { any = true; break; }
        if (!any) {
          // Say why when the pod can never fit: an operator Kubernetes does not define matches nothing.
          for (const auto& term : t.required_affinity)
            if (!term.Valid()) return Fit::No("pod's required node affinity uses an operator Kubernetes does not define");
          return Fit::No(kAffinityReason);
        }
      }
    }
    if (taints_) {
      for (const auto& taint : n.taints) {
        if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
        bool ok = false;
        for (const auto& tol : t.tolerations)
          if (tol.Tolerates(taint)) { ok = true; break; }
        if (!ok) return Fit::No("node(s) had untolerated taint", taint.key, taint.value);
      }
    }
    return Fit::Yes();
  }

  Fit DynamicPredicate(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    // Ports before affinity, kube-scheduler's filter order. A conflict needs a port on both sides, so a pod
    // without host ports, or a node where no task holds one, costs a comparison, not a walk of the node.
    if (node_ports_ && !t.host_ports.empty() && n.host_port_tasks > 0 && !PortsFree(ssn, t, n))
      return Fit::No("node(s) didn't have free ports for the requested pod ports");
    if (!pod_affinity_) return Fit::Yes();
    if (t.anti_affinity.empty() && ssn.state().anti_affinity_pods() == 0) return Fit::Yes();
    Fit fit;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& other) {
      if (!fit.ok() || other.uid == t.uid || other.ns != t.ns) return;
      if (!OccupiesNode(other.status) && other.status != TaskStatus::kPipelined) return;
      for (const auto& sel : t.anti_affinity)
        if (sel.Matches(other.labels)) { fit = Fit::No("node(s) didn't match pod anti-affinity rules"); return; }
      for (const auto& sel : other.anti_affinity)
        if (sel.Matches(t.labels)) { fit = Fit::No("node(s) didn't satisfy existing pods anti-affinity rules"); return; }
    });
    return fit;
  }

 private:
  // NodePorts: every host port the pod wants must not conflict with one held by a task that occupies the
  // node or is pipelined onto it (kube-scheduler's NodeInfo holds terminating pods and their ports too).
  static bool PortsFree(const Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    bool free = true;
    ssn.state().ForEachTaskOnNode(n.name, [&](const TaskInfo& other) {
      if (!free || other.host_ports.empty() || other.uid == t.uid) return;
      if (!OccupiesNode(other.status) && other.status != TaskStatus::kPipelined) return;
      for (const auto& want : t.host_ports)
        for (const auto& held : other.host_ports)
          if (want.Conflicts(held)) { free = false; return; }
    });
    return free;
  }

  bool node_affinity_, taints_, pod_affinity_, node_ports_;
};

}  // namespace

Made NewPredicates(const PluginOption& o) { return Make<PredicatesPlugin>(o); }

}  // namespace tephra::sched::plugins
