// Effective training time per job (docs/faults.md): the account on the PodGroup and the gauge.
#include "fault/training_time.h"

#include <gtest/gtest.h>

#include <thread>

#include "fault/reconciler.h"
#include "tephra/api/codec.h"
#include "testing/fake_client.h"

namespace tephra::reconcilers::fault {
namespace {

using std::chrono::seconds;
const core::Clock::WallTime kT0 = core::Clock::WallTime(seconds(1'700'000'000));

// Applies a step's annotations to the account, as the merge patch does on the PodGroup.
TrainingAccount Apply(const TrainingAccount& a, const TrainingStep& s) {
  api::ObjectMeta m;
  if (a.since) m.annotations[kTrainingSinceAnnotation] = core::FormatRfc3339(*a.since);
  if (a.short_since) m.annotations[kTrainingShortSinceAnnotation] = core::FormatRfc3339(*a.short_since);
  if (a.until) m.annotations[kTrainingUntilAnnotation] = core::FormatRfc3339(*a.until);
  m.annotations[kTrainingLostAnnotation] = std::to_string(a.lost_seconds);
  for (const auto& [k, v] : s.annotations.items()) {
    if (v.is_null()) m.annotations.erase(k);
    else m.annotations[k] = v.get<std::string>();
  }
  return ReadTrainingAccount(m);
}

TEST(TrainingTime, QueueTimeIsNotCountedShortTimeIsAndTheEndClosesTheAccount) {
  TrainingAccount a;
  // Pending in the queue: no account yet, no ratio.
  TrainingStep s = PlanTraining(a, {.whole = false}, kT0);
  EXPECT_TRUE(s.annotations.empty());
  EXPECT_FALSE(s.ratio.has_value());
  // Whole at t0: the account opens, in memory only while the gang has run whole for less than 30 s.
  s = PlanTraining(a, {.whole = true}, kT0);
  EXPECT_TRUE(s.annotations.empty()) << s.annotations.dump();
  ASSERT_TRUE(s.unwritten_since.has_value());
  EXPECT_EQ(*s.unwritten_since, kT0);
  EXPECT_DOUBLE_EQ(*s.ratio, 1.0);
  s = PlanTraining(a, {.whole = true}, kT0 + seconds(29), kT0);
  EXPECT_TRUE(s.annotations.empty());
  // 30 s whole: the start (t0, not now) is written.
  s = PlanTraining(a, {.whole = true}, kT0 + kTrainingPersistAfter, kT0);
  EXPECT_FALSE(s.unwritten_since.has_value());
  a = Apply(a, s);
  ASSERT_TRUE(a.since.has_value());
  EXPECT_EQ(*a.since, kT0);
  // A fault at t0+80 s leaves it short; nothing is written again while it stays short.
  s = PlanTraining(a, {.whole = false}, kT0 + seconds(80));
  a = Apply(a, s);
  ASSERT_TRUE(a.short_since.has_value());
  s = PlanTraining(a, {.whole = false}, kT0 + seconds(90));
  EXPECT_TRUE(s.annotations.empty());
  EXPECT_DOUBLE_EQ(*s.ratio, 80.0 / 90.0);
  // Whole again at t0+100 s: 20 s lost.
  s = PlanTraining(a, {.whole = true}, kT0 + seconds(100));
  a = Apply(a, s);
  EXPECT_FALSE(a.short_since.has_value());
  EXPECT_DOUBLE_EQ(a.lost_seconds, 20.0);
  EXPECT_DOUBLE_EQ(*PlanTraining(a, {.whole = true}, kT0 + seconds(200)).ratio, 0.9);
  // The job ends at t0+200 s: the ratio stays what it was, whatever the pods do later.
  s = PlanTraining(a, {.whole = false, .finished = true}, kT0 + seconds(200));
  a = Apply(a, s);
  ASSERT_TRUE(a.until.has_value());
  s = PlanTraining(a, {.whole = false}, kT0 + seconds(5000));
  EXPECT_TRUE(s.annotations.empty());
  EXPECT_DOUBLE_EQ(*s.ratio, 0.9);
}

// The everyday path of small jobs: a job that runs whole and ends within kTrainingPersistAfter is never
// written; one that falls short within it gets its start and its shortage in one write.
TEST(TrainingTime, AShortJobIsNeverWrittenAndAnEarlyShortageWritesTheStartWithIt) {
  TrainingAccount a;
  TrainingStep s = PlanTraining(a, {.whole = true}, kT0);
  ASSERT_TRUE(s.unwritten_since.has_value());
  s = PlanTraining(a, {.whole = false, .finished = true}, kT0 + seconds(12), kT0);
  EXPECT_TRUE(s.annotations.empty()) << s.annotations.dump();
  EXPECT_FALSE(s.unwritten_since.has_value());
  EXPECT_DOUBLE_EQ(*s.ratio, 1.0);

  s = PlanTraining(a, {.whole = false}, kT0 + seconds(10), kT0);
  a = Apply(a, s);
  ASSERT_TRUE(a.since.has_value());
  EXPECT_EQ(*a.since, kT0);
  ASSERT_TRUE(a.short_since.has_value());
  EXPECT_EQ(*a.short_since, kT0 + seconds(10));
  EXPECT_DOUBLE_EQ(*PlanTraining(a, {.whole = false}, kT0 + seconds(20)).ratio, 0.5);
}

TEST(TrainingTime, TheReconcilerKeepsTheAccountOnThePodGroupAndTheGauge) {
  auto fc = std::make_shared<kube::testing::FakeClient>();
  api::PodGroup pg;
  pg.metadata.namespace_ = "ns";
  pg.metadata.name = "train-pg";
  pg.spec.min_member = 2;
  api::OwnerReference owner;
  owner.kind = "Job";
  owner.name = "train";
  owner.controller = true;
  pg.metadata.owner_references.push_back(owner);
  fc->Seed(api::PodGroup::Resource(), api::ToJson(pg));
  for (const char* name : {"w-0", "w-1"}) {
    api::Pod p;
    p.metadata.namespace_ = "ns";
    p.metadata.name = name;
    p.metadata.annotations["scheduling.k8s.io/group-name"] = "train-pg";
    p.spec.node_name = "n1";
    p.status.phase = "Running";
    fc->Seed(api::Pod::Resource(), api::ToJson(p));
  }
  kube::Informer<api::PodGroup> groups(fc);
  kube::Informer<api::Pod> pods(fc);
  FaultReconciler::AddIndexers(pods);
  kube::metrics::Registry reg;
  core::FakeClock clock;
  TrainingTimeOptions o;
  o.client = fc;
  o.pod_groups = &groups;
  o.pods = &pods;
  o.registry = &reg;
  o.clock = &clock;
  TrainingTimeReconciler r(std::move(o));
  groups.Start();
  pods.Start();
  ASSERT_TRUE(groups.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  ASSERT_TRUE(pods.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  auto res = r.Reconcile("ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  // Whole from now: nothing written for 30 s, and the reconciler comes back when that is due.
  ASSERT_TRUE(res.requeue_after.has_value());
  EXPECT_EQ(*res.requeue_after, std::chrono::milliseconds(kTrainingPersistAfter));
  auto got = fc->Get(api::PodGroup::Resource(), "ns", "train-pg");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE((*got)["metadata"].value("annotations", api::json::object()).contains(kTrainingSinceAnnotation))
      << got->dump();
  // A job restart replaces the PodGroup under the same name: the new one's account starts when it is seen
  // whole, not at the old one's start (kept in memory by name, but for the old uid).
  clock.Advance(seconds(20));
  const std::string old_uid = groups.Get("ns/train-pg")->metadata.uid;
  ASSERT_TRUE(fc->Delete(api::PodGroup::Resource(), "ns", "train-pg").ok());
  fc->Seed(api::PodGroup::Resource(), api::ToJson(pg));
  for (int i = 0; i < 500; ++i) {
    auto now_pg = groups.Get("ns/train-pg");
    if (now_pg && now_pg->metadata.uid != old_uid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(groups.Get("ns/train-pg")->metadata.uid, old_uid);
  const auto start = clock.WallNow();
  res = r.Reconcile("ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  clock.Advance(seconds(15));  // 35 s after the first PodGroup's start, 15 s after this one's
  res = r.Reconcile("ns/train-pg");
  got = fc->Get(api::PodGroup::Resource(), "ns", "train-pg");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE((*got)["metadata"].value("annotations", api::json::object()).contains(kTrainingSinceAnnotation))
      << "the new PodGroup got the old one's start: " << got->dump();
  clock.Advance(kTrainingPersistAfter - seconds(15));
  res = r.Reconcile("ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_TRUE(res.requeue_after.has_value());  // refreshed while it runs
  got = fc->Get(api::PodGroup::Resource(), "ns", "train-pg");
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE((*got)["metadata"]["annotations"].contains(kTrainingSinceAnnotation)) << got->dump();
  EXPECT_EQ((*got)["metadata"]["annotations"][kTrainingSinceAnnotation], core::FormatRfc3339(start));
  EXPECT_NE(reg.Expose().find("tephra_job_effective_training_ratio{namespace=\"ns\",job=\"train\",podgroup=\"train-pg\"} 1"),
            std::string::npos)
      << reg.Expose();
  // The PodGroup goes: so does its series.
  ASSERT_TRUE(fc->Delete(api::PodGroup::Resource(), "ns", "train-pg").ok());
  for (int i = 0; i < 200 && groups.Get("ns/train-pg"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  res = r.Reconcile("ns/train-pg");
  EXPECT_TRUE(res.status.ok()) << res.status;
  EXPECT_EQ(reg.Expose().find("podgroup=\"train-pg\""), std::string::npos) << reg.Expose();
  groups.Stop();
  pods.Stop();
}

}  // namespace
}  // namespace tephra::reconcilers::fault
