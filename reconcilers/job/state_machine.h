// The job phase state machine (docs/volcano-behaviour.md, "Phase state machine") as a table: (phase, action) ->
// what to do.
//
// Level-triggered differences from Volcano (docs/job-controller.md, "State machine"):
//  - status.version is bumped once, by the transition that starts a full kill, not on every re-execution of
//    a kill (Volcano bumps on every KillJob call, which a level-triggered loop would turn into a counter).
//  - Restarting never creates pods or PodGroups; "SyncJob + check" there means: finish any interrupted
//    kill (old-version pods, stale PodGroup) and run the restart check. Re-initialisation happens in Pending.
#pragma once

#include <string>
#include <string_view>

namespace tephra::reconcilers::job {

enum class KillKind {
  kNone,      // no kill
  kJobNone,   // KillJob(PodRetainPhaseNone): every pod (Succeeded/Failed kept on the last retry)
  kJobSoft,   // KillJob(PodRetainPhaseSoft): every pod except Succeeded/Failed
  kTarget,    // KillTarget: the request's pod / task / partition only
};

enum class Check {
  kNone,
  kPendingToRunning,  // Pending: -> Running once minAvailable <= running + succeeded + failed
  kRunningEval,       // Running: docs/volcano-behaviour.md, "Running-phase evaluation"
  kRestart,           // Restarting: maxRetry -> Failed; Σreplicas - terminating >= minAvailable -> Pending
  kFinishWhenIdle,    // Aborting/Completing/Terminating: -> finished_phase when terminating=pending=running=0
};

struct Transition {
  KillKind kill = KillKind::kNone;
  bool sync = false;           // SyncJob: PodGroup, plugins, PVCs, pod creation
  std::string next_phase;      // phase set by this transition ("" = unchanged)
  bool retry_inc = false;      // retryCount++
  bool bump_version = false;   // status.version++ (full kills that start a new run or end the job)
  Check check = Check::kNone;
  std::string finished_phase;  // for kFinishWhenIdle
};

// `phase` "" is treated as Pending. Unknown actions behave like SyncJob.
Transition Decide(std::string_view phase, std::string_view action);

bool IsRestartAction(std::string_view action);     // RestartJob/Task/Pod/Partition
bool IsTargetedAction(std::string_view action);    // RestartTask/Pod/Partition
bool IsFinishedPhase(std::string_view phase);      // Completed, Failed, Terminated (TTL applies)

}  // namespace tephra::reconcilers::job
