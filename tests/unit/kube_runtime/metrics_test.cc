#include "tephra/kube/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace tephra::kube::metrics {
namespace {

TEST(MetricsTest, ExpositionExactText) {
  Registry r;
  auto& c = r.AddCounter("jobs_total", "Jobs seen.", {"queue", "phase"});
  c.With({"default", "Running"})->Inc();
  c.With({"default", "Running"})->Inc(2);
  c.With({"a\"b\\c\nd", "Pending"})->Inc();
  r.AddGauge("up", "1 if up.").With({})->Set(1);
  auto& h = r.AddHistogram("latency_seconds", "Latency.\nSecond line with \\ backslash.", {"op"}, {0.1, 1});
  h.With({"bind"})->Observe(0.05);
  h.With({"bind"})->Observe(0.5);
  h.With({"bind"})->Observe(7);
  const std::string want =
      "# HELP jobs_total Jobs seen.\n"
      "# TYPE jobs_total counter\n"
      "jobs_total{queue=\"a\\\"b\\\\c\\nd\",phase=\"Pending\"} 1\n"
      "jobs_total{queue=\"default\",phase=\"Running\"} 3\n"
      "# HELP latency_seconds Latency.\\nSecond line with \\\\ backslash.\n"
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{op=\"bind\",le=\"0.1\"} 1\n"
      "latency_seconds_bucket{op=\"bind\",le=\"1\"} 2\n"
      "latency_seconds_bucket{op=\"bind\",le=\"+Inf\"} 3\n"
      "latency_seconds_sum{op=\"bind\"} 7.55\n"
      "latency_seconds_count{op=\"bind\"} 3\n"
      "# HELP up 1 if up.\n"
      "# TYPE up gauge\n"
      "up 1\n";
  EXPECT_EQ(r.Expose(), want);
}

TEST(MetricsTest, FormatValueSpecialCases) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(-2.5), "-2.5");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
}

TEST(MetricsTest, RedeclarationReturnsSameFamily) {
  Registry r;
  auto& a = r.AddCounter("x_total", "x", {"name"});
  auto& b = r.AddCounter("x_total", "x", {"name"});
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a.With({"q"}), b.With({"q"}));
  EXPECT_EQ(r.FindGauge("x_total"), nullptr);
  EXPECT_EQ(r.FindCounter("x_total"), &a);
}

TEST(MetricsDeathTest, ConflictingRedeclarationAborts) {
  Registry r;
  r.AddCounter("x_total", "x", {"name"});
  EXPECT_DEATH(r.AddGauge("x_total", "x", {"name"}), "redeclared");
  EXPECT_DEATH(r.AddCounter("x_total", "x", {"name"}).With({"a", "b"}), "label values");
}

TEST(MetricsTest, DeclaredFromTable) {
  static const Desc kTable[] = {
      {Type::kCounter, "a_total", "A.", {}, {}},
      {Type::kHistogram, "b_seconds", "B.", {"x"}, {1}},
  };
  Registry r;
  r.AddAll(kTable);
  ASSERT_NE(r.FindCounter("a_total"), nullptr);
  ASSERT_NE(r.FindHistogram("b_seconds"), nullptr);
  r.FindHistogram("b_seconds")->With({"y"})->Observe(1);  // le is inclusive
  EXPECT_EQ(r.FindHistogram("b_seconds")->With({"y"})->CumulativeCount(0), 1u);
  // A declared family without children still prints HELP/TYPE.
  EXPECT_NE(r.Expose().find("# TYPE a_total counter\n"), std::string::npos);
}

TEST(MetricsTest, CountersAreSafeUnderConcurrency) {
  Registry r;
  Counter* c = r.AddCounter("c_total", "c").With({});
  Gauge* g = r.AddGauge("g", "g").With({});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->Inc();
        g->Inc();
        g->Dec();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c->Value(), 40000);
  EXPECT_EQ(g->Value(), 0);
  c->Inc(-5);  // counters never go down
  EXPECT_EQ(c->Value(), 40000);
}

TEST(MetricsTest, Buckets) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(DefaultBuckets().size(), 11u);
}

}  // namespace
}  // namespace tephra::kube::metrics
