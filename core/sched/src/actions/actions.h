// Built-in actions (docs/scheduler.md, "Actions and plugins implemented"): one file per action in this
// folder, each exposing only its factory; ActionRegistry::Builtin() (registry.cc) registers them by name.
// Internal to tephra_sched.
#pragma once

#include <memory>
#include <string>

#include "tephra/core/status.h"
#include "tephra/sched/action.h"
#include "tephra/sched/framework.h"

namespace tephra::sched::actions {

using Made = core::StatusOr<std::unique_ptr<Action>>;

Made NewEnqueue(const ActionConfiguration& c);
Made NewAllocate(const ActionConfiguration& c);
Made NewBackfill(const ActionConfiguration& c);
Made NewPreempt(const ActionConfiguration& c);
Made NewReclaim(const ActionConfiguration& c);

// preempt (reclaim=false) and reclaim (reclaim=true) share one victim search (victims.cc).
struct VictimSearchOptions {
  bool reclaim = false;
  int max_jobs_per_cycle = 32;  // action argument maxJobsPerCycle
};
void RunVictimSearch(Session& ssn, const VictimSearchOptions& options);
// Parses the arguments both share; InvalidArgument names the action and the argument.
core::StatusOr<VictimSearchOptions> ParseVictimSearchOptions(const ActionConfiguration& c, bool reclaim);

// False when the job's queue is missing or not Open; then the job's fit error says so (QueueNotFound /
// QueueClosed), so `tephra ctl job why` has an answer for jobs no action looks at.
bool QueueAdmits(Session& ssn, const JobInfo& job);

// Volcano's fit-error wording for a resource shortage of `t` on a node with `avail` ("" when it fits).
std::string ResourceReason(const ClusterState& st, const TaskInfo& t, const Resource& avail);

}  // namespace tephra::sched::actions
