// The controller loop's handling of reconcile results, single-threaded on a FakeClock.
#include "tephra/kube/controller.h"

#include <gtest/gtest.h>

#include <map>

namespace tephra::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ControllerTest : public ::testing::Test {
 protected:
  core::FakeClock clock;
  metrics::Registry registry;
  std::map<std::string, int> calls;
  std::function<ReconcileResult(const std::string&)> behaviour = [](const std::string&) {
    return ReconcileResult::Success();
  };
  ReconcilerFunc reconciler{[this](const std::string& k) {
    calls[k]++;
    return behaviour(k);
  }};
  std::vector<std::pair<std::string, std::string>> gave_up;

  std::unique_ptr<Controller> Make(int max_requeues = -1) {
    ControllerOptions o;
    o.name = "jobs";
    o.clock = &clock;
    o.registry = &registry;
    o.start_timer_thread = false;
    o.max_requeues = max_requeues;
    o.on_max_requeues = [this](const std::string& k, const core::Status& s) { gave_up.emplace_back(k, s.message()); };
    return std::make_unique<Controller>(std::move(o), &reconciler);
  }
  double Total(const char* result) {
    return registry.FindCounter("reconcile_total")->With({"jobs", result})->Value();
  }
  // Advances the fake clock to the next delayed key and processes everything ready.
  void Step(Controller& c) {
    if (auto next = c.queue().Tick()) {
      if (*next > clock.Now()) clock.Advance(*next - clock.Now());
      c.queue().Tick();
    }
    while (c.ProcessNextForTest()) {
    }
  }
};

TEST_F(ControllerTest, SuccessForgetsAndDoesNotRequeue) {
  auto c = Make();
  c->Enqueue("ns/a");
  c->Enqueue("ns/a");
  EXPECT_TRUE(c->ProcessNextForTest());
  EXPECT_FALSE(c->ProcessNextForTest());
  EXPECT_EQ(calls["ns/a"], 1);
  EXPECT_EQ(Total("success"), 1);
  EXPECT_EQ(c->queue().NumDelayed(), 0u);
  EXPECT_EQ(registry.FindHistogram("reconcile_duration_seconds")->With({"jobs"})->Count(), 1u);
}

TEST_F(ControllerTest, RetriableErrorBacksOffExponentiallyThenSuccessResets) {
  auto c = Make();
  int fail_until = 5;
  behaviour = [&](const std::string& k) {
    return calls[k] <= fail_until ? ReconcileResult::Error(core::UnavailableError("api down")) : ReconcileResult::Success();
  };
  c->Enqueue("ns/a");
  c->ProcessNextForTest();
  std::vector<Duration> waits;
  for (int i = 0; i < 5; ++i) {
    auto before = clock.Now();
    ASSERT_EQ(c->NumRequeues("ns/a"), i + 1);
    Step(*c);
    waits.push_back(clock.Now() - before);
  }
  EXPECT_EQ(waits, (std::vector<Duration>{milliseconds(5), milliseconds(10), milliseconds(20), milliseconds(40),
                                          milliseconds(80)}));
  EXPECT_EQ(calls["ns/a"], 6);
  EXPECT_EQ(c->NumRequeues("ns/a"), 0);  // success forgot the history
  EXPECT_EQ(Total("error"), 5);
  EXPECT_EQ(Total("success"), 1);
}

TEST_F(ControllerTest, TerminalErrorIsNotRequeuedButCounted) {
  auto c = Make();
  behaviour = [](const std::string&) { return ReconcileResult::Terminal(core::InvalidArgumentError("bad spec")); };
  c->Enqueue("ns/a");
  c->ProcessNextForTest();
  EXPECT_EQ(c->queue().NumDelayed(), 0u);
  EXPECT_EQ(c->queue().Len(), 0u);
  EXPECT_EQ(c->NumRequeues("ns/a"), 0);
  EXPECT_EQ(Total("terminal_error"), 1);
  clock.Advance(seconds(3600));
  EXPECT_FALSE(c->queue().Tick().has_value());
  EXPECT_EQ(calls["ns/a"], 1);
}

TEST_F(ControllerTest, RequeueAfterSchedulesExactly) {
  auto c = Make();
  behaviour = [&](const std::string& k) {
    return calls[k] == 1 ? ReconcileResult::RequeueAfter(seconds(30)) : ReconcileResult::Success();
  };
  c->Enqueue("ns/a");
  c->ProcessNextForTest();
  auto next = c->queue().Tick();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next - clock.Now(), seconds(30));
  EXPECT_EQ(Total("requeue_after"), 1);
  clock.Advance(seconds(30));
  c->queue().Tick();
  EXPECT_TRUE(c->ProcessNextForTest());
  EXPECT_EQ(calls["ns/a"], 2);
}

TEST_F(ControllerTest, MaxRequeuesHookGivesUp) {
  auto c = Make(/*max_requeues=*/15);  // Volcano's maxRetries for jobs
  std::vector<int> seen_requeues;
  behaviour = [&](const std::string& k) {
    seen_requeues.push_back(c->NumRequeues(k));  // exposed to the reconciler
    return ReconcileResult::Error(core::UnavailableError("still failing"));
  };
  c->Enqueue("ns/a");
  c->ProcessNextForTest();
  for (int i = 0; i < 30 && gave_up.empty(); ++i) Step(*c);
  ASSERT_EQ(gave_up.size(), 1u);
  EXPECT_EQ(gave_up[0].first, "ns/a");
  EXPECT_EQ(gave_up[0].second, "still failing");
  EXPECT_EQ(calls["ns/a"], 16);  // first try + 15 requeues
  EXPECT_EQ(seen_requeues.front(), 0);
  EXPECT_EQ(seen_requeues.back(), 15);
  EXPECT_EQ(Total("max_requeues"), 1);
  EXPECT_EQ(c->NumRequeues("ns/a"), 0);
  EXPECT_FALSE(c->queue().Tick().has_value());
}

// Volcano's --max-requeue-num: 0 gives up at the first failure; -1 never gives up.
TEST_F(ControllerTest, MaxRequeuesZeroGivesUpAtOnceAndMinusOneNever) {
  auto zero = Make(/*max_requeues=*/0);
  behaviour = [&](const std::string&) { return ReconcileResult::Error(core::UnavailableError("failing")); };
  zero->Enqueue("ns/z");
  zero->ProcessNextForTest();
  ASSERT_EQ(gave_up.size(), 1u);
  EXPECT_EQ(calls["ns/z"], 1);
  gave_up.clear();
  auto never = Make(/*max_requeues=*/-1);
  never->Enqueue("ns/n");
  never->ProcessNextForTest();
  for (int i = 0; i < 40; ++i) Step(*never);
  EXPECT_TRUE(gave_up.empty());
  EXPECT_GE(calls["ns/n"], 30);
}

TEST_F(ControllerTest, ThrowingReconcilerIsARetriableError) {
  auto c = Make();
  behaviour = [](const std::string&) -> ReconcileResult { throw std::runtime_error("boom"); };
  c->Enqueue("ns/a");
  c->ProcessNextForTest();
  EXPECT_EQ(Total("error"), 1);
  EXPECT_EQ(c->queue().NumDelayed(), 1u);
}

TEST_F(ControllerTest, StartTwiceFails) {
  auto c = Make();
  ASSERT_TRUE(c->Start().ok());
  EXPECT_EQ(c->Start().code(), core::StatusCode::kFailedPrecondition);
  c->Stop();
  c->Stop();
}

TEST(KeysTest, KeyHelpers) {
  api::json pod = {{"metadata",
                    {{"name", "train-0"},
                     {"namespace", "team-a"},
                     {"ownerReferences",
                      {{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "cm"}},
                       {{"apiVersion", "batch.volcano.sh/v1alpha1"}, {"kind", "Job"}, {"name", "train"},
                        {"controller", true}}}}}}};
  EXPECT_EQ(KeyOf(pod), "team-a/train-0");
  EXPECT_EQ(KeyOf(api::json{{"metadata", {{"name", "node-1"}}}}), "node-1");
  EXPECT_EQ(ControllerOwnerKey(pod, "Job"), "team-a/train");
  EXPECT_EQ(ControllerOwnerKey(pod, "Job", "batch.volcano.sh"), "team-a/train");
  EXPECT_EQ(ControllerOwnerKey(pod, "Job", "batch"), std::nullopt);
  EXPECT_EQ(ControllerOwnerKey(pod, "ConfigMap"), std::nullopt);  // not the controller ref
  EXPECT_EQ(ControllerOwnerKey(api::json::object(), "Job"), std::nullopt);
  std::string ns, name;
  SplitKey("a/b", &ns, &name);
  EXPECT_EQ(ns, "a");
  EXPECT_EQ(name, "b");
  SplitKey("b", &ns, &name);
  EXPECT_EQ(ns, "");
  EXPECT_EQ(name, "b");
}

}  // namespace
}  // namespace tephra::kube
