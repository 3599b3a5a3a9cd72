#include "tephra/api/defaults.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tephra/api/labels.h"

namespace tephra::api {
namespace {

using testing::J;

Job MinimalJob() {
  return *FromJson<Job>(J(R"({
    "metadata": {"name": "j", "namespace": "ns"},
    "spec": {"tasks": [
      {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
      {"name": "ps", "replicas": 3, "minAvailable": 1, "maxRetry": 7,
       "template": {"spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "busybox"}]}}}
    ]}})"));
}

TEST(MutateJobTest, FillsEveryDefault) {
  Job job = MinimalJob();
  MutateJob(&job, JobDefaultsConfig{});
  EXPECT_EQ(job.spec.queue, "default");
  EXPECT_EQ(job.spec.scheduler_name, "volcano");
  EXPECT_EQ(job.spec.max_retry, 3);
  EXPECT_EQ(job.spec.tasks[0].name, "default0");
  EXPECT_EQ(job.spec.tasks[1].name, "ps");
  EXPECT_EQ(job.spec.tasks[0].min_available, 2);  // nil -> replicas
  EXPECT_EQ(job.spec.tasks[1].min_available, 1);  // explicit kept
  EXPECT_EQ(job.spec.tasks[0].max_retry, 3);
  EXPECT_EQ(job.spec.tasks[1].max_retry, 7);
  EXPECT_EQ(job.spec.tasks[0].template_.spec.dns_policy, "");
  EXPECT_EQ(job.spec.tasks[1].template_.spec.dns_policy, kDNSClusterFirstWithHostNet);
  EXPECT_EQ(job.spec.min_available, 3);  // Σ task minAvailable
  EXPECT_TRUE(job.spec.plugins.empty());
}

TEST(MutateJobTest, KeepsExplicitValues) {
  Job job = MinimalJob();
  job.spec.queue = "q1";
  job.spec.scheduler_name = "other";
  job.spec.max_retry = 9;
  job.spec.min_available = 1;
  job.spec.tasks[1].template_.spec.dns_policy = "Default";
  MutateJob(&job, JobDefaultsConfig{{"vs1", "vs2"}, "dq"});
  EXPECT_EQ(job.spec.queue, "q1");
  EXPECT_EQ(job.spec.scheduler_name, "other");
  EXPECT_EQ(job.spec.max_retry, 9);
  EXPECT_EQ(job.spec.min_available, 1);
  EXPECT_EQ(job.spec.tasks[1].template_.spec.dns_policy, "Default");

  Job other = MinimalJob();
  MutateJob(&other, JobDefaultsConfig{{"vs1", "vs2"}, "dq"});
  EXPECT_EQ(other.spec.queue, "dq");
  EXPECT_EQ(other.spec.scheduler_name, "vs1");
}

TEST(MutateJobTest, PartitionedTaskMinAvailable) {
  Job job = MinimalJob();
  job.spec.tasks[0].replicas = 8;
  job.spec.tasks[0].partition_policy = PartitionPolicySpec{4, 2, std::nullopt, 3, nullptr};
  MutateJob(&job, {});
  EXPECT_EQ(job.spec.tasks[0].min_available, 6);  // minPartitions × partitionSize
  EXPECT_EQ(job.spec.min_available, 7);
  Job zero = MinimalJob();
  zero.spec.tasks[0].replicas = 8;
  zero.spec.tasks[0].partition_policy = PartitionPolicySpec{4, 2, std::nullopt, 0, nullptr};
  MutateJob(&zero, {});
  EXPECT_EQ(zero.spec.tasks[0].min_available, 8);  // minPartitions 0 -> replicas
}

TEST(MutateJobTest, ImpliedPlugins) {
  Job mpi = MinimalJob();
  mpi.spec.plugins["mpi"] = {"--master=ps"};
  MutateJob(&mpi, {});
  EXPECT_EQ(mpi.spec.plugins.count("svc"), 1u);
  EXPECT_EQ(mpi.spec.plugins.count("ssh"), 1u);

  Job pt = MinimalJob();
  pt.spec.plugins["pytorch"] = {};
  pt.spec.plugins["svc"] = {"--disable-network-policy=true"};
  MutateJob(&pt, {});
  EXPECT_EQ(pt.spec.plugins.at("svc"), std::vector<std::string>{"--disable-network-policy=true"});  // not replaced
  EXPECT_EQ(pt.spec.plugins.count("ssh"), 0u);

  Job env = MinimalJob();
  env.spec.plugins["env"] = {};
  MutateJob(&env, {});
  EXPECT_EQ(env.spec.plugins.size(), 1u);
}

TEST(MutateJobTest, PatchFromBeforeAfterAppliesBack) {
  Job job = MinimalJob();
  json before = ToJson(job);
  MutateJob(&job, {});
  json after = ToJson(job);
  json patch = JsonPatchDiff(before, after);
  ASSERT_TRUE(patch.is_array());
  EXPECT_FALSE(patch.empty());
  bool saw_queue = false;
  for (const auto& op : patch)
    if (op["path"] == "/spec/queue") {
      saw_queue = true;
      EXPECT_EQ(op["op"], "add");
      EXPECT_EQ(op["value"], "default");
    }
  EXPECT_TRUE(saw_queue) << patch.dump();
  StatusOr<json> applied = ApplyJsonPatch(before, patch);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, after);
  // Idempotent: mutating again changes nothing.
  MutateJob(&job, {});
  EXPECT_TRUE(JsonPatchDiff(after, ToJson(job)).empty());
}

TEST(JsonPatchTest, DiffEscapesKeysAndReplacesArraysWhole) {
  json a = J(R"({"metadata":{"annotations":{"volcano.sh/x":"1","a~b":"2"}},"list":[1,2,3],"gone":true})");
  json b = J(R"({"metadata":{"annotations":{"volcano.sh/x":"2","a~b":"2","new/key":"v"}},"list":[1,2]})");
  json patch = JsonPatchDiff(a, b);
  EXPECT_EQ(patch, J(R"([
    {"op":"remove","path":"/gone"},
    {"op":"replace","path":"/list","value":[1,2]},
    {"op":"add","path":"/metadata/annotations/new~1key","value":"v"},
    {"op":"replace","path":"/metadata/annotations/volcano.sh~1x","value":"2"}
  ])"));
  StatusOr<json> applied = ApplyJsonPatch(a, patch);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(*applied, b);
  EXPECT_FALSE(ApplyJsonPatch(a, J(R"([{"op":"remove","path":"/nope"}])")).ok());
  EXPECT_FALSE(ApplyJsonPatch(a, J(R"([{"op":"bogus"}])")).ok());
}

TEST(JsonPatchTest, ElementwiseDiffTouchesOnlyChangedFieldsOfElements) {
  json a = J(R"({"spec":{"tasks":[{"replicas":3,"cpu":"1000m"},{"name":"w","replicas":1}],"n":1},"list":[1,2,3]})");
  json b = J(R"({"spec":{"tasks":[{"name":"default0","replicas":3,"cpu":"1000m"},{"name":"w","replicas":1}],"n":2},
               "list":[1,2]})");
  json patch = JsonPatchDiffElementwise(a, b);
  EXPECT_EQ(patch, J(R"([
    {"op":"add","path":"/list","value":[1,2]},
    {"op":"add","path":"/spec/n","value":2},
    {"op":"add","path":"/spec/tasks/0/name","value":"default0"}
  ])"));
  // "add" of a member works whether or not the target has it: applied to an object written without /spec/n.
  json sparse = a;
  sparse["spec"].erase("n");
  StatusOr<json> applied = ApplyJsonPatch(sparse, patch);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(*applied, b);
  EXPECT_EQ(JsonPatchDiffElementwise(J(R"([1,2])"), J(R"([1,3])")), J(R"([{"op":"replace","path":"/1","value":3}])"));
}

TEST(MutateQueueTest, DefaultsAndHierarchyRoot) {
  Queue q;
  q.metadata.name = "a";
  q.metadata.annotations[std::string(kHierarchyAnnotation)] = "eng/a";
  q.metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "2/8";
  MutateQueue(&q);
  EXPECT_EQ(q.spec.reclaimable, true);
  EXPECT_EQ(q.spec.weight, 1);
  EXPECT_EQ(q.metadata.annotations[std::string(kHierarchyAnnotation)], "root/eng/a");
  EXPECT_EQ(q.metadata.annotations[std::string(kHierarchyWeightsAnnotation)], "1/2/8");

  Queue r;
  r.spec.reclaimable = false;
  r.spec.weight = 5;
  r.metadata.annotations[std::string(kHierarchyAnnotation)] = "root/x";
  r.metadata.annotations[std::string(kHierarchyWeightsAnnotation)] = "1/3";
  MutateQueue(&r);
  EXPECT_EQ(r.spec.reclaimable, false);
  EXPECT_EQ(r.spec.weight, 5);
  EXPECT_EQ(r.metadata.annotations[std::string(kHierarchyAnnotation)], "root/x");

  Queue only_one;  // one annotation alone is left for validation to reject
  only_one.metadata.annotations[std::string(kHierarchyAnnotation)] = "x";
  MutateQueue(&only_one);
  EXPECT_EQ(only_one.metadata.annotations[std::string(kHierarchyAnnotation)], "x");
}

TEST(MutatePodGroupTest, NamespaceQueueAnnotation) {
  FakeClusterLookup lookup;
  lookup.namespace_annotations["ml"][std::string(kSchedulingQueueNameAnnotation)] = "research";
  PodGroup pg;
  pg.metadata.namespace_ = "ml";
  pg.spec.queue = "default";
  MutatePodGroup(&pg, lookup);
  EXPECT_EQ(pg.spec.queue, "research");

  PodGroup explicit_queue;
  explicit_queue.metadata.namespace_ = "ml";
  explicit_queue.spec.queue = "other";
  MutatePodGroup(&explicit_queue, lookup);
  EXPECT_EQ(explicit_queue.spec.queue, "other");

  PodGroup no_annotation;
  no_annotation.metadata.namespace_ = "plain";
  MutatePodGroup(&no_annotation, lookup);
  EXPECT_EQ(no_annotation.spec.queue, "default");
}

}  // namespace
}  // namespace tephra::api
