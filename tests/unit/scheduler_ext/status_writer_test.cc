// StatusWriter: PodScheduled=False with the gang's reason; statuses coalesced per object and never written
// by two workers at once; distinct objects written in parallel; a pod that disappeared meanwhile is not an
// error.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/scheduler/status_writer.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

TEST(PodUnschedulablePatchTest, SetsPodScheduledFalseWithReasonAndMessage) {
  json p = PodUnschedulablePatch({"ns", "p0", "u0", "Unschedulable", "3/8 tasks in gang unschedulable: x"},
                                 "2026-11-22T12:00:00Z");
  ASSERT_EQ(p["status"]["conditions"].size(), 1u);
  const json& c = p["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "PodScheduled");  // strategic merge keys conditions by type
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "Unschedulable");
  EXPECT_EQ(c["message"], "3/8 tasks in gang unschedulable: x");
  EXPECT_EQ(c["lastTransitionTime"], "2026-11-22T12:00:00Z");
}

json Pod(const std::string& name) {
  return json{{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "u-" + name}}},
              {"spec", {{"containers", json::array()}}}};
}

TEST(StatusWriterTest, PodConditionCoalescedPerPodNeverWrittenTwiceAtOnceAndMissingPodIgnored) {
  auto fc = std::make_shared<FakeClient>();
  fc->Seed(api::Pod::Resource(), Pod("p0"));
  // The first patch of p0 blocks until the test has queued two newer conditions for it. Four workers are
  // idle meanwhile, yet none may write p0 while it is in flight, and the two queued values coalesce: p0 is
  // written exactly twice ("first", then "new"), never concurrently, and "old" is never sent.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool gate_entered = false, gate_open = false;
  int p0_in_flight = 0, p0_max_in_flight = 0;
  std::vector<std::string> p0_messages;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb != "patch" || a.name != "p0") return std::nullopt;
    std::unique_lock l(gate_mu);
    p0_max_in_flight = std::max(p0_max_in_flight, ++p0_in_flight);
    p0_messages.push_back(a.body["status"]["conditions"][0]["message"]);
    gate_entered = true;
    gate_cv.notify_all();
    gate_cv.wait(l, [&] { return gate_open; });
    --p0_in_flight;
    return std::nullopt;
  });
  core::FakeClock clock;
  {
    StatusWriter w(fc, nullptr, &clock, "volcano", nullptr, /*workers=*/4);
    w.PodUnschedulable({"ns", "p0", "u-p0", "Unschedulable", "first"});
    {
      std::unique_lock l(gate_mu);
      gate_cv.wait(l, [&] { return gate_entered; });
    }
    w.PodUnschedulable({"ns", "p0", "u-p0", "Unschedulable", "old"});
    w.PodUnschedulable({"ns", "p0", "u-p0", "Unschedulable", "new"});
    w.PodUnschedulable({"ns", "gone", "u-gone", "Unschedulable", "x"});  // never created: NotFound
    {
      std::lock_guard l(gate_mu);
      gate_open = true;
    }
    gate_cv.notify_all();
    ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
    EXPECT_EQ(w.stats().pod_condition_errors.load(), 0);  // NotFound for "gone" is not an error
    EXPECT_EQ(w.stats().pod_condition_writes.load(), 2);
  }
  EXPECT_EQ(p0_max_in_flight, 1);
  EXPECT_EQ(p0_messages, (std::vector<std::string>{"first", "new"}));
  auto got = fc->Get(api::Pod::Resource(), "ns", "p0");
  ASSERT_TRUE(got.ok()) << got.status();
  const json& conds = (*got)["status"]["conditions"];
  ASSERT_EQ(conds.size(), 1u) << got->dump();
  EXPECT_EQ(conds[0]["message"], "new");
  for (const auto& a : fc->Actions()) {
    if (a.verb == "patch" && a.name == "p0") {
      EXPECT_EQ(a.subresource, "status");
    }
  }
}

TEST(StatusWriterTest, DistinctObjectsAreWrittenInParallel) {
  // Each write waits (up to 10 s) until four are in flight at once. One writer at a time, as before the pool,
  // never gets there: each write times out alone and the test sees a peak of 1.
  auto fc = std::make_shared<FakeClient>();
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (const auto& n : names) fc->Seed(api::Pod::Resource(), Pod(n));
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, peak = 0;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb != "patch") return std::nullopt;
    std::unique_lock l(mu);
    peak = std::max(peak, ++in_flight);
    cv.notify_all();
    cv.wait_for(l, std::chrono::seconds(10), [&] { return peak >= 4; });
    --in_flight;
    return std::nullopt;
  });
  core::FakeClock clock;
  StatusWriter w(fc, nullptr, &clock, "volcano", nullptr, /*workers=*/4);
  for (const auto& n : names) w.PodUnschedulable({"ns", n, "u-" + n, "Unschedulable", "m"});
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(w.stats().pod_condition_writes.load(), 4);
  std::lock_guard l(mu);
  EXPECT_EQ(peak, 4);
}

// Creates PodGroup ns/pg with `min_member` in the fake API and returns a status update for it (uid set).
sched::PodGroupStatusUpdate SeedPodGroup(FakeClient& fc, int min_member) {
  json pg = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
             {"metadata", {{"name", "pg"}, {"namespace", "ns"}}},
             {"spec", {{"minMember", min_member}, {"queue", "default"}}}};
  auto created = fc.Create(api::PodGroup::Resource(), "ns", pg);
  EXPECT_TRUE(created.ok());
  sched::PodGroupStatusUpdate u;
  u.job = "ns/pg";
  u.ns = "ns";
  u.name = "pg";
  if (created.ok()) u.uid = (*created)["metadata"]["uid"];
  return u;
}

// A PodGroup whose pods start one by one changes only its counters; those statuses wait until one interval
// after the last write and coalesce, while a phase change is written at once. Without the hold every status
// is a PUT (the 128-pod gang bench made ~100 per PodGroup while its pods were being bound).
TEST(StatusWriterTest, CounterOnlyPodGroupStatusesWaitOneIntervalAndCoalescePhaseChangesDoNot) {
  auto fc = std::make_shared<FakeClient>();
  sched::PodGroupStatusUpdate u = SeedPodGroup(*fc, 3);
  struct Put {
    std::chrono::steady_clock::time_point at;
    std::string phase;
    int running;
  };
  std::mutex mu;
  std::vector<Put> puts;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "update") {
      std::lock_guard l(mu);
      const json& st = a.body["status"];  // zero counters are omitted
      puts.push_back({std::chrono::steady_clock::now(), st.value("phase", ""), st.value("running", 0)});
    }
    return std::nullopt;
  });
  core::FakeClock clock;
  const auto interval = std::chrono::milliseconds(400);
  StatusWriter w(fc, nullptr, &clock, "volcano", nullptr, /*workers=*/4, interval);
  u.phase = sched::PodGroupPhase::kInqueue;
  const auto first_queued = std::chrono::steady_clock::now();  // the first write is sent after this
  w.PodGroup(u);
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  for (int running = 1; running <= 3; ++running) {
    u.running = running;
    w.PodGroup(u);
  }
  EXPECT_EQ(w.stats().podgroup_held.load(), 3);
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  {
    std::lock_guard l(mu);
    ASSERT_EQ(puts.size(), 2u);
    EXPECT_EQ(puts[1].running, 3) << "the held statuses coalesce into the newest";
    EXPECT_GE(puts[1].at - first_queued, interval) << "a counter-only status waits out the interval";
  }
  u.phase = sched::PodGroupPhase::kRunning;  // right after a write: a phase change is not held
  w.PodGroup(u);
  EXPECT_EQ(w.stats().podgroup_held.load(), 3);
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  std::lock_guard l(mu);
  ASSERT_EQ(puts.size(), 3u);
  EXPECT_EQ(puts[2].phase, "Running");
  EXPECT_EQ(w.stats().podgroup_writes.load(), 3);
}

// A pod that starts while its PodGroup's phase change is still being written moves only a counter: that
// status is held too, compared with the write in flight rather than with the last one that landed (which
// one-pod vcjobs paid as an extra PUT each).
TEST(StatusWriterTest, CounterOnlyStatusIsHeldWhileThePhaseChangeIsInFlight) {
  auto fc = std::make_shared<FakeClient>();
  sched::PodGroupStatusUpdate u = SeedPodGroup(*fc, 1);
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false;
  int updates = 0;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb != "update") return std::nullopt;
    std::unique_lock l(mu);
    if (++updates == 1) {
      entered = true;
      cv.notify_all();
      cv.wait(l, [&] { return open; });
    }
    return std::nullopt;
  });
  core::FakeClock clock;
  StatusWriter w(fc, nullptr, &clock, "volcano", nullptr, /*workers=*/4, std::chrono::milliseconds(200));
  u.phase = sched::PodGroupPhase::kRunning;
  w.PodGroup(u);
  {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return entered; });
  }
  u.running = 1;  // the pod started while the Running phase is being written
  w.PodGroup(u);
  EXPECT_EQ(w.stats().podgroup_held.load(), 1);
  {
    std::lock_guard l(mu);
    open = true;
  }
  cv.notify_all();
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  std::lock_guard l(mu);
  EXPECT_EQ(updates, 2);
  auto got = fc->Get(api::PodGroup::Resource(), "ns", "pg");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["status"]["running"], 1);
  EXPECT_EQ((*got)["status"]["phase"], "Running");
}


// A Queue's allocation moves with every cycle of a burst; it is written at most once per interval, the
// newest value replacing the held ones.
TEST(StatusWriterTest, QueueAllocationIsWrittenAtMostOncePerInterval) {
  auto fc = std::make_shared<FakeClient>();
  fc->Seed(api::Queue::Resource(), {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"},
                                    {"metadata", {{"name", "qa"}}}, {"spec", {{"weight", 1}}}});
  std::mutex mu;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> patches;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "patch" && a.name == "qa") {
      std::lock_guard l(mu);
      patches.emplace_back(std::chrono::steady_clock::now(), a.body["status"]["allocated"].value("cpu", ""));
    }
    return std::nullopt;
  });
  core::FakeClock clock;
  const auto interval = std::chrono::milliseconds(300);
  StatusWriter w(fc, nullptr, &clock, "volcano", nullptr, /*workers=*/2, interval);
  auto alloc = [](int cpus) {
    api::ResourceList r;
    r["cpu"] = core::Quantity::FromMilli(1000 * cpus);
    return r;
  };
  w.Queue("qa", alloc(1), {});
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  for (int cpus = 2; cpus <= 5; ++cpus) w.Queue("qa", alloc(cpus), {});
  EXPECT_EQ(w.stats().queue_held.load(), 4);
  ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  std::lock_guard l(mu);
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].second, "1");
  EXPECT_EQ(patches[1].second, "5") << "the held allocations coalesce into the newest";
  EXPECT_GE(patches[1].first - patches[0].first, interval - std::chrono::milliseconds(5));
  EXPECT_EQ(fc->Get(api::Queue::Resource(), "", "qa").value()["status"]["allocated"]["cpu"], "5");
}

}  // namespace
}  // namespace tephra::scheduler
