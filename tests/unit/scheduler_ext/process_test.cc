// SchedulerProcess wiring on the in-memory FakeClient: informers -> inbox -> state thread -> cycle ->
// binder/evictor/status writer, leadership gating, bind-failure rollback, and WithState from many threads
// while cycles run (the TSan build runs this too). Every wait is for an observable event with a deadline;
// "nothing happened" is asserted after a WithState barrier, which returns only once every change queued
// before it was applied.
#include "tephra/scheduler/process.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/api/scheduling.h"
#include "tephra/kube/metrics.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

template <typename Pred>
bool Eventually(Pred p, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return p();
}

json Node(const std::string& name, const std::string& cpu) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"allocatable", {{"cpu", cpu}, {"memory", "64Gi"}, {"pods", "110"}}},
            {"capacity", {{"cpu", cpu}, {"memory", "64Gi"}, {"pods", "110"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json Queue(const std::string& name) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}}},
          {"spec", {{"weight", 1}, {"reclaimable", true}}},
          {"status", {{"state", "Open"}}}};
}

json PodGroup(const std::string& name, int min_member) {
  return {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "ns"}}},
          {"spec", {{"minMember", min_member}, {"queue", "default"}}},
          {"status", {{"phase", "Inqueue"}}}};
}

json Pod(const std::string& name, const std::string& group, const std::string& cpu) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name}, {"namespace", "ns"}, {"annotations", {{std::string(api::kPodGroupAnnotation), group}}}}},
          {"spec",
           {{"schedulerName", "volcano"},
            {"containers", json::array({{{"name", "c"}, {"image", "x"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

struct ProcessFixture : ::testing::Test {
  std::shared_ptr<FakeClient> fc = std::make_shared<FakeClient>();
  kube::metrics::Registry registry;
  std::unique_ptr<SchedulerProcess> proc;

  void SetUp() override {
    fc->Seed(api::Queue::Resource(), Queue("default"));
    fc->Seed(api::Node::Resource(), Node("n1", "4"));
    fc->Seed(api::Node::Resource(), Node("n2", "4"));
  }
  void TearDown() override {
    if (proc) proc->Stop();
  }

  void StartProcess(std::chrono::milliseconds period = std::chrono::milliseconds(200)) {
    SchedulerOptions o;
    o.schedule_period = period;
    o.min_schedule_interval = std::chrono::milliseconds(5);
    o.bind_workers = 4;
    SchedulerDeps d;
    d.client = fc;
    d.status_client = fc;
    d.registry = &registry;
    d.evict_workers = 2;
    auto p = SchedulerProcess::Create(o, d);
    ASSERT_TRUE(p.ok()) << p.status();
    proc = std::move(*p);
    ASSERT_TRUE(proc->Start().ok());
    ASSERT_TRUE(proc->WaitForSync(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  }

  std::string NodeOf(const std::string& pod) {
    auto p = fc->Get(api::Pod::Resource(), "ns", pod);
    if (!p.ok()) return "";
    return (*p)["spec"].value("nodeName", "");
  }
  int Binds() {
    int n = 0;
    for (const auto& a : fc->Actions()) n += a.verb == "bind";
    return n;
  }
  // Returns once every change queued before the call has been applied to the state.
  void Barrier() {
    proc->WithState([](sched::ClusterState&) {});
  }
};

TEST_F(ProcessFixture, WatchedGangIsBoundOnlyWhileLeading) {
  StartProcess();
  fc->Seed(api::PodGroup::Resource(), PodGroup("pg", 2));
  fc->Seed(api::Pod::Resource(), Pod("p0", "pg", "2"));
  fc->Seed(api::Pod::Resource(), Pod("p1", "pg", "2"));
  // The state sees the pods (applied from the inbox), but a standby never cycles or binds.
  ASSERT_TRUE(Eventually([&] {
    size_t tasks = 0;
    proc->WithState([&](sched::ClusterState& st) { tasks = st.task_count(); });
    return tasks == 2;
  }));
  Barrier();
  EXPECT_EQ(proc->cycles(), 0u);
  EXPECT_EQ(Binds(), 0);
  EXPECT_EQ(proc->event_latency().applied, 6u);  // 2 nodes, the queue, the PodGroup, 2 pods

  proc->SetLeading(true);
  ASSERT_TRUE(Eventually([&] { return !NodeOf("p0").empty() && !NodeOf("p1").empty(); }));
  EXPECT_GE(proc->cycles(), 1u);
  // The binder's successes come back through the inbox: the core moves the tasks to Bound.
  ASSERT_TRUE(Eventually([&] {
    int bound = 0;
    proc->WithState([&](sched::ClusterState& st) {
      for (const sched::TaskInfo* t : st.TasksOfJob("ns/pg")) bound += t->status == sched::TaskStatus::kBound ||
                                                                      t->status == sched::TaskStatus::kRunning;
    });
    return bound == 2;
  }));

  proc->SetLeading(false);
  const uint64_t cycles = proc->cycles();
  fc->Seed(api::Pod::Resource(), Pod("p2", "pg", "1"));
  ASSERT_TRUE(Eventually([&] {
    size_t tasks = 0;
    proc->WithState([&](sched::ClusterState& st) { tasks = st.task_count(); });
    return tasks == 3;
  }));
  Barrier();
  EXPECT_EQ(proc->cycles(), cycles);
  EXPECT_EQ(NodeOf("p2"), "");
}

TEST_F(ProcessFixture, FailedBindRollsTheGangBackAndItIsPlacedLater) {
  std::atomic<int> failures{2};
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "bind" && failures.fetch_sub(1) > 0) return core::InternalError("injected bind failure");
    return std::nullopt;
  });
  StartProcess(std::chrono::milliseconds(50));
  fc->Seed(api::PodGroup::Resource(), PodGroup("pg", 2));
  fc->Seed(api::Pod::Resource(), Pod("p0", "pg", "3"));
  fc->Seed(api::Pod::Resource(), Pod("p1", "pg", "3"));
  proc->SetLeading(true);
  ASSERT_TRUE(Eventually([&] { return !NodeOf("p0").empty() && !NodeOf("p1").empty(); }));
  // 3 cpus each on 4-cpu nodes: one per node, never both on one.
  EXPECT_NE(NodeOf("p0"), NodeOf("p1"));
  const std::string text = registry.Expose();
  EXPECT_NE(text.find("tephra_scheduler_bind_errors_total{result=\"error\"}"), std::string::npos) << text;
}

TEST_F(ProcessFixture, WithStateFromManyThreadsWhileCyclesRun) {
  StartProcess(std::chrono::milliseconds(10));
  proc->SetLeading(true);
  std::atomic<bool> done{false};
  std::atomic<int> calls{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      while (!done) {
        proc->WithState([&](sched::ClusterState& st) {
          if (st.node_count() == 2) ++calls;
        });
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    const std::string pg = "g" + std::to_string(i);
    fc->Seed(api::PodGroup::Resource(), PodGroup(pg, 1));
    fc->Seed(api::Pod::Resource(), Pod(pg + "-0", pg, "100m"));
  }
  const bool all = Eventually([&] {
    for (int i = 0; i < 20; ++i)
      if (NodeOf("g" + std::to_string(i) + "-0").empty()) return false;
    return true;
  });
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_TRUE(all);
  EXPECT_GT(calls.load(), 0);
}

TEST_F(ProcessFixture, StopReturnsWithWatchesOpenAndIsIdempotent) {
  StartProcess();
  proc->SetLeading(true);
  ASSERT_TRUE(Eventually([&] { return proc->cycles() > 0; }));
  proc->Stop();
  proc->Stop();
  // A WithState after Stop still runs (on the caller's thread) instead of hanging.
  bool ran = false;
  proc->WithState([&](sched::ClusterState&) { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(SchedulerProcess, RejectsMissingClientsAndBadConf) {
  SchedulerOptions o;
  EXPECT_EQ(SchedulerProcess::Create(o, {}).status().code(), core::StatusCode::kInvalidArgument);
  o.scheduler_conf = "/nonexistent/scheduler.conf";
  SchedulerDeps d;
  d.client = d.status_client = std::make_shared<FakeClient>();
  auto p = SchedulerProcess::Create(o, d);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("--scheduler-conf"), std::string::npos) << p.status();
}

}  // namespace
}  // namespace tephra::scheduler
