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

}  // namespace
}  // namespace tephra::api
