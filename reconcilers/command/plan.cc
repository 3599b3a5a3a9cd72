#include "command/plan.h"

#include <string_view>

#include "tephra/api/batch.h"

namespace tephra::reconcilers::command {
namespace {

std::string_view GroupOf(const std::string& api_version) {
  auto slash = api_version.find('/');
  return slash == std::string::npos ? std::string_view() : std::string_view(api_version).substr(0, slash);
}

}  // namespace

bool IsJobAction(const std::string& a) {
  for (std::string_view k : {api::kActionAbortJob, api::kActionRestartJob, api::kActionRestartTask, api::kActionRestartPod,
                             api::kActionRestartPartition, api::kActionTerminateJob, api::kActionCompleteJob,
                             api::kActionResumeJob, api::kActionSyncJob, api::kActionEnqueueJob})
    if (a == k) return true;
  return false;
}

bool IsQueueAction(const std::string& a) {
  return a == api::kActionOpenQueue || a == api::kActionCloseQueue || a == api::kActionSyncQueue;
}

Decision Plan(const api::Command& cmd, Enabled enabled) {
  Decision d;
  if (!cmd.target) {
    d.why = "command has no target";
    return d;
  }
  const auto& t = *cmd.target;
  // An empty apiVersion is accepted: vcctl always sets it, but hand-written commands often omit it.
  const std::string_view group = GroupOf(t.api_version);
  if (t.kind == "Job" && (group == "batch.volcano.sh" || t.api_version.empty())) {
    if (!enabled.jobs) {
      d.why = "job-controller disabled";
      return d;
    }
    d.target_key = cmd.metadata.namespace_ + "/" + t.name;
    d.route = IsJobAction(cmd.action) ? Route::kJob : Route::kReject;
    if (d.route == Route::kReject) d.why = "action \"" + cmd.action + "\" does not apply to a Job";
    return d;
  }
  if (t.kind == "Queue" && (group == "scheduling.volcano.sh" || t.api_version.empty())) {
    if (!enabled.queues) {
      d.why = "queue-controller disabled";
      return d;
    }
    d.target_key = t.name;
    d.route = IsQueueAction(cmd.action) ? Route::kQueue : Route::kReject;
    if (d.route == Route::kReject) d.why = "action \"" + cmd.action + "\" does not apply to a Queue";
    return d;
  }
  d.why = "target kind " + t.kind + " is not handled";
  return d;
}

}  // namespace tephra::reconcilers::command
