// Pod and PodGroup materialization (docs/volcano-behaviour.md, "Pods of a vcjob", "PodGroup of a vcjob
// (minResources)"): names, labels, annotations, owner reference, inheritance,
// minTaskMember, subGroupPolicy and minResources.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tephra::reconcilers::job {
namespace {

using namespace testing;  // NOLINT

api::Pod Build(const api::Job& job, int task, int index) {
  PluginContext ctx;
  ctx.job = &job;
  return BuildPod(job, job.spec.tasks[task], index, {}, ctx).value();
}

TEST(MaterializeTest, PodNameLabelsAnnotationsOwner) {
  api::Job job = MakeJob("train", {Task("worker", 2)});
  job.status.version = 4;
  job.status.retry_count = 2;
  job.spec.tasks[0].topology_policy = "single-numa-node";
  job.spec.tasks[0].template_.metadata.labels["app"] = "x";
  job.metadata.annotations["volcano.sh/preemptable"] = "true";
  job.metadata.labels["volcano.sh/cooldown-time"] = "600s";
  job.metadata.annotations["volcano.sh/revocable-zone"] = "*";
  job.metadata.annotations["volcano.sh/jdb-min-available"] = "1";
  job.metadata.annotations["volcano.sh/jdb-max-unavailable"] = "2";
  api::Pod p = Build(job, 0, 1);
  EXPECT_EQ(p.metadata.name, "train-worker-1");
  EXPECT_EQ(p.metadata.namespace_, "ns");
  const auto& L = p.metadata.labels;
  const auto& A = p.metadata.annotations;
  EXPECT_EQ(L.at("app"), "x");
  EXPECT_EQ(L.at("volcano.sh/task-index"), "1");
  EXPECT_EQ(A.at("volcano.sh/task-index"), "1");
  EXPECT_EQ(L.at("volcano.sh/task-spec"), "worker");
  EXPECT_EQ(A.at("volcano.sh/task-spec"), "worker");
  EXPECT_EQ(L.at("volcano.sh/job-name"), "train");
  EXPECT_EQ(A.at("volcano.sh/job-name"), "train");
  EXPECT_EQ(L.at("volcano.sh/job-namespace"), "ns");
  EXPECT_EQ(L.at("volcano.sh/queue-name"), "default");
  EXPECT_EQ(A.at("volcano.sh/queue-name"), "default");
  EXPECT_EQ(A.at("scheduling.k8s.io/group-name"), "train-uid-train");
  EXPECT_EQ(A.at("volcano.sh/job-version"), "4");
  EXPECT_EQ(A.at("volcano.sh/job-retry-count"), "2");
  EXPECT_EQ(A.at("volcano.sh/template-uid"), "train-worker");
  EXPECT_EQ(A.at("volcano.sh/numa-topology-policy"), "single-numa-node");
  EXPECT_EQ(A.at("volcano.sh/preemptable"), "true");
  EXPECT_EQ(L.count("volcano.sh/preemptable"), 0u);
  EXPECT_EQ(L.at("volcano.sh/cooldown-time"), "600s");
  EXPECT_EQ(A.at("volcano.sh/revocable-zone"), "*");
  EXPECT_EQ(A.at("volcano.sh/jdb-min-available"), "1");
  EXPECT_EQ(A.count("volcano.sh/jdb-max-unavailable"), 0u);  // min-available wins
  EXPECT_EQ(L.count("volcano.sh/partition-id"), 0u);
  ASSERT_EQ(p.metadata.owner_references.size(), 1u);
  const auto& o = p.metadata.owner_references[0];
  EXPECT_EQ(o.api_version, "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(o.kind, "Job");
  EXPECT_EQ(o.name, "train");
  EXPECT_EQ(o.uid, "uid-train");
  EXPECT_EQ(o.controller, true);
  EXPECT_EQ(o.block_owner_deletion, true);
}

TEST(MaterializeTest, SchedulerAndPriorityClassInheritance) {
  api::Job job = MakeJob("j", {Task("a", 1), Task("b", 1)});
  job.spec.priority_class_name = "high";
  job.spec.tasks[1].template_.spec.scheduler_name = "other";
  job.spec.tasks[1].template_.spec.priority_class_name = "low";
  api::Pod a = Build(job, 0, 0);
  api::Pod b = Build(job, 1, 0);
  EXPECT_EQ(a.spec.scheduler_name, "volcano");
  EXPECT_EQ(a.spec.priority_class_name, "high");
  EXPECT_EQ(b.spec.scheduler_name, "other");
  EXPECT_EQ(b.spec.priority_class_name, "low");
}

// Only a job started without the admission defaults (by a controller that did not apply them) still has an
// unnamed task when pods are built; its pods keep the names they started with.
TEST(MaterializeTest, EmptyTaskNameIsDefault) {
  api::Job job = MakeJob("j", {Task("", 1)});
  job.spec.tasks[0].name.clear();
  api::Pod p = Build(job, 0, 0);
  EXPECT_EQ(p.metadata.name, "j-default-0");
  EXPECT_EQ(p.metadata.labels.at("volcano.sh/task-spec"), "default");
}

TEST(MaterializeTest, PartitionIdLabel) {
  api::Job job = MakeJob("j", {Task("w", 6)});
  job.spec.tasks[0].partition_policy.emplace();
  job.spec.tasks[0].partition_policy->total_partitions = 3;
  job.spec.tasks[0].partition_policy->partition_size = 2;
  EXPECT_EQ(Build(job, 0, 0).metadata.labels.at("volcano.sh/partition-id"), "0");
  EXPECT_EQ(Build(job, 0, 3).metadata.labels.at("volcano.sh/partition-id"), "1");
  EXPECT_EQ(Build(job, 0, 5).metadata.labels.at("volcano.sh/partition-id"), "2");
}

TEST(MaterializeTest, PodGroupSpec) {
  api::Job job = MakeJob("j", {Task("ps", 1), Task("worker", 4, 2)}, 3);
  job.metadata.labels["team"] = "a";
  job.metadata.annotations["note"] = "b";
  job.spec.priority_class_name = "high";
  job.spec.tasks[1].partition_policy.emplace();
  job.spec.tasks[1].partition_policy->total_partitions = 2;
  job.spec.tasks[1].partition_policy->partition_size = 2;
  job.spec.tasks[1].partition_policy->min_partitions = 1;
  api::PodGroup pg = BuildPodGroup(job, {});
  EXPECT_EQ(pg.metadata.name, "j-uid-j");
  EXPECT_EQ(pg.metadata.labels.at("team"), "a");
  EXPECT_EQ(pg.metadata.annotations.at("note"), "b");
  EXPECT_EQ(pg.metadata.owner_references.at(0).controller, true);
  EXPECT_EQ(pg.spec.min_member, 3);
  EXPECT_EQ(pg.spec.min_task_member.at("ps"), 1);
  EXPECT_EQ(pg.spec.min_task_member.at("worker"), 2);
  EXPECT_EQ(pg.spec.queue, "default");
  EXPECT_EQ(pg.spec.priority_class_name, "high");
  ASSERT_EQ(pg.spec.sub_group_policy.size(), 1u);
  const auto& sg = pg.spec.sub_group_policy[0];
  EXPECT_EQ(sg.name, "worker");
  EXPECT_EQ(sg.sub_group_size, 2);
  EXPECT_EQ(sg.min_sub_groups, 1);
  EXPECT_EQ(sg.label_selector->match_labels.at("volcano.sh/task-spec"), "worker");
  EXPECT_EQ(sg.match_label_keys, std::vector<std::string>{"volcano.sh/partition-id"});
}

TEST(MaterializeTest, PodGroupCarriesTheRunningEstimateForTheScheduler) {
  api::Job job = MakeJob("j", {Task("worker", 2)}, 2);
  EXPECT_EQ(BuildPodGroup(job, {}).metadata.annotations.count("tephra.io/running-estimate"), 0u);
  job.spec.running_estimate = "2h30m";
  EXPECT_EQ(BuildPodGroup(job, {}).metadata.annotations.at("tephra.io/running-estimate"), "2h30m");
}

TEST(MaterializeTest, PodGroupMinResourcesCountsMinAvailablePods) {
  // 3 pods of 1 cpu / 1Gi each (job.minAvailable 3 = Σ task minAvailable).
  api::Job job = MakeJob("j", {Task("ps", 1), Task("worker", 4, 2)}, 3);
  api::PodGroup pg = BuildPodGroup(job, {});
  ASSERT_TRUE(pg.spec.min_resources);
  const auto& r = *pg.spec.min_resources;
  EXPECT_EQ(r.at("cpu"), core::Quantity::MustParse("3"));
  EXPECT_EQ(r.at("requests.cpu"), core::Quantity::MustParse("3"));
  EXPECT_EQ(r.at("memory"), core::Quantity::MustParse("3Gi"));
  EXPECT_EQ(r.at("pods"), core::Quantity::MustParse("3"));
  EXPECT_EQ(r.at("count/pods"), core::Quantity::MustParse("3"));
}

TEST(MaterializeTest, StableSuffixIsDeterministicAndWellFormed) {
  std::string a = StableSuffix("uid/pvc/0");
  EXPECT_EQ(a, StableSuffix("uid/pvc/0"));
  EXPECT_NE(a, StableSuffix("uid/pvc/1"));
  EXPECT_EQ(a.size(), 12u);
  for (char c : a) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) << a;
  EXPECT_EQ(StableSuffix("").size(), 12u);
}

TEST(MaterializeTest, PodIndexTaskVersionReaders) {
  api::Job job = MakeJob("j", {Task("worker", 3)});
  job.status.version = 7;
  api::Pod p = Build(job, 0, 2);
  EXPECT_EQ(PodIndex(p), 2);
  EXPECT_EQ(PodTask(p), "worker");
  EXPECT_EQ(PodVersion(p), 7);
  p.metadata.annotations.clear();
  p.metadata.labels.clear();
  EXPECT_EQ(PodIndex(p), 2);  // from the name
  EXPECT_EQ(PodVersion(p), 0);
}

}  // namespace
}  // namespace tephra::reconcilers::job
