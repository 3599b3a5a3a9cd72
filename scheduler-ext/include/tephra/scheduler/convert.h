// API objects (tephra::api) -> the scheduling core's compact types (tephra::sched), following the rules
// documented in core/sched/include/tephra/sched/types.h. Pure functions: unit-tested without a cluster.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tephra/api/apps.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/devices.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"
#include "tephra/sched/resource.h"
#include "tephra/sched/result.h"
#include "tephra/sched/types.h"

namespace tephra::scheduler {

// PodGroup minResources in ResourceQuota vocabulary (`requests.cpu`, `limits.*`, `count/pods`) -> plain
// resource names: requests.X folds into X, limits and object counts are dropped.
api::ResourceList NormalizeQuotaKeys(const api::ResourceList& in);

// Every converted quantity is clamped to [0, ceiling]: sched::kMaxQuantity for what one pod or node holds,
// sched::kMaxAggregateQuantity for PodGroup minimums and Queue quantities (resource.h says why that keeps
// the core's sums from overflowing); negative quantities become 0.
int64_t ClampQuantity(int64_t v, int64_t ceiling = sched::kMaxQuantity);

// What a node offers: cpu -> millicores, memory/ephemeral-storage -> bytes, pods and extended scalars ->
// integer units. Interns every name (nodes are the cluster admin's; only they may take a dimension). Names
// past the registry's capacity are dropped; `dropped` receives them so the caller can log and count them.
sched::Resource ToResource(const api::ResourceList& list, sched::ResourceRegistry* reg,
                           std::set<std::string>* dropped = nullptr);
// What a pod, PodGroup or Queue names: the same units, but never interns. A name without a dimension that is
// requested (> 0) sets sched::kUnoffered (the request then fits no node) and is appended to `unoffered`
// (when given), for the explanation. Quantities are clamped to `ceiling` (see ClampQuantity).
sched::Resource ToRequest(const api::ResourceList& list, const sched::ResourceRegistry& reg,
                          std::vector<std::string>* unoffered, int64_t ceiling = sched::kMaxQuantity);
// The inverse, for Queue status.allocated (cpu as millicores "500m"/"2", memory in bytes).
api::ResourceList FromResource(const sched::Resource& r, const sched::ResourceRegistry& reg);

// `ascend_info`: the node's `mindx-dl-deviceinfo-<node>` report when there is one (card health); without it
// the node's own annotations of the same keys are read (older Ascend device plugins). Interns the node's
// resource names (ToResource); `dropped` receives those past the registry's capacity.
sched::NodeInfo ToNodeInfo(const api::Node& node, sched::ResourceRegistry* reg,
                           const api::AscendDeviceInfo* ascend_info = nullptr, std::set<std::string>* dropped = nullptr);

// Whether Tephra's scheduler keeps batch pods off a node: the fault controller marked it faulted
// (tephra.io/fault) or healed it less than --fault-avoid-seconds ago (tephra.io/fault-avoid-until).
bool FaultAvoided(const api::ObjectMeta& node, sched::WallTime now);

// Device-level placement (docs/devices.md). A node's cards, from its Ascend capacity and `accelerator-type`
// label, or from the Volcano vGPU device plugin's registration; empty when neither is there.
sched::NodeDevices ToNodeDevices(const api::Node& node, const api::AscendDeviceInfo* ascend_info = nullptr);
// What the pod asks of a node's cards: huawei.com/Ascend910 whole cards, or volcano.sh/vgpu-number shared
// cards with vgpu-memory (MiB) and vgpu-cores (percent) each.
sched::DeviceRequest ToDeviceRequest(const api::Pod& pod);
// The same, with the pod's requests (api::PodRequests) already summed: ToTaskInfo sums them once per pod.
sched::DeviceRequest ToDeviceRequest(const api::Pod& pod, const api::ResourceList& requests);
// The cards a placed pod holds, from the annotations the binder wrote (the Ascend plugin's own record of the
// cards it mounted, huawei.com/AscendReal, when present).
std::vector<std::string> CardsOfPod(const api::Pod& pod);
// The annotations the binder puts on the Binding of a decision with cards: the protocol of the device plugin
// of the cards' kind. `now` stamps predicate-time (nanoseconds) and the vGPU times (seconds).
std::map<std::string, std::string> DeviceBindAnnotations(const sched::BindDecision& d, sched::WallTime now);

// The pod informer's transform: keeps only what the conversions below read (annotations by name, the
// controlling owner, resources, host ports, claims, phase), so 100k cached pods stay small. Whatever a
// conversion reads from a pod must survive it (ConvertTest.CompactedPodConvertsLikeTheOriginal).
void CompactPodForCache(api::json* pod);

// Whether the pod is ours to schedule (its schedulerName is one of `names`).
bool IsManaged(const api::Pod& pod, const std::set<std::string>& names);
// Whether the core should see the pod at all: managed pods, and foreign pods holding a node.
bool ShouldTrack(const api::Pod& pod, const std::set<std::string>& names);
// Plain pods (docs/scheduler-process.md, "Plain pods"): a managed pod that names no PodGroup and has no
// controlling owner is scheduled at once as a gang of one, under the key of the PodGroup the controller will
// create for it ("<ns>/podgroup-<pod uid>"), instead of waiting for that PodGroup and the pod's annotation.
// A pod that names a group, or has a controlling owner (a vcjob, a ReplicaSet whose PodGroup may ask for a
// larger gang through its owner's annotations, ...), waits for its PodGroup as before.
bool IsImplicitGangOfOne(const api::Pod& pod, const std::set<std::string>& names);
// The stand-in job of such a pod, as the controller's PodGroup will describe it: minMember 1, minResources
// the pod's requests, queue from the pod's `scheduling.volcano.sh/queue-name` annotation (else
// `default_queue`), the pod's priority class, network topology from the pod's annotations.
sched::JobInfo ImplicitJobInfo(const api::Pod& pod, const sched::ResourceRegistry* reg, const std::string& default_queue);
// volcano.sh/preemptable read as Volcano reads it: the annotation, else the label; absent = true; a value
// Go's strconv.ParseBool rejects = false.
bool PodPreemptable(const api::ObjectMeta& meta);
// `creation_index` is supplied by the caller (monotone by creationTimestamp then arrival; see cache).
// Pods, PodGroups and Queues are converted with ToRequest: they never take a dimension (only nodes do), and a
// pod or PodGroup that requests a resource no node offers fits no node (TaskInfo/JobInfo::unoffered).
sched::TaskInfo ToTaskInfo(const api::Pod& pod, const sched::ResourceRegistry* reg, const std::set<std::string>& names);
sched::TaskStatus PodStatusOf(const api::Pod& pod);
// System-default topology spread (sched::ClusterState::DefaultSpreadSelector): the pod's controlling owner
// as TaskInfo::controller names it ("<Kind>/<name>", "" unless an apps/v1 ReplicaSet or StatefulSet or a
// v1 ReplicationController), and the selector such an owner contributes.
std::string SpreadControllerOf(const api::Pod& pod);
sched::LabelSelector ToSpreadSelector(const api::Workload& w);

// `default_queue` replaces an empty spec.queue (--default-queue).
sched::JobInfo ToJobInfo(const api::PodGroup& pg, const sched::ResourceRegistry* reg, const std::string& default_queue);
sched::PodGroupPhase PhaseOf(const std::string& phase);
// Capability, guarantee and deserved on a resource no node offers are left out (irrelevant until one does).
sched::QueueInfo ToQueueInfo(const api::Queue& q, const sched::ResourceRegistry* reg);
sched::HyperNodeInfo ToHyperNodeInfo(const api::HyperNode& hn);

// Writes the core's status decision into a PodGroup's status (phase, counters, condition merged by type:
// a condition of the same type is replaced, keeping lastTransitionTime when nothing but time changed).
// Returns true when the status changed.
bool ApplyPodGroupStatus(const sched::PodGroupStatusUpdate& u, const std::string& now_rfc3339,
                         api::PodGroupStatus* status);

// RFC 3339 (seconds) of a wall time.
std::string Rfc3339(sched::WallTime t);
// Parses creationTimestamp; epoch on error.
sched::WallTime ParseTime(const std::string& rfc3339);

// Volumes as the volume predicates read them.
sched::ClaimInfo ToClaimInfo(const api::PersistentVolumeClaim& pvc);
sched::VolumeInfo ToVolumeInfo(const api::PersistentVolume& pv);
sched::StorageClassInfo ToStorageClassInfo(const api::StorageClass& sc);
// A CSINode's per-driver attach limits, keyed as sched::CsiLimitKey names them.
std::map<std::string, int64_t> ToCsiLimits(const api::CSINode& node);

}  // namespace tephra::scheduler
