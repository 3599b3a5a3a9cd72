#include "tephra/nodesim/node_model.h"

#include <gtest/gtest.h>

namespace tephra::nodesim {
namespace {

NodeSpec OneNode(NodeGroup* g) {
  FlagValues f;
  f.nodes = 1;
  f.taints = "dedicated=gpu:NoSchedule";
  *g = *GroupFromFlags(f);
  SimConfig cfg{{*g}};
  NodeSpec n = (*ExpandNodes(cfg))[0];
  n.group = g;
  return n;
}

json Annotated(std::map<std::string, std::string> ann) { return {{"metadata", {{"annotations", ann}}}}; }

const json* Cond(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(NodeModel, Addresses) {
  EXPECT_EQ(NodeInternalIp(0), "10.0.0.1");
  EXPECT_EQ(NodeInternalIp(256), "10.0.1.1");
  EXPECT_EQ(PodCidr(0), "10.64.0.0/24");
  EXPECT_EQ(PodCidr(257), "10.65.1.0/24");
  EXPECT_EQ(PodIp(257, 0), "10.65.1.2");
  EXPECT_EQ(PodIp(257, 253), "10.65.1.2") << "wraps inside the /24";
  EXPECT_EQ(PodIp(0, 252), "10.64.0.254");
}

TEST(NodeModel, ReadyNodeObject) {
  NodeGroup g;
  NodeSpec n = OneNode(&g);
  core::FakeClock clock;
  json node = BuildNode(n, {}, clock.WallNow());
  EXPECT_EQ(node["metadata"]["name"], "tephra-sim-0");
  EXPECT_EQ(node["metadata"]["labels"][kSimLabel], "true");
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "dedicated");
  EXPECT_EQ(node["spec"]["taints"][0]["value"], "gpu");
  EXPECT_EQ(node["spec"]["taints"][0]["effect"], "NoSchedule");
  const json& st = node["status"];
  EXPECT_EQ(st["capacity"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(st["allocatable"], st["capacity"]);
  EXPECT_EQ(st["addresses"][0]["address"], "10.0.0.1");
  ASSERT_NE(Cond(st, "Ready"), nullptr);
  EXPECT_EQ((*Cond(st, "Ready"))["status"], "True");
  EXPECT_EQ((*Cond(st, "Ready"))["lastHeartbeatTime"], core::FormatRfc3339(clock.WallNow()));
}

TEST(NodeModel, FaultsBendStatus) {
  NodeGroup g;
  NodeSpec n = OneNode(&g);
  NodeFaults f = ReadFaults(Annotated({{kFailAnnotation, "true"}, {kUnhealthyGpusAnnotation, "3"}}));
  EXPECT_TRUE(f.fail);
  EXPECT_EQ(f.unhealthy_gpus, 3);
  json st = BuildNodeStatus(n, f, core::FakeClock().WallNow());
  EXPECT_EQ((*Cond(st, "Ready"))["status"], "False");
  EXPECT_EQ(st["allocatable"]["nvidia.com/gpu"], "5");
  EXPECT_EQ(st["capacity"]["nvidia.com/gpu"], "8");
  f.unhealthy_gpus = 20;
  st = BuildNodeStatus(n, f, core::FakeClock().WallNow());
  EXPECT_EQ(st["allocatable"]["nvidia.com/gpu"], "0");
}

TEST(NodeModel, SimulatedConditionsKeepTheirTransitionTime) {
  NodeGroup g;
  NodeSpec n = OneNode(&g);
  NodeFaults f = ReadFaults(Annotated({{kConditionsAnnotation, "GpuXidError, NetworkUnavailable,Ready"}}));
  EXPECT_EQ(f.conditions, (std::vector<std::string>{"GpuXidError", "NetworkUnavailable"}));
  EXPECT_NE(f.problem.find("Ready is the kubelet's own condition"), std::string::npos) << f.problem;
  EXPECT_FALSE(f == NodeFaults{});
  core::FakeClock clock;
  f.since = clock.WallNow();
  clock.Advance(std::chrono::seconds(30));
  json st = BuildNodeStatus(n, f, clock.WallNow());
  ASSERT_NE(Cond(st, "GpuXidError"), nullptr);
  EXPECT_EQ((*Cond(st, "GpuXidError"))["status"], "True");
  // A heartbeat is not a transition: the fault began 30 s before this status.
  EXPECT_EQ((*Cond(st, "GpuXidError"))["lastTransitionTime"], core::FormatRfc3339(clock.WallNow() - std::chrono::seconds(30)));
  EXPECT_EQ((*Cond(st, "GpuXidError"))["lastHeartbeatTime"], core::FormatRfc3339(clock.WallNow()));
  EXPECT_EQ((*Cond(st, "Ready"))["status"], "True");
}

TEST(NodeModel, BadFaultValuesAreReportedNotFatal) {
  NodeFaults f = ReadFaults(Annotated({{kUnhealthyGpusAnnotation, "-1"}}));
  EXPECT_EQ(f.unhealthy_gpus, 0);
  EXPECT_NE(f.problem.find("is not a count"), std::string::npos);
  f = ReadFaults(Annotated({{kFailAnnotation, "maybe"}}));
  EXPECT_FALSE(f.fail);
  EXPECT_FALSE(f.problem.empty());
  EXPECT_EQ(ReadFaults(json::object()), NodeFaults{});
}

TEST(NodeModel, LeaseOwnedByNode) {
  core::FakeClock clock;
  json l = BuildLease("n1", "uid-1", 40, clock.WallNow());
  EXPECT_EQ(l["metadata"]["namespace"], "kube-node-lease");
  EXPECT_EQ(l["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(l["spec"]["leaseDurationSeconds"], 40);
  EXPECT_EQ(l["spec"]["renewTime"], "2023-11-14T22:13:20.000000Z");
}

}  // namespace
}  // namespace tephra::nodesim
