#include "tephra/api/duration.h"

#include <gtest/gtest.h>

namespace tephra::api {
namespace {

using std::chrono::nanoseconds;
using namespace std::chrono_literals;

TEST(GoDurationTest, Parses) {
  const std::pair<const char*, nanoseconds> cases[] = {
      {"0", 0ns},       {"30s", 30s},     {"1m30s", 90s},       {"1h", 1h},          {"1.5s", 1500ms},
      {"100ms", 100ms}, {"-2m", -2min},   {"1h2m3.5s", 3723500ms}, {"10us", 10us},  {"5ns", 5ns},
      {"2\xc2\xb5s", 2us}, {"+5s", 5s},  {".5s", 500ms},
  };
  for (const auto& [in, want] : cases) {
    SCOPED_TRACE(in);
    auto d = ParseGoDuration(in);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, want);
  }
}

TEST(GoDurationTest, Rejects) {
  for (const char* in : {"", "5", "s", "1x", "1.2.3s", "--1s", "9999999999999h"}) {
    SCOPED_TRACE(in);
    auto d = ParseGoDuration(in);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find(std::string("duration \"") + in + "\""), std::string::npos) << d.status();
  }
}

TEST(GoDurationTest, FormatsLikeGo) {
  EXPECT_EQ(FormatGoDuration(0ns), "0s");
  EXPECT_EQ(FormatGoDuration(90s), "1m30s");
  EXPECT_EQ(FormatGoDuration(1h), "1h0m0s");
  EXPECT_EQ(FormatGoDuration(3723500ms), "1h2m3.5s");
  EXPECT_EQ(FormatGoDuration(1500ms), "1.5s");
  EXPECT_EQ(FormatGoDuration(150ms), "150ms");
  EXPECT_EQ(FormatGoDuration(2us), "2\xc2\xb5s");
  EXPECT_EQ(FormatGoDuration(7ns), "7ns");
  EXPECT_EQ(FormatGoDuration(-90s), "-1m30s");
  for (nanoseconds d : {nanoseconds(1), nanoseconds(1234567), nanoseconds(3600000000001)}) {
    auto back = ParseGoDuration(FormatGoDuration(d));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, d);
  }
}

}  // namespace
}  // namespace tephra::api
