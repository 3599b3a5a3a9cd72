#include <gtest/gtest.h>

#include "harness.h"
#include "tephra/sched/statement.h"

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

// kube-scheduler's NodePorts: same hostPort and protocol with overlapping hostIP (0.0.0.0 overlaps every
// address) conflicts with a pod on the node, or one pipelined onto it in this cycle.
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
