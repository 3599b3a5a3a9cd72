// The Command controller's pure plan (docs/volcano-behaviour.md, "Command routing"): where a bus.volcano.sh
// Command goes.
//
// Volcano consumes a Command by deleting it first and acting second, so a command is applied at most once
// even when the controller crashes in between. Tephra keeps that order: the executor deletes the Command
// (UID precondition) and only a successful delete hands the action to the job or queue reconciler. A
// Command whose target this process does not handle (kind, or the controller is disabled) is left alone.
#pragma once

#include <string>

#include "tephra/api/bus.h"

namespace tephra::reconcilers::command {

enum class Route {
  kIgnore,  // not ours: leave the Command in place
  kJob,     // delete, then hand the action to the job reconciler
  kQueue,   // delete, then hand the action to the queue reconciler
  kReject,  // ours, but the action is not one the target understands: delete and report
};

struct Decision {
  Route route = Route::kIgnore;
  std::string target_key;  // "namespace/name" for jobs, "name" for queues
  std::string why;         // for kReject / kIgnore logs
};

struct Enabled {
  bool jobs = true;
  bool queues = true;
};

Decision Plan(const api::Command& cmd, Enabled enabled);

// The actions a Job / Queue target accepts.
bool IsJobAction(const std::string& action);
bool IsQueueAction(const std::string& action);

}  // namespace tephra::reconcilers::command
