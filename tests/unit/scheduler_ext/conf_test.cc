#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "tephra/scheduler/conf.h"

namespace tephra::scheduler {
namespace {

// Volcano's Helm chart default (docs/volcano-behaviour.md, "Scheduler configuration"), written the way the
// chart writes it.
constexpr const char* kHelmDefault = R"(
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 5
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnable: true
)";

TEST(ConfTest, HelmDefaultMatchesBuiltInDefault) {
  std::vector<std::string> warnings;
  auto c = LoadSchedulerConf(kHelmDefault, "helm", &warnings);
  ASSERT_TRUE(c.ok()) << c.status();
  const sched::SchedulerConf d = sched::SchedulerConf::Default();
  EXPECT_EQ(c->actions, d.actions);
  ASSERT_EQ(c->tiers.size(), d.tiers.size());
  for (size_t i = 0; i < d.tiers.size(); ++i) {
    ASSERT_EQ(c->tiers[i].plugins.size(), d.tiers[i].plugins.size()) << "tier " << i;
    for (size_t j = 0; j < d.tiers[i].plugins.size(); ++j) {
      const auto& a = c->tiers[i].plugins[j];
      const auto& b = d.tiers[i].plugins[j];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.enable_preemptable, b.enable_preemptable) << a.name;
      EXPECT_EQ(a.arguments, b.arguments) << a.name;
    }
  }
  ASSERT_EQ(c->configurations.size(), 1u);
  EXPECT_EQ(c->configurations[0].name, "allocate");
  EXPECT_EQ(c->configurations[0].arguments.at("predicateErrorCacheEnable"), "true");
}

TEST(ConfTest, SwitchesWithVolcanoSpellings) {
  auto c = ParseSchedulerConf(R"(
actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
    enabledHyperNodeOrder: false
    enableJobOrder: False
)");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& p = c->tiers[0].plugins[0];
  EXPECT_EQ(p.enable_hierarchy, true);
  EXPECT_EQ(p.enabled_hyper_node_order, false);
  EXPECT_EQ(p.enable_job_order, false);
  EXPECT_FALSE(p.enable_task_order.has_value());
}

struct BadCase {
  const char* yaml;
  const char* expect_in_message;
};

TEST(ConfTest, BadFilesAreRejectedWithAMessageNamingTheProblem) {
  const BadCase cases[] = {
      {"actions: \"allocate\"\ntiers:\n- plugins:\n  - name: gang\n    enableJobReady: maybe\n",
       "enableJobReady: not a boolean"},
      {"actions: \"enqueue, alocate\"\n", "unknown action \"alocate\""},
      {"actions: \"enqueue, allocate,\"\n", "empty action name"},
      {"actions: \"allocate\"\ntiers:\n- plugins:\n  - name: proportion\n  - name: drf\n    enableHierarchy: true\n",
       "proportion cannot be used together with drf enableHierarchy"},
      {"tiers: []\n", "actions: missing or empty"},
      {"actions: [allocate]\n", "actions: must be a comma-separated string"},
      {"actions: \"allocate\"\ntiers:\n- plugins:\n  - {name: gang\n", "invalid YAML"},
      {"actions: \"allocate\"\ntiers: {plugins: []}\n", "tiers: must be a list of tiers"},
      {"", "empty configuration"},
  };
  for (const auto& bc : cases) {
    auto c = LoadSchedulerConf(bc.yaml, "my.conf");
    ASSERT_FALSE(c.ok()) << bc.yaml;
    EXPECT_NE(c.status().message().find(bc.expect_in_message), std::string::npos)
        << "message: " << c.status().message() << "\nwant: " << bc.expect_in_message;
    EXPECT_NE(c.status().message().find("my.conf"), std::string::npos) << c.status().message();
  }
}

// Volcano decodes the file with yaml.v2 into structs: keys it has no field for are ignored, arguments are
// map[string]interface{} (nested values allowed), a plugin it has no builder for is skipped at session open.
// A configuration Volcano loads, Tephra loads; what it ignores is named in a warning.
TEST(ConfTest, WhatVolcanoLoadsTephraLoadsWithWarnings) {
  std::vector<std::string> warnings;
  auto c = LoadSchedulerConf(R"(
actions: "enqueue, allocate, backfill"
newTopLevelKey: 1
tiers:
- plugins:
  - name: gang
    enablePreemtable: false
    enabledClusterOrder: true
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 10
      resources:
        nvidia.com/gpu: {type: MostAllocated, weight: 2}
  - name: usage
    arguments:
      thresholds: {cpu: 80, mem: 80}
  - name: my-private-plugin
- plugins:
  - name: gang
  priority: 3
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: true}
  extra: x
)",
                             "volcano-scheduler.conf", &warnings);
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& fit = c->tiers[0].plugins[1].arguments;
  EXPECT_EQ(fit.at("resourceStrategyFitWeight"), "10");
  EXPECT_EQ(fit.at("resources"), "{nvidia.com/gpu: {type: MostAllocated, weight: 2}}");
  std::string all;
  for (const auto& w : warnings) all += w + "\n";
  for (const char* want : {"volcano-scheduler.conf: newTopLevelKey: unknown key, ignored (as Volcano does) (line 3)",
                           "tiers[0].plugins[0].enablePreemtable: unknown key", "tiers[1].priority: unknown key",
                           "configurations[0].extra: unknown key", "unknown plugin \"my-private-plugin\"",
                           "plugin \"gang\" is listed more than once"})
    EXPECT_NE(all.find(want), std::string::npos) << "missing warning: " << want << "\nall:\n" << all;
  EXPECT_EQ(all.find("enabledClusterOrder"), std::string::npos) << "a known Volcano switch is not a warning";
}

TEST(ConfTest, UnimplementedVolcanoPluginIsAWarningNotAnError) {
  std::vector<std::string> warnings;
  auto c = LoadSchedulerConf("actions: \"enqueue, allocate, shuffle\"\ntiers:\n- plugins:\n  - name: tdm\n  - name: gang\n",
                             "x", &warnings);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("shuffle"), std::string::npos);
  EXPECT_NE(warnings[1].find("tdm"), std::string::npos);
}

TEST(ConfTest, FileLoadAndChangePolling) {
  char tmpl[] = "/tmp/schedconf.XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string path = tmpl;
  { std::ofstream(path) << kHelmDefault; }
  FileChangePoller p(path);
  EXPECT_TRUE(p.Changed());
  EXPECT_FALSE(p.Changed());
  auto c = LoadSchedulerConfFile(path);
  EXPECT_TRUE(c.ok()) << c.status();
  { std::ofstream(path) << "actions: \"enqueue, allocate\"\n"; }  // different size: seen even within one mtime tick
  EXPECT_TRUE(p.Changed());
  EXPECT_FALSE(p.Changed());
  auto c2 = LoadSchedulerConfFile(path);
  ASSERT_TRUE(c2.ok()) << c2.status();
  EXPECT_EQ(c2->actions, (std::vector<std::string>{"enqueue", "allocate"}));
  std::remove(path.c_str());
  EXPECT_FALSE(p.Changed());  // a vanished file is not a change (the last good conf stays)
  EXPECT_FALSE(LoadSchedulerConfFile(path).ok());
}

}  // namespace
}  // namespace tephra::scheduler
