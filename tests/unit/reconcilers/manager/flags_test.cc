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

TEST(ControllersFlag, VolcanoOnlyNamesAreAcceptedAndUnknownOnesWarn) {
  std::vector<std::string> warnings;
  // The Volcano chart's value when hypernode discovery runs elsewhere.
  auto c = ResolveControllers({"*,-sharding-controller,-hyperNode-controller,-gc-controller"}, &warnings);
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
  o.controllers = {"-job-controller,-pg-controller,-queue-controller,-jobflow-controller,-jobtemplate-controller,-cronjob-controller"};
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
