// "Why is my job pending": every gate that holds a job back names itself in the PodGroup's Unschedulable
// condition, and every waiting job carries its queue position in a Queued condition whose writes stay
// bounded however many jobs wait (docs/why-pending.md).
#include <map>
#include <memory>
#include <string>

#include "fixture.h"

namespace tephra::sched::testing {
namespace {

const PodGroupStatusUpdate* FindPg(const CycleResult& r, const std::string& key) {
  for (const auto& u : r.pod_groups)
    if (u.job == key) return &u;
  return nullptr;
}

const PodGroupCondition* Cond(const PodGroupStatusUpdate* u, const std::string& type) {
  if (!u) return nullptr;
  for (const auto& c : u->conditions)
    if (c.type == type) return &c;
  return nullptr;
}

// A line of `jobs` one-pod jobs j<first>, j<first+1>, ... in queue default, on one node that runs one at a
// time; positions recomputed every second and written with the given budget.
std::unique_ptr<Cluster> Line(int jobs, int first, double per_second, double burst) {
  SchedulerConf conf = Cluster::Conf();
  conf.core.queue_position_interval_ms = 1000;
  conf.core.position_writes_per_second = per_second;
  conf.core.position_write_burst = burst;
  auto c = std::make_unique<Cluster>(conf);
  c->Queue("default");
  c->Node("n0", 1000, 16 * kGi);
  for (int i = 0; i < jobs; ++i) c->Gang("j" + std::to_string(first + i), 1, Resource::Cpu(1000));
  return c;
}

// The line's job j<n> finished: it leaves, and the next can start.
void Finish(Cluster& c, int n) {
  c.st().RemovePod("j" + std::to_string(n) + "-0");
  c.st().RemoveJob("ns/j" + std::to_string(n));
}

// Records the last Queued message emitted for each job.
void CollectQueued(const CycleResult& r, std::map<std::string, std::string>* out) {
  for (const auto& u : r.pod_groups)
    if (const PodGroupCondition* q = Cond(&u, "Queued")) (*out)[u.job] = q->message;
}

TEST(WhyPending, ClosedAndMissingQueuesSaySo) {
  Cluster c;
  QueueInfo closed;
  closed.name = "closed";
  closed.state = QueueState::kClosed;
  c.st().UpsertQueue(closed);
  c.Node("n0", 8000, 64 * kGi);
  c.Gang("in-closed", 1, Resource::Cpu(1000), "closed");
  c.Gang("in-missing", 1, Resource::Cpu(1000), "nope");
  CycleResult r = c.Run();
  const PodGroupCondition* a = Cond(FindPg(r, "ns/in-closed"), "Unschedulable");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->reason, "QueueClosed");
  EXPECT_EQ(a->message, "queue closed is closed and starts no jobs; open it (vcctl queue operate -n closed -a open)");
  const PodGroupCondition* b = Cond(FindPg(r, "ns/in-missing"), "Unschedulable");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->reason, "QueueNotFound");
  EXPECT_NE(b->message.find("queue nope does not exist"), std::string::npos) << b->message;
  // One Event per change, not per cycle.
  r = c.Run();
  EXPECT_EQ(FindPg(r, "ns/in-closed"), nullptr);
  EXPECT_TRUE(r.events.empty());
}

TEST(WhyPending, EnqueueRefusalNamesTheCapabilityAndTheShortfall) {
  Cluster c;
  c.Queue("small", 1, Resource::Unlimited().With(kCpu, 4000));
  c.Node("n0", 64000, 256 * kGi);
  JobInfo j = c.Job("big", 2, "small");
  j.min_resources = Resource::CpuMem(6000, 8 * kGi);
  c.AddJob(j);
  CycleResult r = c.Run();
  const PodGroupCondition* u = Cond(FindPg(r, "ns/big"), "Unschedulable");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->reason, "OverCapability");
  EXPECT_EQ(u->message,
            "queue small would exceed its capability (cpu 4, memory 256Gi) by cpu 2: the job's minimum is cpu 6, "
            "memory 8Gi, the queue already holds cpu 0, memory 0 (allocated and admitted)");
  // Without a capability of its own, the cluster is the limit, and the reason says so.
  JobInfo huge = c.Job("huge", 1, "default");
  c.Queue("default");
  huge.min_resources = Resource::Cpu(70000);  // within overcommit's 64 x 1.2, over proportion's 64
  c.AddJob(huge);
  r = c.RunAt(1);
  const PodGroupCondition* h = Cond(FindPg(r, "ns/huge"), "Unschedulable");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->reason, "OverClusterCapacity");
  EXPECT_EQ(h->message,
            "queue default would exceed what the cluster leaves it (cpu 64: the cluster's total less other queues' "
            "guarantees) by cpu 6: the job's minimum is cpu 70, the queue already holds cpu 0 (allocated and "
            "admitted)");
}

// A pod that requests a resource no node offers (resource.h, kUnoffered) fits no node, whatever else is free,
// and the reason names the resource as kube-scheduler's "Insufficient <name>" does; a gang whose minResources
// names one is not admitted, and says which.
TEST(WhyPending, ResourceNoNodeOffersIsNamedNotIgnored) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 8000, 64 * kGi);
  c.Node("n1", 8000, 64 * kGi);
  JobInfo j = c.Job("foo", 2);
  c.AddJob(j);
  c.st().UpsertPod(c.Pod(j, 0, Resource::Cpu(1000)));
  TaskInfo t = c.Pod(j, 1, Resource::Cpu(1000).With(kUnoffered, 1));
  t.unoffered = {"example.com/foo"};
  c.st().UpsertPod(t);
  CycleResult r = c.Run();
  EXPECT_EQ(c.BoundCount("ns/foo"), 0) << "the gang of two cannot start with one pod";
  const PodGroupCondition* u = Cond(FindPg(r, "ns/foo"), "Unschedulable");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->reason, "NotEnoughResources");
  EXPECT_NE(u->message.find("2 node(s) had insufficient example.com/foo, which no node offers"), std::string::npos)
      << u->message;

  // With a minimum of one, the other pod runs; the one that asks for the resource never does.
  JobInfo one = c.Job("one", 1);
  c.AddJob(one);
  c.st().UpsertPod(c.Pod(one, 0, Resource::Cpu(1000)));
  TaskInfo t1 = c.Pod(one, 1, Resource::Cpu(1000).With(kUnoffered, 1));
  t1.unoffered = {"example.com/foo"};
  c.st().UpsertPod(t1);
  c.RunAt(1);
  EXPECT_EQ(c.BoundCount("ns/one"), 1);
  EXPECT_EQ(c.st().FindTask(t1.uid)->status, TaskStatus::kPending);

  JobInfo g = c.Job("bar", 1);
  g.min_resources = Resource::Cpu(1000).With(kUnoffered, 1);
  g.unoffered = {"example.com/bar", "example.com/baz"};
  c.AddJob(g);
  r = c.RunAt(2);
  const PodGroupCondition* h = Cond(FindPg(r, "ns/bar"), "Unschedulable");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->reason, "OverClusterCapacity");
  EXPECT_EQ(h->message,
            "the job's minimum (minResources) requests example.com/bar, example.com/baz, which no node offers");
  EXPECT_EQ(c.st().FindJob("ns/bar")->phase, PodGroupPhase::kPending);
}

TEST(WhyPending, OverusedQueueExplainsItsDeservedShare) {
  Cluster c;
  c.Queue("a");
  c.Queue("b");
  c.Node("n0", 16000, 64 * kGi);
  // Queue a runs 8 of the 16 CPUs; then b asks for 9 (in one pod, which fits nowhere) and a for one more. Each
  // queue deserves 8, so a's next job waits for its queue's share although a CPU is free, and says so.
  c.Gang("a-first", 8, Resource::Cpu(1000), "a");
  c.Run();
  c.Gang("a-second", 1, Resource::Cpu(1000), "a");
  c.Gang("b-big", 1, Resource::Cpu(9000), "b");
  CycleResult r = c.RunAt(1);
  EXPECT_EQ(c.BoundCount("ns/a-second"), 0);
  const PodGroupCondition* u = Cond(FindPg(r, "ns/a-second"), "Unschedulable");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->reason, "OverDeserved");
  EXPECT_EQ(u->message,
            "1/1 tasks in gang unschedulable: queue a would exceed its deserved share (cpu 8) by cpu 1 with the next "
            "pod (cpu 1); allocated cpu 8");
}

TEST(WhyPending, PositionsFollowTheQueueOrder) {
  Cluster c;
  c.Queue("default");
  c.Node("n0", 4000, 16 * kGi);
  c.Gang("running", 1, Resource::Cpu(4000));
  c.Run();
  JobInfo low = c.Job("low", 1);
  c.AddJob(low);
  c.st().UpsertPod(c.Pod(low, 0, Resource::Cpu(1000)));
  JobInfo high = c.Job("high", 1, "default", /*priority=*/100);
  c.AddJob(high);
  c.st().UpsertPod(c.Pod(high, 0, Resource::Cpu(1000)));
  CycleResult r = c.RunAt(10);
  const PodGroupCondition* h = Cond(FindPg(r, "ns/high"), "Queued");
  const PodGroupCondition* l = Cond(FindPg(r, "ns/low"), "Queued");
  ASSERT_NE(h, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(h->status, "True");
  EXPECT_EQ(h->message, "position 1 in queue default") << "priority goes first, though created later";
  EXPECT_EQ(l->message, "position 2 in queue default");
  // The running job's Queued condition turned False when it started.
  c.st().RemovePod("running-0");
  c.st().RemoveJob("ns/running");
  r = c.RunAt(20);
  const PodGroupCondition* started = Cond(FindPg(r, "ns/high"), "Queued");
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->status, "False");
  EXPECT_EQ(started->reason, "Started");
}

// 3,000 one-pod jobs wait for a node that runs one at a time; every cycle the head starts and the whole line
// moves up by one. Writes per cycle stay within the one that started plus the position budget, and the
// written positions still converge to the truth once the line stops moving.
TEST(WhyPending, PositionWritesAreBoundedAndConverge) {
  auto line = Line(3000, 10000, 20, 100);
  Cluster& c = *line;
  std::map<std::string, std::string> written;  // job -> last written Queued message
  auto collect = [&](const CycleResult& r) { CollectQueued(r, &written); };
  int64_t t = 0;
  collect(c.RunAt(t));  // the first write of every PodGroup (not budgeted: each is new)
  size_t max_writes = 0;
  for (int started = 0; started < 30; ++started) {
    std::string head = "ns/j" + std::to_string(10000 + started);
    ASSERT_EQ(c.BoundCount(head), 1) << head;
    Finish(c, 10000 + started);
    t += 2;  // two seconds per cycle: 40 tokens, positions recomputed every cycle
    CycleResult r = c.RunAt(t);
    max_writes = std::max(max_writes, r.pod_groups.size());
    collect(r);
  }
  // Per cycle: the job that started (Queued -> False) plus at most the 40 tokens earned in 2 s.
  EXPECT_LE(max_writes, 41u);
  // Quiet line: the budget catches up, and the front of the line is exact.
  for (int i = 0; i < 200; ++i) collect(c.RunAt(t += 2));
  EXPECT_EQ(written["ns/j10031"], "position 1 in queue default");
  EXPECT_EQ(written["ns/j10050"], "position 20 in queue default");
  EXPECT_EQ(written["ns/j10051"], "position 21-30 in queue default");
  EXPECT_EQ(written["ns/j10200"], "position 101-200 in queue default");
  EXPECT_EQ(written["ns/j12999"], "position 2001-3000 in queue default");
}

// The periodic status resync re-sends every PodGroup's status to repair lost writes, but it is not news: a
// position the budget held back stays held in what it re-sends, so a resync while a long line moves costs
// the writes that differ from what was last sent, not one per waiting job (found in the one-pod vcjob bench:
// every resync flushed the whole line's positions).
TEST(WhyPending, ResyncResendsHeldPositionsNotMovedOnes) {
  constexpr int kJobs = 50;
  auto line = Line(kJobs, 100, 1, 1);
  Cluster& c = *line;
  std::map<std::string, std::string> sent;  // job -> last Queued message emitted
  auto collect = [&](const CycleResult& r) { CollectQueued(r, &sent); };
  int64_t t = 0;
  collect(c.RunAt(t));
  for (int started = 0; started < 5; ++started) {  // the line moves up by five; one token per cycle
    Finish(c, 100 + started);
    collect(c.RunAt(t += 2));
  }
  ASSERT_EQ(sent["ns/j121"], "position 21-30 in queue default") << "held: the budget did not reach it (now 17th)";
  c.s().ResyncStatus();
  CycleResult r = c.RunAt(t += 2);
  int moved = 0, resent = 0;
  for (const auto& u : r.pod_groups) {
    const PodGroupCondition* q = Cond(&u, "Queued");
    if (!q || q->status != "True") continue;
    ++resent;
    if (q->message != sent[u.job]) ++moved;
  }
  EXPECT_GE(resent, kJobs - 6) << "the resync re-sends every waiting job's status";
  EXPECT_LE(moved, 2) << "a resync moved " << moved << " held positions past the budget";
  collect(r);
  EXPECT_EQ(sent["ns/j121"], "position 21-30 in queue default");
}

// 300 jobs wait at the enqueue gate; when the running job ends, what holds them back changes for all of them
// (here from the cluster's room to the queue's capability). For a job that keeps waiting that is a refresh,
// paid from the same token bucket as positions.
TEST(WhyPending, RefreshedMessagesShareTheBudget) {
  SchedulerConf conf = Cluster::Conf();
  conf.core.position_writes_per_second = 5;
  conf.core.position_write_burst = 10;
  Cluster c(conf);
  c.Queue("default");
  c.Node("n0", 10000, 64 * kGi);
  c.Gang("running", 1, Resource::Cpu(8000));
  c.Run();
  ASSERT_EQ(c.BoundCount("ns/running"), 1);
  for (int i = 0; i < 300; ++i) {
    JobInfo j = c.Job("w" + std::to_string(1000 + i), 1);
    j.min_resources = Resource::Cpu(6000);
    c.AddJob(j);
    c.st().UpsertPod(c.Pod(j, 0, Resource::Cpu(6000)));
  }
  std::map<std::string, std::string> written;
  auto collect = [&](const CycleResult& r) {
    for (const auto& u : r.pod_groups)
      if (const PodGroupCondition* q = Cond(&u, "Unschedulable")) written[u.job] = q->message;
  };
  collect(c.RunAt(1));
  ASSERT_EQ(Cond(FindPg(c.RunAt(1), "ns/w1000"), "Unschedulable"), nullptr) << "no change, no write";
  EXPECT_NE(written["ns/w1299"].find("the cluster cannot admit"), std::string::npos) << written["ns/w1299"];
  const std::string before = written["ns/w1299"];
  c.st().RemovePod("running-0");
  c.st().RemoveJob("ns/running");
  CycleResult r = c.RunAt(2);
  collect(r);
  // Jobs are admitted and start; the others' new reason is written at most 10 at a time (the burst).
  EXPECT_LE(r.pod_groups.size(), 2u + 10u + 2u);
  for (int t = 3; t < 200; ++t) collect(c.RunAt(t));
  EXPECT_NE(written["ns/w1299"], before) << "the refresh reaches the back of the line eventually";
}


// A burst of vcjobs: the scheduler admits each PodGroup (Inqueue) before the job controller has created its
// pods. Such a job waits for the controller, not in the line, so it gets no queue position, and nothing is
// written for it until its pods come (each position write would be a PodGroup write per job of the burst).
TEST(WhyPending, AnAdmittedJobWithoutItsPodsHasNoPlaceInTheLine) {
  std::unique_ptr<Cluster> c = Line(0, 0, 100, 100);
  c->Node("n1", 64000, 256 * kGi);
  for (int i = 0; i < 30; ++i) c->AddJob(c->Job("v" + std::to_string(i), 1));
  CycleResult r = c->Run();
  ASSERT_EQ(r.pod_groups.size(), 30u);
  for (const auto& u : r.pod_groups) {
    EXPECT_EQ(u.phase, PodGroupPhase::kInqueue) << u.job;
    const PodGroupCondition* q = Cond(&u, "Queued");
    ASSERT_NE(q, nullptr) << u.job;
    EXPECT_EQ(q->message, "waiting in queue default") << u.job;
  }
  for (int t = 2; t <= 10; t += 2) {
    r = c->RunAt(t);  // positions are recomputed every second
    EXPECT_TRUE(r.pod_groups.empty()) << "cycle at +" << t << "s wrote " << r.pod_groups.size() << " PodGroups, first "
                                      << (r.pod_groups.empty() ? "" : r.pod_groups[0].job);
  }
  // Its pod comes: the job starts, and the one write says so.
  JobInfo v7 = *c->st().FindJob("ns/v7");
  c->st().UpsertPod(c->Pod(v7, 0, Resource::Cpu(1000)));
  r = c->RunAt(12);
  EXPECT_EQ(c->BoundCount("ns/v7"), 1);
  const PodGroupStatusUpdate* u = FindPg(r, "ns/v7");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->phase, PodGroupPhase::kRunning);
  EXPECT_EQ(r.pod_groups.size(), 1u);
}

}  // namespace
}  // namespace tephra::sched::testing
