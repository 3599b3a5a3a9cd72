#include "tephra/core/quantity.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace tephra::core {
namespace {

struct ParseCase {
  const char* in;
  const char* canonical;
  int64_t milli;
};

TEST(QuantityTest, ParsesAndCanonicalizes) {
  const ParseCase cases[] = {
      {"0", "0", 0},
      {"100m", "100m", 100},
      {"1500m", "1500m", 1500},
      {"1.5", "1500m", 1500},
      {"0.1", "100m", 100},
      {"1", "1", 1000},
      {"+1", "1", 1000},
      {"-5", "-5", -5000},
      {"1000", "1k", 1000000},
      {"2k", "2k", 2000000},
      {"1M", "1M", 1000000000},
      {"2Gi", "2Gi", 2LL * 1024 * 1024 * 1024 * 1000},
      {"500Mi", "500Mi", 500LL * 1024 * 1024 * 1000},
      {"2048Mi", "2Gi", 2LL * 1024 * 1024 * 1024 * 1000},
      {"1.5Gi", "1536Mi", 1536LL * 1024 * 1024 * 1000},
      {"0.5Gi", "512Mi", 512LL * 1024 * 1024 * 1000},
      {"1Ki", "1Ki", 1024000},
      {"1e3", "1e3", 1000000},
      {"1E3", "1e3", 1000000},
      {"1.5e3", "1500", 1500000},
      {"1.5e-3", "1500e-6", 2},  // 1.5m -> MilliValue rounds up
      {"100e3", "100e3", 100000000},
      {"1e-3", "1e-3", 1},
      {"0.0001", "100u", 1},
      {"1n", "1n", 1},
      {"5u", "5u", 1},
      {"1T", "1T", 1000000000000000LL},
      {"1P", "1P", 1000000000000000000LL},
      {"1.0000", "1", 1000},
      {"007", "7", 7000},
      {"1.", "1", 1000},
      {".5", "500m", 500},
      {"512", "512", 512000},  // small BinarySI-like values stay decimal
      {"100Ki", "100Ki", 102400000},
      {"1000Ki", "1000Ki", 1024000000},
      {"0.5Ki", "512", 512000},  // |v| < 1024 formats as DecimalSI, like Kubernetes
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    StatusOr<Quantity> q = Quantity::Parse(c.in);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->ToString(), c.canonical);
    EXPECT_EQ(q->MilliValue(), c.milli);
    // Canonical output parses back to the same value.
    StatusOr<Quantity> again = Quantity::Parse(q->ToString());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, *q);
    EXPECT_EQ(again->ToString(), q->ToString());
  }
}

TEST(QuantityTest, RejectsMalformedWithQuotedInput) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "quantity \"\": empty string"},
      {"1.2.3", "quantity \"1.2.3\": more than one decimal point"},
      {"Gi", "quantity \"Gi\": no digits"},
      {"1 Gi", "quantity \"1 Gi\": unknown suffix \" Gi\""},
      {"--1", "quantity \"--1\": no digits"},
      {"1e", "quantity \"1e\": unknown suffix \"e\""},
      {"0x10", "quantity \"0x10\": unknown suffix \"x10\""},
      {"1Gb", "quantity \"1Gb\": unknown suffix \"Gb\""},
      {"12x", "quantity \"12x\": unknown suffix \"x\""},
      {"-", "quantity \"-\": no digits"},
      {".", "quantity \".\": no digits"},
      {"1k+", "quantity \"1k+\": unknown suffix \"k+\""},
      {"1-", "quantity \"1-\": misplaced sign"},
      {"1ki", "quantity \"1ki\": unknown suffix \"ki\""},
      {"1e1000000", "quantity \"1e1000000\": unknown suffix \"e1000000\""},
      {"1e40", "quantity \"1e40\": value out of range"},
      {"99999999999999999999999999999999999999999", "quantity \"99999999999999999999999999999999999999999\": too many digits"},
  };
  for (const auto& [in, msg] : cases) {
    SCOPED_TRACE(in);
    StatusOr<Quantity> q = Quantity::Parse(in);
    ASSERT_FALSE(q.ok()) << q->ToString();
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(q.status().message(), msg);
  }
}

TEST(QuantityTest, RoundsExcessPrecisionAwayFromZero) {
  EXPECT_EQ(Quantity::MustParse("0.0000000001").NanoValue(), 1);
  EXPECT_EQ(Quantity::MustParse("-0.0000000001").NanoValue(), -1);
  EXPECT_EQ(Quantity::MustParse("1.5n").ToString(), "2n");
}

TEST(QuantityTest, ValueAndMilliValueRoundAwayFromZero) {
  EXPECT_EQ(Quantity::MustParse("100m").Value(), 1);
  EXPECT_EQ(Quantity::MustParse("-100m").Value(), -1);
  EXPECT_EQ(Quantity::MustParse("2Gi").Value(), 2147483648LL);
  EXPECT_EQ(Quantity::MustParse("1500u").MilliValue(), 2);
  EXPECT_EQ(Quantity::MustParse("8Ei").Value(), std::numeric_limits<int64_t>::max());  // saturates
  EXPECT_EQ(Quantity::MustParse("8Ei").MilliValue(), std::numeric_limits<int64_t>::max());
}

TEST(QuantityTest, ArithmeticAndComparisonIgnoreFormat) {
  Quantity a = Quantity::MustParse("1Ki");
  Quantity b = Quantity::MustParse("1024");
  EXPECT_EQ(a, b);
  EXPECT_LT(Quantity::MustParse("999m"), Quantity::MustParse("1"));
  Quantity sum = Quantity::MustParse("1Gi") + Quantity::MustParse("512Mi");
  EXPECT_EQ(sum.ToString(), "1536Mi");  // keeps the left operand's format
  EXPECT_EQ((Quantity::MustParse("500m") * 3).ToString(), "1500m");
  EXPECT_EQ((Quantity::MustParse("1") - Quantity::MustParse("1500m")).ToString(), "-500m");
  EXPECT_EQ(Quantity::FromMilli(250).ToString(), "250m");
  EXPECT_EQ(Quantity::FromUnits(3, Quantity::Format::kBinarySI).ToString(), "3");
  EXPECT_EQ(Quantity::FromUnits(4096, Quantity::Format::kBinarySI).ToString(), "4Ki");
  EXPECT_TRUE(Quantity().IsZero());
  EXPECT_EQ(Quantity::MustParse("-3").Sign(), -1);
}

TEST(QuantityTest, LargeValuesFormat) {
  EXPECT_EQ(Quantity::MustParse("8Ei").ToString(), "8Ei");
  EXPECT_EQ(Quantity::MustParse("1000E").ToString(), "1000E");  // no suffix above E
  EXPECT_EQ(Quantity::MustParse("1e21").ToString(), "1e21");
  EXPECT_EQ(Quantity::MustParse("1e29").Value(), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace tephra::core
