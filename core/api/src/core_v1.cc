#include "tephra/api/core_v1.h"

#include <array>

#include "codec_macros.h"

namespace tephra::api {

// --- selectors (core types: unknown members are kept as JSON text, see tephra/core/labels.h) ---
namespace {
void KeepUnknown(const json& extra, core::UnknownFields* out) {
  out->clear();
  if (!extra.is_object()) return;
  for (auto it = extra.begin(); it != extra.end(); ++it) out->emplace_back(it.key(), it.value().dump());
}
json RestoreUnknown(const core::UnknownFields& unknown) {
  if (unknown.empty()) return nullptr;
  json extra = json::object();
  // The text was produced by dump() on decode, so it parses; a hand-made entry that does not is dropped
  // rather than thrown across the module boundary.
  for (const auto& [k, text] : unknown) extra[k] = json::parse(text, nullptr, /*allow_exceptions=*/false);
  for (auto it = extra.begin(); it != extra.end();)
    it = it.value().is_discarded() ? extra.erase(it) : std::next(it);
  return extra;
}
}  // namespace

Status Decode(const json& j, core::SelectorRequirement* out) {
  *out = core::SelectorRequirement{};
  json extra;
  std::string op;
  Status s;
  {
    FieldReader r(j, &extra);
    r.Get("key", &out->key).Get("operator", &op).Get("values", &out->values);
    s = r.status();
  }
  out->op = core::ParseSelectorOp(op);
  if (out->op == core::SelectorOp::kInvalid) out->op_text = std::move(op);
  KeepUnknown(extra, &out->unknown);
  return s;
}
void Encode(const core::SelectorRequirement& in, json* j) {
  FieldWriter w(RestoreUnknown(in.unknown), j);
  w.SetAlways("key", in.key);
  w.SetAlways("operator", in.op == core::SelectorOp::kInvalid ? in.op_text : std::string(core::SelectorOpName(in.op)));
  w.Set("values", in.values);
}

Status Decode(const json& j, core::LabelSelector* out) {
  *out = core::LabelSelector{};
  json extra;
  Status s;
  {
    FieldReader r(j, &extra);
    r.Get("matchLabels", &out->match_labels).Get("matchExpressions", &out->match_expressions);
    s = r.status();
  }
  KeepUnknown(extra, &out->unknown);
  return s;
}
void Encode(const core::LabelSelector& in, json* j) {
  FieldWriter w(RestoreUnknown(in.unknown), j);
  w.Set("matchLabels", in.match_labels);
  w.Set("matchExpressions", in.match_expressions);
}

Status Decode(const json& j, core::NodeSelectorTerm* out) {
  *out = core::NodeSelectorTerm{};
  json extra;
  Status s;
  {
    FieldReader r(j, &extra);
    r.Get("matchExpressions", &out->match_expressions).Get("matchFields", &out->match_fields);
    s = r.status();
  }
  KeepUnknown(extra, &out->unknown);
  return s;
}
void Encode(const core::NodeSelectorTerm& in, json* j) {
  FieldWriter w(RestoreUnknown(in.unknown), j);
  w.Set("matchExpressions", in.match_expressions);
  w.Set("matchFields", in.match_fields);
}

// --- affinity / topology spread ---
#define NSEL_FIELDS(F, A) A("nodeSelectorTerms", node_selector_terms)
TEPHRA_API_CODEC(NodeSelector, NSEL_FIELDS)
#define PST_FIELDS(F, A) A("weight", weight) A("preference", preference)
TEPHRA_API_CODEC(PreferredSchedulingTerm, PST_FIELDS)
#define NAFF_FIELDS(F, A)                                                                  \
  F("requiredDuringSchedulingIgnoredDuringExecution", required_during_scheduling_ignored_during_execution) \
      F("preferredDuringSchedulingIgnoredDuringExecution", preferred_during_scheduling_ignored_during_execution)
TEPHRA_API_CODEC(NodeAffinity, NAFF_FIELDS)
#define PAT_FIELDS(F, A)                                                                                     \
  F("labelSelector", label_selector) F("namespaces", namespaces) A("topologyKey", topology_key)          \
      F("namespaceSelector", namespace_selector) F("matchLabelKeys", match_label_keys)                     \
          F("mismatchLabelKeys", mismatch_label_keys)
TEPHRA_API_CODEC(PodAffinityTerm, PAT_FIELDS)
#define WPAT_FIELDS(F, A) A("weight", weight) A("podAffinityTerm", pod_affinity_term)
TEPHRA_API_CODEC(WeightedPodAffinityTerm, WPAT_FIELDS)
#define PAFF_FIELDS(F, A)                                                                  \
  F("requiredDuringSchedulingIgnoredDuringExecution", required_during_scheduling_ignored_during_execution) \
      F("preferredDuringSchedulingIgnoredDuringExecution", preferred_during_scheduling_ignored_during_execution)
TEPHRA_API_CODEC(PodAffinity, PAFF_FIELDS)
#define AFF_FIELDS(F, A) \
  F("nodeAffinity", node_affinity) F("podAffinity", pod_affinity) F("podAntiAffinity", pod_anti_affinity)
TEPHRA_API_CODEC(Affinity, AFF_FIELDS)
#define TSC_FIELDS(F, A)                                                                                     \
  A("maxSkew", max_skew) A("topologyKey", topology_key) A("whenUnsatisfiable", when_unsatisfiable)         \
      F("labelSelector", label_selector) F("minDomains", min_domains) F("nodeAffinityPolicy", node_affinity_policy) \
          F("nodeTaintsPolicy", node_taints_policy) F("matchLabelKeys", match_label_keys)
TEPHRA_API_CODEC(TopologySpreadConstraint, TSC_FIELDS)

#define OREF_FIELDS(F, A)                                                                                   \
  F("kind", kind) F("namespace", namespace_) F("name", name) F("uid", uid) F("apiVersion", api_version) \
      F("resourceVersion", resource_version) F("fieldPath", field_path)
TEPHRA_API_CODEC(ObjectReference, OREF_FIELDS)
#define KTP_FIELDS(F, A) A("key", key) A("path", path) F("mode", mode)
TEPHRA_API_CODEC(KeyToPath, KTP_FIELDS)

// --- containers ---
#define ENV_FIELDS(F, A) A("name", name) F("value", value) F("valueFrom", value_from)
TEPHRA_API_CODEC(EnvVar, ENV_FIELDS)
#define PORT_FIELDS(F, A) \
  F("name", name) F("hostPort", host_port) A("containerPort", container_port) F("protocol", protocol) F("hostIP", host_ip)
TEPHRA_API_CODEC(ContainerPort, PORT_FIELDS)
#define RR_FIELDS(F, A) F("limits", limits) F("requests", requests)
TEPHRA_API_CODEC(ResourceRequirements, RR_FIELDS)
#define VM_FIELDS(F, A)                                                                                  \
  A("name", name) F("readOnly", read_only) A("mountPath", mount_path) F("subPath", sub_path) \
      F("mountPropagation", mount_propagation) F("subPathExpr", sub_path_expr)
TEPHRA_API_CODEC(VolumeMount, VM_FIELDS)
#define CONTAINER_FIELDS(F, A)                                                                                 \
  A("name", name) F("image", image) F("command", command) F("args", args) F("workingDir", working_dir)     \
      F("ports", ports) F("envFrom", env_from) F("env", env) F("resources", resources)                     \
          F("volumeMounts", volume_mounts) F("imagePullPolicy", image_pull_policy)
TEPHRA_API_CODEC(Container, CONTAINER_FIELDS)

// --- volumes ---
#define PVCVS_FIELDS(F, A) A("claimName", claim_name) F("readOnly", read_only)
TEPHRA_API_CODEC(PersistentVolumeClaimVolumeSource, PVCVS_FIELDS)
#define CMVS_FIELDS(F, A) F("name", name) F("items", items) F("defaultMode", default_mode) F("optional", optional)
TEPHRA_API_CODEC(ConfigMapVolumeSource, CMVS_FIELDS)
#define SVS_FIELDS(F, A) \
  F("secretName", secret_name) F("items", items) F("defaultMode", default_mode) F("optional", optional)
TEPHRA_API_CODEC(SecretVolumeSource, SVS_FIELDS)
#define VOLUME_FIELDS(F, A)                                                                              \
  A("name", name) F("persistentVolumeClaim", persistent_volume_claim) F("configMap", config_map) \
      F("secret", secret) F("emptyDir", empty_dir) F("hostPath", host_path)
TEPHRA_API_CODEC(Volume, VOLUME_FIELDS)

// --- scheduling bits ---
#define TOL_FIELDS(F, A)                                                                      \
  F("key", key) F("operator", operator_) F("value", value) F("effect", effect) \
      F("tolerationSeconds", toleration_seconds)
TEPHRA_API_CODEC(Toleration, TOL_FIELDS)
#define TAINT_FIELDS(F, A) A("key", key) F("value", value) A("effect", effect) F("timeAdded", time_added)
TEPHRA_API_CODEC(Taint, TAINT_FIELDS)
#define GATE_FIELDS(F, A) A("name", name)
TEPHRA_API_CODEC(PodSchedulingGate, GATE_FIELDS)

// --- pod ---
#define PODSPEC_FIELDS(F, A)                                                                                   \
  F("volumes", volumes) F("initContainers", init_containers) A("containers", containers)                   \
      F("restartPolicy", restart_policy) F("terminationGracePeriodSeconds", termination_grace_period_seconds) \
          F("activeDeadlineSeconds", active_deadline_seconds) F("dnsPolicy", dns_policy)                       \
              F("nodeSelector", node_selector) F("serviceAccountName", service_account_name)                   \
                  F("nodeName", node_name) F("hostNetwork", host_network) F("hostname", hostname)              \
                      F("subdomain", subdomain) F("affinity", affinity) F("schedulerName", scheduler_name)     \
                          F("tolerations", tolerations) F("priorityClassName", priority_class_name)            \
                              F("priority", priority) F("preemptionPolicy", preemption_policy)                 \
                                  F("overhead", overhead) F("schedulingGates", scheduling_gates)     \
                                      F("topologySpreadConstraints", topology_spread_constraints)
TEPHRA_API_CODEC(PodSpec, PODSPEC_FIELDS)
#define PTS_FIELDS(F, A) F("metadata", metadata) F("spec", spec)
TEPHRA_API_CODEC(PodTemplateSpec, PTS_FIELDS)
#define PODCOND_FIELDS(F, A)                                                                          \
  A("type", type) A("status", status) F("lastProbeTime", last_probe_time)                         \
      F("lastTransitionTime", last_transition_time) F("reason", reason) F("message", message)
TEPHRA_API_CODEC(PodCondition, PODCOND_FIELDS)
#define CSW_FIELDS(F, A) F("reason", reason) F("message", message)
TEPHRA_API_CODEC(ContainerStateWaiting, CSW_FIELDS)
#define CSR_FIELDS(F, A) F("startedAt", started_at)
TEPHRA_API_CODEC(ContainerStateRunning, CSR_FIELDS)
#define CST_FIELDS(F, A)                                                                              \
  A("exitCode", exit_code) F("signal", signal) F("reason", reason) F("message", message)          \
      F("startedAt", started_at) F("finishedAt", finished_at) F("containerID", container_id)
TEPHRA_API_CODEC(ContainerStateTerminated, CST_FIELDS)
#define CSTATE_FIELDS(F, A) F("waiting", waiting) F("running", running) F("terminated", terminated)
TEPHRA_API_CODEC(ContainerState, CSTATE_FIELDS)
#define CSTATUS_FIELDS(F, A)                                                                                 \
  A("name", name) F("state", state) F("lastState", last_state) A("ready", ready)                         \
      A("restartCount", restart_count) A("image", image) A("imageID", image_id) F("containerID", container_id) \
          F("started", started)
TEPHRA_API_CODEC(ContainerStatus, CSTATUS_FIELDS)
#define PODSTATUS_FIELDS(F, A)                                                                                \
  F("phase", phase) F("conditions", conditions) F("message", message) F("reason", reason)                 \
      F("nominatedNodeName", nominated_node_name) F("hostIP", host_ip) F("podIP", pod_ip) F("podIPs", pod_ips) \
          F("hostIPs", host_ips) F("startTime", start_time) F("initContainerStatuses", init_container_statuses) \
              F("containerStatuses", container_statuses) F("qosClass", qos_class)
TEPHRA_API_CODEC(PodStatus, PODSTATUS_FIELDS)
#define POD_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Pod, POD_FIELDS, "", "v1", "pods", true)

namespace {
void DropMeta(ObjectMeta* m) {
  m->extra = nullptr;
  for (auto& o : m->owner_references) o.extra = nullptr;
}
// Keeps what the scheduler (requests, ports, image) and the controllers (names) read from cached pods;
// env, command, args and mounts are only ever needed when building a pod, never from a cache.
void DropContainer(Container* c) {
  c->extra = nullptr;
  c->env_from = nullptr;
  std::vector<EnvVar>().swap(c->env);
  std::vector<std::string>().swap(c->command);
  std::vector<std::string>().swap(c->args);
  std::vector<VolumeMount>().swap(c->volume_mounts);
  std::string().swap(c->working_dir);
  for (auto& p : c->ports) p.extra = nullptr;
  c->resources.extra = nullptr;
}
void DropContainerState(ContainerState* s) {
  s->extra = nullptr;
  if (s->waiting) s->waiting->extra = nullptr;
  if (s->running) s->running->extra = nullptr;
  if (s->terminated) {
    s->terminated->extra = nullptr;
    std::string().swap(s->terminated->message);
    std::string().swap(s->terminated->container_id);
  }
}
void DropContainerStatus(ContainerStatus* s) {
  s->extra = nullptr;
  std::string().swap(s->image_id);
  std::string().swap(s->container_id);
  DropContainerState(&s->state);
  DropContainerState(&s->last_state);
}
}  // namespace

namespace {
void DropSelectorUnknown(core::LabelSelector* s) {
  s->unknown.clear();
  for (auto& r : s->match_expressions) r.unknown.clear();
}
void DropTermUnknown(core::NodeSelectorTerm* t) {
  t->unknown.clear();
  for (auto& r : t->match_expressions) r.unknown.clear();
  for (auto& r : t->match_fields) r.unknown.clear();
}
void DropPodTermUnknown(PodAffinityTerm* t) {
  t->extra = nullptr;
  if (t->label_selector) DropSelectorUnknown(&*t->label_selector);
  if (t->namespace_selector) DropSelectorUnknown(&*t->namespace_selector);
}
void DropAffinityUnknown(Affinity* a) {
  a->extra = nullptr;
  if (a->node_affinity) {
    a->node_affinity->extra = nullptr;
    if (auto& r = a->node_affinity->required_during_scheduling_ignored_during_execution) {
      r->extra = nullptr;
      for (auto& t : r->node_selector_terms) DropTermUnknown(&t);
    }
    for (auto& p : a->node_affinity->preferred_during_scheduling_ignored_during_execution) {
      p.extra = nullptr;
      DropTermUnknown(&p.preference);
    }
  }
  for (auto* pa : {a->pod_affinity ? &*a->pod_affinity : nullptr, a->pod_anti_affinity ? &*a->pod_anti_affinity : nullptr}) {
    if (!pa) continue;
    pa->extra = nullptr;
    for (auto& t : pa->required_during_scheduling_ignored_during_execution) DropPodTermUnknown(&t);
    for (auto& w : pa->preferred_during_scheduling_ignored_during_execution) {
      w.extra = nullptr;
      DropPodTermUnknown(&w.pod_affinity_term);
    }
  }
}
}  // namespace

void DropUnknown(Pod* pod) {
  pod->extra = nullptr;
  DropMeta(&pod->metadata);
  PodSpec& s = pod->spec;
  s.extra = nullptr;
  // Only PVC-backed volumes matter to a cache reader (volume binding / limits); configMap, secret,
  // projected and emptyDir volumes are dropped.
  std::erase_if(s.volumes, [](const Volume& v) { return !v.persistent_volume_claim; });
  for (auto& v : s.volumes) {
    v.extra = nullptr;
    v.persistent_volume_claim->extra = nullptr;
  }
  s.volumes.shrink_to_fit();
  for (auto& c : s.init_containers) DropContainer(&c);
  for (auto& c : s.containers) DropContainer(&c);
  for (auto& t : s.tolerations) t.extra = nullptr;
  for (auto& g : s.scheduling_gates) g.extra = nullptr;
  if (s.affinity) DropAffinityUnknown(&*s.affinity);
  for (auto& c : s.topology_spread_constraints) {
    c.extra = nullptr;
    if (c.label_selector) DropSelectorUnknown(&*c.label_selector);
  }
  PodStatus& st = pod->status;
  st.extra = nullptr;
  st.pod_ips = nullptr;
  st.host_ips = nullptr;
  for (auto& c : st.conditions) {
    c.extra = nullptr;
    std::string().swap(c.message);
  }
  std::string().swap(st.message);
  for (auto& c : st.init_container_statuses) DropContainerStatus(&c);
  for (auto& c : st.container_statuses) DropContainerStatus(&c);
}

// --- node ---
#define NODESPEC_FIELDS(F, A)                                                                          \
  F("podCIDR", pod_cidr) F("podCIDRs", pod_cidrs) F("providerID", provider_id)                     \
      F("unschedulable", unschedulable) F("taints", taints)
TEPHRA_API_CODEC(NodeSpec, NODESPEC_FIELDS)
#define NODECOND_FIELDS(F, A)                                                                      \
  A("type", type) A("status", status) F("lastHeartbeatTime", last_heartbeat_time)              \
      F("lastTransitionTime", last_transition_time) F("reason", reason) F("message", message)
TEPHRA_API_CODEC(NodeCondition, NODECOND_FIELDS)
#define NODEADDR_FIELDS(F, A) A("type", type) A("address", address)
TEPHRA_API_CODEC(NodeAddress, NODEADDR_FIELDS)
#define NODESTATUS_FIELDS(F, A)                                                                                  \
  F("capacity", capacity) F("allocatable", allocatable) F("phase", phase) F("conditions", conditions)        \
      F("addresses", addresses) F("daemonEndpoints", daemon_endpoints) F("nodeInfo", node_info)
TEPHRA_API_CODEC(NodeStatus, NODESTATUS_FIELDS)
#define NODE_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Node, NODE_FIELDS, "", "v1", "nodes", false)

void DropUnknown(Node* node) {
  node->extra = nullptr;
  DropMeta(&node->metadata);
  node->spec.extra = nullptr;
  for (auto& t : node->spec.taints) t.extra = nullptr;
  NodeStatus& st = node->status;
  st.extra = nullptr;
  st.daemon_endpoints = nullptr;
  st.node_info = nullptr;
  for (auto& c : st.conditions) c.extra = nullptr;
  for (auto& a : st.addresses) a.extra = nullptr;
}

// --- service ---
#define SVCPORT_FIELDS(F, A)                                                                              \
  F("name", name) F("protocol", protocol) F("appProtocol", app_protocol) A("port", port)              \
      F("targetPort", target_port) F("nodePort", node_port)
TEPHRA_API_CODEC(ServicePort, SVCPORT_FIELDS)
#define SVCSPEC_FIELDS(F, A)                                                                              \
  F("ports", ports) F("selector", selector) F("clusterIP", cluster_ip) F("type", type)                \
      F("publishNotReadyAddresses", publish_not_ready_addresses)
TEPHRA_API_CODEC(ServiceSpec, SVCSPEC_FIELDS)
#define SVC_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Service, SVC_FIELDS, "", "v1", "services", true)

// --- configmap / secret ---
#define CM_FIELDS(F, A) F("metadata", metadata) F("data", data) F("binaryData", binary_data) F("immutable", immutable)
TEPHRA_API_KIND(ConfigMap, CM_FIELDS, "", "v1", "configmaps", true)
#define SECRET_FIELDS(F, A)                                                                          \
  F("metadata", metadata) F("data", data) F("stringData", string_data) F("type", type)           \
      F("immutable", immutable)
TEPHRA_API_KIND(Secret, SECRET_FIELDS, "", "v1", "secrets", true)

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

std::string Base64Encode(std::string_view plain) {
  std::string out;
  out.reserve((plain.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < plain.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(plain[i]) << 16) | (static_cast<uint8_t>(plain[i + 1]) << 8) |
                 static_cast<uint8_t>(plain[i + 2]);
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(kB64[(v >> 6) & 63]);
    out.push_back(kB64[v & 63]);
  }
  if (i < plain.size()) {
    uint32_t v = static_cast<uint8_t>(plain[i]) << 16;
    if (i + 1 < plain.size()) v |= static_cast<uint8_t>(plain[i + 1]) << 8;
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < plain.size() ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

StatusOr<std::string> Base64Decode(std::string_view encoded) {
  std::array<int, 256> rev;
  rev.fill(-1);
  for (int k = 0; k < 64; ++k) rev[static_cast<uint8_t>(kB64[k])] = k;
  if (encoded.size() % 4 != 0) return core::InvalidArgumentError("base64: length is not a multiple of 4");
  std::string out;
  out.reserve(encoded.size() / 4 * 3);
  for (size_t i = 0; i < encoded.size(); i += 4) {
    int pad = 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = encoded[i + k];
      if (c == '=' && i + 4 == encoded.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      int d = rev[static_cast<uint8_t>(c)];
      if (d < 0 || pad > 0) return core::InvalidArgumentError("base64: invalid character at offset " + std::to_string(i + k));
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

// --- network policy ---
#define NPPEER_FIELDS(F, A) F("podSelector", pod_selector) F("namespaceSelector", namespace_selector) F("ipBlock", ip_block)
TEPHRA_API_CODEC(NetworkPolicyPeer, NPPEER_FIELDS)
#define NPING_FIELDS(F, A) F("ports", ports) F("from", from)
TEPHRA_API_CODEC(NetworkPolicyIngressRule, NPING_FIELDS)
#define NPSPEC_FIELDS(F, A) \
  A("podSelector", pod_selector) F("ingress", ingress) F("egress", egress) F("policyTypes", policy_types)
TEPHRA_API_CODEC(NetworkPolicySpec, NPSPEC_FIELDS)
#define NP_FIELDS(F, A) F("metadata", metadata) F("spec", spec)
TEPHRA_API_KIND(NetworkPolicy, NP_FIELDS, "networking.k8s.io", "v1", "networkpolicies", true)

// --- PVC ---
#define PVCSPEC_FIELDS(F, A)                                                                             \
  F("accessModes", access_modes) F("selector", selector) F("resources", resources)                   \
      F("volumeName", volume_name) F("storageClassName", storage_class_name) F("volumeMode", volume_mode)
TEPHRA_API_CODEC(PersistentVolumeClaimSpec, PVCSPEC_FIELDS)
#define PVCSTATUS_FIELDS(F, A) F("phase", phase) F("accessModes", access_modes) F("capacity", capacity)
TEPHRA_API_CODEC(PersistentVolumeClaimStatus, PVCSTATUS_FIELDS)
#define PVC_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(PersistentVolumeClaim, PVC_FIELDS, "", "v1", "persistentvolumeclaims", true)
#define VNA_FIELDS(F, A) F("required", required)
TEPHRA_API_CODEC(VolumeNodeAffinity, VNA_FIELDS)
#define CSIPVS_FIELDS(F, A) F("driver", driver) F("volumeHandle", volume_handle)
TEPHRA_API_CODEC(CSIPersistentVolumeSource, CSIPVS_FIELDS)
#define PVSPEC_FIELDS(F, A)                                                                                 \
  F("nodeAffinity", node_affinity) F("storageClassName", storage_class_name) F("csi", csi)                  \
      F("capacity", capacity) F("accessModes", access_modes) F("volumeMode", volume_mode) F("claimRef", claim_ref)
TEPHRA_API_CODEC(PersistentVolumeSpec, PVSPEC_FIELDS)
#define PV_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(PersistentVolume, PV_FIELDS, "", "v1", "persistentvolumes", false)
#define TSLR_FIELDS(F, A) F("key", key) F("values", values)
TEPHRA_API_CODEC(TopologySelectorLabelRequirement, TSLR_FIELDS)
#define TST_FIELDS(F, A) F("matchLabelExpressions", match_label_expressions)
TEPHRA_API_CODEC(TopologySelectorTerm, TST_FIELDS)
#define SC_FIELDS(F, A)                                                                                     \
  F("metadata", metadata) F("provisioner", provisioner) F("volumeBindingMode", volume_binding_mode)        \
      F("allowedTopologies", allowed_topologies)
TEPHRA_API_KIND(StorageClass, SC_FIELDS, "storage.k8s.io", "v1", "storageclasses", false)
#define VNR_FIELDS(F, A) F("count", count)
TEPHRA_API_CODEC(VolumeNodeResources, VNR_FIELDS)
#define CSIND_FIELDS(F, A) F("name", name) F("nodeID", node_id) F("allocatable", allocatable)
TEPHRA_API_CODEC(CSINodeDriver, CSIND_FIELDS)
#define CSINSPEC_FIELDS(F, A) F("drivers", drivers)
TEPHRA_API_CODEC(CSINodeSpec, CSINSPEC_FIELDS)
#define CSIN_FIELDS(F, A) F("metadata", metadata) F("spec", spec)
TEPHRA_API_KIND(CSINode, CSIN_FIELDS, "storage.k8s.io", "v1", "csinodes", false)

// --- event ---
#define EVSRC_FIELDS(F, A) F("component", component) F("host", host)
TEPHRA_API_CODEC(EventSource, EVSRC_FIELDS)
#define EVENT_FIELDS(F, A)                                                                                   \
  F("metadata", metadata) A("involvedObject", involved_object) F("reason", reason) F("message", message)  \
      F("source", source) F("firstTimestamp", first_timestamp) F("lastTimestamp", last_timestamp)         \
          F("count", count) F("type", type) F("eventTime", event_time) F("action", action)                \
              A("reportingComponent", reporting_component) A("reportingInstance", reporting_instance)      \
                  F("series", series) F("related", related)
TEPHRA_API_KIND(Event, EVENT_FIELDS, "", "v1", "events", true)

// --- priority class, lease, namespace ---
#define PC_FIELDS(F, A)                                                                                   \
  F("metadata", metadata) A("value", value) F("globalDefault", global_default) F("description", description) \
      F("preemptionPolicy", preemption_policy)
TEPHRA_API_KIND(PriorityClass, PC_FIELDS, "scheduling.k8s.io", "v1", "priorityclasses", false)
#define LEASESPEC_FIELDS(F, A)                                                                              \
  F("holderIdentity", holder_identity) F("leaseDurationSeconds", lease_duration_seconds)                 \
      F("acquireTime", acquire_time) F("renewTime", renew_time) F("leaseTransitions", lease_transitions)
TEPHRA_API_CODEC(LeaseSpec, LEASESPEC_FIELDS)
#define LEASE_FIELDS(F, A) F("metadata", metadata) F("spec", spec)
TEPHRA_API_KIND(Lease, LEASE_FIELDS, "coordination.k8s.io", "v1", "leases", true)
#define NS_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Namespace, NS_FIELDS, "", "v1", "namespaces", false)

}  // namespace tephra::api
