// preempt and reclaim actions: whole cycles on small synthetic clusters.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fixture.h"

// GCC 12 reports a false -Wrestrict inside std::string's operator+ once the helpers below are inlined
// (GCC bug 105329); the code is plain string concatenation.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;

SchedulerConf EvictConf() {
  SchedulerConf c = Cluster::Conf();
  c.actions = {"enqueue", "allocate", "preempt", "reclaim", "backfill"};
  return c;
}

// A job of `n` running pods spread round-robin over `nodes`.
JobInfo RunningJob(Cluster& c, const std::string& name, int n, int min, Resource req, const std::vector<std::string>& nodes,
                   const std::string& queue = "default", int priority = 0, const std::string& pc = "",
                   const std::string& ns = "ns") {
  JobInfo j = c.Job(name, min, queue, priority);
  j.ns = ns;
  j.key = ns;
  j.key += '/';
  j.key += name;
  j.phase = PodGroupPhase::kRunning;
  c.AddJob(j);
  for (int i = 0; i < n; ++i) {
    TaskInfo t = c.Pod(j, i, req);
    t.status = TaskStatus::kRunning;
    t.node = nodes[static_cast<size_t>(i) % nodes.size()];
    t.priority = priority;
    t.priority_class_name = pc;
    c.st().UpsertPod(t);
  }
  return j;
}

JobInfo PendingJob(Cluster& c, const std::string& name, int n, int min, Resource req, const std::string& queue = "default",
                   int priority = 0) {
  JobInfo j = c.Job(name, min, queue, priority);
  c.AddJob(j);
  for (int i = 0; i < n; ++i) {
    TaskInfo t = c.Pod(j, i, req);
    t.priority = priority;
    c.st().UpsertPod(t);
  }
  return j;
}

std::set<std::string> VictimJobs(const CycleResult& r) {
  std::set<std::string> s;
  for (const auto& e : r.evictions) s.insert(e.job);
  return s;
}

// Simulates the evicted pods disappearing from the API.
void DeleteVictims(Cluster& c, const CycleResult& r) {
  for (const auto& e : r.evictions) c.st().RemovePod(e.task_uid);
}

int CountStatus(Cluster& c, const std::string& job, TaskStatus s) {
  int n = 0;
  for (const TaskInfo* t : c.st().TasksOfJob(job)) n += t->status == s;
  return n;
}

TEST(Preempt, HighPriorityGangEvictsLowerPriorityInSameQueueThenBinds) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Node("n1", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  RunningJob(c, "low", 8, 2, one, {"n0", "n1"}, "default", 1);
  PendingJob(c, "high", 4, 4, one, "default", 100);

  CycleResult r = c.Run();
  ASSERT_EQ(r.evictions.size(), 4u);
  for (const auto& e : r.evictions) {
    EXPECT_EQ(e.reason, "preempt");
    EXPECT_EQ(e.preemptor, "ns/high");
    EXPECT_EQ(e.job, "ns/low");
  }
  EXPECT_TRUE(r.binds.empty()) << "the preemptor waits for its victims to go";
  EXPECT_EQ(r.metrics.evictions, 4);
  EXPECT_EQ(CountStatus(c, "ns/low", TaskStatus::kRunning), 4) << "low keeps >= minMember (surplus only)";
  EXPECT_EQ(CountStatus(c, "ns/high", TaskStatus::kPending), 4) << "pipelined placements last one cycle";

  // Victims still terminating (and a stale informer update showing one Running): nothing more is evicted.
  TaskInfo stale = *c.st().FindTask(r.evictions[0].task_uid);
  stale.status = TaskStatus::kRunning;
  c.st().UpsertPod(stale);
  EXPECT_EQ(c.st().FindTask(stale.uid)->status, TaskStatus::kReleasing);
  for (int i = 0; i < 3; ++i) {
    CycleResult again = c.Run();
    EXPECT_TRUE(again.evictions.empty());
    EXPECT_TRUE(again.binds.empty());
  }

  DeleteVictims(c, r);
  CycleResult bound = c.Run();
  EXPECT_EQ(bound.binds.size(), 4u);
  EXPECT_EQ(c.BoundCount("ns/high"), 4);
  EXPECT_TRUE(bound.evictions.empty());
}

TEST(Preempt, EqualOrHigherPriorityIsNeverAVictim) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  RunningJob(c, "same", 4, 1, one, {"n0"}, "default", 50);
  PendingJob(c, "p50", 1, 1, one, "default", 50);
  CycleResult r = c.Run();
  EXPECT_TRUE(r.evictions.empty());
}

TEST(Preempt, GangThatCannotFitEvenAfterEvictionEvictsNothing) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Node("n1", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  for (int i = 0; i < 8; ++i) RunningJob(c, "low" + std::to_string(i), 1, 1, one, {i < 4 ? "n0" : "n1"}, "default", 1);
  PendingJob(c, "huge", 12, 12, one, "default", 100);  // 12 cpu > the cluster's 8
  for (int cycle = 0; cycle < 3; ++cycle) {
    CycleResult r = c.Run();
    EXPECT_TRUE(r.evictions.empty());
    EXPECT_TRUE(r.binds.empty());
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(CountStatus(c, "ns/low" + std::to_string(i), TaskStatus::kRunning), 1);
  EXPECT_EQ(c.st().FindNode("n0")->releasing, Resource());
}

// A failed victim search is memoised until its inputs change: neither idle cycles nor allocate's periodic
// retry of the same gang (which places and discards tasks) may restart it. Before, a 5,000-node cycle with
// 1,000 starving gangs spent ~100 ms per idle cycle re-searching.
TEST(Preempt, FailedVictimSearchIsNotRepeatedWhileNothingChanges) {
  Cluster c(EvictConf());
  c.Queue("default");
  for (int i = 0; i < 4; ++i) c.Node("n" + std::to_string(i), 4000, 16 * kGi);
  // n1..n3 hold 2.5-cpu pods of a higher priority (no victims anywhere); n0 is empty. Idle: 4 + 3 x 1.5 cpu.
  for (int i = 1; i < 4; ++i)
    RunningJob(c, "high" + std::to_string(i), 1, 1, Resource::CpuMem(2500, kGi), {"n" + std::to_string(i)}, "default", 1000);
  // 3 x 2 cpu = 6 <= 8.5 idle passes allocate's cluster-wide lower bound, so whenever allocate retries it
  // really places two tasks on n0, fails the third and discards.
  PendingJob(c, "frag", 3, 3, Resource::CpuMem(2000, kGi), "default", 10);
  CycleResult first = c.Run();
  EXPECT_GE(first.metrics.victim_searches, 1);
  EXPECT_TRUE(first.evictions.empty());
  int64_t later = 0, allocate_tries = 0;
  for (int cycle = 0; cycle < 25; ++cycle) {  // > 2 x the allocate retry interval (10 cycles)
    CycleResult r = c.Run();
    later += r.metrics.victim_searches;
    allocate_tries += r.metrics.jobs_considered;
    EXPECT_TRUE(r.evictions.empty());
    EXPECT_TRUE(r.binds.empty());
  }
  EXPECT_GE(allocate_tries, 2);  // the periodic allocate retry did happen
  EXPECT_EQ(later, 0);
  // A real change (a node added) is noticed: the gang is reconsidered and now fits.
  c.Node("n4", 4000, 16 * kGi);
  EXPECT_EQ(c.Run().binds.size(), 3u);
}

// Volcano evicts victims one by one, only until each preemptor task fits; it never takes a whole victim job
// because one of its tasks goes. With Helm's configuration (gang's enablePreemptable off) a default gang,
// minAvailable = replicas, loses as many pods as the preemptor needs and no more.
TEST(Preempt, VictimsGoOneByOneUntilThePreemptorFitsNeverTheWholeGang) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Node("n1", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  RunningJob(c, "gang", 8, 8, one, {"n0", "n1"}, "default", 1);
  PendingJob(c, "high", 2, 2, one, "default", 100);
  CycleResult r = c.Run();
  EXPECT_EQ(r.evictions.size(), 2u);
  EXPECT_EQ(VictimJobs(r), std::set<std::string>{"ns/gang"});
  EXPECT_EQ(CountStatus(c, "ns/gang", TaskStatus::kRunning), 6);
}

SchedulerConf GangPreemptableConf() {
  SchedulerConf c = EvictConf();
  for (auto& p : c.tiers[0].plugins)
    if (p.name == "gang") p.enable_preemptable = true;
  return c;
}

// With gang's enablePreemptable on, only tasks above minAvailable are offered: a default gang is never a
// victim, and an elastic one gives up its surplus only.
TEST(Preempt, GangPreemptableOffersOnlyTasksAboveMinAvailable) {
  {
    Cluster c(GangPreemptableConf());
    c.Queue("default");
    c.Node("n0", 4000, 16 * kGi);
    c.Node("n1", 4000, 16 * kGi);
    Resource one = Resource::CpuMem(1000, kGi);
    RunningJob(c, "gang", 8, 8, one, {"n0", "n1"}, "default", 1);
    PendingJob(c, "high", 1, 1, one, "default", 100);
    for (int cycle = 0; cycle < 2; ++cycle) EXPECT_TRUE(c.Run().evictions.empty());
    EXPECT_EQ(CountStatus(c, "ns/gang", TaskStatus::kRunning), 8);
  }
  {
    Cluster c(GangPreemptableConf());
    c.Queue("default");
    c.Node("n0", 4000, 16 * kGi);
    c.Node("n1", 4000, 16 * kGi);
    Resource one = Resource::CpuMem(1000, kGi);
    RunningJob(c, "elastic", 8, 6, one, {"n0", "n1"}, "default", 1);
    PendingJob(c, "three", 3, 3, one, "default", 100);  // needs 3, the surplus is 2: nothing is evicted
    EXPECT_TRUE(c.Run().evictions.empty());
    EXPECT_EQ(CountStatus(c, "ns/elastic", TaskStatus::kRunning), 8);
  }
  {
    Cluster c(GangPreemptableConf());
    c.Queue("default");
    c.Node("n0", 4000, 16 * kGi);
    c.Node("n1", 4000, 16 * kGi);
    Resource one = Resource::CpuMem(1000, kGi);
    RunningJob(c, "elastic", 8, 6, one, {"n0", "n1"}, "default", 1);
    PendingJob(c, "two", 2, 2, one, "default", 100);
    CycleResult r = c.Run();
    EXPECT_EQ(r.evictions.size(), 2u);
    EXPECT_EQ(CountStatus(c, "ns/elastic", TaskStatus::kRunning), 6);
  }
}

// volcano.sh/preemptable: "false" keeps a pod out of every victim list, in preempt and in reclaim.
TEST(Preempt, PodsMarkedNotPreemptableAreNeverVictims) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  JobInfo low = RunningJob(c, "low", 4, 1, one, {"n0"}, "default", 1);
  std::vector<TaskInfo> tasks;
  for (const TaskInfo* t : c.st().TasksOfJob(low.key)) tasks.push_back(*t);
  std::sort(tasks.begin(), tasks.end(), [](const TaskInfo& a, const TaskInfo& b) { return a.uid < b.uid; });
  for (TaskInfo& t : tasks) {
    t.preemptable = false;
    c.st().UpsertPod(t);
  }
  PendingJob(c, "high", 1, 1, one, "default", 100);
  for (int cycle = 0; cycle < 2; ++cycle) EXPECT_TRUE(c.Run().evictions.empty());
  // One pod loses the mark: it, and only it, is the victim.
  tasks[2].preemptable = true;
  c.st().UpsertPod(tasks[2]);
  CycleResult r = c.Run();
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].task_uid, tasks[2].uid);
}

TEST(Preempt, CriticalPodsAreNeverVictims) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Node("n1", 4000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  RunningJob(c, "critical", 4, 1, one, {"n0"}, "default", 1, "system-cluster-critical");
  RunningJob(c, "nodecrit", 2, 1, one, {"n1"}, "default", 1, "system-node-critical");
  RunningJob(c, "sys", 2, 1, one, {"n1"}, "default", 1, "", "kube-system");
  PendingJob(c, "high", 2, 2, one, "default", 100);
  for (int cycle = 0; cycle < 2; ++cycle) EXPECT_TRUE(c.Run().evictions.empty());

  // The same cluster with one ordinary low-priority pod: only that one is a victim, and one is not enough
  // for a 2-pod gang, so still nothing is evicted.
  RunningJob(c, "plain", 1, 1, one, {"n1"}, "default", 1);  // n1 now over-full; fine for the test
  EXPECT_TRUE(c.Run().evictions.empty());
}

TEST(Preempt, DecisionsAreDeterministic) {
  auto build = [](bool reverse) {
    auto c = std::make_unique<Cluster>(EvictConf());
    c->Queue("default");
    std::vector<int> order = {0, 1, 2, 3};
    if (reverse) std::reverse(order.begin(), order.end());
    for (int i : order) c->Node("n" + std::to_string(i), 4000, 16 * kGi);
    Resource one = Resource::CpuMem(1000, kGi);
    // Jobs are created in the same order (creation order is data: it ranks victims); nodes arrive in a
    // different order, and the two instances hold their tasks at different addresses (hash-set order).
    for (int j = 0; j < 6; ++j) {
      RunningJob(*c, "low" + std::to_string(j), 2, 1, one, {"n" + std::to_string(j % 4), "n" + std::to_string((j + 1) % 4)},
                 "default", j % 3);
    }
    PendingJob(*c, "high", 6, 6, Resource::CpuMem(1500, kGi), "default", 100);
    return c;
  };
  auto a = build(false), b = build(true);
  CycleResult ra = a->Run(), rb = b->Run();
  ASSERT_FALSE(ra.evictions.empty());
  ASSERT_EQ(ra.evictions.size(), rb.evictions.size());
  std::multiset<std::string> ua, ub;
  for (const auto& e : ra.evictions) ua.insert(e.task_uid);
  for (const auto& e : rb.evictions) ub.insert(e.task_uid);
  EXPECT_EQ(ua, ub);
}

// Queues a and b (weight 1 each) on 16 cpu; a took everything while b was empty.
void BuildReclaim(Cluster& c, bool a_reclaimable) {
  c.Queue("default");
  QueueInfo qa;
  qa.name = "a";
  qa.reclaimable = a_reclaimable;
  c.st().UpsertQueue(qa);
  c.Queue("b");
  for (int i = 0; i < 4; ++i) c.Node("n" + std::to_string(i), 4000, 64 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  for (int i = 0; i < 16; ++i) RunningJob(c, "a" + std::to_string(i), 1, 1, one, {"n" + std::to_string(i % 4)}, "a");
  for (int i = 0; i < 16; ++i) PendingJob(c, "b" + std::to_string(i), 1, 1, one, "b");
}

TEST(Reclaim, RestoresOneToOneSplitBetweenWeightOneQueues) {
  Cluster c(EvictConf());
  BuildReclaim(c, true);
  CycleResult r = c.Run();
  ASSERT_EQ(r.evictions.size(), 8u);
  for (const auto& e : r.evictions) {
    EXPECT_EQ(e.reason, "reclaim");
    EXPECT_EQ(e.job.rfind("ns/a", 0), 0u) << e.job;
    EXPECT_EQ(e.preemptor.rfind("ns/b", 0), 0u) << e.preemptor;
  }
  EXPECT_EQ(c.st().FindQueue("a")->allocated.Get(kCpu), 8000);
  // Nothing more while the victims terminate.
  EXPECT_TRUE(c.Run().evictions.empty());
  DeleteVictims(c, r);
  CycleResult bound = c.Run();
  EXPECT_EQ(bound.binds.size(), 8u);
  EXPECT_EQ(c.st().FindQueue("a")->allocated.Get(kCpu), 8000);
  EXPECT_EQ(c.st().FindQueue("b")->allocated.Get(kCpu), 8000);
  // The job controller recreates a's lost pods: a is at its share, so it reclaims nothing back.
  for (const auto& e : r.evictions) {
    JobInfo j = *c.st().FindJob(e.job);
    c.st().UpsertPod(c.Pod(j, 100, Resource::CpuMem(1000, kGi)));
  }
  for (int cycle = 0; cycle < 3; ++cycle) {
    CycleResult x = c.Run();
    EXPECT_TRUE(x.evictions.empty());
    EXPECT_TRUE(x.binds.empty());
  }
  EXPECT_EQ(c.st().FindQueue("b")->allocated.Get(kCpu), 8000);
}

TEST(Reclaim, NonReclaimableQueueIsNotReclaimed) {
  Cluster c(EvictConf());
  BuildReclaim(c, false);
  for (int cycle = 0; cycle < 3; ++cycle) EXPECT_TRUE(c.Run().evictions.empty());
  EXPECT_EQ(c.st().FindQueue("a")->allocated.Get(kCpu), 16000);
}

TEST(Reclaim, PodsMarkedNotPreemptableAreNeverReclaimed) {
  Cluster c(EvictConf());
  BuildReclaim(c, true);
  for (int i = 0; i < 16; ++i) {
    std::vector<TaskInfo> copies;
    for (const TaskInfo* t : c.st().TasksOfJob("ns/a" + std::to_string(i))) copies.push_back(*t);
    for (TaskInfo& t : copies) {
      t.preemptable = false;
      c.st().UpsertPod(t);
    }
  }
  for (int cycle = 0; cycle < 3; ++cycle) EXPECT_TRUE(c.Run().evictions.empty());
  EXPECT_EQ(c.st().FindQueue("a")->allocated.Get(kCpu), 16000);
}

TEST(Reclaim, PreemptAloneDoesNotCrossQueues) {
  SchedulerConf conf = EvictConf();
  conf.actions = {"enqueue", "allocate", "preempt"};
  Cluster c(conf);
  BuildReclaim(c, true);
  EXPECT_TRUE(c.Run().evictions.empty());
}

TEST(Evict, FailedDeleteRestoresTheVictim) {
  Cluster c(EvictConf());
  c.Queue("default");
  c.Node("n0", 2000, 16 * kGi);
  Resource one = Resource::CpuMem(1000, kGi);
  RunningJob(c, "low", 2, 1, one, {"n0"}, "default", 1);
  PendingJob(c, "high", 1, 1, one, "default", 100);
  CycleResult r = c.Run();
  ASSERT_EQ(r.evictions.size(), 1u);
  const std::string uid = r.evictions[0].task_uid;
  EXPECT_EQ(c.st().FindTask(uid)->status, TaskStatus::kReleasing);
  c.st().EvictFailed(uid);
  EXPECT_EQ(c.st().FindTask(uid)->status, TaskStatus::kRunning);
  EXPECT_EQ(c.st().FindNode("n0")->releasing, Resource());
  // The next cycle may choose it again (the need is still there).
  CycleResult again = c.Run();
  EXPECT_EQ(again.evictions.size(), 1u);
}

// A preemptor whose nodeSelector matches no node evicts nobody and is placed nowhere, in preempt and in reclaim,
// with and without reservations: victims are only worth taking on a node the pod may use.
TEST(Preempt, NodeSelectorMatchingNoNodeEvictsNothing) {
  for (int depth : {0, 1}) {
    SchedulerConf conf = EvictConf();
    conf.core.reservation_depth = depth;
    Cluster c(conf);
    c.Queue("default");
    c.Queue("b");
    for (int i = 0; i < 2; ++i) c.Node("n" + std::to_string(i), 4000, 16 * kGi);
    RunningJob(c, "low", 8, 1, Resource::CpuMem(1000, kGi), {"n0", "n1"}, "default", 0);
    JobInfo j = c.Job("picky", 1, "b", 100);
    c.AddJob(j);
    TaskInfo t = c.Pod(j, 0, Resource::CpuMem(100, 128LL << 20));
    t.priority = 100;
    t.node_selector = {{"e2e-pool", "none"}};
    c.st().UpsertPod(t);
    for (int cycle = 0; cycle < 4; ++cycle) {
      CycleResult r = c.RunAt(cycle);
      EXPECT_TRUE(r.evictions.empty()) << "depth " << depth << " cycle " << cycle;
      for (const auto& b : r.binds) EXPECT_NE(b.job, "ns/picky") << "depth " << depth << ": bound to " << b.node;
    }
    EXPECT_EQ(c.BoundCount("ns/picky"), 0);
  }
}

}  // namespace
}  // namespace tephra::sched
