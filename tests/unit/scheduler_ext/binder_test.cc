#include <algorithm>
#include <atomic>
#include <mutex>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/sched/scheduler.h"
#include "tephra/scheduler/binder.h"
#include "tephra/scheduler/status_writer.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

auto Deadline() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

// A core with one 4-cpu node and a gang of `n` one-cpu pods, run until the gang is placed (binds emitted,
// tasks in kBinding), plus the same pods stored in a FakeClient.
struct Fixture {
  std::shared_ptr<FakeClient> fc = std::make_shared<FakeClient>();
  std::unique_ptr<sched::Scheduler> s;
  std::vector<sched::BindDecision> binds;
  std::vector<std::string> uids;  // of p0, p1, ...
  std::mutex mu;

  explicit Fixture(int n) {
    auto c = sched::Scheduler::Create(sched::SchedulerConf::Default());
    EXPECT_TRUE(c.ok()) << c.status();
    s = std::move(*c);
    auto& st = s->state();
    sched::QueueInfo q;
    q.name = "default";
    st.UpsertQueue(q);
    sched::NodeInfo node;
    node.name = "n1";
    node.allocatable = sched::Resource::CpuMem(4000, 8LL << 30).With(sched::kPods, 110);
    st.UpsertNode(node);
    sched::JobInfo j;
    j.key = "ns/pg";
    j.ns = "ns";
    j.name = "pg";
    j.min_member = n;
    st.UpsertJob(j);
    for (int i = 0; i < n; ++i) {
      sched::TaskInfo t;
      t.ns = "ns";
      t.name = "p" + std::to_string(i);
      json stored = fc->Seed(api::Pod::Resource(), {{"apiVersion", "v1"}, {"kind", "Pod"},
                                                    {"metadata", {{"name", t.name}, {"namespace", "ns"}}},
                                                    {"spec", {{"schedulerName", "volcano"}, {"containers", json::array()}}}});
      t.uid = stored["metadata"]["uid"].get<std::string>();  // the API's uid: pods/binding checks it
      uids.push_back(t.uid);
      t.job = "ns/pg";
      t.request = sched::Resource::CpuMem(1000, 1LL << 30);
      t.creation_index = static_cast<uint64_t>(i);
      st.UpsertPod(t);
    }
    for (int cycle = 0; cycle < 5 && binds.empty(); ++cycle) binds = s->RunCycle(sched::WallTime{}).binds;
    EXPECT_EQ(binds.size(), static_cast<size_t>(n));
    for (const auto& b : binds) EXPECT_EQ(s->state().FindTask(b.task_uid)->status, sched::TaskStatus::kBinding);
  }
  sched::TaskStatus StatusOf(const std::string& uid) {
    std::lock_guard l(mu);
    return s->state().FindTask(uid)->status;
  }
};

TEST(BinderTest, ClassifiesBindStatuses) {
  EXPECT_EQ(ClassifyBind(core::Status::OK()), BindResult::kBound);
  EXPECT_EQ(ClassifyBind(core::Status(core::StatusCode::kAborted, "already assigned").WithHttp(409, "Conflict")),
            BindResult::kAlreadyAssigned);
  EXPECT_EQ(ClassifyBind(core::NotFoundError("pods \"x\" not found")), BindResult::kFailed);
  EXPECT_EQ(ClassifyBind(core::UnavailableError("timeout")), BindResult::kFailed);
}

TEST(BinderTest, BindsAndTreatsAlreadyAssignedAsBound) {
  Fixture f(2);
  // Someone (e.g. this scheduler before a restart) already bound p1: the API answers 409.
  ASSERT_TRUE(f.fc->Bind("ns", "p1", f.uids[1], "n1").ok());
  std::vector<BindOutcome> outcomes;
  Binder b(f.fc, 4, [&](const BindOutcome& o) {
    std::lock_guard l(f.mu);
    outcomes.push_back(o);
    EXPECT_TRUE(ApplyBindOutcome(f.s->state(), o).empty());
  });
  b.Submit(f.binds);
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  ASSERT_EQ(outcomes.size(), 2u);
  for (const auto& o : outcomes)
    EXPECT_EQ(o.result, o.decision.name == "p1" ? BindResult::kAlreadyAssigned : BindResult::kBound) << o.decision.name;
  EXPECT_EQ(f.StatusOf(f.uids[0]), sched::TaskStatus::kBound);
  EXPECT_EQ(f.StatusOf(f.uids[1]), sched::TaskStatus::kBound) << "409: assumption kept until the informer brings the truth";
  auto pod = f.fc->Get(api::Pod::Resource(), "ns", "p0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["nodeName"], "n1");
}

// Unbound pods "<name>" in namespace ns; returns their uids.
std::vector<std::string> SeedPods(FakeClient& fc, std::initializer_list<const char*> names) {
  std::vector<std::string> uids;
  for (const char* name : names) {
    json stored = fc.Seed(api::Pod::Resource(), {{"apiVersion", "v1"}, {"kind", "Pod"},
                                                 {"metadata", {{"name", name}, {"namespace", "ns"}}},
                                                 {"spec", {{"containers", json::array()}}}});
    uids.push_back(stored["metadata"]["uid"].get<std::string>());
  }
  return uids;
}

// Kubernetes' PreBind for WaitForFirstConsumer claims: the claim learns its node before the pod is bound; a
// claim that cannot be written fails the bind, and the pod is not bound.
TEST(BinderTest, NamesTheNodeOnWaitingClaimsBeforeBinding) {
  auto fc = std::make_shared<FakeClient>();
  fc->Seed(api::PersistentVolumeClaim::Resource(),
           {{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", {{"name", "data"}, {"namespace", "ns"}}},
            {"spec", {{"storageClassName", "fast"}}}});
  std::vector<std::string> uids = SeedPods(*fc, {"p0", "p1"});
  std::vector<BindOutcome> outcomes;
  std::mutex mu;
  Binder b(fc, 1, [&](const BindOutcome& o) {
    std::lock_guard l(mu);
    outcomes.push_back(o);
  });
  b.Submit({{uids[0], "ns", "p0", "n1", "ns/pg", {"data"}}});
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  b.Submit({{uids[1], "ns", "p1", "n2", "ns/pg2", {"missing"}}});
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].result, BindResult::kBound);
  auto pvc = fc->Get(api::PersistentVolumeClaim::Resource(), "ns", "data");
  ASSERT_TRUE(pvc.ok());
  EXPECT_EQ((*pvc)["metadata"]["annotations"]["volume.kubernetes.io/selected-node"], "n1");
  EXPECT_EQ((*fc->Get(api::Pod::Resource(), "ns", "p0"))["spec"]["nodeName"], "n1");
  EXPECT_EQ(outcomes[1].result, BindResult::kFailed);
  EXPECT_NE(outcomes[1].status.ToString().find("naming node n2 on claim ns/missing"), std::string::npos)
      << outcomes[1].status.ToString();
  EXPECT_FALSE((*fc->Get(api::Pod::Resource(), "ns", "p1"))["spec"].contains("nodeName"));
}

// Kubernetes' PreBind for a pre-created volume chosen for a WaitForFirstConsumer claim: the volume's claimRef
// names the claim before the pod is bound; a volume that names another claim by then fails the bind, and the
// pod is not bound; a volume already naming the claim is left as it is.
TEST(BinderTest, WritesTheClaimIntoTheChosenVolumeBeforeBinding) {
  auto fc = std::make_shared<FakeClient>();
  auto pv = [&](const std::string& name, json claim_ref) {
    json spec = {{"capacity", {{"storage", "1Ti"}}}};
    if (!claim_ref.is_null()) spec["claimRef"] = claim_ref;
    fc->Seed(api::PersistentVolume::Resource(),
             {{"apiVersion", "v1"}, {"kind", "PersistentVolume"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  };
  pv("local-a", nullptr);
  pv("local-b", {{"namespace", "other"}, {"name", "theirs"}});
  pv("local-c", {{"namespace", "ns"}, {"name", "mine"}});
  std::vector<std::string> uids = SeedPods(*fc, {"p0", "p1", "p2"});
  std::vector<BindOutcome> outcomes;
  std::mutex mu;
  Binder b(fc, 1, [&](const BindOutcome& o) {
    std::lock_guard l(mu);
    outcomes.push_back(o);
  });
  auto decision = [&](int i, const std::string& claim, const std::string& volume) {
    sched::BindDecision d{uids[static_cast<size_t>(i)], "ns", "p" + std::to_string(i), "n1", "ns/pg" + std::to_string(i), {}};
    d.bind_volumes.push_back({claim, "uid-" + claim, volume});
    return d;
  };
  b.Submit({decision(0, "data", "local-a")});
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  b.Submit({decision(1, "data1", "local-b")});
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  b.Submit({decision(2, "mine", "local-c")});
  ASSERT_TRUE(b.WaitIdle(Deadline()));
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].result, BindResult::kBound);
  json ref = (*fc->Get(api::PersistentVolume::Resource(), "", "local-a"))["spec"]["claimRef"];
  EXPECT_EQ(ref["namespace"], "ns");
  EXPECT_EQ(ref["name"], "data");
  EXPECT_EQ(ref["uid"], "uid-data");
  EXPECT_EQ(ref["kind"], "PersistentVolumeClaim");
  EXPECT_EQ((*fc->Get(api::Pod::Resource(), "ns", "p0"))["spec"]["nodeName"], "n1");
  EXPECT_EQ(outcomes[1].result, BindResult::kFailed);
  EXPECT_NE(outcomes[1].status.ToString().find("bound to claim other/theirs"), std::string::npos) << outcomes[1].status.ToString();
  EXPECT_FALSE((*fc->Get(api::Pod::Resource(), "ns", "p1"))["spec"].contains("nodeName"));
  EXPECT_EQ(outcomes[2].result, BindResult::kBound);
}

TEST(BinderTest, FailureRollsBackTheGangAndDropsItsQueuedBinds) {
  Fixture f(3);
  const std::string first = f.binds[0].name;
  f.fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "bind" && a.name == first) return core::Status(core::StatusCode::kInternal, "node is gone").WithHttp(500);
    return std::nullopt;
  });
  std::vector<std::string> rolled;
  std::unique_ptr<Binder> b;
  size_t dropped = 0;
  // One worker: the other two binds are still queued when the first fails, so they must never be sent.
  b = std::make_unique<Binder>(f.fc, 1, [&](const BindOutcome& o) {
    std::vector<std::string> r;
    {
      std::lock_guard l(f.mu);
      r = ApplyBindOutcome(f.s->state(), o);
    }
    if (!r.empty()) {
      dropped += b->Drop(r);
      rolled = r;
    }
  });
  b->Submit(f.binds);
  ASSERT_TRUE(b->WaitIdle(Deadline()));
  std::vector<std::string> want = f.uids;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(rolled, want);
  EXPECT_EQ(dropped, 2u);
  int bind_calls = 0;
  for (const auto& a : f.fc->Actions()) bind_calls += a.verb == "bind";
  EXPECT_EQ(bind_calls, 1) << "queued binds of a rolled-back gang must not be sent";
  for (const auto& uid : f.uids) EXPECT_EQ(f.StatusOf(uid), sched::TaskStatus::kPending) << uid;
  // The next cycle reports why on the PodGroup.
  sched::CycleResult r;
  {
    std::lock_guard l(f.mu);
    f.fc->SetFailureInjector(nullptr);
    r = f.s->RunCycle(sched::WallTime{});
  }
  bool saw = false;
  for (const auto& u : r.pod_groups)
    for (const auto& c : u.conditions)
      if (c.reason == "BindFailed") {
        saw = true;
        EXPECT_NE(c.message.find("node is gone"), std::string::npos) << c.message;
      }
  EXPECT_TRUE(saw);
}

TEST(StatusWriterTest, PodGroupConflictIsReReadAndRedone) {
  auto fc = std::make_shared<FakeClient>();
  json pg = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
             {"metadata", {{"name", "pg"}, {"namespace", "ns"}}},
             {"spec", {{"minMember", 2}, {"queue", "default"}}}, {"status", {{"phase", "Pending"}}}};
  ASSERT_TRUE(fc->Create(api::PodGroup::Resource(), "ns", pg).ok());
  auto stale = kube::GetAs<api::PodGroup>(*fc, "ns", "pg");
  ASSERT_TRUE(stale.ok());
  // Another writer (the job controller) changes the object after our cache read.
  json other = fc->Get(api::PodGroup::Resource(), "ns", "pg").value();
  other["metadata"]["labels"] = {{"touched", "yes"}};
  ASSERT_TRUE(fc->Update(api::PodGroup::Resource(), "ns", other).ok());
  fc->ClearActions();

  sched::PodGroupStatusUpdate u;
  u.job = "ns/pg";
  u.ns = "ns";
  u.name = "pg";
  u.phase = sched::PodGroupPhase::kInqueue;
  StatusWriterStats stats;
  auto cached = std::make_shared<const api::PodGroup>(*stale);
  ASSERT_TRUE(WritePodGroupStatus(*fc, u, cached, "2026-11-22T09:00:00Z", &stats).ok());
  EXPECT_EQ(stats.podgroup_conflicts.load(), 1);
  EXPECT_EQ(stats.podgroup_writes.load(), 1);
  std::vector<json> updates;
  for (const auto& a : fc->Actions())
    if (a.verb == "update") updates.push_back(a.body);
  ASSERT_EQ(updates.size(), 2u) << "stale PUT, then PUT after re-read";
  EXPECT_EQ(updates[1]["status"]["phase"], "Inqueue");
  EXPECT_EQ(updates[1]["metadata"]["labels"]["touched"], "yes") << "the other writer's change survives";
  EXPECT_FALSE(updates[1]["status"].contains("conditions"));

  // Desired status already stored: nothing is written.
  api::PodGroup done = *stale;
  done.status.phase = "Inqueue";
  fc->ClearActions();
  ASSERT_TRUE(WritePodGroupStatus(*fc, u, std::make_shared<const api::PodGroup>(done), "t", &stats).ok());
  EXPECT_TRUE(fc->Actions().empty());
  EXPECT_EQ(stats.podgroup_unchanged.load(), 1);
}

// The job controller deletes and re-creates a job's PodGroup under the same name on every full restart. A
// status computed for the old object must never land on the new one (it used to: the stale cached object
// got a 409, the re-read returned the new PodGroup, and the old status was written there).
TEST(StatusWriterTest, PodGroupStatusNeverLandsOnARecreatedPodGroup) {
  auto fc = std::make_shared<FakeClient>();
  json pg = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
             {"metadata", {{"name", "pg"}, {"namespace", "ns"}}},
             {"spec", {{"minMember", 2}, {"queue", "default"}}}};
  ASSERT_TRUE(fc->Create(api::PodGroup::Resource(), "ns", pg).ok());
  auto old = kube::GetAs<api::PodGroup>(*fc, "ns", "pg");
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(fc->Delete(api::PodGroup::Resource(), "ns", "pg").ok());
  ASSERT_TRUE(fc->Create(api::PodGroup::Resource(), "ns", pg).ok());
  auto fresh = kube::GetAs<api::PodGroup>(*fc, "ns", "pg");
  ASSERT_TRUE(fresh.ok());
  ASSERT_NE(old->metadata.uid, fresh->metadata.uid);
  fc->ClearActions();

  sched::PodGroupStatusUpdate u;
  u.job = "ns/pg";
  u.ns = "ns";
  u.name = "pg";
  u.uid = old->metadata.uid;
  u.phase = sched::PodGroupPhase::kCompleted;
  u.failed = 2;
  StatusWriterStats stats;
  // Whether the cache still holds the old object or already the new one, nothing is written.
  for (auto cached : {std::make_shared<const api::PodGroup>(*old), std::make_shared<const api::PodGroup>(*fresh),
                      std::shared_ptr<const api::PodGroup>()}) {
    core::Status s = WritePodGroupStatus(*fc, u, cached, "2026-11-22T09:00:00Z", &stats);
    EXPECT_TRUE(core::IsNotFound(s)) << s;
  }
  // A PUT meant for the old object may be attempted (and refused by its uid); none may target the new one.
  for (const auto& a : fc->Actions())
    if (a.verb == "update") {
      EXPECT_EQ(a.body["metadata"]["uid"], old->metadata.uid) << a.body.dump();
    }
  EXPECT_EQ(stats.podgroup_superseded.load(), 3);

  // The new object's own status is written.
  u.uid = fresh->metadata.uid;
  u.phase = sched::PodGroupPhase::kInqueue;
  u.failed = 0;
  ASSERT_TRUE(WritePodGroupStatus(*fc, u, std::make_shared<const api::PodGroup>(*fresh), "t", &stats).ok());
  EXPECT_EQ(stats.podgroup_writes.load(), 1);
}

// A write that fails (API server down, 5xx) is retried until it lands; a newer status replaces the retry.
TEST(StatusWriterTest, FailedPodGroupWriteIsRetriedUntilItLands) {
  auto fc = std::make_shared<FakeClient>();
  json pg = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
             {"metadata", {{"name", "pg"}, {"namespace", "ns"}}},
             {"spec", {{"minMember", 1}, {"queue", "default"}}}};
  ASSERT_TRUE(fc->Create(api::PodGroup::Resource(), "ns", pg).ok());
  std::atomic<int> failures{0};
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "update" && failures.load() < 3) {
      ++failures;
      return core::Status(core::StatusCode::kUnavailable, "injected: connection refused");
    }
    return std::nullopt;
  });
  core::FakeClock clock;
  StatusWriter w(fc, nullptr, &clock);
  sched::PodGroupStatusUpdate u;
  u.job = "ns/pg";
  u.ns = "ns";
  u.name = "pg";
  u.uid = fc->Get(api::PodGroup::Resource(), "ns", "pg").value()["metadata"]["uid"];
  u.phase = sched::PodGroupPhase::kInqueue;
  w.PodGroup(u);
  // WaitIdle counts pending retries as work: it returns once the write landed (3 failures: 0.2+0.4+0.8 s).
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(20)));
  EXPECT_EQ(failures.load(), 3);
  EXPECT_EQ(w.stats().podgroup_errors.load(), 3);
  EXPECT_EQ(w.stats().podgroup_writes.load(), 1);
  int updates = 0;
  for (const auto& a : fc->Actions())
    if (a.verb == "update") {
      ++updates;
      EXPECT_EQ(a.body["status"]["phase"], "Inqueue");
    }
  EXPECT_EQ(updates, 4) << "three failed attempts (recorded as actions too), then the one that landed";
}

// A queue whose allocation falls to nothing must show nothing allocated: a merge patch removes only the keys
// it names, so the zeroed resources are sent as null (found by the churn e2e: a drained queue kept reporting
// its last cpu/memory).
TEST(StatusWriterTest, DrainedQueueAllocationIsRemovedNotLeftBehind) {
  auto fc = std::make_shared<FakeClient>();
  json q = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"metadata", {{"name", "qa"}}},
            {"spec", {{"weight", 1}}},
            {"status", {{"state", "Open"}, {"allocated", {{"cpu", "4"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}}}}};
  fc->Seed(api::Queue::Resource(), q);
  core::FakeClock clock;
  StatusWriter w(fc, nullptr, &clock);
  api::ResourceList some;
  some["cpu"] = core::Quantity::FromMilli(1000);
  w.Queue("qa", some, {"memory", "nvidia.com/gpu"});
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  json got = fc->Get(api::Queue::Resource(), "", "qa").value();
  EXPECT_EQ(got["status"]["allocated"], (json{{"cpu", "1"}})) << got.dump();
  w.Queue("qa", {}, {"cpu", "memory", "nvidia.com/gpu"});
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  got = fc->Get(api::Queue::Resource(), "", "qa").value();
  EXPECT_TRUE(!got["status"].contains("allocated") || got["status"]["allocated"].empty()) << got.dump();
  EXPECT_EQ(got["status"]["state"], "Open") << "the queue controller's field is untouched";
}

}  // namespace
}  // namespace tephra::scheduler
