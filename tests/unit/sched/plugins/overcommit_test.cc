#include <gtest/gtest.h>

#include "harness.h"

namespace tephra::sched {
namespace {

using testing::Harness;

TEST(Overcommit, AdmitsUpToFactorTimesTotalMinusUsed) {
  Harness h;
  PluginOption o = PluginOption::Named("overcommit");
  o.arguments = {{"overcommit-factor", "1.5"}};
  h.Add(o);
  h.AddNode("n", Resource::Cpu(10000));
  TaskInfo r = Harness::Pod("r", Resource::Cpu(5000));
  r.status = TaskStatus::kRunning;
  r.node = "n";
  h.AddPod(r);
  Session& s = h.Open();
  // Budget: 10000 * 1.5 - 5000 = 10000m.
  JobInfo fits, too_big, no_min;
  fits.key = "ns/fits";
  fits.min_resources = Resource::Cpu(10000);
  too_big.key = "ns/big";
  too_big.min_resources = Resource::Cpu(10001);
  no_min.key = "ns/none";
  EXPECT_TRUE(s.JobEnqueueable(fits));
  EXPECT_FALSE(s.JobEnqueueable(too_big));
  EXPECT_TRUE(s.JobEnqueueable(no_min));
  // Admitted jobs' minimums count against the budget.
  s.JobEnqueued(fits);
  JobInfo small = fits;
  small.key = "ns/small";
  small.min_resources = Resource::Cpu(1);
  EXPECT_FALSE(s.JobEnqueueable(small));
}

TEST(Overcommit, MalformedFactorNamesPluginAndArgument) {
  PluginOption o = PluginOption::Named("overcommit");
  o.arguments = {{"overcommit-factor", "lots"}};
  auto p = PluginRegistry::Builtin().Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "plugin \"overcommit\": argument \"overcommit-factor\": \"lots\" is not a number");
}

}  // namespace
}  // namespace tephra::sched
