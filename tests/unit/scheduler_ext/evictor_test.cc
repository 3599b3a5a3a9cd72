// Evictor: core eviction decisions -> pod deletes (UID precondition) and Evict events, idempotently.
#include <atomic>
#include <mutex>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/scheduler/evictor.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

struct Fixture {
  std::shared_ptr<FakeClient> fc = std::make_shared<FakeClient>();
  std::vector<EventSpec> events;
  Evictor ev{fc, [this](EventSpec e) { events.push_back(std::move(e)); }, std::chrono::seconds(60)};

  sched::EvictDecision Seed(const std::string& name) {
    json stored = fc->Seed(api::Pod::Resource(), {{"apiVersion", "v1"}, {"kind", "Pod"},
                                                  {"metadata", {{"name", name}, {"namespace", "ns"}}},
                                                  {"spec", {{"nodeName", "n1"}, {"containers", json::array()}}}});
    sched::EvictDecision d;
    d.task_uid = stored["metadata"]["uid"].get<std::string>();
    d.ns = "ns";
    d.name = name;
    d.node = "n1";
    d.reason = "preempt";
    d.job = "ns/low";
    d.preemptor = "ns/high";
    return d;
  }
  int Deletes() const {
    int n = 0;
    for (const auto& a : fc->Actions()) n += a.verb == "delete" && a.resource == "pods";
    return n;
  }
};

TEST(EvictorTest, DeletesPodAndRecordsEventsOnPodAndPodGroup) {
  Fixture f;
  auto d = f.Seed("victim");
  EvictOutcome out = f.ev.Execute({d});
  EXPECT_EQ(out.deleted, 1);
  EXPECT_TRUE(out.failed_uids.empty());
  EXPECT_FALSE(f.fc->Get(api::Pod::Resource(), "ns", "victim").ok());
  ASSERT_EQ(f.events.size(), 2u);
  EXPECT_EQ(f.events[0].kind, "Pod");
  EXPECT_EQ(f.events[0].reason, "Evict");
  EXPECT_EQ(f.events[0].type, "Warning");
  EXPECT_EQ(f.events[0].message, "Pod ns/victim is evicted by preempt for ns/high on node n1");
  EXPECT_EQ(f.events[1].kind, "PodGroup");
  EXPECT_EQ(f.events[1].name, "low");
}

TEST(EvictorTest, RepeatedDecisionIsNotDeletedOrCountedTwice) {
  Fixture f;
  auto d = f.Seed("victim");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.ev.Execute({d}, t0).deleted, 1);
  EvictOutcome again = f.ev.Execute({d, d}, t0 + std::chrono::seconds(1));
  EXPECT_EQ(again.deleted, 0);
  EXPECT_EQ(again.duplicates, 2);
  EXPECT_EQ(f.Deletes(), 1);
  EXPECT_EQ(f.events.size(), 2u);
  // Forgotten after the memory window.
  f.ev.Execute({}, t0 + std::chrono::seconds(120));
  EXPECT_EQ(f.ev.remembered(), 0u);
}

TEST(EvictorTest, NeverDeletesARecreatedPodWithTheSameName) {
  Fixture f;
  auto d = f.Seed("victim");
  d.task_uid = "uid-of-an-older-incarnation";
  EvictOutcome out = f.ev.Execute({d});
  EXPECT_TRUE(f.fc->Get(api::Pod::Resource(), "ns", "victim").ok()) << "UID precondition must protect it";
  EXPECT_TRUE(out.failed_uids.empty());  // conflict: the pod we meant is gone already
  EXPECT_TRUE(f.events.empty());
}

TEST(EvictorTest, FailedDeleteIsHandedBack) {
  Fixture f;
  auto d = f.Seed("victim");
  f.fc->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "delete") return core::UnavailableError("apiserver down");
    return std::nullopt;
  });
  EvictOutcome out = f.ev.Execute({d});
  ASSERT_EQ(out.failed_uids.size(), 1u);
  EXPECT_EQ(out.failed_uids[0], d.task_uid);
  EXPECT_TRUE(f.events.empty());
  f.fc->SetFailureInjector(nullptr);
  EXPECT_EQ(f.ev.Execute({d}).deleted, 1) << "a failed delete is retried when the core decides again";
}

TEST(EvictorTest, PoolDeletesInParallelAndHandsFailuresBack) {
  std::shared_ptr<FakeClient> fc = std::make_shared<FakeClient>();
  std::mutex mu;
  std::vector<EventSpec> events;
  Evictor ev{fc, [&](EventSpec e) {
               std::lock_guard l(mu);
               events.push_back(std::move(e));
             }};
  std::vector<sched::EvictDecision> ds;
  for (int i = 0; i < 12; ++i) {
    json stored = fc->Seed(api::Pod::Resource(), {{"apiVersion", "v1"}, {"kind", "Pod"},
                                                  {"metadata", {{"name", "v" + std::to_string(i)}, {"namespace", "ns"}}},
                                                  {"spec", {{"nodeName", "n1"}, {"containers", json::array()}}}});
    sched::EvictDecision d;
    d.task_uid = stored["metadata"]["uid"].get<std::string>();
    d.ns = "ns";
    d.name = "v" + std::to_string(i);
    d.reason = "reclaim";
    ds.push_back(d);
  }
  fc->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "delete" && a.name == "v3") return core::UnavailableError("apiserver down");
    return std::nullopt;
  });
  std::atomic<int> deleted{0}, duplicates{0};
  std::vector<std::string> failed;
  ev.Start(4, [&](const EvictOutcome& o) {
    deleted += o.deleted;
    duplicates += o.duplicates;
    std::lock_guard l(mu);
    failed.insert(failed.end(), o.failed_uids.begin(), o.failed_uids.end());
  });
  ds.push_back(ds[0]);  // the same victim twice in one batch: deleted once
  ev.Submit(ds);
  ASSERT_TRUE(ev.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(deleted, 11);
  EXPECT_EQ(duplicates, 1);
  std::lock_guard l(mu);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0], ds[3].task_uid);
  EXPECT_EQ(events.size(), 11u);
  ev.Stop();
  ev.Submit({ds[3]});  // after Stop: ignored, not crashed
}

}  // namespace
}  // namespace tephra::scheduler
