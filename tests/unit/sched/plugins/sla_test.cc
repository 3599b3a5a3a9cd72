#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using namespace std::chrono_literals;
using testing::Harness;

const WallTime kT0 = WallTime(std::chrono::seconds(1'000'000));

JobInfo Job(const std::string& name, WallTime created, std::chrono::milliseconds own = 0ms) {
  JobInfo j;
  j.key = "ns/" + name;
  j.name = name;
  j.creation_time = created;
  j.sla_waiting_time = own;
  return j;
}

Session& OpenAt(Harness& h, WallTime now) {
  h.ssn = std::make_unique<Session>(&h.st, &h.conf, &h.slots, now, nullptr, &h.out);
  EXPECT_TRUE(h.ssn->Open().ok());
  return *h.ssn;
}

TEST(Sla, OrdersByWhenTheWaitRunsOutAndJobsWithoutOneLast) {
  Harness h;
  PluginOption o = PluginOption::Named("sla");
  o.arguments["sla-waiting-time"] = "1h";
  h.Add(o);
  // old: created first, waits the global hour; urgent: created 30 min later, its own 10 min wait runs out first.
  JobInfo old = Job("old", kT0), urgent = Job("urgent", kT0 + 30min, 10min);
  Session& s = OpenAt(h, kT0 + 35min);
  EXPECT_TRUE(s.JobLess(urgent, old));
  EXPECT_FALSE(s.JobLess(old, urgent));
}

TEST(Sla, AJobWithoutAnyWaitingTimeGoesAfterOneWithIt) {
  Harness h;
  h.Add(PluginOption::Named("sla"));  // no global waiting time
  JobInfo plain = Job("plain", kT0), sla = Job("sla", kT0 + 1h, 5min);
  Session& s = OpenAt(h, kT0 + 2h);
  EXPECT_TRUE(s.JobLess(sla, plain));
}

TEST(Sla, PermitsEnqueueAndPipeliningOnceTheWaitHasRunOut) {
  Harness h;
  PluginOption o = PluginOption::Named("sla");
  o.arguments["sla-waiting-time"] = "10m";
  h.Add(o);
  JobInfo j = Job("j", kT0);
  const auto& plugin = *h.slots[0].plugin;
  {
    Session& s = OpenAt(h, kT0 + 9min);
    EXPECT_EQ(plugin.JobEnqueueable(s, j), Vote::kAbstain);
    EXPECT_EQ(plugin.JobPipelined(s, j), Vote::kAbstain);
    h.ssn->Close();
  }
  Session& s = OpenAt(h, kT0 + 10min);
  EXPECT_EQ(plugin.JobEnqueueable(s, j), Vote::kPermit);
  EXPECT_EQ(plugin.JobPipelined(s, j), Vote::kPermit);
}

TEST(Sla, AMalformedWaitingTimeIsRefusedWithItsName) {
  for (const char* bad : {"soon", "-5m", "0s"}) {
    PluginOption o = PluginOption::Named("sla");
    o.arguments["sla-waiting-time"] = bad;
    auto p = PluginRegistry::Builtin().Create(o);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("sla-waiting-time"), std::string::npos) << p.status().message();
  }
}

}  // namespace
}  // namespace tephra::sched
