#include <gtest/gtest.h>

#include "harness.h"
#include "tephra/sched/statement.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;
using testing::HostnameTerm;
using testing::Spread;
using testing::Term;

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
  // A required term with an operator Kubernetes does not define matches no node, and the reason says so.
  SelectorRequirement bad{"zone", SelectorOp::kInvalid, {"b"}};
  bad.op_text = "in";
  t.required_affinity = {{{bad}, {}}};
  EXPECT_EQ(s.StaticPredicate(t, plain), "pod's required node affinity uses an operator Kubernetes does not define");
  NodeInfo cordoned = plain;
  cordoned.unschedulable = true;
  t.required_affinity.clear();
  EXPECT_EQ(s.StaticPredicate(t, cordoned), "node(s) were unschedulable");
  // The cordon is tolerated as the taint kube-scheduler's NodeUnschedulable compares with: a NoExecute-only
  // toleration does not cover it, an empty effect or an empty key with Exists does.
  t.tolerations = {{"node.kubernetes.io/unschedulable", true, "", TaintEffect::kNoExecute}};
  EXPECT_EQ(s.StaticPredicate(t, cordoned), "node(s) were unschedulable");
  t.tolerations = {{"node.kubernetes.io/unschedulable", true, "", std::nullopt}};
  EXPECT_EQ(s.StaticPredicate(t, cordoned), "");
  t.tolerations = {{"", true, "", std::nullopt}};
  EXPECT_EQ(s.StaticPredicate(t, cordoned), "");
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
  t.pod_anti_affinity.push_back(HostnameTerm({{"app", "db"}}));
  EXPECT_EQ(s.DynamicPredicate(t, n), "node(s) didn't match pod anti-affinity rules");
  t.pod_anti_affinity[0].namespaces = {"other"};  // the term selects pods in its namespaces only
  EXPECT_EQ(s.DynamicPredicate(t, n), "");
  t.pod_anti_affinity[0].all_namespaces = true;  // namespaceSelector: {}
  EXPECT_EQ(s.DynamicPredicate(t, n), "node(s) didn't match pod anti-affinity rules");
  // Symmetric: an existing pod's anti-affinity rejects a matching newcomer.
  TaskInfo guard = Harness::Pod("g", Resource::Cpu(1));
  guard.pod_anti_affinity.push_back(HostnameTerm({{"app", "web"}}));
  guard.status = TaskStatus::kRunning;
  guard.node = "n";
  h.AddPod(guard);
  TaskInfo web = Harness::Pod("w", Resource::Cpu(1));
  web.labels = {{"app", "web"}};
  EXPECT_EQ(s.DynamicPredicate(web, n), "node(s) didn't satisfy existing pods anti-affinity rules");
  web.ns = "elsewhere";  // the guard's term names no namespaces: its own only
  EXPECT_EQ(s.DynamicPredicate(web, n), "");
  // A selector with an operator label selectors do not have fits no node (it would otherwise match nothing
  // and silently lift the constraint).
  TaskInfo bad = Harness::Pod("b", Resource::Cpu(1));
  PodAffinityTerm term = HostnameTerm({});
  term.selector.match_expressions = {{"app", SelectorOp::kInvalid, {"db"}}};
  bad.pod_anti_affinity.push_back(term);
  EXPECT_EQ(s.StaticPredicate(bad, n), "pod anti-affinity selector uses an operator label selectors do not have");
  bad.pod_anti_affinity.clear();
  term = HostnameTerm({});
  term.unsupported_namespace_selector = true;
  bad.pod_affinity.push_back(term);
  EXPECT_EQ(s.StaticPredicate(bad, n),
            "pod affinity term's namespaceSelector is not supported by this scheduler; list the namespaces");
}

// Zone a: a1, a2; zone b: b1; and a node without the zone key.
void AddZoneNodes(Harness& h) {
  h.AddNode("a1", Resource::Cpu(4000), {{"zone", "a"}});
  h.AddNode("a2", Resource::Cpu(4000), {{"zone", "a"}});
  h.AddNode("b1", Resource::Cpu(4000), {{"zone", "b"}});
  h.AddNode("nozone", Resource::Cpu(4000));
}

// Zone-scoped (any topology key) anti-affinity, both directions: a pod in zone a keeps a matching pod off
// every node of zone a, and a node without the key is in no domain (it never conflicts).
TEST(Predicates, ZoneAntiAffinityCoversEveryNodeOfTheDomain) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  AddZoneNodes(h);
  TaskInfo db = Harness::Pod("db", Resource::Cpu(1));
  db.labels = {{"app", "db"}};
  db.status = TaskStatus::kRunning;
  db.node = "a1";
  db.pod_anti_affinity.push_back(Term({{"app", "cache"}}, "zone"));
  h.AddPod(db);
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  t.pod_anti_affinity.push_back(Term({{"app", "db"}}, "zone"));
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod anti-affinity rules");
  EXPECT_EQ(s.DynamicPredicate(t, h.N("b1")), "");
  EXPECT_EQ(s.DynamicPredicate(t, h.N("nozone")), "");
  TaskInfo cache = Harness::Pod("c", Resource::Cpu(1));
  cache.labels = {{"app", "cache"}};
  EXPECT_EQ(s.DynamicPredicate(cache, h.N("a2")), "node(s) didn't satisfy existing pods anti-affinity rules");
  EXPECT_EQ(s.DynamicPredicate(cache, h.N("b1")), "");
  // A pending pod is nowhere yet: it constrains nothing.
  TaskInfo pending = Harness::Pod("p", Resource::Cpu(1));
  pending.labels = {{"app", "db"}};
  h.AddPod(pending);
  EXPECT_EQ(s.DynamicPredicate(t, h.N("b1")), "");
}

// Required pod affinity (kube-scheduler's rules): every term's key must be on the node; a node is in when,
// for every term, its domain holds a placed pod that matches all the terms; if no pod anywhere matches and
// the pod matches its own terms, it may go anywhere that has the keys (the first of a group).
TEST(Predicates, PodAffinityNeedsAMatchingPodInTheDomain) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  AddZoneNodes(h);
  Session& s = h.Open();
  TaskInfo w = Harness::Pod("w", Resource::Cpu(1));
  w.labels = {{"app", "train"}};
  w.pod_affinity.push_back(Term({{"app", "train"}}, "zone"));
  // First of its group: nothing matches yet and the pod matches its own term.
  EXPECT_EQ(s.DynamicPredicate(w, h.N("b1")), "");
  EXPECT_EQ(s.DynamicPredicate(w, h.N("nozone")), "node(s) didn't match pod affinity rules");
  TaskInfo other = w;
  other.labels = {{"app", "infer"}};  // does not match its own term: needs a matching pod first
  EXPECT_EQ(s.DynamicPredicate(other, h.N("b1")), "node(s) didn't match pod affinity rules");
  TaskInfo ps = Harness::Pod("ps", Resource::Cpu(1));
  ps.labels = {{"app", "train"}};
  ps.status = TaskStatus::kPipelined;  // placed in this cycle counts as placed
  ps.node = "a1";
  h.AddPod(ps);
  EXPECT_EQ(s.DynamicPredicate(w, h.N("a2")), "");
  EXPECT_EQ(s.DynamicPredicate(w, h.N("b1")), "node(s) didn't match pod affinity rules");
  EXPECT_EQ(s.DynamicPredicate(other, h.N("a2")), "");
  // Two terms: a pod counts only if it matches both.
  w.pod_affinity.push_back(Term({{"tier", "gold"}}, "zone"));
  EXPECT_EQ(s.DynamicPredicate(w, h.N("a2")), "node(s) didn't match pod affinity rules");
}

TaskInfo PlacedPod(const std::string& name, Labels labels, const std::string& node,
                   TaskStatus status = TaskStatus::kRunning) {
  TaskInfo t = Harness::Pod(name, Resource::Cpu(1));
  t.labels = std::move(labels);
  t.status = status;
  t.node = node;
  return t;
}

// kube-scheduler's PodTopologySpread filter: the node's domain may hold at most maxSkew matching pods more
// than the emptiest eligible domain, counting the pod itself when it matches; a node without the key is out.
TEST(Predicates, TopologySpreadKeepsTheSkewWithinMaxSkew) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  AddZoneNodes(h);
  h.AddPod(PlacedPod("w1", {{"app", "web"}}, "a1"));
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  t.labels = {{"app", "web"}};
  t.spread.push_back(Spread({{"app", "web"}}, "zone"));
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
  EXPECT_EQ(s.DynamicPredicate(t, h.N("b1")), "");
  EXPECT_EQ(s.DynamicPredicate(t, h.N("nozone")),
            "node(s) didn't match pod topology spread constraints (missing required label)");
  TaskInfo loose = t;
  loose.spread[0].max_skew = 2;
  EXPECT_EQ(s.DynamicPredicate(loose, h.N("a2")), "");
  TaskInfo other = t;  // does not match its own selector: placing it does not move the count
  other.labels = {{"app", "db"}};
  EXPECT_EQ(s.DynamicPredicate(other, h.N("a2")), "");
  TaskInfo elsewhere = t;  // counts only pods of its own namespace
  elsewhere.ns = "other";
  EXPECT_EQ(s.DynamicPredicate(elsewhere, h.N("a2")), "");
  TaskInfo none = t;  // no labelSelector: matches no pod, the key is still required
  none.spread[0].null_selector = true;
  EXPECT_EQ(s.DynamicPredicate(none, h.N("a2")), "");
  EXPECT_EQ(s.DynamicPredicate(none, h.N("nozone")),
            "node(s) didn't match pod topology spread constraints (missing required label)");
  // Zone b catches up: a is no longer above the minimum.
  h.AddPod(PlacedPod("w2", {{"app", "web"}}, "b1", TaskStatus::kPipelined));
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "");
  // A pod being deleted does not count.
  h.AddPod(PlacedPod("w2", {{"app", "web"}}, "b1", TaskStatus::kReleasing));
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
}

// Which domains count: the nodes the pod may use (nodeAffinityPolicy Honor, the default), every node with the
// key (Ignore), nodes without untolerated taints (nodeTaintsPolicy Honor); minDomains above the number of
// eligible domains makes the minimum 0.
TEST(Predicates, TopologySpreadCountsEligibleDomainsOnly) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("a1", Resource::Cpu(4000), {{"zone", "a"}});
  h.AddNode("a2", Resource::Cpu(4000), {{"zone", "a"}});
  h.AddNode("b1", Resource::Cpu(4000), {{"zone", "b"}, {"pool", "spot"}}, {{"spot", "", TaintEffect::kNoSchedule}});
  h.AddNode("c1", Resource::Cpu(4000), {{"zone", "c"}, {"pool", "spot"}});
  h.AddPod(PlacedPod("w1", {{"app", "web"}}, "a1"));
  h.AddPod(PlacedPod("w2", {{"app", "web"}}, "c1"));
  Session& s = h.Open();
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  t.labels = {{"app", "web"}};
  t.spread.push_back(Spread({{"app", "web"}}, "zone"));
  // Zone b (empty) is the minimum.
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
  // The pod may not use zone b (node affinity): it does not count.
  t.required_affinity = {{{{"pool", SelectorOp::kDoesNotExist, {}}}, {}}, {{{"zone", SelectorOp::kIn, {"c"}}}, {}}};
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "");
  t.spread[0].honor_node_affinity = false;  // nodeAffinityPolicy: Ignore
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
  t.required_affinity.clear();
  t.spread[0].honor_node_affinity = true;
  t.spread[0].honor_node_taints = true;  // zone b's only node has a taint the pod does not tolerate
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "");
  t.tolerations.push_back({"spot", true, "", std::nullopt});
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
  t.tolerations.clear();
  t.spread[0].min_domains = 3;  // two eligible domains (a, c): fewer than minDomains, so the minimum is 0
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "node(s) didn't match pod topology spread constraints");
  t.spread[0].min_domains = 2;
  EXPECT_EQ(s.DynamicPredicate(t, h.N("a2")), "");
}

// kube-scheduler's NodePorts: same hostPort and protocol with overlapping hostIP (0.0.0.0 overlaps every
// address) conflicts with a pod on the node, or one pipelined onto it in this cycle.
// kube-scheduler's VolumeBinding for pods with claims: a claim that is missing or being deleted, or unbound
// in a class that binds at once, fits no node; a bound claim fits the nodes its volume's node affinity
// allows; an unbound WaitForFirstConsumer claim fits wherever its class's allowedTopologies allow (the volume
// follows the pod).
TEST(Predicates, VolumeBindingLikeKubeScheduler) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("a", Resource::Cpu(1000), {{"kubernetes.io/hostname", "a"}});
  h.AddNode("b", Resource::Cpu(1000), {{"kubernetes.io/hostname", "b"}});
  VolumeInfo local;
  local.node_affinity = {{{{"kubernetes.io/hostname", SelectorOp::kIn, {"a"}}}, {}}};
  h.st.UpsertVolume("pv-local", local);
  h.st.UpsertVolume("pv-nfs", VolumeInfo{});
  h.st.UpsertClaim("ns/data", {"pv-local", "local", false});
  h.st.UpsertClaim("ns/shared", {"pv-nfs", "", false});
  h.st.UpsertClaim("ns/pending", {"", "", false});
  h.st.UpsertClaim("ns/later", {"", "wffc", false});
  h.st.UpsertClaim("ns/going", {"pv-nfs", "", true});
  h.st.UpsertClaim("ns/orphan", {"pv-gone", "", false});
  h.st.UpsertClaim("ns/local-later", {"", "local-wffc", false});
  h.st.UpsertClaim("ns/zonal-later", {"", "zone-a-wffc", false});
  h.st.UpsertStorageClass("wffc", {true, false, {}, "example.com/csi"});
  h.st.UpsertStorageClass("local-wffc", {true, true, {}, "kubernetes.io/no-provisioner"});
  // allowedTopologies: provisioned only where the hostname is a (terms ORed, expressions `key In values`).
  h.st.UpsertStorageClass("zone-a-wffc", {true, false, {{{{"kubernetes.io/hostname", SelectorOp::kIn, {"a"}}}, {}},
                                                        {{{"no-such-key", SelectorOp::kIn, {"x"}}}, {}}}, "example.com/csi"});
  Session& s = h.Open();
  auto fit = [&](std::vector<std::string> claims, const std::string& node) {
    TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
    t.claims = std::move(claims);
    return s.StaticPredicate(t, h.N(node));
  };
  EXPECT_EQ(fit({"data"}, "a"), "");
  EXPECT_EQ(fit({"data"}, "b"), "node(s) had volume node affinity conflict");
  EXPECT_EQ(fit({"shared", "data"}, "b"), "node(s) had volume node affinity conflict");
  EXPECT_EQ(fit({"shared"}, "b"), "");
  EXPECT_EQ(fit({"pending"}, "a"), "pod has unbound immediate PersistentVolumeClaims");
  EXPECT_EQ(fit({"later"}, "b"), "");
  EXPECT_EQ(fit({"zonal-later"}, "a"), "");
  EXPECT_EQ(fit({"zonal-later"}, "b"), "node(s) didn't find available persistent volumes to bind");
  EXPECT_EQ(fit({"local-later"}, "b"), "node(s) didn't find available persistent volumes to bind")
      << "no pre-created volume of the class, and the class cannot provision";
  EXPECT_EQ(fit({"nothere"}, "a"), "persistentvolumeclaim not found {claim: nothere}");
  EXPECT_EQ(fit({"going"}, "a"), "persistentvolumeclaim is being deleted {claim: going}");
  EXPECT_EQ(fit({"orphan"}, "a"), "bound persistentvolume not found {volume: pv-gone}");
  // The volume controller binds the claim: the answer follows, and the class turning Immediate does too.
  const uint64_t before = h.st.topology_version();
  h.st.UpsertClaim("ns/pending", {"pv-local", "", false});
  EXPECT_GT(h.st.topology_version(), before);
  EXPECT_EQ(fit({"pending"}, "a"), "");
  h.st.UpsertStorageClass("wffc", {false, false, {}, "example.com/csi"});
  EXPECT_EQ(fit({"later"}, "b"), "pod has unbound immediate PersistentVolumeClaims");
  // predicate.VolumeBindingEnable: false turns the check off, as in Volcano.
  Harness off;
  PluginOption o = PluginOption::Named("predicates");
  o.arguments["predicate.VolumeBindingEnable"] = "false";
  off.Add(o);
  off.AddNode("a", Resource::Cpu(1000));
  Session& s2 = off.Open();
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  t.claims = {"nothere"};
  EXPECT_EQ(s2.StaticPredicate(t, off.N("a")), "");
}

// kube-scheduler's VolumeZone: a node with zone/region labels takes the pod only where each bound volume's
// zone/region labels list the node's value ("a__b" lists two); a node without such labels takes it anyway;
// an unbound WaitForFirstConsumer claim is not judged (the volume follows the pod).
TEST(Predicates, VolumeZoneLikeKubeScheduler) {
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("a", Resource::Cpu(1000), {{"topology.kubernetes.io/zone", "a"}, {"topology.kubernetes.io/region", "r1"}});
  h.AddNode("b", Resource::Cpu(1000), {{"topology.kubernetes.io/zone", "b"}});
  h.AddNode("plain", Resource::Cpu(1000));
  VolumeInfo in_b;
  in_b.labels = {{"topology.kubernetes.io/zone", "b"}};
  VolumeInfo in_a_or_b;
  in_a_or_b.labels = {{"topology.kubernetes.io/zone", "a__ b"}};
  VolumeInfo region;
  region.labels = {{"topology.kubernetes.io/region", "r1"}, {"team", "x"}};
  VolumeInfo bad_list;  // an empty entry: kube ignores the label
  bad_list.labels = {{"topology.kubernetes.io/zone", "a____b"}};
  h.st.UpsertVolume("pv-b", in_b);
  h.st.UpsertVolume("pv-ab", in_a_or_b);
  h.st.UpsertVolume("pv-r1", region);
  h.st.UpsertVolume("pv-bad", bad_list);
  h.st.UpsertClaim("ns/b", {"pv-b", "", false});
  h.st.UpsertClaim("ns/ab", {"pv-ab", "", false});
  h.st.UpsertClaim("ns/r1", {"pv-r1", "", false});
  h.st.UpsertClaim("ns/bad", {"pv-bad", "", false});
  h.st.UpsertClaim("ns/later", {"", "wffc", false});
  h.st.UpsertStorageClass("wffc", {true, false, {}, "example.com/csi"});
  Session& s = h.Open();
  auto fit = [&](std::vector<std::string> claims, const std::string& node) {
    TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
    t.claims = std::move(claims);
    return s.StaticPredicate(t, h.N(node));
  };
  constexpr const char* kZone = "node(s) had no available volume zone";
  EXPECT_EQ(fit({"b"}, "a"), kZone);
  EXPECT_EQ(fit({"b"}, "b"), "");
  EXPECT_EQ(fit({"b"}, "plain"), "") << "a node without zone labels is not constrained";
  EXPECT_EQ(fit({"ab"}, "a"), "");
  EXPECT_EQ(fit({"ab"}, "b"), "");
  EXPECT_EQ(fit({"r1"}, "a"), "");
  EXPECT_EQ(fit({"r1"}, "b"), kZone) << "the node lacks the region label the volume names";
  EXPECT_EQ(fit({"bad"}, "b"), "");
  EXPECT_EQ(fit({"later", "b"}, "b"), "");
  EXPECT_EQ(fit({"later", "b"}, "a"), kZone);
  // predicate.VolumeZoneEnable: false turns it off.
  Harness off;
  PluginOption o = PluginOption::Named("predicates");
  o.arguments["predicate.VolumeZoneEnable"] = "false";
  off.Add(o);
  off.AddNode("a", Resource::Cpu(1000), {{"topology.kubernetes.io/zone", "a"}});
  off.st.UpsertVolume("pv-b", in_b);
  off.st.UpsertClaim("ns/b", {"pv-b", "", false});
  Session& s2 = off.Open();
  TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
  t.claims = {"b"};
  EXPECT_EQ(s2.StaticPredicate(t, off.N("a")), "");
}

// kube-scheduler's NodeVolumeLimits (CSI): distinct volumes per driver on the node, the pod's new ones
// included, within the node's CSINode count (or its attachable-volumes-csi-<driver> allocatable); a volume
// the node already has attached is not counted twice; an unbound claim counts as one volume of its class's
// provisioner; in-tree volumes are not counted.
TEST(Predicates, NodeVolumeLimitsLikeKubeScheduler) {
  constexpr const char* kLimit = "node(s) exceed max volume count";
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("n", Resource::Cpu(8000));
  h.AddNode("free", Resource::Cpu(8000));
  h.st.UpsertCsiNode("n", {{CsiLimitKey("ebs.csi.aws.com"), 2}});
  auto csi = [](std::string handle) {
    VolumeInfo v;
    v.csi_driver = "ebs.csi.aws.com";
    v.csi_handle = std::move(handle);
    return v;
  };
  for (std::string v : {"v1", "v2", "v3"}) {
    h.st.UpsertVolume("pv-" + v, csi(v));
    h.st.UpsertClaim("ns/" + v, {"pv-" + v, "", false});
  }
  h.st.UpsertVolume("pv-nfs", VolumeInfo{});
  h.st.UpsertClaim("ns/nfs", {"pv-nfs", "", false});
  h.st.UpsertClaim("ns/new", {"", "gp3", false});
  h.st.UpsertStorageClass("gp3", {true, false, {}, "ebs.csi.aws.com"});
  // Two running pods hold v1 (twice: one volume) and v2: the node is at its limit of 2.
  auto on_node = [&](const std::string& uid, std::vector<std::string> claims) {
    TaskInfo t = Harness::Pod(uid, Resource::Cpu(1));
    t.claims = std::move(claims);
    t.status = TaskStatus::kRunning;
    t.node = "n";
    h.AddPod(t);
  };
  on_node("r1", {"v1"});
  on_node("r2", {"v1", "v2"});
  Session& s = h.Open();
  auto fit = [&](std::vector<std::string> claims, const std::string& node) {
    TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
    t.claims = std::move(claims);
    return s.DynamicPredicate(t, h.N(node));
  };
  EXPECT_EQ(fit({"v3"}, "n"), kLimit);
  EXPECT_EQ(fit({"new"}, "n"), kLimit) << "an unbound claim will be a new volume of its provisioner";
  EXPECT_EQ(fit({"v1", "v2"}, "n"), "") << "already attached";
  EXPECT_EQ(fit({"nfs"}, "n"), "") << "not a CSI volume";
  EXPECT_EQ(fit({"v3"}, "free"), "") << "no CSINode, no allocatable limit";
  // The limit from the node's allocatable when there is no CSINode entry for the driver.
  NodeInfo free = h.N("free");
  free.volume_limits[CsiLimitKey("ebs.csi.aws.com")] = 1;
  h.st.UpsertNode(free);
  EXPECT_EQ(fit({"v3"}, "free"), "");
  EXPECT_EQ(fit({"v3", "new"}, "free"), kLimit);
  // A raised CSINode count lets the pod in.
  h.st.UpsertCsiNode("n", {{CsiLimitKey("ebs.csi.aws.com"), 3}});
  EXPECT_EQ(fit({"v3"}, "n"), "");
  EXPECT_EQ(fit({"v3", "new"}, "n"), kLimit);
}

// kube-scheduler's volume binder for WaitForFirstConsumer claims: a pre-created volume of the claim's class
// usable from the node, big enough, with the claim's access modes, volume mode and selector, free or pre-bound
// to the claim; the smallest that fits; one volume per claim; a volume set aside by an earlier placement is
// offered to its claim only. A claim of a provisioning class that no volume fits is provisioned instead.
TEST(Predicates, WaitForFirstConsumerClaimsBindToPreCreatedVolumes) {
  constexpr const char* kNone = "node(s) didn't find available persistent volumes to bind";
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("a", Resource::Cpu(1000), {{"kubernetes.io/hostname", "a"}});
  h.AddNode("b", Resource::Cpu(1000), {{"kubernetes.io/hostname", "b"}});
  h.AddNode("c", Resource::Cpu(1000), {{"kubernetes.io/hostname", "c"}});
  constexpr int64_t kG = 1LL << 30;
  auto local = [&](const std::string& name, const std::string& host, int64_t size, Labels labels = {}) {
    VolumeInfo v;
    v.node_affinity = {{{{"kubernetes.io/hostname", SelectorOp::kIn, {host}}}, {}}};
    v.storage_class = "local";
    v.capacity = size;
    v.access_modes = kReadWriteOnce;
    v.available = true;
    v.labels = std::move(labels);
    h.st.UpsertVolume(name, v);
    return v;
  };
  local("a-small", "a", 100 * kG);
  local("a-big", "a", 900 * kG, {{"tier", "fast"}});
  local("b-big", "b", 900 * kG);
  VolumeInfo taken = local("c-taken", "c", 900 * kG);
  taken.claim_ref = "other/theirs";
  h.st.UpsertVolume("c-taken", taken);
  h.st.UpsertStorageClass("local", {true, true, {}, "kubernetes.io/no-provisioner"});
  h.st.UpsertStorageClass("fast-wffc", {true, false, {}, "csi.example.com"});
  auto claim = [&](const std::string& name, int64_t request, const std::string& sc = "local") {
    ClaimInfo c{"", sc, false};
    c.uid = "uid-" + name;
    c.request = request;
    c.access_modes = kReadWriteOnce;
    h.st.UpsertClaim("ns/" + name, c);
    return c;
  };
  claim("small", 50 * kG);
  claim("big", 500 * kG);
  claim("huge", 2000 * kG);
  ClaimInfo rwx = claim("rwx", 10 * kG);
  rwx.access_modes = kReadWriteMany;
  h.st.UpsertClaim("ns/rwx", rwx);
  ClaimInfo picky = claim("picky", 10 * kG);
  picky.selector.emplace();
  picky.selector->match_labels["tier"] = "fast";
  h.st.UpsertClaim("ns/picky", picky);
  claim("provisioned", 5000 * kG, "fast-wffc");
  Session& s = h.Open();
  auto task = [&](std::vector<std::string> claims) {
    TaskInfo t = Harness::Pod("x", Resource::Cpu(1));
    t.claims = std::move(claims);
    return t;
  };
  auto fit = [&](std::vector<std::string> claims, const std::string& node) { return s.StaticPredicate(task(claims), h.N(node)); };
  auto choose = [&](std::vector<std::string> claims, const std::string& node) {
    std::vector<ClusterState::VolumeChoice> out;
    EXPECT_TRUE(h.st.ChooseVolumes(task(claims), h.N(node), &out));
    std::map<std::string, std::string> m;
    for (const auto& c : out) m[c.claim] = c.volume;
    return m;
  };
  EXPECT_EQ(choose({"small"}, "a"), (std::map<std::string, std::string>{{"small", "a-small"}})) << "the smallest that fits";
  EXPECT_EQ(choose({"big", "small"}, "a"), (std::map<std::string, std::string>{{"small", "a-small"}, {"big", "a-big"}}));
  EXPECT_EQ(fit({"big"}, "b"), "");
  EXPECT_EQ(fit({"big"}, "c"), kNone) << "c's volume is bound to another claim";
  EXPECT_EQ(fit({"huge"}, "a"), kNone);
  EXPECT_EQ(fit({"rwx"}, "a"), kNone) << "no volume offers ReadWriteMany";
  EXPECT_EQ(choose({"picky"}, "a"), (std::map<std::string, std::string>{{"picky", "a-big"}})) << "the claim's selector";
  EXPECT_EQ(fit({"picky"}, "b"), kNone);
  EXPECT_EQ(fit({"big", "picky"}, "a"), kNone) << "one volume per claim";
  EXPECT_EQ(choose({"provisioned"}, "c"), (std::map<std::string, std::string>{{"provisioned", ""}}));
  // Pre-bound to the claim: that volume, on its node only.
  VolumeInfo pre = h.st.FindVolume("b-big") ? *h.st.FindVolume("b-big") : VolumeInfo{};
  pre.claim_ref = "ns/small";
  h.st.UpsertVolume("b-big", pre);
  EXPECT_EQ(choose({"small"}, "b"), (std::map<std::string, std::string>{{"small", "b-big"}}));
  EXPECT_EQ(fit({"small"}, "a"), kNone) << "the claim's pre-bound volume is on b: that one or none";
  EXPECT_EQ(fit({"big"}, "b"), kNone) << "b's volume is promised to ns/small";
  // A placement sets a volume aside for its claim: no other claim is offered it.
  {
    Statement st(&h.st);
    TaskInfo p = task({"big"});
    p.uid = "p-big";
    p.ns = "ns";
    h.AddPod(p);
    ASSERT_TRUE(st.Allocate("p-big", "a").ok());
    ASSERT_NE(h.st.AssumedVolume("ns/big"), nullptr);
    EXPECT_EQ(*h.st.AssumedVolume("ns/big"), "a-big");
    EXPECT_EQ(fit({"picky"}, "a"), kNone) << "a-big is set aside for ns/big";
    EXPECT_EQ(fit({"big"}, "a"), "") << "but still offered to its own claim";
  }  // the statement is undone: the volume is free again
  EXPECT_EQ(h.st.AssumedVolume("ns/big"), nullptr);
  EXPECT_EQ(fit({"picky"}, "a"), "");
  // A pipelined gang's allocations are held until the session closes, then reverted: the same.
  {
    Statement st(&h.st);
    ASSERT_TRUE(st.Allocate("p-big", "a").ok());
    std::vector<Statement::Entry> held = st.Release();
    EXPECT_NE(h.st.AssumedVolume("ns/big"), nullptr);
    Statement undo(&h.st);
    undo.Revert(held);
  }
  EXPECT_EQ(h.st.AssumedVolume("ns/big"), nullptr) << "a reverted placement keeps no volume aside";
  EXPECT_EQ(fit({"picky"}, "a"), "");
}

TEST(Predicates, HostPortConflictsWithPodsOnTheNode) {
  constexpr const char* kPorts = "node(s) didn't have free ports for the requested pod ports";
  Harness h;
  h.Add(PluginOption::Named("predicates"));
  h.AddNode("n", Resource::Cpu(4000));
  h.AddNode("m", Resource::Cpu(4000));
  TaskInfo held = Harness::Pod("held", Resource::Cpu(1));
  held.host_ports = {{"10.0.0.1", "TCP", 8080}, {"0.0.0.0", "UDP", 53}};
  held.status = TaskStatus::kRunning;
  held.node = "n";
  h.AddPod(held);
  TaskInfo pending = Harness::Pod("p", Resource::Cpu(1));
  pending.host_ports = {{"", "", 9000}};
  h.AddPod(pending);
  Session& s = h.Open();
  const NodeInfo& n = h.N("n");
  EXPECT_EQ(n.host_port_tasks, 1);
  auto wants = [](HostPort p) {
    TaskInfo t = Harness::Pod("t", Resource::Cpu(1));
    t.host_ports = {std::move(p)};
    return t;
  };
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.1", "TCP", 8080}), n), kPorts);
  EXPECT_EQ(s.DynamicPredicate(wants({"0.0.0.0", "TCP", 8080}), n), kPorts) << "0.0.0.0 overlaps every address";
  EXPECT_EQ(s.DynamicPredicate(wants({"", "", 8080}), n), kPorts) << "empty = 0.0.0.0 / TCP";
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.9", "UDP", 53}), n), kPorts) << "held on 0.0.0.0";
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.2", "TCP", 8080}), n), "") << "another address";
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.1", "UDP", 8080}), n), "") << "another protocol";
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.1", "TCP", 8081}), n), "") << "another port";
  EXPECT_EQ(s.DynamicPredicate(wants({"10.0.0.1", "TCP", 8080}), h.N("m")), "") << "another node";
  EXPECT_EQ(s.DynamicPredicate(Harness::Pod("none", Resource::Cpu(1)), n), "") << "no host ports asked";

  // A pending pod holds nothing; once pipelined (or allocated) onto a node in this cycle it does.
  EXPECT_EQ(s.DynamicPredicate(wants({"", "", 9000}), h.N("m")), "");
  {
    Statement st(&h.st);
    ASSERT_TRUE(st.Pipeline("p", "m").ok());
    EXPECT_EQ(h.N("m").host_port_tasks, 1);
    EXPECT_EQ(s.DynamicPredicate(wants({"", "", 9000}), h.N("m")), kPorts);
  }  // discarded
  EXPECT_EQ(h.N("m").host_port_tasks, 0);
  {
    Statement st(&h.st);
    ASSERT_TRUE(st.Allocate("p", "m").ok());
    EXPECT_EQ(s.DynamicPredicate(wants({"", "", 9000}), h.N("m")), kPorts);
  }

  // Switched off like Volcano's predicate.NodePortsEnable.
  Harness off;
  PluginOption o = PluginOption::Named("predicates");
  o.arguments["predicate.NodePortsEnable"] = "false";
  off.Add(o);
  off.AddNode("n", Resource::Cpu(4000));
  off.AddPod(held);
  Session& os = off.Open();
  EXPECT_EQ(os.DynamicPredicate(wants({"10.0.0.1", "TCP", 8080}), off.N("n")), "");
}

}  // namespace
}  // namespace tephra::sched
