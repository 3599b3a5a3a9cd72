// `tephra controller` flags as Volcano's controller-manager reads them (docs/volcano-conformance.md).
#include <gtest/gtest.h>

#include "manager/manager.h"

namespace tephra::reconcilers::manager {
namespace {

std::set<std::string> All() { return {KnownControllers().begin(), KnownControllers().end()}; }

TEST(ControllersFlag, VolcanosDefaultEnablesEveryTephraController) {
  ManagerOptions o;
  auto c = ResolveControllers(o.controllers);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, All());
  EXPECT_EQ(*ResolveControllers({}), All()) << "an empty list enables everything, as in Volcano";
}

TEST(ControllersFlag, FirstEntryNamingAControllerDecidesAndPlusEnables) {
  // "-name" before "*": disabled; "+name" without "*": only that one.
  EXPECT_EQ(ResolveControllers({"-job-controller,*"})->count("job-controller"), 0u);
  EXPECT_EQ(*ResolveControllers({"+queue-controller"}), (std::set<std::string>{"queue-controller"}));
  EXPECT_EQ(*ResolveControllers({"queue-controller", "pg-controller"}),
            (std::set<std::string>{"queue-controller", "pg-controller"}));
  auto c = *ResolveControllers({"*", "-jobflow-controller", "-jobtemplate-controller"});
  EXPECT_EQ(c.count("jobflow-controller") + c.count("jobtemplate-controller"), 0u);
  EXPECT_EQ(c.count("job-controller"), 1u);
}

TEST(ControllersFlag, HyperNodeControllerIsRealAndStarEnablesIt) {
  // Volcano's isControllerEnabled: "*" enables hyperNode-controller (its chart's default "*,-sharding-controller").
  EXPECT_EQ(ResolveControllers({"*,-sharding-controller"})->count("hyperNode-controller"), 1u);
  EXPECT_EQ(*ResolveControllers({"hyperNode-controller"}), (std::set<std::string>{"hyperNode-controller"}));
  // The Volcano chart's value when the standalone HyperNode controller runs discovery instead.
  auto c = ResolveControllers({"*,-sharding-controller,-hyperNode-controller"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->count("hyperNode-controller"), 0u);
  EXPECT_EQ(c->count("job-controller"), 1u);
  // The name is Volcano's spelling only: a lower-case n is a typo, warned about and enabling nothing.
  std::vector<std::string> warnings;
  c = ResolveControllers({"hypernode-controller"}, &warnings);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->empty());
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(ControllersFlag, NetworkTopologyConfigMapComesFromVolcanosEnvironment) {
  ManagerOptions o;
  NetworkTopologyConfigFromEnv(&o, [](const char*) -> const char* { return nullptr; });
  EXPECT_EQ(o.network_topology_config_namespace, "volcano-system");
  EXPECT_EQ(o.network_topology_config_name, "volcano-controller-configmap");
  NetworkTopologyConfigFromEnv(&o, [](const char* k) -> const char* {
    return std::string(k) == "KUBE_POD_NAMESPACE" ? "tephra-system" : "tephra";
  });
  EXPECT_EQ(o.network_topology_config_namespace, "tephra-system");
  EXPECT_EQ(o.network_topology_config_name, "tephra-controller-configmap");
}

TEST(ControllersFlag, VolcanoOnlyNamesAreAcceptedAndUnknownOnesWarn) {
  std::vector<std::string> warnings;
  auto c = ResolveControllers({"*,-sharding-controller,-gc-controller,-colocation-config-controller"}, &warnings);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, All());
  EXPECT_TRUE(warnings.empty());
  c = ResolveControllers({"*,-job-controler"}, &warnings);  // a typo: Volcano ignores it silently
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->count("job-controller"), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unknown controller \"job-controler\" ignored"), std::string::npos) << warnings[0];
}

TEST(ControllersFlag, EnablingAndDisablingTheSameControllerIsAnError) {
  auto c = ResolveControllers({"job-controller,-job-controller"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("job-controller is given twice"), std::string::npos) << c.status();
}

TEST(ControllersFlag, NothingEnabledIsValidAsInVolcano) {
  ManagerOptions o;
  o.controllers = {"-job-controller,-pg-controller,-queue-controller,-jobflow-controller,-jobtemplate-controller,-cronjob-controller,"
                   "-hyperNode-controller"};
  EXPECT_TRUE(ValidateOptions(o).ok());
  EXPECT_TRUE(ResolveControllers(o.controllers)->empty());
}

TEST(MaxRequeueNumFlag, MinusOneMeansForeverAndBelowIsAnError) {
  ManagerOptions o;
  o.max_requeue_num = -1;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.max_requeue_num = 0;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.max_requeue_num = -2;
  EXPECT_FALSE(ValidateOptions(o).ok());
}

}  // namespace
}  // namespace tephra::reconcilers::manager
