// One passing and one failing case per admission rule, asserting the exact path and message.
#include "tephra/api/validation.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tephra/api/defaults.h"
#include "tephra/api/labels.h"

namespace tephra::api {
namespace {

using testing::J;
using testing::LoadTestdata;

FakeClusterLookup Cluster() {
  FakeClusterLookup l;
  l.AddQueue("root", "", "Open").AddQueue("default", "root").AddQueue("research", "eng").AddQueue("eng", "root");
  l.AddQueue("closed", "root", "Closed");
  return l;
}

Job ValidJob() {
  Job job = *FromJson<Job>(J(R"({
    "metadata": {"name": "train", "namespace": "ns"},
    "spec": {"queue": "default", "minAvailable": 3, "tasks": [
      {"name": "master", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
          "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}]}}},
      {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    ]}})"));
  MutateJob(&job, {});
  return job;
}

// Asserts `errs` contains exactly one error, with this path and message.
void ExpectOnly(const FieldErrors& errs, const std::string& path, const std::string& message) {
  ASSERT_EQ(errs.size(), 1u) << JoinFieldErrors(errs);
  EXPECT_EQ(errs[0].path, path);
  EXPECT_EQ(errs[0].message, message);
}

TEST(ValidateJobCreateTest, ValidJobAndManifestsPass) {
  FakeClusterLookup l = Cluster();
  EXPECT_TRUE(ValidateJobCreate(ValidJob(), l).empty()) << JoinFieldErrors(ValidateJobCreate(ValidJob(), l));
  for (const char* f : {"mpi_job.json", "pytorch_job.json"}) {
    Job job = *FromJson<Job>(LoadTestdata(f));
    MutateJob(&job, {});
    FieldErrors errs = ValidateJobCreate(job, l);
    EXPECT_TRUE(errs.empty()) << f << ": " << JoinFieldErrors(errs);
  }
}

TEST(ValidateJobCreateTest, NoTasks) {
  Job job = ValidJob();
  job.spec.tasks.clear();
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks", "No task specified in job spec");
}

TEST(ValidateJobCreateTest, MinAvailableGreaterThanReplicas) {
  Job job = ValidJob();
  job.spec.min_available = 4;
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.minAvailable",
             "job 'minAvailable' should not be greater than total replicas in tasks");
  job.spec.min_available = 3;
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
}

TEST(ValidateJobCreateTest, RunningEstimateMustBeADuration) {
  Job job = ValidJob();
  job.spec.running_estimate = "2 hours";
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.runningEstimate",
             "\"2 hours\" is not a duration (Go syntax, e.g. 90m, 2h30m, 45s)");
  job.spec.running_estimate = "-5m";
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.runningEstimate", "must not be negative");
  job.spec.running_estimate = "2h30m";
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
}

TEST(ValidateJobCreateTest, TaskMinAvailableGreaterThanReplicas) {
  Job job = ValidJob();
  job.spec.tasks[1].min_available = 3;
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks[1].minAvailable",
             "'minAvailable' is greater than 'replicas' in task: worker, job: train");
}

TEST(ValidateJobCreateTest, DuplicatedTaskName) {
  Job job = ValidJob();
  job.spec.tasks[1].name = "master";
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks[1].name", "duplicated task name master");
}

TEST(ValidateJobCreateTest, TaskNameMustBeDns1123Label) {
  Job job = ValidJob();
  job.spec.tasks[1].name = "Worker_1";
  FieldErrors errs = ValidateJobCreate(job, Cluster());
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "spec.tasks[1].name");
  EXPECT_EQ(errs[0].message, "task name \"Worker_1\" must be a lowercase RFC 1123 label");
}

TEST(ValidateJobCreateTest, PodNameMustBeQualified) {
  Job job = ValidJob();
  job.metadata.name = std::string(60, 'a');
  FieldErrors errs = ValidateJobCreate(job, Cluster());
  ASSERT_EQ(errs.size(), 2u) << JoinFieldErrors(errs);  // one per task
  EXPECT_EQ(errs[0], (FieldError{"spec.tasks[0].name", "create pod with name " + job.metadata.name +
                                                           "-master-0 validate failed name part must be no more than 63 "
                                                           "characters"}));
  EXPECT_EQ(errs[1].path, "spec.tasks[1].name");
  job.metadata.name = std::string(54, 'a');  // 54 + "-master-0" = 63
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
}

TEST(ValidateJobCreateTest, JobNameMustBeQualified) {
  Job job = ValidJob();
  job.metadata.name = "-bad";
  FieldErrors errs = ValidateJobCreate(job, Cluster());
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "metadata.name");
  EXPECT_EQ(errs[0].message.rfind("create job with name -bad validate failed name part must consist of", 0), 0u) << errs[0].message;
}

TEST(ValidateJobCreateTest, Policies) {
  struct Case {
    const char* policies;
    const char* path;
    const char* message;
  };
  const Case cases[] = {
      {R"([{"event":"PodFailed","action":"RestartJob"},{"event":"PodFailed","action":"AbortJob"}])",
       "spec.policies[1].event", "duplicate event PodFailed across different policy"},
      {R"([{"event":"PodFailed","exitCode":3,"action":"RestartJob"}])", "spec.policies[0]",
       "must not specify event and exitCode simultaneously"},
      {R"([{"action":"RestartJob"}])", "spec.policies[0]", "either event and exitCode should be specified"},
      {R"([{"event":"PodRunning","action":"RestartJob"}])", "spec.policies[0].event",
       "invalid policy event: \"PodRunning\""},
      {R"([{"event":"PodFailed","action":"SyncJob"}])", "spec.policies[0].action", "invalid policy action: \"SyncJob\""},
      {R"([{"exitCode":0,"action":"RestartJob"}])", "spec.policies[0].exitCode", "0 is not a valid error code"},
      {R"([{"exitCode":2,"action":"RestartJob"},{"exitCode":2,"action":"AbortJob"}])", "spec.policies[1].exitCode",
       "duplicate exitCode 2"},
      {R"([{"event":"*","action":"RestartJob"},{"event":"PodEvicted","action":"AbortJob"}])", "spec.policies",
       "if there's * here, no other policy should be here"},
      {R"([{"events":["PodFailed","TaskCompleted"],"event":"PodFailed","action":"RestartJob"}])",
       "spec.policies[0].event", "duplicate event PodFailed across different policy"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.policies);
    Job job = ValidJob();
    ASSERT_TRUE(Decode(J(c.policies), &job.spec.policies).ok());
    ExpectOnly(ValidateJobCreate(job, Cluster()), c.path, c.message);
  }
  Job ok = ValidJob();
  ASSERT_TRUE(Decode(J(R"([{"events":["PodFailed","PodEvicted"],"action":"RestartJob"},{"exitCode":137,"action":"AbortJob"},
                          {"event":"TaskCompleted","action":"CompleteJob"}])"),
                     &ok.spec.policies)
                  .ok());
  ASSERT_TRUE(Decode(J(R"([{"event":"PodFailed","action":"RestartTask"}])"), &ok.spec.tasks[1].policies).ok());
  EXPECT_TRUE(ValidateJobCreate(ok, Cluster()).empty()) << JoinFieldErrors(ValidateJobCreate(ok, Cluster()));
  // Task-level policies get their own path.
  Job task_bad = ValidJob();
  ASSERT_TRUE(Decode(J(R"([{"exitCode":0,"action":"RestartJob"}])"), &task_bad.spec.tasks[1].policies).ok());
  ExpectOnly(ValidateJobCreate(task_bad, Cluster()), "spec.tasks[1].policies[0].exitCode", "0 is not a valid error code");
}

TEST(ValidateJobCreateTest, Plugins) {
  Job job = ValidJob();
  job.spec.plugins["gpu-magic"] = {};
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.plugins[gpu-magic]", "unable to find job plugin: gpu-magic");
  Job mpi = ValidJob();
  mpi.spec.plugins["mpi"] = {"--master=launcher"};
  ExpectOnly(ValidateJobCreate(mpi, Cluster()), "spec.plugins[mpi]", "The specified mpi master task was not found");
  mpi.spec.plugins["mpi"] = {"--master=master"};
  EXPECT_TRUE(ValidateJobCreate(mpi, Cluster()).empty());
}

TEST(ValidateJobCreateTest, Volumes) {
  struct Case {
    const char* volumes;
    const char* path;
    const char* message;
  };
  const Case cases[] = {
      {R"([{"volumeClaimName":"a"}])", "spec.volumes[0].mountPath", "mountPath is required"},
      {R"([{"mountPath":"/a","volumeClaimName":"a"},{"mountPath":"/a","volumeClaimName":"b"}])",
       "spec.volumes[1].mountPath", "duplicated mountPath: /a"},
      {R"([{"mountPath":"/a"}])", "spec.volumes[0]", "either VolumeClaim or VolumeClaimName must be specified"},
      {R"([{"mountPath":"/a:b","volumeClaimName":"a"}])", "spec.volumes[0].mountPath", "mountPath must not contain ':'"},
      {R"([{"mountPath":"/a","volumeClaimName":"Bad_Name"}])", "spec.volumes[0].volumeClaimName",
       "invalid VolumeClaimName Bad_Name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.volumes);
    Job job = ValidJob();
    ASSERT_TRUE(Decode(J(c.volumes), &job.spec.volumes).ok());
    ExpectOnly(ValidateJobCreate(job, Cluster()), c.path, c.message);
  }
  Job both = ValidJob();
  ASSERT_TRUE(Decode(J(R"([{"mountPath":"/a","volumeClaimName":"a","volumeClaim":{"accessModes":["ReadWriteOnce"]}}])"),
                     &both.spec.volumes)
                  .ok());
  FieldErrors errs = ValidateJobCreate(both, Cluster());
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].message.rfind("conflict: If you want to use an existing PVC", 0), 0u);
  Job ok = ValidJob();
  ASSERT_TRUE(Decode(J(R"([{"mountPath":"/a","volumeClaimName":"data"},{"mountPath":"/b","volumeClaim":{}}])"),
                     &ok.spec.volumes)
                  .ok());
  EXPECT_TRUE(ValidateJobCreate(ok, Cluster()).empty());
}

TEST(ValidateJobCreateTest, Queue) {
  struct Case {
    const char* queue;
    const char* message;
  };
  const Case cases[] = {
      {"missing", "unable to find job queue: missing"},
      {"closed", "can only submit job to queue with state `Open`, queue `closed` status is `Closed`"},
      {"root", "can not submit job to root queue"},
      {"eng", "can only submit job to leaf queue, queue `eng` has 1 child queues"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.queue);
    Job job = ValidJob();
    job.spec.queue = c.queue;
    FieldErrors errs = ValidateJobCreate(job, Cluster());
    // "root" also has children; only the root message is reported for it.
    ExpectOnly(errs, "spec.queue", c.message);
  }
  Job leaf = ValidJob();
  leaf.spec.queue = "research";
  EXPECT_TRUE(ValidateJobCreate(leaf, Cluster()).empty());
}

TEST(ValidateJobCreateTest, NetworkTopologyExclusive) {
  Job job = ValidJob();
  job.spec.network_topology = NetworkTopologySpec{"hard", 1, "spine", nullptr};
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.networkTopology",
             "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously");
  job.spec.network_topology->highest_tier_name.clear();
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
}

TEST(ValidateJobCreateTest, Partitions) {
  Job job = ValidJob();
  job.spec.tasks[1].replicas = 4;
  job.spec.tasks[1].min_available = 4;
  job.spec.tasks[1].partition_policy = PartitionPolicySpec{2, 2, std::nullopt, 2, nullptr};
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty()) << JoinFieldErrors(ValidateJobCreate(job, Cluster()));

  Job wrong_total = job;
  wrong_total.spec.tasks[1].partition_policy->total_partitions = 3;
  ExpectOnly(ValidateJobCreate(wrong_total, Cluster()), "spec.tasks[1].replicas",
             "replicas must equal totalPartitions * partitionSize");
  Job wrong_min = job;
  wrong_min.spec.tasks[1].min_available = 3;
  ExpectOnly(ValidateJobCreate(wrong_min, Cluster()), "spec.tasks[1].minAvailable",
             "minAvailable must equal minPartitions * partitionSize");
  Job zero_size = job;
  zero_size.spec.tasks[1].partition_policy->partition_size = 0;
  zero_size.spec.tasks[1].partition_policy->min_partitions = 0;
  ExpectOnly(ValidateJobCreate(zero_size, Cluster()), "spec.tasks[1].partitionPolicy.partitionSize",
             "must be greater than 0");
  Job topo = job;
  topo.spec.tasks[1].partition_policy->network_topology = NetworkTopologySpec{"hard", 1, "leaf", nullptr};
  ExpectOnly(ValidateJobCreate(topo, Cluster()), "spec.tasks[1].partitionPolicy.networkTopology",
             "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously");
}

TEST(ValidateJobCreateTest, TopologyPolicyNeedsIntegerCpu) {
  Job job = ValidJob();
  job.spec.tasks[0].topology_policy = "single-numa-node";
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());  // cpu request "1"
  job.spec.tasks[0].template_.spec.containers[0].resources.requests["cpu"] = core::Quantity::MustParse("1500m");
  job.spec.tasks[0].template_.spec.containers[0].resources.limits["cpu"] = core::Quantity::MustParse("2");
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks[0].template.spec.containers",
             "the cpu request isn't an integer in task: master job: train");
  job.spec.tasks[0].topology_policy = "none";
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
}

TEST(ValidateJobCreateTest, PodTemplate) {
  Job no_image = ValidJob();
  no_image.spec.tasks[1].template_.spec.containers[0].image.clear();
  ExpectOnly(ValidateJobCreate(no_image, Cluster()), "spec.tasks[1].template.spec.containers[0].image", "Required value");
  Job no_containers = ValidJob();
  no_containers.spec.tasks[1].template_.spec.containers.clear();
  ExpectOnly(ValidateJobCreate(no_containers, Cluster()), "spec.tasks[1].template.spec.containers", "Required value");
  Job req_over_limit = ValidJob();
  req_over_limit.spec.tasks[0].template_.spec.containers[0].resources.requests["cpu"] = core::Quantity::MustParse("3");
  ExpectOnly(ValidateJobCreate(req_over_limit, Cluster()),
             "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]",
             "Invalid value: \"3\": must be less than or equal to cpu limit of 2");
  Job dup = ValidJob();
  dup.spec.tasks[1].template_.spec.containers.push_back(dup.spec.tasks[1].template_.spec.containers[0]);
  ExpectOnly(ValidateJobCreate(dup, Cluster()), "spec.tasks[1].template.spec.containers[1].name",
             "Duplicate value: \"c\"");
}

TEST(ValidateJobCreateTest, TaskDependenciesMustBeADag) {
  Job job = ValidJob();
  job.spec.tasks[1].depends_on = DependsOn{{"master"}, "", nullptr};
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty());
  job.spec.tasks[0].depends_on = DependsOn{{"worker"}, "", nullptr};
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks",
             "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)");
  Job missing = ValidJob();
  missing.spec.tasks[1].depends_on = DependsOn{{"ghost"}, "", nullptr};
  ExpectOnly(ValidateJobCreate(missing, Cluster()), "spec.tasks[1].dependsOn.name[0]", "task ghost does not exist in job");
}

TEST(ValidateJobCreateTest, CountersNonNegative) {
  Job job = ValidJob();
  job.spec.ttl_seconds_after_finished = -1;
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.ttlSecondsAfterFinished",
             "'ttlSecondsAfterFinished' cannot be less than zero");
  Job ms = ValidJob();
  ms.spec.min_success = 4;
  ExpectOnly(ValidateJobCreate(ms, Cluster()), "spec.minSuccess",
             "job 'minSuccess' should not be greater than total replicas in tasks");
  ms.spec.min_success = 3;
  EXPECT_TRUE(ValidateJobCreate(ms, Cluster()).empty());
}

TEST(ValidateJobUpdateTest, AllowedChanges) {
  Job old_job = ValidJob();
  Job new_job = old_job;
  new_job.spec.min_available = 2;
  new_job.spec.tasks[1].replicas = 5;
  new_job.spec.tasks[1].min_available = 1;
  new_job.spec.priority_class_name = "high";
  EXPECT_TRUE(ValidateJobUpdate(old_job, new_job).empty()) << JoinFieldErrors(ValidateJobUpdate(old_job, new_job));
  // Generated PVC names are written back by the controller.
  old_job.spec.volumes.push_back(VolumeSpec{"/ckpt", "", PersistentVolumeClaimSpec{}, nullptr});
  Job with_pvc = old_job;
  with_pvc.spec.volumes[0].volume_claim_name = "train-pvc-abcdefghijkl";
  EXPECT_TRUE(ValidateJobUpdate(old_job, with_pvc).empty());
}

TEST(ValidateJobUpdateTest, RejectedChanges) {
  Job old_job = ValidJob();
  {
    Job n = old_job;
    n.spec.tasks.pop_back();
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec.tasks", "job updates may not add or remove tasks");
  }
  {
    Job n = old_job;
    n.spec.tasks[0].template_.spec.containers[0].image = "other";
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec",
               "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`");
  }
  {
    Job n = old_job;
    n.spec.queue = "research";
    FieldErrors errs = ValidateJobUpdate(old_job, n);
    ASSERT_EQ(errs.size(), 2u) << JoinFieldErrors(errs);
    EXPECT_EQ(errs[0], (FieldError{"spec.queue", "queue is immutable"}));
  }
  {
    Job n = old_job;
    n.spec.tasks[1].replicas = -1;
    n.spec.tasks[1].min_available.reset();
    n.spec.min_available = 0;
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec.tasks[1].replicas", "'replicas' must be >= 0 in task: worker");
  }
  {
    Job n = old_job;
    n.spec.tasks[1].min_available = 3;
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec.tasks[1].minAvailable", "'minAvailable' must be <= 'replicas' in task: worker");
  }
  {
    Job n = old_job;
    n.spec.min_available = 4;
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec.minAvailable", "job 'minAvailable' must not be greater than total replicas");
  }
  {
    Job n = old_job;
    n.spec.min_available = -1;
    ExpectOnly(ValidateJobUpdate(old_job, n), "spec.minAvailable", "job 'minAvailable' must be >= 0");
  }
}

// A job as stored when no mutating webhook ran: no queue, schedulerName, minAvailable, task name or maxRetry.
Job UndefaultedJob() {
  return *FromJson<Job>(J(R"({
    "metadata": {"name": "train", "namespace": "ns"},
    "spec": {"plugins": {"pytorch": ["--master=master"]}, "tasks": [
      {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    ]}})"));
}

// The job controller's write of the admission defaults (docs/job-controller.md) must pass a webhook that is
// back up, whatever --scheduler-name the controller runs with.
TEST(ValidateJobUpdateTest, DefaultingUpdateIsAllowed) {
  const Job old_job = UndefaultedJob();
  for (const char* scheduler : {"volcano", "my-scheduler"}) {
    Job n = old_job;
    MutateJob(&n, JobDefaultsConfig{.scheduler_names = {scheduler}});
    ASSERT_EQ(n.spec.queue, "default");
    ASSERT_EQ(n.spec.tasks[0].name, "default0");
    ASSERT_TRUE(n.spec.plugins.count("svc"));
    EXPECT_TRUE(IsDefaultingUpdate(old_job, n)) << scheduler;
    FieldErrors errs = ValidateJobUpdate(old_job, n);
    EXPECT_TRUE(errs.empty()) << scheduler << ": " << JoinFieldErrors(errs);
  }
  // Without the exemption the same update breaks two rules (queue and task name changed).
  Job n = old_job;
  MutateJob(&n, {});
  n.spec.tasks[0].template_.spec.containers[0].image = "other";
  EXPECT_FALSE(IsDefaultingUpdate(old_job, n));
}

TEST(ValidateJobUpdateTest, DefaultingUpdateThatChangesMoreIsRefused) {
  const Job old_job = UndefaultedJob();
  const std::string kSpecMessage =
      "job updates may not change fields other than `minAvailable`, `tasks[*].replicas under spec`";
  {  // defaults plus a changed image
    Job n = old_job;
    MutateJob(&n, {});
    n.spec.tasks[0].template_.spec.containers[0].image = "other";
    FieldErrors errs = ValidateJobUpdate(old_job, n);
    ASSERT_EQ(errs.size(), 2u) << JoinFieldErrors(errs);
    EXPECT_EQ(errs[0], (FieldError{"spec.queue", "queue is immutable"}));
    EXPECT_EQ(errs[1], (FieldError{"spec", kSpecMessage}));
  }
  {  // defaults, but into another queue than the default one
    Job n = old_job;
    n.spec.queue = "research";
    MutateJob(&n, {});
    EXPECT_FALSE(IsDefaultingUpdate(old_job, n));
    FieldErrors errs = ValidateJobUpdate(old_job, n);
    ASSERT_EQ(errs.size(), 2u) << JoinFieldErrors(errs);
    EXPECT_EQ(errs[0], (FieldError{"spec.queue", "queue is immutable"}));
    EXPECT_EQ(errs[1], (FieldError{"spec", kSpecMessage}));
  }
  {  // defaults with one value overwritten instead of filled: maxRetry was empty, 5 is not its default
    Job n = old_job;
    MutateJob(&n, {});
    n.spec.max_retry = 5;
    FieldErrors errs = ValidateJobUpdate(old_job, n);
    ASSERT_FALSE(errs.empty());
    EXPECT_EQ(errs.back(), (FieldError{"spec", kSpecMessage}));
  }
  {  // an unchanged, already defaulted job is no defaulting update: the ordinary rules apply
    Job defaulted = old_job;
    MutateJob(&defaulted, {});
    EXPECT_FALSE(IsDefaultingUpdate(defaulted, defaulted));
    Job n = defaulted;
    n.spec.tasks[0].template_.spec.containers[0].image = "other";
    ExpectOnly(ValidateJobUpdate(defaulted, n), "spec", kSpecMessage);
  }
}

// ---------------------------------------------------------------------------------------------------------

Queue MakeQueue(const std::string& name, const std::string& parent, const char* spec_json = "{}") {
  Queue q;
  q.metadata.name = name;
  EXPECT_TRUE(Decode(J(spec_json), &q.spec).ok());
  q.spec.parent = parent;
  if (q.spec.weight == 0) q.spec.weight = 1;
  return q;
}

TEST(ValidateQueueTest, CreateValid) {
  FakeClusterLookup l = Cluster();
  Queue q = *FromJson<Queue>(LoadTestdata("queue.json"));
  l.queues["eng"].spec.capability["cpu"] = core::Quantity::MustParse("2k");
  FieldErrors errs = ValidateQueue(AdmissionOp::kCreate, nullptr, q, l);
  EXPECT_TRUE(errs.empty()) << JoinFieldErrors(errs);
}

TEST(ValidateQueueTest, SpecRules) {
  FakeClusterLookup l = Cluster();
  struct Case {
    const char* spec;
    const char* path;
    const char* message;
  };
  const Case cases[] = {
      {R"({"weight": 70000})", "spec.weight", "queue weight must be in the range [1, 65535]"},
      {R"({"weight": -1})", "spec.weight", "queue weight must be in the range [1, 65535]"},
      {R"({"deserved": {"cpu": "2"}, "capability": {"cpu": "1"}})", "spec.deserved[cpu]",
       "deserved[cpu]=2 must be <= capability[cpu]=1"},
      {R"({"deserved": {"cpu": "1"}, "guarantee": {"resource": {"cpu": "2"}}})", "spec.deserved[cpu]",
       "deserved[cpu]=1 must be >= guarantee[cpu]=2"},
      {R"({"deserved": {"cpu": "1"}, "guarantee": {"resource": {"memory": "1Gi"}}})", "spec.deserved[memory]",
       "deserved[memory] must be >= guarantee[memory]=1Gi (deserved is not set)"},
      {R"({"capability": {"cpu": "-1"}})", "spec.capability[cpu]", "must be greater than or equal to 0"},
      {R"({"priority": -3})", "spec.priority", "must be greater than or equal to 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    Queue q = MakeQueue("new", "", c.spec);
    ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, q, l), c.path, c.message);
  }
  Queue state = MakeQueue("new", "");
  state.status.state = "Closing";
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, state, l), "status.state", "queue state must be in [Open Closed]");
  state.status.state = "Closed";
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kCreate, nullptr, state, l).empty());
  // root cannot be closed (Volcano's controller refuses it; closing it would close every queue).
  Queue root = MakeQueue("root", "");
  Queue closed_root = root;
  closed_root.status.state = "Closed";
  ExpectOnly(ValidateQueue(AdmissionOp::kUpdate, &root, closed_root, l), "status.state",
             "the root queue cannot be closed: every queue is under it");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kUpdate, &root, root, l).empty());
}

TEST(ValidateQueueTest, HierarchyAnnotations) {
  FakeClusterLookup l = Cluster();
  Queue q = MakeQueue("new", "");
  q.metadata.annotations[std::string(kHierarchyAnnotation)] = "root/a/b";
  q.metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "1/2";
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, q, l), "metadata.annotations[volcano.sh/hierarchy]",
             "root/a/b must have the same length with 1/2");
  q.metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "1/0/2";
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, q, l), "metadata.annotations[volcano.sh/hierarchy-weights]",
             "0 in the 1/0/2 must be larger than 0");
  q.metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "1/2/2";
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kCreate, nullptr, q, l).empty());
  l.queues["deep"] = MakeQueue("deep", "");
  l.queues["deep"].metadata.annotations[std::string(kHierarchyAnnotation)] = "root/a/b/c";
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, q, l), "metadata.annotations[volcano.sh/hierarchy]",
             "root/a/b is not allowed to be in the sub path of root/a/b/c of queue deep");
}

TEST(ValidateQueueTest, ParentRules) {
  FakeClusterLookup l = Cluster();
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("x", "x"), l), "spec.parent",
             "queue x cannot use itself as parent");
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("x", "nope"), l), "spec.parent",
             "parent queue nope does not exist");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("x", "research"), l).empty());
  // Depth: root/eng/research/x is depth 3; with max depth 2 it is refused.
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("x", "research"), l, {2, true, false}),
             "spec.parent", "queue depth 3 exceeds the maximum 2");
  l.queues_with_pods["research"] = true;
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("x", "research"), l), "spec.parent",
             "parent queue research has allocated pods and can not have child queues");
  // Unchanged parent on update: not re-checked.
  Queue existing = MakeQueue("y", "research");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kUpdate, &existing, existing, l).empty());
}

TEST(ValidateQueueTest, HierarchicalResources) {
  FakeClusterLookup l;
  l.AddQueue("root").AddQueue("default", "root");
  l.queues["eng"] = MakeQueue("eng", "root", R"({"capability":{"cpu":"100"},"deserved":{"cpu":"50"},
                                                "guarantee":{"resource":{"cpu":"10"}}})");
  l.queues["a"] = MakeQueue("a", "eng", R"({"capability":{"cpu":"80"},"deserved":{"cpu":"30"},
                                            "guarantee":{"resource":{"cpu":"6"}}})");
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr, MakeQueue("b", "eng", R"({"capability":{"cpu":"200"}})"), l),
             "spec.capability[cpu]", "capability should not be greater than the capability of ancestor queue eng");
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr,
                           MakeQueue("b", "eng", R"({"capability":{"cpu":"50"},"deserved":{"cpu":"21"}})"), l),
             "spec.deserved[cpu]", "the sum of deserved of child queues should not be greater than the deserved of parent queue eng");
  ExpectOnly(ValidateQueue(AdmissionOp::kCreate, nullptr,
                           MakeQueue("b", "eng", R"({"deserved":{"cpu":"5"},"guarantee":{"resource":{"cpu":"5"}}})"), l),
             "spec.guarantee.resource[cpu]",
             "the sum of guarantee of child queues should not be greater than the guarantee of parent queue eng");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kCreate, nullptr,
                            MakeQueue("b", "eng", R"({"capability":{"cpu":"50"},"deserved":{"cpu":"20"}})"), l)
                  .empty());
  // Shrinking a parent below a child's capability.
  Queue eng_old = l.queues["eng"];
  Queue eng_new = eng_old;
  eng_new.spec.capability["cpu"] = core::Quantity::MustParse("60");
  ExpectOnly(ValidateQueue(AdmissionOp::kUpdate, &eng_old, eng_new, l), "spec.capability[cpu]",
             "capability should not be less than the capability of descendant queue a");
}

TEST(ValidateQueueTest, RootProtection) {
  FakeClusterLookup l = Cluster();
  Queue old_root = MakeQueue("root", "");
  Queue new_root = old_root;
  new_root.spec.capability["cpu"] = core::Quantity::MustParse("1");
  ExpectOnly(ValidateQueue(AdmissionOp::kUpdate, &old_root, new_root, l), "spec",
             "root queue's capability, deserved and guarantee can not be changed");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kUpdate, &old_root, new_root, l, {5, false, false}).empty());
}

TEST(ValidateQueueTest, Delete) {
  FakeClusterLookup l = Cluster();
  ExpectOnly(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("default", ""), l), "metadata.name",
             "`default` queue can not be deleted");
  ExpectOnly(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("root", ""), l), "metadata.name",
             "`root` queue can not be deleted");
  ExpectOnly(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("eng", ""), l), "metadata.name",
             "queue eng can not be deleted because it has 1 child queues: research");
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("research", ""), l).empty());
  l.queues_with_pods["research"] = true;
  EXPECT_TRUE(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("research", ""), l).empty());
  ExpectOnly(ValidateQueue(AdmissionOp::kDelete, nullptr, MakeQueue("research", ""), l, {5, true, true}),
             "metadata.name", "queue research has allocated pods, can not be deleted");
}

TEST(ValidatePodGroupTest, QueueAndTopology) {
  FakeClusterLookup l = Cluster();
  PodGroup pg = *FromJson<PodGroup>(LoadTestdata("podgroup.json"));
  EXPECT_TRUE(ValidatePodGroup(pg, l).empty()) << JoinFieldErrors(ValidatePodGroup(pg, l));
  PodGroup missing = pg;
  missing.spec.queue = "nope";
  ExpectOnly(ValidatePodGroup(missing, l), "spec.queue", "failed to get queue nope");
  PodGroup closed = pg;
  closed.spec.queue = "closed";
  ExpectOnly(ValidatePodGroup(closed, l), "spec.queue",
             "can only submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`");
  PodGroup topo = pg;
  topo.spec.sub_group_policy[0].network_topology->highest_tier_name = "leaf";
  ExpectOnly(ValidatePodGroup(topo, l), "spec.subGroupPolicy[0].networkTopology",
             "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology simultaneously");
}

TEST(ValidateJobFlowTest, Dag) {
  JobFlow f = *FromJson<JobFlow>(LoadTestdata("jobflow.json"));
  EXPECT_TRUE(ValidateJobFlow(f).empty()) << JoinFieldErrors(ValidateJobFlow(f));
  JobFlow cycle = f;
  cycle.spec.flows[0].depends_on = FlowDependsOn{{"publish"}, std::nullopt, nullptr};
  ExpectOnly(ValidateJobFlow(cycle), "spec.flows", "jobflow Flow is not DAG");
  JobFlow undefined = f;
  undefined.spec.flows[1].depends_on->targets = {"ghost"};
  ExpectOnly(ValidateJobFlow(undefined), "spec.flows[1].dependsOn.targets[0]", "jobflow Flow is not DAG");
  JobFlow dup = f;
  dup.spec.flows[1].name = "prepare";
  FieldErrors errs = ValidateJobFlow(dup);
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0], (FieldError{"spec.flows[1].name", "duplicated flow name prepare"}));
}

// Issue 41: bounds that keep one object from costing a role its memory or its stack.
TEST(ValidateJobCreateTest, BoundsOnReplicasAndTasks) {
  Job job = ValidJob();
  job.spec.tasks[1].replicas = 2147483647;
  ExpectOnly(ValidateJobCreate(job, Cluster()), "spec.tasks[*].replicas",
             "a job may have at most 100000 pods in all its tasks, this one has 2147483648");
  job.spec.tasks[1].replicas = 99999;
  EXPECT_TRUE(ValidateJobCreate(job, Cluster()).empty()) << JoinFieldErrors(ValidateJobCreate(job, Cluster()));
  Job many = ValidJob();
  while (many.spec.tasks.size() <= kMaxJobTasks) {
    TaskSpec t = many.spec.tasks[1];
    t.name = "w" + std::to_string(many.spec.tasks.size());
    many.spec.tasks.push_back(t);
  }
  ExpectOnly(ValidateJobCreate(many, Cluster()), "spec.tasks", "a job may have at most 256 tasks, this one has 257");
  Job old_job = ValidJob(), scaled = ValidJob();
  scaled.spec.tasks[1].replicas = 200000;
  ExpectOnly(ValidateJobUpdate(old_job, scaled), "spec.tasks[*].replicas",
             "a job may have at most 100000 pods in all its tasks, this one would have 200001");
}

TEST(ValidateJobFlowTest, FlowNamesAndCountAndLongChains) {
  JobFlow f = *FromJson<JobFlow>(LoadTestdata("jobflow.json"));
  JobFlow accents = f;
  accents.spec.flows[0].name.clear();
  for (int i = 0; i < 700; ++i) accents.spec.flows[0].name += "\xC3\xA9";
  FieldErrors errs = ValidateJobFlow(accents);
  ASSERT_FALSE(errs.empty());
  EXPECT_EQ(errs[0].path, "spec.flows[0].name");
  // A chain as long as the bound allows is checked (iteratively); one flow more is refused before any walk.
  JobFlow chain;
  for (size_t i = 0; i < kMaxFlows; ++i) {
    Flow fl;
    fl.name = "f" + std::to_string(i);
    if (i > 0) fl.depends_on = FlowDependsOn{{"f" + std::to_string(i - 1)}, std::nullopt, nullptr};
    chain.spec.flows.push_back(fl);
  }
  EXPECT_TRUE(ValidateJobFlow(chain).empty()) << JoinFieldErrors(ValidateJobFlow(chain));
  chain.spec.flows[0].depends_on = FlowDependsOn{{"f" + std::to_string(kMaxFlows - 1)}, std::nullopt, nullptr};
  ExpectOnly(ValidateJobFlow(chain), "spec.flows", "jobflow Flow is not DAG");
  chain.spec.flows.push_back(chain.spec.flows.back());
  ExpectOnly(ValidateJobFlow(chain), "spec.flows", "a jobflow may have at most 256 flows, this one has 257");
}

TEST(ValidateHyperNodeTest, Members) {
  HyperNode h = *FromJson<HyperNode>(LoadTestdata("hypernode.json"));
  EXPECT_TRUE(ValidateHyperNode(h).empty()) << JoinFieldErrors(ValidateHyperNode(h));
  HyperNode empty = h;
  empty.spec.members.clear();
  ExpectOnly(ValidateHyperNode(empty), "spec.members", "member must have at least one member");
  HyperNode two = h;
  two.spec.members[0].selector.regex_match = RegexMatch{"x", nullptr};
  ExpectOnly(ValidateHyperNode(two), "spec.members[0].selector",
             "exactly one of exactMatch, regexMatch and labelMatch must be specified");
  HyperNode none = h;
  none.spec.members[0].selector.exact_match.reset();
  ExpectOnly(ValidateHyperNode(none), "spec.members[0].selector",
             "exactly one of exactMatch, regexMatch and labelMatch must be specified");
  HyperNode noname = h;
  noname.spec.members[0].selector.exact_match->name.clear();
  ExpectOnly(ValidateHyperNode(noname), "spec.members[0].selector.exactMatch.name", "member exactMatch name is required");
  HyperNode badre = h;
  badre.spec.members[1].selector.regex_match->pattern = "leaf-[0-9";
  ExpectOnly(ValidateHyperNode(badre), "spec.members[1].selector.regexMatch.pattern",
             "member regexMatch pattern is invalid: leaf-[0-9 (missing ]: [0-9)");
  HyperNode huge_repeat = h;  // RE2 (Volcano's regex engine) refuses repeat counts above 1000
  huge_repeat.spec.members[1].selector.regex_match->pattern = "a{1001}";
  ExpectOnly(ValidateHyperNode(huge_repeat), "spec.members[1].selector.regexMatch.pattern",
             "member regexMatch pattern is invalid: a{1001} (invalid repetition size: {1001})");
  huge_repeat.spec.members[1].selector.regex_match->pattern = "leaf-[0-9]{1,1000}";
  EXPECT_TRUE(ValidateHyperNode(huge_repeat).empty());
  HyperNode nested = h;  // Go refuses nesting deeper than 1,000
  nested.spec.members[1].selector.regex_match->pattern = std::string(5000, '(') + std::string(5000, ')');
  EXPECT_EQ(ValidateHyperNode(nested).size(), 1u);
  nested.spec.members[1].selector.regex_match->pattern = std::string(1000, '(') + std::string(1000, ')');
  EXPECT_TRUE(ValidateHyperNode(nested).empty());
  // RE2 syntax that ECMAScript lacks, accepted as Volcano accepts it.
  nested.spec.members[1].selector.regex_match->pattern = "(?i)^GPU-[[:digit:]]+\\z";
  EXPECT_TRUE(ValidateHyperNode(nested).empty());
  HyperNode label_on_hn = h;
  label_on_hn.spec.members[2].type = "HyperNode";
  ExpectOnly(ValidateHyperNode(label_on_hn), "spec.members[2].selector.labelMatch",
             "labelMatch can only be used with member type Node");
  HyperNode bad_type = h;
  bad_type.spec.members[0].type = "Rack";
  ExpectOnly(ValidateHyperNode(bad_type), "spec.members[0].type", "member type must be Node or HyperNode");
}

TEST(ValidatePodJdbTest, Annotations) {
  auto pod_with = [](std::map<std::string, std::string> ann) {
    Pod p;
    p.metadata.annotations = std::move(ann);
    return p;
  };
  const std::string mn(kJdbMinAvailableKey), mx(kJdbMaxUnavailableKey);
  EXPECT_TRUE(ValidatePodJdb(pod_with({})).empty());
  EXPECT_TRUE(ValidatePodJdb(pod_with({{mn, "3"}})).empty());
  EXPECT_TRUE(ValidatePodJdb(pod_with({{mx, "1%"}})).empty());
  EXPECT_TRUE(ValidatePodJdb(pod_with({{mx, "99%"}})).empty());
  ExpectOnly(ValidatePodJdb(pod_with({{mn, "1"}, {mx, "1"}})), "metadata.annotations",
             "not allow configure multiple annotations <[volcano.sh/jdb-min-available volcano.sh/jdb-max-unavailable]> at "
             "same time");
  ExpectOnly(ValidatePodJdb(pod_with({{mn, "0"}})), "metadata.annotations[volcano.sh/jdb-min-available]",
             "invalid value <0> for volcano.sh/jdb-min-available, it must be a positive integer");
  ExpectOnly(ValidatePodJdb(pod_with({{mn, "-2"}})), "metadata.annotations[volcano.sh/jdb-min-available]",
             "invalid value <-2> for volcano.sh/jdb-min-available, it must be a positive integer");
  ExpectOnly(ValidatePodJdb(pod_with({{mx, "100%"}})), "metadata.annotations[volcano.sh/jdb-max-unavailable]",
             "invalid value <100%> for volcano.sh/jdb-max-unavailable, it must be a valid percentage which between 1% ~ "
             "99%");
  ExpectOnly(ValidatePodJdb(pod_with({{mx, "0%"}})), "metadata.annotations[volcano.sh/jdb-max-unavailable]",
             "invalid value <0%> for volcano.sh/jdb-max-unavailable, it must be a valid percentage which between 1% ~ "
             "99%");
}

TEST(NamesTest, Dns1123AndQualified) {
  EXPECT_TRUE(IsDns1123Label("a-b-1"));
  EXPECT_FALSE(IsDns1123Label("A"));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_TRUE(IsDns1123Subdomain("a.b-c.d"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_TRUE(IsQualifiedName("volcano.sh/job-name"));
  EXPECT_TRUE(IsQualifiedName("My_Name.1"));
  EXPECT_FALSE(IsQualifiedName("Bad/x/y"));
  EXPECT_FALSE(IsQualifiedName("_x"));
  EXPECT_EQ(JoinFieldErrors({{"a", "m1"}, {"", "m2"}}), "a: m1; m2");
}

}  // namespace
}  // namespace tephra::api
