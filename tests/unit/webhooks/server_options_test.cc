// The role's option helpers: the configurations mode flag and the set of configurations it registers (which
// the Helm chart's copy is checked against in tests/chart/).
#include <gtest/gtest.h>

#include "tephra/webhooks/server.h"

namespace tephra::webhooks {
namespace {

using Mode = WebhookOptions::ConfigurationsMode;

TEST(ConfigurationsMode, AcceptsBooleansAndNames) {
  EXPECT_EQ(*ParseConfigurationsMode("true"), Mode::kAll);
  EXPECT_EQ(*ParseConfigurationsMode("all"), Mode::kAll);
  EXPECT_EQ(*ParseConfigurationsMode("ca-bundle"), Mode::kCaBundle);
  EXPECT_EQ(*ParseConfigurationsMode("false"), Mode::kNone);
  EXPECT_EQ(*ParseConfigurationsMode("none"), Mode::kNone);
  auto bad = ParseConfigurationsMode("cabundle");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ca-bundle"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("\"cabundle\""), std::string::npos) << bad.status().message();
}

TEST(RegisteredConfigurations, PodsMutateIsServedButNeverRegistered) {
  WebhookOptions o;
  o.webhook_namespace = "tephra-system";
  o.webhook_service_name = "tephra-admission-service";
  auto configs = RegisteredConfigurations(o, /*match_conditions=*/false, "");
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  std::set<std::string> names;
  for (const auto& c : *configs) {
    names.insert(c["metadata"]["name"].get<std::string>());
    for (const auto& hook : c["webhooks"]) {
      EXPECT_FALSE(hook["clientConfig"].contains("caBundle"));
      EXPECT_EQ(hook["clientConfig"]["service"]["namespace"], "tephra-system");
    }
  }
  EXPECT_TRUE(names.count("tephra-admission-service-jobs-validate")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("tephra-admission-service-pods-validate"));
  EXPECT_FALSE(names.count("tephra-admission-service-pods-mutate"));
}

TEST(RegisteredConfigurations, UnknownPathIsAnError) {
  WebhookOptions o;
  o.enabled_admission = "/jobs/validate,/nope";
  auto configs = RegisteredConfigurations(o, false, "");
  ASSERT_FALSE(configs.ok());
  EXPECT_NE(configs.status().message().find("/nope"), std::string::npos) << configs.status().message();
}

}  // namespace
}  // namespace tephra::webhooks
