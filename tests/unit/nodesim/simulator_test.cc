// The simulator loop against the in-memory fake API server. Every wait polls with a deadline.
#include "tephra/nodesim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "testing/fake_client.h"

namespace tephra::nodesim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

template <typename F>
bool PollUntil(F f, milliseconds deadline = milliseconds(5000)) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return f();
}

class SimulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_shared<kube::testing::FakeClient>();
    FlagValues f;
    f.nodes = 3;
    cfg_.groups.push_back(*GroupFromFlags(f));
  }
  void StartSim() {
    SimulatorOptions o;
    o.workers = 2;
    o.heartbeat_workers = 1;
    o.lease_renew_interval = milliseconds(20);
    o.max_grace_seconds = 0;
    o.retry_base_delay = milliseconds(5);
    sim_ = std::make_unique<Simulator>(fake_, nullptr, *ExpandNodes(cfg_), o);
    ASSERT_TRUE(sim_->Start().ok());
  }
  void TearDown() override {
    if (!sim_) return;
    // The fake's Watch does not observe WatchCanceller; end its streams until Stop() has joined.
    std::atomic<bool> done{false};
    std::thread stopper([&] {
      sim_->Stop();
      done = true;
    });
    while (!done) {
      fake_->CloseWatches();
      std::this_thread::sleep_for(milliseconds(1));
    }
    stopper.join();
  }
  json Get(const kube::ResourceInfo& r, const std::string& ns, const std::string& name) {
    auto j = fake_->Get(r, ns, name);
    return j.ok() ? *j : json();
  }
  json Node(const std::string& name) { return Get(Simulator::NodeResource(), "", name); }
  json Pod(const std::string& name) { return Get(Simulator::PodResource(), "ns", name); }
  // Defensive reads: a poll may see the object between writes in any shape; it must not throw.
  std::string Ready(const json& node) {
    if (!node.is_object() || !node.contains("status") || !node["status"].is_object()) return "";
    const json& conds = node["status"].value("conditions", json::array());
    if (!conds.is_array()) return "";
    for (const json& c : conds) {
      if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "");
    }
    return "";
  }
  std::string Phase(const json& pod) {
    if (pod.is_null() || !pod["status"].contains("phase")) return "";
    return pod["status"]["phase"];
  }
  void SeedPod(const std::string& name, const std::string& node, std::map<std::string, std::string> ann,
               json status = {{"phase", "Pending"}}) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}, {"annotations", ann}}},
              {"spec", {{"nodeName", node}, {"containers", {{{"name", "a"}, {"image", "img"}}, {{"name", "b"}, {"image", "img"}}}}}},
              {"status", status}};
    fake_->Seed(Simulator::PodResource(), p);
  }
  int CountActions(const std::string& verb, const std::string& resource, const std::string& name) {
    int n = 0;
    for (const auto& a : fake_->Actions()) n += a.verb == verb && a.resource == resource && a.name == name;
    return n;
  }

  std::shared_ptr<kube::testing::FakeClient> fake_;
  SimConfig cfg_;
  std::unique_ptr<Simulator> sim_;
};

TEST_F(SimulatorTest, RegistersReadyNodesAndLeases) {
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return sim_->RegisteredNodes() == 3; }));
  for (const char* n : {"tephra-sim-0", "tephra-sim-1", "tephra-sim-2"}) {
    json node = Node(n);
    EXPECT_EQ(Ready(node), "True") << n;
    EXPECT_EQ(node["status"]["allocatable"]["nvidia.com/gpu"], "8");
    EXPECT_EQ(node["metadata"]["labels"]["tephra.io/nodesim"], "true");
    ASSERT_TRUE(PollUntil([&] { return !Get(Simulator::LeaseResource(), "kube-node-lease", n).is_null(); })) << n;
    json lease = Get(Simulator::LeaseResource(), "kube-node-lease", n);
    EXPECT_EQ(lease["spec"]["holderIdentity"], n);
    EXPECT_EQ(lease["metadata"]["ownerReferences"][0]["uid"], node["metadata"]["uid"]);
  }
  // Renewals keep coming: the renewTime moves.
  std::string first = Get(Simulator::LeaseResource(), "kube-node-lease", "tephra-sim-0")["spec"]["renewTime"];
  EXPECT_TRUE(PollUntil([&] {
    return Get(Simulator::LeaseResource(), "kube-node-lease", "tephra-sim-0")["spec"]["renewTime"] != first;
  }));
}

TEST_F(SimulatorTest, AdoptsExistingNodeInsteadOfRecreating) {
  json existing = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "tephra-sim-1"}}}};
  std::string uid = fake_->Seed(Simulator::NodeResource(), existing)["metadata"]["uid"];
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return sim_->RegisteredNodes() == 3 && Ready(Node("tephra-sim-1")) == "True"; }));
  EXPECT_EQ(sim_->stats().nodes_adopted.load(), 1);
  EXPECT_EQ(CountActions("create", "nodes", "tephra-sim-1"), 0);
  EXPECT_EQ(Node("tephra-sim-1")["metadata"]["uid"], uid);
}

TEST_F(SimulatorTest, DrivesPodsToSucceededAndFailedIgnoringForeignNodes) {
  SeedPod("ok", "tephra-sim-0", {{kRunSecondsAnnotation, "0"}});
  SeedPod("bad", "tephra-sim-1", {{kRunSecondsAnnotation, "0"}, {"tephra.io/sim-exit-code.b", "2"}});
  SeedPod("foreign", "someone-else", {{kRunSecondsAnnotation, "0"}});
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("ok")) == "Succeeded" && Phase(Pod("bad")) == "Failed"; }))
      << Pod("ok").dump() << Pod("bad").dump();
  json bad = Pod("bad");
  EXPECT_EQ(bad["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(bad["status"]["containerStatuses"][1]["state"]["terminated"]["exitCode"], 2);
  EXPECT_EQ(bad["status"]["hostIP"], "10.0.0.2");
  EXPECT_EQ(Phase(Pod("foreign")), "Pending");
  EXPECT_EQ(CountActions("patch", "pods", "foreign"), 0);
  EXPECT_EQ(CountActions("patch", "pods", "ok"), 2) << "Running, then Succeeded; no repeated writes";
}

TEST_F(SimulatorTest, RunningUntilDeletedThenDeleted) {
  SeedPod("long", "tephra-sim-2", {});
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("long")) == "Running"; }));
  json p = Pod("long");
  EXPECT_EQ(p["status"]["containerStatuses"][0]["ready"], true);
  EXPECT_EQ(p["status"]["podIP"], "10.64.2.2");
  EXPECT_EQ(sim_->stats().pods_finished.load(), 0) << "no run time: runs until deleted";
  // The fake has no grace periods: a finalizer keeps the pod visible with a deletionTimestamp, which is
  // what nodesim reacts to (the grace arithmetic is covered by PlanPod tests).
  ASSERT_TRUE(fake_->Patch(Simulator::PodResource(), "ns", "long", kube::PatchType::kMerge,
                           {{"metadata", {{"finalizers", {"test/hold"}}}}})
                  .ok());
  ASSERT_TRUE(fake_->Delete(Simulator::PodResource(), "ns", "long").ok());
  ASSERT_TRUE(PollUntil([&] { return CountActions("delete", "pods", "long") == 2; }));
  EXPECT_EQ(sim_->stats().pod_deletes.load(), 1);
}

// A pod that is already Failed can still be given a deletionTimestamp the API server does not complete (a
// finalizer, or a graceful delete that raced the final status write, seen in e2e_churn). Only the kubelet
// finishes it. nodesim once watched only unfinished pods, never saw that change, and the pod stayed
// Terminating for ever; its deletes failing for a while must not lose it either.
TEST_F(SimulatorTest, FinishedPodGivenADeletionTimestampIsDeleted) {
  SeedPod("late", "tephra-sim-0", {{kRunSecondsAnnotation, "0"}, {kExitCodeAnnotation, "3"}});
  std::atomic<int> refused{0};
  const auto test_thread = std::this_thread::get_id();  // the test's own delete goes through
  fake_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "delete" && a.resource == "pods" && a.name == "late" && std::this_thread::get_id() != test_thread &&
        refused.load() < 3) {
      refused++;
      return core::UnavailableError("injected 503");
    }
    return std::nullopt;
  });
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("late")) == "Failed"; }));
  EXPECT_EQ(sim_->TrackedPods(), 1u) << "a finished pod stays watched";
  // Terminating after it finished (the finalizer stands in for whatever keeps the server from completing it).
  ASSERT_TRUE(fake_->Patch(Simulator::PodResource(), "ns", "late", kube::PatchType::kMerge,
                           {{"metadata", {{"finalizers", {"test/hold"}}}}})
                  .ok());
  ASSERT_TRUE(fake_->Delete(Simulator::PodResource(), "ns", "late").ok());
  ASSERT_TRUE(PollUntil([&] { return sim_->stats().deletes_confirmed_after_finish.load() == 1; }))
      << "refused " << refused.load() << ", deletes " << CountActions("delete", "pods", "late");
  EXPECT_EQ(refused.load(), 3) << "the failed deletes were retried";
  EXPECT_EQ(sim_->stats().pod_deletes.load(), 1);
  EXPECT_EQ(CountActions("delete", "pods", "late"), 1 + 3 + 1) << "the test's, three refused, one accepted";
}

// A relist after a watch outage: a pod that finished meanwhile is kept (nobody deleted it), one that was
// deleted is dropped, and one that finished and was then given a deletionTimestamp is deleted.
TEST_F(SimulatorTest, RelistKeepsFinishedPodsDropsDeletedOnesAndCompletesTerminatingOnes) {
  SeedPod("done", "tephra-sim-1", {});
  SeedPod("gone", "tephra-sim-1", {});
  SeedPod("held", "tephra-sim-2", {});
  StartSim();
  ASSERT_TRUE(PollUntil([&] {
    return Phase(Pod("done")) == "Running" && Phase(Pod("gone")) == "Running" && Phase(Pod("held")) == "Running";
  }));
  ASSERT_EQ(sim_->TrackedPods(), 3u);
  // The watch is down while these change (no events), then the reflector relists.
  fake_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "watch" && a.resource == "pods") return core::UnavailableError("injected watch outage");
    return std::nullopt;
  });
  fake_->CloseWatches();
  auto finish = [&](const char* name) {
    ASSERT_TRUE(fake_->Patch(Simulator::PodResource(), "ns", name, kube::PatchType::kMerge,
                             {{"status", {{"phase", "Succeeded"}}}}, "status")
                    .ok());
  };
  finish("done");
  finish("held");
  ASSERT_TRUE(fake_->Patch(Simulator::PodResource(), "ns", "held", kube::PatchType::kMerge,
                           {{"metadata", {{"finalizers", {"test/hold"}}}}})
                  .ok());
  ASSERT_TRUE(fake_->Delete(Simulator::PodResource(), "ns", "held").ok());
  ASSERT_TRUE(fake_->Delete(Simulator::PodResource(), "ns", "gone").ok());
  fake_->Compact();  // the next watch from the old resourceVersion gets 410: a relist
  fake_->SetFailureInjector(nullptr);
  ASSERT_TRUE(PollUntil([&] { return sim_->stats().deletes_confirmed_after_finish.load() == 1; }));
  ASSERT_TRUE(PollUntil([&] { return sim_->TrackedPods() == 2; })) << "gone dropped; done and held kept";
  EXPECT_EQ(CountActions("delete", "pods", "held"), 2) << "the test's, then nodesim's";
  EXPECT_EQ(CountActions("delete", "pods", "done"), 0);
  EXPECT_EQ(Phase(Pod("done")), "Succeeded");
}

TEST_F(SimulatorTest, InvalidAnnotationIsAWarningEventNotACrash) {
  SeedPod("odd", "tephra-sim-0", {{kExitCodeAnnotation, "many"}});
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("odd")) == "Running"; }));
  ASSERT_TRUE(PollUntil([&] { return sim_->stats().events.load() == 1; }));
  auto events = fake_->List(Simulator::EventResource(), "ns", {});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0]["reason"], "InvalidSimAnnotation");
  EXPECT_EQ(events->items[0]["type"], "Warning");
  EXPECT_EQ(events->items[0]["involvedObject"]["name"], "odd");
  EXPECT_THAT(events->items[0]["message"].get<std::string>(), ::testing::HasSubstr("\"many\""));
}

TEST_F(SimulatorTest, FaultAnnotationsFailAndHealNodes) {
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return sim_->RegisteredNodes() == 3 && sim_->stats().lease_renewals.load() >= 3; }));
  auto annotate = [&](json ann) {
    ASSERT_TRUE(fake_->Patch(Simulator::NodeResource(), "", "tephra-sim-0", kube::PatchType::kMerge,
                             {{"metadata", {{"annotations", ann}}}})
                    .ok());
  };
  annotate({{kFailAnnotation, "true"}, {kUnhealthyGpusAnnotation, "3"}});
  ASSERT_TRUE(PollUntil([&] {
    json n = Node("tephra-sim-0");
    return Ready(n) == "False" && n["status"]["allocatable"]["nvidia.com/gpu"] == "5";
  })) << Node("tephra-sim-0").dump();
  // The failed node's lease stops while the others keep renewing. A renewal of tephra-sim-0 may have been in
  // flight when the failure was seen; with one heartbeat worker, a completed renewal of another node that
  // began after the failure was visible proves it has landed, so the frozen value is read after one.
  auto renew = [&](const char* n) {
    return Get(Simulator::LeaseResource(), "kube-node-lease", n)["spec"]["renewTime"].get<std::string>();
  };
  auto another_round = [&] {
    std::string other = renew("tephra-sim-1");
    return PollUntil([&] { return renew("tephra-sim-1") != other; });
  };
  ASSERT_TRUE(another_round());
  std::string frozen = renew("tephra-sim-0");
  ASSERT_TRUE(another_round());
  ASSERT_TRUE(another_round());
  EXPECT_EQ(renew("tephra-sim-0"), frozen);

  annotate({{kFailAnnotation, nullptr}, {kUnhealthyGpusAnnotation, nullptr}});
  ASSERT_TRUE(PollUntil([&] {
    json n = Node("tephra-sim-0");
    return Ready(n) == "True" && n["status"]["allocatable"]["nvidia.com/gpu"] == "8";
  }));
  EXPECT_TRUE(PollUntil([&] { return renew("tephra-sim-0") != frozen; }));
}

TEST_F(SimulatorTest, RestartFinishesOverduePodsAtOnce) {
  auto started = core::FormatRfc3339(core::RealClock::Get().WallNow() - seconds(120));
  SeedPod("overdue", "tephra-sim-1", {{kRunSecondsAnnotation, "60"}},
          {{"phase", "Running"}, {"startTime", started}, {"podIP", "10.64.1.9"}});
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("overdue")) == "Succeeded"; }));
  EXPECT_EQ(CountActions("patch", "pods", "overdue"), 1) << "no Running write first";
}

TEST_F(SimulatorTest, RetriesTransientWriteFailures) {
  std::atomic<int> failures{2};
  fake_->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "patch" && a.resource == "pods" && failures.fetch_sub(1) > 0) {
      return core::UnavailableError("injected 503");
    }
    return std::nullopt;
  });
  SeedPod("flaky", "tephra-sim-0", {});
  StartSim();
  EXPECT_TRUE(PollUntil([&] { return Phase(Pod("flaky")) == "Running"; }));
  EXPECT_EQ(sim_->stats().write_errors.load(), 2);
}

}  // namespace
}  // namespace tephra::nodesim

namespace tephra::nodesim {
namespace {

// The simulated Ascend device plugin: a pod bound with the cards the scheduler named runs; one whose cards
// break the ring rule, are taken by a running pod, or are unhealthy fails at admission as a kubelet fails it.
class DevicePluginLoopTest : public SimulatorTest {
 protected:
  void SetUp() override {
    fake_ = std::make_shared<kube::testing::FakeClient>();
    FlagValues f;
    f.nodes = 1;
    f.gpus = 0;
    f.npus = 16;
    f.labels = "accelerator-type=module-910b-16";
    cfg_.groups.push_back(*GroupFromFlags(f));
  }
  void SeedNpuPod(const std::string& name, int cards, const std::string& assigned) {
    json p = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name},
                            {"annotations", {{"huawei.com/Ascend910", assigned}}}}},
              {"spec", {{"nodeName", "tephra-sim-0"},
                        {"containers", {{{"name", "a"}, {"image", "img"},
                                         {"resources", {{"limits", {{"huawei.com/Ascend910", std::to_string(cards)}}}}}}}}}},
              {"status", {{"phase", "Pending"}}}};
    fake_->Seed(Simulator::PodResource(), p);
  }
  std::string Reason(const json& pod) { return pod.is_object() ? pod["status"].value("reason", "") : ""; }
  std::string Message(const json& pod) { return pod.is_object() ? pod["status"].value("message", "") : ""; }
};

TEST_F(DevicePluginLoopTest, MountsGoodCardsAndRefusesBadOnes) {
  SeedNpuPod("ring", 4, "Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-3");
  SeedNpuPod("straddle", 2, "Ascend910-7,Ascend910-8");
  StartSim();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("ring")) == "Running"; })) << Pod("ring").dump();
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("straddle")) == "Failed"; }));
  EXPECT_EQ(Reason(Pod("straddle")), "UnexpectedAdmissionError");
  EXPECT_THAT(Message(Pod("straddle")), ::testing::HasSubstr("inside one HCCS ring of 8"));
  // A card the running pod holds cannot be mounted again.
  SeedNpuPod("taken", 1, "Ascend910-3");
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("taken")) == "Failed"; }));
  EXPECT_THAT(Message(Pod("taken")), ::testing::HasSubstr("Ascend910-3 is in use by another pod"));
  // The device plugin reports a card unhealthy: allocatable drops, and the card is refused.
  auto node = Node("tephra-sim-0");
  node["metadata"]["annotations"]["huawei.com/Ascend910-Unhealthy"] = "Ascend910-9";
  ASSERT_TRUE(fake_->Update(Simulator::NodeResource(), "", node).ok());
  ASSERT_TRUE(PollUntil([&] {
    json n = Node("tephra-sim-0");
    return n.is_object() && n["status"]["allocatable"].value("huawei.com/Ascend910", "") == "15";
  }));
  SeedNpuPod("sick", 1, "Ascend910-9");
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("sick")) == "Failed"; }));
  EXPECT_THAT(Message(Pod("sick")), ::testing::HasSubstr("Ascend910-9 is unhealthy"));
  SeedNpuPod("fine", 1, "Ascend910-10");
  ASSERT_TRUE(PollUntil([&] { return Phase(Pod("fine")) == "Running"; }));
  EXPECT_EQ(sim_->stats().device_refusals.load(), 3);
}

}  // namespace
}  // namespace tephra::nodesim
