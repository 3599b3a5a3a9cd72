#include <gtest/gtest.h>

#include "tephra/sched/config.h"
#include "tephra/sched/scheduler.h"
#include "tephra/sched/framework.h"

namespace tephra::sched {
namespace {

TEST(SchedulerConf, DefaultValidates) {
  std::vector<std::string> warnings;
  EXPECT_TRUE(SchedulerConf::Default().Validate(PluginRegistry::Builtin(), &warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST(SchedulerConf, ParsesActionString) {
  EXPECT_EQ(SchedulerConf::ParseActions(" enqueue, allocate ,backfill"),
            (std::vector<std::string>{"enqueue", "allocate", "backfill"}));
  // Volcano keeps the empty name after a trailing comma (and then fails to find that action).
  EXPECT_EQ(SchedulerConf::ParseActions("enqueue, allocate,"), (std::vector<std::string>{"enqueue", "allocate", ""}));
}

TEST(SchedulerConf, UnknownActionsAndTrailingCommasAreRejectedLikeVolcano) {
  SchedulerConf c = SchedulerConf::Default();
  c.actions.push_back("allocat");
  EXPECT_EQ(c.Validate(PluginRegistry::Builtin()).code(), core::StatusCode::kInvalidArgument);
  c.actions = SchedulerConf::ParseActions("enqueue, allocate,");
  core::Status s = c.Validate(PluginRegistry::Builtin());
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("empty action name"), std::string::npos) << s.message();
}

TEST(SchedulerConf, UnknownAndDuplicatePluginsAreSkippedWithAWarningLikeVolcano) {
  SchedulerConf c = SchedulerConf::Default();
  c.tiers[0].plugins.push_back(PluginOption::Named("gangg"));
  c.tiers[1].plugins.push_back(PluginOption::Named("gang"));
  std::vector<std::string> warnings;
  ASSERT_TRUE(c.Validate(PluginRegistry::Builtin(), &warnings).ok());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "unknown plugin \"gangg\"; skipped (as Volcano skips it)");
  EXPECT_EQ(warnings[1], "plugin \"gang\" is listed more than once; each entry answers in its own tier");
  EXPECT_TRUE(Scheduler::Create(c).ok()) << "the scheduler runs with them";
}

TEST(SchedulerConf, ProportionWithDrfHierarchyRejected) {
  SchedulerConf c = SchedulerConf::Default();
  for (auto& p : c.tiers[1].plugins)
    if (p.name == "drf") p.enable_hierarchy = true;
  core::Status s = c.Validate(PluginRegistry::Builtin());
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("enableHierarchy"), std::string::npos);
}

TEST(SchedulerConf, KnownButUnimplementedWarns) {
  SchedulerConf c = SchedulerConf::Default();
  c.actions.push_back("shuffle");
  c.tiers[1].plugins.push_back(PluginOption::Named("tdm"));
  std::vector<std::string> warnings;
  EXPECT_TRUE(c.Validate(PluginRegistry::Builtin(), &warnings).ok());
  EXPECT_EQ(warnings.size(), 2u);
}

TEST(PluginRegistry, RejectsDuplicates) {
  PluginRegistry r = PluginRegistry::Builtin();
  EXPECT_EQ(r.Register("gang", [](const PluginOption&) { return std::unique_ptr<Plugin>(); }).code(),
            core::StatusCode::kAlreadyExists);
  EXPECT_TRUE(r.Has("network-topology-aware"));
}

TEST(Args, ParseWithFallback) {
  std::map<std::string, std::string> a{{"x", "true"}, {"w", "2.5"}, {"bad", "zz"}};
  EXPECT_TRUE(ArgBool(a, "x", false));
  EXPECT_DOUBLE_EQ(ArgDouble(a, "w", 1), 2.5);
  EXPECT_DOUBLE_EQ(ArgDouble(a, "bad", 1), 1);
  EXPECT_FALSE(ArgBool(a, "missing", false));
}

}  // namespace
}  // namespace tephra::sched
