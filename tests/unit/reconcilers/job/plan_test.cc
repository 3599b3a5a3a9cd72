// Plan(): phase transitions on real observed state, policy resolution, running-phase evaluation, kills,
// TTL, delayed actions, and the level-triggered guarantees (idempotency, no double restart).
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace tephra::reconcilers::job {
namespace {

using namespace testing;  // NOLINT

Request Cmd(const std::string& action) {
  Request r;
  r.action = action;
  return r;
}

std::vector<std::string> Names(const std::vector<api::Pod>& pods) {
  std::vector<std::string> n;
  for (const auto& p : pods) n.push_back(p.metadata.name);
  std::sort(n.begin(), n.end());
  return n;
}

// A job that has run through initiation: PodGroup admitted (Inqueue), pods created and in `pod_phase`.
World Started(api::Job job, const std::string& pod_phase = "Running") {
  World w(std::move(job));
  w.Apply(w.Plan());                // "" -> Pending, PodGroup created
  w.SetPodGroupPhase("Inqueue");    // the scheduler admits it
  w.Apply(w.Plan());                // pods created
  w.SetAllPods(pod_phase);
  w.Apply(w.Plan());                // counters, Pending -> Running
  return w;
}

TEST(PlanTest, NewJobGetsPendingStatusAndPodGroupButNoPods) {
  World w(MakeJob("j", {Task("worker", 2)}));
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Pending");
  ASSERT_EQ(a.update_status->conditions.size(), 1u);
  EXPECT_EQ(a.update_status->conditions[0].status, "Pending");
  // type repeats the phase so `kubectl wait --for=condition=Pending=Pending` can find the entry.
  EXPECT_EQ(a.update_status->conditions[0].type, "Pending");
  EXPECT_EQ(a.update_status->min_available, 2);
  ASSERT_TRUE(a.create_pod_group);
  EXPECT_EQ(a.create_pod_group->metadata.name, "j-uid-j");
  EXPECT_EQ(a.create_pod_group->spec.min_member, 2);
  EXPECT_TRUE(a.create_pods.empty());  // the gate: no PodGroup yet
}

TEST(PlanTest, PodsWaitForThePodGroupToLeavePending) {
  World w(MakeJob("j", {Task("worker", 2)}));
  w.Apply(w.Plan());
  Actions a = w.Plan();
  EXPECT_TRUE(a.create_pods.empty());
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  EXPECT_EQ(Names(a.create_pods), (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
}

TEST(PlanTest, PodGroupPendingEventNamesTheSchedulerReason) {
  World w(MakeJob("j", {Task("worker", 2)}));
  w.Apply(w.Plan());
  api::PodGroupCondition c;
  c.type = "Unschedulable";
  c.status = "True";
  c.message = "2/2 tasks in gang unschedulable";
  w.obs.pod_group->status.conditions.push_back(c);
  Actions a = w.Plan();
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].reason, "PodGroupPending");
  EXPECT_NE(a.events[0].message.find("unschedulable"), std::string::npos);
}

TEST(PlanTest, PendingBecomesRunningWhenMinAvailablePodsRun) {
  World w(MakeJob("j", {Task("worker", 3)}, /*min_available=*/2));
  w.Apply(w.Plan());
  w.SetPodGroupPhase("Inqueue");
  w.Apply(w.Plan());
  ASSERT_EQ(w.obs.pods.size(), 3u);
  w.obs.pods[0].status.phase = "Running";
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Pending");  // 1 < 2
  EXPECT_EQ(a.update_status->running, 1);
  EXPECT_EQ(a.update_status->pending, 2);
  w.obs.pods[1].status.phase = "Running";
  a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Running");
  EXPECT_EQ(a.update_status->task_status_count.at("worker").phase.at("Running"), 2);
  EXPECT_EQ(a.update_status->task_status_count.at("worker").phase.at("Pending"), 1);
}

TEST(PlanTest, IdempotentOnceConverged) {
  World w = Started(MakeJob("j", {Task("master", 1), Task("worker", 2)}));
  EXPECT_EQ(w.obs.job.status.state.phase, "Running");
  Actions a = w.Plan();
  EXPECT_TRUE(a.Empty());
  // Same observed state, same answer (determinism).
  Actions b = w.Plan();
  EXPECT_EQ(a.action, b.action);
  EXPECT_TRUE(b.Empty());
}

// --- running-phase evaluation (docs/volcano-behaviour.md, "Running-phase evaluation") ---

TEST(PlanTest, AllSucceededCompletes) {
  World w = Started(MakeJob("j", {Task("worker", 2)}));
  w.SetAllPods("Succeeded");
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Completed");
  EXPECT_EQ(a.update_status->succeeded, 2);
  EXPECT_FALSE(a.update_status->running_duration.empty());
}

TEST(PlanTest, AllFinishedWithTooFewSuccessesFails) {
  World w = Started(MakeJob("j", {Task("worker", 2)}));
  w.obs.pods[0].status.phase = "Succeeded";
  w.obs.pods[1].status.phase = "Failed";
  w.obs.now += std::chrono::seconds(10);  // past the fault settle time (kFaultSettle)
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Failed");
}

TEST(PlanTest, AFailureIsFinalOnlyOnceAFaultControllerCouldHaveSeenItsCause) {
  // docs/faults.md: a pod that died with its card ends before the API shows the fault; the job waits 10 s
  // before it is Failed, so the fault controller can replace the pod first.
  World w = Started(MakeJob("j", {Task("worker", 1)}));
  api::Pod& p = w.obs.pods[0];
  p.metadata.creation_timestamp = core::FormatRfc3339(w.obs.now - std::chrono::seconds(600));
  p.status.phase = "Failed";
  api::ContainerStatus cs;
  cs.name = "c";
  cs.state.terminated.emplace();
  cs.state.terminated->exit_code = 1;
  cs.state.terminated->finished_at = core::FormatRfc3339(w.obs.now - std::chrono::seconds(3));
  p.status.container_statuses.push_back(cs);
  Actions a = w.Plan();
  EXPECT_TRUE(!a.update_status || a.update_status->state.phase != "Failed");
  ASSERT_TRUE(a.requeue_after.has_value());
  EXPECT_EQ(*a.requeue_after, std::chrono::milliseconds(7000));
  w.obs.now += std::chrono::seconds(7);
  a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Failed");
}

TEST(PlanTest, AllFinishedWithEnoughSuccessesCompletes) {
  World w = Started(MakeJob("j", {Task("worker", 3)}, /*min_available=*/2));
  w.obs.pods[0].status.phase = "Succeeded";
  w.obs.pods[1].status.phase = "Succeeded";
  w.obs.pods[2].status.phase = "Failed";
  EXPECT_EQ(w.Plan().update_status->state.phase, "Completed");
}

TEST(PlanTest, MinSuccessReachedCompletesEarly) {
  api::Job job = MakeJob("j", {Task("worker", 4)}, 1);
  job.spec.min_success = 2;
  World w = Started(job);
  w.obs.pods[0].status.phase = "Succeeded";
  w.obs.pods[1].status.phase = "Succeeded";
  EXPECT_EQ(w.Plan().update_status->state.phase, "Completed");
}

TEST(PlanTest, MinSuccessMissedFails) {
  api::Job job = MakeJob("j", {Task("worker", 3)}, 1);
  job.spec.min_success = 3;
  World w = Started(job);
  w.obs.pods[0].status.phase = "Succeeded";
  w.obs.pods[1].status.phase = "Succeeded";
  w.obs.pods[2].status.phase = "Failed";
    w.obs.now += std::chrono::seconds(10);  // past the fault settle time (kFaultSettle)
EXPECT_EQ(w.Plan().update_status->state.phase, "Failed");
}

TEST(PlanTest, TaskWithExplicitMinAvailableShortOfSuccessesFails) {
  // job.minAvailable (3) >= Σ task minAvailable (1 + 2): a task with explicit minAvailable must reach it.
  World w = Started(MakeJob("j", {Task("master", 1, 1), Task("worker", 2, 2)}, 3));
  w.FindPod("j-master-0")->status.phase = "Succeeded";
  w.FindPod("j-worker-0")->status.phase = "Succeeded";
  w.FindPod("j-worker-1")->status.phase = "Failed";
    w.obs.now += std::chrono::seconds(10);  // past the fault settle time (kFaultSettle)
EXPECT_EQ(w.Plan().update_status->state.phase, "Failed");
}

TEST(PlanTest, TooManyPendingGoesBackToPending) {
  World w = Started(MakeJob("j", {Task("worker", 3)}, 2));
  w.SetAllPods("Pending");
  // pending (3) > Σreplicas - minAvailable (1)
  EXPECT_EQ(w.Plan().update_status->state.phase, "Pending");
}

TEST(PlanTest, ZeroReplicasKeepsPhase) {
  World w = Started(MakeJob("j", {Task("worker", 1)}, 0));
  w.obs.job.spec.tasks[0].replicas = 0;
  Actions a = w.Plan();
  ASSERT_EQ(a.delete_pods.size(), 1u);  // scale-down
  if (a.update_status) {
    EXPECT_EQ(a.update_status->state.phase, "Running");
  }
}

// --- policies (docs/volcano-behaviour.md, "Policy resolution") ---

TEST(PolicyTest, TaskPolicyBeforeJobPolicy) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.tasks[0].policies = {Policy("PodFailed", "RestartTask")};
  job.spec.policies = {Policy("PodFailed", "AbortJob")};
  DerivedEvent ev{"PodFailed", "worker", "j-worker-0", "", 1, {}};
  EXPECT_EQ(ResolvePolicy(job, ev).action, "RestartTask");
  ev.task = "";
  EXPECT_EQ(ResolvePolicy(job, ev).action, "AbortJob");  // job-level event: job policies only
}

TEST(PolicyTest, WildcardEventsListAndExitCode) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  api::LifecyclePolicy multi;
  multi.events = {"PodEvicted", "Unknown"};
  multi.action = "RestartJob";
  job.spec.policies = {ExitCodePolicy(137, "RestartPod"), multi, Policy("*", "TerminateJob")};
  EXPECT_EQ(ResolvePolicy(job, {"PodFailed", "worker", "p", "", 137, {}}).action, "RestartPod");
  EXPECT_EQ(ResolvePolicy(job, {"PodEvicted", "worker", "p", "", {}, {}}).action, "RestartJob");
  EXPECT_EQ(ResolvePolicy(job, {"Unknown", "", "", "", {}, {}}).action, "RestartJob");
  EXPECT_EQ(ResolvePolicy(job, {"PodFailed", "worker", "p", "", 1, {}}).action, "TerminateJob");
  EXPECT_EQ(ResolvePolicy(job, {"TaskCompleted", "worker", "", "", {}, {}}).action, "TerminateJob");
}

TEST(PolicyTest, NoMatchIsSyncJob) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.policies = {Policy("PodEvicted", "RestartJob")};
  EXPECT_EQ(ResolvePolicy(job, {"PodFailed", "worker", "p", "", 1, {}}).action, "SyncJob");
}

TEST(PolicyTest, PodPendingOnlyMatchesPoliciesWithTimeout) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.policies = {Policy("*", "AbortJob")};
  EXPECT_EQ(ResolvePolicy(job, {"PodPending", "worker", "p", "", {}, {}}).action, "SyncJob");
  job.spec.policies = {Policy("PodPending", "RestartJob", "5m")};
  Resolution r = ResolvePolicy(job, {"PodPending", "worker", "p", "", {}, {}});
  EXPECT_EQ(r.action, "RestartJob");
  ASSERT_TRUE(r.timeout);
  EXPECT_EQ(*r.timeout, std::chrono::minutes(5));
}

// --- restarts, retries, maxRetry ---

TEST(PlanTest, PodFailedRestartJobKillsEverythingBumpsVersionAndRetry) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("PodFailed", "RestartJob")};
  job.spec.plugins["svc"] = {};
  World w = Started(job);
  ASSERT_FALSE(w.obs.plugin_objects.config_maps.empty());
  w.FindPod("j-worker-1")->status.phase = "Failed";
  SetExitCode(w.FindPod("j-worker-1"), 1);
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "RestartJob");
  EXPECT_EQ(a.event, "PodFailed");
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Restarting");
  EXPECT_EQ(a.update_status->retry_count, 1);
  EXPECT_EQ(a.update_status->version, 1);
  EXPECT_EQ(a.delete_pods.size(), 2u);
  ASSERT_TRUE(a.delete_pod_group);
  EXPECT_EQ(a.delete_plugin_objects.config_maps, std::vector<std::string>{"j-svc"});
  EXPECT_EQ(a.delete_plugin_objects.services, std::vector<std::string>{"j"});
  EXPECT_EQ(a.update_status->controlled_resources.count("plugin-svc"), 0u);
  ASSERT_FALSE(a.events.empty());
  EXPECT_EQ(a.events.back().reason, "ExecuteAction");
  EXPECT_EQ(a.events.back().message, "Start to execute action RestartJob ") << "Volcano's text, trailing space included";
  w.Apply(a);
  // Restarting: pods gone -> Pending; then re-initialised with version 1 (new PodGroup, new plugin objects).
  a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Pending");
  w.Apply(a);
  a = w.Plan();
  ASSERT_TRUE(a.create_pod_group);
  EXPECT_EQ(a.create_pod_group->metadata.annotations.at(std::string(kPodGroupJobVersionAnnotation)), "1");
  EXPECT_EQ(a.create_plugin_objects.config_maps.count("j-svc"), 1u);
  w.Apply(a);
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  ASSERT_EQ(a.create_pods.size(), 2u);
  EXPECT_EQ(a.create_pods[0].metadata.annotations.at("volcano.sh/job-version"), "1");
  EXPECT_EQ(a.create_pods[0].metadata.annotations.at("volcano.sh/job-retry-count"), "1");
}

TEST(PlanTest, RestartingStaysWhileTooManyPodsTerminate) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("PodFailed", "RestartJob")};
  World w = Started(job);
  w.FindPod("j-worker-0")->status.phase = "Failed";
  Actions a = w.Plan();
  // Execute only the status write: the pods are still there (deletes not yet visible in the cache), but
  // the executor remembers the uids it deleted.
  w.obs.job.status = *a.update_status;
  for (auto& p : w.obs.pods) w.obs.handled_pod_uids.insert(p.metadata.uid);
  a = w.Plan();
  EXPECT_EQ(a.update_status ? a.update_status->state.phase : w.obs.job.status.state.phase, "Restarting");
  EXPECT_EQ(w.obs.job.status.retry_count, 1);
  if (a.update_status) {
    EXPECT_EQ(a.update_status->retry_count, 1);
  }
}

TEST(PlanTest, MaxRetryReachedFails) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.max_retry = 1;
  job.spec.policies = {Policy("PodFailed", "RestartJob")};
  World w = Started(job);
  w.SetAllPods("Failed");
  Actions a = w.Plan();
  EXPECT_EQ(a.update_status->retry_count, 1);
  // Last retry: the failed pod is kept for inspection.
  EXPECT_TRUE(a.delete_pods.empty());
  w.Apply(a);
  a = w.Plan();
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.phase, "Failed");
  EXPECT_EQ(a.update_status->state.reason, "MaxRetryReached");
}

TEST(PlanTest, ExitCodePolicyRestartsUntilMaxRetryThenFails) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.max_retry = 3;
  job.spec.policies = {ExitCodePolicy(3, "RestartJob")};
  World w = Started(job);
  int restarts = 0;
  for (int round = 0; round < 40 && w.obs.job.status.state.phase != "Failed"; ++round) {
    for (auto& p : w.obs.pods)
      if (p.status.phase != "Failed") {
        p.status.phase = "Failed";
        SetExitCode(&p, 3);
      }
    Actions a = w.Plan();
    if (a.action == "RestartJob") ++restarts;
    w.Apply(a);
    w.SetPodGroupPhase("Inqueue");
  }
  EXPECT_EQ(w.obs.job.status.state.phase, "Failed");
  EXPECT_EQ(w.obs.job.status.retry_count, 3);
  EXPECT_EQ(restarts, 3);
}

TEST(PlanTest, OtherExitCodeDoesNotRestart) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {ExitCodePolicy(3, "RestartJob")};
  World w = Started(job);
  w.FindPod("j-worker-0")->status.phase = "Failed";
  SetExitCode(w.FindPod("j-worker-0"), 1);
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "SyncJob");
  EXPECT_TRUE(a.delete_pods.empty());
}

TEST(PlanTest, RestartPodKillsOnlyThatPodAndKeepsPodGroup) {
  api::Job job = MakeJob("j", {Task("worker", 3)});
  job.spec.tasks[0].policies = {Policy("PodFailed", "RestartPod")};
  World w = Started(job);
  w.FindPod("j-worker-2")->status.phase = "Failed";
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "RestartPod");
  EXPECT_EQ(a.delete_pods, std::vector<std::string>{"j-worker-2"});
  EXPECT_FALSE(a.delete_pod_group);
  EXPECT_EQ(a.update_status->version, 0);
  EXPECT_EQ(a.update_status->retry_count, 1);
  EXPECT_EQ(a.update_status->state.phase, "Restarting");
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Pending");
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(Names(a.create_pods), std::vector<std::string>{"j-worker-2"});
}

TEST(PlanTest, RestartTaskKillsTheWholeTask) {
  api::Job job = MakeJob("j", {Task("master", 1), Task("worker", 2)});
  job.spec.policies = {Policy("PodFailed", "RestartTask")};
  World w = Started(job);
  w.FindPod("j-worker-0")->status.phase = "Failed";
  Actions a = w.Plan();
  std::sort(a.delete_pods.begin(), a.delete_pods.end());
  EXPECT_EQ(a.delete_pods, (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
}

TEST(PlanTest, RestartPartitionKillsThePartition) {
  api::Job job = MakeJob("j", {Task("worker", 4)});
  job.spec.tasks[0].partition_policy.emplace();
  job.spec.tasks[0].partition_policy->total_partitions = 2;
  job.spec.tasks[0].partition_policy->partition_size = 2;
  job.spec.policies = {Policy("PodFailed", "RestartPartition")};
  World w = Started(job);
  EXPECT_EQ(w.FindPod("j-worker-3")->metadata.labels.at("volcano.sh/partition-id"), "1");
  w.FindPod("j-worker-3")->status.phase = "Failed";
  Actions a = w.Plan();
  std::sort(a.delete_pods.begin(), a.delete_pods.end());
  EXPECT_EQ(a.delete_pods, (std::vector<std::string>{"j-worker-2", "j-worker-3"}));
}

TEST(PlanTest, RestartIsNeverAppliedTwice) {
  // After a restart was decided, a re-plan against a cache where (a) the job status is new but pods are
  // stale, (b) pods were marked but not yet deleted, or (c) the job is stale but pods carry newer
  // annotations must not count another retry.
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.tasks[0].policies = {Policy("PodFailed", "RestartPod")};
  World w = Started(job);
  w.FindPod("j-worker-0")->status.phase = "Failed";
  Actions first = w.Plan();
  ASSERT_EQ(first.update_status->retry_count, 1);

  World a = w;  // (a) new status written, pod not yet marked (controller crashed before the patch)
  a.obs.job.status = *first.update_status;
  Actions again = a.Plan();
  EXPECT_EQ(again.update_status ? again.update_status->retry_count : a.obs.job.status.retry_count, 1);
  EXPECT_EQ(again.delete_pods, std::vector<std::string>{"j-worker-0"});  // the kill is finished, not redone

  World b = w;  // (b) the pod carries the out-of-sync mark, the job cache is still the old one
  b.FindPod("j-worker-0")->metadata.annotations["volcano.sh/controller-out-of-sync"] = "true";
  again = b.Plan();
  EXPECT_NE(again.action, "RestartPod");
  EXPECT_EQ(again.update_status ? again.update_status->retry_count : 0, 0);

  World c = w;  // (c) a newer run's pod is visible but the job is stale: wait
  c.obs.pods.push_back(MakePod(c.obs.job, "worker", 1, "Pending"));
  c.obs.pods.back().metadata.annotations["volcano.sh/job-retry-count"] = "1";
  c.obs.pods.back().metadata.name = "j-worker-1";
  again = c.Plan();
  EXPECT_TRUE(again.Empty());
  EXPECT_TRUE(again.requeue_after);
}

TEST(PlanTest, TaskFailedFromContainerRestarts) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.tasks[0].max_retry = 2;
  job.spec.policies = {Policy("TaskFailed", "TerminateJob")};
  World w = Started(job);
  api::ContainerStatus cs;
  cs.name = "main";
  cs.restart_count = 1;
  w.obs.pods[0].status.container_statuses = {cs};
  EXPECT_EQ(w.Plan().action, "SyncJob");
  w.obs.pods[1].status.container_statuses = {cs};
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "TerminateJob");
  EXPECT_EQ(a.event, "TaskFailed");
  EXPECT_EQ(a.update_status->state.phase, "Terminating");
}

TEST(PlanTest, TaskCompletedCompletesJob) {
  api::Job job = MakeJob("j", {Task("master", 1), Task("worker", 2)}, 1);
  job.spec.tasks[0].policies = {Policy("TaskCompleted", "CompleteJob")};
  World w = Started(job);
  w.FindPod("j-master-0")->status.phase = "Succeeded";
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "CompleteJob");
  EXPECT_EQ(a.update_status->state.phase, "Completing");
  std::sort(a.delete_pods.begin(), a.delete_pods.end());
  EXPECT_EQ(a.delete_pods, (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Completed");
  w.Apply(a);
  EXPECT_EQ(w.Converge(), 0);
}

TEST(PlanTest, PodEvictedByOthersTriggersPolicy) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("PodEvicted", "RestartJob")};
  World w = Started(job);
  w.FindPod("j-worker-1")->metadata.deletion_timestamp = kNow;
  EXPECT_EQ(w.Plan().action, "RestartJob");
  // Our own deletes are marked first and never count as evictions.
  w.FindPod("j-worker-1")->metadata.annotations["volcano.sh/controller-out-of-sync"] = "true";
  EXPECT_EQ(w.Plan().action, "SyncJob");
}

// Volcano's IsOutOfSyncPod only asks whether the annotation exists; an empty value marks the pod too.
TEST(PlanTest, EmptyOutOfSyncAnnotationStillMarksThePod) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("PodEvicted", "RestartJob")};
  World w = Started(job);
  w.FindPod("j-worker-1")->metadata.deletion_timestamp = kNow;
  w.FindPod("j-worker-1")->metadata.annotations["volcano.sh/controller-out-of-sync"] = "";
  EXPECT_EQ(w.Plan().action, "SyncJob");
}

// One eviction is one restart. The evicted pod is being deleted by someone else, so a targeted restart does
// not delete it (and keeps the version): it is marked instead, or every reconcile until the API server forgets
// it would restart the task again (found by the churn e2e: retryCount 0 -> 4, Failed, within 50 ms).
TEST(PlanTest, EvictedPodTriggersItsTargetedRestartOnce) {
  api::Job job = MakeJob("j", {Task("a", 1), Task("b", 3)});
  job.spec.max_retry = 4;
  job.spec.tasks[1].policies = {Policy("PodEvicted", "RestartTask")};
  World w = Started(job);
  w.FindPod("j-b-2")->metadata.deletion_timestamp = kNow;
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "RestartTask");
  EXPECT_EQ(a.mark_pods, std::vector<std::string>{"j-b-2"});
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->retry_count, 1);
  w.Apply(a);
  // The evicted pod is still there (terminating) for a while; many reconciles happen meanwhile.
  ASSERT_NE(w.FindPod("j-b-2"), nullptr);
  for (int i = 0; i < 8; ++i) {
    Actions again = w.Plan();
    EXPECT_NE(again.action, "RestartTask") << "round " << i;
    w.Apply(again);
  }
  EXPECT_EQ(w.obs.job.status.retry_count, 1);
  EXPECT_NE(w.obs.job.status.state.phase, "Failed");
}

TEST(PlanTest, PodGroupUnknownUsesJobPolicies) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("Unknown", "RestartJob")};
  World w = Started(job);
  w.SetPodGroupPhase("Unknown");
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "RestartJob");
  EXPECT_EQ(a.event, "Unknown");
}

// --- delayed actions (docs/volcano-behaviour.md, "Delayed actions, retries and TTL") ---

TEST(PlanTest, PendingTimeoutWaitsThenActs) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.policies = {Policy("PodPending", "RestartJob", "10m")};
  World w = Started(job, "Pending");
  // World::Apply stamps created pods with kNow (10:00): the action is due at 10:10.
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "SyncJob");
  ASSERT_TRUE(a.requeue_after);
  EXPECT_EQ(*a.requeue_after, std::chrono::minutes(10));
  w.obs.now += std::chrono::minutes(10);
  a = w.Plan();
  EXPECT_EQ(a.action, "RestartJob");
  EXPECT_EQ(a.event, "PodPending");
}

TEST(PlanTest, PendingTimeoutCancelledWhenPodRuns) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.policies = {Policy("PodPending", "RestartJob", "10m")};
  World w = Started(job, "Pending");
  w.SetAllPods("Running");
  w.obs.now += std::chrono::minutes(20);
  Actions a = w.Plan();
  EXPECT_EQ(a.action, "SyncJob");
  EXPECT_FALSE(a.requeue_after);
}

// --- commands and finishing phases ---

TEST(PlanTest, AbortKeepsFinishedPodsThenAbortedThenResume) {
  World w = Started(MakeJob("j", {Task("worker", 3)}, 1));
  w.FindPod("j-worker-0")->status.phase = "Succeeded";
  w.Apply(w.Plan());
  w.obs.request = Cmd("AbortJob");
  Actions a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Aborting");
  EXPECT_EQ(a.update_status->version, 1);
  std::sort(a.delete_pods.begin(), a.delete_pods.end());
  EXPECT_EQ(a.delete_pods, (std::vector<std::string>{"j-worker-1", "j-worker-2"}));
  EXPECT_TRUE(a.delete_pod_group);
  w.obs.request.reset();
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Aborted");
  w.Apply(a);
  EXPECT_EQ(w.Converge(), 0);
  w.obs.request = Cmd("ResumeJob");
  a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Restarting");
  EXPECT_EQ(a.update_status->retry_count, 1);
  EXPECT_EQ(a.update_status->version, 2);
  w.obs.request.reset();
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Pending");
  w.Apply(a);
  w.Apply(w.Plan());  // PodGroup
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  // The succeeded pod of the aborted run is kept (soft kill) and not recreated.
  EXPECT_EQ(Names(a.create_pods), (std::vector<std::string>{"j-worker-1", "j-worker-2"}));
}

TEST(PlanTest, TerminateAndCompleteCommands) {
  for (const char* cmd : {"TerminateJob", "CompleteJob"}) {
    World w = Started(MakeJob("j", {Task("worker", 2)}));
    w.obs.request = Cmd(cmd);
    Actions a = w.Plan();
    std::string mid = std::string(cmd) == "TerminateJob" ? "Terminating" : "Completing";
    std::string end = std::string(cmd) == "TerminateJob" ? "Terminated" : "Completed";
    EXPECT_EQ(a.update_status->state.phase, mid);
    EXPECT_EQ(a.delete_pods.size(), 2u);
    w.obs.request.reset();
    w.Apply(a);
    a = w.Plan();
    EXPECT_EQ(a.update_status->state.phase, end);
    ASSERT_GE(a.update_status->conditions.size(), 2u);
    EXPECT_EQ(a.update_status->conditions.back().status, end);
  }
}

TEST(PlanTest, ConditionsDropOlderEntryOfSamePhase) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.policies = {Policy("PodFailed", "RestartJob")};
  World w = Started(job);
  w.SetAllPods("Failed");
  w.Apply(w.Plan());  // Restarting
  w.Apply(w.Plan());  // Pending
  int pending = 0;
  for (const auto& c : w.obs.job.status.conditions) pending += c.status == "Pending";
  EXPECT_EQ(pending, 1);
  EXPECT_EQ(w.obs.job.status.conditions.back().status, "Pending");
}

// --- TTL ---

TEST(PlanTest, TtlRequeuesThenDeletesWithFinishedJob) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.ttl_seconds_after_finished = 60;
  World w = Started(job);
  w.SetAllPods("Succeeded");
  Actions a = w.Plan();
  EXPECT_EQ(a.update_status->state.phase, "Completed");
  ASSERT_TRUE(a.requeue_after);
  EXPECT_EQ(*a.requeue_after, std::chrono::seconds(60));
  EXPECT_FALSE(a.delete_job);
  w.Apply(a);
  w.obs.now += std::chrono::seconds(59);
  a = w.Plan();
  EXPECT_FALSE(a.delete_job);
  EXPECT_EQ(*a.requeue_after, std::chrono::seconds(1));
  w.obs.now += std::chrono::seconds(1);
  EXPECT_TRUE(w.Plan().delete_job);
}

TEST(PlanTest, AbortedJobsHaveNoTtl) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.ttl_seconds_after_finished = 0;
  World w = Started(job);
  w.obs.request = Cmd("AbortJob");
  w.Apply(w.Plan());
  w.obs.request.reset();
  w.Apply(w.Plan());
  EXPECT_EQ(w.obs.job.status.state.phase, "Aborted");
  EXPECT_FALSE(w.Plan().delete_job);
}

TEST(PlanTest, JobBeingDeletedIsLeftAlone) {
  World w = Started(MakeJob("j", {Task("worker", 1)}));
  w.obs.job.metadata.deletion_timestamp = kNow;
  w.SetAllPods("Failed");
  EXPECT_TRUE(w.Plan().Empty());
}

// --- SyncJob details ---

TEST(PlanTest, DependsOnWaitsForDependency) {
  api::Job job = MakeJob("j", {Task("master", 1), Task("worker", 2)});
  job.spec.tasks[1].depends_on.emplace();
  job.spec.tasks[1].depends_on->name = {"master"};
  World w(job);
  w.Apply(w.Plan());
  w.SetPodGroupPhase("Inqueue");
  Actions a = w.Plan();
  EXPECT_EQ(Names(a.create_pods), std::vector<std::string>{"j-master-0"});
  w.Apply(a);
  w.FindPod("j-master-0")->status.phase = "Running";
  EXPECT_TRUE(w.Plan().create_pods.empty());  // running but not ready
  api::ContainerStatus cs;
  cs.name = "main";
  cs.ready = true;
  w.FindPod("j-master-0")->status.container_statuses = {cs};
  EXPECT_EQ(Names(w.Plan().create_pods), (std::vector<std::string>{"j-worker-0", "j-worker-1"}));
}

TEST(PlanTest, ScaleDownDeletesHighIndexes) {
  World w = Started(MakeJob("j", {Task("worker", 3)}, 1));
  w.obs.job.spec.tasks[0].replicas = 1;
  w.obs.job.spec.tasks[0].min_available = 1;  // the webhook requires minAvailable <= replicas
  Actions a = w.Plan();
  std::sort(a.delete_pods.begin(), a.delete_pods.end());
  EXPECT_EQ(a.delete_pods, (std::vector<std::string>{"j-worker-1", "j-worker-2"}));
  EXPECT_EQ(a.update_status->terminating, 2);
  ASSERT_TRUE(a.update_pod_group);
  EXPECT_EQ(a.update_pod_group->spec.min_task_member.at("worker"), 1);
}

TEST(PlanTest, GeneratedPvcIsCreatedAndWrittenBack) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  api::VolumeSpec vs;
  vs.mount_path = "/data";
  vs.volume_claim.emplace();
  vs.volume_claim->access_modes = {"ReadWriteOnce"};
  job.spec.volumes.push_back(vs);
  World w(job);
  Actions a = w.Plan();
  ASSERT_EQ(a.create_pvcs.size(), 1u);
  const std::string pvc = a.create_pvcs[0].metadata.name;
  EXPECT_EQ(pvc.rfind("j-pvc-", 0), 0u);
  EXPECT_EQ(pvc.size(), std::string("j-pvc-").size() + 12);
  ASSERT_TRUE(a.update_job);
  EXPECT_EQ(a.update_job->spec.volumes[0].volume_claim_name, pvc);
  EXPECT_EQ(a.update_status->controlled_resources.at("volume-pvc-" + pvc), pvc);
  EXPECT_EQ(w.Plan().create_pvcs[0].metadata.name, pvc);  // deterministic
  w.Apply(a);
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  ASSERT_EQ(a.create_pods.size(), 1u);
  const auto& vols = a.create_pods[0].spec.volumes;
  ASSERT_EQ(vols.size(), 1u);
  EXPECT_EQ(vols[0].persistent_volume_claim->claim_name, pvc);
  EXPECT_EQ(a.create_pods[0].spec.containers[0].volume_mounts.at(0).mount_path, "/data");
}

// Two job volumes on one claim: Volcano mounts the claim once, at the first entry's path.
TEST(PlanTest, TwoVolumesOnOneClaimMountTheFirstOnly) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  for (const char* path : {"/data", "/data2"}) {
    api::VolumeSpec vs;
    vs.mount_path = path;
    vs.volume_claim_name = "shared";
    job.spec.volumes.push_back(vs);
  }
  World w(job);
  w.obs.pvcs.insert("shared");
  w.Apply(w.Plan());
  w.SetPodGroupPhase("Inqueue");
  Actions a = w.Plan();
  ASSERT_EQ(a.create_pods.size(), 1u);
  const api::Pod& pod = a.create_pods[0];
  ASSERT_EQ(pod.spec.volumes.size(), 1u);
  EXPECT_EQ(pod.spec.volumes[0].persistent_volume_claim->claim_name, "shared");
  ASSERT_EQ(pod.spec.containers[0].volume_mounts.size(), 1u);
  EXPECT_EQ(pod.spec.containers[0].volume_mounts[0].mount_path, "/data");
}

TEST(PlanTest, MissingNamedPvcKeepsJobPending) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  api::VolumeSpec vs;
  vs.mount_path = "/data";
  vs.volume_claim_name = "shared";
  job.spec.volumes.push_back(vs);
  World w(job);
  Actions first = w.Plan();
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].reason, "PVCError");
  EXPECT_EQ(first.events[0].message, "pvc shared referenced by the job does not exist");
  // The status says why for as long as it holds: state.reason/message, written with the status.
  ASSERT_TRUE(first.update_status);
  EXPECT_EQ(first.update_status->state.reason, "PVCNotFound");
  EXPECT_EQ(first.update_status->state.message, "pvc shared referenced by the job does not exist");
  w.Apply(first);
  w.SetPodGroupPhase("Inqueue");
  Actions a = w.Plan();
  EXPECT_TRUE(a.create_pods.empty());
  EXPECT_TRUE(a.events.empty());  // already said: no Event per reconcile
  ASSERT_TRUE(a.requeue_after);   // PVCs are not watched: the job looks again by itself
  EXPECT_LE(*a.requeue_after, std::chrono::milliseconds(5000));
  w.obs.pvcs.insert("shared");
  a = w.Plan();
  EXPECT_EQ(a.create_pods.size(), 1u);
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->state.reason, "");  // cleared once the claim exists
  EXPECT_EQ(a.update_status->state.message, "");
}

TEST(PlanTest, ForwardingQueueAnnotatesJobAndPods) {
  World w(MakeJob("j", {Task("worker", 1)}));
  w.obs.queue.emplace();
  w.obs.queue->spec.extend_clusters.emplace_back();
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_EQ(a.update_job->metadata.annotations.at("volcano.sh/job-forwarding"), "true");
  w.Apply(a);
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  ASSERT_EQ(a.create_pods.size(), 1u);
  EXPECT_EQ(a.create_pods[0].metadata.labels.at("volcano.sh/job-forwarding"), "true");
}

TEST(PlanTest, StalePodGroupFromKilledRunIsReplaced) {
  World w(MakeJob("j", {Task("worker", 1)}));
  w.obs.job.status.state.phase = "Pending";
  w.obs.job.status.version = 2;
  w.obs.job.status.min_available = 1;
  w.obs.pod_group = MakePodGroup(w.obs.job, "Running");
  w.obs.pod_group->metadata.annotations[std::string(kPodGroupJobVersionAnnotation)] = "1";
  Actions a = w.Plan();
  EXPECT_TRUE(a.delete_pod_group);
  EXPECT_TRUE(a.create_pods.empty());  // a stale admission does not open the gate
}

TEST(PlanTest, ConvergesFromScratchWithPlugins) {
  api::Job job = MakeJob("j", {Task("master", 1), Task("worker", 2)});
  job.spec.plugins = {{"svc", {}}, {"ssh", {}}, {"env", {}}, {"mpi", {}}};
  World w(job);
  w.Apply(w.Plan());
  w.SetPodGroupPhase("Inqueue");
  EXPECT_GE(w.Converge(), 1);
  EXPECT_EQ(w.obs.pods.size(), 3u);
  EXPECT_EQ(w.keys.calls, 1);  // generated once, never regenerated
  EXPECT_EQ(w.obs.job.status.controlled_resources.at("plugin-ssh"), "ssh");
  EXPECT_EQ(w.obs.job.status.controlled_resources.at("plugin-svc"), "svc");
  w.SetAllPods("Running");
  EXPECT_GE(w.Converge(), 1);
  EXPECT_EQ(w.obs.job.status.state.phase, "Running");
  EXPECT_TRUE(w.Plan().Empty());
  EXPECT_EQ(w.keys.calls, 1);
}

// Volcano's syncJob fails on an unknown plugin (and its webhook refuses the job): no PodGroup, no pods, and
// an error so that the work queue retries and then terminates the job.
TEST(PlanTest, UnknownPluginIsASyncErrorAndNothingIsCreated) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.plugins = {{"nosuch", {}}};
  World w(job);
  Actions a = w.Plan();
  ASSERT_FALSE(a.events.empty());
  EXPECT_EQ(a.events[0].reason, "PluginError");
  EXPECT_EQ(a.sync_error.code(), core::StatusCode::kNotFound);
  EXPECT_NE(a.sync_error.message().find("failed to get plugin nosuch"), std::string::npos);
  EXPECT_FALSE(a.create_pod_group);
  EXPECT_TRUE(a.create_pods.empty());
}

TEST(PlanTest, MissingQueueIsASyncErrorAndNothingIsCreated) {
  World w(MakeJob("j", {Task("worker", 1)}));
  w.obs.queue_missing = true;
  Actions a = w.Plan();
  EXPECT_EQ(a.sync_error.code(), core::StatusCode::kNotFound);
  ASSERT_FALSE(a.events.empty());
  EXPECT_EQ(a.events[0].reason, "QueueNotFound");
  EXPECT_FALSE(a.create_pod_group);
  EXPECT_TRUE(a.create_pods.empty());
  w.obs.queue_missing = false;
  EXPECT_TRUE(w.Plan().sync_error.ok());
}

// A ray job without its head task: Volcano's OnPodCreate fails, so pod creation fails and the job is retried
// and terminated; it must not wait in Pending for ever.
TEST(PlanTest, RayJobWithoutHeadIsASyncError) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.plugins = {{"ray", {}}};
  World w(job);
  core::Status err;
  for (int round = 0; round < 4; ++round) {
    Actions a = w.Plan();
    EXPECT_TRUE(a.create_pods.empty()) << "round " << round;
    if (!a.sync_error.ok()) err = a.sync_error;
    w.Apply(a);
    if (!w.obs.pod_group) continue;
    w.SetPodGroupPhase("Inqueue");
  }
  EXPECT_FALSE(err.ok());
  EXPECT_NE(err.message().find("no head task"), std::string::npos) << err;
  EXPECT_TRUE(w.obs.pods.empty());
}

}  // namespace
}  // namespace tephra::reconcilers::job

namespace tephra::reconcilers::job {
namespace {

// docs/reservations.md, "Enforcing the estimate": a queue that asks for it holds its jobs to their running
// estimate; other queues do not.
api::Queue EnforcingQueue(bool enforce) {
  api::Queue q;
  q.metadata.name = "default";
  if (enforce) q.metadata.annotations["tephra.io/enforce-running-estimate"] = "true";
  return q;
}

TEST(PlanTest, AQueueThatEnforcesRunningEstimatesTerminatesAJobPastItsEstimate) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.running_estimate = "10m";
  World w = Started(job);
  w.obs.queue = EnforcingQueue(true);
  ASSERT_EQ(w.obs.job.status.state.phase, "Running");
  // Before the estimate has passed: nothing happens, and the job is looked at again when it does.
  Actions before = w.Plan();
  EXPECT_EQ(before.action, "SyncJob");
  ASSERT_TRUE(before.requeue_after);
  EXPECT_LE(*before.requeue_after, std::chrono::minutes(10));
  EXPECT_GT(*before.requeue_after, std::chrono::minutes(9));
  w.obs.now += std::chrono::minutes(10);
  Actions after = w.Plan();
  EXPECT_EQ(after.action, "TerminateJob");
  ASSERT_TRUE(after.update_status);
  EXPECT_EQ(after.update_status->state.phase, "Terminating");
  bool said = false;
  for (const auto& e : after.events)
    if (e.reason == "RunningEstimateExceeded" && e.message.find("past its running estimate 10m0s") != std::string::npos)
      said = true;
  EXPECT_TRUE(said);
}

TEST(PlanTest, RunningEstimatesAreNotEnforcedUnlessTheQueueAsks) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.running_estimate = "10m";
  World w = Started(job);
  w.obs.queue = EnforcingQueue(false);
  w.obs.now += std::chrono::hours(5);
  EXPECT_EQ(w.Plan().action, "SyncJob");
}

TEST(PlanTest, TheQueuesMaximumCapsTheEnforcedEstimate) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.running_estimate = "10h";
  World w = Started(job);
  w.obs.queue = EnforcingQueue(true);
  w.obs.queue->metadata.annotations["tephra.io/max-running-estimate"] = "1h";
  w.obs.now += std::chrono::minutes(59);
  EXPECT_EQ(w.Plan().action, "SyncJob");
  w.obs.now += std::chrono::minutes(1);
  EXPECT_EQ(w.Plan().action, "TerminateJob");
}

}  // namespace
}  // namespace tephra::reconcilers::job
