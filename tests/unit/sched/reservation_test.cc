// Reservations and time-limit backfill on a fake clock (docs/reservations.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fixture.h"
#include "tephra/sched/reservation.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;
using namespace std::chrono_literals;

const WallTime kNow = WallTime(std::chrono::seconds(2'000'000'000));

SchedulerConf Conf(int depth) {
  SchedulerConf c = Cluster::Conf();
  c.core.reservation_depth = depth;
  c.core.estimate_resolution_seconds = 0;
  return c;
}

class Reservations : public ::testing::Test {
 protected:
  explicit Reservations(int depth = 1) : c_(Conf(depth)) {}
  Resource Gpus(int n) { return Resource::CpuMem(1000, 4 * kGi).With(c_.gpu(), n); }
  // A job already running `pods` pods of 8 GPUs on `nodes`, started at kNow, expected to run `estimate`.
  void Running(const std::string& name, const std::vector<std::string>& nodes, std::chrono::seconds estimate) {
    JobInfo j = c_.Job(name, static_cast<int>(nodes.size()));
    j.running_estimate = estimate;
    j.phase = PodGroupPhase::kRunning;
    c_.AddJob(j);
    for (size_t i = 0; i < nodes.size(); ++i) {
      TaskInfo t = c_.Pod(j, static_cast<int>(i), Gpus(8));
      t.status = TaskStatus::kRunning;
      t.node = nodes[i];
      t.start_time = kNow;
      c_.st().UpsertPod(t);
    }
  }
  // A waiting gang of `pods` pods of `gpus` GPUs each; estimate 0 = none given.
  JobInfo Waiting(const std::string& name, int pods, int gpus, std::chrono::seconds estimate,
                  NetworkTopology nt = {}) {
    JobInfo j = c_.Job(name, pods);
    j.running_estimate = estimate;
    j.phase = PodGroupPhase::kInqueue;
    j.network_topology = nt;
    c_.AddJob(j);
    for (int i = 0; i < pods; ++i) c_.st().UpsertPod(c_.Pod(j, i, Gpus(gpus)));
    return j;
  }
  const StartEstimate* Estimate(const CycleResult& r, const std::string& key) {
    for (const auto& e : r.estimates)
      if (e.job == key) return &e;
    return nullptr;
  }
  std::set<std::string> NodesOf(const std::string& key) {
    std::set<std::string> out;
    for (const TaskInfo* t : c_.st().TasksOfJob(key))
      if (!t->node.empty()) out.insert(t->node);
    return out;
  }
  // n0 frees in 100 s, n1 and n2 in 1000 s, n3 is idle: a gang of two whole nodes cannot start now, and its
  // earliest start is in 100 s on n0 and n3.
  void FourNodes() {
    c_.Queue("default");
    for (int i = 0; i < 4; ++i) c_.Node("n" + std::to_string(i), 64000, 512 * kGi, 8);
    Running("mid", {"n0"}, 100s);
    Running("long", {"n1", "n2"}, 1000s);
  }
  Cluster c_;
};

class NoReservations : public Reservations {
 protected:
  NoReservations() : Reservations(0) {}
};

TEST_F(Reservations, ABigGangGetsTheEarliestStartAndTheNodesItWillUse) {
  FourNodes();
  Waiting("big", 2, 8, 600s);
  CycleResult r = c_.Run();
  EXPECT_TRUE(r.binds.empty());
  const StartEstimate* e = Estimate(r, "ns/big");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(e->at, kNow + 100s);
  EXPECT_EQ(std::set<std::string>(e->nodes.begin(), e->nodes.end()), (std::set<std::string>{"n0", "n3"}));
}

TEST_F(Reservations, ShortJobsBackfillLongAndUnestimatedOnesStayOut) {
  FourNodes();
  Waiting("big", 2, 8, 600s);
  Waiting("long-small", 1, 8, 500s);  // would still hold n3 when big is due
  Waiting("no-estimate", 1, 8, 0s);   // could run for ever
  Waiting("short", 1, 8, 50s);        // done before big is due
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].job, "ns/short");
  EXPECT_EQ(r.binds[0].node, "n3");
  EXPECT_EQ(c_.BoundCount("ns/long-small"), 0);
  EXPECT_EQ(c_.BoundCount("ns/no-estimate"), 0);
}

TEST_F(NoReservations, WithoutReservationsTheFirstSmallJobTakesTheFreedNode) {
  // The behaviour the reservation exists to prevent: the node goes to the long job behind the gang.
  FourNodes();
  Waiting("big", 2, 8, 600s);
  Waiting("long-small", 1, 8, 500s);
  CycleResult r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].job, "ns/long-small");
  EXPECT_TRUE(r.estimates.empty());
}

TEST_F(Reservations, TheGangStartsAtItsReservedTimeWhileAStreamOfSmallJobsArrives) {
  FourNodes();
  Waiting("big", 2, 8, 600s);
  c_.Run();
  // One-GPU jobs keep arriving, each asking for an hour: none may take n3 or what frees on n0.
  for (int k = 0; k < 5; ++k) {
    Waiting("small-" + std::to_string(k), 1, 1, 3600s);
    CycleResult r = c_.RunAt(10 * (k + 1));
    EXPECT_TRUE(r.binds.empty()) << "small-" << k << " took reserved capacity";
  }
  // At 100 s the pod on n0 ends: the gang starts there and on n3 in that cycle.
  c_.st().RemovePod("mid-0");
  CycleResult r = c_.RunAt(100);
  EXPECT_EQ(c_.BoundCount("ns/big"), 2);
  EXPECT_EQ(NodesOf("ns/big"), (std::set<std::string>{"n0", "n3"}));
  for (const auto& b : r.binds) EXPECT_EQ(b.job, "ns/big");
}

TEST_F(Reservations, AJobSharingAReservedNodeMayUseWhatTheGangLeaves) {
  // Three pods of 4 GPUs: at 100 s they take n0 whole and half of n3. A long job may take the other half of
  // n3 now (3 GPUs fit in it), not more (5 GPUs do not).
  FourNodes();
  Waiting("big", 3, 4, 600s);
  Waiting("five", 1, 5, 5000s);
  Waiting("three", 1, 3, 5000s);
  CycleResult r = c_.Run();
  const StartEstimate* e = Estimate(r, "ns/big");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(e->at, kNow + 100s);
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].job, "ns/three");
  EXPECT_EQ(r.binds[0].node, "n3");
}

TEST_F(Reservations, AHardTopologyReservationStaysInsideOneLeaf) {
  c_.Queue("default");
  for (const auto& [name, leaf] : std::vector<std::pair<std::string, std::string>>{
           {"a0", "leaf-a"}, {"a1", "leaf-a"}, {"b0", "leaf-b"}, {"b1", "leaf-b"}})
    c_.Node(name, 64000, 512 * kGi, 8, {{"volcano.sh/hypernode-leaf", leaf}});
  Running("mid", {"a0"}, 100s);
  Running("long", {"b0"}, 1000s);
  // a1 and b1 are idle now, but in different leaves.
  NetworkTopology nt;
  nt.mode = TopologyMode::kHard;
  nt.highest_tier_allowed = 1;
  Waiting("big", 2, 8, 600s, nt);
  CycleResult r = c_.Run();
  EXPECT_TRUE(r.binds.empty());
  const StartEstimate* e = Estimate(r, "ns/big");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(e->at, kNow + 100s);
  EXPECT_EQ(std::set<std::string>(e->nodes.begin(), e->nodes.end()), (std::set<std::string>{"a0", "a1"}));
  // b1 is outside the reservation: a long job may have it; a1 is held.
  Waiting("other", 1, 8, 5000s);
  r = c_.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "b1");
}

TEST_F(Reservations, NoReservationBeyondTheQueuesCapability) {
  c_.Queue("default", 100);  // its deserved share covers everything it runs: only the capped queue is limited
  c_.Queue("capped", 1, Resource::Unlimited().With(c_.gpu(), 8));
  for (int i = 0; i < 4; ++i) c_.Node("n" + std::to_string(i), 64000, 512 * kGi, 8);
  Running("mid", {"n0"}, 100s);
  Running("long", {"n1", "n2"}, 1000s);
  JobInfo j = c_.Job("big", 2, "capped");
  j.running_estimate = 600s;
  j.phase = PodGroupPhase::kInqueue;
  c_.AddJob(j);
  for (int i = 0; i < 2; ++i) c_.st().UpsertPod(c_.Pod(j, i, Gpus(8)));
  Waiting("small", 1, 8, 5000s);
  CycleResult r = c_.Run();
  const StartEstimate* e = Estimate(r, "ns/big");
  if (e) {
    EXPECT_NE(e->kind, StartEstimate::Kind::kReserved);
  }
  // Nothing is held for a gang its queue may never run: the small job takes n3.
  EXPECT_EQ(c_.BoundCount("ns/small"), 1);
}

TEST_F(Reservations, TheEstimateIsInTheQueuedCondition) {
  FourNodes();
  Waiting("big", 2, 8, 600s);
  CycleResult r = c_.Run();
  const PodGroupStatusUpdate* u = nullptr;
  for (const auto& p : r.pod_groups)
    if (p.job == "ns/big") u = &p;
  ASSERT_NE(u, nullptr);
  ASSERT_EQ(u->conditions.size(), 2u);
  EXPECT_EQ(u->conditions[1].type, "Queued");
  EXPECT_EQ(u->conditions[1].message,
            "position 1 in queue default; estimated start " + core::FormatRfc3339(kNow + 100s) +
                " (reserved on 2 node(s))");
}

TEST_F(Reservations, PodsWithoutAnEstimateLeaveNoStartTime) {
  c_.Queue("default");
  for (int i = 0; i < 2; ++i) c_.Node("n" + std::to_string(i), 64000, 512 * kGi, 8);
  Running("forever", {"n0", "n1"}, 0s);
  Waiting("big", 2, 8, 600s);
  CycleResult r = c_.Run();
  const StartEstimate* e = Estimate(r, "ns/big");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, StartEstimate::Kind::kUnknown);
  EXPECT_NE(e->why.find("without a runningEstimate"), std::string::npos) << e->why;
}

TEST_F(Reservations, TheQueueDefaultAndMaximumSetTheEstimate) {
  QueueInfo q;
  q.name = "default";
  q.default_running_estimate = 200s;
  q.max_running_estimate = 300s;
  JobInfo none, big, small;
  none.running_estimate = 0s;
  big.running_estimate = 5000s;
  small.running_estimate = 10s;
  EXPECT_EQ(EffectiveEstimate(none, &q), 200s);
  EXPECT_EQ(EffectiveEstimate(big, &q), 300s);
  EXPECT_EQ(EffectiveEstimate(small, &q), 10s);
  EXPECT_EQ(EffectiveEstimate(none, nullptr), 0s);
}

// A gang the cluster has no room for now is admitted (Inqueue) so the controller makes its pods and it can get a
// reservation; without reservations overcommit keeps it Pending.
JobInfo PendingBig(Cluster& c) {
  JobInfo j = c.Job("big", 2);
  j.running_estimate = 600s;
  j.phase = PodGroupPhase::kPending;
  j.min_resources = Resource::CpuMem(2000, 8 * kGi).With(c.gpu(), 16).With(kPods, 2);
  c.AddJob(j);
  return j;
}

TEST_F(Reservations, EnqueueAdmitsTheGangItCannotFitNowSoItCanBeReserved) {
  FourNodes();
  PendingBig(c_);
  c_.Run();
  EXPECT_EQ(c_.st().FindJob("ns/big")->phase, PodGroupPhase::kInqueue);
}

TEST_F(Reservations, JobsBehindAGangAdmittedForItsReservationAreStillAdmitted) {
  // The gang admitted past overcommit does not use up overcommit's budget: a short job behind it is admitted
  // too (and then backfills, or not, by the reservation's rule).
  FourNodes();
  PendingBig(c_);
  JobInfo s = c_.Job("short", 1);
  s.running_estimate = 10s;
  s.phase = PodGroupPhase::kPending;
  s.min_resources = Gpus(8).With(kPods, 1);
  c_.AddJob(s);
  c_.Run();
  EXPECT_EQ(c_.st().FindJob("ns/big")->phase, PodGroupPhase::kInqueue);
  EXPECT_EQ(c_.st().FindJob("ns/short")->phase, PodGroupPhase::kInqueue);
}

TEST_F(NoReservations, OvercommitKeepsTheGangPendingWithoutReservations) {
  FourNodes();
  PendingBig(c_);
  c_.Run();
  EXPECT_EQ(c_.st().FindJob("ns/big")->phase, PodGroupPhase::kPending);
}

TEST_F(Reservations, WhatIfAnswersWhenAndWhereANewJobWouldStart) {
  FourNodes();
  Waiting("big", 2, 8, 600s);  // reserved: n0 + n3 from 100 s to 700 s
  c_.Run();
  auto ask = [&](const std::string& name, int pods, int gpus, std::chrono::seconds est) {
    JobInfo j = c_.Job(name, pods);
    j.running_estimate = est;
    std::vector<TaskInfo> tasks;
    for (int i = 0; i < pods; ++i) tasks.push_back(c_.Pod(j, i, Gpus(gpus)));
    auto e = c_.s().WhatIf(j, tasks, kNow);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : StartEstimate{};
  };
  // A 50 s job ends before big is due: it would start now, on the idle n3.
  StartEstimate quick = ask("quick", 1, 8, 50s);
  EXPECT_EQ(quick.kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(quick.at, kNow);
  EXPECT_EQ(quick.nodes, std::vector<std::string>{"n3"});
  // An hour-long one waits for big to be done with n0 and n3 (700 s), before n1 and n2 free (1000 s).
  StartEstimate slow = ask("slow", 1, 8, 3600s);
  EXPECT_EQ(slow.kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(slow.at, kNow + 700s);
  // Nothing was added to the state.
  EXPECT_EQ(c_.st().FindJob("ns/quick"), nullptr);
  EXPECT_EQ(c_.st().FindTask("quick-0"), nullptr);
}

class Conservative : public Reservations {
 protected:
  Conservative() : Reservations(8) {}
};

TEST_F(Conservative, TheSecondGangsReservationDoesNotTakeTheFirstsNodes) {
  FourNodes();
  Waiting("big", 2, 8, 600s);   // n0 + n3 at 100 s, until 700 s
  Waiting("big2", 2, 8, 600s);  // n0 + n3 again once big is done, before n1 and n2 free at 1000 s
  CycleResult r = c_.Run();
  const StartEstimate* e1 = Estimate(r, "ns/big");
  const StartEstimate* e2 = Estimate(r, "ns/big2");
  ASSERT_NE(e1, nullptr);
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e1->kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(e2->kind, StartEstimate::Kind::kReserved);
  EXPECT_EQ(e1->at, kNow + 100s);
  EXPECT_EQ(e2->at, kNow + 700s);
  EXPECT_EQ(std::set<std::string>(e2->nodes.begin(), e2->nodes.end()), (std::set<std::string>{"n0", "n3"}));
}

TEST_F(Reservations, BeyondTheDepthAGangGetsAPlannedStart) {
  FourNodes();
  Waiting("big", 2, 8, 600s);   // reserved: n0 + n3, 100 s to 700 s
  Waiting("big2", 2, 8, 600s);  // planned behind it: 700 s
  Waiting("small", 1, 8, 5000s);
  CycleResult r = c_.Run();
  const StartEstimate* e2 = Estimate(r, "ns/big2");
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e2->kind, StartEstimate::Kind::kPlanned);
  EXPECT_EQ(e2->at, kNow + 700s);
  EXPECT_TRUE(e2->nodes.empty());
  // A plan holds nothing: only the reservation limits the jobs behind (n3 stays held for big).
  EXPECT_EQ(c_.BoundCount("ns/small"), 0);
}

}  // namespace
}  // namespace tephra::sched
