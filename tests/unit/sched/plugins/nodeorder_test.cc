#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

// TaintToleration with no PreferNoSchedule taint anywhere: every node scores 100, times the default weight 3.
constexpr double kNoTaints = 3 * 100;

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

// Exact kube-scheduler v1.20.2 scores, computed by hand. Node 4 cpu / 8Gi holding 1 cpu / 2Gi; the pod asks
// 1 cpu / 1Gi, so requested = 2000m of 4000m and 3Gi of 8Gi:
//   LeastAllocated      cpu (2000 * 100) / 4000 = 50, memory (5Gi * 100) / 8Gi = 62; (50 + 62) / 2 = 56
//   MostAllocated       cpu 50, memory (3Gi * 100) / 8Gi = 37; (50 + 37) / 2 = 43
//   BalancedAllocation  int64((1 - |0.5 - 0.375|) * 100) = 87
TEST(NodeOrder, IntegerScoresOfKubeSchedulerWithVolcanoWeights) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("n", Resource::CpuMem(4000, 8 * kGi));
  TaskInfo r = Harness::Pod("r", Resource::CpuMem(1000, 2 * kGi));
  r.status = TaskStatus::kRunning;
  r.node = "n";
  h.AddPod(r);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(1000, kGi));
  // Volcano's defaults: leastrequested 1, balancedresource 1, mostrequested 0.
  EXPECT_EQ(s.NodeScore(t, h.N("n")), 56 + 87 + kNoTaints);

  Harness w;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["leastrequested.weight"] = "2";
  o.arguments["mostrequested.weight"] = "3";
  o.arguments["balancedresource.weight"] = "0";
  w.Add(o);
  w.AddNode("n", Resource::CpuMem(4000, 8 * kGi));
  w.AddPod(r);
  Session& ws = w.Open();
  EXPECT_EQ(ws.NodeScore(t, w.N("n")), 2 * 56 + 3 * 43 + kNoTaints);
}

// requested > capacity: LeastAllocated and MostAllocated give that resource 0, BalancedAllocation gives 0.
// Node 1 cpu / 1Gi, pod scoring 1.5 cpu / 512Mi: least (0 + 50) / 2 = 25; balanced 0 (cpu fraction 1.5).
TEST(NodeOrder, OverCapacityScoresZeroLikeKubeScheduler) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("n", Resource::CpuMem(1000, kGi));
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(1500, kGi / 2));
  EXPECT_EQ(s.NodeScore(t, h.N("n")), 25 + kNoTaints);
}

// Scores use the non-zero requests: a best-effort pod counts 100m / 200Mi, and so does each best-effort pod
// already on the node. Node 1 cpu / 1Gi holding one best-effort pod: requested 200m and 400Mi;
//   least (80 + (624Mi * 100) / 1024Mi = 60) / 2 = 70; balanced int64((1 - |0.2 - 0.390625|) * 100) = 80.
// With zero requests both nodes below would score 200 and best-effort pods would pile onto one node.
TEST(NodeOrder, BestEffortPodsScoreWithDefaultRequests) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("busy", Resource::CpuMem(1000, kGi));
  h.AddNode("empty", Resource::CpuMem(1000, kGi));
  TaskInfo r = Harness::Pod("r", Resource());
  r.status = TaskStatus::kRunning;
  r.node = "busy";
  h.AddPod(r);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource());
  EXPECT_EQ(s.NodeScore(t, h.N("busy")), 70 + 80 + kNoTaints);
  EXPECT_GT(s.NodeScore(t, h.N("empty")), s.NodeScore(t, h.N("busy")));
  // Scoring requests set by the caller (convert.cc, per container) win over the request.
  TaskInfo c = Harness::Pod("c", Resource());
  c.score_cpu = 300;
  c.score_memory = 0;
  // requested 400m and 200Mi: least (60 + 80) / 2 = 70; balanced int64((1 - |0.4 - 0.1953125|) * 100) = 79.
  EXPECT_EQ(s.NodeScore(c, h.N("busy")), 70 + 79 + kNoTaints);
}

// Preferred node affinity, as Volcano's nodeorder adds it: kube-scheduler's raw NodeAffinity score (the sum of
// the matching terms' weights, matchExpressions only, an expression-less term matching every node) times
// nodeaffinity.weight (default 2), not normalised. Two equal empty nodes differ by exactly that.
TEST(NodeOrder, PreferredNodeAffinityAddsMatchingWeightsTimesItsWeight) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("ssd", Resource::CpuMem(4000, 8 * kGi), {{"disk", "ssd"}, {"zone", "a"}});
  h.AddNode("hdd", Resource::CpuMem(4000, 8 * kGi), {{"disk", "hdd"}, {"zone", "a"}});
  Session& s = h.Open();
  TaskInfo plain = Harness::Pod("plain", Resource::CpuMem(1000, kGi));
  auto req = [](std::string key, SelectorOp op, std::vector<std::string> values) {
    SelectorRequirement r;
    r.key = std::move(key);
    r.op = op;
    r.values = std::move(values);
    return r;
  };
  TaskInfo t = plain;
  t.preferred_affinity.push_back({30, {req("disk", SelectorOp::kIn, {"ssd"})}});
  t.preferred_affinity.push_back({5, {req("zone", SelectorOp::kExists, {})}});
  t.preferred_affinity.push_back({7, {}});  // no expressions: every node
  t.preferred_affinity.push_back({50, {req("gpu", SelectorOp::kGt, {"3"})}});  // no such label: no match
  EXPECT_EQ(s.NodeScore(t, h.N("ssd")) - s.NodeScore(plain, h.N("ssd")), 2 * (30 + 5 + 7));
  EXPECT_EQ(s.NodeScore(t, h.N("hdd")) - s.NodeScore(plain, h.N("hdd")), 2 * (5 + 7));

  Harness w;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["nodeaffinity.weight"] = "0";
  w.Add(o);
  w.AddNode("ssd", Resource::CpuMem(4000, 8 * kGi), {{"disk", "ssd"}});
  Session& ws = w.Open();
  EXPECT_EQ(ws.NodeScore(t, w.N("ssd")), ws.NodeScore(plain, w.N("ssd"))) << "weight 0 turns the score off";
}

// TaintToleration as kube-scheduler scores it and Volcano weighs it (tainttoleration.weight, default 3): the
// node's PreferNoSchedule taints the pod does not tolerate, reverse-normalised over the nodes: 100 - 100 *
// count / max. NoSchedule taints are the predicate's business, and a toleration whose effect is NoSchedule
// does not tolerate a PreferNoSchedule taint. The three nodes are otherwise identical, so differences between
// them are the taint score alone.
TEST(NodeOrder, PreferNoScheduleTaintsScoreInReverseLikeKubeScheduler) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  const Taint soft_a{"a", "1", TaintEffect::kPreferNoSchedule};
  const Taint soft_b{"b", "1", TaintEffect::kPreferNoSchedule};
  const Taint hard{"h", "1", TaintEffect::kNoSchedule};
  h.AddNode("clean", Resource::CpuMem(4000, 8 * kGi), {}, {hard});
  h.AddNode("one", Resource::CpuMem(4000, 8 * kGi), {}, {soft_a});
  h.AddNode("two", Resource::CpuMem(4000, 8 * kGi), {}, {soft_a, soft_b});
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::CpuMem(1000, kGi));
  const double base = s.NodeScore(t, h.N("clean")) - 3 * 100;  // max 2: clean 100, one 50, two 0
  EXPECT_EQ(s.NodeScore(t, h.N("one")), base + 3 * 50);
  EXPECT_EQ(s.NodeScore(t, h.N("two")), base + 0);

  TaskInfo tol = t;
  Toleration a;
  a.key = "a";
  a.op_exists = true;
  a.effect = TaintEffect::kPreferNoSchedule;
  Toleration b_hard;  // the wrong effect: does not count for a PreferNoSchedule taint
  b_hard.key = "b";
  b_hard.op_exists = true;
  b_hard.effect = TaintEffect::kNoSchedule;
  tol.tolerations = {a, b_hard};
  // Counts: clean 0, one 0, two 1 (b); max 1.
  EXPECT_EQ(s.NodeScore(tol, h.N("one")), base + 3 * 100);
  EXPECT_EQ(s.NodeScore(tol, h.N("two")), base + 0);
  TaskInfo all = t;
  Toleration any;  // empty key, Exists, no effect: tolerates everything
  any.op_exists = true;
  all.tolerations = {any};
  EXPECT_EQ(s.NodeScore(all, h.N("two")), s.NodeScore(all, h.N("clean"))) << "max 0: every node 100";

  Harness w;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["tainttoleration.weight"] = "0";
  w.Add(o);
  w.AddNode("clean", Resource::CpuMem(4000, 8 * kGi));
  w.AddNode("two", Resource::CpuMem(4000, 8 * kGi), {}, {soft_a, soft_b});
  Session& ws = w.Open();
  EXPECT_EQ(ws.NodeScore(t, w.N("two")), ws.NodeScore(t, w.N("clean"))) << "weight 0 turns the score off";
}


WeightedPodAffinityTerm Preferred(int32_t weight, bool anti, Labels match, std::string key) {
  return {weight, anti, testing::Term(std::move(match), std::move(key))};
}

// kube-scheduler's InterPodAffinity score, by hand. Pending pod app=web prefers zones with app=db (40) and
// avoids hosts with app=db (20); the running cache pod in zone b avoids zones with app=web (10, symmetry).
// Raw sums: a1 = 40 - 20 = 20, a2 = 40, b1 = -10, c1 (no zone) = 0. Over all four nodes min -10, max 40:
// int64(100 * (raw + 10) / 50) = 60, 100, 0, 20; times podaffinity.weight 2. Over {a1, c1} only: 100, 0.
TEST(NodeOrder, PreferredPodAffinityIsKubeSchedulersNormalisedDomainScore) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("a1", Resource::CpuMem(4000, 8 * kGi), {{"zone", "a"}});
  h.AddNode("a2", Resource::CpuMem(4000, 8 * kGi), {{"zone", "a"}});
  h.AddNode("b1", Resource::CpuMem(4000, 8 * kGi), {{"zone", "b"}});
  h.AddNode("c1", Resource::CpuMem(4000, 8 * kGi));
  TaskInfo db = Harness::Pod("db", Resource::Cpu(100));
  db.labels = {{"app", "db"}};
  db.status = TaskStatus::kRunning;
  db.node = "a1";
  h.AddPod(db);
  TaskInfo cache = Harness::Pod("cache", Resource::Cpu(100));
  cache.labels = {{"app", "cache"}};
  cache.preferred_pod_terms.push_back(Preferred(10, true, {{"app", "web"}}, "zone"));
  cache.status = TaskStatus::kRunning;
  cache.node = "b1";
  h.AddPod(cache);
  Session& s = h.Open();

  TaskInfo web = Harness::Pod("web", Resource::Cpu(100));
  web.labels = {{"app", "web"}};
  web.preferred_pod_terms.push_back(Preferred(40, false, {{"app", "db"}}, "zone"));
  web.preferred_pod_terms.push_back(Preferred(20, true, {{"app", "db"}}, "kubernetes.io/hostname"));
  ASSERT_TRUE(s.BatchScored(web));
  auto slot = [&](const char* n) { return h.st.NodeIndex(n); };
  std::vector<int> all = {slot("a1"), slot("a2"), slot("b1"), slot("c1")};
  std::vector<double> scores(4, 0);
  s.BatchNodeScore(web, all, scores);
  EXPECT_EQ(scores, (std::vector<double>{120, 200, 0, 40}));
  std::vector<int> two = {slot("a1"), slot("c1")};
  std::vector<double> two_scores(2, 0);
  s.BatchNodeScore(web, two, two_scores);
  EXPECT_EQ(two_scores, (std::vector<double>{200, 0})) << "normalised over the nodes asked about";

  // Symmetry alone: a pod without terms is still scored by the cache pod's term when it selects it.
  TaskInfo plain = Harness::Pod("plain", Resource::Cpu(100));
  plain.labels = {{"app", "web"}};
  ASSERT_TRUE(s.BatchScored(plain));
  std::vector<double> plain_scores(4, 0);
  s.BatchNodeScore(plain, all, plain_scores);
  EXPECT_EQ(plain_scores, (std::vector<double>{200, 200, 0, 200}));
  // Selected by nobody and without terms: no batch score, so allocate keeps its shared heaps.
  plain.labels = {{"app", "batch"}};
  EXPECT_FALSE(s.BatchScored(plain));
}

TEST(NodeOrder, PodAffinityWeightZeroTurnsTheBatchScoreOff) {
  Harness h;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["podaffinity.weight"] = "0";
  h.Add(o);
  h.AddNode("a1", Resource::CpuMem(4000, 8 * kGi), {{"zone", "a"}});
  TaskInfo db = Harness::Pod("db", Resource::Cpu(100));
  db.labels = {{"app", "db"}};
  db.status = TaskStatus::kRunning;
  db.node = "a1";
  h.AddPod(db);
  Session& s = h.Open();
  TaskInfo web = Harness::Pod("web", Resource::Cpu(100));
  web.preferred_pod_terms.push_back(Preferred(40, false, {{"app", "db"}}, "zone"));
  EXPECT_FALSE(s.BatchScored(web));
}


// kube-scheduler's PodTopologySpread score for ScheduleAnyway constraints, by hand. Constraints: zone
// (maxSkew 1) and hostname (maxSkew 2), both counting app=web. Placed web pods: 2 on a1, 1 on b1. Node x has
// no zone label: ignored (0). Zone: 2 domains, weight log(4); hostname: 3 candidates kept, weight log(5).
//   a1: round(2 log 4 + 0 + 2 log 5 + 1) = round(6.99) = 7;  a2: round(2 log 4 + 1) = 4;
//   b1: round(log 4 + log 5 + 1) = round(4.00) = 4.
// Normalised 100 * (max + min - raw) / max with max 7, min 4: a1 400 / 7 = 57, a2 and b1 100; times 2.
// Running pods labelled app=web, one on each node named (a node may be named more than once).
void AddWebPods(Harness& h, std::initializer_list<const char*> nodes) {
  int i = 0;
  for (const char* node : nodes) {
    TaskInfo p = Harness::Pod("w" + std::to_string(i++), Resource::Cpu(100));
    p.labels = {{"app", "web"}};
    p.status = TaskStatus::kRunning;
    p.node = node;
    h.AddPod(p);
  }
}

TEST(NodeOrder, ScheduleAnywaySpreadIsKubeSchedulersScore) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  h.AddNode("a1", Resource::CpuMem(8000, 8 * kGi), {{"zone", "a"}});
  h.AddNode("a2", Resource::CpuMem(8000, 8 * kGi), {{"zone", "a"}});
  h.AddNode("b1", Resource::CpuMem(8000, 8 * kGi), {{"zone", "b"}});
  h.AddNode("x", Resource::CpuMem(8000, 8 * kGi));
  AddWebPods(h, {"a1", "a1", "b1"});
  TaskInfo other = Harness::Pod("other-ns", Resource::Cpu(100));  // another namespace: not counted
  other.ns = "elsewhere";
  other.labels = {{"app", "web"}};
  other.status = TaskStatus::kRunning;
  other.node = "a2";
  h.AddPod(other);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("t", Resource::Cpu(100));
  t.labels = {{"app", "web"}};
  EXPECT_FALSE(s.BatchScored(t));
  t.soft_spread.push_back(testing::Spread({{"app", "web"}}, "zone", 1));
  t.soft_spread.push_back(testing::Spread({{"app", "web"}}, "kubernetes.io/hostname", 2));
  ASSERT_TRUE(s.BatchScored(t));
  auto slot = [&](const char* n) { return h.st.NodeIndex(n); };
  std::vector<int> all = {slot("a1"), slot("a2"), slot("b1"), slot("x")};
  std::vector<double> scores(4, 0);
  s.BatchNodeScore(t, all, scores);
  EXPECT_EQ(scores, (std::vector<double>{114, 200, 200, 0}));
}

// kube-scheduler's system-default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway), which
// Volcano's nodeorder enables (DefaultingType SystemDefaulting), for a pod with no constraints of its own
// that a Service or its controller selects. Unlike a pod's own constraints, a node without the zone label is
// still scored (by hostname) and counts as the "" zone.
TEST(NodeOrder, SystemDefaultSpreadScoresPodsThatAServiceOrControllerSelects) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  const std::string zone(kZoneKey);
  h.AddNode("a1", Resource::CpuMem(8000, 8 * kGi), {{zone, "a"}});
  h.AddNode("a2", Resource::CpuMem(8000, 8 * kGi), {{zone, "a"}});
  h.AddNode("b1", Resource::CpuMem(8000, 8 * kGi), {{zone, "b"}});
  h.AddNode("x", Resource::CpuMem(8000, 8 * kGi));
  AddWebPods(h, {"a1", "a1", "b1"});
  Session& s = h.Open();
  auto slot = [&](const char* n) { return h.st.NodeIndex(n); };
  const std::vector<int> all = {slot("a1"), slot("a2"), slot("b1"), slot("x")};
  auto score = [&](const TaskInfo& t) {
    std::vector<double> scores(all.size(), 0);
    s.BatchNodeScore(t, all, scores);
    return scores;
  };
  TaskInfo t = Harness::Pod("t", Resource::Cpu(100));
  t.labels = {{"app", "web"}, {"tier", "fe"}};
  EXPECT_FALSE(s.BatchScored(t));  // nothing selects it

  h.st.UpsertService("ns", "web", {{"app", "web"}});
  ASSERT_TRUE(s.BatchScored(t));
  // hostname: weight ln(4+2), counts a1 2, b1 1; zone: domains a, b and "" (x), weight ln(3+2), counts a 2,
  // b 1. Raw (count*weight + maxSkew-1 per term the node has): a1 13, a2 9, b1 9, x 2 (hostname only).
  // Normalised 100*(13+2-raw)/13, times podtopologyspread.weight 2.
  EXPECT_EQ(score(t), (std::vector<double>{30, 92, 92, 200}));

  // A pod with a constraint of its own (even a DoNotSchedule one) never gets the defaults.
  TaskInfo own = t;
  own.spread.push_back(testing::Spread({{"app", "web"}}, "zone", 1));
  EXPECT_FALSE(s.BatchScored(own));

  // The owner's selector alone: a ReplicaSet whose selector the placed pods do not match counts none of
  // them, so only the maxSkew terms remain (x has one term fewer, hence the best score).
  h.st.RemoveService("ns", "web");
  TaskInfo owned = t;
  owned.controller = "ReplicaSet/fe";
  EXPECT_FALSE(s.BatchScored(owned));  // the ReplicaSet is not known yet
  LabelSelector rs;
  rs.match_labels = {{"app", "web"}, {"tier", "fe"}};
  h.st.UpsertController("ns", "ReplicaSet/fe", rs);
  ASSERT_TRUE(s.BatchScored(owned));
  EXPECT_EQ(score(owned), (std::vector<double>{66, 66, 66, 200}));

  // The same pod in the scheduler configuration without the score: podtopologyspread.weight 0.
  Harness off;
  PluginOption o = PluginOption::Named("nodeorder");
  o.arguments["podtopologyspread.weight"] = "0";
  off.Add(o);
  off.st.UpsertController("ns", "ReplicaSet/fe", rs);
  EXPECT_FALSE(off.Open().BatchScored(owned));
}

// The sparse form of the spread score (allocate's heap path) is the scanned score exactly: every candidate
// not listed gets `uniform`, every listed one its own score, for system defaults and for a pod's own hostname
// constraints, with dirty nodes in and out of the candidates, and when every candidate is dirty.
TEST(NodeOrder, SparseSpreadScoresAreTheScannedOnes) {
  Harness h;
  h.Add(PluginOption::Named("nodeorder"));
  for (int i = 0; i < 6; ++i) h.AddNode("n" + std::to_string(i), Resource::CpuMem(8000, 8 * kGi));
  AddWebPods(h, {"n0", "n0", "n1", "n4", "n4", "n4"});
  h.st.UpsertService("ns", "web", {{"app", "web"}});
  Session& s = h.Open();
  TaskInfo system = Harness::Pod("t", Resource::Cpu(100));
  system.labels = {{"app", "web"}};
  TaskInfo own = system;
  own.labels = {{"app", "web"}, {"own", "yes"}};
  own.soft_spread.push_back(testing::Spread({{"app", "web"}}, "kubernetes.io/hostname", 2));
  auto slot = [&](int n) { return h.st.NodeIndex("n" + std::to_string(n)); };
  for (const TaskInfo* t : {&system, &own}) {
    for (const std::vector<int>& nodes : {std::vector<int>{0, 1, 2, 3, 4, 5}, std::vector<int>{1, 2, 3, 5},
                                          std::vector<int>{0, 1, 4}, std::vector<int>{2}}) {
      std::vector<int> slots;
      for (int n : nodes) slots.push_back(slot(n));
      std::vector<double> scanned(slots.size(), 0);
      ASSERT_TRUE(s.BatchScored(*t));
      s.BatchNodeScore(*t, slots, scanned);
      auto sparse = s.SparseBatchNodeScore(*t, slots.size(), [&](int x) {
        return std::find(slots.begin(), slots.end(), x) != slots.end();
      });
      ASSERT_TRUE(sparse.has_value());
      for (size_t k = 0; k < slots.size(); ++k) {
        double expect = sparse->uniform;
        for (const auto& [x, score] : sparse->exceptions)
          if (x == slots[k]) expect = score;
        EXPECT_EQ(scanned[k], expect) << t->name << " node n" << nodes[k];
      }
      for (const auto& [x, score] : sparse->exceptions)
        EXPECT_NE(std::find(slots.begin(), slots.end(), x), slots.end()) << "a listed node is not a candidate";
    }
  }
  // A zone label on any node: the zone default can differ per zone, so there is no sparse form.
  NodeInfo zoned = *h.st.FindNode("n5");
  zoned.labels[std::string(kZoneKey)] = "z";
  h.st.UpsertNode(zoned);
  EXPECT_FALSE(s.SparseBatchNodeScore(system, 1, [](int) { return true; }).has_value());
}

}  // namespace
}  // namespace tephra::sched
