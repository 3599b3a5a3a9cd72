// The simulated Ascend device plugin's admission: each reason a real plugin could not mount the cards the
// scheduler named, and each product's ring rule, checked on card indices.
#include "tephra/nodesim/device_plugin.h"

#include <gtest/gtest.h>

namespace tephra::nodesim {
namespace {

PodCards Pod(int64_t requested, std::vector<std::string> cards) {
  return {.requested = requested, .assigned = std::move(cards), .annotated = true};
}
std::vector<std::string> Cards(std::initializer_list<int> idx) {
  std::vector<std::string> out;
  for (int i : idx) out.push_back("Ascend910-" + std::to_string(i));
  return out;
}

TEST(DevicePlugin, ReadsTheNodeAndThePod) {
  json node = {{"metadata", {{"labels", {{"accelerator-type", "module-910b-16"}}},
                             {"annotations", {{"huawei.com/Ascend910-Unhealthy", "Ascend910-2,Ascend910-3"}}}}}};
  NodeCards n = ReadNodeCards(node, 16);
  EXPECT_EQ(n.accelerator_type, "module-910b-16");
  EXPECT_EQ(n.unhealthy, (std::set<std::string>{"Ascend910-2", "Ascend910-3"}));
  json pod = {{"metadata", {{"annotations", {{"huawei.com/Ascend910", "Ascend910-0,Ascend910-1"}}}}},
              {"spec", {{"containers", {{{"resources", {{"limits", {{"huawei.com/Ascend910", "1"}}}}}},
                                        {{"resources", {{"requests", {{"huawei.com/Ascend910", "1"}}}}}}}}}}};
  PodCards p = ReadPodCards(pod);
  EXPECT_EQ(p.requested, 2);
  EXPECT_TRUE(p.annotated);
  EXPECT_EQ(p.assigned, Cards({0, 1}));
  EXPECT_FALSE(ReadPodCards(json::object()).annotated);
}

TEST(DevicePlugin, RefusesWhatAPluginCouldNotMount) {
  NodeCards n{.accelerator_type = "module-910b-8", .npus = 8, .unhealthy = {"Ascend910-5"}};
  EXPECT_EQ(AdmitCards(n, {.requested = 0}, {}), "");
  EXPECT_NE(AdmitCards(n, {.requested = 1}, {}).find("no huawei.com/Ascend910 annotation"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Pod(2, Cards({0})), {}).find("names 1 cards, the pod requests 2"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Pod(1, Cards({8})), {}).find("Ascend910-8 is not on this node"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Pod(1, {"GPU-0"}), {}).find("GPU-0 is not on this node"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Pod(2, Cards({1, 1})), {}).find("named twice"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Pod(1, Cards({5})), {}).find("Ascend910-5 is unhealthy"), std::string::npos);
  PodCards holder = Pod(1, Cards({4}));
  EXPECT_NE(AdmitCards(n, Pod(1, Cards({4})), {&holder}).find("in use by another pod"), std::string::npos);
  EXPECT_EQ(AdmitCards(n, Pod(3, Cards({0, 5 - 4, 7})), {&holder}), "");  // full mesh: any cards
  EXPECT_EQ(AdmitCards(n, Pod(1, Cards({0})), {}).rfind("Allocate failed", 0), std::string::npos);
}

TEST(DevicePlugin, RingRulesPerProduct) {
  NodeCards a{.accelerator_type = "module", .npus = 8};
  EXPECT_EQ(AdmitCards(a, Pod(4, Cards({4, 5, 6, 7})), {}), "");
  EXPECT_EQ(AdmitCards(a, Pod(8, Cards({0, 1, 2, 3, 4, 5, 6, 7})), {}), "");
  EXPECT_NE(AdmitCards(a, Pod(2, Cards({3, 4})), {}).find("break the ring rule"), std::string::npos);
  EXPECT_NE(AdmitCards(a, Pod(3, Cards({0, 1, 2})), {}).find("1, 2 or 4 cards"), std::string::npos);
  NodeCards b{.accelerator_type = "module-910b-16", .npus = 16};
  EXPECT_EQ(AdmitCards(b, Pod(8, Cards({8, 9, 10, 11, 12, 13, 14, 15})), {}), "");
  EXPECT_NE(AdmitCards(b, Pod(8, Cards({4, 5, 6, 7, 8, 9, 10, 11})), {}).find("inside one HCCS ring of 8"), std::string::npos);
  EXPECT_EQ(AdmitCards(b, Pod(10, Cards({0, 8, 1, 9, 2, 10, 3, 11, 4, 12})), {}), "");
  EXPECT_NE(AdmitCards(b, Pod(10, Cards({0, 1, 2, 3, 4, 5, 6, 7, 8, 9})), {}).find("pairs (i, i+8)"), std::string::npos);
  EXPECT_NE(AdmitCards(b, Pod(9, Cards({0, 8, 1, 9, 2, 10, 3, 11, 4})), {}).find("even number"), std::string::npos);
  NodeCards c{.accelerator_type = "module-a3-16", .npus = 16};
  EXPECT_EQ(AdmitCards(c, Pod(1, Cards({7})), {}), "");
  EXPECT_EQ(AdmitCards(c, Pod(4, Cards({2, 3, 6, 7})), {}), "");
  EXPECT_NE(AdmitCards(c, Pod(2, Cards({1, 2})), {}).find("HiAM pairs"), std::string::npos);
}

}  // namespace
}  // namespace tephra::nodesim

namespace tephra::nodesim {
namespace {

PodCards Vgpu(int64_t memory, int64_t cores, std::vector<std::string> uuids) {
  PodCards p;
  p.vgpu_number = static_cast<int64_t>(uuids.size());
  p.vgpu_memory = memory;
  p.vgpu_cores = cores;
  p.vgpu_annotated = true;
  for (auto& u : uuids) p.vgpu.push_back({u, memory, static_cast<int32_t>(cores)});
  p.vgpu_asks = {{p.vgpu_number, memory, 0}};
  p.vgpu_containers = {p.vgpu};
  return p;
}

TEST(DevicePlugin, SharedGpusUpToMemoryComputeAndSharers) {
  NodeCards n;
  n.vgpus = {{"GPU-a", 2, 16000, "T", true, "hami-core"}, {"GPU-b", 10, 16000, "T", false, "hami-core"}};
  PodCards first = Vgpu(6000, 30, {"GPU-a"});
  EXPECT_EQ(AdmitCards(n, first, {}), "");
  PodCards second = Vgpu(6000, 30, {"GPU-a"});
  EXPECT_EQ(AdmitCards(n, second, {&first}), "");
  EXPECT_NE(AdmitCards(n, Vgpu(6000, 30, {"GPU-a"}), {&first, &second}).find("would hold 18000 MiB, it has 16000"),
            std::string::npos);
  EXPECT_NE(AdmitCards(n, Vgpu(1000, 10, {"GPU-a"}), {&first, &second}).find("shared by 3 pods, at most 2"),
            std::string::npos);
  EXPECT_NE(AdmitCards(n, Vgpu(1000, 80, {"GPU-a"}), {&first}).find("would give 110%"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Vgpu(1000, 10, {"GPU-b"}), {}).find("GPU-b is unhealthy"), std::string::npos);
  EXPECT_NE(AdmitCards(n, Vgpu(1000, 10, {"GPU-z"}), {}).find("not registered"), std::string::npos);
  PodCards unnamed = Vgpu(1000, 10, {"GPU-a"});
  unnamed.vgpu_annotated = false;
  EXPECT_NE(AdmitCards(n, unnamed, {}).find("no volcano.sh/vgpu-ids-new"), std::string::npos);
  json pod = {{"metadata", {{"annotations", {{"volcano.sh/vgpu-ids-new", "GPU-a,NVIDIA,6000,30:"}}}}},
              {"spec", {{"containers", {{{"resources", {{"limits", {{"volcano.sh/vgpu-number", "1"},
                                                                     {"volcano.sh/vgpu-memory", "6000"}}}}}}}}}}};
  PodCards read = ReadPodCards(pod);
  EXPECT_EQ(read.vgpu_number, 1);
  EXPECT_EQ(read.vgpu_memory, 6000);
  ASSERT_EQ(read.vgpu.size(), 1u);
  EXPECT_EQ(read.vgpu[0].uuid, "GPU-a");
}

TEST(DevicePlugin, EachContainerTakesItsEntryWithTheMemoryItAsks) {
  NodeCards n;
  n.vgpus = {{"GPU-a", 4, 16000, "T", true, "hami-core"}, {"GPU-b", 4, 16000, "T", true, "hami-core"},
             {"GPU-c", 4, 40000, "T", true, "hami-core"}};
  auto pod = [](const std::string& ids) {
    json containers = json::array(
        {{{"name", "sidecar"}},
         {{"name", "a"}, {"resources", {{"limits", {{"volcano.sh/vgpu-memory", "2000"}}}}}},  // memory alone: 1 card
         {{"name", "b"}, {"resources", {{"limits", {{"volcano.sh/vgpu-number", "2"}, {"volcano.sh/vgpu-memory-percentage", "50"}}}}}}});
    return ReadPodCards({{"metadata", {{"annotations", {{"volcano.sh/vgpu-ids-new", ids}}}}}, {"spec", {{"containers", containers}}}});
  };
  PodCards ok = pod("GPU-a,NVIDIA,2000,0:;GPU-b,NVIDIA,8000,0:GPU-c,NVIDIA,20000,0:");
  EXPECT_EQ(ok.vgpu_number, 3);
  ASSERT_EQ(ok.vgpu_asks.size(), 2u);
  EXPECT_EQ(ok.vgpu_asks[1].percent, 50);
  EXPECT_EQ(AdmitCards(n, ok, {}), "");
  // All three cards written for the first container: the second gets none.
  EXPECT_NE(AdmitCards(n, pod("GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,8000,0:GPU-c,NVIDIA,20000,0:"), {}).find(
                "cards for 1 containers, 2 containers ask"),
            std::string::npos);
  // Half of GPU-c is 20000 MiB; 8000 is too little.
  EXPECT_NE(AdmitCards(n, pod("GPU-a,NVIDIA,2000,0:;GPU-b,NVIDIA,8000,0:GPU-c,NVIDIA,8000,0:"), {}).find(
                "GPU-c is given 8000 MiB, container 1 asks for 20000"),
            std::string::npos);
}

TEST(DevicePlugin, PlainGpusAreAdmittedUpToTheHealthyFreeCount) {
  NodeCards n{.gpus = 8, .unhealthy_gpus = 1};
  PodCards four{.gpus = 4}, three{.gpus = 3};
  EXPECT_EQ(AdmitCards(n, four, {}), "");
  EXPECT_EQ(AdmitCards(n, three, {&four}), "");  // 4 + 3 = 7 healthy
  EXPECT_EQ(AdmitCards(n, four, {&four}),
            "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 4, "
            "Available: 3, which is unexpected");
  json pod = {{"spec", {{"containers", {{{"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}}};
  EXPECT_EQ(ReadPodCards(pod).gpus, 2);
  EXPECT_TRUE(ReadPodCards(pod).Asks());
}

TEST(DevicePlugin, ARunningPodFailsWhenACardItHoldsGoesBad) {
  // Plain GPUs: the last cards go bad; pods hold cards in start order.
  NodeCards n{.gpus = 8, .unhealthy_gpus = 1};
  EXPECT_EQ(DeviceFailure(n, {.gpus = 4}, 0), "");  // cards 0-3
  EXPECT_EQ(DeviceFailure(n, {.gpus = 4}, 4), "CUDA error: GPU 7 has fallen off the bus (Xid 79, simulated)");
  EXPECT_EQ(DeviceFailure(n, {.gpus = 3}, 4), "");  // cards 4-6, the bad one is idle
  EXPECT_EQ(DeviceFailure({.gpus = 8}, {.gpus = 8}, 0), "");
  // Ascend: a card the node lists unhealthy.
  NodeCards a{.npus = 8, .unhealthy = {"Ascend910-5"}};
  EXPECT_EQ(DeviceFailure(a, Pod(2, Cards({4, 5})), 0), "device error: Ascend910-5 is unhealthy (simulated)");
  EXPECT_EQ(DeviceFailure(a, Pod(2, Cards({0, 1})), 0), "");
}

}  // namespace
}  // namespace tephra::nodesim
