// Typed views of the core Kubernetes objects Tephra reads and writes: Pod, Node, Service, ConfigMap,
// Secret, NetworkPolicy, PersistentVolumeClaim, Event, PriorityClass, Lease, Namespace.
//
// Only what some Tephra component reads or writes is modeled; everything else stays in the `extra` of the
// enclosing struct, so decode -> encode keeps it.
// JSON names and omitempty follow the Go json tags of k8s.io/api; fields Go writes without omitempty are
// written with SetAlways (e.g. containerStatuses[].ready, restartCount, terminated.exitCode).
//
// Known, accepted difference: a known field the server wrote as `null` ("lastProbeTime": null,
// "creationTimestamp": null) is omitted on encode. Kubernetes decodes both as the zero value.
//
// Memory: Pod is held 150,000 at a time by informer caches. Strings and maps are only allocated when present,
// `extra` is null when a level has no unknown keys, and DropUnknown() clears every `extra` for caches that
// never write objects back.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"
#include "tephra/core/quantity.h"

namespace tephra::api {

// Resource name -> quantity ("cpu" -> 500m, "nvidia.com/gpu" -> 8).
using ResourceList = std::map<std::string, core::Quantity>;

inline constexpr std::string_view kResourceCPU = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";
inline constexpr std::string_view kResourceNvidiaGPU = "nvidia.com/gpu";

// Pod phases (PodStatus.phase).
inline constexpr std::string_view kPodPending = "Pending";
inline constexpr std::string_view kPodRunning = "Running";
inline constexpr std::string_view kPodSucceeded = "Succeeded";
inline constexpr std::string_view kPodFailed = "Failed";
inline constexpr std::string_view kPodUnknown = "Unknown";

// Condition types and statuses.
inline constexpr std::string_view kConditionTrue = "True";
inline constexpr std::string_view kConditionFalse = "False";
inline constexpr std::string_view kConditionUnknown = "Unknown";
inline constexpr std::string_view kPodScheduled = "PodScheduled";
inline constexpr std::string_view kPodReady = "Ready";
inline constexpr std::string_view kPodInitialized = "Initialized";
inline constexpr std::string_view kContainersReady = "ContainersReady";
inline constexpr std::string_view kPodReasonUnschedulable = "Unschedulable";
inline constexpr std::string_view kNodeReady = "Ready";

// Taint effects / toleration operators.
inline constexpr std::string_view kTaintNoSchedule = "NoSchedule";
inline constexpr std::string_view kTaintPreferNoSchedule = "PreferNoSchedule";
inline constexpr std::string_view kTaintNoExecute = "NoExecute";
inline constexpr std::string_view kTolerationOpExists = "Exists";
inline constexpr std::string_view kTolerationOpEqual = "Equal";

// Restart / DNS policies.
inline constexpr std::string_view kRestartPolicyAlways = "Always";
inline constexpr std::string_view kRestartPolicyOnFailure = "OnFailure";
inline constexpr std::string_view kRestartPolicyNever = "Never";
inline constexpr std::string_view kDNSClusterFirstWithHostNet = "ClusterFirstWithHostNet";

// Event types.
inline constexpr std::string_view kEventTypeNormal = "Normal";
inline constexpr std::string_view kEventTypeWarning = "Warning";

// ---------------------------------------------------------------------------------------------------------
// Shared small types.

// Label selectors are the core's one selector model (tephra/core/labels.h), shared with the scheduler; their
// codecs are declared in codec.h. Unknown operators decode to SelectorOp::kInvalid (operator text kept for
// re-encoding), never match, and fail validation (ValidatePodAffinity, validation.h).
using LabelSelectorRequirement = core::SelectorRequirement;
using LabelSelector = core::LabelSelector;
using NodeSelectorRequirement = core::SelectorRequirement;
using NodeSelectorTerm = core::NodeSelectorTerm;

// Whether `labels` satisfy the selector (an empty selector matches everything).
inline bool Matches(const LabelSelector& selector, const std::map<std::string, std::string>& labels) {
  return selector.Matches(labels);
}

struct ObjectReference {
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string api_version;
  std::string resource_version;
  std::string field_path;
  json extra;
};
Status Decode(const json& j, ObjectReference* out);
void Encode(const ObjectReference& in, json* j);

struct KeyToPath {
  std::string key;
  std::string path;
  std::optional<int32_t> mode;
  json extra;
};
Status Decode(const json& j, KeyToPath* out);
void Encode(const KeyToPath& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Containers.

struct EnvVar {
  std::string name;
  std::string value;
  json value_from;  // EnvVarSource (configMapKeyRef, fieldRef, ...), kept raw
  json extra;
};
Status Decode(const json& j, EnvVar* out);
void Encode(const EnvVar& in, json* j);

struct ContainerPort {
  std::string name;
  int32_t host_port = 0;
  int32_t container_port = 0;
  std::string protocol;
  std::string host_ip;
  json extra;
};
Status Decode(const json& j, ContainerPort* out);
void Encode(const ContainerPort& in, json* j);

struct ResourceRequirements {
  ResourceList limits;
  ResourceList requests;
  json extra;  // claims
};
Status Decode(const json& j, ResourceRequirements* out);
void Encode(const ResourceRequirements& in, json* j);

struct VolumeMount {
  std::string name;
  bool read_only = false;
  std::string mount_path;
  std::string sub_path;
  std::string mount_propagation;
  std::string sub_path_expr;
  json extra;
};
Status Decode(const json& j, VolumeMount* out);
void Encode(const VolumeMount& in, json* j);

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::string working_dir;
  std::vector<ContainerPort> ports;
  json env_from;
  std::vector<EnvVar> env;
  ResourceRequirements resources;
  std::vector<VolumeMount> volume_mounts;
  std::string image_pull_policy;
  json extra;  // probes, lifecycle, securityContext, ...
};
Status Decode(const json& j, Container* out);
void Encode(const Container& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Volumes.

struct PersistentVolumeClaimVolumeSource {
  std::string claim_name;
  bool read_only = false;
  json extra;
};
Status Decode(const json& j, PersistentVolumeClaimVolumeSource* out);
void Encode(const PersistentVolumeClaimVolumeSource& in, json* j);

struct ConfigMapVolumeSource {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  json extra;
};
Status Decode(const json& j, ConfigMapVolumeSource* out);
void Encode(const ConfigMapVolumeSource& in, json* j);

struct SecretVolumeSource {
  std::string secret_name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  json extra;
};
Status Decode(const json& j, SecretVolumeSource* out);
void Encode(const SecretVolumeSource& in, json* j);

// Volume sources are Indirect<> (heap, 8 bytes when absent): a pod has a handful of volumes, each using one
// source, and std::optional would reserve all of them inline in every cached pod.
struct Volume {
  std::string name;
  Indirect<PersistentVolumeClaimVolumeSource> persistent_volume_claim;
  Indirect<ConfigMapVolumeSource> config_map;
  Indirect<SecretVolumeSource> secret;
  json empty_dir;  // raw; null when absent ({} is a valid emptyDir and is kept)
  json host_path;
  json extra;  // other volume sources
};
Status Decode(const json& j, Volume* out);
void Encode(const Volume& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Scheduling bits.

struct Toleration {
  std::string key;
  std::string operator_;
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
  json extra;
};
Status Decode(const json& j, Toleration* out);
void Encode(const Toleration& in, json* j);

struct Taint {
  std::string key;
  std::string value;
  std::string effect;
  std::string time_added;  // RFC 3339, empty when unset
  json extra;
};
Status Decode(const json& j, Taint* out);
void Encode(const Taint& in, json* j);

struct PodSchedulingGate {
  std::string name;
  json extra;
};
Status Decode(const json& j, PodSchedulingGate* out);
void Encode(const PodSchedulingGate& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Affinity and topology spread (k8s.io/api core/v1), typed so that scheduler and validation read the same
// model; every level keeps unknown fields. Go omitempty is followed per field (see core_v1.cc).

struct NodeSelector {
  std::vector<NodeSelectorTerm> node_selector_terms;  // ORed; Go: no omitempty
  json extra;
};
Status Decode(const json& j, NodeSelector* out);
void Encode(const NodeSelector& in, json* j);

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1-100
  NodeSelectorTerm preference;
  json extra;
};
Status Decode(const json& j, PreferredSchedulingTerm* out);
void Encode(const PreferredSchedulingTerm& in, json* j);

struct NodeAffinity {
  std::optional<NodeSelector> required_during_scheduling_ignored_during_execution;
  std::vector<PreferredSchedulingTerm> preferred_during_scheduling_ignored_during_execution;
  json extra;
};
Status Decode(const json& j, NodeAffinity* out);
void Encode(const NodeAffinity& in, json* j);

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;  // null: matches no pod; {}: every pod
  std::vector<std::string> namespaces;          // empty with no namespaceSelector: the pod's own namespace
  std::string topology_key;                     // Go: no omitempty
  std::optional<LabelSelector> namespace_selector;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;
  json extra;
};
Status Decode(const json& j, PodAffinityTerm* out);
void Encode(const PodAffinityTerm& in, json* j);

struct WeightedPodAffinityTerm {
  int32_t weight = 0;  // 1-100
  PodAffinityTerm pod_affinity_term;
  json extra;
};
Status Decode(const json& j, WeightedPodAffinityTerm* out);
void Encode(const WeightedPodAffinityTerm& in, json* j);

// PodAffinity and PodAntiAffinity have the same fields in Kubernetes.
struct PodAffinity {
  std::vector<PodAffinityTerm> required_during_scheduling_ignored_during_execution;
  std::vector<WeightedPodAffinityTerm> preferred_during_scheduling_ignored_during_execution;
  json extra;
};
Status Decode(const json& j, PodAffinity* out);
void Encode(const PodAffinity& in, json* j);
using PodAntiAffinity = PodAffinity;

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAntiAffinity> pod_anti_affinity;
  json extra;
};
Status Decode(const json& j, Affinity* out);
void Encode(const Affinity& in, json* j);

inline constexpr std::string_view kDoNotSchedule = "DoNotSchedule";
inline constexpr std::string_view kScheduleAnyway = "ScheduleAnyway";

struct TopologySpreadConstraint {
  int32_t max_skew = 0;             // Go: no omitempty
  std::string topology_key;         // Go: no omitempty
  std::string when_unsatisfiable;   // DoNotSchedule | ScheduleAnyway; Go: no omitempty
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::optional<std::string> node_affinity_policy;  // Honor | Ignore
  std::optional<std::string> node_taints_policy;    // Honor | Ignore
  std::vector<std::string> match_label_keys;
  json extra;
};
Status Decode(const json& j, TopologySpreadConstraint* out);
void Encode(const TopologySpreadConstraint& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Pod.

struct PodSpec {
  std::vector<Volume> volumes;
  std::vector<Container> init_containers;
  std::vector<Container> containers;  // Go: no omitempty
  std::string restart_policy;
  std::optional<int64_t> termination_grace_period_seconds;
  std::optional<int64_t> active_deadline_seconds;
  std::string dns_policy;
  std::map<std::string, std::string> node_selector;
  std::string service_account_name;
  std::string node_name;
  bool host_network = false;
  std::string hostname;
  std::string subdomain;
  Indirect<Affinity> affinity;  // on the heap: most pods have none (8 bytes each in the caches)
  std::string scheduler_name;
  std::vector<Toleration> tolerations;
  std::string priority_class_name;
  std::optional<int32_t> priority;
  std::optional<std::string> preemption_policy;
  ResourceList overhead;
  std::vector<PodSchedulingGate> scheduling_gates;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  json extra;  // securityContext, imagePullSecrets, ...
};
Status Decode(const json& j, PodSpec* out);
void Encode(const PodSpec& in, json* j);

struct PodTemplateSpec {
  ObjectMeta metadata;
  PodSpec spec;
  json extra;
};
Status Decode(const json& j, PodTemplateSpec* out);
void Encode(const PodTemplateSpec& in, json* j);

struct PodCondition {
  std::string type;    // Go: no omitempty
  std::string status;  // Go: no omitempty
  std::string last_probe_time;
  std::string last_transition_time;
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, PodCondition* out);
void Encode(const PodCondition& in, json* j);

struct ContainerStateWaiting {
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, ContainerStateWaiting* out);
void Encode(const ContainerStateWaiting& in, json* j);

struct ContainerStateRunning {
  std::string started_at;
  json extra;
};
Status Decode(const json& j, ContainerStateRunning* out);
void Encode(const ContainerStateRunning& in, json* j);

struct ContainerStateTerminated {
  int32_t exit_code = 0;  // Go: no omitempty
  int32_t signal = 0;
  std::string reason;
  std::string message;
  std::string started_at;
  std::string finished_at;
  std::string container_id;
  json extra;
};
Status Decode(const json& j, ContainerStateTerminated* out);
void Encode(const ContainerStateTerminated& in, json* j);

// At most one member is set; Indirect<> keeps the two ContainerStates of every container status small.
struct ContainerState {
  Indirect<ContainerStateWaiting> waiting;
  Indirect<ContainerStateRunning> running;
  Indirect<ContainerStateTerminated> terminated;
  json extra;
};
Status Decode(const json& j, ContainerState* out);
void Encode(const ContainerState& in, json* j);

struct ContainerStatus {
  std::string name;  // Go: no omitempty (name, ready, restartCount, image, imageID)
  ContainerState state;
  ContainerState last_state;
  bool ready = false;
  int32_t restart_count = 0;
  std::string image;
  std::string image_id;
  std::string container_id;
  std::optional<bool> started;
  json extra;
};
Status Decode(const json& j, ContainerStatus* out);
void Encode(const ContainerStatus& in, json* j);

struct PodStatus {
  std::string phase;
  std::vector<PodCondition> conditions;
  std::string message;
  std::string reason;
  std::string nominated_node_name;
  std::string host_ip;
  std::string pod_ip;
  json pod_ips;   // [{ip}], raw
  json host_ips;  // [{ip}], raw
  std::string start_time;
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  std::string qos_class;
  json extra;
};
Status Decode(const json& j, PodStatus* out);
void Encode(const PodStatus& in, json* j);

struct Pod {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  PodSpec spec;
  PodStatus status;
  json extra;
};
Status Decode(const json& j, Pod* out);
void Encode(const Pod& in, json* j);
// For caches that never write the object back (informers of the scheduler, controllers, nodesim): clears
// every `extra` (managedFields, probes, ...) and also what no cache reader uses, so 150k pods fit in well
// under 1 GiB: containers' env/envFrom/command/args/workingDir/volumeMounts, volumes other than PVCs,
// container IDs and image IDs, termination and condition messages, podIPs/hostIPs. Kept: metadata, every
// scheduling input (requests/limits, ports, images, nodeSelector, affinity, tolerations, priority, gates,
// PVC volumes, overhead) and the lifecycle status (phase, conditions, restart counts, states, exit codes).
void DropUnknown(Pod* pod);

// ---------------------------------------------------------------------------------------------------------
// Node.

struct NodeSpec {
  std::string pod_cidr;
  std::vector<std::string> pod_cidrs;
  std::string provider_id;
  bool unschedulable = false;
  std::vector<Taint> taints;
  json extra;
};
Status Decode(const json& j, NodeSpec* out);
void Encode(const NodeSpec& in, json* j);

struct NodeCondition {
  std::string type;    // Go: no omitempty
  std::string status;  // Go: no omitempty
  std::string last_heartbeat_time;
  std::string last_transition_time;
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, NodeCondition* out);
void Encode(const NodeCondition& in, json* j);

struct NodeAddress {
  std::string type;     // "InternalIP", "Hostname", ...; Go: no omitempty
  std::string address;  // Go: no omitempty
  json extra;
};
Status Decode(const json& j, NodeAddress* out);
void Encode(const NodeAddress& in, json* j);

struct NodeStatus {
  ResourceList capacity;
  ResourceList allocatable;
  std::string phase;
  std::vector<NodeCondition> conditions;
  std::vector<NodeAddress> addresses;
  json daemon_endpoints;
  json node_info;
  json extra;  // images, volumesInUse, ...
};
Status Decode(const json& j, NodeStatus* out);
void Encode(const NodeStatus& in, json* j);

struct Node {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  NodeSpec spec;
  NodeStatus status;
  json extra;
};
Status Decode(const json& j, Node* out);
void Encode(const Node& in, json* j);
// Clears every `extra` and the raw nodeInfo/daemonEndpoints (see DropUnknown(Pod*)).
void DropUnknown(Node* node);

// ---------------------------------------------------------------------------------------------------------
// Service.

struct ServicePort {
  std::string name;
  std::string protocol;
  std::string app_protocol;
  int32_t port = 0;  // Go: no omitempty
  json target_port;  // IntOrString, raw (number or string)
  int32_t node_port = 0;
  json extra;
};
Status Decode(const json& j, ServicePort* out);
void Encode(const ServicePort& in, json* j);

struct ServiceSpec {
  std::vector<ServicePort> ports;
  std::map<std::string, std::string> selector;
  std::string cluster_ip;
  std::string type;
  bool publish_not_ready_addresses = false;
  json extra;  // clusterIPs, ipFamilies, sessionAffinity, ...
};
Status Decode(const json& j, ServiceSpec* out);
void Encode(const ServiceSpec& in, json* j);

struct Service {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  ServiceSpec spec;
  json status;  // raw (loadBalancer)
  json extra;
};
Status Decode(const json& j, Service* out);
void Encode(const Service& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// ConfigMap / Secret.

struct ConfigMap {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;  // base64 strings
  std::optional<bool> immutable;
  json extra;
};
Status Decode(const json& j, ConfigMap* out);
void Encode(const ConfigMap& in, json* j);

struct Secret {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  std::map<std::string, std::string> data;         // values are base64 strings, as on the wire
  std::map<std::string, std::string> string_data;  // write-only plain text (server merges into data)
  std::string type;
  std::optional<bool> immutable;
  json extra;
};
Status Decode(const json& j, Secret* out);
void Encode(const Secret& in, json* j);

// Standard base64 (RFC 4648, with padding), for Secret.data.
std::string Base64Encode(std::string_view plain);
StatusOr<std::string> Base64Decode(std::string_view encoded);

// ---------------------------------------------------------------------------------------------------------
// NetworkPolicy (networking.k8s.io/v1).

struct NetworkPolicyPeer {
  std::optional<LabelSelector> pod_selector;
  std::optional<LabelSelector> namespace_selector;
  json ip_block;
  json extra;
};
Status Decode(const json& j, NetworkPolicyPeer* out);
void Encode(const NetworkPolicyPeer& in, json* j);

struct NetworkPolicyIngressRule {
  json ports;
  std::vector<NetworkPolicyPeer> from;
  json extra;
};
Status Decode(const json& j, NetworkPolicyIngressRule* out);
void Encode(const NetworkPolicyIngressRule& in, json* j);

struct NetworkPolicySpec {
  LabelSelector pod_selector;  // Go: no omitempty; always written ({} selects all pods)
  std::vector<NetworkPolicyIngressRule> ingress;
  json egress;
  std::vector<std::string> policy_types;
  json extra;
};
Status Decode(const json& j, NetworkPolicySpec* out);
void Encode(const NetworkPolicySpec& in, json* j);

struct NetworkPolicy {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  NetworkPolicySpec spec;
  json extra;
};
Status Decode(const json& j, NetworkPolicy* out);
void Encode(const NetworkPolicy& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// PersistentVolumeClaim.

struct PersistentVolumeClaimSpec {
  std::vector<std::string> access_modes;
  std::optional<LabelSelector> selector;
  ResourceRequirements resources;
  std::string volume_name;
  std::optional<std::string> storage_class_name;
  std::optional<std::string> volume_mode;
  json extra;  // dataSource, dataSourceRef
};
Status Decode(const json& j, PersistentVolumeClaimSpec* out);
void Encode(const PersistentVolumeClaimSpec& in, json* j);

struct PersistentVolumeClaimStatus {
  std::string phase;  // Pending, Bound, Lost
  std::vector<std::string> access_modes;
  ResourceList capacity;
  json extra;
};
Status Decode(const json& j, PersistentVolumeClaimStatus* out);
void Encode(const PersistentVolumeClaimStatus& in, json* j);

struct PersistentVolumeClaim {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  PersistentVolumeClaimSpec spec;
  PersistentVolumeClaimStatus status;
  json extra;
};
Status Decode(const json& j, PersistentVolumeClaim* out);
void Encode(const PersistentVolumeClaim& in, json* j);

// PersistentVolume and StorageClass: what volume predicates read (node affinity of a bound volume, the
// claim's binding mode); every other field is kept raw.
struct VolumeNodeAffinity {
  std::optional<NodeSelector> required;
  json extra;
};
Status Decode(const json& j, VolumeNodeAffinity* out);
void Encode(const VolumeNodeAffinity& in, json* j);

// spec.csi of a PersistentVolume: the driver and volume handle count towards the node's CSI volume limit.
struct CSIPersistentVolumeSource {
  std::string driver;
  std::string volume_handle;  // volumeHandle
  json extra;
};
Status Decode(const json& j, CSIPersistentVolumeSource* out);
void Encode(const CSIPersistentVolumeSource& in, json* j);

struct PersistentVolumeSpec {
  std::optional<VolumeNodeAffinity> node_affinity;
  std::string storage_class_name;
  std::optional<CSIPersistentVolumeSource> csi;
  ResourceList capacity;
  std::vector<std::string> access_modes;  // accessModes
  std::optional<std::string> volume_mode;  // volumeMode: Filesystem (default) or Block
  std::optional<ObjectReference> claim_ref;  // claimRef
  json extra;  // persistentVolumeReclaimPolicy, mountOptions and the other volume sources
};
Status Decode(const json& j, PersistentVolumeSpec* out);
void Encode(const PersistentVolumeSpec& in, json* j);

struct PersistentVolume {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  PersistentVolumeSpec spec;
  json status;
  json extra;
};
Status Decode(const json& j, PersistentVolume* out);
void Encode(const PersistentVolume& in, json* j);

// allowedTopologies of a StorageClass: a node matches a term when, for every expression, its value of the
// key is one of the values; terms are ORed.
struct TopologySelectorLabelRequirement {
  std::string key;
  std::vector<std::string> values;
  json extra;
};
Status Decode(const json& j, TopologySelectorLabelRequirement* out);
void Encode(const TopologySelectorLabelRequirement& in, json* j);
struct TopologySelectorTerm {
  std::vector<TopologySelectorLabelRequirement> match_label_expressions;
  json extra;
};
Status Decode(const json& j, TopologySelectorTerm* out);
void Encode(const TopologySelectorTerm& in, json* j);

struct StorageClass {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  std::string provisioner;
  std::string volume_binding_mode;  // Immediate (default) or WaitForFirstConsumer
  std::vector<TopologySelectorTerm> allowed_topologies;  // empty: volumes can be provisioned for any node
  json extra;
};
Status Decode(const json& j, StorageClass* out);
void Encode(const StorageClass& in, json* j);

// CSINode (storage.k8s.io/v1): per CSI driver on a node, how many of its volumes the node can attach
// (spec.drivers[].allocatable.count; unset = no limit), which kube-scheduler's NodeVolumeLimits reads.
struct VolumeNodeResources {
  std::optional<int32_t> count;
  json extra;
};
Status Decode(const json& j, VolumeNodeResources* out);
void Encode(const VolumeNodeResources& in, json* j);
struct CSINodeDriver {
  std::string name;
  std::string node_id;  // nodeID
  std::optional<VolumeNodeResources> allocatable;
  json extra;
};
Status Decode(const json& j, CSINodeDriver* out);
void Encode(const CSINodeDriver& in, json* j);
struct CSINodeSpec {
  std::vector<CSINodeDriver> drivers;
  json extra;
};
Status Decode(const json& j, CSINodeSpec* out);
void Encode(const CSINodeSpec& in, json* j);
struct CSINode {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  CSINodeSpec spec;
  json extra;
};
Status Decode(const json& j, CSINode* out);
void Encode(const CSINode& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Event (core/v1).

struct EventSource {
  std::string component;
  std::string host;
  json extra;
};
Status Decode(const json& j, EventSource* out);
void Encode(const EventSource& in, json* j);

struct Event {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  ObjectReference involved_object;  // Go: no omitempty
  std::string reason;
  std::string message;
  EventSource source;
  std::string first_timestamp;
  std::string last_timestamp;
  int32_t count = 0;
  std::string type;
  std::string event_time;  // MicroTime
  std::string action;
  std::string reporting_component;  // Go: no omitempty
  std::string reporting_instance;   // Go: no omitempty
  json series;
  json related;
  json extra;
};
Status Decode(const json& j, Event* out);
void Encode(const Event& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// PriorityClass (scheduling.k8s.io/v1), Lease (coordination.k8s.io/v1), Namespace.

struct PriorityClass {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  int32_t value = 0;  // Go: no omitempty
  bool global_default = false;
  std::string description;
  std::optional<std::string> preemption_policy;
  json extra;
};
Status Decode(const json& j, PriorityClass* out);
void Encode(const PriorityClass& in, json* j);

struct LeaseSpec {
  std::optional<std::string> holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::optional<std::string> acquire_time;  // MicroTime, RFC 3339 with microseconds
  std::optional<std::string> renew_time;
  std::optional<int32_t> lease_transitions;
  json extra;
};
Status Decode(const json& j, LeaseSpec* out);
void Encode(const LeaseSpec& in, json* j);

struct Lease {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  LeaseSpec spec;
  json extra;
};
Status Decode(const json& j, Lease* out);
void Encode(const Lease& in, json* j);

struct Namespace {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  json spec;
  json status;
  json extra;
};
Status Decode(const json& j, Namespace* out);
void Encode(const Namespace& in, json* j);

}  // namespace tephra::api
