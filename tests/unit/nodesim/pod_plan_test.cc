#include "tephra/nodesim/pod_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tephra::nodesim {
namespace {

using ::testing::HasSubstr;
using std::chrono::seconds;

json Pod(std::map<std::string, std::string> ann = {}) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}, {"annotations", ann}}},
          {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "main"}, {"image", "busybox"}}, {{"name", "side"}, {"image", "x"}}}}}},
          {"status",
           {{"phase", "Pending"},
            {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2023-11-14T22:00:00Z"}}}}}}};
}

PodView View(const json& j) {
  auto v = DecodePodView(j);
  EXPECT_TRUE(v.ok()) << v.status();
  return *v;
}

PodPlanContext Ctx(WallTime now) { return {now, "10.0.0.1", "10.64.0.2", 1}; }

// Applies a plan's status patch the way the server would for the fields the plan reads back.
PodView Apply(PodView v, const PodPlan& p) {
  const json& st = p.status_patch["status"];
  v.phase = st["phase"];
  if (st.contains("startTime")) v.start_time = st["startTime"];
  if (st.contains("podIP")) v.pod_ip = st["podIP"];
  return v;
}

const json* Cond(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(PlanPod, PendingBecomesRunning) {
  core::FakeClock clock;
  PodPlan p = PlanPod(View(Pod()), Ctx(clock.WallNow()));
  ASSERT_EQ(p.action, PodPlan::Action::kWriteStatus);
  EXPECT_EQ(p.new_phase, "Running");
  EXPECT_FALSE(p.next) << "no run time: runs until deleted";
  EXPECT_TRUE(p.problems.empty());
  EXPECT_EQ(p.status_patch["metadata"]["uid"], "u1");
  const json& st = p.status_patch["status"];
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ(st["podIP"], "10.64.0.2");
  EXPECT_EQ(st["hostIP"], "10.0.0.1");
  EXPECT_EQ(st["startTime"], core::FormatRfc3339(clock.WallNow()));
  for (const char* t : {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
    ASSERT_NE(Cond(st, t), nullptr) << t;
    EXPECT_EQ((*Cond(st, t))["status"], "True") << t;
  }
  EXPECT_EQ((*Cond(st, "PodScheduled"))["lastTransitionTime"], "2023-11-14T22:00:00Z") << "kept from the scheduler";
  ASSERT_EQ(st["containerStatuses"].size(), 2u);
  for (const json& cs : st["containerStatuses"]) {
    EXPECT_TRUE(cs["ready"].get<bool>());
    EXPECT_TRUE(cs["state"].contains("running"));
  }
}

TEST(PlanPod, RunSecondsThenSucceeded) {
  core::FakeClock clock;
  PodView v = View(Pod({{kRunSecondsAnnotation, "5"}}));
  PodPlan p = PlanPod(v, Ctx(clock.WallNow()));
  ASSERT_TRUE(p.next);
  EXPECT_EQ(*p.next, clock.WallNow() + seconds(5));
  v = Apply(v, p);

  clock.Advance(seconds(4));
  p = PlanPod(v, Ctx(clock.WallNow()));
  EXPECT_EQ(p.action, PodPlan::Action::kNone);
  ASSERT_TRUE(p.next);
  EXPECT_EQ(*p.next, clock.WallNow() + seconds(1));

  clock.Advance(seconds(1));
  p = PlanPod(v, Ctx(clock.WallNow()));
  ASSERT_EQ(p.action, PodPlan::Action::kWriteStatus);
  EXPECT_EQ(p.new_phase, "Succeeded");
  EXPECT_FALSE(p.next);
  const json& st = p.status_patch["status"];
  EXPECT_EQ((*Cond(st, "Ready"))["status"], "False");
  for (const json& cs : st["containerStatuses"]) {
    EXPECT_EQ(cs["state"]["terminated"]["exitCode"], 0);
    EXPECT_EQ(cs["state"]["terminated"]["reason"], "Completed");
  }
  v = Apply(v, p);
  p = PlanPod(v, Ctx(clock.WallNow()));
  EXPECT_EQ(p.action, PodPlan::Action::kNone) << "terminal pods stay";
  EXPECT_FALSE(p.next);
}

TEST(PlanPod, ExitCodesPerContainerMakeFailed) {
  core::FakeClock clock;
  PodView v = View(Pod({{kRunSecondsAnnotation, "0"}, {kExitCodeAnnotation, "0"}, {"tephra.io/sim-exit-code.side", "137"}}));
  v = Apply(v, PlanPod(v, Ctx(clock.WallNow())));
  PodPlan p = PlanPod(v, Ctx(clock.WallNow()));
  ASSERT_EQ(p.action, PodPlan::Action::kWriteStatus);
  EXPECT_EQ(p.new_phase, "Failed");
  const json& cs = p.status_patch["status"]["containerStatuses"];
  EXPECT_EQ(cs[0]["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(cs[1]["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(cs[1]["state"]["terminated"]["reason"], "Error");
}

TEST(PlanPod, PodWideExitCode) {
  core::FakeClock clock;
  PodView v = View(Pod({{kRunSecondsAnnotation, "1.5"}, {kExitCodeAnnotation, "3"}}));
  v = Apply(v, PlanPod(v, Ctx(clock.WallNow())));
  clock.Advance(std::chrono::milliseconds(1500));
  PodPlan p = PlanPod(v, Ctx(clock.WallNow()));
  EXPECT_EQ(p.new_phase, "Failed");
  for (const json& cs : p.status_patch["status"]["containerStatuses"]) EXPECT_EQ(cs["state"]["terminated"]["exitCode"], 3);
}

TEST(PlanPod, FailAttemptsLimitsTheExitCodesToEarlyAttempts) {
  // Fails the first 2 attempts of its vcjob (volcano.sh/job-retry-count 0 and 1), succeeds from the third.
  for (auto [retry, want] : {std::pair<const char*, int>{nullptr, 3}, {"0", 3}, {"1", 3}, {"2", 0}, {"5", 0}}) {
    json j = Pod({{kExitCodeAnnotation, "3"}, {kFailAttemptsAnnotation, "2"}});
    if (retry) j["metadata"]["annotations"][kJobRetryCountAnnotation] = retry;
    auto sim = ParseSimAnnotations(View(j));
    EXPECT_TRUE(sim.problems.empty());
    EXPECT_EQ(sim.exit_codes.at("main"), want) << "job-retry-count " << (retry ? retry : "(none)");
    EXPECT_EQ(sim.exit_codes.at("side"), want) << "job-retry-count " << (retry ? retry : "(none)");
  }
  auto bad = ParseSimAnnotations(View(Pod({{kExitCodeAnnotation, "3"}, {kFailAttemptsAnnotation, "two"}})));
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_THAT(bad.problems[0], HasSubstr("tephra.io/sim-fail-attempts: \"two\" is not a whole number >= 0"));
  EXPECT_EQ(bad.exit_codes.at("main"), 3);
}

TEST(PlanPod, InvalidAnnotationsFallBackToDefaults) {
  core::FakeClock clock;
  PodView v = View(Pod({{kRunSecondsAnnotation, "soon"},
                        {kExitCodeAnnotation, "300"},
                        {"tephra.io/sim-exit-code.nosuch", "1"},
                        {"tephra.io/sim-exit-code.side", "x"}}));
  PodPlan p = PlanPod(v, Ctx(clock.WallNow()));
  EXPECT_EQ(p.action, PodPlan::Action::kWriteStatus);
  EXPECT_FALSE(p.next) << "invalid run time: run until deleted";
  ASSERT_EQ(p.problems.size(), 4u);
  EXPECT_THAT(p.problems[0], HasSubstr("tephra.io/sim-exit-code: \"300\" is not an integer in 0..255; using 0"));
  auto sim = ParseSimAnnotations(v);
  EXPECT_EQ(sim.exit_codes.at("main"), 0);
  EXPECT_EQ(sim.exit_codes.at("side"), 0);
  EXPECT_FALSE(sim.run_seconds);
}

TEST(PlanPod, RestartFinishesOverduePodAtOnce) {
  core::FakeClock clock;
  json j = Pod({{kRunSecondsAnnotation, "10"}, {kExitCodeAnnotation, "1"}});
  j["status"]["phase"] = "Running";
  j["status"]["startTime"] = core::FormatRfc3339(clock.WallNow() - seconds(60));
  PodPlan p = PlanPod(View(j), Ctx(clock.WallNow()));
  EXPECT_EQ(p.action, PodPlan::Action::kWriteStatus);
  EXPECT_EQ(p.new_phase, "Failed");
  j["status"]["startTime"] = core::FormatRfc3339(clock.WallNow() - seconds(4));
  p = PlanPod(View(j), Ctx(clock.WallNow()));
  EXPECT_EQ(p.action, PodPlan::Action::kNone);
  EXPECT_EQ(*p.next, clock.WallNow() + seconds(6));
}

TEST(PlanPod, DeletionWaitsMinOfGraceAndMax) {
  core::FakeClock clock;
  json j = Pod();
  j["status"]["phase"] = "Running";
  j["metadata"]["deletionGracePeriodSeconds"] = 30;
  // Requested now: the server set deletionTimestamp = now + 30s.
  j["metadata"]["deletionTimestamp"] = core::FormatRfc3339(clock.WallNow() + seconds(30));
  PodPlanContext ctx = Ctx(clock.WallNow());
  ctx.max_grace_seconds = 2;
  PodPlan p = PlanPod(View(j), ctx);
  EXPECT_EQ(p.action, PodPlan::Action::kNone);
  ASSERT_TRUE(p.next);
  EXPECT_EQ(*p.next, clock.WallNow() + seconds(2));
  ctx.now = clock.WallNow() + seconds(2);
  EXPECT_EQ(PlanPod(View(j), ctx).action, PodPlan::Action::kDelete);

  j["metadata"]["deletionGracePeriodSeconds"] = 0;
  j["metadata"]["deletionTimestamp"] = core::FormatRfc3339(clock.WallNow());
  EXPECT_EQ(PlanPod(View(j), Ctx(clock.WallNow())).action, PodPlan::Action::kDelete);

  j["status"]["phase"] = "Succeeded";
  j["metadata"]["deletionGracePeriodSeconds"] = 30;
  j["metadata"]["deletionTimestamp"] = core::FormatRfc3339(clock.WallNow() + seconds(30));
  EXPECT_EQ(PlanPod(View(j), Ctx(clock.WallNow())).action, PodPlan::Action::kDelete) << "terminal: at once";
}

TEST(DecodePodView, ToleratesOddShapes) {
  EXPECT_FALSE(DecodePodView(json::array()).ok());
  EXPECT_FALSE(DecodePodView(json::object()).ok());
  auto v = DecodePodView({{"metadata", {{"name", "x"}, {"annotations", {{"tephra.io/sim-exit-code", 5}, {"other", "y"}}}}},
                          {"spec", "weird"}});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->annotations.empty()) << "non-string and foreign annotations are ignored";
  EXPECT_TRUE(v->containers.empty());
}

TEST(FormatMicroTime, Micros) {
  WallTime t = WallTime(seconds(1'700'000'000)) + std::chrono::microseconds(123456);
  EXPECT_EQ(FormatMicroTime(t), "2023-11-14T22:13:20.123456Z");
}

}  // namespace
}  // namespace tephra::nodesim
