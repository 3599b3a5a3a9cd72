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
#include "tephra/api/apps.h"
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

// A pod with no PodGroup annotation (a "plain" pod); `owner` adds a controlling ownerReference.
json PlainPod(const std::string& name, const std::string& cpu, bool owner = false) {
  json p = Pod(name, "", cpu);
  p["metadata"].erase("annotations");
  if (owner)
    p["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                     {"kind", "ReplicaSet"},
                                                     {"name", "rs"},
                                                     {"uid", "rs-uid"},
                                                     {"controller", true}}});
  return p;
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
  // Returns once `n` more cycles have run after every change queued before the call was applied.
  void CyclesPass(uint64_t n) {
    Barrier();
    const uint64_t c = proc->cycles();
    ASSERT_TRUE(Eventually([&] { return proc->cycles() >= c + n; }));
  }
  int Writes(const std::string& resource, const std::string& verb) {
    int n = 0;
    for (const auto& a : fc->Actions()) n += a.resource == resource && a.verb == verb;
    return n;
  }
  std::vector<json> EventsAbout(const std::string& kind) {
    std::vector<json> out;
    for (const auto& a : fc->Actions())
      if (a.resource == "events" && a.verb == "create" && a.body["involvedObject"].value("kind", "") == kind)
        out.push_back(a.body);
    return out;
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
  // The cycle hands its binds to the binder before it counts itself, so the binds can land first.
  EXPECT_TRUE(Eventually([&] { return proc->cycles() >= 1u; }));
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

TEST_F(ProcessFixture, PlainPodIsBoundAsAGangOfOneBeforeItsPodGroupExists) {
  StartProcess(std::chrono::milliseconds(50));
  proc->SetLeading(true);
  const json pod = fc->Seed(api::Pod::Resource(), PlainPod("plain", "1"));
  const std::string uid = pod["metadata"]["uid"];
  const std::string group = "podgroup-" + uid;  // the controller's name for it
  ASSERT_TRUE(Eventually([&] { return !NodeOf("plain").empty(); }));
  // No PodGroup was needed, and none was read or written: the stand-in job has no object.
  EXPECT_EQ(Writes("podgroups.scheduling.volcano.sh", "get"), 0);
  EXPECT_EQ(Writes("podgroups.scheduling.volcano.sh", "update"), 0);
  proc->WithState([&](sched::ClusterState& st) {
    const sched::JobInfo* j = st.FindJob("ns/" + group);
    ASSERT_NE(j, nullptr);
    EXPECT_TRUE(j->implicit);
    EXPECT_EQ(j->min_member, 1);
    EXPECT_EQ(j->queue, "default");
  });

  // The controller catches up: PodGroup podgroup-<uid> (Pending, as created), then the pod's annotation.
  // It is the same job: the scheduler writes it Running, and never binds the pod twice.
  json pg = PodGroup(group, 1);
  pg["status"]["phase"] = "Pending";
  fc->Seed(api::PodGroup::Resource(), pg);
  ASSERT_TRUE(fc->Patch(api::Pod::Resource(), "ns", "plain", kube::PatchType::kMerge,
                        {{"metadata", {{"annotations", {{std::string(api::kPodGroupAnnotation), group}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] {
    auto got = fc->Get(api::PodGroup::Resource(), "ns", group);
    return got.ok() && (*got)["status"].value("phase", "") == "Running";
  }));
  CyclesPass(2);
  EXPECT_EQ(Binds(), 1);
  proc->WithState([&](sched::ClusterState& st) {
    const sched::JobInfo* j = st.FindJob("ns/" + group);
    ASSERT_NE(j, nullptr);
    EXPECT_FALSE(j->implicit);
    EXPECT_EQ(st.TasksOfJob("ns/" + group).size(), 1u);
  });

  // Deleting the pod and then its PodGroup (the garbage collector's order) leaves nothing behind.
  ASSERT_TRUE(fc->Delete(api::Pod::Resource(), "ns", "plain").ok());
  ASSERT_TRUE(fc->Delete(api::PodGroup::Resource(), "ns", group).ok());
  EXPECT_TRUE(Eventually([&] {
    bool gone = false;
    proc->WithState([&](sched::ClusterState& st) { gone = !st.FindJob("ns/" + group) && st.task_count() == 0; });
    return gone;
  }));
}

// The informer compacts cached pods; a host port must survive that, on pods bound by anyone. n2 is nearly
// full, so least-requested alone would pick n1, where a foreign pod holds the port.
TEST_F(ProcessFixture, HostPortsOfCachedPodsKeepConflictingPodsAway) {
  json holder = PlainPod("holder", "100m");
  holder["spec"]["schedulerName"] = "default-scheduler";
  holder["spec"]["nodeName"] = "n1";
  holder["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}}, {{"containerPort", 8080}, {"hostPort", 8080}}};
  holder["status"]["phase"] = "Running";
  fc->Seed(api::Pod::Resource(), holder);
  json busy = PlainPod("busy", "3");
  busy["spec"]["nodeName"] = "n2";
  busy["status"]["phase"] = "Running";
  fc->Seed(api::Pod::Resource(), busy);
  StartProcess(std::chrono::milliseconds(50));
  proc->WithState([&](sched::ClusterState& st) {
    const sched::NodeInfo* n1 = st.FindNode("n1");
    ASSERT_NE(n1, nullptr);
    EXPECT_EQ(n1->host_port_tasks, 1);
  });
  proc->SetLeading(true);
  json want = PlainPod("want", "100m");
  want["spec"]["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}};
  fc->Seed(api::Pod::Resource(), want);
  ASSERT_TRUE(Eventually([&] { return !NodeOf("want").empty(); }));
  EXPECT_EQ(NodeOf("want"), "n2");
}

// System-default topology spread reads the selectors of the Services that select a pod and of its controlling
// ReplicaSet/StatefulSet/ReplicationController: the process watches them and keeps the core's copy current.
TEST_F(ProcessFixture, ServicesAndOwnersReachTheDefaultSpreadSelector) {
  fc->Seed(api::Service::Resource(),
           json{{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata", {{"name", "web"}, {"namespace", "ns"}, {"annotations", {{"big", "dropped"}}}}},
                {"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"port", 80}}}}}}});
  fc->Seed(api::ReplicaSet::Resource(),
           json{{"apiVersion", "apps/v1"},
                {"kind", "ReplicaSet"},
                {"metadata", {{"name", "rs"}, {"namespace", "ns"}}},
                {"spec", {{"replicas", 2}, {"selector", {{"matchLabels", {{"hash", "h1"}}}}}}}});
  json pod = PlainPod("owned", "1", /*owner=*/true);
  pod["metadata"]["labels"] = {{"app", "web"}, {"hash", "h1"}};
  const std::string uid = fc->Seed(api::Pod::Resource(), pod)["metadata"]["uid"].get<std::string>();
  StartProcess(std::chrono::milliseconds(50));
  sched::LabelSelector want;
  want.match_labels = {{"app", "web"}};
  want.match_expressions.push_back({"hash", sched::SelectorOp::kIn, {"h1"}});
  auto selector = [&] {
    sched::LabelSelector got;
    proc->WithState([&](sched::ClusterState& st) {
      if (const sched::TaskInfo* t = st.FindTask(uid)) got = st.DefaultSpreadSelector(*t);
    });
    return got;
  };
  ASSERT_TRUE(Eventually([&] { return selector() == want; })) << api::ToJson(selector()).dump();
  ASSERT_TRUE(fc->Delete(api::Service::Resource(), "ns", "web").ok());
  want.match_labels.clear();
  EXPECT_TRUE(Eventually([&] { return selector() == want; }));
  ASSERT_TRUE(fc->Delete(api::ReplicaSet::Resource(), "ns", "rs").ok());
  EXPECT_TRUE(Eventually([&] { return selector() == sched::LabelSelector{}; }));
}

TEST_F(ProcessFixture, PlainPodDeletedBeforeItsPodGroupLeavesNoJob) {
  StartProcess(std::chrono::milliseconds(50));
  const json pod = fc->Seed(api::Pod::Resource(), PlainPod("plain", "1"));
  const std::string key = "ns/podgroup-" + pod["metadata"]["uid"].get<std::string>();
  ASSERT_TRUE(Eventually([&] {
    bool found = false;
    proc->WithState([&](sched::ClusterState& st) { found = st.FindJob(key) != nullptr; });
    return found;
  }));
  ASSERT_TRUE(fc->Delete(api::Pod::Resource(), "ns", "plain").ok());
  EXPECT_TRUE(Eventually([&] {
    bool gone = false;
    proc->WithState([&](sched::ClusterState& st) { gone = !st.FindJob(key) && st.task_count() == 0; });
    return gone;
  }));
}

TEST_F(ProcessFixture, PodOfAGangByAnnotationOrOwnerIsNeverBoundAlone) {
  StartProcess(std::chrono::milliseconds(20));
  proc->SetLeading(true);
  // Names a PodGroup that does not exist yet; has a controlling owner (its PodGroup's minMember comes from
  // the owner's annotations, which only the controller reads).
  fc->Seed(api::Pod::Resource(), Pod("named", "later", "1"));
  const json owned = fc->Seed(api::Pod::Resource(), PlainPod("owned", "1", /*owner=*/true));
  CyclesPass(3);
  EXPECT_EQ(NodeOf("named"), "");
  EXPECT_EQ(NodeOf("owned"), "");
  EXPECT_EQ(Binds(), 0);
  // Their PodGroups appear (the owned pod's as the controller names it, and annotated): both are placed.
  fc->Seed(api::PodGroup::Resource(), PodGroup("later", 1));
  fc->Seed(api::PodGroup::Resource(), PodGroup("podgroup-rs-uid", 1));
  ASSERT_TRUE(fc->Patch(api::Pod::Resource(), "ns", "owned", kube::PatchType::kMerge,
                        {{"metadata", {{"annotations", {{std::string(api::kPodGroupAnnotation), "podgroup-rs-uid"}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] { return !NodeOf("named").empty() && !NodeOf("owned").empty(); }));
}

TEST_F(ProcessFixture, UnschedulablePlainPodIsToldWhyOnThePodOnly) {
  StartProcess(std::chrono::milliseconds(20));
  proc->SetLeading(true);
  // Fits the queue (so it is admitted) but no node: it fails in allocate.
  json pod = PlainPod("huge", "1");
  pod["spec"]["nodeSelector"] = {{"disk", "ssd"}};
  fc->Seed(api::Pod::Resource(), pod);
  ASSERT_TRUE(Eventually([&] {
    for (const auto& e : EventsAbout("Pod"))
      if (e.value("reason", "") == "FailedScheduling") return true;
    return false;
  }));
  ASSERT_TRUE(Eventually([&] {
    auto p = fc->Get(api::Pod::Resource(), "ns", "huge");
    if (!p.ok() || !(*p)["status"].contains("conditions")) return false;
    return (*p)["status"]["conditions"][0].value("reason", "") == "Unschedulable";
  }));
  CyclesPass(2);
  // The stand-in job has no object: no PodGroup Event and no PodGroup write.
  EXPECT_TRUE(EventsAbout("PodGroup").empty());
  EXPECT_EQ(Writes("podgroups.scheduling.volcano.sh", "update"), 0);
  EXPECT_EQ(NodeOf("huge"), "");
}

// Issue 41: only nodes take a dimension of the scheduler's resource table. Ten made-up names in tenants' pods
// used to fill it for the life of the process, and a MIG profile a node offered later was then dropped and its
// pod placed as if it had not asked for it. Now the pod waits, told which resource no node offers, and is
// placed once a node offers it (the pod is converted again when the table grows).
TEST_F(ProcessFixture, ResourceANodeOffersLaterIsNotCrowdedOutByMadeUpNames) {
  StartProcess(std::chrono::milliseconds(20));
  proc->SetLeading(true);
  for (int i = 0; i < 10; ++i) {
    json p = PlainPod("junk" + std::to_string(i), "100m");
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/junk-" + std::to_string(i)] = "1";
    fc->Seed(api::Pod::Resource(), p);
  }
  json mig = PlainPod("mig", "100m");
  mig["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/mig-1g.5gb"] = "1";
  fc->Seed(api::Pod::Resource(), mig);
  std::string why;
  ASSERT_TRUE(Eventually([&] {
    auto p = fc->Get(api::Pod::Resource(), "ns", "mig");
    if (!p.ok() || !(*p)["status"].contains("conditions")) return false;
    why = (*p)["status"]["conditions"][0].value("message", "");
    return why.find("nvidia.com/mig-1g.5gb, which no node offers") != std::string::npos;
  })) << why;
  CyclesPass(2);
  EXPECT_EQ(NodeOf("mig"), "") << "no node offers the MIG profile yet";
  EXPECT_EQ(Binds(), 0);

  json n3 = Node("n3", "4");
  n3["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] = "7";
  n3["status"]["capacity"]["nvidia.com/mig-1g.5gb"] = "7";
  fc->Seed(api::Node::Resource(), n3);
  ASSERT_TRUE(Eventually([&] { return NodeOf("mig") == "n3"; })) << NodeOf("mig");
  CyclesPass(2);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(NodeOf("junk" + std::to_string(i)), "");
  proc->WithState([&](sched::ClusterState& st) {
    EXPECT_TRUE(st.resources().Find("nvidia.com/mig-1g.5gb").has_value());
    EXPECT_EQ(st.resources().size(), sched::kFirstScalar + 1) << "nothing from the pods";
  });
}

// More extended names offered by nodes than the table holds: each dropped name is counted once (and logged),
// however often its node is seen again, and a pod requesting one waits instead of being placed.
TEST_F(ProcessFixture, NodeResourceNamesPastTheTableAreCountedAndUnsatisfiable) {
  constexpr int kExtended = sched::kUnoffered - sched::kFirstScalar;
  json n3 = Node("n3", "4");
  for (int i = 0; i < kExtended + 2; ++i) {
    n3["status"]["allocatable"]["example.com/r" + std::to_string(10 + i)] = "4";
    n3["status"]["capacity"]["example.com/r" + std::to_string(10 + i)] = "4";
  }
  fc->Seed(api::Node::Resource(), n3);
  StartProcess(std::chrono::milliseconds(20));
  proc->SetLeading(true);
  const std::string last = "example.com/r" + std::to_string(10 + kExtended + 1);  // past the table
  fc->Seed(api::PodGroup::Resource(), PodGroup("pg", 1));
  json p = Pod("p", "pg", "100m");
  p["spec"]["containers"][0]["resources"]["requests"][last] = "1";
  fc->Seed(api::Pod::Resource(), p);
  ASSERT_TRUE(fc->Patch(api::Node::Resource(), "", "n3", kube::PatchType::kMerge,
                        {{"metadata", {{"labels", {{"seen", "again"}}}}}})
                  .ok());
  CyclesPass(3);
  EXPECT_EQ(NodeOf("p"), "");
  const std::string text = registry.Expose();
  EXPECT_NE(text.find("tephra_scheduler_resource_names_dropped_total 2\n"), std::string::npos) << text;
}

// Volcano's behaviour: a configuration file that cannot be read or is invalid at start-up is logged and the
// built-in default runs (the metrics say the file was rejected); --disable-default-scheduler-config makes it
// fatal instead.
// Issue 41: what-if bodies from anyone who reaches the metrics address. A body nested 200,000 levels deep used
// to end the process; a job of 2^31-1 replicas was expanded pod by pod on the state thread.
TEST_F(ProcessFixture, WhatIfRefusesHostileBodiesAndKeepsScheduling) {
  StartProcess(std::chrono::milliseconds(50));
  proc->SetLeading(true);
  auto deep = proc->TestOnly(std::string(200000, '[') + std::string(200000, ']'));
  EXPECT_EQ(deep.status().code(), core::StatusCode::kInvalidArgument) << deep.status();
  const std::string in_job = R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","metadata":{"name":"w"},)"
                             R"("spec":{"tasks":[{"name":"t","template":{"spec":{"x":)" +
                             std::string(200000, '[') + std::string(200000, ']') + "}}}]}}";
  EXPECT_EQ(proc->TestOnly(in_job).status().code(), core::StatusCode::kInvalidArgument);
  json huge = {{"apiVersion", "batch.volcano.sh/v1alpha1"},
               {"kind", "Job"},
               {"metadata", {{"name", "huge"}}},
               {"spec",
                {{"minAvailable", 1},
                 {"tasks", json::array({{{"name", "t"},
                                         {"replicas", 2147483647},
                                         {"template",
                                          {{"spec",
                                            {{"containers",
                                              json::array({{{"name", "c"},
                                                            {"image", "x"},
                                                            {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}}}}}})}}}};
  auto r = proc->TestOnly(huge.dump());
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("replicas"), std::string::npos) << r.status();
  // The process still schedules.
  fc->Seed(api::Pod::Resource(), PlainPod("after", "1"));
  ASSERT_TRUE(Eventually([&] { return !NodeOf("after").empty(); }));
}

TEST(SchedulerProcess, BadConfFallsBackToTheDefaultUnlessDisabled) {
  SchedulerOptions o;
  EXPECT_EQ(SchedulerProcess::Create(o, {}).status().code(), core::StatusCode::kInvalidArgument);
  o.scheduler_conf = "/nonexistent/scheduler.conf";
  SchedulerDeps d;
  d.client = d.status_client = std::make_shared<FakeClient>();
  kube::metrics::Registry reg;
  d.registry = &reg;
  auto p = SchedulerProcess::Create(o, d);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string text = reg.Expose();
  EXPECT_NE(text.find("tephra_scheduler_conf_last_reload_successful 0"), std::string::npos) << text;
  EXPECT_NE(text.find("tephra_scheduler_conf_reloads_total{result=\"rejected\"} 1"), std::string::npos) << text;
  o.disable_default_conf = true;
  SchedulerDeps d2;
  d2.client = d2.status_client = std::make_shared<FakeClient>();
  kube::metrics::Registry reg2;
  d2.registry = &reg2;
  auto fatal = SchedulerProcess::Create(o, d2);
  ASSERT_FALSE(fatal.ok());
  EXPECT_NE(fatal.status().message().find("--disable-default-scheduler-config"), std::string::npos) << fatal.status();
}

}  // namespace
}  // namespace tephra::scheduler
