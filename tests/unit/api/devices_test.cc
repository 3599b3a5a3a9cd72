// The device plugins' annotation protocols (tephra/api/devices.h): parse what the plugins write, and encode
// what they read, in their exact formats.
#include "tephra/api/devices.h"

#include <gtest/gtest.h>

namespace tephra::api {
namespace {

TEST(DevicesProtocol, AscendCardLists) {
  EXPECT_EQ(SplitCardList("Ascend910-0, Ascend910-3,,"), (std::vector<std::string>{"Ascend910-0", "Ascend910-3"}));
  EXPECT_TRUE(SplitCardList("").empty());
  EXPECT_EQ(JoinCardList({"Ascend910-0", "Ascend910-1"}), "Ascend910-0,Ascend910-1");
  EXPECT_EQ(AscendCardIndex("Ascend910-15"), 15);
  EXPECT_EQ(AscendCardIndex("Ascend910-x"), std::nullopt);
  EXPECT_EQ(AscendCardIndex("Ascend310-1"), std::nullopt);
  EXPECT_EQ(AscendCardIndex("Ascend910--1"), std::nullopt);
}

TEST(DevicesProtocol, AscendDeviceInfoConfigMap) {
  auto info = ParseAscendDeviceInfo(
      R"({"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0,Ascend910-1,Ascend910-2",)"
      R"("huawei.com/Ascend910-Fault":"[]","huawei.com/Ascend910-NetworkUnhealthy":"Ascend910-2",)"
      R"("huawei.com/Ascend910-Recovering":"","huawei.com/Ascend910-Unhealthy":"Ascend910-1"},"UpdateTime":1763713955},)"
      R"("SuperPodID":5,"CheckCode":"x"})");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->unhealthy, std::vector<std::string>{"Ascend910-1"});
  EXPECT_EQ(info->network_unhealthy, std::vector<std::string>{"Ascend910-2"});
  EXPECT_TRUE(info->recovering.empty());
  EXPECT_FALSE(ParseAscendDeviceInfo("not json").has_value());
  EXPECT_FALSE(ParseAscendDeviceInfo(R"({"DeviceInfo": 3})").has_value());
}

TEST(DevicesProtocol, VgpuRegisterRoundTripsAndSkipsBadEntries) {
  std::vector<VgpuCard> cards = {{"GPU-a", 10, 32768, "NVIDIA-Tesla V100", true, "hami-core"},
                                 {"GPU-b", 4, 16384, "NVIDIA-Tesla T4", false, "hami-core"}};
  const std::string enc = EncodeVgpuRegister(cards);
  EXPECT_EQ(enc, "GPU-a,10,32768,NVIDIA-Tesla V100,true,hami-core:GPU-b,4,16384,NVIDIA-Tesla T4,false,hami-core:");
  EXPECT_EQ(ParseVgpuRegister(enc), cards);
  int errors = 0;
  auto got = ParseVgpuRegister("GPU-a,10,32768,T,true,hami-core:GPU-b,x,1,T,true,hami-core:short,1", &errors);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(errors, 2);
}

TEST(DevicesProtocol, VgpuIdsPerContainer) {
  std::vector<std::vector<VgpuAssignment>> ids = {{}, {{"GPU-a", 6000, 20}, {"GPU-b", 6000, 20}}};
  const std::string enc = EncodeVgpuIds(ids);
  EXPECT_EQ(enc, ";GPU-a,NVIDIA,6000,20:GPU-b,NVIDIA,6000,20:");
  EXPECT_EQ(DecodeVgpuIds(enc), ids);
  EXPECT_TRUE(DecodeVgpuIds("").empty());
}

TEST(DevicesProtocol, MigProfileNames) {
  auto p = ParseMigProfile("1g.10gb");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->slices, 1);
  EXPECT_EQ(p->memory_gb, 10);
  EXPECT_EQ(p->Name(), "1g.10gb");
  EXPECT_EQ(p->ResourceName(), "nvidia.com/mig-1g.10gb");
  auto me = ParseMigProfile("1g.10gb+me");
  ASSERT_TRUE(me);
  EXPECT_EQ(me->extension, "me");
  EXPECT_EQ(me->Name(), "1g.10gb+me");
  EXPECT_EQ(MigProfileOfResource("nvidia.com/mig-7g.80gb"), (MigProfile{.slices = 7, .memory_gb = 80}));
  EXPECT_EQ(MigProfileOfResource("nvidia.com/mig-3g.40gb")->slices, 3);
  EXPECT_FALSE(MigProfileOfResource("nvidia.com/gpu"));
  EXPECT_FALSE(MigProfileOfResource("nvidia.com/mig-"));
  // Single strategy: the profile rides on GPU Feature Discovery's product label.
  EXPECT_EQ(MigProfileOfProduct("A100-SXM4-40GB-MIG-1g.5gb"), (MigProfile{.slices = 1, .memory_gb = 5}));
  EXPECT_FALSE(MigProfileOfProduct("A100-SXM4-40GB"));
  for (const char* bad : {"", "g.10gb", "1g.gb", "1g.10", "0g.5gb", "9g.80gb", "xg.10gb", "1g.10gb+", "1g10gb"})
    EXPECT_FALSE(ParseMigProfile(bad)) << bad;
}

}  // namespace
}  // namespace tephra::api
