// Every row of the state machine table (docs/volcano-behaviour.md, "Phase state machine"), as Decide() encodes it.
#include <gtest/gtest.h>

#include "state_machine.h"
#include "tephra/api/batch.h"

namespace tephra::reconcilers::job {
namespace {

struct Row {
  std::string phase, action;
  KillKind kill;
  bool sync;
  std::string next;
  bool retry, bump;
  Check check;
  std::string finished;
};

void PrintTo(const Row& r, std::ostream* os) { *os << (r.phase.empty() ? "\"\"" : r.phase) << "/" << r.action; }

class DecideTest : public ::testing::TestWithParam<Row> {};

TEST_P(DecideTest, MatchesTable) {
  const Row& r = GetParam();
  Transition t = Decide(r.phase, r.action);
  EXPECT_EQ(t.kill, r.kill);
  EXPECT_EQ(t.sync, r.sync);
  EXPECT_EQ(t.next_phase, r.next);
  EXPECT_EQ(t.retry_inc, r.retry);
  EXPECT_EQ(t.bump_version, r.bump);
  EXPECT_EQ(t.check, r.check);
  EXPECT_EQ(t.finished_phase, r.finished);
}

using K = KillKind;
using C = Check;

std::vector<Row> Rows() {
  std::vector<Row> rows;
  // Pending ("" too) and Running share the kill rows.
  for (std::string ph : {"", "Pending", "Running"}) {
    C sync_check = ph == "Running" ? C::kRunningEval : C::kPendingToRunning;
    rows.push_back({ph, "RestartJob", K::kJobNone, false, "Restarting", true, true, C::kNone, ""});
    for (std::string a : {"RestartTask", "RestartPod", "RestartPartition"})
      rows.push_back({ph, a, K::kTarget, false, "Restarting", true, false, C::kNone, ""});
    rows.push_back({ph, "AbortJob", K::kJobSoft, false, "Aborting", false, true, C::kNone, ""});
    rows.push_back({ph, "TerminateJob", K::kJobSoft, false, "Terminating", false, true, C::kNone, ""});
    rows.push_back({ph, "CompleteJob", K::kJobSoft, false, "Completing", false, true, C::kNone, ""});
    rows.push_back({ph, "ResumeJob", K::kNone, true, "", false, false, sync_check, ""});
    rows.push_back({ph, "SyncJob", K::kNone, true, "", false, false, sync_check, ""});
    rows.push_back({ph, "SomethingNew", K::kNone, true, "", false, false, sync_check, ""});
  }
  // Restarting.
  rows.push_back({"Restarting", "RestartJob", K::kJobNone, false, "", false, true, C::kRestart, ""});
  for (std::string a : {"RestartTask", "RestartPod", "RestartPartition"})
    rows.push_back({"Restarting", a, K::kTarget, false, "", false, false, C::kRestart, ""});
  for (std::string a : {"AbortJob", "TerminateJob", "CompleteJob", "ResumeJob"})
    rows.push_back({"Restarting", a, K::kJobNone, false, "", false, true, C::kRestart, ""});
  rows.push_back({"Restarting", "SyncJob", K::kNone, false, "", false, false, C::kRestart, ""});
  // Aborting / Aborted.
  for (std::string a : {"RestartJob", "RestartPod", "AbortJob", "TerminateJob", "CompleteJob", "SyncJob"}) {
    rows.push_back({"Aborting", a, K::kJobSoft, false, "", false, false, C::kFinishWhenIdle, "Aborted"});
    rows.push_back({"Aborted", a, K::kJobSoft, false, "", false, false, C::kNone, ""});
  }
  rows.push_back({"Aborting", "ResumeJob", K::kJobSoft, false, "Restarting", true, true, C::kNone, ""});
  rows.push_back({"Aborted", "ResumeJob", K::kJobSoft, false, "Restarting", true, true, C::kNone, ""});
  // Completing / Terminating: any action.
  for (std::string a : {"RestartJob", "AbortJob", "ResumeJob", "SyncJob"}) {
    rows.push_back({"Completing", a, K::kJobSoft, false, "", false, false, C::kFinishWhenIdle, "Completed"});
    rows.push_back({"Terminating", a, K::kJobSoft, false, "", false, false, C::kFinishWhenIdle, "Terminated"});
  }
  // Finished phases: any action kills leftovers, the phase stays.
  for (std::string ph : {"Completed", "Failed", "Terminated"})
    for (std::string a : {"RestartJob", "ResumeJob", "AbortJob", "SyncJob"})
      rows.push_back({ph, a, K::kJobSoft, false, "", false, false, C::kNone, ""});
  return rows;
}

INSTANTIATE_TEST_SUITE_P(Table, DecideTest, ::testing::ValuesIn(Rows()));

TEST(StateMachineTest, Predicates) {
  EXPECT_TRUE(IsRestartAction("RestartJob"));
  EXPECT_TRUE(IsTargetedAction("RestartPartition"));
  EXPECT_FALSE(IsTargetedAction("RestartJob"));
  EXPECT_TRUE(IsFinishedPhase("Terminated"));
  EXPECT_FALSE(IsFinishedPhase("Aborted"));  // Aborted can be resumed: no TTL
}

}  // namespace
}  // namespace tephra::reconcilers::job
