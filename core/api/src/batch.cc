#include "tephra/api/batch.h"

#include "codec_macros.h"

namespace tephra::api {

#define LP_FIELDS(F, A) \
  F("action", action) F("event", event) F("events", events) F("exitCode", exit_code) F("timeout", timeout)
TEPHRA_API_CODEC(LifecyclePolicy, LP_FIELDS)
#define VS_FIELDS(F, A) A("mountPath", mount_path) F("volumeClaimName", volume_claim_name) F("volumeClaim", volume_claim)
TEPHRA_API_CODEC(VolumeSpec, VS_FIELDS)
#define DEP_FIELDS(F, A) F("name", name) F("iteration", iteration)
TEPHRA_API_CODEC(DependsOn, DEP_FIELDS)
// minPartitions is written even when 0: the CRD defaults it to 0, so the server always returns it and a
// round trip through Tephra should not make it disappear.
#define PP_FIELDS(F, A)                                                                                        \
  A("totalPartitions", total_partitions) A("partitionSize", partition_size) F("networkTopology", network_topology) \
      A("minPartitions", min_partitions)
TEPHRA_API_CODEC(PartitionPolicySpec, PP_FIELDS)
#define TASK_FIELDS(F, A)                                                                                   \
  F("name", name) F("replicas", replicas) F("minAvailable", min_available) F("template", template_)      \
      F("policies", policies) F("topologyPolicy", topology_policy) F("maxRetry", max_retry)             \
          F("dependsOn", depends_on) F("partitionPolicy", partition_policy)
TEPHRA_API_CODEC(TaskSpec, TASK_FIELDS)
#define JOBSPEC_FIELDS(F, A)                                                                                     \
  F("schedulerName", scheduler_name) F("minAvailable", min_available) F("volumes", volumes) F("tasks", tasks) \
      F("policies", policies) F("plugins", plugins) F("runningEstimate", running_estimate) F("queue", queue) \
          F("maxRetry", max_retry) F("ttlSecondsAfterFinished", ttl_seconds_after_finished)                   \
              F("priorityClassName", priority_class_name) F("minSuccess", min_success)                        \
                  F("networkTopology", network_topology)
TEPHRA_API_CODEC(JobSpec, JOBSPEC_FIELDS)

int32_t JobSpec::TotalReplicas() const {
  int64_t total = 0;
  for (const auto& t : tasks) total += t.replicas;
  return total > INT32_MAX ? INT32_MAX : static_cast<int32_t>(total);
}

const TaskSpec* JobSpec::FindTask(std::string_view name) const {
  for (const auto& t : tasks)
    if (t.name == name) return &t;
  return nullptr;
}

#define JSTATE_FIELDS(F, A) \
  F("phase", phase) F("reason", reason) F("message", message) F("lastTransitionTime", last_transition_time)
TEPHRA_API_CODEC(JobState, JSTATE_FIELDS)
#define TSTATE_FIELDS(F, A) F("phase", phase)
TEPHRA_API_CODEC(TaskState, TSTATE_FIELDS)
#define JCOND_FIELDS(F, A) F("type", type) A("status", status) F("lastTransitionTime", last_transition_time)
TEPHRA_API_CODEC(JobCondition, JCOND_FIELDS)
#define JSTATUS_FIELDS(F, A)                                                                                   \
  F("state", state) F("minAvailable", min_available) F("taskStatusCount", task_status_count)               \
      F("pending", pending) F("running", running) F("succeeded", succeeded) F("failed", failed)            \
          F("terminating", terminating) F("unknown", unknown) F("version", version)                        \
              F("retryCount", retry_count) F("runningDuration", running_duration)                          \
                  F("controlledResources", controlled_resources) F("conditions", conditions)
TEPHRA_API_CODEC(JobStatus, JSTATUS_FIELDS)
#define JOB_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(Job, JOB_FIELDS, "batch.volcano.sh", "v1alpha1", "jobs", true)

#define JTS_FIELDS(F, A) F("metadata", metadata) F("spec", spec)
TEPHRA_API_CODEC(JobTemplateSpec, JTS_FIELDS)
#define CJSPEC_FIELDS(F, A)                                                                                   \
  A("schedule", schedule) F("timeZone", time_zone) F("startingDeadlineSeconds", starting_deadline_seconds) \
      F("concurrencyPolicy", concurrency_policy) F("suspend", suspend) A("jobTemplate", job_template)      \
          F("successfulJobsHistoryLimit", successful_jobs_history_limit)                                   \
              F("failedJobsHistoryLimit", failed_jobs_history_limit)
TEPHRA_API_CODEC(CronJobSpec, CJSPEC_FIELDS)
#define CJSTATUS_FIELDS(F, A) \
  F("active", active) F("lastScheduleTime", last_schedule_time) F("lastSuccessfulTime", last_successful_time)
TEPHRA_API_CODEC(CronJobStatus, CJSTATUS_FIELDS)
#define CJ_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(CronJob, CJ_FIELDS, "batch.volcano.sh", "v1alpha1", "cronjobs", true)

}  // namespace tephra::api
