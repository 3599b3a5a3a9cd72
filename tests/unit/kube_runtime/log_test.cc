#include "tephra/kube/log.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

namespace tephra::kube::log {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetSinkForTest([this](const std::string& l) {
      std::lock_guard<std::mutex> g(mu_);
      lines_.push_back(l);
    });
  }
  void TearDown() override {
    SetSinkForTest(nullptr);
    ASSERT_TRUE(Init("info").ok());
  }
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> g(mu_);
    return lines_;
  }
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// Strips "ts=... " so lines can be compared exactly.
std::string NoTs(const std::string& l) {
  auto p = l.find(' ');
  return l.substr(p + 1);
}

TEST_F(LogTest, LogfmtMacroAndFluent) {
  ASSERT_TRUE(Init("info").ok());
  std::string key = "default/a";
  TLOG_INFO("pod bound", {{"pod", key}, {"node", "n1"}, {"attempt", 3}});
  Info("with spaces").Kv("reason", "not enough \"gpu\"").Kv("ok", true);
  TLOG_INFO("no fields");
  auto l = Lines();
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].rfind("ts=", 0), 0u);
  EXPECT_EQ(NoTs(l[0]), "level=info msg=\"pod bound\" pod=default/a node=n1 attempt=3");
  EXPECT_EQ(NoTs(l[1]), "level=info msg=\"with spaces\" reason=\"not enough \\\"gpu\\\"\" ok=true");
  EXPECT_EQ(NoTs(l[2]), "level=info msg=\"no fields\"");
}

TEST_F(LogTest, LevelsFilter) {
  ASSERT_TRUE(Init("warn").ok());
  TLOG_INFO("dropped");
  Debug("dropped").Kv("a", 1);
  TLOG_WARN("kept");
  Error("kept too");
  EXPECT_EQ(Lines().size(), 2u);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kError));
}

TEST_F(LogTest, JsonFormatAndComponent) {
  ASSERT_TRUE(Init("debug", Format::kJson, "scheduler").ok());
  TLOG_DEBUG("cycle", {{"pods", 12}, {"msg2", "a\nb"}});
  auto l = Lines();
  ASSERT_EQ(l.size(), 1u);
  auto p = l[0].find(",\"level\"");
  ASSERT_NE(p, std::string::npos);
  EXPECT_EQ(l[0].substr(p), ",\"level\":\"debug\",\"msg\":\"cycle\",\"component\":\"scheduler\",\"pods\":12,\"msg2\":\"a\\nb\"}");
  ASSERT_TRUE(Init("info", Format::kLogfmt, "").ok());
}

TEST_F(LogTest, BadLevelRejected) {
  auto s = Init("loud");
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("loud"), std::string::npos);
  EXPECT_EQ(*ParseLevel("warning"), Level::kWarn);
}

TEST(LogFormatTest, EmptyValueQuoted) {
  EXPECT_EQ(FormatLine(Format::kLogfmt, "T", Level::kError, "m", {Field("k", "")}), "ts=T level=error msg=m k=\"\"");
}

}  // namespace
}  // namespace tephra::kube::log
