#include "tephra/nodesim/config.h"
#include "tephra/nodesim/node_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tephra::nodesim {
namespace {

using ::testing::HasSubstr;

TEST(GroupFromFlags, DefaultsGiveGpuNodes) {
  FlagValues f;
  f.nodes = 3;
  auto g = GroupFromFlags(f);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->count, 3);
  EXPECT_EQ(g->capacity.at("cpu").ToString(), "32");
  EXPECT_EQ(g->capacity.at("memory").ToString(), "256Gi");
  EXPECT_EQ(g->capacity.at("pods").Value(), 110);
  EXPECT_EQ(g->capacity.at("nvidia.com/gpu").Value(), 8);
  EXPECT_EQ(g->capacity.count("huawei.com/Ascend910"), 0u) << "0 NPUs: resource not advertised";
}

TEST(GroupFromFlags, LabelsTaintsAndNpus) {
  FlagValues f;
  f.nodes = 1;
  f.npus = 4;
  f.gpus = 0;
  f.labels = "pool=a, zone=z1";
  f.taints = "dedicated=gpu:NoSchedule,spot:PreferNoSchedule";
  auto g = GroupFromFlags(f);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->labels.at("pool"), "a");
  EXPECT_EQ(g->labels.at("zone"), "z1");
  ASSERT_EQ(g->taints.size(), 2u);
  EXPECT_EQ(g->taints[0], (Taint{"dedicated", "gpu", "NoSchedule"}));
  EXPECT_EQ(g->taints[1], (Taint{"spot", "", "PreferNoSchedule"}));
  EXPECT_EQ(g->capacity.at("huawei.com/Ascend910").Value(), 4);
  EXPECT_EQ(g->capacity.count("nvidia.com/gpu"), 0u);
}

TEST(GroupFromFlags, ErrorsNameFlagAndValue) {
  FlagValues f;
  f.nodes = 1;
  f.taints = "k=v";
  EXPECT_EQ(GroupFromFlags(f).status().message(),
            "--taints: \"k=v\" has no effect (want key=value:NoSchedule|PreferNoSchedule|NoExecute)");
  f.taints = "k=v:Sometimes";
  EXPECT_THAT(GroupFromFlags(f).status().message(), HasSubstr("unknown effect \"Sometimes\""));
  f.taints = "";
  f.cpu = "abc";
  auto s = GroupFromFlags(f).status();
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--cpu: quantity \"abc\""));
  f.cpu = "32";
  f.labels = "novalue";
  EXPECT_EQ(GroupFromFlags(f).status().message(), "--labels: \"novalue\" is not key=value");
  f.labels = "";
  f.leaves_per_spine = 2;
  EXPECT_THAT(GroupFromFlags(f).status().message(), HasSubstr("--leaves-per-spine"));
}

TEST(ParseConfigYaml, GroupsWithEverything) {
  auto cfg = ParseConfigYaml(R"(
nodes:
- namePrefix: gpu-
  count: 4
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
  labels: {pool: a100}
  taints: ["dedicated=gpu:NoSchedule", {key: spot, effect: NoExecute}]
  topology: {nodesPerLeaf: 2, leavesPerSpine: 2}
- namePrefix: cpu-
  count: 2
  capacity: {cpu: 16, memory: 64Gi}
)");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_EQ(cfg->groups.size(), 2u);
  const NodeGroup& g = cfg->groups[0];
  EXPECT_EQ(g.count, 4);
  EXPECT_EQ(g.capacity.at("nvidia.com/gpu").Value(), 8);
  EXPECT_EQ(g.capacity.at("memory").ToString(), "512Gi");
  EXPECT_EQ(g.taints[1], (Taint{"spot", "", "NoExecute"}));
  EXPECT_EQ(g.nodes_per_leaf, 2);
  EXPECT_EQ(cfg->groups[1].capacity.at("cpu").Value(), 16);
}

TEST(ParseConfigYaml, ErrorsNameThePath) {
  auto s = ParseConfigYaml("nodes:\n- count: 1\n- count: 2\n  capacity: {cpu: abc}\n").status();
  EXPECT_THAT(s.message(), HasSubstr("nodes[1].capacity.cpu: quantity \"abc\""));
  s = ParseConfigYaml("nodes:\n- count: x\n").status();
  EXPECT_EQ(s.message(), "nodes[0].count: \"x\" is not an integer");
  s = ParseConfigYaml("nodes:\n- count: 1\n  taints: [\"k=v\"]\n").status();
  EXPECT_THAT(s.message(), HasSubstr("nodes[0].taints[0]: \"k=v\" has no effect"));
  s = ParseConfigYaml("nodes:\n- cuont: 1\n").status();
  EXPECT_THAT(s.message(), HasSubstr("nodes[0].cuont: unknown field"));
  s = ParseConfigYaml("nodes: [", "n.yaml").status();
  EXPECT_THAT(s.message(), HasSubstr("n.yaml: "));
  s = ParseConfigYaml("nodes:\n- count: 1\n  topology: {leavesPerSpine: 2}\n").status();
  EXPECT_THAT(s.message(), HasSubstr("nodes[0].topology.leavesPerSpine: needs nodesPerLeaf"));
}

TEST(ExpandNodes, NamesIndicesAndTopology) {
  SimConfig cfg;
  NodeGroup a;
  a.name_prefix = "a-";
  a.count = 5;
  a.nodes_per_leaf = 2;
  a.leaves_per_spine = 2;
  a.labels["pool"] = "x";
  NodeGroup b;
  b.name_prefix = "b-";
  b.count = 2;
  cfg.groups = {a, b};
  auto nodes = ExpandNodes(cfg);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 7u);
  EXPECT_EQ((*nodes)[4].name, "a-4");
  EXPECT_EQ((*nodes)[4].labels.at(kLeafLabel), "a-leaf-2");
  EXPECT_EQ((*nodes)[4].labels.at(kSpineLabel), "a-spine-1");
  EXPECT_EQ((*nodes)[1].labels.at(kSpineLabel), "a-spine-0");
  EXPECT_EQ((*nodes)[4].labels.at("pool"), "x");
  EXPECT_EQ((*nodes)[4].labels.at("kubernetes.io/hostname"), "a-4");
  EXPECT_EQ((*nodes)[5].name, "b-0");
  EXPECT_EQ((*nodes)[5].index, 5);
  EXPECT_EQ((*nodes)[5].labels.count(kLeafLabel), 0u);
  EXPECT_EQ((*nodes)[5].labels.at(kSimLabel), "true");
}

TEST(ExpandNodes, RejectsNameCollisions) {
  SimConfig cfg;
  NodeGroup a;
  a.name_prefix = "n-";
  a.count = 11;
  NodeGroup b;
  b.name_prefix = "n-1";
  b.count = 1;  // "n-10" again
  cfg.groups = {a, b};
  auto s = ExpandNodes(cfg).status();
  EXPECT_THAT(s.message(), HasSubstr("nodes[1].namePrefix: \"n-1\" yields node \"n-10\", also produced by nodes[0]"));
}

}  // namespace
}  // namespace tephra::nodesim

namespace tephra::nodesim {
namespace {

TEST(GroupFromFlags, VgpuSharesEachGpu) {
  FlagValues f;
  f.nodes = 1;
  f.gpus = 2;
  f.vgpu_split = 10;
  f.vgpu_memory_mib = 16000;
  auto g = GroupFromFlags(f);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->capacity.at("volcano.sh/vgpu-number").Value(), 20);
  EXPECT_EQ(g->capacity.at("volcano.sh/vgpu-memory").Value(), 32000);
  EXPECT_EQ(g->capacity.at("volcano.sh/vgpu-cores").Value(), 200);
  SimConfig cfg{{*g}};
  NodeSpec n = (*ExpandNodes(cfg))[0];
  n.group = &*g;
  auto cards = VgpuCards(n);
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[1].uuid, "GPU-tephra-sim-0-1");
  EXPECT_EQ(NodeAnnotations(n)["volcano.sh/node-vgpu-register"], api::EncodeVgpuRegister(cards));
  f.gpus = 0;
  auto no_gpus = GroupFromFlags(f);
  ASSERT_FALSE(no_gpus.ok());
  EXPECT_NE(no_gpus.status().message().find("--vgpu-split: needs --gpus > 0"), std::string::npos);
  auto yaml = ParseConfigYaml("nodes:\n- count: 1\n  capacity: {nvidia.com/gpu: \"1\"}\n  vgpu: {split: 4, memoryMiB: 8000}\n");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(yaml->groups[0].capacity.at("volcano.sh/vgpu-number").Value(), 4);
  auto bad = ParseConfigYaml("nodes:\n- count: 1\n  vgpu: {split: 4, memoryMiB: 8000}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nodes[0].vgpu: needs nvidia.com/gpu"), std::string::npos) << bad.status();
}

TEST(GroupFromFlags, MigStrategiesAdvertiseSlicesAsTheDevicePluginWould) {
  FlagValues f;
  f.nodes = 1;
  f.gpus = 8;
  f.gpu_product = "A100-SXM4-80GB";
  auto plain = GroupFromFlags(f);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->labels.at("nvidia.com/gpu.product"), "A100-SXM4-80GB");
  EXPECT_EQ(plain->labels.at("nvidia.com/gpu.count"), "8");
  EXPECT_EQ(plain->capacity.at("nvidia.com/gpu").Value(), 8);
  EXPECT_FALSE(plain->labels.count("nvidia.com/mig.strategy"));

  f.mig_strategy = "mixed";
  f.mig_profiles = "3g.40gb=1,2g.20gb=2";
  auto mixed = GroupFromFlags(f);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_FALSE(mixed->capacity.count("nvidia.com/gpu"));  // every GPU is cut
  EXPECT_EQ(mixed->capacity.at("nvidia.com/mig-3g.40gb").Value(), 8);
  EXPECT_EQ(mixed->capacity.at("nvidia.com/mig-2g.20gb").Value(), 16);
  EXPECT_EQ(mixed->labels.at("nvidia.com/mig.strategy"), "mixed");
  EXPECT_EQ(mixed->labels.at("nvidia.com/mig.capable"), "true");

  f.mig_strategy = "single";
  f.mig_profiles = "1g.10gb=7";
  auto single = GroupFromFlags(f);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->capacity.at("nvidia.com/gpu").Value(), 56);
  EXPECT_EQ(single->labels.at("nvidia.com/gpu.product"), "A100-SXM4-80GB-MIG-1g.10gb");

  auto refused = [&](const std::string& strategy, const std::string& profiles) {
    FlagValues g = f;
    g.mig_strategy = strategy;
    g.mig_profiles = profiles;
    auto r = GroupFromFlags(g);
    EXPECT_FALSE(r.ok()) << strategy << " " << profiles;
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_NE(refused("single", "1g.10gb=7,7g.80gb=1").find("--mig-profiles: the single strategy cuts every GPU into one"),
            std::string::npos);
  EXPECT_NE(refused("mixed", "1g.10gb=8").find("uses 8 compute slices per GPU, a GPU has 7"), std::string::npos);
  EXPECT_NE(refused("mixed", "big=1").find("\"big\" is not a MIG profile"), std::string::npos);
  EXPECT_NE(refused("mixed", "").find("--mig-profiles: name at least one"), std::string::npos);
  EXPECT_NE(refused("sometimes", "1g.10gb=1").find("--mig-strategy: \"sometimes\" is not none|single|mixed"),
            std::string::npos);
  EXPECT_NE(refused("", "1g.10gb=1").find("needs strategy single or mixed"), std::string::npos);

  auto yaml = ParseConfigYaml(
      "nodes:\n- count: 1\n  capacity: {nvidia.com/gpu: \"4\"}\n"
      "  gpu: {product: H100-SXM5-80GB, mig: {strategy: mixed, profiles: {1g.10gb: 7}}}\n");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(yaml->groups[0].capacity.at("nvidia.com/mig-1g.10gb").Value(), 28);
  EXPECT_EQ(yaml->groups[0].labels.at("nvidia.com/gpu.product"), "H100-SXM5-80GB");
  auto bad = ParseConfigYaml("nodes:\n- count: 1\n  gpu: {mig: {strategy: single, profiles: {1g.10gb: 7}}}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nodes[0].gpu.mig.strategy: needs nvidia.com/gpu"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace tephra::nodesim
