// The scheduler's side of the device protocols: nodes' cards from their device plugins' reports, pods'
// device requests and held cards, and the annotations the binder sends on the Binding.
#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/codec.h"
#include "tephra/scheduler/binder.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {
namespace {

using api::json;

template <typename T>
T Decode(const json& j) {
  auto r = api::FromJson<T>(j);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

api::Node AscendNode(const std::string& type, int cards, json annotations = json::object()) {
  return Decode<api::Node>({{"metadata", {{"name", "n1"}, {"labels", {{"accelerator-type", type}}}, {"annotations", annotations}}},
                            {"status", {{"capacity", {{"huawei.com/Ascend910", std::to_string(cards)}}},
                                        {"allocatable", {{"huawei.com/Ascend910", std::to_string(cards - 1)}}}}}});
}

TEST(DeviceConvert, AscendNodeCardsRingRuleAndHealth) {
  auto d = ToNodeDevices(AscendNode("module-910b-16", 16, {{"huawei.com/Ascend910-Unhealthy", "Ascend910-3"},
                                                           {"huawei.com/Ascend910-Recovering", "Ascend910-9"}}));
  EXPECT_EQ(d.kind, sched::DeviceKind::kAscend);
  EXPECT_EQ(d.topology, sched::CardTopology::kAscendBox16);
  EXPECT_EQ(d.model, "module-910b-16");
  ASSERT_EQ(d.cards.size(), 16u);  // capacity, not allocatable: an unhealthy card is still a card
  EXPECT_EQ(d.cards[15].id, "Ascend910-15");
  EXPECT_EQ(d.cards[3].health, sched::CardHealth::kUnhealthy);
  EXPECT_EQ(d.cards[9].health, sched::CardHealth::kRecovering);
  EXPECT_EQ(d.HealthyCount(), 14);
  // The device plugin's ConfigMap, when there is one, wins over the node's annotations.
  api::AscendDeviceInfo info;
  info.network_unhealthy = {"Ascend910-0"};
  auto from_cm = ToNodeDevices(AscendNode("module", 8, {{"huawei.com/Ascend910-Unhealthy", "Ascend910-3"}}), &info);
  EXPECT_EQ(from_cm.topology, sched::CardTopology::kAscendRing4);
  EXPECT_EQ(from_cm.cards[0].health, sched::CardHealth::kUnhealthy);
  EXPECT_EQ(from_cm.cards[3].health, sched::CardHealth::kHealthy);
  // No Ascend capacity and no vGPU registration: not modelled.
  EXPECT_TRUE(ToNodeDevices(Decode<api::Node>({{"metadata", {{"name", "plain"}}}})).cards.empty());
}

TEST(DeviceConvert, VgpuNodeFromTheRegistrationAndUnhealthyIds) {
  auto node = Decode<api::Node>(
      {{"metadata",
        {{"name", "g1"},
         {"annotations",
          {{"volcano.sh/node-vgpu-register", "GPU-a,10,32768,NVIDIA-V100,true,hami-core:GPU-b,10,32768,NVIDIA-V100,true,hami-core:"
                                             "GPU-c,10,32768,NVIDIA-V100,false,hami-core:"},
           {"volcano.sh/gpu-unhealthy-ids", "1"}}}}}});
  auto d = ToNodeDevices(node);
  EXPECT_EQ(d.kind, sched::DeviceKind::kNvidiaGpu);
  ASSERT_EQ(d.cards.size(), 3u);
  EXPECT_EQ(d.cards[0].id, "GPU-a");
  EXPECT_EQ(d.cards[0].memory, 32768);
  EXPECT_EQ(d.cards[0].max_sharers, 10);
  EXPECT_TRUE(d.cards[0].Healthy());
  EXPECT_FALSE(d.cards[1].Healthy());  // listed by index
  EXPECT_FALSE(d.cards[2].Healthy());  // registered unhealthy
}

TEST(DeviceConvert, PodRequestsAndHeldCards) {
  auto ascend = Decode<api::Pod>({{"metadata", {{"name", "p"}, {"annotations", {{"huawei.com/Ascend910", "Ascend910-4,Ascend910-5"}}}}},
                                  {"spec", {{"nodeName", "n1"},
                                            {"containers", {{{"name", "c"}, {"resources", {{"limits", {{"huawei.com/Ascend910", "2"}}}}}}}}}}});
  sched::ResourceRegistry reg;
  auto r = ToDeviceRequest(ascend);
  EXPECT_EQ(r.kind, sched::DeviceKind::kAscend);
  EXPECT_EQ(r.whole, 2);
  EXPECT_EQ(CardsOfPod(ascend), (std::vector<std::string>{"Ascend910-4", "Ascend910-5"}));
  auto task = ToTaskInfo(ascend, &reg, {"volcano"});
  EXPECT_EQ(task.cards, (std::vector<std::string>{"Ascend910-4", "Ascend910-5"}));
  // What the device plugin actually mounted wins.
  ascend.metadata.annotations["huawei.com/AscendReal"] = "Ascend910-6,Ascend910-7";
  EXPECT_EQ(CardsOfPod(ascend), (std::vector<std::string>{"Ascend910-6", "Ascend910-7"}));

  auto vgpu = Decode<api::Pod>(
      {{"metadata", {{"name", "v"}, {"annotations", {{"volcano.sh/vgpu-ids-new", "GPU-a,NVIDIA,6000,30:"}}}}},
       {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"volcano.sh/vgpu-number", "1"},
                                                                            {"volcano.sh/vgpu-memory", "6000"},
                                                                            {"volcano.sh/vgpu-cores", "30"}}}}}}}}}}});
  r = ToDeviceRequest(vgpu);
  EXPECT_EQ(r.kind, sched::DeviceKind::kNvidiaGpu);
  EXPECT_EQ(r.shared, 1);
  EXPECT_EQ(r.memory, 6000);
  EXPECT_EQ(r.cores, 300);
  EXPECT_EQ(CardsOfPod(vgpu), std::vector<std::string>{"GPU-a"});
  EXPECT_TRUE(ToTaskInfo(vgpu, &reg, {"volcano"}).cards.empty());  // pending: holds nothing yet
}

TEST(DeviceConvert, BindAnnotationsSpeakEachDevicePluginsProtocol) {
  sched::BindDecision d;
  d.node = "n1";
  d.devices = {.kind = sched::DeviceKind::kAscend, .whole = 2};
  d.cards = {"Ascend910-0", "Ascend910-1"};
  const auto now = sched::WallTime(std::chrono::seconds(1700000000));
  auto a = DeviceBindAnnotations(d, now);
  EXPECT_EQ(a.at("huawei.com/Ascend910"), "Ascend910-0,Ascend910-1");
  EXPECT_EQ(a.at("predicate-time"), "1700000000000000000");
  EXPECT_EQ(a.size(), 2u);
  d.devices = {.kind = sched::DeviceKind::kNvidiaGpu, .shared = 1, .memory = 6000, .cores = 300};
  d.cards = {"GPU-a"};
  a = DeviceBindAnnotations(d, now);
  EXPECT_EQ(a.at("volcano.sh/vgpu-ids-new"), "GPU-a,NVIDIA,6000,30:");
  EXPECT_EQ(a.at("volcano.sh/devices-to-allocate"), "GPU-a,NVIDIA,6000,30:");
  EXPECT_EQ(a.at("volcano.sh/vgpu-node"), "n1");
  EXPECT_EQ(a.at("volcano.sh/vgpu-time"), "1700000000");
  EXPECT_EQ(a.at("volcano.sh/bind-phase"), "allocating");
  d.cards.clear();
  EXPECT_TRUE(DeviceBindAnnotations(d, now).empty());
}

api::Pod VgpuPod(json containers, json annotations = json::object()) {
  return Decode<api::Pod>({{"metadata", {{"name", "v"}, {"annotations", annotations}}}, {"spec", {{"containers", containers}}}});
}

json VgpuContainer(const std::string& name, json limits) {
  return {{"name", name}, {"resources", {{"limits", limits}}}};
}

TEST(DeviceConvert, VgpuRequestsFollowTheDevicePluginsDefaults) {
  // Neither memory nor a percentage: all of each card's memory.
  auto r = ToDeviceRequest(VgpuPod(json::array({VgpuContainer("c", {{"volcano.sh/vgpu-number", "2"}})})));
  EXPECT_EQ(r.shared, 2);
  EXPECT_EQ(r.memory, 0);
  EXPECT_EQ(r.memory_percent, 100);
  // A percentage of each card's memory.
  r = ToDeviceRequest(VgpuPod(json::array({VgpuContainer("c", {{"volcano.sh/vgpu-number", "1"}, {"volcano.sh/vgpu-memory-percentage", "25"}})})));
  EXPECT_EQ(r.memory_percent, 25);
  EXPECT_EQ(r.memory, 0);
  const sched::Card card{.id = "GPU-a", .memory = 40000, .max_sharers = 4};
  EXPECT_EQ(r.MemoryOn(card), 10000);
  // No node holds a percentage: it is the card model's, never a counted resource the node must have.
  sched::ResourceRegistry reg;
  auto task = ToTaskInfo(VgpuPod(json::array({VgpuContainer("c", {{"volcano.sh/vgpu-number", "1"}, {"volcano.sh/vgpu-memory-percentage", "25"}})})),
                         &reg, {"volcano"});
  EXPECT_FALSE(reg.Find("volcano.sh/vgpu-memory-percentage").has_value());
  EXPECT_EQ(task.devices.memory_percent, 25);
  // Memory alone asks for one card.
  r = ToDeviceRequest(VgpuPod(json::array({VgpuContainer("c", {{"volcano.sh/vgpu-memory", "3000"}})})));
  EXPECT_EQ(r.shared, 1);
  EXPECT_EQ(r.memory, 3000);
  EXPECT_EQ(r.memory_percent, 0);
  EXPECT_EQ(r.detail, nullptr);  // one container, no filters: nothing beyond the counts
}

TEST(DeviceConvert, VgpuCardsAreSplitAmongTheContainersThatAsk) {
  auto pod = VgpuPod(json::array({VgpuContainer("sidecar", json::object()),
                      VgpuContainer("a", {{"volcano.sh/vgpu-number", "1"}, {"volcano.sh/vgpu-memory", "2000"}}),
                      VgpuContainer("b", {{"volcano.sh/vgpu-number", "2"}, {"volcano.sh/vgpu-memory", "5000"},
                                          {"volcano.sh/vgpu-cores", "20"}})}));
  auto r = ToDeviceRequest(pod);
  EXPECT_EQ(r.shared, 3);
  EXPECT_EQ(r.memory, 5000);  // the largest per card, so every container's limit holds
  EXPECT_EQ(r.cores, 200);
  ASSERT_NE(r.detail, nullptr);
  EXPECT_EQ(r.detail->per_container, (std::vector<int32_t>{1, 2}));
  sched::BindDecision d;
  d.node = "g1";
  d.devices = r;
  d.cards = {"GPU-a", "GPU-b", "GPU-c"};
  auto a = DeviceBindAnnotations(d, sched::WallTime(std::chrono::seconds(1)));
  EXPECT_EQ(a.at("volcano.sh/vgpu-ids-new"), "GPU-a,NVIDIA,5000,20:;GPU-b,NVIDIA,5000,20:GPU-c,NVIDIA,5000,20:");
  // A percentage becomes MiB per card on the Binding (the statement fills card_memory).
  d.devices = {.kind = sched::DeviceKind::kNvidiaGpu, .shared = 1, .memory_percent = 50};
  d.cards = {"GPU-a"};
  d.card_memory = {16384};
  EXPECT_EQ(DeviceBindAnnotations(d, sched::WallTime(std::chrono::seconds(1))).at("volcano.sh/vgpu-ids-new"),
            "GPU-a,NVIDIA,16384,0:");
}

TEST(DeviceConvert, GpuProductAndIdFiltersFromTheAnnotations) {
  auto pod = VgpuPod(json::array({VgpuContainer("c", {{"volcano.sh/vgpu-number", "1"}})}),
                     {{"nvidia.com/use-gputype", "A100, H100"}, {"volcano.sh/vgpu-nouse-gpuuuid", "GPU-bad"}});
  auto r = ToDeviceRequest(pod);
  ASSERT_NE(r.detail, nullptr);
  EXPECT_EQ(r.detail->use_types, (std::vector<std::string>{"A100", "H100"}));
  EXPECT_EQ(r.detail->nouse_ids, std::vector<std::string>{"GPU-bad"});
  EXPECT_TRUE(r.detail->Allows("NVIDIA-a100-SXM4-80GB", "GPU-ok"));  // substring, any case
  EXPECT_FALSE(r.detail->Allows("NVIDIA-A100-SXM4-80GB", "GPU-bad"));
  EXPECT_FALSE(r.detail->Allows("NVIDIA-Tesla V100", "GPU-ok"));
  // Counted GPUs (nvidia.com/gpu, MIG slices) carry the product filter too; without one they stay plain.
  auto whole = Decode<api::Pod>({{"metadata", {{"name", "w"}, {"annotations", {{"nvidia.com/nouse-gputype", "MIG"}}}}},
                                 {"spec", {{"containers", json::array({VgpuContainer("c", {{"nvidia.com/gpu", "1"}})})}}}});
  r = ToDeviceRequest(whole);
  EXPECT_EQ(r.kind, sched::DeviceKind::kNvidiaGpu);
  EXPECT_TRUE(r.empty());  // counted, no cards chosen
  ASSERT_NE(r.detail, nullptr);
  EXPECT_FALSE(r.detail->AllowsModel("A100-SXM4-40GB-MIG-1g.5gb"));
  EXPECT_TRUE(r.detail->AllowsModel("A100-SXM4-40GB"));
  whole.metadata.annotations.clear();
  EXPECT_EQ(ToDeviceRequest(whole).kind, sched::DeviceKind::kNone);
  // A node's GPU model comes from GPU Feature Discovery's label when its cards are counted.
  auto node = Decode<api::Node>({{"metadata", {{"name", "m"}, {"labels", {{"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"}}}}}});
  auto d = ToNodeDevices(node);
  EXPECT_EQ(d.kind, sched::DeviceKind::kNvidiaGpu);
  EXPECT_EQ(d.model, "A100-SXM4-40GB-MIG-1g.5gb");
  EXPECT_TRUE(d.cards.empty());
}

TEST(DeviceConvert, BinderSendsTheCardsOnTheBinding) {
  auto fc = std::make_shared<kube::testing::FakeClient>();
  json stored = fc->Seed(api::Pod::Resource(), {{"apiVersion", "v1"}, {"kind", "Pod"},
                                                {"metadata", {{"name", "p0"}, {"namespace", "ns"}}},
                                                {"spec", {{"containers", json::array()}}}});
  std::atomic<int> done{0};
  Binder b(fc, 1, [&](const BindOutcome& o) {
    EXPECT_EQ(o.result, BindResult::kBound) << o.status;
    ++done;
  });
  sched::BindDecision d;
  d.task_uid = stored["metadata"]["uid"];
  d.ns = "ns";
  d.name = "p0";
  d.node = "n1";
  d.devices = {.kind = sched::DeviceKind::kAscend, .whole = 1};
  d.cards = {"Ascend910-7"};
  b.Submit({d});
  ASSERT_TRUE(b.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(done.load(), 1);
  auto pod = fc->Get(api::Pod::Resource(), "ns", "p0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["nodeName"], "n1");
  EXPECT_EQ((*pod)["metadata"]["annotations"]["huawei.com/Ascend910"], "Ascend910-7");
  EXPECT_TRUE((*pod)["metadata"]["annotations"].contains("predicate-time"));
}

}  // namespace
}  // namespace tephra::scheduler
