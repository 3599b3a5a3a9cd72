// `job why` / `queue why`: the scheduler's conditions (docs/why-pending.md) explained, with golden output.
#include <gtest/gtest.h>

#include <sstream>
#include <utility>
#include <vector>

#include "tephra/api/kinds.h"
#include "tephra/ctl/ctl.h"
#include "tephra/ctl/why.h"
#include "testing/fake_client.h"

namespace tephra::ctl {
namespace {

using api::json;
using std::chrono::seconds;

constexpr int64_t kNow = 1'700'000'000;  // 2023-11-14T22:13:20Z

json Job(const std::string& phase) {
  json j = json::parse(R"({"metadata": {"name": "big", "namespace": "default", "uid": "u1"},
                           "spec": {"queue": "default", "minAvailable": 8}})");
  j["status"]["state"]["phase"] = phase;
  return j;
}

json Queue(const std::string& state = "Open") {
  json q = json::parse(R"({"metadata": {"name": "default"}, "spec": {"weight": 2},
                           "status": {"allocated": {"cpu": "8", "memory": "16Gi"}}})");
  q["status"]["state"] = state;
  return q;
}

json Pg(const std::string& name, const std::string& phase, json conditions, const std::string& queue = "default") {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"minMember", 8}, {"queue", queue}}},
          {"status", {{"phase", phase}, {"running", 0}, {"conditions", std::move(conditions)}}}};
}

json Unschedulable(const std::string& reason, const std::string& message, const std::string& at = "2023-11-14T22:08:20Z") {
  return {{"type", "Unschedulable"}, {"status", "True"}, {"reason", reason}, {"message", message},
          {"lastTransitionTime", at}};
}
json Queued(const std::string& message) {
  return {{"type", "Queued"}, {"status", "True"}, {"reason", "InQueue"}, {"message", message},
          {"lastTransitionTime", "2023-11-14T22:08:20Z"}};
}

TEST(Why, ParsePosition) {
  auto exact = ParsePosition("position 3 in queue default");
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->first, 3);
  EXPECT_EQ(exact->last, 3);
  auto range = ParsePosition("position 21-30 in queue q");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->first, 21);
  EXPECT_EQ(range->last, 30);
  EXPECT_FALSE(ParsePosition("waiting in queue default"));
  EXPECT_FALSE(ParsePosition("position x"));
}

TEST(Why, ParseStartEstimate) {
  auto r = ParseStartEstimate("position 1 in queue default; estimated start 2023-11-14T22:25:00Z (reserved on 4 node(s))");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, "reservation");
  EXPECT_EQ(r->at, "2023-11-14T22:25:00Z");
  EXPECT_EQ(r->nodes, 4);
  auto lb = ParseStartEstimate("position 21-30 in queue q; planned start 2023-11-14T23:00:00Z (not reserved)");
  ASSERT_TRUE(lb);
  EXPECT_EQ(lb->kind, "planned");
  EXPECT_EQ(lb->at, "2023-11-14T23:00:00Z");
  auto none = ParseStartEstimate("position 2 in queue q; no start estimate: pods without a runningEstimate hold it");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->kind, "unknown");
  EXPECT_EQ(none->why, "pods without a runningEstimate hold it");
  EXPECT_FALSE(ParseStartEstimate("position 3 in queue default"));
  // The position still parses, without the estimate in its text.
  auto p = ParsePosition("position 1 in queue default; estimated start 2023-11-14T22:25:00Z (reserved on 4 node(s))");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->text, "position 1 in queue default");
}

TEST(Why, TheReservedStartIsShownWithHowFarAwayItIs) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};  // 22:13:20
  JobDiagnosis d = DiagnoseJob(
      Job("Pending"),
      Pg("big-u1", "Inqueue",
         {Unschedulable("NotEnoughResources", "8/8 tasks in gang unschedulable"),
          Queued("position 1 in queue default; estimated start 2023-11-14T22:25:20Z (reserved on 4 node(s))")}),
      Queue());
  std::string out = RenderJobDiagnosis(d, clock);
  EXPECT_NE(out.find("  Starts:    2023-11-14T22:25:20Z (in 12m, reserved on 4 node(s); later only if running jobs "
                     "overrun their runningEstimate)\n"),
            std::string::npos)
      << out;
  json j = JobDiagnosisJson(d);
  EXPECT_EQ(j["startEstimate"]["kind"], "reservation");
  EXPECT_EQ(j["startEstimate"]["time"], "2023-11-14T22:25:20Z");
  EXPECT_EQ(j["startEstimate"]["reservedNodes"], 4);
}

TEST(Why, GangLargerThanTheClusterSaysWhatIsShort) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};
  const std::string msg =
      "8/8 tasks in gang unschedulable: 4 node(s) had insufficient cpu; short by cpu 24: the gang still needs 8 "
      "pod(s) (cpu 32) and the cluster has cpu 8 free";
  JobDiagnosis d = DiagnoseJob(Job("Pending"),
                               Pg("big-u1", "Inqueue", {Unschedulable("NotEnoughResources", msg),
                                                        Queued("position 1 in queue default")}),
                               Queue());
  EXPECT_TRUE(d.waiting);
  EXPECT_EQ(RenderJobDiagnosis(d, clock),
            "Job default/big is Pending.\n"
            "  PodGroup:  big-u1 (phase Inqueue, minMember 8, 0 running)\n"
            "  Queue:     default (Open, weight 2; allocated cpu 8, memory 16Gi)\n"
            "  Position:  1 (front of the line) in queue default\n"
            "  Why:       NotEnoughResources, for 5m\n"
            "             " + msg + "\n"
            "  What next: The whole gang starts at once, as soon as it fits: when running jobs free what is short, "
            "or nodes are added. Asking for fewer pods (minAvailable) or smaller pods lets it start sooner.\n");
  json j = JobDiagnosisJson(d);
  EXPECT_EQ(j["reason"], "NotEnoughResources");
  EXPECT_EQ(j["position"]["first"], 1);
  EXPECT_EQ(j["podGroup"]["phase"], "Inqueue");
}

// A request for a resource no node offers is refused with the cluster's capacity reason at enqueue and with
// node reasons in allocate; either way waiting does not help, and the hint says what does.
TEST(Why, AResourceNoNodeOffersGetsItsOwnHint) {
  for (const auto& [reason, msg] : std::vector<std::pair<std::string, std::string>>{
           {"OverClusterCapacity", "the job's minimum (minResources) requests example.com/foo, which no node offers"},
           {"NotEnoughResources", "1/1 tasks in gang unschedulable: 4 node(s) had insufficient example.com/foo, which no node offers"}}) {
    // json::array: a one-element brace list is a copy of the element for clang, an array for gcc.
    JobDiagnosis d = DiagnoseJob(Job("Pending"), Pg("big-u1", "Pending", json::array({Unschedulable(reason, msg)})), Queue());
    EXPECT_NE(d.hint.find("No node offers a resource the job asks for"), std::string::npos) << reason << ": " << d.hint;
    EXPECT_EQ(d.hint.find("full"), std::string::npos) << d.hint;
  }
}

TEST(Why, ClosedQueueAndRangesOfPositions) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};
  JobDiagnosis d = DiagnoseJob(
      Job("Pending"),
      Pg("big-u1", "Pending", {Unschedulable("QueueClosed", "queue default is closed and starts no jobs"),
                               Queued("position 21-30 in queue default")}),
      Queue("Closed"));
  std::string out = RenderJobDiagnosis(d, clock);
  EXPECT_NE(out.find("  Position:  21-30 in queue default\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  Queue:     default (Closed, weight 2;"), std::string::npos) << out;
  EXPECT_NE(out.find("vcctl queue operate -n default -a open"), std::string::npos) << out;
}

TEST(Why, RunningJobsAndMissingPieces) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};
  // Started: the old Unschedulable condition stays on the PodGroup, but Queued turned False.
  json started = Pg("big-u1", "Running", {Unschedulable("NotEnoughResources", "old"),
                                          {{"type", "Queued"}, {"status", "False"}, {"reason", "Started"}}});
  JobDiagnosis run = DiagnoseJob(Job("Running"), started, Queue());
  EXPECT_FALSE(run.waiting);
  EXPECT_EQ(RenderJobDiagnosis(run, clock), "Job default/big is Running: it is not waiting in a queue.\n");
  // No PodGroup: the controller is the one to look at.
  JobDiagnosis nopg = DiagnoseJob(Job("Pending"), json(), Queue());
  EXPECT_NE(nopg.hint.find("tephra controller"), std::string::npos);
  // A PodGroup nobody reported on: the scheduler is the one to look at.
  JobDiagnosis silent = DiagnoseJob(Job("Pending"), Pg("big-u1", "Pending", json::array()), json());
  EXPECT_NE(silent.hint.find("tephra scheduler"), std::string::npos);
  EXPECT_NE(RenderJobDiagnosis(silent, clock).find("  Queue:     default (does not exist)\n"), std::string::npos);
}

TEST(Why, QueueWhyListsTheLineFrontFirst) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};
  std::vector<json> pgs = {
      Pg("second", "Pending", {Unschedulable("OverDeserved", "queue default already uses its deserved share"),
                               Queued("position 2 in queue default")}),
      Pg("first", "Inqueue", {Unschedulable("NotEnoughResources", "short by cpu 24"),
                              Queued("position 1 in queue default")}),
      Pg("runs", "Running", json::array()),
      Pg("elsewhere", "Pending", json::array(), "other"),
  };
  EXPECT_EQ(RenderQueueWhy(Queue(), pgs, clock),
            "Queue default is Open, weight 2.\n"
            "  Allocated:  cpu 8, memory 16Gi\n"
            "  Capability: none (the whole cluster)\n"
            "  PodGroups:  1 running, 1 inqueue, 1 pending, 0 unknown, 0 completed\n"
            "  Waiting:    2 job(s): 1 NotEnoughResources, 1 OverDeserved\n"
            "\n"
            "  POSITION  JOB                                      PHASE    REASON               MESSAGE\n"
            "  1         default/first                            Inqueue  NotEnoughResources   short by cpu 24\n"
            "  2         default/second                           Pending  OverDeserved         queue default "
            "already uses its deserved share\n");
  json j = QueueWhyJson(Queue(), pgs);
  ASSERT_EQ(j["waiting"].size(), 2u);
  EXPECT_EQ(j["waiting"][0]["podGroup"], "default/first");
  EXPECT_EQ(j["podGroups"]["Running"], 1);
}

// Through the command line and the client: the PodGroup is found by the controller's naming, and a missing
// job exits with kExitNotFound.
TEST(Why, CommandReadsJobPodGroupAndQueue) {
  core::FakeClock clock{core::Clock::WallTime(seconds(kNow))};
  auto fake = std::make_shared<kube::testing::FakeClient>(&clock);
  json job = fake->Seed(api::Job::Resource(), Job("Pending"));
  const std::string pg_name = "big-" + job["metadata"]["uid"].get<std::string>();  // the controller's naming
  fake->Seed(api::PodGroup::Resource(),
             Pg(pg_name, "Inqueue", {Unschedulable("NotEnoughResources", "short by cpu 24"),
                                      Queued("position 4 in queue default")}));
  fake->Seed(api::Queue::Resource(), Queue());
  std::ostringstream out, err;
  Env env;
  env.out = &out;
  env.err = &err;
  env.clock = &clock;
  env.connect = [&](const ConnectionFlags&) -> core::StatusOr<Connection> { return Connection{fake, "https://t"}; };
  EXPECT_EQ(Main({"vcctl", "job", "why", "-N", "big"}, env), kExitOk) << err.str();
  EXPECT_NE(out.str().find("  Position:  4 in queue default\n"), std::string::npos) << out.str();
  out.str("");
  EXPECT_EQ(Main({"vcctl", "job", "why", "-N", "big", "-o", "json"}, env), kExitOk) << err.str();
  EXPECT_EQ(json::parse(out.str())["position"]["first"], 4);
  EXPECT_EQ(Main({"vcctl", "job", "why", "-N", "nope"}, env), kExitNotFound);
  EXPECT_NE(err.str().find("not found"), std::string::npos) << err.str();
  out.str("");
  EXPECT_EQ(Main({"vcctl", "queue", "why", "-n", "default"}, env), kExitOk) << err.str();
  EXPECT_NE(out.str().find("  4         default/" + pg_name), std::string::npos) << out.str();
}

}  // namespace
}  // namespace tephra::ctl
