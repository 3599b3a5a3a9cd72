#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;
using testing::kGi;

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

}  // namespace
}  // namespace tephra::sched
