#include "tephra/api/scheduling.h"

#include "codec_macros.h"

namespace tephra::api {

#define NTS_FIELDS(F, A) F("mode", mode) F("highestTierAllowed", highest_tier_allowed) F("highestTierName", highest_tier_name)
TEPHRA_API_CODEC(NetworkTopologySpec, NTS_FIELDS)

#define SGP_FIELDS(F, A)                                                                                     \
  F("name", name) F("networkTopology", network_topology) F("subGroupSize", sub_group_size)               \
      F("minSubGroups", min_sub_groups) F("labelSelector", label_selector) F("matchLabelKeys", match_label_keys)
TEPHRA_API_CODEC(SubGroupPolicySpec, SGP_FIELDS)
#define PGSPEC_FIELDS(F, A)                                                                                      \
  F("minMember", min_member) F("minTaskMember", min_task_member) F("queue", queue)                           \
      F("priorityClassName", priority_class_name) F("minResources", min_resources)                           \
          F("networkTopology", network_topology) F("subGroupPolicy", sub_group_policy)
TEPHRA_API_CODEC(PodGroupSpec, PGSPEC_FIELDS)
#define PGCOND_FIELDS(F, A)                                                                                     \
  F("type", type) F("status", status) F("transitionID", transition_id)                                      \
      F("lastTransitionTime", last_transition_time) F("reason", reason) F("message", message)
TEPHRA_API_CODEC(PodGroupCondition, PGCOND_FIELDS)
#define PGSTATUS_FIELDS(F, A) \
  F("phase", phase) F("conditions", conditions) F("running", running) F("succeeded", succeeded) F("failed", failed)
TEPHRA_API_CODEC(PodGroupStatus, PGSTATUS_FIELDS)
#define PG_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(PodGroup, PG_FIELDS, "scheduling.volcano.sh", "v1beta1", "podgroups", true)

#define CLUSTER_FIELDS(F, A) F("name", name) F("weight", weight) F("capacity", capacity)
TEPHRA_API_CODEC(Cluster, CLUSTER_FIELDS)
#define GUARANTEE_FIELDS(F, A) F("resource", resource)
TEPHRA_API_CODEC(Guarantee, GUARANTEE_FIELDS)
#define NGA_FIELDS(F, A)                                                                                  \
  F("requiredDuringSchedulingIgnoredDuringExecution", required_during_scheduling_ignored_during_execution) \
  F("preferredDuringSchedulingIgnoredDuringExecution", preferred_during_scheduling_ignored_during_execution)
TEPHRA_API_CODEC(NodeGroupAffinity, NGA_FIELDS)
#define QAFF_FIELDS(F, A) F("nodeGroupAffinity", node_group_affinity) F("nodeGroupAntiAffinity", node_group_anti_affinity)
TEPHRA_API_CODEC(QueueAffinity, QAFF_FIELDS)
#define QSPEC_FIELDS(F, A)                                                                                       \
  F("weight", weight) F("capability", capability) F("reclaimable", reclaimable)                              \
      F("extendClusters", extend_clusters) F("guarantee", guarantee) F("affinity", affinity) F("type", type) \
          F("parent", parent) F("deserved", deserved) F("priority", priority)                                \
              F("dequeueStrategy", dequeue_strategy)
TEPHRA_API_CODEC(QueueSpec, QSPEC_FIELDS)
#define RESV_FIELDS(F, A) F("nodes", nodes) F("resource", resource)
TEPHRA_API_CODEC(Reservation, RESV_FIELDS)
#define QSTATUS_FIELDS(F, A)                                                                                    \
  F("state", state) F("unknown", unknown) F("pending", pending) F("running", running) F("inqueue", inqueue) \
      F("completed", completed) F("reservation", reservation) F("allocated", allocated)
TEPHRA_API_CODEC(QueueStatus, QSTATUS_FIELDS)
#define QUEUE_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Queue, QUEUE_FIELDS, "scheduling.volcano.sh", "v1beta1", "queues", false)

}  // namespace tephra::api
