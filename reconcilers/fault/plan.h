// The fault controller's pure plan (docs/faults.md): which faults a Node shows through the API alone, which
// pods they strand, and what to do about it. No I/O; the clock comes in as `now`.
//
// Signals (Detect):
//   * NotReady: the Ready condition False or Unknown for at least `not_ready_grace`, or the node controller's
//     node.kubernetes.io/unreachable / not-ready NoExecute taint. The kubelet is gone: its pods are force-deleted,
//     because nothing will ever finish a graceful delete and a vcjob pod's replacement has the same name.
//   * A configured node condition True (node-problem-detector, NVSentinel: GpuXidError, ...) or a configured
//     taint: the node is up but unfit; its batch pods are deleted with their own grace period, so the
//     kubelet sends SIGTERM and a framework can write a checkpoint first.
//   * DeviceUnhealthy: cards a device plugin lists unhealthy (Ascend's -Unhealthy / -NetworkUnhealthy
//     lists, Volcano vGPU's gpu-unhealthy-ids and register health). Only the pods holding those cards are
//     affected. Without a card list, an allocatable drop below capacity of nvidia.com/gpu or
//     huawei.com/Ascend910 affects the node's pods asking for it, but only when they ask for more than is
//     left healthy (one of them must hold the bad card; which one, the API does not say).
//   * Pods failed by the kubelet: a batch pod refused at admission (UnexpectedAdmissionError: the device
//     plugin could not give it what the scheduler promised) is deleted so its job replaces it, and the node is
//     avoided for `avoid_after_clear`. A batch pod that failed on a faulted node around the time of the fault
//     (it held a bad card, or the node failed) is deleted too: a job without a PodFailed policy would
//     otherwise run short of its gang until a human came.
//
// Actions (Plan): record the fault once (annotation tephra.io/fault on the Node holds what was acted on, so
// a restarted controller does not say it again; Events on the Node and on each affected job), delete the
// affected pods of batch workloads (pods in a PodGroup), optionally cordon, and never act on more than
// `max_node_fraction` of the nodes within `budget_window` (a bad rule or a partition must not empty the cluster). When the
// signals clear, the annotation goes, a node Tephra cordoned is uncordoned, and a Normal Event says so.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/core/clock.h"

namespace tephra::reconcilers::fault {

// On the Node (tephra/api/labels.h): the signals Tephra acted on ("GpuXidError,NotReady"); whether Tephra
// cordoned it; signals seen but held back by the node budget (so the Warning is said once); after the fault
// cleared, the RFC 3339 time until which Tephra's scheduler still avoids it.
inline constexpr const char* kFaultAnnotation = "tephra.io/fault";
inline constexpr const char* kCordonedAnnotation = "tephra.io/fault-cordoned";
inline constexpr const char* kHeldAnnotation = "tephra.io/fault-held";
inline constexpr const char* kAvoidUntilAnnotation = "tephra.io/fault-avoid-until";
inline constexpr const char* kSinceAnnotation = "tephra.io/fault-since";  // RFC 3339: first acted on
static_assert(std::string_view(kSinceAnnotation) == api::kFaultSinceAnnotation &&
              std::string_view(kFaultAnnotation) == api::kFaultAnnotation &&
              std::string_view(kCordonedAnnotation) == api::kFaultCordonedAnnotation &&
              std::string_view(kHeldAnnotation) == api::kFaultHeldAnnotation &&
              std::string_view(kAvoidUntilAnnotation) == api::kFaultAvoidUntilAnnotation);

struct FaultConfig {
  // Node condition types that are faults when their status is True.
  std::vector<std::string> conditions = {"GpuXidError",     "GpuNvlinkWatch",      "GpuMemWatch",
                                         "SysLogsXIDError", "SysLogsGPUFallenOff", "NVSwitchFatalError",
                                         "KernelDeadlock",  "ReadonlyFilesystem",  "NetworkUnavailable"};
  // Taint keys that are faults, whatever their effect or value.
  std::vector<std::string> taints = {"nvidia.com/gpu-xid-error"};
  std::chrono::seconds not_ready_grace{5};
  bool device_faults = true;       // act on unhealthy cards
  bool cordon = false;             // cordon a faulted node (never drain: only batch pods are deleted)
  // The node budget: at most this fraction of the nodes (at least one) newly acted on within `budget_window`.
  // A window, not "marked now": nodes that died days ago and were never removed must not use the budget up,
  // while a partition that makes half the nodes look dead is still handled a tenth at a time.
  double max_node_fraction = 0.1;
  std::chrono::seconds budget_window{600};
  std::chrono::seconds avoid_after_clear{300};  // the scheduler keeps avoiding a healed node this long
};

struct Signal {
  std::string name = {};     // "NotReady", a condition type, "taint:<key>", "DeviceUnhealthy"
  std::string since = {};    // RFC 3339 start as the API shows it; "" when unknown
  std::string message = {};  // what proved it
  bool node_down = false;  // the kubelet cannot act: deletes are forced
  // DeviceUnhealthy only: the resource, and the cards when the device plugin names them.
  std::string resource = {};
  std::vector<std::string> cards = {};
};

// The signals a node shows now. `*recheck_after` is set when a signal is still inside its grace period.
std::vector<Signal> Detect(const api::Node& node, const FaultConfig& cfg, core::Clock::WallTime now,
                           std::optional<std::chrono::milliseconds>* recheck_after = nullptr);
// "GpuXidError,NotReady": the sorted, distinct names (what kFaultAnnotation holds).
std::string Fingerprint(const std::vector<Signal>& signals);

// How a job asks for its faults to be handled. Read from the pod's labels, then its vcjob's (MindCluster
// examples put Ascend's labels on either):
//   * `fault-scheduling` (Ascend): `grace` deletes the pods gracefully, `force` force-deletes them, `off` leaves
//     them alone (the job's own policies and the kubelet decide). With `grace` or `force`, the whole job is
//     rescheduled, as Ascend does, unless `pod-rescheduling: on` asks for only the pods on the fault.
//   * `tephra.io/fault-grace-seconds` (annotation): the grace period of a fault delete on a live node, in
//     place of the pod's terminationGracePeriodSeconds, so a job can ask for more checkpoint time on a fault
//     than on an ordinary delete.
// Without either, the default: only the affected pods, with the pod's own grace period.
inline constexpr const char* kFaultSchedulingLabel = "fault-scheduling";
inline constexpr const char* kPodReschedulingLabel = "pod-rescheduling";
inline constexpr const char* kFaultGraceAnnotation = "tephra.io/fault-grace-seconds";

struct JobFaultPolicy {
  enum class Mode { kDefault, kGrace, kForce, kOff } mode = Mode::kDefault;
  bool whole_job = false;                     // delete every pod of the job, not only the affected ones
  std::optional<int64_t> grace_seconds = {};  // tephra.io/fault-grace-seconds
};
// `job` is the pod's vcjob's metadata, or nullptr (a plain PodGroup, or not in the cache).
JobFaultPolicy PolicyOf(const api::Pod& p, const api::ObjectMeta* job);

struct Observed {
  api::Node node;
  std::vector<api::Pod> pods;  // pods bound to the node
  // For the pods on the node: their vcjobs' metadata by "<ns>/<name>", and every pod of their PodGroups by
  // "<ns>/<group>" (a job-level restart deletes those on other nodes too).
  std::map<std::string, api::ObjectMeta> jobs;
  std::map<std::string, std::vector<api::Pod>> groups;
  int nodes_total = 0;         // nodes in the cluster
  int nodes_acted = 0;         // nodes that count against the budget (CountsAgainstBudget), this one included
  core::Clock::WallTime now;
};

struct PodDelete {
  std::string ns = {}, name = {}, uid = {};
  std::optional<int64_t> grace_seconds = {};  // 0 = forced; nullopt = the pod's own
  std::string signal = {};                    // the signal that strands it
  std::string job_kind = {}, job_name = {}, job_uid = {};  // the job to record it on ("Job" or "PodGroup")
};

struct EventRecord {
  enum class On { kNode, kJob } on = On::kNode;
  std::string job_kind = {}, job_ns = {}, job_name = {}, job_uid = {};  // On::kJob
  std::string type = {};                                                // "Normal" | "Warning"
  std::string reason = {}, message = {};
};

struct Actions {
  // Annotation writes on the Node: a value to set, or nullopt to remove; absent = unchanged.
  std::optional<std::optional<std::string>> fault_annotation;
  std::optional<std::optional<std::string>> held_annotation;
  std::optional<std::optional<std::string>> avoid_annotation;
  std::optional<std::optional<std::string>> since_annotation;
  std::optional<bool> cordon;  // set spec.unschedulable (with kCordonedAnnotation) or clear both
  std::vector<PodDelete> deletes;
  std::vector<EventRecord> events;
  std::vector<Signal> detected;  // signals newly recorded (metrics)
  std::optional<std::chrono::milliseconds> requeue_after;
  bool empty() const {
    return !fault_annotation && !held_annotation && !avoid_annotation && !since_annotation && !cordon &&
           deletes.empty() && events.empty();
  }
};

Actions Plan(const Observed& o, const FaultConfig& cfg);

// Whether a node uses the budget: marked faulted, and first acted on less than `budget_window` ago (a mark
// without a readable time counts).
bool CountsAgainstBudget(const api::Node& node, const FaultConfig& cfg, core::Clock::WallTime now);

// Whether a pod is a batch workload's (in a PodGroup) and still holds its node.
bool IsBatchPod(const api::Pod& p);

// "<ns>/<group>" of a pod in a PodGroup; "" otherwise.
std::string GroupKey(const api::Pod& p);

// The kubelet's reason for a pod it refused at admission because a device plugin could not allocate what the
// scheduler promised (a card gone bad, a stale view): the pod is Failed and never started.
inline constexpr const char* kUnexpectedAdmissionError = "UnexpectedAdmissionError";

}  // namespace tephra::reconcilers::fault
