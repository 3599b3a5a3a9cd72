// `job wait`: the phase -> exit code mapping, and the watch loop against the FakeClient (Completed, Failed,
// Aborted, timeout, not found, deleted while waiting, 410 re-list, --follow lines).
#include "tephra/ctl/wait.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <sstream>
#include <thread>

#include "tephra/api/batch.h"
#include "tephra/ctl/ctl.h"
#include "testing/fake_client.h"

namespace tephra::ctl {
namespace {

using api::json;
using ::testing::HasSubstr;

TEST(WaitExitCode, Mapping) {
  for (WaitFor t : {WaitFor::kCompleted, WaitFor::kRunning, WaitFor::kTerminal}) {
    EXPECT_EQ(WaitExitCode(t, "Completed"), kExitOk);
    EXPECT_EQ(WaitExitCode(t, "Failed"), kExitFailed);
    EXPECT_EQ(WaitExitCode(t, "Aborted"), kExitAborted);
    EXPECT_EQ(WaitExitCode(t, "Terminated"), kExitAborted);
    for (const char* p : {"", "Pending", "Restarting", "Aborting", "Terminating", "SomethingNew"})
      EXPECT_EQ(WaitExitCode(t, p), std::nullopt) << p;
  }
  EXPECT_EQ(WaitExitCode(WaitFor::kRunning, "Running"), kExitOk);
  EXPECT_EQ(WaitExitCode(WaitFor::kRunning, "Completing"), kExitOk);
  EXPECT_EQ(WaitExitCode(WaitFor::kCompleted, "Running"), std::nullopt);
  EXPECT_EQ(WaitExitCode(WaitFor::kCompleted, "Completing"), std::nullopt);
  EXPECT_EQ(WaitExitCode(WaitFor::kTerminal, "Running"), std::nullopt);
}

TEST(WaitFor, Parse) {
  EXPECT_EQ(*ParseWaitFor("Completed"), WaitFor::kCompleted);
  EXPECT_EQ(*ParseWaitFor("running"), WaitFor::kRunning);
  EXPECT_EQ(*ParseWaitFor("terminal"), WaitFor::kTerminal);
  EXPECT_FALSE(ParseWaitFor("Done").ok());
}

class WaitTest : public ::testing::Test {
 protected:
  WaitTest() : fake_(std::make_shared<kube::testing::FakeClient>(&clock_)) {}

  void SeedJob(const std::string& phase) {
    fake_->Seed(api::Job::Resource(), json{{"metadata", {{"name", "j"}, {"namespace", "default"}}},
                                           {"status", {{"state", {{"phase", phase}}}, {"running", 2}}}});
  }
  void SetPhase(const std::string& phase) {
    auto r = fake_->Patch(api::Job::Resource(), "default", "j", kube::PatchType::kMerge,
                          json{{"status", {{"state", {{"phase", phase}}}}}}, "status");
    ASSERT_TRUE(r.ok()) << r.status();
  }
  // Runs `vcctl job wait ...` on a thread; the returned future yields its exit code.
  std::future<int> Start(std::vector<std::string> args) {
    args.insert(args.begin(), {"vcctl", "job", "wait"});
    return std::async(std::launch::async, [this, args] {
      Env env;
      env.out = &out_;
      env.err = &err_;
      env.clock = &clock_;
      env.connect = [this](const ConnectionFlags&) -> core::StatusOr<Connection> { return Connection{fake_, ""}; };
      return Main(args, env);
    });
  }
  // The observable event the tests wait for before changing the job: the wait's watch is streaming.
  bool WatchStarted(int n = 1) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fake_->ActiveWatches() < n) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::yield();
    }
    return true;
  }
  int Get(std::future<int>& f) {
    if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      fake_->CloseWatches();
      ADD_FAILURE() << "job wait did not return";
      return -1;
    }
    return f.get();
  }

  core::FakeClock clock_;
  std::shared_ptr<kube::testing::FakeClient> fake_;
  std::ostringstream out_, err_;
};

TEST_F(WaitTest, AlreadyCompletedReturnsAtOnce) {
  SeedJob("Completed");
  auto f = Start({"j"});
  EXPECT_EQ(Get(f), kExitOk);
}

TEST_F(WaitTest, RunningThenCompletedWithFollow) {
  SeedJob("Pending");
  auto f = Start({"j", "--for=Completed", "--follow", "--timeout", "30s"});
  ASSERT_TRUE(WatchStarted());
  SetPhase("Running");
  SetPhase("Completed");
  EXPECT_EQ(Get(f), kExitOk);
  EXPECT_EQ(out_.str(),
            "2023-11-14T22:13:20Z  Pending      running=2 succeeded=0 failed=0 retryCount=0\n"
            "2023-11-14T22:13:20Z  Running      running=2 succeeded=0 failed=0 retryCount=0\n"
            "2023-11-14T22:13:20Z  Completed    running=2 succeeded=0 failed=0 retryCount=0\n");
}

TEST_F(WaitTest, ForRunningAcceptsRunning) {
  SeedJob("Pending");
  auto f = Start({"-N", "j", "--for", "Running"});
  ASSERT_TRUE(WatchStarted());
  SetPhase("Running");
  EXPECT_EQ(Get(f), kExitOk);
}

TEST_F(WaitTest, FailedExits3) {
  SeedJob("Running");
  auto f = Start({"j"});
  ASSERT_TRUE(WatchStarted());
  SetPhase("Restarting");
  SetPhase("Failed");
  EXPECT_EQ(Get(f), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("job default/j is Failed"));
}

TEST_F(WaitTest, AbortedExits4) {
  SeedJob("Running");
  auto f = Start({"j", "--for=terminal"});
  ASSERT_TRUE(WatchStarted());
  SetPhase("Aborting");
  SetPhase("Aborted");
  EXPECT_EQ(Get(f), kExitAborted);
}

TEST_F(WaitTest, TimeoutExits5) {
  SeedJob("Pending");
  auto f = Start({"j", "--timeout", "50ms"});
  EXPECT_EQ(Get(f), kExitTimeout);
  EXPECT_THAT(err_.str(), HasSubstr("timed out waiting for job default/j to reach Completed (phase Pending)"));
}

TEST_F(WaitTest, NotFoundExits6) {
  auto f = Start({"nope", "-n", "team"});
  EXPECT_EQ(Get(f), kExitNotFound);
  EXPECT_EQ(err_.str(), "job team/nope not found\n");
}

TEST_F(WaitTest, DeletedWhileWaitingExits6) {
  SeedJob("Running");
  auto f = Start({"j"});
  ASSERT_TRUE(WatchStarted());
  ASSERT_TRUE(fake_->Delete(api::Job::Resource(), "default", "j").ok());
  EXPECT_EQ(Get(f), kExitNotFound);
  EXPECT_THAT(err_.str(), HasSubstr("deleted while waiting"));
}

TEST_F(WaitTest, ResumesAfterStreamEndAndRelistsAfterGone) {
  SeedJob("Pending");
  auto f = Start({"j"});
  ASSERT_TRUE(WatchStarted());
  // The server ends the stream (timeout): the wait re-watches from its resourceVersion.
  fake_->CloseWatches();
  ASSERT_TRUE(WatchStarted());
  // History compacted, then the stream ends: the re-watch gets 410 and the wait re-lists.
  SetPhase("Running");
  fake_->Compact();
  fake_->CloseWatches();
  ASSERT_TRUE(WatchStarted());
  SetPhase("Completed");
  EXPECT_EQ(Get(f), kExitOk);
  int lists = 0;
  for (const auto& a : fake_->Actions()) lists += a.verb == "list";
  EXPECT_GE(lists, 1);
}

TEST_F(WaitTest, UsageErrorsExit2) {
  auto a = Start({});
  EXPECT_EQ(Get(a), kExitUsage);
  auto b = Start({"j", "--for=Sideways"});
  EXPECT_EQ(Get(b), kExitUsage);
  auto c = Start({"j", "--timeout", "soon"});
  EXPECT_EQ(Get(c), kExitUsage);
}

TEST_F(WaitTest, ApiErrorExits1) {
  fake_->SetFailureInjector([](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "list") return core::PermissionDeniedError("jobs.batch.volcano.sh is forbidden").WithHttp(403, "Forbidden");
    return std::nullopt;
  });
  auto f = Start({"j"});
  EXPECT_EQ(Get(f), kExitError);
  EXPECT_THAT(err_.str(), HasSubstr("refused to list jobs.batch.volcano.sh"));
  EXPECT_THAT(err_.str(), HasSubstr("Missing RBAC permission: verb \"list\" on resource \"jobs\" in API group "
                                    "\"batch.volcano.sh\""));
}

}  // namespace
}  // namespace tephra::ctl
