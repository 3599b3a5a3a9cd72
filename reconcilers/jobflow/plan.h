// JobFlow and JobTemplate controllers (docs/controllers.md, "JobFlow / JobTemplate"): pure plans.
//
// JobFlow: flow `f` of JobFlow `jf` becomes vcjob `jf-f`, a copy of JobTemplate `f`'s spec (same namespace;
// `patch` and `probe` are ignored, as in Volcano), labelled and annotated
// volcano.sh/createdByJobTemplate=<ns>.<f> and volcano.sh/createdByJobFlow=<ns>.<jf>, controlled by the
// JobFlow. A flow without dependsOn.targets is created at once; one with targets when every target's job
// exists and is Completed. Status lists the jobs by phase and the flow's phase:
//   Succeed / Failed / Terminating are final; any job Failed or Terminated -> Failed; all flows' jobs
//   Completed -> Succeed; any job Running or Completed -> Running; else Pending.
// jobRetainPolicy "delete" deletes the flow's jobs once it Succeeded.
// jobStatusList[].runningHistories: one entry per phase the flow controller saw the job in. When the job's
// phase differs from the last entry's state, that entry gets an endTimestamp and a new one starts. The
// timestamp is the job's status.state.lastTransitionTime (the moment it really changed phase, so a restarted
// controller writes the same history), falling back to `now` when the job has none.
// JobTemplate: status.jobDependsOnList = names of the jobs carrying its createdByJobTemplate label.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/flow.h"
#include "tephra/core/clock.h"

namespace tephra::reconcilers::jobflow {

struct Observed {
  api::JobFlow flow;
  // JobTemplates of the flow's namespace, by name (only those the flows name need to be present).
  std::map<std::string, api::JobTemplate> templates;
  // Jobs controlled by this JobFlow, by name.
  std::map<std::string, api::Job> jobs;
  core::Clock::WallTime now;  // only for runningHistories of a job without status.state.lastTransitionTime
};

struct Actions {
  std::vector<api::Job> create_jobs;
  std::vector<std::string> delete_jobs;
  std::optional<api::JobFlowStatus> update_status;
  std::vector<std::string> missing_templates;  // flows that cannot start: their JobTemplate does not exist
  std::string phase;                            // the planned state.phase

  bool Empty() const { return create_jobs.empty() && delete_jobs.empty() && !update_status; }
};

// "<jobflow>-<flow>".
std::string JobName(const std::string& jobflow, const std::string& flow);
api::Job BuildJob(const api::JobFlow& flow, const api::JobTemplate& tmpl, const std::string& flow_name);
// The phase rules above, from the current phase and the job lists of `status`.
std::string NextPhase(const std::string& current, const api::JobFlowStatus& status, size_t flows);
Actions Plan(const Observed& obs);
// The job's runningHistories given the previous ones (see above); `now` is RFC 3339.
std::vector<api::JobRunningHistory> NextRunningHistories(std::vector<api::JobRunningHistory> previous,
                                                         const api::Job& job, const std::string& now);

// JobTemplate: the sorted job names for status.jobDependsOnList; nullopt when the status already says so.
std::optional<std::vector<std::string>> PlanTemplate(const api::JobTemplate& tmpl, std::vector<std::string> job_names);

}  // namespace tephra::reconcilers::jobflow
