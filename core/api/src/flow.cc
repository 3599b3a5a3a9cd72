#include "tephra/api/flow.h"

#include "codec_macros.h"

namespace tephra::api {

#define HGP_FIELDS(F, A) F("taskName", task_name) F("path", path) F("port", port) F("httpHeader", http_header)
TEPHRA_API_CODEC(HttpGetProbe, HGP_FIELDS)
#define TSP_FIELDS(F, A) F("taskName", task_name) F("port", port)
TEPHRA_API_CODEC(TcpSocketProbe, TSP_FIELDS)
#define TSTP_FIELDS(F, A) F("taskName", task_name) F("phase", phase)
TEPHRA_API_CODEC(TaskStatusProbe, TSTP_FIELDS)
#define PROBE_FIELDS(F, A) \
  F("httpGetList", http_get_list) F("tcpSocketList", tcp_socket_list) F("taskStatusList", task_status_list)
TEPHRA_API_CODEC(Probe, PROBE_FIELDS)
#define FDEP_FIELDS(F, A) F("targets", targets) F("probe", probe)
TEPHRA_API_CODEC(FlowDependsOn, FDEP_FIELDS)
#define FPATCH_FIELDS(F, A) F("jobSpec", job_spec)
TEPHRA_API_CODEC(FlowPatch, FPATCH_FIELDS)
#define FLOW_FIELDS(F, A) A("name", name) F("dependsOn", depends_on) F("patch", patch)
TEPHRA_API_CODEC(Flow, FLOW_FIELDS)
#define JFSPEC_FIELDS(F, A) F("flows", flows) F("jobRetainPolicy", job_retain_policy)
TEPHRA_API_CODEC(JobFlowSpec, JFSPEC_FIELDS)
#define JRH_FIELDS(F, A) F("startTimestamp", start_timestamp) F("endTimestamp", end_timestamp) F("state", state)
TEPHRA_API_CODEC(JobRunningHistory, JRH_FIELDS)
#define JSI_FIELDS(F, A)                                                                                  \
  F("name", name) F("state", state) F("startTimestamp", start_timestamp) F("endTimestamp", end_timestamp) \
      F("restartCount", restart_count) F("runningHistories", running_histories)
TEPHRA_API_CODEC(JobStatusInfo, JSI_FIELDS)
#define FCOND_FIELDS(F, A)                                                                                  \
  F("phase", phase) F("createTime", create_time) F("runningDuration", running_duration)                 \
      F("taskStatusCount", task_status_count)
TEPHRA_API_CODEC(FlowCondition, FCOND_FIELDS)
#define FSTATE_FIELDS(F, A) F("phase", phase)
TEPHRA_API_CODEC(FlowState, FSTATE_FIELDS)
#define JFSTATUS_FIELDS(F, A)                                                                                 \
  F("pendingJobs", pending_jobs) F("runningJobs", running_jobs) F("failedJobs", failed_jobs)              \
      F("completedJobs", completed_jobs) F("terminatedJobs", terminated_jobs) F("unKnowJobs", un_know_jobs) \
          F("jobStatusList", job_status_list) F("conditions", conditions) F("state", state)
TEPHRA_API_CODEC(JobFlowStatus, JFSTATUS_FIELDS)
#define JF_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(JobFlow, JF_FIELDS, "flow.volcano.sh", "v1alpha1", "jobflows", true)

#define JTSTATUS_FIELDS(F, A) F("jobDependsOnList", job_depends_on_list)
TEPHRA_API_CODEC(JobTemplateStatus, JTSTATUS_FIELDS)
#define JT_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(JobTemplate, JT_FIELDS, "flow.volcano.sh", "v1alpha1", "jobtemplates", true)

}  // namespace tephra::api
