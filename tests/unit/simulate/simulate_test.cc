// Trace replay: the trace files' columns and errors, the paper's workload tuning, and replays small enough
// to know the answer (fragmentation-aware scoring keeps a whole GPU free where spreading does not).
#include "tephra/simulate/replay.h"

#include <gtest/gtest.h>

#include <set>

namespace tephra::simulate {
namespace {

TEST(SimulateTrace, ParsesTheOpenbColumnsByName) {
  auto nodes = ParseNodeList("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,262144,0,\n");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].gpus, 2);
  EXPECT_EQ((*nodes)[0].model, "P100");
  EXPECT_EQ((*nodes)[1].model, "");
  auto pods = ParsePodList(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\r\np0,12000,16384,1,460,,LS\r\np1,4000,100,2,1000,V100M16|V100M32,BE\r\n");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].TotalGpuMilli(), 460);
  EXPECT_EQ((*pods)[1].gpu_spec, "V100M16|V100M32");
  EXPECT_EQ((*pods)[1].TotalGpuMilli(), 2000);
}

TEST(SimulateTrace, ErrorsNameTheLineAndColumn) {
  auto bad = ParsePodList("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,x,1,0,0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2, column cpu_milli: \"x\""), std::string::npos) << bad.status();
  auto milli = ParsePodList("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1,1,1,0\n");
  ASSERT_FALSE(milli.ok());
  EXPECT_NE(milli.status().message().find("gpu_milli: want 1..1000"), std::string::npos) << milli.status();
  auto header = ParseNodeList("name,cpu\n");
  ASSERT_FALSE(header.ok());
  EXPECT_NE(header.status().message().find("header has no column sn"), std::string::npos) << header.status();
}

std::vector<TracePod> Pods(std::initializer_list<int64_t> milli) {
  std::vector<TracePod> out;
  int i = 0;
  for (int64_t m : milli)
    out.push_back({.name = "p" + std::to_string(i++), .cpu_milli = 1000, .memory_mib = 1024, .num_gpu = 1, .gpu_milli = m});
  return out;
}

TEST(SimulateTrace, TuningReachesTheTargetAndDependsOnlyOnTheSeed) {
  std::vector<TracePod> pods = Pods({100, 200, 300, 400, 500, 1000});
  ReplayOptions o{.seed = 7, .tune = 1.3};
  auto a = TuneWorkload(pods, 10'000, o);
  int64_t total = 0;
  for (const auto& p : a) total += p.TotalGpuMilli();
  EXPECT_LE(total, 13'000);
  EXPECT_GT(total, 13'000 - 1000);
  auto b = TuneWorkload(pods, 10'000, o);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].name, b[i].name);
  o.seed = 8;
  auto c = TuneWorkload(pods, 10'000, o);
  bool differs = c.size() != a.size();
  for (size_t i = 0; !differs && i < a.size(); ++i) differs = a[i].name != c[i].name;
  EXPECT_TRUE(differs);
  // Tuning down removes pods until the request is at most the target.
  auto down = TuneWorkload(pods, 1000, {.seed = 7, .tune = 1.0});
  total = 0;
  for (const auto& p : down) total += p.TotalGpuMilli();
  EXPECT_LE(total, 1000);
  // tune 0 and no shuffle: the list as it is.
  auto same = TuneWorkload(pods, 1000, {.seed = 7, .tune = 0, .shuffle = false});
  ASSERT_EQ(same.size(), pods.size());
  EXPECT_EQ(same[5].name, "p5");
}

// Three one-GPU nodes; arrivals: a whole GPU, two halves, a whole GPU. Packing the halves on one card keeps
// the third card whole for the last pod; putting them on two cards (spreading) leaves no card for it.
TEST(SimulateReplay, FragmentationAwareScoringKeepsAWholeGpuFree) {
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back({.name = "n" + std::to_string(i), .cpu_milli = 8000, .memory_mib = 65536, .gpus = 1});
  std::vector<TracePod> pods = Pods({1000, 500, 500, 1000});
  ReplayOptions o{.seed = 1, .tune = 0, .shuffle = false};
  auto fgd = Replay(nodes, pods, DefaultConf(), o);
  ASSERT_TRUE(fgd.ok()) << fgd.status();
  EXPECT_EQ(fgd->pods_placed, 4);
  EXPECT_DOUBLE_EQ(fgd->final_gpu_alloc_ratio, 100);

  sched::SchedulerConf spread;
  spread.actions = {"enqueue", "allocate"};
  sched::Tier tier;
  tier.plugins.push_back(sched::PluginOption::Named("predicates"));
  auto node_order = sched::PluginOption::Named("nodeorder");
  node_order.arguments = {{"leastrequested.weight", "1"}, {"mostrequested.weight", "0"}, {"balancedresource.weight", "0"}};
  tier.plugins.push_back(node_order);
  spread.tiers.push_back(tier);
  auto spread_result = Replay(nodes, pods, spread, o);
  ASSERT_TRUE(spread_result.ok()) << spread_result.status();
  EXPECT_EQ(spread_result->pods_placed, 3);
  EXPECT_EQ(spread_result->pods_failed, 1);
  // The allocation curve is keyed by the arrived share of capacity: 4 pods of 3000 milli on 3000 arrive at
  // 33, 50, 67 and 100 percent.
  EXPECT_EQ(fgd->gpu_alloc_ratio_at.count(100), 1u);
  EXPECT_DOUBLE_EQ(fgd->gpu_alloc_ratio_at.at(100), 100);
  EXPECT_NEAR(spread_result->gpu_alloc_ratio_at.at(100), 66.67, 0.01);
}

TEST(SimulateReplay, GpuModelConstraintsAndCpuOnlyNodes) {
  std::vector<TraceNode> nodes = {{.name = "cpu", .cpu_milli = 64000, .memory_mib = 65536},
                                  {.name = "t4", .cpu_milli = 8000, .memory_mib = 65536, .gpus = 1, .model = "T4"},
                                  {.name = "v100", .cpu_milli = 8000, .memory_mib = 65536, .gpus = 1, .model = "V100M16"}};
  std::vector<TracePod> pods = Pods({300, 300});
  pods[0].gpu_spec = "V100M16|V100M32";
  pods[1].gpu_spec = "A100";  // no such node
  auto r = Replay(nodes, pods, DefaultConf(), {.seed = 1, .tune = 0, .shuffle = false});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pods_placed, 1);
  EXPECT_EQ(r->pods_failed, 1);
  EXPECT_EQ(r->total_gpus, 2);
  EXPECT_FALSE(Replay({{.name = "cpu", .cpu_milli = 1000}}, pods, DefaultConf(), {}).ok());  // no GPUs at all
}

}  // namespace
}  // namespace tephra::simulate
