#include <gtest/gtest.h>

#include "command/plan.h"
#include "command/reconciler.h"
#include "testing/fake_client.h"
#include "tephra/api/batch.h"

namespace tephra::reconcilers::command {
namespace {

using kube::testing::FakeClient;

api::Command Cmd(const std::string& action, const std::string& kind, const std::string& api_version,
                 const std::string& target = "t") {
  api::Command c;
  c.metadata.name = "c";
  c.metadata.namespace_ = "ns";
  c.action = action;
  api::OwnerReference r;
  r.kind = kind;
  r.api_version = api_version;
  r.name = target;
  c.target = r;
  return c;
}

TEST(CommandPlan, Routes) {
  Enabled all;
  for (const char* a : {"AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob",
                        "CompleteJob", "ResumeJob", "SyncJob", "EnqueueJob"}) {
    Decision d = Plan(Cmd(a, "Job", "batch.volcano.sh/v1alpha1", "j1"), all);
    EXPECT_EQ(d.route, Route::kJob) << a;
    EXPECT_EQ(d.target_key, "ns/j1");
  }
  for (const char* a : {"OpenQueue", "CloseQueue", "SyncQueue"}) {
    Decision d = Plan(Cmd(a, "Queue", "scheduling.volcano.sh/v1beta1", "q1"), all);
    EXPECT_EQ(d.route, Route::kQueue) << a;
    EXPECT_EQ(d.target_key, "q1");  // cluster scoped: the command's namespace does not matter
  }
  EXPECT_EQ(Plan(Cmd("OpenQueue", "Job", "batch.volcano.sh/v1alpha1"), all).route, Route::kReject);
  EXPECT_EQ(Plan(Cmd("AbortJob", "Queue", "scheduling.volcano.sh/v1beta1"), all).route, Route::kReject);
  EXPECT_EQ(Plan(Cmd("AbortJob", "Job", "batch/v1"), all).route, Route::kIgnore);  // a Kubernetes Job
  EXPECT_EQ(Plan(Cmd("AbortJob", "Deployment", "apps/v1"), all).route, Route::kIgnore);
  EXPECT_EQ(Plan(Cmd("AbortJob", "Job", ""), all).route, Route::kJob);
  api::Command no_target = Cmd("AbortJob", "Job", "");
  no_target.target.reset();
  EXPECT_EQ(Plan(no_target, all).route, Route::kIgnore);
  EXPECT_EQ(Plan(Cmd("AbortJob", "Job", ""), Enabled{.jobs = false, .queues = true}).route, Route::kIgnore);
  EXPECT_EQ(Plan(Cmd("OpenQueue", "Queue", ""), Enabled{.jobs = true, .queues = false}).route, Route::kIgnore);
}

class CommandReconcilerTest : public ::testing::Test {
 protected:
  CommandReconcilerTest() : client_(std::make_shared<FakeClient>()), commands_(client_) {
    CommandReconcilerOptions o;
    o.client = client_;
    o.commands = &commands_;
    o.to_job = [this](const std::string& k, const api::Command& c) { jobs_.push_back(k + ":" + c.action); };
    o.to_queue = [this](const std::string& k, const api::Command& c) { queues_.push_back(k + ":" + c.action); };
    rec_ = std::make_unique<CommandReconciler>(o);
  }
  void Seed(const std::string& name, const std::string& action, const std::string& kind, const std::string& target) {
    client_->Seed(api::Command::Resource(),
                  {{"apiVersion", "bus.volcano.sh/v1alpha1"}, {"kind", "Command"},
                   {"metadata", {{"name", name}, {"namespace", "ns"}}}, {"action", action},
                   {"target", {{"apiVersion", kind == "Job" ? "batch.volcano.sh/v1alpha1" : "scheduling.volcano.sh/v1beta1"},
                               {"kind", kind}, {"name", target}, {"uid", "x"}}}});
  }
  void Refresh() {
    auto l = client_->List(api::Command::Resource(), "", {});
    ASSERT_TRUE(l.ok());
    commands_.Replace(std::move(l.value().items));
  }
  bool Exists(const std::string& name) { return client_->Get(api::Command::Resource(), "ns", name).ok(); }

  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::Command> commands_;
  std::unique_ptr<CommandReconciler> rec_;
  std::vector<std::string> jobs_, queues_;
};

TEST_F(CommandReconcilerTest, DeletesThenHandsOver) {
  Seed("c1", "AbortJob", "Job", "j1");
  Seed("c2", "CloseQueue", "Queue", "q1");
  Refresh();
  client_->ClearActions();
  EXPECT_TRUE(rec_->Reconcile("ns/c1").status.ok());
  EXPECT_TRUE(rec_->Reconcile("ns/c2").status.ok());
  EXPECT_FALSE(Exists("c1"));
  EXPECT_FALSE(Exists("c2"));
  EXPECT_EQ(jobs_, std::vector<std::string>{"ns/j1:AbortJob"});
  EXPECT_EQ(queues_, std::vector<std::string>{"q1:CloseQueue"});
  // Nothing but the two deletes was written (the handover is in memory).
  std::vector<std::string> writes;
  for (const auto& a : client_->Actions())
    if (a.verb != "get" && a.verb != "list" && a.verb != "watch") writes.push_back(a.verb + " " + a.name);
  EXPECT_EQ(writes, (std::vector<std::string>{"delete c1", "delete c2"}));
}

TEST_F(CommandReconcilerTest, AtMostOnceWhenSomeoneElseConsumedIt) {
  Seed("c1", "AbortJob", "Job", "j1");
  Refresh();  // the cache still has it ...
  ASSERT_TRUE(client_->Delete(api::Command::Resource(), "ns", "c1").ok());  // ... another replica took it
  EXPECT_TRUE(rec_->Reconcile("ns/c1").status.ok());
  EXPECT_TRUE(jobs_.empty());
}

TEST_F(CommandReconcilerTest, RecreatedCommandIsNotDeletedByStaleCache) {
  Seed("c1", "AbortJob", "Job", "j1");
  Refresh();
  ASSERT_TRUE(client_->Delete(api::Command::Resource(), "ns", "c1").ok());
  Seed("c1", "ResumeJob", "Job", "j1");  // same name, new UID; cache not caught up
  EXPECT_TRUE(rec_->Reconcile("ns/c1").status.ok());
  EXPECT_TRUE(Exists("c1"));  // UID precondition protected the new one
  EXPECT_TRUE(jobs_.empty());
  Refresh();
  EXPECT_TRUE(rec_->Reconcile("ns/c1").status.ok());
  EXPECT_EQ(jobs_, std::vector<std::string>{"ns/j1:ResumeJob"});
}

TEST_F(CommandReconcilerTest, DeleteErrorRetriesWithoutActing) {
  Seed("c1", "AbortJob", "Job", "j1");
  Refresh();
  client_->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "delete") return core::UnknownError("injected");
    return std::nullopt;
  });
  auto r = rec_->Reconcile("ns/c1");
  EXPECT_FALSE(r.status.ok());
  EXPECT_FALSE(r.terminal);
  EXPECT_TRUE(jobs_.empty());
}

TEST_F(CommandReconcilerTest, ForeignCommandsAreLeftAlone) {
  client_->Seed(api::Command::Resource(),
                {{"apiVersion", "bus.volcano.sh/v1alpha1"}, {"kind", "Command"},
                 {"metadata", {{"name", "c1"}, {"namespace", "ns"}}}, {"action", "AbortJob"},
                 {"target", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "d"}, {"uid", "x"}}}});
  Refresh();
  EXPECT_TRUE(rec_->Reconcile("ns/c1").status.ok());
  EXPECT_TRUE(Exists("c1"));
}

}  // namespace
}  // namespace tephra::reconcilers::command
