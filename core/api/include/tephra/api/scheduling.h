// scheduling.volcano.sh/v1beta1: PodGroup and Queue (docs/volcano-behaviour.md, "PodGroup spec and status",
// "Queue spec and status").
//
// Enum-like fields are plain strings with named constants, so a value written by a newer Volcano
// round-trips instead of failing to decode.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/meta.h"

namespace tephra::api {

// NetworkTopologySpec.mode
inline constexpr std::string_view kNetworkTopologyHard = "hard";
inline constexpr std::string_view kNetworkTopologySoft = "soft";

// Shared by Job, Job partitions, PodGroup and PodGroup subgroups (identical shape in Volcano's packages).
struct NetworkTopologySpec {
  std::string mode;                                 // "hard" | "soft"
  std::optional<int32_t> highest_tier_allowed;      // highestTierAllowed
  std::string highest_tier_name;                    // highestTierName; exclusive with highest_tier_allowed
  json extra;
};
Status Decode(const json& j, NetworkTopologySpec* out);
void Encode(const NetworkTopologySpec& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// PodGroup.

inline constexpr std::string_view kPodGroupPending = "Pending";
inline constexpr std::string_view kPodGroupRunning = "Running";
inline constexpr std::string_view kPodGroupUnknown = "Unknown";
inline constexpr std::string_view kPodGroupInqueue = "Inqueue";
inline constexpr std::string_view kPodGroupCompleted = "Completed";

inline constexpr std::string_view kPodGroupConditionUnschedulable = "Unschedulable";
inline constexpr std::string_view kPodGroupConditionScheduled = "Scheduled";
inline constexpr std::string_view kPodGroupReasonPodFailed = "PodFailed";
inline constexpr std::string_view kPodGroupReasonPodDeleted = "PodDeleted";
inline constexpr std::string_view kPodGroupReasonNotEnoughResources = "NotEnoughResources";
inline constexpr std::string_view kPodGroupReasonNotEnoughTasks = "NotEnoughTasks";
inline constexpr std::string_view kPodGroupReasonNotEnoughPodsOfTask = "NotEnoughPodsOfTask";

struct SubGroupPolicySpec {
  std::string name;
  std::optional<NetworkTopologySpec> network_topology;
  std::optional<int32_t> sub_group_size;  // subGroupSize; default 1
  std::optional<int32_t> min_sub_groups;  // minSubGroups; default 0
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> match_label_keys;
  json extra;
};
Status Decode(const json& j, SubGroupPolicySpec* out);
void Encode(const SubGroupPolicySpec& in, json* j);

struct PodGroupSpec {
  int32_t min_member = 0;
  std::map<std::string, int32_t> min_task_member;
  std::string queue;
  std::string priority_class_name;
  std::optional<ResourceList> min_resources;
  std::optional<NetworkTopologySpec> network_topology;
  std::vector<SubGroupPolicySpec> sub_group_policy;
  json extra;
};
Status Decode(const json& j, PodGroupSpec* out);
void Encode(const PodGroupSpec& in, json* j);

struct PodGroupCondition {
  std::string type;
  std::string status;
  std::string transition_id;  // transitionID
  std::string last_transition_time;
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, PodGroupCondition* out);
void Encode(const PodGroupCondition& in, json* j);

struct PodGroupStatus {
  std::string phase;
  std::vector<PodGroupCondition> conditions;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  json extra;
};
Status Decode(const json& j, PodGroupStatus* out);
void Encode(const PodGroupStatus& in, json* j);

struct PodGroup {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  PodGroupSpec spec;
  PodGroupStatus status;
  json extra;
};
Status Decode(const json& j, PodGroup* out);
void Encode(const PodGroup& in, json* j);

// ---------------------------------------------------------------------------------------------------------
// Queue (cluster scoped).

inline constexpr std::string_view kQueueStateOpen = "Open";
inline constexpr std::string_view kQueueStateClosed = "Closed";
inline constexpr std::string_view kQueueStateClosing = "Closing";
inline constexpr std::string_view kQueueStateUnknown = "Unknown";

inline constexpr std::string_view kDequeueStrategyFIFO = "fifo";
inline constexpr std::string_view kDequeueStrategyTraverse = "traverse";

inline constexpr std::string_view kRootQueue = "root";
inline constexpr std::string_view kDefaultQueue = "default";

struct Cluster {
  std::string name;
  int32_t weight = 0;
  ResourceList capacity;
  json extra;
};
Status Decode(const json& j, Cluster* out);
void Encode(const Cluster& in, json* j);

struct Guarantee {
  ResourceList resource;
  json extra;
};
Status Decode(const json& j, Guarantee* out);
void Encode(const Guarantee& in, json* j);

struct NodeGroupAffinity {
  std::vector<std::string> required_during_scheduling_ignored_during_execution;
  std::vector<std::string> preferred_during_scheduling_ignored_during_execution;
  json extra;
};
Status Decode(const json& j, NodeGroupAffinity* out);
void Encode(const NodeGroupAffinity& in, json* j);

struct QueueAffinity {
  std::optional<NodeGroupAffinity> node_group_affinity;
  std::optional<NodeGroupAffinity> node_group_anti_affinity;
  json extra;
};
Status Decode(const json& j, QueueAffinity* out);
void Encode(const QueueAffinity& in, json* j);

struct QueueSpec {
  int32_t weight = 0;
  ResourceList capability;
  std::optional<bool> reclaimable;
  std::vector<Cluster> extend_clusters;
  Guarantee guarantee;
  std::optional<QueueAffinity> affinity;
  std::string type;
  std::string parent;
  ResourceList deserved;
  int32_t priority = 0;
  std::string dequeue_strategy;
  json extra;
};
Status Decode(const json& j, QueueSpec* out);
void Encode(const QueueSpec& in, json* j);

struct Reservation {
  std::vector<std::string> nodes;
  ResourceList resource;
  json extra;
};
Status Decode(const json& j, Reservation* out);
void Encode(const Reservation& in, json* j);

struct QueueStatus {
  std::string state;
  int32_t unknown = 0;
  int32_t pending = 0;
  int32_t running = 0;
  int32_t inqueue = 0;
  int32_t completed = 0;
  Reservation reservation;
  ResourceList allocated;
  json extra;
};
Status Decode(const json& j, QueueStatus* out);
void Encode(const QueueStatus& in, json* j);

struct Queue {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  QueueSpec spec;
  QueueStatus status;
  json extra;
};
Status Decode(const json& j, Queue* out);
void Encode(const Queue& in, json* j);

}  // namespace tephra::api
