// The fault controller (docs/faults.md): what a Node shows through the API, and what is done about it.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "fault/plan.h"
#include "fault/reconciler.h"
#include "tephra/api/codec.h"
#include "testing/fake_client.h"

namespace tephra::reconcilers::fault {
namespace {

using std::chrono::seconds;
const core::Clock::WallTime kNow = core::Clock::WallTime(seconds(1'700'000'000));
std::string Ago(int s) { return core::FormatRfc3339(kNow - seconds(s)); }

api::NodeCondition Cond(const std::string& type, const std::string& status, const std::string& since = "",
                       const std::string& reason = "", const std::string& message = "") {
  api::NodeCondition c;
  c.type = type;
  c.status = status;
  c.last_transition_time = since;
  c.reason = reason;
  c.message = message;
  return c;
}

api::Taint Taint(const std::string& key, const std::string& value, const std::string& effect, const std::string& added = "") {
  api::Taint t;
  t.key = key;
  t.value = value;
  t.effect = effect;
  t.time_added = added;
  return t;
}

api::Node Node(const std::string& name) {
  api::Node n;
  n.metadata.name = name;
  n.status.conditions.push_back(Cond("Ready", "True", Ago(600)));
  return n;
}

void SetReady(api::Node& n, const std::string& status, int since_s) {
  n.status.conditions[0].status = status;
  n.status.conditions[0].last_transition_time = Ago(since_s);
}

api::Pod BatchPod(const std::string& name, const std::string& node, const std::string& job = "train") {
  api::Pod p;
  p.metadata.namespace_ = "ns";
  p.metadata.name = name;
  p.metadata.uid = "uid-" + name;
  p.metadata.annotations["scheduling.k8s.io/group-name"] = job + "-pg";
  p.metadata.annotations["volcano.sh/job-name"] = job;
  api::OwnerReference owner;
  owner.api_version = "batch.volcano.sh/v1alpha1";
  owner.kind = "Job";
  owner.name = job;
  owner.uid = "job-uid";
  owner.controller = true;
  p.metadata.owner_references.push_back(owner);
  p.spec.node_name = node;
  p.status.phase = "Running";
  return p;
}

// A batch pod on node g1 asking for `gpus` nvidia.com/gpu.
api::Pod GpuPod(const std::string& name, int gpus) {
  api::Pod p = BatchPod(name, "g1");
  api::Container c;
  c.name = "c";
  c.resources.requests["nvidia.com/gpu"] = core::Quantity::FromUnits(gpus);
  p.spec.containers.push_back(c);
  return p;
}

Observed Obs(api::Node n, std::vector<api::Pod> pods = {}, int total = 10, int acted = 0) {
  Observed o;
  o.node = std::move(n);
  o.pods = std::move(pods);
  o.nodes_total = total;
  o.nodes_acted = acted;
  o.now = kNow;
  return o;
}

TEST(FaultDetect, NotReadyAfterItsGraceAndTheNodeControllersTaintsAtOnce) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  EXPECT_TRUE(Detect(n, cfg, kNow).empty());
  SetReady(n, "False", 2);  // inside the 5 s grace: not yet, with a recheck when it ends
  std::optional<std::chrono::milliseconds> recheck;
  EXPECT_TRUE(Detect(n, cfg, kNow, &recheck).empty());
  ASSERT_TRUE(recheck.has_value());
  EXPECT_GE(recheck->count(), 3000);
  EXPECT_LE(recheck->count(), 3100);
  SetReady(n, "Unknown", 6);
  auto s = Detect(n, cfg, kNow);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "NotReady");
  EXPECT_TRUE(s[0].node_down);
  EXPECT_NE(s[0].message.find("Unknown"), std::string::npos);
  // The node controller's taint is its own verdict after its grace period: no second wait, one signal.
  api::Node t = Node("n2");
  t.spec.taints.push_back(Taint("node.kubernetes.io/unreachable", "", "NoExecute", Ago(1)));
  s = Detect(t, cfg, kNow);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].node_down);
  SetReady(t, "Unknown", 1);
  EXPECT_EQ(Detect(t, cfg, kNow).size(), 1u);
  // The NoSchedule variant only mirrors the condition: a new node carries it until its first Ready report.
  api::Node fresh = Node("n3");
  fresh.spec.taints.push_back(Taint("node.kubernetes.io/not-ready", "", "NoSchedule", Ago(100)));
  EXPECT_TRUE(Detect(fresh, cfg, kNow).empty());
}

TEST(FaultDetect, ConfiguredConditionsAndTaintsOnly) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  n.status.conditions.push_back(Cond("GpuXidError", "True", Ago(1), "Xid79", "GPU has fallen off the bus"));
  n.status.conditions.push_back(Cond("KernelDeadlock", "False"));
  n.status.conditions.push_back(Cond("SomethingElse", "True"));
  n.spec.taints.push_back(Taint("nvidia.com/gpu-xid-error", "true", "NoSchedule"));
  n.spec.taints.push_back(Taint("dedicated", "ml", "NoSchedule"));
  auto s = Detect(n, cfg, kNow);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "GpuXidError");
  EXPECT_FALSE(s[0].node_down);  // the kubelet is there to finish a graceful delete
  EXPECT_NE(s[0].message.find("fallen off the bus"), std::string::npos);
  EXPECT_EQ(s[1].name, "taint:nvidia.com/gpu-xid-error");
  EXPECT_EQ(Fingerprint(s), "GpuXidError,taint:nvidia.com/gpu-xid-error");
  cfg.conditions = {"SomethingElse"};
  cfg.taints.clear();
  s = Detect(n, cfg, kNow);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "SomethingElse");
}

TEST(FaultDetect, DeviceReportsNameTheirCardsAndAllocatableDropsTheResource) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  n.metadata.annotations["huawei.com/Ascend910-Unhealthy"] = "Ascend910-3";
  n.metadata.annotations["huawei.com/Ascend910-NetworkUnhealthy"] = "Ascend910-5";
  n.status.capacity["huawei.com/Ascend910"] = core::Quantity::FromUnits(16);
  n.status.allocatable["huawei.com/Ascend910"] = core::Quantity::FromUnits(14);
  n.status.capacity["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  n.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(7);
  auto s = Detect(n, cfg, kNow);
  ASSERT_EQ(s.size(), 2u);  // the Ascend list stands for its allocatable drop
  EXPECT_EQ(s[0].cards, (std::vector<std::string>{"Ascend910-3", "Ascend910-5"}));
  EXPECT_EQ(s[1].resource, "nvidia.com/gpu");
  EXPECT_TRUE(s[1].cards.empty());
  EXPECT_EQ(Fingerprint(s), "DeviceUnhealthy:Ascend910-3,DeviceUnhealthy:Ascend910-5,DeviceUnhealthy:nvidia.com/gpu");
  api::Node g = Node("g1");
  g.metadata.annotations["volcano.sh/node-vgpu-register"] =
      "GPU-a,10,16000,NVIDIA-T4,true,hami-core:GPU-b,10,16000,NVIDIA-T4,false,hami-core:GPU-c,10,16000,NVIDIA-T4,true,hami-core:";
  g.metadata.annotations["volcano.sh/gpu-unhealthy-ids"] = "2";
  s = Detect(g, cfg, kNow);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].cards, (std::vector<std::string>{"GPU-b", "GPU-c"}));
  cfg.device_faults = false;
  EXPECT_TRUE(Detect(g, cfg, kNow).empty());
}

TEST(FaultPlan, DeadNodeForcesTheDeleteOfItsBatchPodsAndRecordsOnce) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  SetReady(n, "Unknown", 30);
  api::Pod daemon = BatchPod("agent", "n1");
  daemon.metadata.annotations.clear();  // no PodGroup: not a batch pod, left to Kubernetes
  api::Pod done = BatchPod("done", "n1");
  done.status.phase = "Succeeded";
  Actions a = Plan(Obs(n, {BatchPod("train-w-0", "n1"), daemon, done}), cfg);
  ASSERT_TRUE(a.fault_annotation.has_value());
  EXPECT_EQ(**a.fault_annotation, "NotReady");
  ASSERT_TRUE(a.since_annotation.has_value() && a.since_annotation->has_value());
  EXPECT_EQ(**a.since_annotation, core::FormatRfc3339(kNow));
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].name, "train-w-0");
  EXPECT_EQ(a.deletes[0].grace_seconds, std::optional<int64_t>(0));
  EXPECT_EQ(a.deletes[0].uid, "uid-train-w-0");
  EXPECT_EQ(a.deletes[0].job_kind, "Job");
  EXPECT_EQ(a.deletes[0].job_uid, "job-uid");
  ASSERT_EQ(a.events.size(), 2u);
  EXPECT_EQ(a.events[0].reason, "FaultDetected");
  EXPECT_EQ(a.events[1].reason, "PodFaultRestart");
  EXPECT_EQ(a.events[1].on, EventRecord::On::kJob);
  ASSERT_EQ(a.detected.size(), 1u);
  EXPECT_FALSE(a.cordon.has_value());  // --fault-cordon is off by default
  // Recorded: the next pass says nothing again; a pod still terminating on the dead node is forced again,
  // without a second job Event.
  n.metadata.annotations[kFaultAnnotation] = "NotReady";
  n.metadata.annotations[kSinceAnnotation] = Ago(30);
  api::Pod stuck = BatchPod("train-w-0", "n1");
  stuck.metadata.deletion_timestamp = Ago(1);
  a = Plan(Obs(n, {stuck}, 10, 1), cfg);
  EXPECT_FALSE(a.fault_annotation.has_value());
  EXPECT_FALSE(a.since_annotation.has_value());  // the first time stays
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].grace_seconds, std::optional<int64_t>(0));
  EXPECT_TRUE(a.events.empty());
  EXPECT_TRUE(a.detected.empty());
}

TEST(FaultPlan, LiveNodeGivesPodsTheirOwnGraceAndLeavesTerminatingOnesToTheKubelet) {
  FaultConfig cfg;
  cfg.cordon = true;
  api::Node n = Node("n1");
  n.status.conditions.push_back(Cond("GpuXidError", "True", Ago(1)));
  Actions a = Plan(Obs(n, {BatchPod("w-0", "n1")}), cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_FALSE(a.deletes[0].grace_seconds.has_value());  // SIGTERM, the pod's terminationGracePeriodSeconds
  EXPECT_EQ(a.cordon, std::optional<bool>(true));
  api::Pod terminating = BatchPod("w-0", "n1");
  terminating.metadata.deletion_timestamp = Ago(1);
  n.metadata.annotations[kFaultAnnotation] = "GpuXidError";
  n.spec.unschedulable = true;
  a = Plan(Obs(n, {terminating}, 10, 1), cfg);
  EXPECT_TRUE(a.deletes.empty());
  EXPECT_FALSE(a.cordon.has_value());
}

TEST(FaultPlan, OnlyThePodsHoldingBadCardsAreStranded) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  n.metadata.annotations["huawei.com/Ascend910-Unhealthy"] = "Ascend910-9";
  api::Pod left = BatchPod("left", "n1");
  left.metadata.annotations["huawei.com/Ascend910"] = "Ascend910-0,Ascend910-1";
  api::Pod right = BatchPod("right", "n1");
  right.metadata.annotations["huawei.com/Ascend910"] = "Ascend910-8,Ascend910-9";
  Actions a = Plan(Obs(n, {left, right}), cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].name, "right");
  EXPECT_EQ(a.deletes[0].signal, "DeviceUnhealthy");
  // An allocatable drop without a list: only when the pods ask for more than is left healthy.
  api::Node g = Node("g1");
  g.status.capacity["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  g.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(7);
  EXPECT_TRUE(Plan(Obs(g, {GpuPod("a", 4), GpuPod("b", 2)}), cfg).deletes.empty());  // 6 of 7 healthy: the bad one is idle
  a = Plan(Obs(g, {GpuPod("a", 4), GpuPod("b", 4)}), cfg);  // 8 > 7: one of them holds it
  EXPECT_EQ(a.deletes.size(), 2u);
}

api::Pod FailedAt(api::Pod p, const std::string& finished, const std::string& reason = "Error") {
  p.status.phase = "Failed";
  api::ContainerStatus cs;
  cs.name = "c";
  cs.state.terminated.emplace();
  cs.state.terminated->exit_code = 1;
  cs.state.terminated->reason = reason;
  cs.state.terminated->finished_at = finished;
  p.status.container_statuses.push_back(cs);
  return p;
}

TEST(FaultPlan, AscendLabelsChooseGraceForceOffAndTheWholeJob) {
  FaultConfig cfg;
  api::Node n = Node("n1");
  n.status.conditions.push_back(Cond("GpuXidError", "True", Ago(1)));
  api::Pod here = BatchPod("w-0", "n1");
  api::Pod elsewhere = BatchPod("w-1", "n2");
  Observed o = Obs(n, {here});
  o.groups["ns/train-pg"] = {here, elsewhere};

  // force, with the label on the job: forced deletes, and the whole job goes (no pod-rescheduling: on).
  o.jobs["ns/train"].labels["fault-scheduling"] = "force";
  Actions a = Plan(o, cfg);
  ASSERT_EQ(a.deletes.size(), 2u);
  EXPECT_EQ(a.deletes[0].name, "w-0");
  EXPECT_EQ(a.deletes[1].name, "w-1");
  EXPECT_EQ(a.deletes[1].grace_seconds, std::optional<int64_t>(0));
  EXPECT_TRUE(std::any_of(a.events.begin(), a.events.end(), [](const EventRecord& e) {
    return e.reason == "JobFaultRestart" && e.message.find("fault-scheduling=force") != std::string::npos;
  }));

  // grace + pod-rescheduling: on (on the pod): only the pod on the fault, with the job's checkpoint grace.
  o.jobs["ns/train"].labels["fault-scheduling"] = "grace";
  o.jobs["ns/train"].annotations["tephra.io/fault-grace-seconds"] = "120";
  o.pods[0].metadata.labels["pod-rescheduling"] = "on";
  a = Plan(o, cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].grace_seconds, std::optional<int64_t>(120));

  // A dead node forces whatever the job asks: nothing else would finish the delete.
  Observed dead = o;
  SetReady(dead.node, "Unknown", 60);
  a = Plan(dead, cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].grace_seconds, std::optional<int64_t>(0));

  // off: nothing deleted; the job hears once, when the fault is recorded.
  o.pods[0].metadata.labels["fault-scheduling"] = "off";  // the pod's label wins over the job's
  a = Plan(o, cfg);
  EXPECT_TRUE(a.deletes.empty());
  EXPECT_TRUE(std::any_of(a.events.begin(), a.events.end(), [](const EventRecord& e) { return e.reason == "PodFaultIgnored"; }));
  o.node.metadata.annotations[kFaultAnnotation] = "GpuXidError";
  o.nodes_acted = 1;
  a = Plan(o, cfg);
  EXPECT_TRUE(a.deletes.empty());
  EXPECT_TRUE(a.events.empty());

  // An unreadable grace is ignored, not trusted.
  api::Pod odd = BatchPod("x", "n1");
  odd.metadata.annotations["tephra.io/fault-grace-seconds"] = "-3";
  EXPECT_FALSE(PolicyOf(odd, nullptr).grace_seconds.has_value());
  EXPECT_FALSE(PolicyOf(odd, nullptr).whole_job);
}

TEST(FaultPlan, PodsThatFailedAroundTheFaultAreReplacedOldFailuresAreNot) {
  FaultConfig cfg;
  api::Node g = Node("g1");
  g.status.capacity["nvidia.com/gpu"] = core::Quantity::FromUnits(8);
  g.status.allocatable["nvidia.com/gpu"] = core::Quantity::FromUnits(7);
  g.metadata.annotations[kSinceAnnotation] = Ago(5);
  g.metadata.annotations[kFaultAnnotation] = "DeviceUnhealthy:nvidia.com/gpu";
  // The pod on the bad card crashed: 4 of 7 healthy are asked for now, but the failed one was the victim.
  api::Pod crashed = FailedAt(GpuPod("a", 4), Ago(3));
  api::Pod old = FailedAt(GpuPod("old", 1), Ago(3600));
  Actions a = Plan(Obs(g, {crashed, GpuPod("b", 3), old}, 10, 1), cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].name, "a");
  EXPECT_EQ(a.deletes[0].grace_seconds, std::optional<int64_t>(0));  // nothing runs in it
  EXPECT_TRUE(std::any_of(a.events.begin(), a.events.end(), [](const EventRecord& e) {
    return e.reason == "PodFaultRestart" && e.message.find("pod a failed on node g1 during a fault") != std::string::npos;
  }));
}

TEST(FaultPlan, PodsRefusedAtAdmissionAreReplacedAndTheNodeAvoided) {
  FaultConfig cfg;
  api::Node n = Node("n1");  // no signal of its own
  api::Pod refused = BatchPod("w-3", "n1");
  refused.status.phase = "Failed";
  refused.status.reason = "UnexpectedAdmissionError";
  refused.status.message = "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu";
  api::Pod plain = refused;
  plain.metadata.name = "web";
  plain.metadata.annotations.clear();  // not a batch pod: Kubernetes' business
  Actions a = Plan(Obs(n, {refused, plain}), cfg);
  ASSERT_EQ(a.deletes.size(), 1u);
  EXPECT_EQ(a.deletes[0].name, "w-3");
  EXPECT_EQ(a.deletes[0].signal, "UnexpectedAdmissionError");
  ASSERT_EQ(a.detected.size(), 1u);
  EXPECT_EQ(a.avoid_annotation, std::optional<std::optional<std::string>>(core::FormatRfc3339(kNow + cfg.avoid_after_clear)));
  EXPECT_FALSE(a.fault_annotation.has_value());  // no signal to clear it later: a window instead
  EXPECT_TRUE(std::any_of(a.events.begin(), a.events.end(), [](const EventRecord& e) {
    return e.on == EventRecord::On::kNode && e.reason == "FaultDetected" &&
           e.message.find("UnexpectedAdmissionError: pod ns/w-3") != std::string::npos;
  }));
  // Once deleted, nothing is left to do but let the window run out.
  n.metadata.annotations[kAvoidUntilAnnotation] = **a.avoid_annotation;
  a = Plan(Obs(n, {}), cfg);
  EXPECT_TRUE(a.deletes.empty());
  EXPECT_FALSE(a.avoid_annotation.has_value());
  EXPECT_TRUE(a.requeue_after.has_value());
}

TEST(FaultPlan, AGraceRecheckIsNotPushedBackByTheAvoidanceWindow) {
  // A healed node, still avoided for 100 s, dies: its NotReady grace ends in 4 s, and a dead node sends no
  // update that would bring it back before the window's end.
  FaultConfig cfg;
  api::Node n = Node("n1");
  SetReady(n, "False", 1);
  n.metadata.annotations[kAvoidUntilAnnotation] = core::FormatRfc3339(kNow + seconds(100));
  Actions a = Plan(Obs(n), cfg);
  ASSERT_TRUE(a.requeue_after.has_value());
  EXPECT_LE(*a.requeue_after, std::chrono::milliseconds(4100));
}

TEST(FaultPlan, TheNodeBudgetHoldsNewFaultsAndSaysSoOnce) {
  FaultConfig cfg;
  cfg.max_node_fraction = 0.2;  // 2 of 10
  api::Node n = Node("n3");
  SetReady(n, "False", 60);
  Actions a = Plan(Obs(n, {BatchPod("w", "n3")}, 10, 2), cfg);
  EXPECT_TRUE(a.deletes.empty());
  EXPECT_FALSE(a.fault_annotation.has_value());
  ASSERT_TRUE(a.held_annotation.has_value());
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].reason, "FaultActionsHeld");
  EXPECT_NE(a.events[0].message.find("2 of 10"), std::string::npos) << a.events[0].message;
  n.metadata.annotations[kHeldAnnotation] = "NotReady";
  a = Plan(Obs(n, {BatchPod("w", "n3")}, 10, 2), cfg);
  EXPECT_TRUE(a.events.empty());  // said once
  EXPECT_TRUE(a.requeue_after.has_value());
  // Room again: acted on, the hold removed.
  a = Plan(Obs(n, {BatchPod("w", "n3")}, 10, 1), cfg);
  EXPECT_EQ(a.deletes.size(), 1u);
  ASSERT_TRUE(a.held_annotation.has_value());
  EXPECT_FALSE(a.held_annotation->has_value());
  // A node already being handled keeps being handled whatever the count.
  n.metadata.annotations.erase(kHeldAnnotation);
  n.metadata.annotations[kFaultAnnotation] = "NotReady";
  EXPECT_EQ(Plan(Obs(n, {BatchPod("w", "n3")}, 10, 5), cfg).deletes.size(), 1u);
  // The budget counts nodes acted on within the window: one that died an hour ago no longer uses it.
  api::Node old_dead = Node("old");
  old_dead.metadata.annotations[kFaultAnnotation] = "NotReady";
  old_dead.metadata.annotations[kSinceAnnotation] = Ago(3600);
  EXPECT_FALSE(CountsAgainstBudget(old_dead, cfg, kNow));
  old_dead.metadata.annotations[kSinceAnnotation] = Ago(60);
  EXPECT_TRUE(CountsAgainstBudget(old_dead, cfg, kNow));
  old_dead.metadata.annotations[kSinceAnnotation] = "garbage";  // unreadable: counted, to be safe
  EXPECT_TRUE(CountsAgainstBudget(old_dead, cfg, kNow));
  EXPECT_FALSE(CountsAgainstBudget(Node("healthy"), cfg, kNow));
  // At least one node, however small the cluster.
  EXPECT_EQ(Plan(Obs(Node("x"), {}, 3, 0), cfg).deletes.size(), 0u);
  api::Node small = Node("s");
  SetReady(small, "False", 60);
  EXPECT_TRUE(Plan(Obs(small, {}, 3, 0), cfg).fault_annotation.has_value());
}

TEST(FaultPlan, ClearingUncordonsAndKeepsTheSchedulerAwayForAWhile) {
  FaultConfig cfg;
  cfg.avoid_after_clear = seconds(60);
  api::Node n = Node("n1");
  n.metadata.annotations[kFaultAnnotation] = "GpuXidError";
  n.metadata.annotations[kCordonedAnnotation] = "true";
  n.metadata.annotations[kSinceAnnotation] = Ago(100);
  n.spec.unschedulable = true;
  Actions a = Plan(Obs(n), cfg);
  ASSERT_TRUE(a.fault_annotation.has_value());
  EXPECT_FALSE(a.fault_annotation->has_value());
  ASSERT_TRUE(a.since_annotation.has_value());
  EXPECT_FALSE(a.since_annotation->has_value());
  EXPECT_EQ(a.cordon, std::optional<bool>(false));
  ASSERT_TRUE(a.avoid_annotation.has_value() && a.avoid_annotation->has_value());
  EXPECT_EQ(**a.avoid_annotation, core::FormatRfc3339(kNow + seconds(60)));
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].reason, "FaultCleared");
  // A node someone else cordoned stays cordoned.
  n.metadata.annotations.erase(kCordonedAnnotation);
  EXPECT_FALSE(Plan(Obs(n), cfg).cordon.has_value());
  // The avoidance ends on time.
  api::Node healed = Node("n1");
  healed.metadata.annotations[kAvoidUntilAnnotation] = core::FormatRfc3339(kNow + seconds(20));
  a = Plan(Obs(healed), cfg);
  EXPECT_FALSE(a.avoid_annotation.has_value());
  ASSERT_TRUE(a.requeue_after.has_value());
  EXPECT_GE(a.requeue_after->count(), 20000);
  healed.metadata.annotations[kAvoidUntilAnnotation] = Ago(1);
  a = Plan(Obs(healed), cfg);
  ASSERT_TRUE(a.avoid_annotation.has_value());
  EXPECT_FALSE(a.avoid_annotation->has_value());
}

TEST(FaultReconciler, RecordsOnTheNodeAndDeletesWithTheUidPrecondition) {
  auto fc = std::make_shared<kube::testing::FakeClient>();
  api::Node n = Node("n1");
  n.status.conditions[0].status = "False";
  n.status.conditions[0].last_transition_time = core::FormatRfc3339(core::RealClock::Get().WallNow() - seconds(60));
  fc->Seed(api::Node::Resource(), api::ToJson(n));
  api::Pod p = BatchPod("w-0", "n1");
  p.metadata.uid.clear();
  api::json stored = fc->Seed(api::Pod::Resource(), api::ToJson(p));
  api::PodGroup pg;
  pg.metadata.namespace_ = "ns";
  pg.metadata.name = "train-pg";
  pg.spec.min_member = 1;
  api::PodGroupCondition scheduled;  // the scheduler's condition stays as it is
  scheduled.type = "Scheduled";
  scheduled.status = "True";
  pg.status.conditions.push_back(scheduled);
  fc->Seed(api::PodGroup::Resource(), api::ToJson(pg));
  kube::Informer<api::Node> nodes(fc);
  kube::Informer<api::Pod> pods(fc);
  kube::Informer<api::PodGroup> groups(fc);
  FaultReconciler::AddIndexers(pods);
  auto options = [&](kube::metrics::Registry* reg) {
    FaultReconcilerOptions o;
    o.client = fc;
    o.nodes = &nodes;
    o.pods = &pods;
    o.pod_groups = &groups;
    o.registry = reg;
    return o;
  };
  kube::metrics::Registry reg;
  FaultReconciler r(options(&reg));
  kube::ControllerOptions co;
  co.name = "fault-controller";
  kube::Controller controller(std::move(co), &r);  // not started: only its handlers are wanted
  r.RegisterHandlers(controller);
  nodes.Start();
  pods.Start();
  groups.Start();
  ASSERT_TRUE(nodes.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  ASSERT_TRUE(pods.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  ASSERT_TRUE(groups.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  // The FaultRecovery condition as the cache sees it: "<status>/<reason>", "" when absent.
  auto condition = [&] {
    auto g = groups.Get("ns", "train-pg");
    if (!g) return std::string("no podgroup");
    std::string out;
    for (const auto& c : g->status.conditions)
      if (c.type == kFaultConditionType) out = c.status + "/" + c.reason;
    if (g->status.conditions.empty() || g->status.conditions[0].type != "Scheduled") out += " (Scheduled lost)";
    return out;
  };
  auto wait_condition = [&](const std::string& want) {
    for (int i = 0; i < 200 && condition() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return condition();
  };
  auto res = r.Reconcile("n1");
  EXPECT_TRUE(res.status.ok()) << res.status;
  auto got = fc->Get(api::Node::Resource(), "", "n1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["metadata"]["annotations"]["tephra.io/fault"], "NotReady");
  EXPECT_FALSE(fc->Get(api::Pod::Resource(), "ns", "w-0").ok());  // forced: gone at once
  EXPECT_NE(reg.Expose().find("tephra_fault_pods_deleted_total{signal=\"NotReady\",forced=\"true\"} 1"), std::string::npos)
      << reg.Expose();
  EXPECT_NE(reg.Expose().find("tephra_fault_detected_total{signal=\"NotReady\"} 1"), std::string::npos);
  // The PodGroup says it is recovering, next to the scheduler's condition.
  EXPECT_EQ(condition(), "");
  res = r.Reconcile("pg/ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_EQ(wait_condition("True/NotReady"), "True/NotReady");
  // The job's replacement runs elsewhere: its recovery time is observed once, when it runs as many pods as
  // before the fault (one).
  EXPECT_EQ(reg.Expose().find("tephra_fault_recovery_seconds_count"), std::string::npos);
  api::Pod again = BatchPod("w-0", "n2");
  again.metadata.uid.clear();
  again.status.phase = "Pending";
  fc->Seed(api::Pod::Resource(), api::ToJson(again));
  auto cur = fc->Get(api::Pod::Resource(), "ns", "w-0");
  ASSERT_TRUE(cur.ok());
  (*cur)["status"]["phase"] = "Running";
  ASSERT_TRUE(fc->Update(api::Pod::Resource(), "ns", *cur, "status").ok());
  auto observed = [&] {
    return reg.Expose().find("tephra_fault_recovery_seconds_count{signal=\"NotReady\"} 1") != std::string::npos;
  };
  for (int i = 0; i < 200 && !observed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(observed()) << reg.Expose();
  res = r.Reconcile("pg/ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_EQ(wait_condition("False/Recovered"), "False/Recovered");

  // A controller that stopped mid-recovery left True behind: a new one ends it once the gang runs.
  auto left = fc->Get(api::PodGroup::Resource(), "ns", "train-pg");
  ASSERT_TRUE(left.ok());
  (*left)["status"]["conditions"][1]["status"] = "True";
  ASSERT_TRUE(fc->Update(api::PodGroup::Resource(), "ns", *left).ok());
  EXPECT_EQ(wait_condition("True/Recovered"), "True/Recovered");
  kube::metrics::Registry reg2;
  FaultReconciler restarted(options(&reg2));
  res = restarted.Reconcile("pg/ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_EQ(wait_condition("False/Recovered"), "False/Recovered");
  nodes.Stop();
  pods.Stop();
  groups.Stop();
}

}  // namespace
}  // namespace tephra::reconcilers::fault
