#include <gtest/gtest.h>

#include "jobflow/plan.h"
#include "jobflow/reconciler.h"
#include "testing/fake_client.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::jobflow {
namespace {

using kube::testing::FakeClient;

// a -> b, a -> c (b and c depend on a).
api::JobFlow Flow(const std::string& retain = "retain") {
  api::JobFlow f;
  f.metadata.name = "jf";
  f.metadata.namespace_ = "ns";
  f.metadata.uid = "jf-uid";
  f.spec.job_retain_policy = retain;
  api::Flow a;
  a.name = "a";
  api::Flow b;
  b.name = "b";
  b.depends_on = api::FlowDependsOn{};
  b.depends_on->targets = {"a"};
  api::Flow c = b;
  c.name = "c";
  f.spec.flows = {a, b, c};
  return f;
}

api::JobTemplate Tmpl(const std::string& name) {
  api::JobTemplate t;
  t.metadata.name = name;
  t.metadata.namespace_ = "ns";
  t.spec.min_available = 1;
  t.spec.queue = "q-" + name;
  return t;
}

api::Job JobIn(const std::string& name, const std::string& phase) {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ns";
  j.status.state.phase = phase;
  return j;
}

Observed Obs() {
  Observed o;
  o.flow = Flow();
  for (const char* n : {"a", "b", "c"}) o.templates[n] = Tmpl(n);
  return o;
}

std::vector<std::string> Names(const std::vector<api::Job>& jobs) {
  std::vector<std::string> out;
  for (const auto& j : jobs) out.push_back(j.metadata.name);
  return out;
}

TEST(JobFlowPlan, RootsFirstThenDependentsWhenTargetsCompleted) {
  Observed o = Obs();
  EXPECT_EQ(Names(Plan(o).create_jobs), std::vector<std::string>{"jf-a"});
  o.jobs["jf-a"] = JobIn("jf-a", "Running");
  EXPECT_TRUE(Plan(o).create_jobs.empty());
  o.jobs["jf-a"] = JobIn("jf-a", "Completing");
  EXPECT_TRUE(Plan(o).create_jobs.empty());
  o.jobs["jf-a"] = JobIn("jf-a", "Completed");
  EXPECT_EQ(Names(Plan(o).create_jobs), (std::vector<std::string>{"jf-b", "jf-c"}));
}

TEST(JobFlowPlan, JobMaterialization) {
  api::Job j = BuildJob(Flow(), Tmpl("a"), "a");
  EXPECT_EQ(j.metadata.name, "jf-a");
  EXPECT_EQ(j.metadata.namespace_, "ns");
  EXPECT_EQ(j.metadata.labels.at(std::string(api::kCreatedByJobTemplateKey)), "ns.a");
  EXPECT_EQ(j.metadata.labels.at(std::string(api::kCreatedByJobFlowKey)), "ns.jf");
  EXPECT_EQ(j.metadata.annotations.at(std::string(api::kCreatedByJobTemplateKey)), "ns.a");
  EXPECT_EQ(j.metadata.annotations.at(std::string(api::kCreatedByJobFlowKey)), "ns.jf");
  ASSERT_EQ(j.metadata.owner_references.size(), 1u);
  EXPECT_EQ(j.metadata.owner_references[0].kind, "JobFlow");
  EXPECT_EQ(j.metadata.owner_references[0].api_version, "flow.volcano.sh/v1alpha1");
  EXPECT_EQ(j.metadata.owner_references[0].uid, "jf-uid");
  EXPECT_TRUE(j.metadata.owner_references[0].controller.value_or(false));
  EXPECT_EQ(j.spec.queue, "q-a");
}

TEST(JobFlowPlan, MissingTemplateWaits) {
  Observed o = Obs();
  o.templates.erase("a");
  Actions a = Plan(o);
  EXPECT_TRUE(a.create_jobs.empty());
  EXPECT_EQ(a.missing_templates, std::vector<std::string>{"a"});
}

TEST(JobFlowPlan, PhaseRules) {
  api::JobFlowStatus s;
  EXPECT_EQ(NextPhase("", s, 3), "Pending");
  s.pending_jobs = {"x"};
  EXPECT_EQ(NextPhase("Pending", s, 3), "Pending");
  s.running_jobs = {"y"};
  EXPECT_EQ(NextPhase("Pending", s, 3), "Running");
  s.running_jobs.clear();
  s.completed_jobs = {"y"};
  EXPECT_EQ(NextPhase("Pending", s, 3), "Running");
  s.completed_jobs = {"x", "y", "z"};
  EXPECT_EQ(NextPhase("Running", s, 3), "Succeed");
  s.failed_jobs = {"w"};
  EXPECT_EQ(NextPhase("Running", s, 3), "Failed");
  api::JobFlowStatus t;
  t.terminated_jobs = {"v"};
  EXPECT_EQ(NextPhase("Running", t, 3), "Failed");
  // Final phases stick.
  EXPECT_EQ(NextPhase("Succeed", t, 3), "Succeed");
  EXPECT_EQ(NextPhase("Failed", s, 3), "Failed");
  EXPECT_EQ(NextPhase("Terminating", s, 3), "Terminating");
}

TEST(JobFlowPlan, StatusListsAndIdempotence) {
  Observed o = Obs();
  o.jobs["jf-a"] = JobIn("jf-a", "Completed");
  o.jobs["jf-b"] = JobIn("jf-b", "Running");
  o.jobs["jf-c"] = JobIn("jf-c", "Restarting");
  o.jobs["jf-b"].status.retry_count = 2;
  Actions a = Plan(o);
  ASSERT_TRUE(a.update_status);
  EXPECT_EQ(a.update_status->completed_jobs, std::vector<std::string>{"jf-a"});
  EXPECT_EQ(a.update_status->running_jobs, std::vector<std::string>{"jf-b"});
  EXPECT_EQ(a.update_status->un_know_jobs, std::vector<std::string>{"jf-c"});
  EXPECT_EQ(a.update_status->state.phase, "Running");
  ASSERT_EQ(a.update_status->job_status_list.size(), 3u);
  EXPECT_EQ(a.update_status->job_status_list[1].restart_count, 2);
  EXPECT_EQ(a.update_status->conditions.at("jf-b").phase, "Running");
  o.flow.status = *a.update_status;
  EXPECT_TRUE(Plan(o).Empty());
}

TEST(JobFlowPlan, RunningHistoriesFollowJobPhases) {
  Observed o = Obs();
  core::ParseRfc3339("2026-11-22T10:00:09Z", &o.now);
  o.jobs["jf-a"] = JobIn("jf-a", "Pending");
  o.jobs["jf-a"].status.state.last_transition_time = "2026-11-22T10:00:00Z";
  o.jobs["jf-b"] = JobIn("jf-b", "");  // created, no status yet: no history
  Actions a = Plan(o);
  ASSERT_TRUE(a.update_status);
  ASSERT_EQ(a.update_status->job_status_list.size(), 2u);
  const auto& ha = a.update_status->job_status_list[0].running_histories;
  ASSERT_EQ(ha.size(), 1u);
  EXPECT_EQ(ha[0].state, "Pending");
  EXPECT_EQ(ha[0].start_timestamp, "2026-11-22T10:00:00Z");
  EXPECT_EQ(ha[0].end_timestamp, "");
  EXPECT_TRUE(a.update_status->job_status_list[1].running_histories.empty());
  o.flow.status = *a.update_status;
  EXPECT_TRUE(Plan(o).Empty());  // same phase: the history does not grow

  // Pending -> Running (the transition time comes from the job) -> Completed.
  o.jobs["jf-a"].status.state.phase = "Running";
  o.jobs["jf-a"].status.state.last_transition_time = "2026-11-22T10:00:05Z";
  o.flow.status = *Plan(o).update_status;
  o.jobs["jf-a"].status.state.phase = "Completed";
  o.jobs["jf-a"].status.state.last_transition_time = "";  // none recorded: falls back to now
  a = Plan(o);
  ASSERT_TRUE(a.update_status);
  const auto& h = a.update_status->job_status_list[0].running_histories;
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].end_timestamp, "2026-11-22T10:00:05Z");
  EXPECT_EQ(h[1].state, "Running");
  EXPECT_EQ(h[1].start_timestamp, "2026-11-22T10:00:05Z");
  EXPECT_EQ(h[1].end_timestamp, "2026-11-22T10:00:09Z");
  EXPECT_EQ(h[2].state, "Completed");
  EXPECT_EQ(h[2].start_timestamp, "2026-11-22T10:00:09Z");
  // The field survives the codec under Volcano's names.
  api::json j = api::ToJson(*a.update_status);
  EXPECT_EQ(j["jobStatusList"][0]["runningHistories"][1]["state"], "Running");
  EXPECT_EQ(j["jobStatusList"][0]["runningHistories"][0]["endTimestamp"], "2026-11-22T10:00:05Z");
}

TEST(JobFlowPlan, SucceedThenRetentionDelete) {
  Observed o = Obs();
  o.flow = Flow("delete");
  for (const char* n : {"jf-a", "jf-b", "jf-c"}) o.jobs[n] = JobIn(n, "Completed");
  Actions a = Plan(o);
  EXPECT_EQ(a.phase, "Succeed");
  EXPECT_EQ(a.delete_jobs, (std::vector<std::string>{"jf-a", "jf-b", "jf-c"}));
  // Retain keeps them; a Succeeded flow never re-creates deleted jobs.
  o.flow = Flow("retain");
  EXPECT_TRUE(Plan(o).delete_jobs.empty());
  o.flow = Flow("delete");
  o.flow.status.state.phase = "Succeed";
  o.jobs.clear();
  EXPECT_TRUE(Plan(o).create_jobs.empty());
}

TEST(JobTemplatePlan, DependsOnList) {
  api::JobTemplate t = Tmpl("a");
  auto l = PlanTemplate(t, {"jf2-a", "jf1-a", "jf1-a"});
  ASSERT_TRUE(l);
  EXPECT_EQ(*l, (std::vector<std::string>{"jf1-a", "jf2-a"}));
  t.status.job_depends_on_list = *l;
  EXPECT_FALSE(PlanTemplate(t, {"jf1-a", "jf2-a"}));
}

class JobFlowReconcilerTest : public ::testing::Test {
 protected:
  JobFlowReconcilerTest() : client_(std::make_shared<FakeClient>()), flows_(client_), tmpls_(client_), jobs_(client_) {
    JobFlowReconciler::AddIndexers(jobs_);
    JobFlowReconcilerOptions o;
    o.client = client_;
    o.flows = &flows_;
    o.templates = &tmpls_;
    o.jobs = &jobs_;
    o.registry = &registry_;
    rec_ = std::make_unique<JobFlowReconciler>(o);
    tmpl_rec_ = std::make_unique<JobTemplateReconciler>(client_, &tmpls_, &jobs_);
  }
  void Refresh() {
    flows_.Replace(std::move(client_->List(api::JobFlow::Resource(), "", {}).value().items));
    tmpls_.Replace(std::move(client_->List(api::JobTemplate::Resource(), "", {}).value().items));
    jobs_.Replace(std::move(client_->List(api::Job::Resource(), "", {}).value().items));
  }
  void SetJobPhase(const std::string& name, const std::string& phase) {
    auto j = client_->Get(api::Job::Resource(), "ns", name).value();
    j["status"]["state"]["phase"] = phase;
    ASSERT_TRUE(client_->Update(api::Job::Resource(), "ns", j, "status").ok());
  }
  std::vector<std::string> JobNames() {
    std::vector<std::string> out;
    auto list = client_->List(api::Job::Resource(), "ns", {});  // keep it alive for the loop
    for (const auto& j : list.value().items)
      out.push_back(j["metadata"]["name"].get<std::string>());
    return out;
  }
  void Run() {
    Refresh();
    auto r = rec_->Reconcile("ns/jf");
    ASSERT_TRUE(r.status.ok()) << r.status;
  }

  std::shared_ptr<FakeClient> client_;
  kube::metrics::Registry registry_;
  kube::Informer<api::JobFlow> flows_;
  kube::Informer<api::JobTemplate> tmpls_;
  kube::Informer<api::Job> jobs_;
  std::unique_ptr<JobFlowReconciler> rec_;
  std::unique_ptr<JobTemplateReconciler> tmpl_rec_;
};

TEST_F(JobFlowReconcilerTest, DagRunsInOrderToSucceed) {
  for (const char* n : {"a", "b", "c"})
    client_->Seed(api::JobTemplate::Resource(), api::ToJson(Tmpl(n)));
  api::JobFlow f = Flow();
  f.metadata.uid.clear();
  client_->Seed(api::JobFlow::Resource(), api::ToJson(f));
  Run();
  EXPECT_EQ(JobNames(), std::vector<std::string>{"jf-a"});
  SetJobPhase("jf-a", "Running");
  Run();
  EXPECT_EQ(kube::GetAs<api::JobFlow>(*client_, "ns", "jf")->status.state.phase, "Running");
  SetJobPhase("jf-a", "Completed");
  Run();
  EXPECT_EQ(JobNames(), (std::vector<std::string>{"jf-a", "jf-b", "jf-c"}));
  SetJobPhase("jf-b", "Completed");
  SetJobPhase("jf-c", "Completed");
  Run();
  auto got = kube::GetAs<api::JobFlow>(*client_, "ns", "jf").value();
  EXPECT_EQ(got.status.state.phase, "Succeed");
  EXPECT_EQ(got.status.completed_jobs.size(), 3u);
  EXPECT_NE(registry_.Expose().find("volcano_jobflow_succeed_phase_count{jobflow_namespace=\"ns\"} 1"), std::string::npos);
  // Template status names the job made from it.
  Refresh();
  ASSERT_TRUE(tmpl_rec_->Reconcile("ns/b").status.ok());
  EXPECT_EQ(kube::GetAs<api::JobTemplate>(*client_, "ns", "b")->status.job_depends_on_list,
            std::vector<std::string>{"jf-b"});
}

TEST_F(JobFlowReconcilerTest, StaleCacheCreateIsHarmless) {
  client_->Seed(api::JobTemplate::Resource(), api::ToJson(Tmpl("a")));
  api::JobFlow f = Flow();
  f.spec.flows.resize(1);
  f.metadata.uid.clear();
  client_->Seed(api::JobFlow::Resource(), api::ToJson(f));
  Run();
  // Reconcile again with the old caches: the create answers AlreadyExists (fine), the status PUT carries a
  // stale resourceVersion and conflicts, which is retriable, not terminal; no second job appears.
  auto r = rec_->Reconcile("ns/jf");
  EXPECT_FALSE(r.terminal);
  EXPECT_EQ(JobNames(), std::vector<std::string>{"jf-a"});
  Refresh();
  EXPECT_TRUE(rec_->Reconcile("ns/jf").status.ok());
}

}  // namespace
}  // namespace tephra::reconcilers::jobflow
