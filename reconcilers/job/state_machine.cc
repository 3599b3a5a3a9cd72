#include "state_machine.h"

#include "tephra/api/batch.h"

namespace tephra::reconcilers::job {

bool IsTargetedAction(std::string_view a) {
  return a == api::kActionRestartTask || a == api::kActionRestartPod || a == api::kActionRestartPartition;
}
bool IsRestartAction(std::string_view a) { return a == api::kActionRestartJob || IsTargetedAction(a); }
bool IsFinishedPhase(std::string_view p) {
  return p == api::kJobPhaseCompleted || p == api::kJobPhaseFailed || p == api::kJobPhaseTerminated;
}

namespace {

Transition Kill(KillKind k, std::string_view next, bool retry, bool bump, Check c = Check::kNone,
                std::string_view finished = "") {
  Transition t;
  t.kill = k;
  t.next_phase = std::string(next);
  t.retry_inc = retry;
  t.bump_version = bump;
  t.check = c;
  t.finished_phase = std::string(finished);
  return t;
}

// Pending and Running share every kill row; they differ in what SyncJob checks afterwards.
Transition PendingOrRunning(std::string_view action, Check sync_check) {
  if (action == api::kActionRestartJob)
    return Kill(KillKind::kJobNone, api::kJobPhaseRestarting, /*retry=*/true, /*bump=*/true);
  if (IsTargetedAction(action)) return Kill(KillKind::kTarget, api::kJobPhaseRestarting, true, false);
  if (action == api::kActionAbortJob) return Kill(KillKind::kJobSoft, api::kJobPhaseAborting, false, true);
  if (action == api::kActionTerminateJob) return Kill(KillKind::kJobSoft, api::kJobPhaseTerminating, false, true);
  if (action == api::kActionCompleteJob) return Kill(KillKind::kJobSoft, api::kJobPhaseCompleting, false, true);
  Transition t;  // ResumeJob, SyncJob and anything unknown
  t.sync = true;
  t.check = sync_check;
  return t;
}

}  // namespace

Transition Decide(std::string_view phase, std::string_view action) {
  if (phase.empty() || phase == api::kJobPhasePending) return PendingOrRunning(action, Check::kPendingToRunning);
  if (phase == api::kJobPhaseRunning) return PendingOrRunning(action, Check::kRunningEval);
  if (phase == api::kJobPhaseRestarting) {
    if (IsTargetedAction(action)) return Kill(KillKind::kTarget, "", false, false, Check::kRestart);
    if (action == api::kActionRestartJob || action == api::kActionAbortJob || action == api::kActionTerminateJob ||
        action == api::kActionCompleteJob || action == api::kActionResumeJob)
      return Kill(KillKind::kJobNone, "", false, true, Check::kRestart);
    return Kill(KillKind::kNone, "", false, false, Check::kRestart);
  }
  if (phase == api::kJobPhaseAborting || phase == api::kJobPhaseAborted) {
    if (action == api::kActionResumeJob)
      return Kill(KillKind::kJobSoft, api::kJobPhaseRestarting, /*retry=*/true, /*bump=*/true);
    if (phase == api::kJobPhaseAborting)
      return Kill(KillKind::kJobSoft, "", false, false, Check::kFinishWhenIdle, api::kJobPhaseAborted);
    return Kill(KillKind::kJobSoft, "", false, false);
  }
  if (phase == api::kJobPhaseCompleting)
    return Kill(KillKind::kJobSoft, "", false, false, Check::kFinishWhenIdle, api::kJobPhaseCompleted);
  if (phase == api::kJobPhaseTerminating)
    return Kill(KillKind::kJobSoft, "", false, false, Check::kFinishWhenIdle, api::kJobPhaseTerminated);
  // Completed, Failed, Terminated, and phases written by a newer Volcano: keep killing leftovers, stay.
  return Kill(KillKind::kJobSoft, "", false, false);
}

}  // namespace tephra::reconcilers::job
