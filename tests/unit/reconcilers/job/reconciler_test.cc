// The executor against the in-memory fake API server: writes, ordering, 409 redo, AlreadyExists with our
// owner, rejected pods, restart marking, max-requeue termination. Informer caches are filled by hand from
// the fake server (Replace), so tests control exactly how stale the cache is.
#include <gtest/gtest.h>

#include "reconciler.h"
#include "tephra/kube/events.h"
#include "test_util.h"
#include "testing/fake_client.h"

namespace tephra::reconcilers::job {
namespace {

using namespace tephra::reconcilers::job::testing;  // NOLINT
using kube::testing::FakeClient;

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest()
      : clock_(Time(kNow)),
        client_(std::make_shared<FakeClient>(&clock_)),
        jobs_(client_),
        pods_(client_),
        pgs_(client_) {
    JobReconciler::AddIndexers(pods_);
    JobReconcilerOptions o;
    o.client = client_;
    o.jobs = &jobs_;
    o.pods = &pods_;
    o.pod_groups = &pgs_;
    o.key_generator = std::make_shared<FakeKeyGenerator>();
    o.clock = &clock_;
    rec_ = std::make_unique<JobReconciler>(o);
  }

  // Replaces rec_ with one that records Events (processed by the test) and counts into registry_.
  void UseRecorderAndRegistry() {
    kube::EventRecorderOptions eo;
    eo.component = "tephra-controller";
    eo.clock = &clock_;
    eo.start_thread = false;
    recorder_ = std::make_unique<kube::EventRecorder>(client_, eo);
    JobReconcilerOptions o;
    o.client = client_;
    o.jobs = &jobs_;
    o.pods = &pods_;
    o.pod_groups = &pgs_;
    o.key_generator = std::make_shared<FakeKeyGenerator>();
    o.clock = &clock_;
    o.recorder = recorder_.get();
    o.registry = &registry_;
    rec_ = std::make_unique<JobReconciler>(o);
  }
  // Replaces rec_ with one that sees Queues through `queues` (as the manager wires it): only a synced queue
  // informer proves that a job's queue is missing.
  void UseQueues(kube::Informer<api::Queue>* queues) {
    JobReconcilerOptions o;
    o.client = client_;
    o.jobs = &jobs_;
    o.pods = &pods_;
    o.pod_groups = &pgs_;
    o.queues = queues;
    o.key_generator = std::make_shared<FakeKeyGenerator>();
    o.clock = &clock_;
    rec_ = std::make_unique<JobReconciler>(o);
  }
  std::vector<api::Event> ApiEvents(const std::string& reason) {
    if (recorder_) recorder_->ProcessPending();
    std::vector<api::Event> out;
    auto list = client_->List(api::Event::Resource(), "ns", {});
    if (!list.ok()) return out;
    for (const auto& j : list.value().items) {
      api::Event e = api::FromJson<api::Event>(j).value();
      if (e.reason == reason) out.push_back(std::move(e));
    }
    return out;
  }
  // Writes of the job object itself (not its status), attempted or done.
  int JobUpdates() {
    int n = 0;
    for (const auto& a : client_->Actions())
      if (a.verb == "update" && a.resource.rfind("jobs", 0) == 0 && a.subresource.empty()) ++n;
    return n;
  }
  double DefaultsCounter() {
    auto* f = registry_.FindCounter("tephra_job_defaults_applied_total");
    return f ? f->With({"ns"})->Value() : -1;
  }

  // Copies the fake server's state into the caches (what a caught-up informer would hold).
  void Refresh() {
    auto fill = [&](auto& informer, const api::ResourceInfo& r) {
      auto l = client_->List(r, "", {});
      ASSERT_TRUE(l.ok()) << l.status();
      informer.Replace(std::move(l.value().items));
    };
    fill(jobs_, api::Job::Resource());
    fill(pods_, api::Pod::Resource());
    fill(pgs_, api::PodGroup::Resource());
  }

  api::Job ApiJob() { return kube::GetAs<api::Job>(*client_, "ns", "j").value(); }
  std::vector<api::Pod> ApiPods() {
    std::vector<api::Pod> out;
    auto list = client_->List(api::Pod::Resource(), "ns", {});
    if (!list.ok()) return out;
    for (const auto& j : list.value().items) out.push_back(api::FromJson<api::Pod>(j).value());
    return out;
  }
  void SetPodGroupPhase(const std::string& phase) {
    auto list = client_->List(api::PodGroup::Resource(), "ns", {});
    ASSERT_TRUE(list.ok() && !list.value().items.empty());
    api::json pg = list.value().items[0];
    pg["status"]["phase"] = phase;
    // The PodGroup CRD has no status subresource (podgroups/status answers 404): a plain update stores status.
    ASSERT_TRUE(client_->Update(api::PodGroup::Resource(), "ns", pg).ok());
  }
  void SetPodPhase(const std::string& name, const std::string& phase) {
    api::json p = client_->Get(api::Pod::Resource(), "ns", name).value();
    p["status"]["phase"] = phase;
    ASSERT_TRUE(client_->Update(api::Pod::Resource(), "ns", p, "status").ok());
  }
  void CreateJob(api::Job job) {
    job.metadata.uid.clear();
    job.metadata.resource_version.clear();
    ASSERT_TRUE(client_->Create(api::Job::Resource(), "ns", api::ToJson(job)).ok());
    Refresh();
  }
  // Reconciles until the job has pods in `phase` (the scheduler/kubelet parts done by the test).
  void RunToPods(const std::string& phase) {
    ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
    SetPodGroupPhase("Inqueue");
    Refresh();
    ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
    for (const auto& p : ApiPods()) SetPodPhase(p.metadata.name, phase);
    Refresh();
    ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
    Refresh();
  }

  core::FakeClock clock_;
  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::Job> jobs_;
  kube::Informer<api::Pod> pods_;
  kube::Informer<api::PodGroup> pgs_;
  kube::metrics::Registry registry_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<JobReconciler> rec_;
};

// --- admission defaults (docs/job-controller.md, "Admission defaults applied by the controller") ---

// `kubectl apply` with no mutating webhook: one task of 3 replicas, no minAvailable, schedulerName, task
// name, queue or maxRetry.
api::Job UndefaultedJob(const std::string& name = "j") {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ns";
  j.spec.tasks = {Task("", 3)};
  return j;
}

TEST_F(ReconcilerTest, UndefaultedJobIsWrittenBackWithDefaultsThenRuns) {
  UseRecorderAndRegistry();
  CreateJob(UndefaultedJob());
  auto r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  api::Job stored = ApiJob();
  EXPECT_EQ(stored.spec.queue, "default");
  EXPECT_EQ(stored.spec.scheduler_name, "volcano");
  EXPECT_EQ(stored.spec.min_available, 3);
  EXPECT_EQ(stored.spec.max_retry, 3);
  ASSERT_EQ(stored.spec.tasks.size(), 1u);
  EXPECT_EQ(stored.spec.tasks[0].name, "default0");
  EXPECT_EQ(stored.spec.tasks[0].min_available, 3);
  EXPECT_EQ(stored.spec.tasks[0].max_retry, 3);
  EXPECT_EQ(JobUpdates(), 1);
  EXPECT_EQ(DefaultsCounter(), 1);
  auto events = ApiEvents("Defaulted");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, "Normal");
  EXPECT_EQ(events[0].involved_object.name, "j");
  EXPECT_EQ(events[0].message,
            "applied defaults the admission webhook would have set: spec.maxRetry=3, spec.minAvailable=3, "
            "spec.queue=default, spec.schedulerName=volcano, spec.tasks[0].maxRetry=3, "
            "spec.tasks[0].minAvailable=3, spec.tasks[0].name=default0");
  // The same reconcile went on with the written object: status and a PodGroup of minMember 3.
  EXPECT_EQ(stored.status.state.phase, "Pending");
  auto pgs = client_->List(api::PodGroup::Resource(), "ns", {});
  ASSERT_TRUE(pgs.ok());
  ASSERT_EQ(pgs.value().items.size(), 1u);
  api::PodGroup pg = api::FromJson<api::PodGroup>(pgs.value().items[0]).value();
  EXPECT_EQ(pg.spec.min_member, 3);
  EXPECT_EQ(pg.spec.queue, "default");

  SetPodGroupPhase("Inqueue");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  auto pods = ApiPods();
  ASSERT_EQ(pods.size(), 3u);
  std::sort(pods.begin(), pods.end(),
            [](const api::Pod& a, const api::Pod& b) { return a.metadata.name < b.metadata.name; });
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pods[i].metadata.name, "j-default0-" + std::to_string(i));
    EXPECT_EQ(pods[i].spec.scheduler_name, "volcano");
  }
  // Pending pods of a gang of 3: the job stays Pending (it used to show Running at once).
  for (const auto& p : pods) SetPodPhase(p.metadata.name, "Pending");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Pending");
  for (const auto& p : pods) SetPodPhase(p.metadata.name, "Running");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Running");
  // Written once, evented once.
  EXPECT_EQ(JobUpdates(), 1);
  EXPECT_EQ(DefaultsCounter(), 1);
  EXPECT_EQ(ApiEvents("Defaulted").size(), 1u);
}

TEST_F(ReconcilerTest, JobWithItsDefaultsIsNeverWritten) {
  UseRecorderAndRegistry();
  CreateJob(MakeJob("j", {Task("worker", 2)}));
  RunToPods("Running");
  ASSERT_EQ(ApiJob().status.state.phase, "Running");
  for (const auto& p : ApiPods()) SetPodPhase(p.metadata.name, "Succeeded");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  ASSERT_EQ(ApiJob().status.state.phase, "Completed");
  EXPECT_EQ(JobUpdates(), 0);
  EXPECT_EQ(DefaultsCounter(), 0);
  EXPECT_TRUE(ApiEvents("Defaulted").empty());
}

// Someone else writes the job between the cache read and the defaulting write: the 409 makes the reconciler
// re-read the job and default that version, so the other write is kept and the defaults land too.
TEST_F(ReconcilerTest, DefaultingConflictRereadsAndLosesNoUpdate) {
  UseRecorderAndRegistry();
  CreateJob(UndefaultedJob());  // the cache holds this version
  api::json j = client_->Get(api::Job::Resource(), "ns", "j").value();
  j["metadata"]["labels"]["team"] = "a";
  j["spec"]["tasks"][0]["replicas"] = 4;
  ASSERT_TRUE(client_->Update(api::Job::Resource(), "ns", j).ok());
  client_->ClearActions();
  auto r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(JobUpdates(), 2);  // the stale write (409), then the write on the re-read job
  api::Job stored = ApiJob();
  EXPECT_EQ(stored.metadata.labels.at("team"), "a");
  EXPECT_EQ(stored.spec.tasks[0].replicas, 4);
  EXPECT_EQ(stored.spec.tasks[0].name, "default0");
  EXPECT_EQ(stored.spec.tasks[0].min_available, 4);
  EXPECT_EQ(stored.spec.min_available, 4);
  EXPECT_EQ(stored.spec.queue, "default");
  EXPECT_EQ(stored.status.state.phase, "Pending");
  EXPECT_EQ(DefaultsCounter(), 1);
  EXPECT_EQ(ApiEvents("Defaulted").size(), 1u);  // only the write that landed is evented
  // Nothing was created from the stale, undefaulted spec: one PodGroup, of the re-read job's gang.
  auto pgs = client_->List(api::PodGroup::Resource(), "ns", {});
  ASSERT_TRUE(pgs.ok());
  ASSERT_EQ(pgs.value().items.size(), 1u);
  EXPECT_EQ(pgs.value().items[0]["spec"]["minMember"], 4);
}

TEST_F(ReconcilerTest, PytorchJobWithoutSvcGetsSvcAndItsService) {
  api::Job job = UndefaultedJob("pt");
  job.spec.tasks = {Task("master", 1), Task("worker", 2)};
  job.spec.plugins = {{"pytorch", {"--master=master", "--worker=worker", "--port=23456"}}};
  CreateJob(job);
  ASSERT_TRUE(rec_->Reconcile("ns/pt").status.ok());
  api::Job stored = kube::GetAs<api::Job>(*client_, "ns", "pt").value();
  EXPECT_TRUE(stored.spec.plugins.count("svc"));
  EXPECT_TRUE(stored.spec.plugins.count("pytorch"));
  auto svc = client_->Get(api::Service::Resource(), "ns", "pt");
  ASSERT_TRUE(svc.ok()) << "no headless Service: " << svc.status();
  EXPECT_EQ((*svc)["spec"]["clusterIP"], "None");
}

// A Command that arrives before the defaults are written is applied to the written job, not dropped.
TEST_F(ReconcilerTest, CommandBeforeDefaultingIsNotLost) {
  CreateJob(UndefaultedJob());
  Request req;
  req.action = std::string(api::kActionAbortJob);
  rec_->Submit("ns/j", req);
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  api::Job stored = ApiJob();
  EXPECT_EQ(stored.spec.tasks[0].name, "default0");
  const std::string& phase = stored.status.state.phase;
  EXPECT_TRUE(phase == "Aborting" || phase == "Aborted") << phase;
}

TEST_F(ReconcilerTest, RefusedDefaultingWriteIsARetriableError) {
  UseRecorderAndRegistry();
  CreateJob(UndefaultedJob());
  client_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "update" && a.resource.rfind("jobs", 0) == 0 && a.subresource.empty())
      return core::InvalidArgumentError("admission webhook denied the request").WithHttp(422, "Invalid");
    return std::nullopt;
  });
  auto r = rec_->Reconcile("ns/j");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.terminal);
  // Nothing was derived from the undefaulted spec.
  EXPECT_TRUE(ApiJob().status.state.phase.empty());
  EXPECT_TRUE(client_->List(api::PodGroup::Resource(), "ns", {}).value().items.empty());
  EXPECT_EQ(DefaultsCounter(), 0);
  EXPECT_EQ(ApiEvents("DefaultingFailed").size(), 1u);
  EXPECT_TRUE(ApiEvents("Defaulted").empty());
}

TEST_F(ReconcilerTest, MissingJobIsSuccess) { EXPECT_TRUE(rec_->Reconcile("ns/nope").status.ok()); }

TEST_F(ReconcilerTest, CreatesPodGroupThenPodsAfterAdmission) {
  CreateJob(MakeJob("j", {Task("worker", 2)}));
  auto r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ApiJob().status.state.phase, "Pending");
  auto pg_list = client_->List(api::PodGroup::Resource(), "ns", {});
  ASSERT_TRUE(pg_list.ok());
  const auto& pgs = pg_list.value().items;
  ASSERT_EQ(pgs.size(), 1u);
  EXPECT_EQ(pgs[0]["metadata"]["name"], "j-" + ApiJob().metadata.uid);
  EXPECT_TRUE(ApiPods().empty());
  SetPodGroupPhase("Inqueue");
  Refresh();
  r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  auto pods = ApiPods();
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0].metadata.ControllerRef()->uid, ApiJob().metadata.uid);
}

TEST_F(ReconcilerTest, AlreadyExistsWithOurOwnerIsSuccess) {
  CreateJob(MakeJob("j", {Task("worker", 2)}));
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  SetPodGroupPhase("Inqueue");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  // The pod cache is stale (empty): the same creates are attempted again and must count as success.
  pods_.Replace({});
  auto r = rec_->Reconcile("ns/j");
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ApiPods().size(), 2u);
}

TEST_F(ReconcilerTest, StatusConflictIsRedoneFromAFreshRead) {
  CreateJob(MakeJob("j", {Task("worker", 1)}));
  int conflicts = 0;
  client_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "update" && a.subresource == "status" && conflicts++ == 0)
      return core::AbortedError("the object has been modified").WithHttp(409, "Conflict");
    return std::nullopt;
  });
  auto r = rec_->Reconcile("ns/j");
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(conflicts, 2);
  EXPECT_EQ(ApiJob().status.state.phase, "Pending");
}

TEST_F(ReconcilerTest, RejectedPodsGiveEventReasonAndRetriableError) {
  CreateJob(MakeJob("j", {Task("worker", 1)}));
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  SetPodGroupPhase("Inqueue");
  Refresh();
  client_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "create" && a.resource == "pods")
      return core::InvalidArgumentError("Pod \"j-worker-0\" is invalid: spec.containers[0].image: Required value")
          .WithHttp(422, "Invalid");
    return std::nullopt;
  });
  auto r = rec_->Reconcile("ns/j");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.terminal);  // retried with backoff; after --max-requeue-num the job is terminated
  EXPECT_EQ(ApiJob().status.state.reason, "FailedCreatePod");
  EXPECT_NE(ApiJob().status.state.message.find("Required value"), std::string::npos);
  client_->SetFailureInjector(nullptr);
  Refresh();
  r = rec_->Reconcile("ns/j");
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ApiJob().status.state.reason, "");
}

TEST_F(ReconcilerTest, RestartMarksThenDeletesAndNeverDoubleCounts) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.tasks[0].policies = {Policy("PodFailed", "RestartPod")};
  CreateJob(job);
  RunToPods("Running");
  ASSERT_EQ(ApiJob().status.state.phase, "Running");
  SetPodPhase("j-worker-1", "Failed");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.retry_count, 1);
  EXPECT_EQ(ApiJob().status.state.phase, "Restarting");
  // The patch came before the delete.
  std::vector<std::string> verbs;
  for (const auto& a : client_->Actions())
    if (a.resource == "pods" && a.name == "j-worker-1" && (a.verb == "patch" || a.verb == "delete")) verbs.push_back(a.verb);
  EXPECT_EQ(verbs, (std::vector<std::string>{"patch", "delete"}));
  EXPECT_EQ(ApiPods().size(), 1u);
  // Stale pod cache (the failed pod still looks alive and unmarked), fresh job cache: no second retry.
  auto jobs = client_->List(api::Job::Resource(), "", {});
  ASSERT_TRUE(jobs.ok());
  jobs_.Replace(std::move(jobs.value().items));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.retry_count, 1);
  EXPECT_EQ(ApiJob().status.state.phase, "Restarting");
  EXPECT_EQ(rec_->HandledPodsForTest("ns/j"), 1u);
  // Caught up: Restarting -> Pending -> the pod is recreated, still one retry.
  for (int i = 0; i < 3; ++i) {
    Refresh();
    ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  }
  EXPECT_EQ(ApiPods().size(), 2u);
  EXPECT_EQ(ApiJob().status.retry_count, 1);
  EXPECT_EQ(rec_->HandledPodsForTest("ns/j"), 0u);
}

TEST_F(ReconcilerTest, FreshReconcilerAfterCrashMidJobCountsNoRetry) {
  // A SIGKILLed controller loses its per-job memory; its successor starts from freshly listed caches while
  // the job's pods still run. It must neither restart nor recreate anything, and the job completes with
  // retryCount and version 0.
  CreateJob(MakeJob("j", {Task("worker", 4)}));
  RunToPods("Running");
  ASSERT_EQ(ApiJob().status.state.phase, "Running");
  std::vector<std::string> uids_before;
  for (const auto& p : ApiPods()) uids_before.push_back(p.metadata.uid);
  ASSERT_EQ(uids_before.size(), 4u);

  kube::Informer<api::Job> jobs2(client_);
  kube::Informer<api::Pod> pods2(client_);
  kube::Informer<api::PodGroup> pgs2(client_);
  JobReconciler::AddIndexers(pods2);
  JobReconcilerOptions o;
  o.client = client_;
  o.jobs = &jobs2;
  o.pods = &pods2;
  o.pod_groups = &pgs2;
  o.key_generator = std::make_shared<FakeKeyGenerator>();
  o.clock = &clock_;
  JobReconciler successor(o);
  auto list_into = [&](auto& informer, const api::ResourceInfo& r) {
    auto l = client_->List(r, "", {});
    ASSERT_TRUE(l.ok()) << l.status();
    informer.Replace(std::move(l.value().items));
  };
  list_into(jobs2, api::Job::Resource());
  list_into(pods2, api::Pod::Resource());
  list_into(pgs2, api::PodGroup::Resource());
  ASSERT_TRUE(successor.Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Running");
  for (const auto& p : ApiPods()) SetPodPhase(p.metadata.name, "Succeeded");
  list_into(jobs2, api::Job::Resource());
  list_into(pods2, api::Pod::Resource());
  ASSERT_TRUE(successor.Reconcile("ns/j").status.ok());

  api::Job done = ApiJob();
  EXPECT_EQ(done.status.state.phase, "Completed");
  EXPECT_EQ(done.status.retry_count, 0);
  EXPECT_EQ(done.status.version, 0);
  std::vector<std::string> uids_after;
  for (const auto& p : ApiPods()) uids_after.push_back(p.metadata.uid);
  EXPECT_EQ(uids_after, uids_before);
  // Like Volcano's Go types (omitempty), a zero retryCount/version is not written at all: a reader must take
  // the missing field as 0 (the e2e restart check once failed on exactly that, reading "" for 0).
  api::json stored = client_->Get(api::Job::Resource(), "ns", "j").value();
  EXPECT_FALSE(stored["status"].contains("retryCount"));
  EXPECT_FALSE(stored["status"].contains("version"));
}

TEST_F(ReconcilerTest, MaxRequeuesTerminatesTheJob) {
  CreateJob(MakeJob("j", {Task("worker", 1)}));
  RunToPods("Running");
  rec_->OnMaxRequeues("ns/j", core::UnavailableError("apiserver down"));
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Terminating");
  EXPECT_TRUE(ApiPods().empty());
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Terminated");
}

// Volcano queues each Command as its own request; two sent back to back both run, in order. The second is
// planned on the job as the first left it, even while the cache still shows the job before the first.
TEST_F(ReconcilerTest, BackToBackCommandsBothRunInOrder) {
  CreateJob(MakeJob("j", {Task("worker", 1)}));
  RunToPods("Running");
  Request abort, resume;
  abort.action = std::string(api::kActionAbortJob);
  resume.action = std::string(api::kActionResumeJob);
  rec_->Submit("ns/j", abort);
  rec_->Submit("ns/j", resume);
  auto r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ApiJob().status.state.phase, "Aborting");
  ASSERT_TRUE(r.requeue_after.has_value());  // the second request is due at once
  EXPECT_EQ(*r.requeue_after, kube::Duration::zero());
  // No Refresh(): the job cache still says Running, where ResumeJob would do nothing.
  r = rec_->Reconcile("ns/j");
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(ApiJob().status.state.phase, "Restarting");
  EXPECT_FALSE(r.requeue_after.has_value() && *r.requeue_after == kube::Duration::zero());
}

// A job whose queue does not exist (created while the webhook was off, or the queue deleted since): the
// sync fails, nothing is created, and once the controller gives up (--max-requeue-num) the job terminates,
// as Volcano's handleJobError does.
TEST_F(ReconcilerTest, MissingQueueFailsTheSyncThenMaxRequeuesTerminate) {
  kube::Informer<api::Queue> queues(client_);
  UseQueues(&queues);
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.queue = "missing";
  CreateJob(job);
  queues.Replace({});
  auto r = rec_->Reconcile("ns/j");
  EXPECT_EQ(r.status.code(), core::StatusCode::kNotFound) << r.status;
  EXPECT_FALSE(r.terminal);  // retried with backoff: the queue may still be created
  EXPECT_TRUE(ApiPods().empty());
  EXPECT_TRUE(client_->List(api::PodGroup::Resource(), "ns", {}).value().items.empty());

  rec_->OnMaxRequeues("ns/j", r.status);
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(ApiJob().status.state.phase, "Terminated");
}

TEST_F(ReconcilerTest, QueueCreatedBeforeTheRetriesRunOutLetsTheJobRun) {
  kube::Informer<api::Queue> queues(client_);
  UseQueues(&queues);
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.queue = "late";
  CreateJob(job);
  queues.Replace({});
  EXPECT_FALSE(rec_->Reconcile("ns/j").status.ok());
  api::Queue q;
  q.metadata.name = "late";
  ASSERT_TRUE(client_->Create(api::Queue::Resource(), "", api::ToJson(q)).ok());
  queues.Replace(client_->List(api::Queue::Resource(), "", {}).value().items);
  EXPECT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_EQ(client_->List(api::PodGroup::Resource(), "ns", {}).value().items.size(), 1u);
}

TEST_F(ReconcilerTest, TtlDeletesTheFinishedJob) {
  api::Job job = MakeJob("j", {Task("worker", 1)});
  job.spec.ttl_seconds_after_finished = 30;
  CreateJob(job);
  RunToPods("Succeeded");
  auto r = rec_->Reconcile("ns/j");  // Running -> Completed
  ASSERT_EQ(ApiJob().status.state.phase, "Completed");
  ASSERT_TRUE(r.requeue_after);
  EXPECT_EQ(*r.requeue_after, std::chrono::seconds(30));
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  EXPECT_TRUE(core::IsNotFound(client_->Get(api::Job::Resource(), "ns", "j").status()));
}

// RestartJob deletes the PodGroup and the next pass re-creates it under the same name. A reconcile whose
// PodGroup cache still shows the killed run's object (an informer that lags, or a second controller
// replica) must not delete the successor that now holds the name: the delete carries the uid it saw.
TEST_F(ReconcilerTest, StalePodGroupCacheNeverDeletesTheNextRunsPodGroup) {
  api::Job job = MakeJob("j", {Task("worker", 2)});
  job.spec.policies = {Policy("PodFailed", "RestartJob")};
  CreateJob(job);
  RunToPods("Running");
  auto old_pgs = client_->List(api::PodGroup::Resource(), "", {});
  ASSERT_TRUE(old_pgs.ok());
  ASSERT_EQ(old_pgs.value().items.size(), 1u);
  const std::string old_uid = old_pgs.value().items[0]["metadata"]["uid"];
  SetPodPhase("j-worker-0", "Failed");
  Refresh();
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());  // RestartJob: pods and PodGroup deleted, version 1
  ASSERT_EQ(ApiJob().status.version, 1);
  // Caught up until the next run's PodGroup exists on the server.
  std::string new_uid;
  for (int i = 0; i < 5 && new_uid.empty(); ++i) {
    Refresh();
    ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
    auto l = client_->List(api::PodGroup::Resource(), "", {});
    ASSERT_TRUE(l.ok());
    if (!l.value().items.empty()) new_uid = l.value().items[0]["metadata"]["uid"];
  }
  ASSERT_FALSE(new_uid.empty()) << "the next run's PodGroup was not created";
  ASSERT_NE(new_uid, old_uid);
  // Now the PodGroup cache goes back to the killed run's object (the job cache is current).
  pgs_.Replace(std::move(old_pgs.value().items));
  ASSERT_TRUE(rec_->Reconcile("ns/j").status.ok());
  auto l = client_->List(api::PodGroup::Resource(), "", {});
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l.value().items.size(), 1u) << "the next run's PodGroup was deleted through a stale cache";
  EXPECT_EQ(l.value().items[0]["metadata"]["uid"], new_uid);
}

}  // namespace
}  // namespace tephra::reconcilers::job
