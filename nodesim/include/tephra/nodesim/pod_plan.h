// The per-pod plan: given what the API server says about a pod and the current time, what the simulated
// kubelet writes next and when it needs to look at the pod again. Pure: no I/O, no clock reads, so the
// whole life cycle is unit-tested with fixed times.
//
// Life cycle: Pending -> Running at once (IPs, startTime, conditions, every container running+ready), then,
// when `tephra.io/sim-run-seconds` has elapsed since startTime, Succeeded (every exit code 0) or Failed.
// Exit codes come from `tephra.io/sim-exit-code` (all containers) and `tephra.io/sim-exit-code.<container>`
// (one container; wins). restartPolicy is deliberately not simulated: the annotations decide the outcome.
// A pod with a deletionTimestamp is deleted (grace 0) min(its grace period, max_grace) after the deletion
// request; a pod already Succeeded/Failed is deleted at once, as the kubelet does.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"

namespace tephra::nodesim {

using json = nlohmann::json;
using WallTime = core::Clock::WallTime;

inline constexpr const char* kRunSecondsAnnotation = "tephra.io/sim-run-seconds";
inline constexpr const char* kExitCodeAnnotation = "tephra.io/sim-exit-code";
inline constexpr const char* kExitCodeAnnotationPrefix = "tephra.io/sim-exit-code.";
// The exit codes apply to the first N attempts of a vcjob only (the pod's volcano.sh/job-retry-count is below
// N); later attempts exit 0. Lets a job fail, be restarted by its policy, and then succeed.
inline constexpr const char* kFailAttemptsAnnotation = "tephra.io/sim-fail-attempts";
inline constexpr const char* kJobRetryCountAnnotation = "volcano.sh/job-retry-count";

struct ContainerView {
  std::string name;
  std::string image;
};

// The few fields of a pod the simulator needs; kept instead of the whole object so 100,000 pods stay small.
struct PodView {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string phase;               // "" counts as Pending
  std::string deletion_timestamp;  // RFC 3339; "" when not being deleted
  std::optional<int64_t> deletion_grace_seconds;
  std::map<std::string, std::string> annotations;  // only tephra.io/sim-* keys
  std::string job_retry_count;  // volcano.sh/job-retry-count ("" when absent)
  std::vector<ContainerView> containers;
  std::vector<ContainerView> init_containers;
  std::string start_time;  // status.startTime
  std::string pod_ip;      // status.podIP
  std::string host_ip;     // status.hostIP
  json scheduled_condition;  // status.conditions[type=PodScheduled], kept as the scheduler wrote it

  std::string Key() const { return namespace_ + "/" + name; }
  bool Finished() const { return phase == "Succeeded" || phase == "Failed"; }
};

// Extracts a PodView from a pod object. Fails only when the object has no name or has wrong types.
core::StatusOr<PodView> DecodePodView(const json& pod);

// Annotation values after validation; invalid ones fall back to the default and are listed in `problems`.
struct SimAnnotations {
  std::optional<double> run_seconds;  // nullopt: run until deleted
  std::map<std::string, int> exit_codes;  // per container (and init container)
  std::vector<std::string> problems;  // "tephra.io/sim-exit-code: \"x\" is not an integer in 0..255; using 0"
};
SimAnnotations ParseSimAnnotations(const PodView& pod);

struct PodPlanContext {
  WallTime now;
  std::string host_ip;  // the node's InternalIP
  std::string pod_ip;   // an address to use if the pod has none yet
  int max_grace_seconds = 1;
};

struct PodPlan {
  enum class Action { kNone, kWriteStatus, kDelete };
  Action action = Action::kNone;
  // For kWriteStatus: a JSON merge patch for the pods/status subresource. It carries metadata.uid so the
  // server rejects it if the pod was replaced by a namesake in the meantime.
  json status_patch;
  std::string new_phase;  // phase written by status_patch
  // When to plan this pod again (a run time ending, a grace period expiring); nullopt: only on change.
  std::optional<WallTime> next;
  std::vector<std::string> problems;  // invalid annotations, to report once as Warning events
};

PodPlan PlanPod(const PodView& pod, const PodPlanContext& ctx);
// A running pod whose card went bad: every container exits 1 with `error` as its message, and the pod is
// Failed, as a CUDA or CANN error ends the workload (restartPolicy Never; the job's policies take it from there).
PodPlan DeviceFailurePlan(const PodView& pod, const std::string& error, WallTime now);

// Kubernetes MicroTime ("2026-11-22T09:10:55.123456Z"), used by Lease.spec.renewTime and events.k8s.io.
std::string FormatMicroTime(WallTime t);

}  // namespace tephra::nodesim
