#include <gtest/gtest.h>

#include <set>

#include "fixture.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/result.h"
#include "tephra/sched/statement.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;

TEST(Resource, FitsOnlyRequestedDimensions) {
  Resource req = Resource::Cpu(500);
  Resource avail = Resource::CpuMem(1000, 0);
  EXPECT_TRUE(req.FitsIn(avail));
  EXPECT_FALSE(Resource::CpuMem(500, 1).FitsIn(avail));
  EXPECT_EQ(Resource::CpuMem(500, 1).FirstShortDimension(avail), kMemory);
  EXPECT_TRUE(Resource().With(kPods, 1).IsBestEffort());
  EXPECT_FALSE(Resource::Cpu(1).IsBestEffort());
}

// A PriorityClass with globalDefault: true gives its value to every PodGroup whose priorityClassName is empty
// or names no class (Volcano's scheduler cache); a plain pod's stand-in keeps the pod's own priority, and
// the default going away takes its value with it.
TEST(ClusterState, GlobalDefaultPriorityClassResolvesPodGroupsWithoutAClass) {
  ClusterState st;
  auto job = [&](const std::string& name, const std::string& pc, bool implicit = false, int32_t prio = 0) {
    JobInfo j;
    j.key = "ns/" + name;
    j.name = name;
    j.uid = "uid-" + name;
    j.priority_class_name = pc;
    j.implicit = implicit;
    j.priority = prio;
    st.UpsertJob(j);
  };
  auto prio = [&](const std::string& name) { return st.FindJob("ns/" + name)->priority; };
  st.SetPriorityClass("low", 5);
  job("none", "");
  job("low", "low");
  job("unknown", "nope");
  job("plain", "", /*implicit=*/true, 7);
  EXPECT_EQ(prio("none"), 0);
  EXPECT_EQ(prio("unknown"), 0);
  const uint64_t before = st.FindJob("ns/none")->version;
  st.SetPriorityClass("normal", 1000, /*global_default=*/true);
  EXPECT_EQ(prio("none"), 1000);
  EXPECT_GT(st.FindJob("ns/none")->version, before) << "a changed priority is news to the job's memos";
  EXPECT_EQ(prio("unknown"), 1000);
  EXPECT_EQ(prio("low"), 5);
  EXPECT_EQ(prio("plain"), 7);
  job("later", "");  // a PodGroup arriving after the class
  EXPECT_EQ(prio("later"), 1000);
  // No longer the default (an update), then gone.
  st.SetPriorityClass("normal", 1000, /*global_default=*/false);
  EXPECT_EQ(prio("none"), 0);
  st.SetPriorityClass("normal", 2000, /*global_default=*/true);
  EXPECT_EQ(prio("later"), 2000);
  st.RemovePriorityClass("normal");
  EXPECT_EQ(prio("none"), 0);
  EXPECT_EQ(prio("later"), 0);
  EXPECT_EQ(prio("plain"), 7);
  st.RemovePriorityClass("low");
  EXPECT_EQ(prio("low"), 0);
}

TEST(ResourceRegistry, InternsUpToCapacity) {
  ResourceRegistry r;
  EXPECT_EQ(*r.Find("cpu"), kCpu);
  int gpu = *r.Intern("nvidia.com/gpu");
  EXPECT_EQ(gpu, kFirstScalar);
  EXPECT_EQ(*r.Intern("nvidia.com/gpu"), gpu);
  for (int i = 0; i < kMaxResources; ++i) (void)r.Intern("x/" + std::to_string(i));
  EXPECT_FALSE(r.Intern("one-too-many").has_value());
  // The last dimension is no name's: it marks requests for resources no node offers (issue 41).
  EXPECT_EQ(r.size(), kUnoffered);
  EXPECT_EQ(r.Format(Resource::Cpu(500).With(kUnoffered, 1)), "cpu 500m, resources no node offers");
  EXPECT_EQ(UnofferedText({"example.com/a", "example.com/b"}), "example.com/a, example.com/b, which no node offers");
  EXPECT_EQ(r.Format(Resource::Cpu(500).With(gpu, 2)), "cpu 500m, nvidia.com/gpu 2");
  // Quantities read like a pod spec: whole cores, binary suffixes; the pod count is not a resource to users.
  EXPECT_EQ(r.Format(Resource::CpuMem(4000, int64_t{16} << 30).With(kPods, 3)), "cpu 4, memory 16Gi");
  EXPECT_EQ(r.Format(Resource::CpuMem(1500, 1000)), "cpu 1500m, memory 1000");
}

TEST(Selectors, OperatorsAndTolerations) {
  Labels l{{"zone", "a"}, {"gen", "5"}};
  EXPECT_TRUE(MatchesRequirement({"zone", SelectorOp::kIn, {"a", "b"}}, l));
  EXPECT_FALSE(MatchesRequirement({"zone", SelectorOp::kNotIn, {"a"}}, l));
  EXPECT_TRUE(MatchesRequirement({"x", SelectorOp::kDoesNotExist, {}}, l));
  EXPECT_TRUE(MatchesRequirement({"gen", SelectorOp::kGt, {"4"}}, l));
  EXPECT_FALSE(MatchesRequirement({"gen", SelectorOp::kLt, {"4"}}, l));
  EXPECT_FALSE(MatchesRequirement({"zone", SelectorOp::kGt, {"1"}}, l));  // not an integer
  // An operator Kubernetes does not define matches nothing, whatever the values.
  EXPECT_FALSE(MatchesRequirement({"zone", SelectorOp::kInvalid, {"a"}}, l));
  EXPECT_FALSE(MatchesRequirement({"x", SelectorOp::kInvalid, {}}, l));
  EXPECT_TRUE((LabelSelector{{}, {{"zone", SelectorOp::kNotIn, {"b"}}}}).Valid());
  EXPECT_FALSE((LabelSelector{{}, {{"zone", SelectorOp::kInvalid, {"a"}}}}).Valid());
  EXPECT_FALSE((LabelSelector{{}, {{"gen", SelectorOp::kGt, {"1"}}}}).Valid()) << "Gt is for node selectors only";
  Taint t{"gpu", "true", TaintEffect::kNoSchedule};
  EXPECT_TRUE((Toleration{"gpu", false, "true", std::nullopt}).Tolerates(t));
  EXPECT_FALSE((Toleration{"gpu", false, "false", std::nullopt}).Tolerates(t));
  EXPECT_TRUE((Toleration{"", true, "", std::nullopt}).Tolerates(t));
  EXPECT_FALSE((Toleration{"gpu", true, "", TaintEffect::kNoExecute}).Tolerates(t));
}

TEST(ClusterState, AggregatesFollowPodsAndNodes) {
  Cluster c;
  c.Queue("default");
  JobInfo j = c.Job("a", 1);
  c.AddJob(j);
  TaskInfo p = c.Pod(j, 0, Resource::CpuMem(1000, kGi));
  p.status = TaskStatus::kRunning;
  p.node = "n1";
  c.st().UpsertPod(p);  // pod arrives before its node
  c.Node("n1", 4000, 8 * kGi);
  EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 1000);
  EXPECT_EQ(c.st().FindNode("n1")->task_count, 1);
  EXPECT_EQ(c.st().FindJob("ns/a")->allocated.Get(kCpu), 1000);
  EXPECT_EQ(c.st().FindQueue("default")->allocated.Get(kCpu), 1000);
  p.status = TaskStatus::kSucceeded;
  uint64_t epoch = c.st().capacity_epoch();
  c.st().UpsertPod(p);
  EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 0);
  EXPECT_EQ(c.st().FindQueue("default")->allocated.Get(kCpu), 0);
  EXPECT_EQ(c.st().FindJob("ns/a")->Count(TaskStatus::kSucceeded), 1);
  EXPECT_GT(c.st().capacity_epoch(), epoch);
  c.st().RemovePod(p.uid);
  EXPECT_EQ(c.st().FindJob("ns/a")->TotalTasks(), 0);
}

TEST(ClusterState, ScoreRequestsSummedPerNodeWhereUsedIs) {
  // NodeInfo::score_cpu/score_memory (kube-scheduler's NonZeroRequested) follow the same add/remove points
  // as `used`: pods arriving before their node, status changes, statements (allocate, pipeline, discard),
  // removal. A task without caller-set scoring requests counts its request, or 100m / 200Mi where it is 0.
  constexpr int64_t kMi = 1LL << 20;
  Cluster c;
  c.Queue("default");
  JobInfo j = c.Job("a", 1);
  c.AddJob(j);
  TaskInfo be = c.Pod(j, 0, Resource());  // best effort: counts the defaults for scoring only
  be.status = TaskStatus::kRunning;
  be.node = "n1";
  c.st().UpsertPod(be);  // before its node
  c.Node("n1", 4000, 8 * kGi);
  const NodeInfo* n = c.st().FindNode("n1");
  EXPECT_EQ(n->used.Get(kCpu), 0);
  EXPECT_EQ(n->score_cpu, 100);
  EXPECT_EQ(n->score_memory, 200 * kMi);
  TaskInfo set = c.Pod(j, 1, Resource::Cpu(1000));  // the caller's (convert.cc) values win
  set.score_cpu = 1000;
  set.score_memory = 400 * kMi;
  set.status = TaskStatus::kBound;
  set.node = "n1";
  c.st().UpsertPod(set);
  EXPECT_EQ(n->score_cpu, 1100);
  EXPECT_EQ(n->score_memory, 600 * kMi);
  TaskInfo p = c.Pod(j, 2, Resource::CpuMem(500, kGi));
  c.st().UpsertPod(p);
  {
    Statement s(&c.st());
    ASSERT_TRUE(s.Allocate(p.uid, "n1").ok());
    EXPECT_EQ(n->score_cpu, 1600);
    EXPECT_EQ(n->score_memory, 600 * kMi + kGi);
    s.Discard();
    EXPECT_EQ(n->score_cpu, 1100);
    ASSERT_TRUE(s.Pipeline(p.uid, "n1").ok());
    EXPECT_EQ(n->score_cpu, 1600) << "pipelined tasks are on the node for scoring, as in Volcano";
    s.Discard();
  }
  set.status = TaskStatus::kSucceeded;
  c.st().UpsertPod(set);
  EXPECT_EQ(n->score_cpu, 100);
  c.st().RemovePod(be.uid);
  EXPECT_EQ(n->score_cpu, 0);
  EXPECT_EQ(n->score_memory, 0);
}

TEST(Statement, DiscardUndoesInReverseAndIsIdempotent) {
  Cluster c;
  c.Queue("default");
  c.Node("n1", 4000, 8 * kGi);
  JobInfo j = c.Gang("g", 2, Resource::Cpu(1000));
  CycleResult out;
  {
    Statement s(&c.st());
    ASSERT_TRUE(s.Allocate("g-0", "n1").ok());
    ASSERT_TRUE(s.Allocate("g-1", "n1").ok());
    EXPECT_FALSE(s.Allocate("g-1", "n1").ok());  // no longer pending
    EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 2000);
    s.Discard();
    s.Discard();
    EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 0);
    EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kPending);
    EXPECT_TRUE(c.st().FindTask("g-0")->node.empty());
  }
  {
    Statement s(&c.st());
    ASSERT_TRUE(s.Allocate("g-0", "n1").ok());
    s.Commit(&out, nullptr);
  }  // destructor must not undo a committed statement
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kBinding);
  ASSERT_EQ(out.binds.size(), 1u);
  EXPECT_EQ(out.binds[0].node, "n1");
  {
    Statement s(&c.st());
    ASSERT_TRUE(s.Allocate("g-1", "n1").ok());
  }  // destructor discards
  EXPECT_EQ(c.st().FindTask("g-1")->status, TaskStatus::kPending);
}

TEST(Statement, DiscardFromUndoesOnlyTheTailAndKeepsTheJobVersionRestorable) {
  Cluster c;
  c.Queue("default");
  c.Node("n1", 4000, 8 * kGi);
  c.Node("n2", 4000, 8 * kGi);
  JobInfo j = c.Gang("g", 3, Resource::Cpu(1000));
  const uint64_t before = c.st().FindJob("ns/g")->version;
  Statement s(&c.st());
  ASSERT_TRUE(s.Allocate("g-0", "n1").ok());
  const size_t mark = s.entries().size();
  ASSERT_TRUE(s.Allocate("g-1", "n2").ok());
  ASSERT_TRUE(s.Pipeline("g-2", "n2").ok());
  s.DiscardFrom(mark);
  EXPECT_EQ(s.entries().size(), 1u);
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kAllocated);
  EXPECT_EQ(c.st().FindTask("g-1")->status, TaskStatus::kPending);
  EXPECT_EQ(c.st().FindTask("g-2")->status, TaskStatus::kPending);
  EXPECT_EQ(c.st().FindNode("n2")->used.Get(kCpu), 0);
  EXPECT_EQ(c.st().FindNode("n2")->pipelined.Get(kCpu), 0);
  // Undoing everything, including the part before the mark, gives the job back its version.
  s.DiscardFrom(0);
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kPending);
  EXPECT_EQ(c.st().FindJob("ns/g")->version, before);
  // A job whose only entries were undone notes its version again on its next entry.
  ASSERT_TRUE(s.Allocate("g-0", "n1").ok());
  s.Discard();
  EXPECT_EQ(c.st().FindJob("ns/g")->version, before);
}

TEST(ClusterState, InformerLagKeepsAssumptionAndNodeNameConfirms) {
  Cluster c;
  c.Queue("default");
  c.Node("n1", 4000, 8 * kGi);
  JobInfo j = c.Gang("g", 1, Resource::Cpu(1000));
  c.Run();
  ASSERT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kBinding);
  TaskInfo stale = c.Pod(j, 0, Resource::Cpu(1000));
  stale.creation_index = c.st().FindTask("g-0")->creation_index;
  c.st().UpsertPod(stale);  // still Pending without nodeName in the informer
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kBinding);
  EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 1000);
  stale.node = "n1";
  stale.status = TaskStatus::kBound;
  c.st().UpsertPod(stale);
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kBound);
  EXPECT_EQ(c.st().FindNode("n1")->used.Get(kCpu), 1000);
}

// HyperNode regexMatch means what it means to Volcano (Go's regexp.MatchString): RE2 syntax, unanchored.
// ECMAScript full-match semantics used to give other node sets for both of these.
TEST(ClusterState, DefaultSpreadSelectorJoinsSelectingServicesAndTheOwner) {
  ClusterState st;
  TaskInfo t;
  t.uid = "p";
  t.ns = "ns";
  t.labels = {{"app", "web"}, {"tier", "fe"}};
  EXPECT_EQ(st.DefaultSpreadSelector(t), LabelSelector{});
  st.UpsertService("ns", "web", {{"app", "web"}});
  st.UpsertService("ns", "fe", {{"tier", "fe"}});
  st.UpsertService("ns", "db", {{"app", "db"}});         // does not select the pod
  st.UpsertService("other", "web2", {{"app", "web2"}});  // another namespace
  st.UpsertService("ns", "headless", {});                // no selector: selects nothing, not everything
  LabelSelector services;
  services.match_labels = {{"app", "web"}, {"tier", "fe"}};
  EXPECT_EQ(st.DefaultSpreadSelector(t), services);
  const uint64_t g = st.generation();
  st.UpsertService("ns", "web", {{"app", "web"}});  // unchanged: no news
  EXPECT_EQ(st.generation(), g);

  // A ReplicaSet owner adds its requirements (matchLabels as In); a controller the state does not know
  // (yet) adds nothing.
  t.controller = "ReplicaSet/web-1";
  EXPECT_EQ(st.DefaultSpreadSelector(t), services);
  LabelSelector rs;
  rs.match_labels = {{"pod-template-hash", "abc"}};
  rs.match_expressions.push_back({"app", SelectorOp::kExists, {}});
  st.UpsertController("ns", "ReplicaSet/web-1", rs);
  LabelSelector want = services;
  want.match_expressions.push_back({"pod-template-hash", SelectorOp::kIn, {"abc"}});
  want.match_expressions.push_back({"app", SelectorOp::kExists, {}});
  EXPECT_EQ(st.DefaultSpreadSelector(t), want);
  st.UpsertController("other", "ReplicaSet/web-1", LabelSelector{});  // same name elsewhere: not this one
  EXPECT_EQ(st.DefaultSpreadSelector(t), want);

  // A ReplicationController's map merges into the Services' labels.
  t.controller = "ReplicationController/web";
  LabelSelector rc;
  rc.match_labels = {{"rc", "web"}};
  st.UpsertController("ns", "ReplicationController/web", rc);
  LabelSelector merged;
  merged.match_labels = {{"app", "web"}, {"rc", "web"}, {"tier", "fe"}};
  EXPECT_EQ(st.DefaultSpreadSelector(t), merged);

  st.RemoveService("ns", "web");
  st.RemoveService("ns", "fe");
  st.RemoveController("ns", "ReplicationController/web");
  EXPECT_EQ(st.DefaultSpreadSelector(t), LabelSelector{});
}

TEST(HyperNodeRegex, UnanchoredGoSyntaxLikeVolcano) {
  ClusterState st;
  for (const char* n : {"rack1-gpu-0", "rack1-GPU-1", "rack2-gpu-0", "cpu-0"}) {
    NodeInfo node;
    node.name = n;
    node.allocatable = Resource::Cpu(1000);
    st.UpsertNode(node);
  }
  auto add = [&](const std::string& name, const std::string& pattern) {
    HyperNodeInfo h;
    h.name = name;
    h.tier = 1;
    HyperNodeMember m;
    m.kind = MemberSelectorKind::kRegex;
    m.name_or_pattern = pattern;
    h.members.push_back(m);
    st.UpsertHyperNode(h);
  };
  add("unanchored", "gpu");             // a substring, as MatchString finds it
  add("case-insensitive", "(?i)^rack1-gpu-");
  add("anchored", "^rack2-.*$");
  add("invalid", "rack[");               // matches nothing (the webhook refuses it)
  auto names = [&](const std::string& hn) {
    std::set<std::string> out;
    for (int slot : st.Topology().entries.at(hn).nodes) out.insert(st.NodeAt(slot).name);
    return out;
  };
  EXPECT_EQ(names("unanchored"), (std::set<std::string>{"rack1-gpu-0", "rack2-gpu-0"}));
  EXPECT_EQ(names("case-insensitive"), (std::set<std::string>{"rack1-gpu-0", "rack1-GPU-1"}));
  EXPECT_EQ(names("anchored"), (std::set<std::string>{"rack2-gpu-0"}));
  EXPECT_TRUE(names("invalid").empty());
}

}  // namespace
}  // namespace tephra::sched
