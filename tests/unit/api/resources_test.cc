#include "tephra/api/resources.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tephra::api {
namespace {

using core::Quantity;
using testing::J;

PodSpec Spec(const char* text) { return *FromJson<PodSpec>(J(text)); }

std::map<std::string, std::string> Strings(const ResourceList& rl) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : rl) out[k] = v.ToString();
  return out;
}

TEST(PodRequestsTest, SumsContainersMaxesInitAddsOverhead) {
  PodSpec s = Spec(R"({
    "containers": [
      {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
      {"name": "b", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi", "nvidia.com/gpu": "2"}}}
    ],
    "initContainers": [
      {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "512Mi"}}},
      {"name": "i2", "resources": {"requests": {"memory": "4Gi"}}}
    ],
    "overhead": {"cpu": "100m"}})");
  // cpu: max(1.5, 2) + 0.1; memory: max(1Gi + 2Gi (limit as request), 4Gi); gpu from limits.
  EXPECT_EQ(Strings(PodRequests(s)),
            (std::map<std::string, std::string>{{"cpu", "2100m"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_TRUE(PodRequests(PodSpec{}).empty());
}

TEST(PodQuotaUsageTest, QuotaKeys) {
  PodSpec s = Spec(R"({"containers": [{"name": "a", "resources": {
      "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"},
      "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"}}}]})");
  EXPECT_EQ(Strings(PodQuotaUsage(s)), (std::map<std::string, std::string>{
                                           {"count/pods", "1"},
                                           {"cpu", "1"},
                                           {"hugepages-2Mi", "4Mi"},
                                           {"limits.cpu", "2"},
                                           {"limits.memory", "1Gi"},
                                           {"memory", "1Gi"},
                                           {"nvidia.com/gpu", "1"},
                                           {"pods", "1"},
                                           {"requests.cpu", "1"},
                                           {"requests.hugepages-2Mi", "4Mi"},
                                           {"requests.memory", "1Gi"},
                                           {"requests.nvidia.com/gpu", "1"},
                                       }));
}

// Volcano's quota usage leaves out a resource given only as a limit (typical for GPUs), so its enqueue admits
// a GPU job without counting its GPUs. The API server will default each pod's requests to those limits, so
// Tephra counts them now: minResources says what the gang will really ask for (docs/volcano-conformance.md).
TEST(PodQuotaUsageTest, LimitsOnlyContainerCountsItsLimitsAsThePodsWillRequest) {
  PodSpec s = Spec(R"({"containers": [{"name": "a", "resources": {
      "limits": {"cpu": "2", "nvidia.com/gpu": "8"}}}]})");
  auto u = Strings(PodQuotaUsage(s));
  EXPECT_EQ(u.at("nvidia.com/gpu"), "8");
  EXPECT_EQ(u.at("requests.nvidia.com/gpu"), "8");
  EXPECT_EQ(u.at("cpu"), "2");
  EXPECT_EQ(u.at("limits.cpu"), "2");
}

TEST(ResourceListTest, AddMaxLessEqual) {
  ResourceList a{{"cpu", Quantity::MustParse("1")}};
  ResourceList b{{"cpu", Quantity::MustParse("500m")}, {"memory", Quantity::MustParse("1Gi")}};
  AddResources(&a, b);
  EXPECT_EQ(Strings(a), (std::map<std::string, std::string>{{"cpu", "1500m"}, {"memory", "1Gi"}}));
  ResourceList m{{"cpu", Quantity::MustParse("2")}};
  MaxResources(&m, a);
  EXPECT_EQ(Strings(m), (std::map<std::string, std::string>{{"cpu", "2"}, {"memory", "1Gi"}}));
  EXPECT_TRUE(LessEqual(b, a));
  EXPECT_FALSE(LessEqual(a, b));
  EXPECT_FALSE(LessEqual(ResourceList{{"gpu", Quantity::MustParse("1")}}, a));  // missing counts as zero
  EXPECT_TRUE(LessEqual(ResourceList{{"gpu", Quantity()}}, a));
}

Job TwoTaskJob(int32_t job_min, std::optional<int32_t> ps_min, std::optional<int32_t> worker_min) {
  Job job = *FromJson<Job>(J(R"({"spec": {"tasks": [
    {"name": "ps", "replicas": 2, "template": {"spec": {"priorityClassName": "low",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
    {"name": "worker", "replicas": 3, "template": {"spec": {"priorityClassName": "high",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "10"}}}]}}}
  ]}})"));
  job.spec.min_available = job_min;
  job.spec.tasks[0].min_available = ps_min;
  job.spec.tasks[1].min_available = worker_min;
  return job;
}

int64_t Cpu(const ResourceList& rl) { return rl.count("cpu") ? rl.at("cpu").Value() : 0; }

TEST(MinResourcesForJobTest, PriorityOrderedWhenJobMinBelowTaskMins) {
  PriorityLookup prio = [](std::string_view n) -> std::optional<int32_t> {
    if (n == "high") return 100;
    if (n == "low") return 1;
    return std::nullopt;
  };
  // job.minAvailable (2) < Σ task minAvailable (5): first 2 pods in priority order -> 2 workers.
  ResourceList r = MinResourcesForJob(TwoTaskJob(2, std::nullopt, std::nullopt), prio);
  EXPECT_EQ(Cpu(r), 20);
  EXPECT_EQ(r.at("pods").Value(), 2);
  EXPECT_EQ(r.at("requests.cpu").Value(), 20);
  // Without priorities the declaration order wins: 2 ps pods.
  EXPECT_EQ(Cpu(MinResourcesForJob(TwoTaskJob(2, std::nullopt, std::nullopt))), 2);
}

TEST(MinResourcesForJobTest, TaskMinimumsThenSpareReplicasByPriority) {
  PriorityLookup prio = [](std::string_view n) -> std::optional<int32_t> { return n == "high" ? 100 : 1; };
  // Task mins: ps 1, worker 1 (= 11 cpu); job min 3 >= 2, so one more slot from spare replicas,
  // highest priority first -> a worker (10).
  EXPECT_EQ(Cpu(MinResourcesForJob(TwoTaskJob(3, 1, 1), prio)), 21);
  // Low-priority first when priorities are reversed.
  PriorityLookup rev = [](std::string_view n) -> std::optional<int32_t> { return n == "low" ? 100 : 1; };
  EXPECT_EQ(Cpu(MinResourcesForJob(TwoTaskJob(3, 1, 1), rev)), 12);
  // job min == Σ replicas: everything.
  EXPECT_EQ(Cpu(MinResourcesForJob(TwoTaskJob(5, 2, 3), prio)), 32);
  EXPECT_TRUE(MinResourcesForJob(TwoTaskJob(0, 0, 0), prio).empty());
}

TEST(TaskMinAvailableTest, ExplicitPartitionReplicas) {
  TaskSpec t;
  t.replicas = 8;
  EXPECT_EQ(TaskMinAvailable(t), 8);
  t.partition_policy = PartitionPolicySpec{4, 2, std::nullopt, 3, nullptr};
  EXPECT_EQ(TaskMinAvailable(t), 6);
  t.min_available = 5;
  EXPECT_EQ(TaskMinAvailable(t), 5);
}

}  // namespace
}  // namespace tephra::api
