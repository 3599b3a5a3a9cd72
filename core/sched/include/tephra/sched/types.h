// The scheduling core's own compact object model. The scheduler process (scheduler-ext/) converts API
// objects (Pod, Node, PodGroup, Queue, HyperNode, PriorityClass) into these; the core never sees JSON.
//
// Conversion rules the caller applies (documented here because the core relies on them):
//   * TaskInfo::request = max(sum(containers), max(initContainers)) per resource, plus pod overhead;
//     pods=1 is added by ClusterState itself.
//   * TaskInfo::score_cpu/score_memory = the same rule over kube-scheduler's non-zero requests (a container
//     without a cpu request counts 100m, without a memory request 200Mi); left at -1, ClusterState derives
//     them from `request` (see TaskInfo).
//   * TaskInfo::host_ports = the hostPort > 0 entries of spec.containers[].ports (not init containers).
//   * Only pods whose schedulerName is managed by this scheduler are given to UpsertPod as schedulable;
//     foreign pods that occupy nodes are given with status Running/Bound and a node so usage is right.
//   * job = "<ns>/<annotation scheduling.k8s.io/group-name>"; role = annotation volcano.sh/task-spec.
//   * Pod phase mapping: Pending without nodeName -> kPending; Pending with nodeName -> kBound;
//     Running -> kRunning; Succeeded/Failed -> kSucceeded/kFailed; deletionTimestamp set -> kReleasing.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/labels.h"
#include "tephra/sched/devices.h"
#include "tephra/sched/resource.h"

namespace tephra::sched {

using WallTime = std::chrono::system_clock::time_point;
using Labels = core::Labels;  // ordered: determinism and cheap equality
inline constexpr std::string_view kHostnameKey = "kubernetes.io/hostname";
inline constexpr std::string_view kZoneKey = "topology.kubernetes.io/zone";

enum class TaskStatus : uint8_t {
  kPending,
  kAllocated,   // placed in this session, not yet committed (only inside an open Statement)
  kPipelined,   // placed on resources that are being released; never bound by this cycle
  kBinding,     // committed; bind decision emitted; awaiting binder feedback
  kBound,       // binder confirmed (or informer shows nodeName) but not yet Running
  kRunning,
  kReleasing,   // being deleted/evicted; still holds its node's resources
  kSucceeded,
  kFailed,
  kUnknown,
};
inline constexpr size_t kTaskStatusCount = 10;
const char* TaskStatusName(TaskStatus s);
// Statuses that hold resources on a node (Volcano AllocatedStatus + Releasing).
bool OccupiesNode(TaskStatus s);
// Occupies a node or is pipelined onto one in this cycle: what node-local predicates and scores count
// (host ports, inter-pod affinity, task-topology buckets, per-node scoring sums).
bool OnNodeForScheduling(TaskStatus s);
// Allocated, Binding, Bound, Running: what gang counts as "ready" (plus Succeeded, see gang).
bool IsAllocatedStatus(TaskStatus s);

// Selectors are the core's one model (tephra/core/labels.h): the same types and matcher as the API, so
// an operator means the same thing at admission and at scheduling. An unknown operator (kInvalid) never
// matches; the predicates plugin makes a pod whose affinity uses one unschedulable with a reason saying
// so (never read as In, which would place pods where their owner did not ask).
using SelectorOp = core::SelectorOp;
using SelectorRequirement = core::SelectorRequirement;
using NodeSelectorTerm = core::NodeSelectorTerm;  // requirements ANDed; a list of terms is ORed
using LabelSelector = core::LabelSelector;

// One preferredDuringScheduling node-affinity term, as kube-scheduler v1.20.2's NodeAffinity score reads it:
// only the expressions on node labels count (matchFields are not scored), and a term without expressions
// matches every node. Scored by nodeorder; never a predicate.
struct PreferredNodeTerm {
  int32_t weight = 0;  // 1-100; 0 is skipped
  std::vector<SelectorRequirement> match_expressions;
  bool operator==(const PreferredNodeTerm&) const = default;
  bool Matches(const Labels& node_labels) const {
    for (const auto& r : match_expressions)
      if (!r.Matches(node_labels)) return false;
    return true;
  }
};
inline bool MatchesRequirement(const SelectorRequirement& r, const Labels& labels) { return r.Matches(labels); }

struct TaskInfo;

// One required pod affinity or anti-affinity term as kube-scheduler reads it: the pods it selects are those
// in its namespaces whose labels match `selector`, and two nodes are in the same domain when both carry
// `topology_key` with the same value (a node without the key is in no domain).
struct PodAffinityTerm {
  LabelSelector selector;               // matchLabelKeys/mismatchLabelKeys already folded in by the caller
  bool null_selector = false;           // labelSelector: null selects no pod
  std::vector<std::string> namespaces;  // resolved by the caller (the pod's own when the term names none)
  bool all_namespaces = false;          // namespaceSelector: {}
  // A namespaceSelector with requirements: the core has no namespace labels, so the term cannot be decided
  // and the pod is refused with a reason that says so (never silently lifted).
  bool unsupported_namespace_selector = false;
  std::string topology_key;
  bool operator==(const PodAffinityTerm&) const = default;
  bool Valid() const { return selector.Valid() && !unsupported_namespace_selector && !topology_key.empty(); }
  bool Selects(const TaskInfo& pod) const;  // namespace and labels
};

// One preferredDuringScheduling pod affinity (anti = false) or anti-affinity (anti = true) term: a score,
// never a predicate (nodeorder's podaffinity score, kube-scheduler's InterPodAffinity; docs/scheduler.md).
struct WeightedPodAffinityTerm {
  int32_t weight = 0;  // 1-100
  bool anti = false;
  PodAffinityTerm term;
  bool operator==(const WeightedPodAffinityTerm&) const = default;
};

// One topologySpreadConstraint with whenUnsatisfiable: DoNotSchedule, as kube-scheduler's PodTopologySpread
// filter reads it (docs/scheduler.md, "Topology spread"): placing the pod on a node must not leave the node's
// domain more than `max_skew` matching pods above the emptiest eligible domain. ScheduleAnyway constraints
// have the same shape and only score (TaskInfo::soft_spread, nodeorder's podtopologyspread.weight).
struct SpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  LabelSelector selector;      // matchLabelKeys already folded in by the caller; counts the pod's namespace only
  bool null_selector = false;  // no labelSelector: matches no pod (not even the pod itself)
  int32_t min_domains = 1;     // fewer eligible domains than this: the global minimum is taken as 0
  bool honor_node_affinity = true;  // nodeAffinityPolicy Honor (default): only nodes the pod may use count
  bool honor_node_taints = false;   // nodeTaintsPolicy Honor: nodes with taints the pod does not tolerate do not
  bool operator==(const SpreadConstraint&) const = default;
  bool Matches(const Labels& labels) const { return !null_selector && selector.Matches(labels); }
};

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };
struct Taint {
  std::string key, value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  bool operator==(const Taint&) const = default;
};
struct Toleration {
  std::string key;        // empty with op Exists = tolerate everything
  bool op_exists = false; // false = Equal
  std::string value;
  std::optional<TaintEffect> effect;  // nullopt = all effects
  bool operator==(const Toleration&) const = default;
  bool Tolerates(const Taint& t) const;
};

// PersistentVolume access modes, as a bit set.
inline constexpr uint8_t kReadWriteOnce = 1, kReadOnlyMany = 2, kReadWriteMany = 4, kReadWriteOncePod = 8;

// A PersistentVolumeClaim as the volume predicates read it (key "<namespace>/<name>").
struct ClaimInfo {
  std::string volume;         // spec.volumeName: the PersistentVolume it is bound to; empty = unbound
  std::string storage_class;  // spec.storageClassName ("" = none)
  bool deleting = false;      // metadata.deletionTimestamp set
  // What a pre-created volume must offer to be bound to the claim (kube's FindMatchingVolume).
  std::string uid = {};
  int64_t request = 0;        // spec.resources.requests.storage, bytes
  uint8_t access_modes = 0;   // spec.accessModes
  bool block = false;         // spec.volumeMode Block (else Filesystem)
  std::optional<LabelSelector> selector = {};  // spec.selector over the volumes' labels
  bool operator==(const ClaimInfo&) const = default;
};
// A StorageClass as the volume predicates read it.
struct StorageClassInfo {
  bool wait_for_first_consumer = false;  // volumeBindingMode WaitForFirstConsumer (else Immediate)
  bool static_only = false;              // provisioner kubernetes.io/no-provisioner: pre-created volumes only
  // allowedTopologies as node selector terms (each expression `key In values`; ORed); empty = every node.
  std::vector<NodeSelectorTerm> allowed_topologies;
  std::string provisioner;  // the CSI driver an unbound claim's volume will count against (NodeVolumeLimits)
  bool operator==(const StorageClassInfo&) const = default;
};
// A PersistentVolume: the nodes it can be used from (spec.nodeAffinity.required; no terms = every node).
struct VolumeInfo {
  std::vector<NodeSelectorTerm> node_affinity = {};  // ORed
  // Its labels: zone and region ones for kube-scheduler's VolumeZone filter (a value may list several zones
  // joined by "__"), all of them for claims' selectors.
  Labels labels = {};
  std::string csi_driver = {}, csi_handle = {};  // spec.csi: counted against the node's limit for the driver
  // For binding it to a WaitForFirstConsumer claim (kube's FindMatchingVolume).
  std::string storage_class = {};
  int64_t capacity = 0;       // spec.capacity.storage, bytes
  uint8_t access_modes = 0;
  bool block = false;
  std::string claim_ref = {};      // spec.claimRef "<namespace>/<name>"; empty = free
  std::string claim_ref_uid = {};  // its uid (empty: pre-bound by name only)
  bool available = false;          // status.phase Available
  bool deleting = false;
  bool operator==(const VolumeInfo&) const = default;
  // Its required node affinity admits the node (no terms: every node).
  bool UsableFrom(const Labels& node_labels, std::string_view node_name) const {
    if (node_affinity.empty()) return true;
    for (const auto& term : node_affinity)
      if (term.Matches(node_labels, node_name)) return true;
    return false;
  }
};
// The node attach limit a CSI driver's volumes count against, as kube-scheduler names it (a node
// allocatable key; a CSINode driver count is filed under the same name).
std::string CsiLimitKey(const std::string& driver);

struct NodeInfo {
  // ---- set by the caller ----
  std::string name;
  Resource allocatable;  // from node.status.allocatable (pods included)
  Labels labels;
  std::vector<Taint> taints;
  bool unschedulable = false;  // spec.unschedulable
  bool ready = true;           // Ready condition True
  // status.allocatable's attachable-volumes-* entries (limit key -> volumes), kept out of `allocatable`: no
  // pod requests them, and each would take one of the registry's few resource dimensions.
  std::map<std::string, int64_t> volume_limits;
  // Its accelerator cards (devices.h), when the caller knows them; empty = counted as plain resources only.
  // The caller sets the cards' identity, health and capacity; ClusterState keeps their usage (Card::owners,
  // sharers, used_*) from the tasks holding them.
  NodeDevices devices = {};
  // ---- maintained by ClusterState ----
  Resource used;       // sum of requests of tasks that OccupiesNode()
  Resource releasing;  // subset of used held by kReleasing tasks
  Resource pipelined;  // tasks pipelined onto this node's releasing resources
  int task_count = 0;  // tasks occupying the node (pod count)
  // kube-scheduler's NodeInfo.NonZeroRequested (cpu milli, memory bytes), which its LeastAllocated,
  // MostAllocated and BalancedAllocation scores read: the sum of TaskInfo::score_cpu/score_memory over tasks
  // that occupy the node or are pipelined onto it (Volcano's k8s NodeInfo holds every task on the node).
  // Kept by ClusterState at the same points as `used`, so scoring never walks a node's pods.
  int64_t score_cpu = 0, score_memory = 0;
  // Tasks counted as above that declare host ports: the ports predicate walks a node's tasks only when the
  // pod asks for host ports and this is non-zero.
  int host_port_tasks = 0;
  // The same for tasks that mount claims: the volume-limit predicate walks a node's tasks only when non-zero.
  int claim_tasks = 0;
  uint64_t version = 0;  // bumped on every change (spec or usage); score caches key on it
  Resource Idle() const { return allocatable - used; }
  // Volcano FutureIdle: what becomes free once Releasing tasks are gone, minus what is already promised.
  Resource FutureIdle() const { return allocatable - used + releasing - pipelined; }
};

// kube-scheduler's defaults for a container with no request, used for scoring only
// (schedutil.DefaultMilliCPURequest / DefaultMemoryRequest): without them every best-effort pod would look
// free and pile onto one node.
inline constexpr int64_t kDefaultScoreMilliCpu = 100;
inline constexpr int64_t kDefaultScoreMemory = 200LL * 1024 * 1024;

// One container port with hostPort > 0, as kube-scheduler's NodePorts filter compares them: an empty ip
// means 0.0.0.0 (every address) and an empty protocol TCP.
struct HostPort {
  std::string ip;
  std::string protocol;
  int32_t port = 0;
  bool operator==(const HostPort&) const = default;
  // Same port and protocol, and the addresses overlap (equal, or either is 0.0.0.0).
  bool Conflicts(const HostPort& other) const;
};

struct TaskInfo {
  // ---- set by the caller ----
  std::string uid;
  std::string ns, name;
  std::string job;   // "<ns>/<podgroup name>"; empty = not part of a gang (ignored by the scheduler)
  std::string role;  // volcano.sh/task-spec
  Resource request;  // init-container max rule already applied by the caller
  // Resources the pod requests (> 0) that no node offers, or that got no dimension (resource.h, kUnoffered):
  // `request` then has kUnoffered set, so the pod fits no node; these names are what its reason quotes.
  std::vector<std::string> unoffered;
  // Requests as kube-scheduler scores them (cpu milli, memory bytes; see kDefaultScoreMilliCpu): -1 = not
  // known to the caller (tests, benchmarks, callers without container specs); ClusterState then takes the
  // request, or the default where the request is 0. Feasibility never reads these; only scores do.
  int64_t score_cpu = -1, score_memory = -1;
  std::vector<HostPort> host_ports;  // hostPort > 0 only
  std::vector<std::string> claims;   // PersistentVolumeClaims the pod mounts (names, in its namespace)
  int32_t priority = 0;
  std::string priority_class_name;  // spec.priorityClassName (conformance protects the system-*-critical ones)
  // volcano.sh/preemptable (annotation, else label): false keeps the pod out of every preempt and reclaim
  // victim list, whatever the plugins would allow.
  bool preemptable = true;
  TaskStatus status = TaskStatus::kPending;
  std::string node;  // spec.nodeName (empty while pending)
  Labels labels;     // pod labels (matched by other pods' anti-affinity)
  Labels node_selector;
  std::vector<NodeSelectorTerm> required_affinity;  // ORed terms; empty = no constraint
  std::vector<PreferredNodeTerm> preferred_affinity;  // summed weights of the matching terms (nodeorder)
  std::vector<Toleration> tolerations;
  // requiredDuringScheduling pod affinity and anti-affinity (docs/scheduler.md, "Inter-pod affinity").
  std::vector<PodAffinityTerm> pod_affinity, pod_anti_affinity;
  // preferredDuringScheduling pod affinity and anti-affinity, in one list (one vector per task, not two).
  std::vector<WeightedPodAffinityTerm> preferred_pod_terms;
  std::vector<SpreadConstraint> spread;       // DoNotSchedule topology spread constraints (a predicate)
  std::vector<SpreadConstraint> soft_spread;  // ScheduleAnyway ones (a score)
  // The pod's controlling owner when it is a v1 ReplicationController or an apps/v1 ReplicaSet or
  // StatefulSet, as "<Kind>/<name>": a pod without constraints of its own is spread by the selectors of its
  // Services and of this owner (ClusterState::DefaultSpreadSelector).
  std::string controller = {};
  // Device-level placement (devices.h): what the pod asks of a node's cards, and the cards it holds ("id"s of
  // NodeDevices cards). The caller sets `cards` for placed pods from the device annotations; Statement sets it
  // when it places the pod on a node whose cards are modelled.
  DeviceRequest devices = {};
  std::vector<std::string> cards = {};
  bool scheduling_gated = false;  // spec.schedulingGates non-empty
  std::string nominated_node;
  uint64_t creation_index = 0;  // creation order (e.g. creationTimestamp then name), ties broken by uid
  // When it began to hold its node (the pod's status.startTime; the caller may give the bind time before the
  // kubelet reports one). Unset: taken as the current cycle's `now`. With its job's running estimate it gives
  // the time the task is expected to free its node (docs/reservations.md).
  WallTime start_time{};
  // The pod's metadata.creationTimestamp (metrics only: creation-to-decision and creation-to-bind latency).
  WallTime creation_time{};
  // ---- maintained by ClusterState ----
  bool best_effort = false;  // request.IsBestEffort()
  uint32_t shape = 0;        // interned scheduling shape: identical pod specs share predicate results
  bool evicting = false;     // the core decided to evict it (kReleasing) and the API has not confirmed yet
  uint32_t placed_pos = UINT32_MAX;  // its index in its namespace's placed list (ClusterState), or none
};

// The task's scoring requests: score_cpu/score_memory when the caller set them, else the request with
// kube-scheduler's defaults where it is 0 (the pod treated as one container).
int64_t ScoreCpu(const TaskInfo& t);
int64_t ScoreMemory(const TaskInfo& t);

enum class PodGroupPhase : uint8_t { kPending, kInqueue, kRunning, kUnknown, kCompleted };
const char* PodGroupPhaseName(PodGroupPhase p);

enum class TopologyMode : uint8_t { kNone, kHard, kSoft };
struct NetworkTopology {
  TopologyMode mode = TopologyMode::kNone;
  int highest_tier_allowed = 0;  // 0 = unset
  std::string highest_tier_name;  // translated to a tier at session open
  bool operator==(const NetworkTopology&) const = default;
};

// One PodGroup `subGroupPolicy` entry (Volcano's multi-level gang; docs/scheduler.md, "Sub-groups"). The
// job's tasks that match `selector` and carry every `match_label_keys` label with a non-empty value form one
// sub-group per distinct tuple of those values; a sub-group is ready when `size` of its tasks are, and the
// job is ready only when `min_groups` of the policy's sub-groups are. A task that no policy takes belongs to
// the job's default group.
struct SubGroupPolicy {
  std::string name;
  int32_t size = 1;        // subGroupSize
  int32_t min_groups = 0;  // minSubGroups
  std::optional<LabelSelector> selector;  // labelSelector; unset = every task
  std::vector<std::string> match_label_keys;
  NetworkTopology network_topology;  // each sub-group inside one HyperNode (hard) or preferably so (soft)
  bool operator==(const SubGroupPolicy&) const = default;
};

struct JobInfo {
  // ---- set by the caller (from the PodGroup) ----
  std::string key;  // "<ns>/<name>"
  std::string ns, name, uid;
  std::string queue = "default";
  int32_t min_member = 0;
  std::map<std::string, int32_t> min_task_member;
  std::optional<Resource> min_resources;
  std::vector<std::string> unoffered;  // as TaskInfo::unoffered, for min_resources
  int32_t priority = 0;  // resolved from priorityClassName by the caller (or SetPriorityClass)
  std::string priority_class_name;
  PodGroupPhase phase = PodGroupPhase::kPending;
  NetworkTopology network_topology;
  std::vector<SubGroupPolicy> sub_group_policies;  // spec.subGroupPolicy, in order (the first match wins)
  // task-topology annotations (volcano.sh/task-topology-affinity, -anti-affinity, -task-order)
  std::string task_topology_affinity, task_topology_anti_affinity, task_topology_order;
  WallTime creation_time{};
  // Expected run time (vcjob spec.runningEstimate, carried on the PodGroup as the annotation
  // tephra.io/running-estimate); 0 = not given, and then its queue's default applies (QueueInfo).
  std::chrono::seconds running_estimate{0};
  // Volcano's sla plugin: the PodGroup annotation volcano.sh/sla-waiting-time or sla-waiting-time; 0 = not set.
  std::chrono::milliseconds sla_waiting_time{0};
  // No PodGroup object exists: a plain pod scheduled at once as a gang of one, under the key its PodGroup
  // will have when the controller creates it (docs/scheduler-process.md, "Plain pods"). Nothing is written
  // for it; the real PodGroup, arriving under the same key, takes over its phase, memos and status.
  bool implicit = false;
  // ---- maintained by ClusterState (O(1) per pod change) ----
  std::array<int, kTaskStatusCount> status_count{};  // indexed by TaskStatus
  // per task role, the tasks that count towards the role's minimum (Volcano's CheckTaskValid): pending,
  // pipelined, allocated/binding/bound/running and succeeded. A succeeded pod kept from an earlier run (a
  // job resumed after AbortJob keeps its finished pods, and their names are not re-created) must count, or
  // the resumed gang can never become valid.
  std::map<std::string, int> role_valid;
  std::map<std::string, int> role_ready;   // per task role, IsAllocatedStatus or Succeeded
  Resource allocated;  // requests of tasks in IsAllocatedStatus
  Resource pending_request;  // requests of kPending and kPipelined tasks
  int pending_best_effort = 0;  // kPending tasks with best_effort (backfill candidates)
  uint64_t version = 0;  // bumped on any change to the job or its tasks
  // `priority` as the caller gave it, kept so that a PriorityClass appearing, changing or going (the
  // globalDefault one included) can resolve `priority` again.
  int32_t caller_priority = 0;
  // ---- maintained by the Scheduler (kept across UpsertJob; avoids per-cycle map lookups) ----
  // `mutable`: this is the scheduler's bookkeeping about the job (what it tried, what it last reported),
  // not state of the job; actions update it through the const JobInfo& the state hands out, which keeps
  // the job's real fields changeable only through ClusterState.
  struct SchedMemo {
    bool failed = false;  // last allocation attempt failed; the fields below describe it
    uint64_t failed_version = 0, failed_epoch = 0, failed_cycle = 0;
    int unschedulable = 0;
    std::string message;
    uint64_t status_version = 0;  // job version when its status was last evaluated (0 = never)
    bool ever_ready = false;      // reached minMember at least once (then it is not a stuck partial gang)
    std::optional<WallTime> partial_since;  // first cycle seen holding pods below minMember
    // Admitted by enqueue past the cluster's room so it could get a reservation (docs/reservations.md).
    bool admitted_for_reservation = false;
    // Last preempt/reclaim attempt that found no acceptable victims (per action: 0 preempt, 1 reclaim);
    // retried only when the job, capacity or the set of possible victims changed, or every N cycles.
    struct EvictMemo {
      bool failed = false;
      uint64_t version = 0, capacity_epoch = 0, victim_epoch = 0, cycle = 0;
    } evict[2];
  };
  mutable SchedMemo sched;

  int Count(TaskStatus s) const { return status_count[static_cast<size_t>(s)]; }
  // The sub-group `t` belongs to: the index of the first policy that takes it, and its match values joined
  // by '-' in *id; -1 for the default group. Volcano's rule: a policy takes a task only through
  // matchLabelKeys, so a policy without them takes none.
  int SubGroupOf(const TaskInfo& t, std::string* id) const;
  // Gang "ready" = Allocated+Binding+Bound+Running+Succeeded.
  int ReadyCount() const;
  int TotalTasks() const;  // non-terminal + succeeded + failed
};

enum class QueueState : uint8_t { kOpen, kClosed, kClosing, kUnknown };
struct QueueInfo {
  // ---- set by the caller ----
  std::string name;
  int32_t weight = 1;
  Resource capability = Resource::Unlimited();  // unset dimensions = kUnlimited
  Resource guarantee;
  std::optional<Resource> spec_deserved;  // spec.deserved (capacity plugin semantics; proportion ignores it)
  std::string parent;  // "" or "root" = top level
  QueueState state = QueueState::kOpen;
  bool reclaimable = true;
  int32_t priority = 0;
  std::string hierarchy, hierarchy_weights;  // volcano.sh/hierarchy annotations (drf enableHierarchy)
  // Running estimates for its jobs (annotations tephra.io/default-running-estimate and
  // tephra.io/max-running-estimate): the default for a job that gives none, and the cap on what a job may
  // claim. 0 = none.
  std::chrono::seconds default_running_estimate{0}, max_running_estimate{0};
  // ---- maintained by ClusterState ----
  Resource allocated;  // sum of job.allocated over its jobs
  Resource request;    // allocated + pending requests of its jobs
  uint64_t version = 0;
};

enum class HyperNodeMemberType : uint8_t { kNode, kHyperNode };
enum class MemberSelectorKind : uint8_t { kExact, kRegex, kLabel };
struct HyperNodeMember {
  HyperNodeMemberType type = HyperNodeMemberType::kNode;
  MemberSelectorKind kind = MemberSelectorKind::kExact;
  std::string name_or_pattern;  // exact name or regex (Go/RE2 syntax, unanchored, as Volcano matches it)
  LabelSelector label_selector;  // kLabel (nodes only)
};
struct HyperNodeInfo {
  std::string name;
  int tier = 1;
  std::string tier_name;
  std::vector<HyperNodeMember> members;
};

}  // namespace tephra::sched
