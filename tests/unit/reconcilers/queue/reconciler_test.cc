// The queue executor against the in-memory fake API server; caches are filled by hand (Replace) so the
// test controls exactly what the reconciler sees.
#include "queue/reconciler.h"

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/batch.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::queue {
namespace {

using kube::testing::FakeClient;

class QueueReconcilerTest : public ::testing::Test {
 protected:
  QueueReconcilerTest() : client_(std::make_shared<FakeClient>()), queues_(client_), pgs_(client_) {
    QueueReconciler::AddIndexers(queues_, pgs_);
    QueueReconcilerOptions o;
    o.client = client_;
    o.queues = &queues_;
    o.pod_groups = &pgs_;
    o.registry = &registry_;
    rec_ = std::make_unique<QueueReconciler>(o);
  }
  void Refresh() {
    auto l = client_->List(api::Queue::Resource(), "", {});
    ASSERT_TRUE(l.ok());
    queues_.Replace(std::move(l.value().items));
    auto p = client_->List(api::PodGroup::Resource(), "", {});
    ASSERT_TRUE(p.ok());
    pgs_.Replace(std::move(p.value().items));
  }
  void SeedQueue(const std::string& name, const std::string& parent, const std::string& state) {
    api::json q = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"metadata", {{"name", name}}},
                   {"spec", {{"weight", 1}}}};
    if (!parent.empty()) q["spec"]["parent"] = parent;
    if (!state.empty()) q["status"]["state"] = state;
    q["status"]["allocated"] = {{"cpu", "2"}};  // the scheduler's field: must survive our writes
    client_->Seed(api::Queue::Resource(), q);
  }
  void SeedPodGroup(const std::string& name, const std::string& queue, const std::string& phase) {
    client_->Seed(api::PodGroup::Resource(),
                  {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
                   {"metadata", {{"name", name}, {"namespace", "ns"}}}, {"spec", {{"minMember", 1}, {"queue", queue}}},
                   {"status", {{"phase", phase}}}});
  }
  api::Queue Get(const std::string& name) { return kube::GetAs<api::Queue>(*client_, "", name).value(); }
  std::string State(const std::string& name) { return Get(name).status.state; }
  // Reconciles `name` until nothing is written (at most 5 rounds).
  void Converge(const std::string& name) {
    for (int i = 0; i < 5; ++i) {
      Refresh();
      int64_t rv = client_->CurrentResourceVersion();
      auto r = rec_->Reconcile(name);
      ASSERT_TRUE(r.status.ok()) << r.status;
      if (client_->CurrentResourceVersion() == rv) return;
    }
    FAIL() << "queue " << name << " did not converge";
  }

  std::shared_ptr<FakeClient> client_;
  kube::metrics::Registry registry_;
  kube::Informer<api::Queue> queues_;
  kube::Informer<api::PodGroup> pgs_;
  std::unique_ptr<QueueReconciler> rec_;
};

TEST_F(QueueReconcilerTest, NewQueueGetsRootParentAndOpenStateOnly) {
  SeedQueue("q", "", "");
  Converge("q");
  api::Queue q = Get("q");
  EXPECT_EQ(q.spec.parent, "root");
  EXPECT_EQ(q.status.state, "Open");
  EXPECT_EQ(q.status.allocated.at("cpu").ToString(), "2");
  // The state went through the status subresource as a merge patch of `state` alone.
  bool status_patch = false;
  for (const auto& a : client_->Actions())
    if (a.verb == "patch" && a.subresource == "status") {
      status_patch = true;
      EXPECT_EQ(a.body, api::json({{"status", {{"state", "Open"}}}}));
    }
  EXPECT_TRUE(status_patch);
}

TEST_F(QueueReconcilerTest, CloseCommandWithPodGroupsGoesClosingThenClosed) {
  SeedQueue("q", "root", "Open");
  SeedPodGroup("pg1", "q", "Running");
  rec_->Submit("q", "CloseQueue");
  Converge("q");
  EXPECT_EQ(State("q"), "Closing");
  ASSERT_TRUE(client_->Delete(api::PodGroup::Resource(), "ns", "pg1").ok());
  Converge("q");  // the command was consumed: SyncQueue finishes Closing
  EXPECT_EQ(State("q"), "Closed");
  rec_->Submit("q", "OpenQueue");
  Converge("q");
  EXPECT_EQ(State("q"), "Open");
}

TEST_F(QueueReconcilerTest, FailedWriteKeepsCommandForRetry) {
  SeedQueue("q", "root", "Open");
  rec_->Submit("q", "CloseQueue");
  client_->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "patch") return core::UnknownError("injected");
    return std::nullopt;
  });
  Refresh();
  EXPECT_FALSE(rec_->Reconcile("q").status.ok());
  client_->SetFailureInjector(nullptr);
  Converge("q");
  EXPECT_EQ(State("q"), "Closed");
}

TEST_F(QueueReconcilerTest, CascadeCloseAndReopen) {
  SeedQueue("root", "", "Open");
  SeedQueue("team", "root", "Open");
  SeedQueue("a", "team", "Open");
  SeedQueue("b", "team", "Closed");  // closed by the user: must stay closed
  rec_->Submit("team", "CloseQueue");
  Converge("team");
  Converge("a");
  Converge("b");
  EXPECT_EQ(State("a"), "Closed");
  EXPECT_EQ(Get("a").metadata.annotations.at(std::string(api::kClosedByParentAnnotation)), "true");
  EXPECT_EQ(Get("b").metadata.annotations.count(std::string(api::kClosedByParentAnnotation)), 0u);
  rec_->Submit("team", "OpenQueue");
  Converge("team");
  Converge("a");
  Converge("b");
  EXPECT_EQ(State("a"), "Open");
  // Volcano leaves "false" behind on every open.
  EXPECT_EQ(Get("a").metadata.annotations.at(std::string(api::kClosedByParentAnnotation)), "false");
  EXPECT_EQ(State("b"), "Closed");
}

// Closing root is refused and closes nothing (before, it closed every queue through the cascade).
TEST_F(QueueReconcilerTest, RootIsNeverClosed) {
  SeedQueue("root", "", "Open");
  SeedQueue("default", "root", "Open");
  rec_->Submit("root", "CloseQueue");
  Converge("root");
  Converge("default");
  EXPECT_EQ(State("root"), "Open");
  EXPECT_EQ(State("default"), "Open");
}

TEST_F(QueueReconcilerTest, PodGroupPhaseGauges) {
  SeedQueue("q", "root", "Open");
  SeedPodGroup("p1", "q", "Running");
  SeedPodGroup("p2", "q", "Running");
  SeedPodGroup("p3", "q", "Inqueue");
  SeedPodGroup("p4", "other", "Running");
  Converge("q");
  std::string text = registry_.Expose();
  EXPECT_NE(text.find("volcano_queue_pod_group_running_count{queue_name=\"q\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("volcano_queue_pod_group_inqueue_count{queue_name=\"q\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("volcano_queue_pod_group_pending_count{queue_name=\"q\"} 0"), std::string::npos) << text;
}

TEST_F(QueueReconcilerTest, DeletedQueueDropsCommand) {
  rec_->Submit("gone", "CloseQueue");
  Refresh();
  client_->ClearActions();
  EXPECT_TRUE(rec_->Reconcile("gone").status.ok());
  EXPECT_TRUE(client_->Actions().empty());
  // A queue created later under that name does not inherit the stale command.
  SeedQueue("gone", "root", "Open");
  Converge("gone");
  EXPECT_EQ(State("gone"), "Open");
}


// A burst of PodGroup changes is counted once per kPodGroupCountDelay, not once per change: each count walks
// every PodGroup of the queue, so counting per change made a burst of small jobs quadratic.
TEST_F(QueueReconcilerTest, PodGroupChangesAreCountedOncePerDelay) {
  SeedQueue("q", "", "Open");
  core::FakeClock clock;
  kube::ControllerOptions co;
  co.name = "queue-count-test";
  co.clock = &clock;
  co.registry = &registry_;
  co.start_timer_thread = false;
  kube::Controller c(co, rec_.get());
  rec_->RegisterHandlers(c);
  // The queue's own changes are reconciled at once (its first pass writes its parent; that update comes back).
  Refresh();
  ASSERT_TRUE(c.ProcessNextForTest());
  for (int round = 0; round < 5; ++round) {
    Refresh();
    if (!c.ProcessNextForTest()) break;
  }
  ASSERT_FALSE(c.ProcessNextForTest());
  for (int i = 0; i < 50; ++i) SeedPodGroup("pg" + std::to_string(i), "q", i % 2 ? "Inqueue" : "Running");
  Refresh();
  EXPECT_FALSE(c.ProcessNextForTest()) << "counted before the delay";
  clock.Advance(kPodGroupCountDelay);
  c.queue().Tick();
  EXPECT_TRUE(c.ProcessNextForTest());
  EXPECT_FALSE(c.ProcessNextForTest()) << "50 PodGroup changes, more than one count";
  const std::string text = registry_.Expose();
  EXPECT_NE(text.find("volcano_queue_pod_group_inqueue_count{queue_name=\"q\"} 25"), std::string::npos) << text;
  EXPECT_NE(text.find("volcano_queue_pod_group_running_count{queue_name=\"q\"} 25"), std::string::npos) << text;
}

}  // namespace
}  // namespace tephra::reconcilers::queue
