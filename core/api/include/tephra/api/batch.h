// batch.volcano.sh/v1alpha1 Job (docs/volcano-behaviour.md, "Job spec and status") with its phases, lifecycle
// events and actions.
//
// Phases, events and actions are strings: a value Tephra does not know round-trips unchanged and the
// controller treats it as "no match" rather than failing to decode the whole Job.
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
#include "tephra/api/scheduling.h"

namespace tephra::api {

// JobPhase (status.state.phase and status.conditions[].status).
inline constexpr std::string_view kJobPhasePending = "Pending";
inline constexpr std::string_view kJobPhaseAborting = "Aborting";
inline constexpr std::string_view kJobPhaseAborted = "Aborted";
inline constexpr std::string_view kJobPhaseRunning = "Running";
inline constexpr std::string_view kJobPhaseRestarting = "Restarting";
inline constexpr std::string_view kJobPhaseCompleting = "Completing";
inline constexpr std::string_view kJobPhaseCompleted = "Completed";
inline constexpr std::string_view kJobPhaseTerminating = "Terminating";
inline constexpr std::string_view kJobPhaseTerminated = "Terminated";
inline constexpr std::string_view kJobPhaseFailed = "Failed";

// Lifecycle events (LifecyclePolicy.event / events, controller requests).
inline constexpr std::string_view kEventAny = "*";
inline constexpr std::string_view kEventPodFailed = "PodFailed";
inline constexpr std::string_view kEventPodEvicted = "PodEvicted";
inline constexpr std::string_view kEventPodPending = "PodPending";
inline constexpr std::string_view kEventPodRunning = "PodRunning";
inline constexpr std::string_view kEventUnknown = "Unknown";
inline constexpr std::string_view kEventTaskCompleted = "TaskCompleted";
inline constexpr std::string_view kEventTaskFailed = "TaskFailed";
inline constexpr std::string_view kEventOutOfSync = "OutOfSync";
inline constexpr std::string_view kEventCommandIssued = "CommandIssued";
inline constexpr std::string_view kEventJobUpdated = "JobUpdated";

// Actions (LifecyclePolicy.action, Command.action). The last five are internal.
inline constexpr std::string_view kActionAbortJob = "AbortJob";
inline constexpr std::string_view kActionRestartJob = "RestartJob";
inline constexpr std::string_view kActionRestartTask = "RestartTask";
inline constexpr std::string_view kActionRestartPod = "RestartPod";
inline constexpr std::string_view kActionRestartPartition = "RestartPartition";
inline constexpr std::string_view kActionTerminateJob = "TerminateJob";
inline constexpr std::string_view kActionCompleteJob = "CompleteJob";
inline constexpr std::string_view kActionResumeJob = "ResumeJob";
inline constexpr std::string_view kActionSyncJob = "SyncJob";
inline constexpr std::string_view kActionEnqueueJob = "EnqueueJob";
inline constexpr std::string_view kActionSyncQueue = "SyncQueue";
inline constexpr std::string_view kActionOpenQueue = "OpenQueue";
inline constexpr std::string_view kActionCloseQueue = "CloseQueue";

// TaskSpec.topologyPolicy
inline constexpr std::string_view kTopologyPolicyNone = "none";
inline constexpr std::string_view kTopologyPolicyBestEffort = "best-effort";
inline constexpr std::string_view kTopologyPolicyRestricted = "restricted";
inline constexpr std::string_view kTopologyPolicySingleNumaNode = "single-numa-node";

// DependsOn.iteration
inline constexpr std::string_view kIterationAny = "any";
inline constexpr std::string_view kIterationAll = "all";

struct LifecyclePolicy {
  std::string action;
  std::string event;
  std::vector<std::string> events;  // merged with `event` by the controller
  std::optional<int32_t> exit_code;
  std::string timeout;  // Go duration ("30s"); empty = unset. See ParseGoDuration() in duration.h.
  json extra;
};
Status Decode(const json& j, LifecyclePolicy* out);
void Encode(const LifecyclePolicy& in, json* j);

struct VolumeSpec {
  std::string mount_path;         // mountPath; required
  std::string volume_claim_name;  // volumeClaimName; XOR volume_claim
  std::optional<PersistentVolumeClaimSpec> volume_claim;
  json extra;
};
Status Decode(const json& j, VolumeSpec* out);
void Encode(const VolumeSpec& in, json* j);

struct DependsOn {
  std::vector<std::string> name;
  std::string iteration;  // "any" | "all"
  json extra;
};
Status Decode(const json& j, DependsOn* out);
void Encode(const DependsOn& in, json* j);

struct PartitionPolicySpec {
  int32_t total_partitions = 0;  // Go: no omitempty (required)
  int32_t partition_size = 0;    // Go: no omitempty (required)
  std::optional<NetworkTopologySpec> network_topology;
  int32_t min_partitions = 0;
  json extra;
};
Status Decode(const json& j, PartitionPolicySpec* out);
void Encode(const PartitionPolicySpec& in, json* j);

struct TaskSpec {
  std::string name;
  int32_t replicas = 0;
  std::optional<int32_t> min_available;
  PodTemplateSpec template_;  // "template"
  std::vector<LifecyclePolicy> policies;
  std::string topology_policy;
  int32_t max_retry = 0;
  std::optional<DependsOn> depends_on;
  std::optional<PartitionPolicySpec> partition_policy;
  json extra;
};
Status Decode(const json& j, TaskSpec* out);
void Encode(const TaskSpec& in, json* j);

struct JobSpec {
  std::string scheduler_name;
  int32_t min_available = 0;
  std::vector<VolumeSpec> volumes;
  std::vector<TaskSpec> tasks;
  std::vector<LifecyclePolicy> policies;
  std::map<std::string, std::vector<std::string>> plugins;
  std::string running_estimate;  // Go duration
  std::string queue;
  int32_t max_retry = 0;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::string priority_class_name;
  std::optional<int32_t> min_success;
  std::optional<NetworkTopologySpec> network_topology;
  json extra;

  int32_t TotalReplicas() const;
  const TaskSpec* FindTask(std::string_view name) const;
};
Status Decode(const json& j, JobSpec* out);
void Encode(const JobSpec& in, json* j);

struct JobState {
  std::string phase;
  std::string reason;
  std::string message;
  std::string last_transition_time;
  json extra;
};
Status Decode(const json& j, JobState* out);
void Encode(const JobState& in, json* j);

// Per-task pod counts by pod phase ("Running" -> 3).
struct TaskState {
  std::map<std::string, int32_t> phase;
  json extra;
};
Status Decode(const json& j, TaskState* out);
void Encode(const TaskState& in, json* j);

struct JobCondition {
  // Tephra: the phase again, so `kubectl wait --for=condition=<Phase>=<Phase>` finds it (Volcano writes no
  // type, and kubectl matches conditions by type). Volcano's readers ignore the extra field.
  std::string type;
  std::string status;  // a JobPhase; Go: no omitempty
  std::string last_transition_time;
  json extra;
};
Status Decode(const json& j, JobCondition* out);
void Encode(const JobCondition& in, json* j);

struct JobStatus {
  JobState state;
  int32_t min_available = 0;
  std::map<std::string, TaskState> task_status_count;
  int32_t pending = 0;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t terminating = 0;
  int32_t unknown = 0;
  int32_t version = 0;
  int32_t retry_count = 0;
  std::string running_duration;  // Go duration
  std::map<std::string, std::string> controlled_resources;
  std::vector<JobCondition> conditions;
  json extra;
};
Status Decode(const json& j, JobStatus* out);
void Encode(const JobStatus& in, json* j);

struct Job {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  JobSpec spec;
  JobStatus status;
  json extra;
};
Status Decode(const json& j, Job* out);
void Encode(const Job& in, json* j);

// batch.volcano.sh/v1alpha1 CronJob (docs/controllers.md, "CronJob").
inline constexpr std::string_view kConcurrencyAllow = "Allow";
inline constexpr std::string_view kConcurrencyForbid = "Forbid";
inline constexpr std::string_view kConcurrencyReplace = "Replace";
// RFC 3339 time (in the CronJob's timeZone) of the run a job was created for (Volcano's
// CronJobScheduledTimestampAnnotation).
inline constexpr std::string_view kCronJobScheduledTimestampAnnotation = "volcano.sh/cronjob-scheduled-timestamp";

struct JobTemplateSpec {
  ObjectMeta metadata;
  JobSpec spec;
  json extra;
};
Status Decode(const json& j, JobTemplateSpec* out);
void Encode(const JobTemplateSpec& in, json* j);

struct CronJobSpec {
  std::string schedule;  // required
  std::optional<std::string> time_zone;
  std::optional<int64_t> starting_deadline_seconds;
  std::string concurrency_policy;  // "" = Allow
  std::optional<bool> suspend;
  JobTemplateSpec job_template;  // required
  std::optional<int32_t> successful_jobs_history_limit;
  std::optional<int32_t> failed_jobs_history_limit;
  json extra;
};
Status Decode(const json& j, CronJobSpec* out);
void Encode(const CronJobSpec& in, json* j);

struct CronJobStatus {
  std::vector<ObjectReference> active;
  std::string last_schedule_time;    // RFC 3339, "" = unset
  std::string last_successful_time;  // RFC 3339, "" = unset
  json extra;
};
Status Decode(const json& j, CronJobStatus* out);
void Encode(const CronJobStatus& in, json* j);

struct CronJob {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  CronJobSpec spec;
  CronJobStatus status;
  json extra;
};
Status Decode(const json& j, CronJob* out);
void Encode(const CronJob& in, json* j);

}  // namespace tephra::api
