// Label and annotation keys with meaning to Volcano-compatible components (docs/volcano-behaviour.md,
// "Labels and annotations"), plus Tephra's own `tephra.io/` keys.
#pragma once

#include <string_view>

namespace tephra::api {

// --- Well-known Kubernetes labels ---
inline constexpr std::string_view kLabelHostname = "kubernetes.io/hostname";  // node label; topologyKey

// --- Pods created for a vcjob ---
inline constexpr std::string_view kTaskIndexKey = "volcano.sh/task-index";           // label + annotation
inline constexpr std::string_view kTaskSpecKey = "volcano.sh/task-spec";             // label + annotation
inline constexpr std::string_view kJobNameKey = "volcano.sh/job-name";               // label + annotation
inline constexpr std::string_view kJobNamespaceKey = "volcano.sh/job-namespace";     // label
inline constexpr std::string_view kQueueNameKey = "volcano.sh/queue-name";           // label + annotation
inline constexpr std::string_view kPodGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kJobVersionKey = "volcano.sh/job-version";
inline constexpr std::string_view kJobRetryCountKey = "volcano.sh/job-retry-count";
inline constexpr std::string_view kTemplateUidKey = "volcano.sh/template-uid";
inline constexpr std::string_view kNumaTopologyPolicyKey = "volcano.sh/numa-topology-policy";
inline constexpr std::string_view kPartitionIdKey = "volcano.sh/partition-id";
inline constexpr std::string_view kPreemptableKey = "volcano.sh/preemptable";
inline constexpr std::string_view kCooldownTimeKey = "volcano.sh/cooldown-time";
inline constexpr std::string_view kRevocableZoneKey = "volcano.sh/revocable-zone";
inline constexpr std::string_view kJdbMinAvailableKey = "volcano.sh/jdb-min-available";
inline constexpr std::string_view kJdbMaxUnavailableKey = "volcano.sh/jdb-max-unavailable";
inline constexpr std::string_view kJobForwardingKey = "volcano.sh/job-forwarding";
// Set on pods the controller is about to delete.
inline constexpr std::string_view kPodOutOfSyncKey = "volcano.sh/controller-out-of-sync";
// Job label shown by vcctl; default "Batch".
inline constexpr std::string_view kJobTypeKey = "volcano.sh/job-type";
inline constexpr std::string_view kDefaultJobType = "Batch";

// --- PodGroups for plain pods ---
inline constexpr std::string_view kGroupMinMemberAnnotation = "scheduling.volcano.sh/group-min-member";
// Pod (and namespace, for PodGroup admission) annotation naming the queue; distinct from kQueueNameKey above.
inline constexpr std::string_view kSchedulingQueueNameAnnotation = "scheduling.volcano.sh/queue-name";
inline constexpr std::string_view kNetworkTopologyModeAnnotation = "volcano.sh/network-topology-mode";
inline constexpr std::string_view kNetworkTopologyHighestTierAnnotation = "volcano.sh/network-topology-highest-tier";
inline constexpr std::string_view kPodGroupNamePrefix = "podgroup-";

// --- Queue ---
inline constexpr std::string_view kHierarchyAnnotation = "volcano.sh/hierarchy";                // "root/a/b"
inline constexpr std::string_view kHierarchyWeightsAnnotation = "volcano.sh/hierarchy-weights";  // "1/2/8"
inline constexpr std::string_view kNodeGroupResourceLimitsAnnotation = "volcano.sh/nodegroup-resource-limits";
inline constexpr std::string_view kClosedByParentAnnotation = "volcano.sh/closed-by-parent";

// --- HyperNode ---
inline constexpr std::string_view kNetworkTopologySourceLabel = "volcano.sh/network-topology-source";

// --- Pod admission ---
inline constexpr std::string_view kQueueAllocationGateAnnotation = "scheduling.volcano.sh/queue-allocation-gate";

// --- JobFlow / JobTemplate ---
inline constexpr std::string_view kCreatedByJobTemplateKey = "volcano.sh/createdByJobTemplate";
inline constexpr std::string_view kCreatedByJobFlowKey = "volcano.sh/createdByJobFlow";

// --- Scheduler plugins ---
inline constexpr std::string_view kTaskTopologyAffinityAnnotation = "volcano.sh/task-topology-affinity";
inline constexpr std::string_view kTaskTopologyAntiAffinityAnnotation = "volcano.sh/task-topology-anti-affinity";
inline constexpr std::string_view kTaskTopologyTaskOrderAnnotation = "volcano.sh/task-topology-task-order";
inline constexpr std::string_view kSlaWaitingTimeAnnotation = "volcano.sh/sla-waiting-time";
inline constexpr std::string_view kSlaWaitingTimeShortAnnotation = "sla-waiting-time";
inline constexpr std::string_view kNodeGroupNameLabel = "volcano.sh/nodegroup-name";
inline constexpr std::string_view kResourceStrategyScoringTypeAnnotation = "volcano.sh/resource-strategy-scoring-type";

// --- Job plugins ---
inline constexpr std::string_view kHcclRankIndexAnnotation = "hccl/rankIndex";

// --- Tephra's own keys ---
inline constexpr std::string_view kTephraPrefix = "tephra.io/";
// Running estimates (docs/reservations.md): a PodGroup's expected run time (the job controller copies the vcjob's
// spec.runningEstimate; a plain pod may carry it too), and a Queue's default and maximum for its jobs. Go
// durations ("2h30m").
inline constexpr std::string_view kRunningEstimateAnnotation = "tephra.io/running-estimate";
inline constexpr std::string_view kQueueDefaultRunningEstimateAnnotation = "tephra.io/default-running-estimate";
inline constexpr std::string_view kQueueMaxRunningEstimateAnnotation = "tephra.io/max-running-estimate";
// A Queue annotation "true": its jobs are held to their running estimate. A job still Running when its estimate
// (its own, capped by the queue's maximum, else the queue's default) has passed is terminated, like a Kubernetes
// Job past activeDeadlineSeconds (docs/reservations.md).
inline constexpr std::string_view kQueueEnforceRunningEstimateAnnotation = "tephra.io/enforce-running-estimate";
// nodesim: how long a pod bound to a simulated node runs, and the exit code it ends with (0 = Succeeded).
inline constexpr std::string_view kSimRunSecondsAnnotation = "tephra.io/sim-run-seconds";
inline constexpr std::string_view kSimExitCodeAnnotation = "tephra.io/sim-exit-code";
// The fault controller's record on a Node (docs/faults.md): the signals acted on, the budget's hold, that
// Tephra cordoned it, until when Tephra's scheduler keeps avoiding it after the fault cleared, and since when
// the fault has been acted on (the node budget counts recent ones).
inline constexpr std::string_view kFaultAnnotation = "tephra.io/fault";
inline constexpr std::string_view kFaultHeldAnnotation = "tephra.io/fault-held";
inline constexpr std::string_view kFaultCordonedAnnotation = "tephra.io/fault-cordoned";
inline constexpr std::string_view kFaultAvoidUntilAnnotation = "tephra.io/fault-avoid-until";
inline constexpr std::string_view kFaultSinceAnnotation = "tephra.io/fault-since";

// --- Defaults ---
inline constexpr std::string_view kDefaultSchedulerName = "volcano";

}  // namespace tephra::api
