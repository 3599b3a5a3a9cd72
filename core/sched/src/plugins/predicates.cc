// The "predicates" plugin: readiness, cordon, nodeSelector, required node affinity, taints (static, cached
// per task shape), host ports (kube-scheduler's NodePorts) and required inter-pod affinity and anti-affinity
// on any topology key, in both directions, DoNotSchedule topology spread constraints and the cards of nodes
// whose devices are modelled (dynamic). Resource and pod-count fit are checked by the actions, with
// Volcano-style reasons.
#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <optional>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "plugins.h"
#include "tephra/sched/guard.h"

namespace tephra::sched::plugins {

// Declared in plugins.h (nodeorder's spread score reads them too).
bool MatchesNodeSelectorAndAffinity(const TaskInfo& t, const NodeInfo& n) {
  for (const auto& [k, v] : t.node_selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  if (t.required_affinity.empty()) return true;
  for (const auto& term : t.required_affinity)
    if (term.Matches(n.labels, n.name)) return true;
  return false;
}

const Taint* UntoleratedTaint(const TaskInfo& t, const NodeInfo& n) {
  for (const auto& taint : n.taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    bool ok = false;
    for (const auto& tol : t.tolerations)
      if (tol.Tolerates(taint)) { ok = true; break; }
    if (!ok) return &taint;
  }
  return nullptr;
}

namespace {

constexpr const char* kAffinityReason = "node(s) didn't match Pod's node affinity/selector";
// kube-scheduler's InterPodAffinity reasons.
constexpr const char* kExistingAntiReason = "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr const char* kAntiReason = "node(s) didn't match pod anti-affinity rules";
constexpr const char* kPodAffinityReason = "node(s) didn't match pod affinity rules";
// Device-level placement (devices.h).
constexpr const char* kCardCountReason = "node(s) cannot give one pod this many cards under their ring rule";
constexpr const char* kCardFitReason = "node(s) didn't have free healthy cards that fit the pod's device request";
constexpr const char* kNoSharedCardsReason = "node(s) had no shareable cards (no vGPU device plugin registered)";
constexpr const char* kGpuTypeReason =
    "node(s) had no GPU the pod accepts (nvidia.com/use-gputype, nouse-gputype, volcano.sh/vgpu-use-gpuuuid, vgpu-nouse-gpuuuid)";

// Whether a node has a GPU that passes the pod's product and id filters: any modelled card, else the node's
// GPU model (GPU Feature Discovery's product label) for counted GPUs.
bool AcceptsSomeGpu(const DeviceRequest& req, const NodeDevices& node) {
  if (node.cards.empty()) return req.detail->AllowsModel(node.model);
  return std::any_of(node.cards.begin(), node.cards.end(), [&](const Card& c) { return req.Allows(node, c); });
}
// kube-scheduler's PodTopologySpread reasons.
constexpr const char* kSpreadReason = "node(s) didn't match pod topology spread constraints";
constexpr const char* kSpreadLabelReason = "node(s) didn't match pod topology spread constraints (missing required label)";

// kube-scheduler's NodeUnschedulable: a cordoned node (spec.unschedulable) takes the pods that tolerate the
// taint the node lifecycle controller mirrors the cordon as, whether or not that taint is there yet.
bool ToleratesCordon(const TaskInfo& t) {
  static const Taint kCordon{"node.kubernetes.io/unschedulable", "", TaintEffect::kNoSchedule};
  for (const auto& tol : t.tolerations)
    if (tol.Tolerates(kCordon)) return true;
  return false;
}

// kube-scheduler's node inclusion for spreading: a node counts for constraint `c` of pod `t` when it carries
// every constraint's key and, as the constraint's policies say, passes the pod's node selector and required
// affinity (Honor by default) and has no NoSchedule/NoExecute taint the pod does not tolerate (Ignore by
// default).
bool SpreadEligible(const TaskInfo& t, const SpreadConstraint& c, const NodeInfo& n) {
  return HasSpreadKeys(t.spread, n) && SpreadIncludes(t, c, n);
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
        node_ports_(args.Bool("predicate.NodePortsEnable", true)),
        spread_(args.Bool("predicate.PodTopologySpreadEnable", true)),
        volumes_(args.Bool("predicate.VolumeBindingEnable", true)),
        volume_zone_(args.Bool("predicate.VolumeZoneEnable", true)),
        volume_limits_(args.Bool("predicate.NodeVolumeLimitsEnable", true)) {}
  std::string Name() const override { return "predicates"; }
  uint32_t Hooks() const override { return kHookPredicate; }

  Fit StaticPredicate(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    if (!n.ready) return Fit::No("node(s) were not ready");
    if (n.unschedulable && !ToleratesCordon(t)) return Fit::No("node(s) were unschedulable");
    if (pod_affinity_) {
      for (const auto& term : t.pod_affinity)
        if (const char* r = InvalidTermReason(term, false)) return Fit::No(r);
      for (const auto& term : t.pod_anti_affinity)
        if (const char* r = InvalidTermReason(term, true)) return Fit::No(r);
    }
    if (node_affinity_ && !MatchesNodeSelectorAndAffinity(t, n)) {
      // Say why when the pod can never fit: an operator Kubernetes does not define matches nothing.
      for (const auto& term : t.required_affinity)
        if (!term.Valid()) return Fit::No("pod's required node affinity uses an operator Kubernetes does not define");
      return Fit::No(kAffinityReason);
    }
    if (taints_)
      if (const Taint* taint = UntoleratedTaint(t, n))
        return Fit::No("node(s) had untolerated taint", taint->key, taint->value);
    if (volumes_ && !t.claims.empty())
      if (Fit f = VolumeFit(ssn.state(), t, n); !f.ok()) return f;
    if (volume_zone_ && !t.claims.empty()) return VolumeZoneFit(ssn.state(), t, n);
    return Fit::Yes();
  }

  Fit DynamicPredicate(const Session& ssn, const TaskInfo& t, const NodeInfo& n) const override {
    // Cards first: a node whose modelled cards cannot serve the pod (ring rule, health, shares) is out
    // whatever else holds (docs/devices.md). A node without a card model is judged on counts alone.
    // Shared cards exist only where a device plugin registered them; whole cards elsewhere are counted.
    if (t.devices.shared > 0 && n.devices.cards.empty()) return Fit::No(kNoSharedCardsReason);
    if (t.devices.detail && t.devices.detail->HasFilter() && t.devices.kind == DeviceKind::kNvidiaGpu &&
        !AcceptsSomeGpu(t.devices, n.devices))
      return Fit::No(kGpuTypeReason);
    if (!t.devices.empty() && !n.devices.cards.empty()) {
      if (!CheckWholeCount(n.devices.topology, static_cast<int>(n.devices.cards.size()), t.devices.whole).ok())
        return Fit::No(kCardCountReason, "accelerator-type", n.devices.model);
      if (!CardsFit(n.devices, t.devices)) return Fit::No(kCardFitReason);
    }
    // Ports before affinity, kube-scheduler's filter order. A conflict needs a port on both sides, so a pod
    // without host ports, or a node where no task holds one, costs a comparison, not a walk of the node.
    if (node_ports_ && !t.host_ports.empty() && n.host_port_tasks > 0 && !PortsFree(ssn, t, n))
      return Fit::No("node(s) didn't have free ports for the requested pod ports");
    const ClusterState& st = ssn.state();
    if (volume_limits_ && !t.claims.empty() && !VolumeLimitsFit(st, t, n)) return Fit::No("node(s) exceed max volume count");
    const bool spread = spread_ && !t.spread.empty();
    const bool affinity =
        pod_affinity_ && !(t.pod_affinity.empty() && t.pod_anti_affinity.empty() && st.anti_affinity_pods() == 0);
    if (!spread && !affinity) return Fit::Yes();
    const Domains& d = DomainsFor(st, t);
    // Spreading before inter-pod affinity: kube-scheduler's filter order. Placing the pod on `n` must leave
    // n's domain at most max_skew matching pods above the emptiest eligible domain.
    for (size_t i = 0; spread && i < t.spread.size(); ++i) {
      const SpreadConstraint& c = t.spread[i];
      const std::string* v = DomainOf(n, c.topology_key);
      if (!v) return Fit::No(kSpreadLabelReason);
      const SpreadCounts& sc = d.spread[i];
      const int64_t min = static_cast<int64_t>(sc.matching.size()) < c.min_domains ? 0 : sc.min;
      auto it = sc.matching.find(*v);
      const int64_t here = it == sc.matching.end() ? 0 : it->second;
      if (here + (c.Matches(t.labels) ? 1 : 0) - min > c.max_skew) return Fit::No(kSpreadReason);
    }
    if (!affinity) return Fit::Yes();
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

 public:
  // The static helpers below are also what CheckPlacement (guard.h) reads: one copy of each rule.
  // kube-scheduler's VolumeBinding for claims that exist: each claim must be there and not being deleted; an
  // unbound claim of a class that binds at once (Immediate, or no class) waits for the volume controller,
  // so no node fits yet; a bound claim's volume must be usable from the node (its required node affinity).
  // Unbound claims of a WaitForFirstConsumer class need a pre-created volume usable from the node, or the
  // class's provisioning there (ClusterState::ChooseVolumes); the binder writes the choice before it binds
  // the pod (docs/scheduler.md, "Volumes").
  static Fit VolumeFit(const ClusterState& st, const TaskInfo& t, const NodeInfo& n) {
    bool waiting = false;
    for (const auto& name : t.claims) {
      const ClaimInfo* c = st.FindClaim(t.ns + "/" + name);
      if (!c) return Fit::No("persistentvolumeclaim not found", "claim", name);
      if (c->deleting) return Fit::No("persistentvolumeclaim is being deleted", "claim", name);
      if (c->volume.empty()) {
        if (!st.FirstConsumerClass(*c)) return Fit::No("pod has unbound immediate PersistentVolumeClaims");
        waiting = true;
        continue;
      }
      const VolumeInfo* v = st.FindVolume(c->volume);
      if (!v) return Fit::No("bound persistentvolume not found", "volume", c->volume);
      if (!v->UsableFrom(n.labels, n.name)) return Fit::No("node(s) had volume node affinity conflict");
    }
    if (waiting && !st.ChooseVolumes(t, n, nullptr)) return Fit::No("node(s) didn't find available persistent volumes to bind");
    return Fit::Yes();
  }

  // kube-scheduler's VolumeZone: a node with zone or region labels takes a pod only if every bound volume's
  // zone/region labels list the node's value ("a__b" lists two zones); a node without such labels takes any.
  // An unbound claim of a WaitForFirstConsumer class is skipped; the other failures mirror VolumeFit's, for
  // when volume binding is switched off.
  static Fit VolumeZoneFit(const ClusterState& st, const TaskInfo& t, const NodeInfo& n) {
    static const std::array<std::string, 4> kKeys = {
        "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region", "topology.kubernetes.io/zone"};
    if (std::none_of(kKeys.begin(), kKeys.end(), [&](const std::string& k) { return n.labels.count(k) > 0; }))
      return Fit::Yes();
    for (const auto& name : t.claims) {
      const ClaimInfo* c = st.FindClaim(t.ns + "/" + name);
      if (!c) return Fit::No("persistentvolumeclaim not found", "claim", name);
      if (c->volume.empty()) {
        if (st.FirstConsumerClass(*c)) continue;
        return Fit::No("pod has unbound immediate PersistentVolumeClaims");
      }
      const VolumeInfo* v = st.FindVolume(c->volume);
      if (!v) return Fit::No("bound persistentvolume not found", "volume", c->volume);
      for (const auto& [key, value] : v->labels) {
        if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) continue;
        auto it = n.labels.find(key);
        if (!ZoneListHas(value, it == n.labels.end() ? std::string_view() : std::string_view(it->second)))
          return Fit::No("node(s) had no available volume zone");
      }
    }
    return Fit::Yes();
  }
  // kube's LabelZonesToSet: "__"-separated, each entry trimmed; a list with an empty entry is not a list, and
  // kube then skips the label (true).
  static bool ZoneListHas(std::string_view list, std::string_view want) {
    bool found = false;
    size_t start = 0;
    while (true) {
      const size_t end = list.find("__", start);
      std::string_view z = list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      while (!z.empty() && std::isspace(static_cast<unsigned char>(z.front()))) z.remove_prefix(1);
      while (!z.empty() && std::isspace(static_cast<unsigned char>(z.back()))) z.remove_suffix(1);
      if (z.empty()) return true;
      found = found || z == want;
      if (end == std::string_view::npos) break;
      start = end + 2;
    }
    return found;
  }

  // kube-scheduler's NodeVolumeLimits (CSI): the distinct volumes of the node's pods plus the pod's new ones,
  // counted per driver, must stay within the node's limit for that driver (its CSINode's count, else an
  // attachable-volumes-csi-<driver> entry of its allocatable). A bound claim counts as its volume's
  // (driver, handle); an unbound one as a volume of its class's provisioner. Volumes of in-tree plugins
  // (no spec.csi; provisioners kubernetes.io/*) are not counted (kube counts them only under CSI migration).
  static bool VolumeLimitsFit(const ClusterState& st, const TaskInfo& t, const NodeInfo& n) {
    const auto* csi = st.CsiLimits(n.name);
    if (n.volume_limits.empty() && (!csi || csi->empty())) return true;
    std::map<std::string, std::string> fresh;  // "driver/handle" -> limit key
    AttachableVolumes(st, t, &fresh);
    if (fresh.empty()) return true;
    std::map<std::string, int> attached;  // limit key -> distinct volumes on the node
    if (n.claim_tasks > 0) {
      std::map<std::string, std::string> on_node;
      st.ForEachTaskOnNode(n.name, [&](const TaskInfo& o) {
        if (o.claims.empty() || o.uid == t.uid || !OnNodeForScheduling(o.status)) return;
        AttachableVolumes(st, o, &on_node);
      });
      for (const auto& [volume, key] : on_node) {
        fresh.erase(volume);  // a volume already attached is not attached again
        ++attached[key];
      }
    }
    std::map<std::string, int> wanted;
    for (const auto& [volume, key] : fresh) ++wanted[key];
    for (const auto& [key, count] : wanted) {
      std::optional<int64_t> limit;
      if (csi)
        if (auto it = csi->find(key); it != csi->end()) limit = it->second;
      if (!limit)
        if (auto it = n.volume_limits.find(key); it != n.volume_limits.end()) limit = it->second;
      if (limit && attached[key] + count > *limit) return false;
    }
    return true;
  }
  static void AttachableVolumes(const ClusterState& st, const TaskInfo& t, std::map<std::string, std::string>* out) {
    for (const auto& name : t.claims) {
      const ClaimInfo* c = st.FindClaim(t.ns + "/" + name);
      if (!c) continue;
      std::string driver, handle;
      const VolumeInfo* v = c->volume.empty() ? nullptr : st.FindVolume(c->volume);
      if (v) {
        driver = v->csi_driver;
        handle = v->csi_handle;
      } else if (const StorageClassInfo* sc = c->storage_class.empty() ? nullptr : st.FindStorageClass(c->storage_class)) {
        // Not bound yet (or its volume not seen): one volume of the class's driver per claim.
        if (!sc->provisioner.starts_with("kubernetes.io/")) {
          driver = sc->provisioner;
          handle = "\x01" + t.ns + "/" + name;  // cannot be a real handle: never merges with a bound volume
        }
      }
      if (driver.empty() || handle.empty()) continue;
      out->emplace(driver + "/" + handle, CsiLimitKey(driver));
    }
  }

  // NodePorts: every host port the pod wants must not conflict with one held by a task that occupies the
  // node or is pipelined onto it (kube-scheduler's NodeInfo holds terminating pods and their ports too).
  static bool PortsFree(const Session& ssn, const TaskInfo& t, const NodeInfo& n) { return PortsFree(ssn.state(), t, n); }
  static bool PortsFree(const ClusterState& st, const TaskInfo& t, const NodeInfo& n) {
    bool free = true;
    st.ForEachTaskOnNode(n.name, [&](const TaskInfo& other) {
      if (!free || other.host_ports.empty() || other.uid == t.uid) return;
      if (!OnNodeForScheduling(other.status)) return;
      for (const auto& want : t.host_ports)
        for (const auto& held : other.host_ports)
          if (want.Conflicts(held)) { free = false; return; }
    });
    return free;
  }

 private:
  // For one pending pod, the domains (topology values) that the filter asks about, with the number of placed
  // pods that put each domain there. Computed with one walk over the placed pods and kept by a
  // PlacedPodsMemo (plugins.h): reused for every node, carried across one placement.
  using Counts = std::unordered_map<std::string, int>;  // domain value -> placed pods
  // One spread constraint: every eligible domain (zero included: an empty domain is the minimum) with the
  // matching pods in it, and the smallest count (INT64_MAX when no node is eligible, as kube-scheduler's
  // critical paths start).
  struct SpreadCounts {
    Counts matching;
    int64_t min = std::numeric_limits<int64_t>::max();
    bool dirty = false;  // a count moved since `min` was computed (most placements move none: O(domains) saved)
    void RecomputeMin() {
      min = std::numeric_limits<int64_t>::max();
      for (const auto& [v, count] : matching) min = std::min<int64_t>(min, count);
      dirty = false;
    }
  };
  struct Domains {
    TaskInfo task;      // the question: namespace, labels and terms (not the uid: a gang's pods share answers)
    std::unordered_map<std::string, Counts> existing_anti;  // topology key -> domains
    std::vector<Counts> anti, affinity;                      // per term of the pod
    int affinity_matches = 0;  // placed pods (with a domain) that match every affinity term, per term
    bool self_match = false;   // the pod matches every one of its own affinity terms
    std::vector<SpreadCounts> spread;  // per spread constraint of the pod
  };

  static bool SameQuestion(const TaskInfo& a, const TaskInfo& b) {
    if (!(a.ns == b.ns && a.labels == b.labels && a.pod_affinity == b.pod_affinity &&
          a.pod_anti_affinity == b.pod_anti_affinity && a.spread == b.spread))
      return false;
    // Which nodes count for spreading depends on the pod's node constraints.
    return a.spread.empty() || (a.node_selector == b.node_selector && a.required_affinity == b.required_affinity &&
                                a.tolerations == b.tolerations);
  }
  static bool Placed(const TaskInfo& e) {
    return !e.node.empty() && OnNodeForScheduling(e.status);
  }
  static void Bump(Counts& c, const std::string& v, int sign) {
    int& n = c[v];
    n += sign;
    if (n <= 0) c.erase(v);
  }

  // Adds (sign +1) or removes (-1) what placed pod `e`, on node `n` with status `status`, contributes to the
  // question `t`: through e's anti-affinity (Existing), through t's own terms (Own) and to t's spreading.
  static void Contribute(Domains& d, const TaskInfo& t, const TaskInfo& e, TaskStatus status, const NodeInfo& n,
                         int sign) {
    ContributeExisting(d, t, e, n, sign);
    ContributeOwn(d, t, e, n, sign);
    if (CountsForSpread(status)) ContributeSpread(d, t, e, n, sign);
  }
  // Spreading counts pods of the pod's own namespace on eligible nodes (their domains already in the map).
  static void ContributeSpread(Domains& d, const TaskInfo& t, const TaskInfo& e, const NodeInfo& n, int sign) {
    if (e.ns != t.ns) return;
    for (size_t i = 0; i < t.spread.size(); ++i) {
      const SpreadConstraint& c = t.spread[i];
      if (!c.Matches(e.labels) || !SpreadEligible(t, c, n)) continue;
      auto it = d.spread[i].matching.find(*DomainOf(n, c.topology_key));
      if (it != d.spread[i].matching.end()) {
        it->second += sign;
        d.spread[i].dirty = true;
      }
    }
  }
  static void ContributeExisting(Domains& d, const TaskInfo& t, const TaskInfo& e, const NodeInfo& n, int sign) {
    for (const auto& term : e.pod_anti_affinity)
      if (term.Selects(t))
        if (const std::string* v = DomainOf(n, term.topology_key)) Bump(d.existing_anti[term.topology_key], *v, sign);
  }
  static void ContributeOwn(Domains& d, const TaskInfo& t, const TaskInfo& e, const NodeInfo& n, int sign) {
    for (size_t i = 0; i < t.pod_anti_affinity.size(); ++i)
      if (t.pod_anti_affinity[i].Selects(e))
        if (const std::string* v = DomainOf(n, t.pod_anti_affinity[i].topology_key)) Bump(d.anti[i], *v, sign);
    // An existing pod counts for affinity only if it matches every term (kube-scheduler).
    if (t.pod_affinity.empty()) return;
    for (const auto& term : t.pod_affinity)
      if (!term.Selects(e)) return;
    for (size_t i = 0; i < t.pod_affinity.size(); ++i)
      if (const std::string* v = DomainOf(n, t.pod_affinity[i].topology_key)) {
        Bump(d.affinity[i], *v, sign);
        d.affinity_matches += sign;
      }
  }

  void Rebuild(Domains& d, const ClusterState& st, const TaskInfo& t) const {
    d.spread.assign(t.spread.size(), {});
    if (!t.spread.empty()) {
      st.ForEachNode([&](const NodeInfo& n) {
        for (size_t i = 0; i < t.spread.size(); ++i)
          if (SpreadEligible(t, t.spread[i], n)) d.spread[i].matching.try_emplace(*DomainOf(n, t.spread[i].topology_key), 0);
      });
      st.ForEachPlacedTaskInNamespace(t.ns, [&](const TaskInfo& e) {
        if (!CountsForSpread(e.status)) return;
        if (const NodeInfo* n = st.FindNode(e.node)) ContributeSpread(d, t, e, *n, +1);
      });
      for (auto& sc : d.spread) sc.RecomputeMin();
    }
    d.existing_anti.clear();
    d.anti.assign(t.pod_anti_affinity.size(), {});
    d.affinity.assign(t.pod_affinity.size(), {});
    d.affinity_matches = 0;
    d.self_match = true;
    for (const auto& term : t.pod_affinity) d.self_match = d.self_match && term.Selects(t);
    // The other pods' anti-affinity: walk just the pods that have some.
    for (const TaskInfo* e : st.anti_affinity_tasks())
      if (Placed(*e))
        if (const NodeInfo* n = st.FindNode(e->node)) ContributeExisting(d, t, *e, *n, +1);
    if (t.pod_affinity.empty() && t.pod_anti_affinity.empty()) return;
    // The pod's own terms select only in their namespaces: walk those (every placed pod when a term takes
    // every namespace).
    bool every_namespace = false;
    std::vector<const std::string*> namespaces;
    for (const auto* terms : {&t.pod_affinity, &t.pod_anti_affinity})
      for (const auto& term : *terms) {
        every_namespace = every_namespace || term.all_namespaces;
        for (const auto& ns : term.namespaces)
          if (std::find_if(namespaces.begin(), namespaces.end(), [&](const std::string* x) { return *x == ns; }) ==
              namespaces.end())
            namespaces.push_back(&ns);
      }
    auto own = [&](const NodeInfo& n, const TaskInfo& e) { ContributeOwn(d, t, e, n, +1); };
    if (every_namespace) {
      st.ForEachPlacedTask(own);
    } else {
      for (const std::string* ns : namespaces)
        st.ForEachPlacedTaskInNamespace(*ns, [&](const TaskInfo& e) {
          if (const NodeInfo* n = st.FindNode(e.node)) own(*n, e);
        });
    }
  }

  const Domains& DomainsFor(const ClusterState& st, const TaskInfo& t) const {
    return memo_.Get(
        st, [&](const Domains& d) { return SameQuestion(d.task, t); },
        [&](Domains& d) {
          d.task = TaskInfo{};
          d.task.ns = t.ns;
          d.task.labels = t.labels;
          d.task.pod_affinity = t.pod_affinity;
          d.task.pod_anti_affinity = t.pod_anti_affinity;
          d.task.spread = t.spread;
          d.task.node_selector = t.node_selector;
          d.task.required_affinity = t.required_affinity;
          d.task.tolerations = t.tolerations;
        },
        [&](Domains& d) { Rebuild(d, st, d.task); },
        [](Domains& d, const TaskInfo& e, TaskStatus status, const NodeInfo& n, int sign) {
          Contribute(d, d.task, e, status, n, sign);
        },
        [](Domains& d) {
          for (auto& sc : d.spread)
            if (sc.dirty) sc.RecomputeMin();
        });
  }

  bool node_affinity_, taints_, pod_affinity_, node_ports_, spread_, volumes_, volume_zone_, volume_limits_;
  // Single-threaded like ClusterState: the scheduler runs one cycle at a time. A few questions at once: the
  // allocate loop alternates between a group's representative and the task being placed.
  mutable PlacedPodsMemo<Domains, 8> memo_;
};

}  // namespace

Made NewPredicates(const PluginOption& o) { return Make<PredicatesPlugin>(o); }

}  // namespace tephra::sched::plugins

namespace tephra::sched {

namespace {

// The whole cards, or the shares, `t` holds on `n`: each one named, healthy, and not held beyond what the card
// gives (one owner, or max_sharers sharers within its memory and compute). ClusterState keeps the holds.
std::string CardProblem(const TaskInfo& t, const NodeInfo& n) {
  if (t.devices.empty() || n.devices.cards.empty()) return {};
  const size_t want = static_cast<size_t>(t.devices.whole > 0 ? t.devices.whole : t.devices.shared);
  if (t.cards.size() != want)
    return "holds " + std::to_string(t.cards.size()) + " card(s), asks for " + std::to_string(want);
  for (const auto& id : t.cards) {
    const int p = n.devices.FindCard(id);
    if (p < 0) return "card " + id + " is not on the node";
    const Card& c = n.devices.cards[static_cast<size_t>(p)];
    if (!c.Healthy()) return "card " + id + " is not healthy";
    if (t.devices.whole > 0 && (c.owners > 1 || c.sharers > 0))
      return "card " + id + " has " + std::to_string(c.owners) + " owner(s) and " + std::to_string(c.sharers) + " sharer(s)";
    if (t.devices.shared > 0) {
      if (c.owners > 0 || c.sharers > c.max_sharers)
        return "card " + id + " has " + std::to_string(c.sharers) + " sharer(s) of " + std::to_string(c.max_sharers) +
               " and " + std::to_string(c.owners) + " owner(s)";
      if (c.memory > 0 && c.used_memory > c.memory)
        return "card " + id + " has " + std::to_string(c.used_memory) + " MiB of " + std::to_string(c.memory) + " MiB held";
      if (c.used_cores > 1000) return "card " + id + " has " + std::to_string(c.used_cores) + "/1000 of its compute held";
    }
  }
  return {};
}

}  // namespace

PlacementCheck CheckPlacement(const ClusterState& st, const TaskInfo& t, const std::string& node_name) {
  using plugins::PredicatesPlugin;
  const NodeInfo* np = st.FindNode(node_name);
  if (!np) return {kGuardNodeGone, "node " + node_name + " is not in the scheduler's cache"};
  const NodeInfo& n = *np;
  if (!n.ready) return {kGuardNotReady, "node " + n.name + " is not Ready"};
  if (n.unschedulable && !plugins::ToleratesCordon(t))
    return {kGuardCordoned, "node " + n.name + " is unschedulable (cordoned or avoided after a fault)"};
  if (!plugins::MatchesNodeSelectorAndAffinity(t, n)) {
    std::string d = "node " + n.name + " does not match the pod's";
    for (const auto& [k, v] : t.node_selector) {
      auto it = n.labels.find(k);
      if (it == n.labels.end() || it->second != v)
        return {kGuardSelector, d + " nodeSelector " + k + "=" + v + " (node has " +
                                    (it == n.labels.end() ? "no such label" : k + "=" + it->second) + ")"};
    }
    return {kGuardSelector, d + " required node affinity"};
  }
  if (const Taint* taint = plugins::UntoleratedTaint(t, n))
    return {kGuardTaint, "node " + n.name + " has taint " + taint->key + "=" + taint->value + ":" +
                             (taint->effect == TaintEffect::kNoExecute ? "NoExecute" : "NoSchedule") +
                             " that the pod does not tolerate"};
  // The task is counted in `used`: every dimension it asks for must still be within the node's allocatable.
  for (int d = 0; d < kMaxResources; ++d) {
    if (t.request.Get(d) <= 0 || n.used.Get(d) <= n.allocatable.Get(d)) continue;
    const std::string& name = d < st.resources().size() ? st.resources().Name(d) : std::to_string(d);
    return {kGuardResources, "node " + n.name + " has " + std::to_string(n.used.Get(d)) + " of " + name +
                                 " held against " + std::to_string(n.allocatable.Get(d)) + " allocatable"};
  }
  if (std::string p = CardProblem(t, n); !p.empty()) return {kGuardDevices, "node " + n.name + ": " + p};
  if (!t.host_ports.empty() && n.host_port_tasks > 0 && !PredicatesPlugin::PortsFree(st, t, n))
    return {kGuardHostPorts, "node " + n.name + " has a pod holding one of the pod's host ports"};
  if (!t.claims.empty()) {
    // A claim bound since the decision names its volume; one still waiting for its first consumer was
    // checked (and its volume set aside) when the decision was made.
    Fit f = PredicatesPlugin::VolumeZoneFit(st, t, n);
    if (f.ok()) {
      for (const auto& name : t.claims) {
        const ClaimInfo* c = st.FindClaim(t.ns + "/" + name);
        if (!c || c->volume.empty()) continue;
        const VolumeInfo* v = st.FindVolume(c->volume);
        if (v && !v->UsableFrom(n.labels, n.name)) {
          f = Fit::No("node(s) had volume node affinity conflict");
          break;
        }
      }
    }
    if (!f.ok()) return {kGuardVolumes, "node " + n.name + ": " + f.Text()};
  }
  return {};
}

}  // namespace tephra::sched
