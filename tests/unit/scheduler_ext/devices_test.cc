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
