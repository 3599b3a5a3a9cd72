// The framework's extension points: action registry, argument errors, session-open failures, Fit, and the
// Statement journal's version restore.
#include <gtest/gtest.h>

#include "fixture.h"
#include "tephra/sched/action.h"
#include "tephra/sched/framework.h"

namespace tephra::sched {
namespace {

using testing::Cluster;
using testing::kGi;

TEST(ArgParser, TypedValuesAndFirstErrorNamesOwnerAndArgument) {
  std::map<std::string, std::string> a{{"d", "2.5"}, {"i", "7"}, {"b", "TRUE"}, {"bad", "zz"}, {"big", "99"},
                                       {"empty", ""}};
  ArgParser p("plugin \"x\"", a);
  EXPECT_DOUBLE_EQ(p.Double("d", 1), 2.5);
  EXPECT_EQ(p.Int("i", 1, 0, 10), 7);
  EXPECT_TRUE(p.Bool("b", false));
  EXPECT_DOUBLE_EQ(p.Double("missing", 4), 4);
  EXPECT_DOUBLE_EQ(p.Double("empty", 4), 4);
  EXPECT_TRUE(p.status().ok());
  EXPECT_DOUBLE_EQ(p.Double("bad", 3), 3);  // malformed: fallback, and an error
  EXPECT_EQ(p.Int("big", 5, 0, 10), 5);     // out of range: a second error, not reported over the first
  EXPECT_FALSE(p.Bool("bad", true) == false);
  EXPECT_EQ(p.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "plugin \"x\": argument \"bad\": \"zz\" is not a number");
  ArgParser q("action \"a\"", a);
  (void)q.Int("big", 5, 0, 10);
  EXPECT_EQ(q.status().message(), "action \"a\": argument \"big\": \"99\" is not a whole number in [0, 10]");
  ArgParser r("plugin \"y\"", a);
  (void)r.Bool("i", false);
  EXPECT_EQ(r.status().message(), "plugin \"y\": argument \"i\": \"7\" is not a boolean (true or false)");
}

TEST(PluginRegistry, UnknownNameIsNotFound) {
  auto p = PluginRegistry::Builtin().Create(PluginOption::Named("nope"));
  EXPECT_EQ(p.status().code(), core::StatusCode::kNotFound);
}

TEST(SchedulerConf, MalformedPluginArgumentIsAConfigurationError) {
  SchedulerConf c = SchedulerConf::Default();
  for (auto& p : c.tiers[1].plugins)
    if (p.name == "binpack") p.arguments["binpack.weight"] = "ten";
  core::Status s = c.Validate(PluginRegistry::Builtin());
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "scheduler conf: plugin \"binpack\": argument \"binpack.weight\": \"ten\" is not a number");
  EXPECT_FALSE(Scheduler::Create(c).ok());
}

TEST(SchedulerConf, MalformedActionArgumentIsAConfigurationError) {
  SchedulerConf c = SchedulerConf::Default();
  c.actions = {"enqueue", "allocate", "preempt"};
  c.configurations.push_back({"preempt", {{"maxJobsPerCycle", "many"}}});
  core::Status s = c.Validate(PluginRegistry::Builtin());
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("action \"preempt\": argument \"maxJobsPerCycle\""), std::string::npos) << s.message();
}

TEST(SchedulerConf, UnknownActionMessageNamesIt) {
  SchedulerConf c = SchedulerConf::Default();
  c.actions.push_back("allocat");
  core::Status s = c.Validate(PluginRegistry::Builtin());
  EXPECT_EQ(s.message(), "scheduler conf: unknown action \"allocat\"");
}

TEST(Scheduler, UpdateConfWithBadArgumentKeepsTheOldConfiguration) {
  Cluster c;
  SchedulerConf bad = Cluster::Conf();
  for (auto& p : bad.tiers[1].plugins)
    if (p.name == "nodeorder") p.arguments["leastrequested.weight"] = "x";
  EXPECT_FALSE(c.s().UpdateConf(bad).ok());
  EXPECT_EQ(c.s().conf().tiers[1].plugins.size(), Cluster::Conf().tiers[1].plugins.size());
  c.Queue("default");
  c.Node("n1", 4000, 8 * kGi);
  c.Gang("g", 2, Resource::CpuMem(1000, kGi));
  EXPECT_EQ(c.Run().binds.size(), 2u);
}

// An action registered by name runs where the configuration puts it, and reports its time under its name.
class Recorder final : public Action {
 public:
  Recorder(std::string name, std::vector<std::string>* log) : name_(std::move(name)), log_(log) {}
  std::string_view Name() const override { return name_; }
  void Execute(Session& ssn) override { log_->push_back(name_ + "@" + std::to_string(ssn.cycle())); }

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

TEST(ActionRegistry, ConfiguredActionsAreLookedUpByName) {
  std::vector<std::string> log;
  ActionRegistry actions = ActionRegistry::Builtin();
  ASSERT_TRUE(actions.Register("audit", [&log](const ActionConfiguration& c) -> core::StatusOr<std::unique_ptr<Action>> {
    if (c.arguments.count("fail")) return core::Status(core::StatusCode::kInvalidArgument, "action \"audit\": no");
    return std::unique_ptr<Action>(std::make_unique<Recorder>("audit", &log));
  }).ok());
  EXPECT_EQ(actions.Register("allocate", [](const ActionConfiguration&) -> core::StatusOr<std::unique_ptr<Action>> {
    return std::unique_ptr<Action>();
  }).code(), core::StatusCode::kAlreadyExists);
  EXPECT_EQ(actions.Create({"nope", {}}).status().code(), core::StatusCode::kNotFound);

  SchedulerConf conf = Cluster::Conf();
  conf.actions = {"audit", "enqueue", "allocate", "audit"};
  // Not registered in the built-in registry: a configuration error there.
  EXPECT_EQ(conf.Validate(PluginRegistry::Builtin()).code(), core::StatusCode::kInvalidArgument);
  auto s = Scheduler::Create(conf, PluginRegistry::Builtin(), actions);
  ASSERT_TRUE(s.ok()) << s.status().message();
  CycleResult r = (*s)->RunCycle(WallTime{});
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(log, (std::vector<std::string>{"audit@1", "audit@1"}));
  EXPECT_TRUE(r.metrics.action_us.count("audit"));

  conf.configurations.push_back({"audit", {{"fail", "1"}}});
  EXPECT_FALSE(Scheduler::Create(conf, PluginRegistry::Builtin(), actions).ok());
}

// A plugin that cannot open its session stops the cycle before any decision; plugins that did open are
// closed again.
class OpenCounter final : public Plugin {
 public:
  OpenCounter(std::string name, bool fail, int* opened, int* closed)
      : name_(std::move(name)), fail_(fail), opened_(opened), closed_(closed) {}
  std::string Name() const override { return name_; }
  uint32_t Hooks() const override { return 0; }
  core::Status OnSessionOpen(Session&) override {
    if (fail_) return core::Status(core::StatusCode::kFailedPrecondition, "no quota data");
    ++*opened_;
    return core::Status::OK();
  }
  void OnSessionClose(Session&) override { ++*closed_; }

 private:
  std::string name_;
  bool fail_;
  int *opened_, *closed_;
};

TEST(Session, PluginOpenFailureDecidesNothingAndSaysWhich) {
  int opened = 0, closed = 0;
  bool fail = true;
  PluginRegistry plugins = PluginRegistry::Builtin();
  ASSERT_TRUE(plugins.Register("first", [&](const PluginOption&) {
    return std::make_unique<OpenCounter>("first", false, &opened, &closed);
  }).ok());
  ASSERT_TRUE(plugins.Register("flaky", [&](const PluginOption&) {
    return std::make_unique<OpenCounter>("flaky", fail, &opened, &closed);
  }).ok());
  SchedulerConf conf = Cluster::Conf();
  conf.tiers[0].plugins.insert(conf.tiers[0].plugins.begin(), PluginOption::Named("first"));
  conf.tiers[1].plugins.push_back(PluginOption::Named("flaky"));
  auto s = Scheduler::Create(conf, plugins);
  ASSERT_TRUE(s.ok()) << s.status().message();
  Scheduler& sched = **s;
  NodeInfo n;
  n.name = "n1";
  n.allocatable = Resource::CpuMem(4000, 8 * kGi).With(kPods, 110);
  sched.state().UpsertNode(n);
  QueueInfo q;
  q.name = "default";
  sched.state().UpsertQueue(q);
  JobInfo j;
  j.key = "ns/g";
  j.ns = "ns";
  j.name = "g";
  j.min_member = 1;
  sched.state().UpsertJob(j);
  TaskInfo t;
  t.uid = "g-0";
  t.ns = "ns";
  t.name = "g-0";
  t.job = j.key;
  t.request = Resource::CpuMem(1000, kGi);
  sched.state().UpsertPod(t);

  CycleResult r = sched.RunCycle(WallTime{});
  EXPECT_EQ(r.status.code(), core::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status.message(), "plugin \"flaky\": session open: no quota data");
  EXPECT_TRUE(r.binds.empty());
  EXPECT_TRUE(r.pod_groups.empty());
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(closed, 1);
  EXPECT_EQ(sched.state().FindTask("g-0")->status, TaskStatus::kPending);

  fail = false;  // the next configuration's instance opens: scheduling resumes
  ASSERT_TRUE(sched.UpdateConf(conf).ok());
  r = sched.RunCycle(WallTime{});
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.binds.size(), 1u);
}

TEST(Fit, TextRendersReasonAndDetail) {
  EXPECT_TRUE(Fit::Yes().ok());
  EXPECT_EQ(Fit::Yes().Text(), "");
  EXPECT_EQ(Fit::No("node(s) were unschedulable").Text(), "node(s) were unschedulable");
  EXPECT_EQ(Fit::No("node(s) had untolerated taint", "gpu", "h100").Text(), "node(s) had untolerated taint {gpu: h100}");
}

TEST(Statement, DiscardRestoresJobVersionsButRevertDoesNot) {
  Cluster c;
  c.Node("n1", 4000, 8 * kGi);
  JobInfo j = c.Gang("g", 2, Resource::CpuMem(1000, kGi));
  const uint64_t before = c.st().FindJob(j.key)->version;
  {
    Statement s(&c.st());
    ASSERT_TRUE(s.Allocate("g-0", "n1").ok());
    ASSERT_TRUE(s.Allocate("g-1", "n1").ok());
    EXPECT_GT(c.st().FindJob(j.key)->version, before);
    s.Discard();
  }
  EXPECT_EQ(c.st().FindJob(j.key)->version, before);
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kPending);
  Statement s(&c.st());
  ASSERT_TRUE(s.Pipeline("g-0", "n1").ok());
  std::vector<Statement::Entry> held = s.Release();
  const uint64_t pipelined = c.st().FindJob(j.key)->version;
  Statement undo(&c.st());
  undo.Revert(held);
  EXPECT_EQ(c.st().FindTask("g-0")->status, TaskStatus::kPending);
  EXPECT_GT(c.st().FindJob(j.key)->version, pipelined);  // the pipelined placement was real for the cycle
}

}  // namespace
}  // namespace tephra::sched
