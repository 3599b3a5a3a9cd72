// The admission defaults in the plan (docs/job-controller.md, "Admission defaults applied by the controller"):
// a job stored without them (no mutating webhook ran) is written back with api::MutateJob's result before
// anything is derived from it; a job that has them is never written.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace tephra::reconcilers::job {
namespace {

using namespace testing;  // NOLINT

// One task of 3 replicas, as `kubectl apply` stores it without a webhook: no queue, schedulerName,
// minAvailable, maxRetry or task name.
api::Job Undefaulted(const std::string& name = "j") {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ns";
  j.metadata.uid = "uid-" + name;
  j.metadata.resource_version = "1";
  j.metadata.creation_timestamp = "2026-11-22T09:00:00Z";
  api::TaskSpec t = Task("", 3);
  j.spec.tasks = {t};
  return j;
}

const char* kAllDefaults =
    "applied defaults the admission webhook would have set: spec.maxRetry=3, spec.minAvailable=3, "
    "spec.queue=default, spec.schedulerName=volcano, spec.tasks[0].maxRetry=3, spec.tasks[0].minAvailable=3, "
    "spec.tasks[0].name=default0";

TEST(PlanDefaultsTest, UndefaultedJobIsWrittenBackAndNothingElse) {
  World w(Undefaulted());
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  const api::JobSpec& s = a.update_job->spec;
  EXPECT_EQ(s.queue, "default");
  EXPECT_EQ(s.scheduler_name, "volcano");
  EXPECT_EQ(s.min_available, 3);
  EXPECT_EQ(s.max_retry, 3);
  ASSERT_EQ(s.tasks.size(), 1u);
  EXPECT_EQ(s.tasks[0].name, "default0");
  EXPECT_EQ(s.tasks[0].min_available, 3);
  EXPECT_EQ(s.tasks[0].max_retry, 3);
  EXPECT_EQ(a.update_job->metadata.resource_version, "1");  // the write carries the observed version
  EXPECT_EQ(a.defaulted.size(), 7u);
  // Nothing derived from the spec as stored: no status, PodGroup, pods or plugin objects.
  EXPECT_FALSE(a.update_status);
  EXPECT_FALSE(a.create_pod_group);
  EXPECT_TRUE(a.create_pods.empty());
  EXPECT_TRUE(a.create_plugin_objects.empty());
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].type, "Normal");
  EXPECT_EQ(a.events[0].reason, "Defaulted");
  EXPECT_EQ(a.events[0].message, kAllDefaults);
  EXPECT_EQ(a.log, (std::vector<std::string>{kAllDefaults}));
}

TEST(PlanDefaultsTest, DefaultedJobRunsAsVolcanoWouldHaveRunIt) {
  World w(Undefaulted());
  w.Apply(w.Plan());  // the write-back
  Actions a = w.Plan();
  EXPECT_FALSE(a.update_job);
  EXPECT_TRUE(a.defaulted.empty());
  ASSERT_TRUE(a.create_pod_group);
  EXPECT_EQ(a.create_pod_group->spec.min_member, 3);  // a gang of 3, not of 0
  EXPECT_EQ(a.create_pod_group->spec.queue, "default");
  EXPECT_EQ(a.create_pod_group->spec.min_task_member.at("default0"), 3);
  w.Apply(a);
  w.SetPodGroupPhase("Inqueue");
  a = w.Plan();
  ASSERT_EQ(a.create_pods.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.create_pods[i].metadata.name, "j-default0-" + std::to_string(i));
    EXPECT_EQ(a.create_pods[i].spec.scheduler_name, "volcano");
  }
  w.Apply(a);
  w.SetAllPods("Pending");
  // Three Pending pods of a gang of 3 keep the job Pending (undefaulted, minAvailable 0 made it Running).
  a = w.Plan();
  const std::string phase = a.update_status ? a.update_status->state.phase : w.obs.job.status.state.phase;
  EXPECT_EQ(phase, "Pending");
}

TEST(PlanDefaultsTest, JobWithItsDefaultsIsNeverWritten) {
  World w(MakeJob("j", {Task("worker", 2)}));
  Actions a = w.Plan();
  EXPECT_FALSE(a.update_job);
  EXPECT_TRUE(a.defaulted.empty());
  for (const auto& e : a.events) EXPECT_NE(e.reason, "Defaulted");
  ASSERT_GE(w.Converge(), 0);
  w.SetPodGroupPhase("Inqueue");
  for (int i = 0; i < 5; ++i) {
    a = w.Plan();
    EXPECT_FALSE(a.update_job);
    w.Apply(a);
  }
}

TEST(PlanDefaultsTest, TheFirstSchedulerNameIsTheDefault) {
  World w(Undefaulted());
  w.obs.defaults.scheduler_names = {"my-scheduler", "volcano"};
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_EQ(a.update_job->spec.scheduler_name, "my-scheduler");
  // A schedulerName the user set is kept, whatever it is.
  World own(Undefaulted());
  own.obs.job.spec.scheduler_name = "someone-else";
  a = own.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_EQ(a.update_job->spec.scheduler_name, "someone-else");
}

TEST(PlanDefaultsTest, PytorchJobWithoutSvcGetsSvc) {
  api::Job job = MakeJob("pt", {Task("master", 1), Task("worker", 2)});
  job.spec.plugins = {{"pytorch", {"--master=master", "--worker=worker", "--port=23456"}}};
  World w(job);
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_TRUE(a.update_job->spec.plugins.count("svc"));
  EXPECT_FALSE(a.update_job->spec.plugins.count("ssh"));
  EXPECT_EQ(a.defaulted, (std::vector<std::string>{"spec.plugins.svc=[]"}));
  EXPECT_TRUE(a.create_plugin_objects.empty());
  w.Apply(a);
  a = w.Plan();
  EXPECT_FALSE(a.update_job);
  EXPECT_TRUE(a.create_plugin_objects.services.count("pt")) << "no headless Service";
  EXPECT_TRUE(a.create_plugin_objects.config_maps.count("pt-svc"));
}

TEST(PlanDefaultsTest, MpiJobGetsSvcAndSsh) {
  api::Job job = MakeJob("m", {Task("master", 1), Task("worker", 2)});
  job.spec.plugins = {{"mpi", {"--master=master", "--worker=worker"}}};
  World w(job);
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_EQ(a.defaulted, (std::vector<std::string>{"spec.plugins.ssh=[]", "spec.plugins.svc=[]"}));
}

TEST(PlanDefaultsTest, HostNetworkTaskGetsClusterDns) {
  api::Job job = MakeJob("h", {Task("worker", 1)});
  job.spec.tasks[0].template_.spec.host_network = true;
  World w(job);
  Actions a = w.Plan();
  EXPECT_EQ(a.defaulted,
            (std::vector<std::string>{"spec.tasks[0].template.spec.dnsPolicy=ClusterFirstWithHostNet"}));
}

// A job started by a controller that did not default (an older Tephra) keeps running as it started: naming
// its task now would orphan its pods `<job>-default-<i>`.
TEST(PlanDefaultsTest, StartedJobIsLeftAsItStarted) {
  World w(Undefaulted());
  w.obs.job.status.state.phase = "Running";
  Actions a = w.Plan();
  EXPECT_FALSE(a.update_job);
  EXPECT_TRUE(a.defaulted.empty());
}

TEST(PlanDefaultsTest, JobBeingDeletedIsNotWritten) {
  World w(Undefaulted());
  w.obs.job.metadata.deletion_timestamp = kNow;
  EXPECT_TRUE(w.Plan().Empty());
}

// A Command that arrives before the defaults are written is not acted on from the undefaulted spec; it
// stays for the pass on the written job.
TEST(PlanDefaultsTest, RequestWaitsForTheDefaults) {
  World w(Undefaulted());
  Request r;
  r.action = std::string(api::kActionAbortJob);
  w.obs.request = r;
  Actions a = w.Plan();
  ASSERT_TRUE(a.update_job);
  EXPECT_FALSE(a.update_status);
  EXPECT_EQ(a.action, api::kActionSyncJob);
  w.Apply(a);
  a = w.Plan();
  EXPECT_EQ(a.action, api::kActionAbortJob);
}

TEST(PlanDefaultsTest, DefaultedFieldsNamesPathsAndValues) {
  api::Job before = Undefaulted();
  api::Job after = before;
  after.spec.queue = "q";
  after.spec.tasks[0].name = "a";
  after.spec.plugins["svc"] = {"--disable-network-policy=true"};
  EXPECT_EQ(DefaultedFields(before, after),
            (std::vector<std::string>{"spec.plugins.svc=[\"--disable-network-policy=true\"]", "spec.queue=q",
                                      "spec.tasks[0].name=a"}));
  EXPECT_TRUE(DefaultedFields(before, before).empty());
}

}  // namespace
}  // namespace tephra::reconcilers::job
