// `job why` and `queue why`: why a job has not started and where it stands in its queue, in words a user acts
// on. The facts come from what the scheduler writes on the PodGroup (docs/why-pending.md): Volcano's
// `Unschedulable` condition, whose reason names the gate, and Tephra's `Queued` condition with the
// position. This file only reads and explains them; it never guesses what the scheduler would decide.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/core/clock.h"
#include "tephra/ctl/context.h"

namespace tephra::ctl {

// A position as written by the scheduler: "position 3 in queue q" (first == last) or "position 21-30 ...".
struct QueuePosition {
  int first = 0, last = 0;
  std::string text;  // as written, e.g. "position 21-30 in queue default"
};
std::optional<QueuePosition> ParsePosition(const std::string& message);

// The start estimate the scheduler appends to the Queued message (docs/reservations.md):
//   "; estimated start 2026-11-28T16:00:00Z (reserved on 4 node(s))"  kind "reservation"
//   "; planned start 2026-11-28T16:00:00Z (not reserved)"             kind "planned"
//   "; no start estimate: <why>"                                        kind "unknown"
struct StartEstimateText {
  std::string kind;
  std::string at;     // RFC 3339; "" for unknown
  int nodes = 0;      // reservation: the nodes it holds capacity on
  std::string why;    // unknown: what is missing
};
std::optional<StartEstimateText> ParseStartEstimate(const std::string& queued_message);
// "2026-11-28T16:00:00Z (in 12m, reserved on 4 nodes)" and the like, relative to `clock`.
std::string RenderStartEstimate(const StartEstimateText& e, const core::Clock& clock);

// Everything `job why` says, gathered from the job, its PodGroup and its queue (pure: unit-tested).
struct JobDiagnosis {
  std::string ns, name, phase;  // the vcjob's phase
  std::string pod_group;        // "" when the controller has not created it yet
  std::string pod_group_phase;
  int min_member = 0, running = 0;
  std::string queue, queue_state;  // queue_state "" when the queue does not exist
  int queue_weight = 0;
  std::string queue_allocated;     // "cpu 8, memory 16Gi" ("" = nothing)
  bool waiting = false;            // not started: the reason and position below apply
  std::optional<QueuePosition> position;
  std::optional<StartEstimateText> estimate;
  std::string reason, message, since;  // the Unschedulable condition (since: its lastTransitionTime)
  std::string hint;                     // what the user can do, or what the job waits for
};

// `job`, `pod_group` and `queue` are API objects (pod_group / queue null when absent).
JobDiagnosis DiagnoseJob(const api::json& job, const api::json& pod_group, const api::json& queue);
// The text `job why` prints; ages are relative to `clock`.
std::string RenderJobDiagnosis(const JobDiagnosis& d, const core::Clock& clock);
api::json JobDiagnosisJson(const JobDiagnosis& d);

// `queue why`: the queue's state and share, and its waiting jobs front first. `pod_groups` are all PodGroups
// (any queue; filtered here).
std::string RenderQueueWhy(const api::json& queue, const std::vector<api::json>& pod_groups, const core::Clock& clock);
api::json QueueWhyJson(const api::json& queue, const std::vector<api::json>& pod_groups);

// `job why -N NAME -n NS [-o json]`. Returns an ExitCode (ctl.h): kExitNotFound when there is no such job.
int JobWhy(Context& ctx, const std::string& ns, const std::string& name, const std::string& output);
// `queue why -n NAME [-o json]`.
int QueueWhy(Context& ctx, const std::string& queue, const std::string& output);

}  // namespace tephra::ctl
