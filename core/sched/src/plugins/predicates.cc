// The "predicates" plugin: readiness, cordon, nodeSelector, required node affinity, taints (static, cached
// per task shape), host ports (kube-scheduler's NodePorts) and required inter-pod affinity and anti-affinity
// on any topology key, in both directions (dynamic). Resource and pod-count fit are checked by the actions,
// with Volcano-style reasons.
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "plugins.h"

namespace tephra::sched::plugins {

namespace {

constexpr const char* kAffinityReason = "node(s) didn't match Pod's node affinity/selector";
// kube-scheduler's InterPodAffinity reasons.
constexpr const char* kExistingAntiReason = "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr const char* kAntiReason = "node(s) didn't match pod anti-affinity rules";
constexpr const char* kPodAffinityReason = "node(s) didn't match pod affinity rules";
constexpr std::string_view kHostnameKey = "kubernetes.io/hostname";

// The node's domain for a topology key. kubelet labels every node with its hostname, which is its name;
// a node object without that label (tests, simulators) is still its own hostname domain.
const std::string* DomainOf(const NodeInfo& n, const std::string& key) {
  auto it = n.labels.find(key);
  if (it != n.labels.end()) return &it->second;
  return key == kHostnameKey ? &n.name : nullptr;
}

// Why a term can never be decided, or nullptr when it can (Fit keeps static strings).
const char* InvalidTermReason(const PodAffinityTerm& term, bool anti) {
  if (!term.selector.Valid())
    return anti ? "pod anti-affinity selector uses an operator label selectors do not have"
                : "pod affinity selector uses an operator label selectors do not have";
  if (term.unsupported_namespace_selector)
    return anti ? "pod anti-affinity term's namespaceSelector is not supported by this scheduler; list the namespaces"
                : "pod affinity term's namespaceSelector is not supported by this scheduler; list the namespaces";
  if (term.topology_key.empty())
    return anti ? "pod anti-affinity term has an empty topologyKey" : "pod affinity term has an empty topologyKey";
  return nullptr;
}

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
    if (pod_affinity_) {
      for (const auto& term : t.pod_affinity)
        if (const char* r = InvalidTermReason(term, false)) return Fit::No(r);
      for (const auto& term : t.pod_anti_affinity)
        if (const char* r = InvalidTermReason(term, true)) return Fit::No(r);
    }
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
    const ClusterState& st = ssn.state();
    if (t.pod_affinity.empty() && t.pod_anti_affinity.empty() && st.anti_affinity_pods() == 0) return Fit::Yes();
    const Domains& d = DomainsFor(st, t);
    // kube-scheduler's order (v1.20 InterPodAffinity Filter): the pod's affinity, its anti-affinity, then
    // the existing pods' anti-affinity.
    if (!t.pod_affinity.empty()) {
      bool all_terms_met = true;
      for (size_t i = 0; i < t.pod_affinity.size(); ++i) {
        const std::string* v = DomainOf(n, t.pod_affinity[i].topology_key);
        if (!v) return Fit::No(kPodAffinityReason);  // every term's key must be on the node
        if (!d.affinity[i].count(*v)) all_terms_met = false;
      }
      // The first pod of a group with affinity to itself: no pod anywhere matches the terms yet, and the pod
      // matches them itself, so it may go to any node that has the keys (kube-scheduler's rule).
      if (!all_terms_met && !(d.affinity_matches == 0 && d.self_match)) return Fit::No(kPodAffinityReason);
    }
    for (size_t i = 0; i < t.pod_anti_affinity.size(); ++i)
      if (const std::string* v = DomainOf(n, t.pod_anti_affinity[i].topology_key); v && d.anti[i].count(*v))
        return Fit::No(kAntiReason);
    for (const auto& [key, values] : d.existing_anti)
      if (const std::string* v = DomainOf(n, key); v && values.count(*v)) return Fit::No(kExistingAntiReason);
    return Fit::Yes();
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

  // For one pending pod, the domains (topology values) that the filter asks about, computed with one walk
  // over the placed pods and reused for every node while the state does not change (the generation moves
  // on every placement, so a gang's next task sees the one placed before it).
  struct Domains {
    const ClusterState* state = nullptr;
    uint64_t generation = 0;
    TaskInfo task;  // the fields read below; a caller may ask about a changed copy under the same uid
    // topology key -> domains holding a placed pod whose required anti-affinity selects this pod
    std::unordered_map<std::string, std::unordered_set<std::string>> existing_anti;
    // per term of the pod: domains holding a placed pod the term selects
    std::vector<std::unordered_set<std::string>> anti, affinity;
    int affinity_matches = 0;  // placed pods (with a domain) that match every affinity term
    bool self_match = false;   // the pod matches every one of its own affinity terms
  };

  static bool SameQuestion(const TaskInfo& a, const TaskInfo& b) {
    return a.uid == b.uid && a.ns == b.ns && a.labels == b.labels && a.pod_affinity == b.pod_affinity &&
           a.pod_anti_affinity == b.pod_anti_affinity;
  }

  const Domains& DomainsFor(const ClusterState& st, const TaskInfo& t) const {
    Domains& d = memo_;
    if (d.state == &st && d.generation == st.generation() && SameQuestion(d.task, t)) return d;
    d = Domains{};
    d.state = &st;
    d.generation = st.generation();
    d.task.uid = t.uid;
    d.task.ns = t.ns;
    d.task.labels = t.labels;
    d.task.pod_affinity = t.pod_affinity;
    d.task.pod_anti_affinity = t.pod_anti_affinity;
    auto placed = [&](const TaskInfo& e) -> const NodeInfo* {
      if (e.uid == t.uid || e.node.empty()) return nullptr;
      if (!OccupiesNode(e.status) && e.status != TaskStatus::kPipelined) return nullptr;
      return st.FindNode(e.node);
    };
    for (const TaskInfo* e : st.anti_affinity_tasks()) {
      const NodeInfo* n = placed(*e);
      if (!n) continue;
      for (const auto& term : e->pod_anti_affinity)
        if (term.Selects(t))
          if (const std::string* v = DomainOf(*n, term.topology_key)) d.existing_anti[term.topology_key].insert(*v);
    }
    d.anti.resize(t.pod_anti_affinity.size());
    d.affinity.resize(t.pod_affinity.size());
    if (t.pod_affinity.empty() && t.pod_anti_affinity.empty()) return d;
    d.self_match = true;
    for (const auto& term : t.pod_affinity) d.self_match = d.self_match && term.Selects(t);
    st.ForEachPlacedTask([&](const TaskInfo& e) {
      const NodeInfo* n = placed(e);
      if (!n) return;
      for (size_t i = 0; i < t.pod_anti_affinity.size(); ++i)
        if (t.pod_anti_affinity[i].Selects(e))
          if (const std::string* v = DomainOf(*n, t.pod_anti_affinity[i].topology_key)) d.anti[i].insert(*v);
      // An existing pod counts for affinity only if it matches every term (kube-scheduler).
      bool all = !t.pod_affinity.empty();
      for (const auto& term : t.pod_affinity) all = all && term.Selects(e);
      if (!all) return;
      for (size_t i = 0; i < t.pod_affinity.size(); ++i)
        if (const std::string* v = DomainOf(*n, t.pod_affinity[i].topology_key)) {
          d.affinity[i].insert(*v);
          ++d.affinity_matches;
        }
    });
    return d;
  }

  bool node_affinity_, taints_, pod_affinity_, node_ports_;
  // Single-threaded like ClusterState: the scheduler runs one cycle at a time.
  mutable Domains memo_;
};

}  // namespace

Made NewPredicates(const PluginOption& o) { return Make<PredicatesPlugin>(o); }

}  // namespace tephra::sched::plugins
