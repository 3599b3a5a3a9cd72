#include "tephra/core/status.h"

#include <gtest/gtest.h>

namespace tephra::core {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  TEPHRA_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::OK();
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, CodesAndAnnotate) {
  Status s = NotFoundError("pods \"x\" not found").Annotate("get pod");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: get pod: pods \"x\" not found");
  EXPECT_TRUE(IsNotFound(s));
}

TEST(Status, HttpDetails) {
  Status s = UnavailableError("slow down").WithHttp(429, "TooManyRequests").WithRetryAfter(std::chrono::seconds(2));
  EXPECT_EQ(s.http_status(), 429);
  EXPECT_EQ(s.reason(), "TooManyRequests");
  ASSERT_TRUE(s.retry_after().has_value());
  EXPECT_EQ(*s.retry_after(), std::chrono::milliseconds(2000));
  EXPECT_TRUE(IsGone(OutOfRangeError("too old").WithHttp(410, "Expired")));
}

TEST(StatusOr, ValueAndError) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
}

TEST(StatusOr, OkStatusBecomesInternal) {
  StatusOr<int> x(Status::OK());
  EXPECT_FALSE(x.ok());
  EXPECT_EQ(x.status().code(), StatusCode::kInternal);
}

TEST(StatusOrDeathTest, ValueOnErrorAborts) {
  StatusOr<int> x(NotFoundError("nope"));
  EXPECT_DEATH((void)x.value(), "nope");
}

}  // namespace
}  // namespace tephra::core
