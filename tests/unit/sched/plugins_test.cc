#include <gtest/gtest.h>

#include "fixture.h"
#include "tephra/sched/framework.h"

namespace tephra::sched {
namespace {

using testing::kGi;

// A session over a hand-built state with exactly the plugins under test.
class Harness {
 public:
  Harness() { gpu = *st.resources().Intern("nvidia.com/gpu"); }
  void Add(PluginOption o, int tier = 0) {
    auto p = PluginRegistry::Builtin().Create(o);
    ASSERT_NE(p, nullptr) << o.name;
    slots.push_back({std::move(p), o, tier});
  }
  Session& Open() {
    ssn = std::make_unique<Session>(&st, &conf, &slots, WallTime{}, nullptr, &out);
    ssn->Open();
    return *ssn;
  }
  // Returns the name; look nodes up with N() after adding them all (the slot vector may reallocate).
  std::string AddNode(const std::string& name, Resource alloc, Labels labels = {}, std::vector<Taint> taints = {}) {
    NodeInfo n;
    n.name = name;
    n.allocatable = alloc.With(kPods, 110);
    n.labels = std::move(labels);
    n.taints = std::move(taints);
    st.UpsertNode(n);
    return name;
  }
  const NodeInfo& N(const std::string& name) const { return *st.FindNode(name); }
  const TaskInfo& AddPod(TaskInfo t) {
    st.UpsertPod(t);
    return *st.FindTask(t.uid);
  }
  static TaskInfo Pod(const std::string& uid, Resource req) {
    TaskInfo t;
    t.uid = uid;
    t.ns = "ns";
    t.name = uid;
    t.request = req;
    return t;
  }
  ClusterState st;
  SchedulerConf conf;
  std::vector<PluginSlot> slots;
  CycleResult out;
  std::unique_ptr<Session> ssn;
  int gpu = 0;
};

TEST(Binpack, ExactFormula) {
  Harness h;
  PluginOption o = PluginOption::Named("binpack");
  o.arguments = {{"binpack.weight", "10"}, {"binpack.cpu", "5"}, {"binpack.memory", "1"},
                 {"binpack.resources", "nvidia.com/gpu"}, {"binpack.resources.nvidia.com/gpu", "2"}};
  h.Add(o);
  h.AddNode("n1", Resource::CpuMem(4000, 8 * kGi).With(h.gpu, 8));
  TaskInfo running = Harness::Pod("r", Resource::CpuMem(1000, 2 * kGi));
  running.status = TaskStatus::kRunning;
  running.node = "n1";
  h.AddPod(running);
  h.AddNode("n2", Resource::CpuMem(4000, 8 * kGi).With(h.gpu, 8));
  Session& s = h.Open();
  const NodeInfo& n = h.N("n1");
  const NodeInfo& empty = h.N("n2");
  // cpu: (1000+1000)*5/4000 = 2.5; memory: (2Gi+2Gi)*1/8Gi = 0.5; sum 3 / weights 6 * 100 * 10 = 500.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::CpuMem(1000, 2 * kGi)), n), 500);
  // + gpu: 4*2/8 = 1 -> (2.5+0.5+1)/8*1000 = 500.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::CpuMem(1000, 2 * kGi).With(h.gpu, 4)), n), 500);
  // Overflow on any requested resource zeroes the node.
  EXPECT_DOUBLE_EQ(s.NodeScore(Harness::Pod("t", Resource::Cpu(3001)), n), 0);
  // Fuller node scores higher.
  EXPECT_GT(s.NodeScore(Harness::Pod("t", Resource::Cpu(1000)), n), s.NodeScore(Harness::Pod("t", Resource::Cpu(1000)), empty));
}

TEST(Predicates, StaticReasons) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("t", Resource::Cpu(1000), {{"zone", "a"}}, {{"gpu", "h100", TaintEffect::kNoSchedule}});
  h.AddNode("p", Resource::Cpu(1000), {{"zone", "b"}, {"gen", "7"}});
  Session& s = h.Open();
  const NodeInfo& tainted = h.N("t");
  const NodeInfo& plain = h.N("p");
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  EXPECT_EQ(s.StaticPredicate(t, tainted), "node(s) had untolerated taint {gpu: h100}");
  EXPECT_EQ(s.StaticPredicate(t, plain), "");
  t.tolerations.push_back({"gpu", true, "", std::nullopt});
  EXPECT_EQ(s.StaticPredicate(t, tainted), "");
  t.node_selector = {{"zone", "b"}};
  EXPECT_EQ(s.StaticPredicate(t, tainted), "node(s) didn't match Pod's node affinity/selector");
  t.node_selector.clear();
  // Terms are ORed, requirements ANDed.
  t.required_affinity = {{{{"zone", SelectorOp::kIn, {"z"}}}, {}},
                         {{{"zone", SelectorOp::kIn, {"b"}}, {"gen", SelectorOp::kGt, {"5"}}}, {}}};
  EXPECT_EQ(s.StaticPredicate(t, plain), "");
  EXPECT_NE(s.StaticPredicate(t, tainted), "");
  NodeInfo cordoned = plain;
  cordoned.unschedulable = true;
  t.required_affinity.clear();
  EXPECT_EQ(s.StaticPredicate(t, cordoned), "node(s) were unschedulable");
}

TEST(Predicates, HostnameAntiAffinityBothDirections) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("n", Resource::Cpu(4000));
  TaskInfo existing = Harness::Pod("e", Resource::Cpu(1));
  existing.labels = {{"app", "db"}};
  existing.status = TaskStatus::kRunning;
  existing.node = "n";
  h.AddPod(existing);
  Session& s = h.Open();
  const NodeInfo& n = h.N("n");
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  EXPECT_EQ(s.DynamicPredicate(t, n), "");
  t.anti_affinity.push_back({{{"app", "db"}}, {}});
  EXPECT_EQ(s.DynamicPredicate(t, n), "node(s) didn't match pod anti-affinity rules");
  t.ns = "other";  // anti-affinity applies within the namespace
  EXPECT_EQ(s.DynamicPredicate(t, n), "");
  // Symmetric: an existing pod's anti-affinity rejects a matching newcomer.
  TaskInfo guard = Harness::Pod("g", Resource::Cpu(1));
  guard.anti_affinity.push_back({{{"app", "web"}}, {}});
  guard.status = TaskStatus::kRunning;
  guard.node = "n";
  h.AddPod(guard);
  TaskInfo web = Harness::Pod("w", Resource::Cpu(1));
  web.labels = {{"app", "web"}};
  EXPECT_EQ(s.DynamicPredicate(web, n), "node(s) didn't satisfy existing pods anti-affinity rules");
  // A selector with an operator label selectors do not have fits no node (it would otherwise match nothing
  // and silently lift the constraint).
  TaskInfo bad = Harness::Pod("b", Resource::Cpu(1));
  bad.anti_affinity.push_back({{}, {{"app", SelectorOp::kInvalid, {"db"}}}});
  EXPECT_EQ(s.StaticPredicate(bad, n), "pod anti-affinity selector uses an operator label selectors do not have");
}

TEST(Proportion, WeightedDeservedCappedByCapabilityAndRequest) {
  Harness h;
  h.Add(PluginOption::Named("proportion"));
  h.AddNode("n1", Resource::CpuMem(8000, 16 * kGi));
  h.AddNode("n2", Resource::CpuMem(8000, 16 * kGi));
  for (auto [name, w] : {std::pair<std::string, int>{"a", 1}, {"b", 3}, {"c", 4}}) {
    QueueInfo q;
    q.name = name;
    q.weight = w;
    if (name == "c") q.capability = Resource::Unlimited().With(kCpu, 1000);
    h.st.UpsertQueue(q);
    JobInfo j;
    j.key = "ns/" + name;
    j.queue = name;
    j.min_member = 1;
    h.st.UpsertJob(j);
    for (int i = 0; i < 40; ++i) {
      TaskInfo t = Harness::Pod(name + std::to_string(i), Resource::CpuMem(1000, kGi));
      t.job = j.key;
      h.st.UpsertPod(t);
    }
  }
  Session& s = h.Open();
  const auto& d = s.queue_deserved();
  // c is capped at 1000m; the remaining 15000m is split 1:3 between a and b.
  EXPECT_EQ(d.at("c").Get(kCpu), 1000);
  // Integer rounding per round may leave a few millicores undistributed.
  EXPECT_NEAR(static_cast<double>(d.at("a").Get(kCpu)), 3750, 5);
  EXPECT_NEAR(static_cast<double>(d.at("b").Get(kCpu)), 11250, 5);
  const QueueInfo& qa = *h.st.FindQueue("a");
  EXPECT_FALSE(s.Overused(qa));
  EXPECT_TRUE(s.Allocatable(qa, Harness::Pod("z", Resource::Cpu(1000))));
  EXPECT_FALSE(s.Allocatable(qa, Harness::Pod("z", Resource::Cpu(4000))));
}

TEST(Gang, ValidReadyAndOrder) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  h.Add(PluginOption::Named("priority"));
  Session& s = h.Open();
  JobInfo j;
  j.min_member = 3;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 2;
  ValidateResult v = s.JobValid(j);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughTasks");
  j.status_count[static_cast<size_t>(TaskStatus::kRunning)] = 1;
  EXPECT_TRUE(s.JobValid(j).pass);
  EXPECT_FALSE(s.JobReady(j));
  j.status_count[static_cast<size_t>(TaskStatus::kAllocated)] = 2;
  EXPECT_TRUE(s.JobReady(j));
  JobInfo hi = j, lo = j;
  hi.priority = 10;
  hi.key = "b";
  lo.key = "a";
  EXPECT_TRUE(s.JobLess(hi, lo));  // gang ties (both ready), priority decides
  JobInfo notready = lo;
  notready.status_count.fill(0);
  notready.status_count[static_cast<size_t>(TaskStatus::kPending)] = 3;
  EXPECT_TRUE(s.JobLess(notready, hi));  // gang tier first: not-ready jobs first
}

// Volcano's CheckTaskValid: per-task minimums are checked only when minMember >= their sum. An MPI job whose
// launcher dependsOn 2 workers (minAvailable 2; minTaskMember launcher 1, worker 2) must be valid with only the
// 2 worker pods existing; with minAvailable 3 the launcher's minimum binds and the job is not valid.
TEST(Gang, PerTaskMinimumsBindOnlyWhenMinMemberCoversThem) {
  Harness h;
  h.Add(PluginOption::Named("gang"));
  Session& s = h.Open();
  JobInfo j;
  j.min_member = 2;
  j.min_task_member = {{"mpimaster", 1}, {"mpiworker", 2}};
  j.role_valid["mpiworker"] = 2;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 2;
  EXPECT_TRUE(s.JobValid(j).pass);
  j.min_member = 3;
  j.status_count[static_cast<size_t>(TaskStatus::kPending)] = 3;  // enough tasks overall...
  j.role_valid["mpiworker"] = 3;
  ValidateResult v = s.JobValid(j);  // ...but none of the launcher
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughPodsOfTask");
  EXPECT_EQ(v.message, "Not enough valid pods of task mpimaster, valid: 0, min: 1");
}

TEST(NodeOrder, PrefersLessLoadedAndBalanced) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("e", Resource::CpuMem(4000, 8 * kGi));
  h.AddNode("b", Resource::CpuMem(4000, 8 * kGi));
  TaskInfo r = Harness::Pod("r", Resource::CpuMem(3000, 6 * kGi));
  r.status = TaskStatus::kRunning;
  r.node = "b";
  h.AddPod(r);
  Session& s = h.Open();
  const NodeInfo& empty = h.N("e");
  const NodeInfo& busy = h.N("b");
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(500, kGi));
  EXPECT_GT(s.NodeScore(t, empty), s.NodeScore(t, busy));
}

TEST(TaskTopology, AffinityScoresNodesHoldingAffineRoles) {
  Harness h;
  h.Add(PluginOption::Named("task-topology"));
  h.AddNode("a", Resource::Cpu(8000));
  h.AddNode("b", Resource::Cpu(8000));
  JobInfo j;
  j.key = "ns/j";
  j.task_topology_affinity = "ps,worker";
  j.task_topology_anti_affinity = "chief";
  j.task_topology_order = "ps,worker";
  h.st.UpsertJob(j);
  TaskInfo ps = Harness::Pod("ps0", Resource::Cpu(100));
  ps.job = j.key;
  ps.role = "ps";
  ps.status = TaskStatus::kRunning;
  ps.node = "a";
  h.AddPod(ps);
  Session& s = h.Open();
  const NodeInfo& with_ps = h.N("a");
  const NodeInfo& other = h.N("b");
  TaskInfo w = Harness::Pod("w0", Resource::Cpu(100));
  w.job = j.key;
  w.role = "worker";
  EXPECT_GT(s.NodeScore(w, with_ps), s.NodeScore(w, other));
  TaskInfo p2 = ps;
  p2.uid = "ps1";
  EXPECT_TRUE(s.TaskLess(p2, w));  // task order: ps before worker
}

}  // namespace
}  // namespace tephra::sched
