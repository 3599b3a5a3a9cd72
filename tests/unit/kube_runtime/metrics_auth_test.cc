// Delegated auth of the metrics server (kube/metrics_auth.h) against the fake client's TokenReview and
// SubjectAccessReview answers; the flag checks; the log level a klog verbosity maps to.
#include "tephra/kube/metrics_auth.h"

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/kube/log.h"

namespace tephra::kube {
namespace {

using api::json;

struct Api {
  std::shared_ptr<testing::FakeClient> client = std::make_shared<testing::FakeClient>();
  int reviews = 0, accesses = 0;
  bool fail = false;
  json last_sar;
  Api() {
    client->SetRawHandler([this](const std::string& method, const std::string& path, const json* body) -> core::StatusOr<json> {
      EXPECT_EQ(method, "POST");
      if (fail) return core::UnavailableError("connection refused");
      if (path == "/apis/authentication.k8s.io/v1/tokenreviews") {
        ++reviews;
        const std::string token = (*body)["spec"]["token"];
        if (token == "reader" || token == "stranger")
          return json{{"status", {{"authenticated", true}, {"user", {{"username", "system:serviceaccount:mon:" + token}, {"groups", {"system:serviceaccounts"}}}}}}};
        return json{{"status", {{"authenticated", false}}}};
      }
      if (path == "/apis/authorization.k8s.io/v1/subjectaccessreviews") {
        ++accesses;
        last_sar = *body;
        const auto& spec = (*body)["spec"];
        const bool allowed = spec["user"] == "system:serviceaccount:mon:reader" &&
                             spec["nonResourceAttributes"]["verb"] == "get";
        return json{{"status", {{"allowed", allowed}}}};
      }
      return core::NotFoundError(path);
    });
  }
};

ServerRequest Get(const std::string& path, const std::string& token, const std::string& method = "GET") {
  ServerRequest r;
  r.method = method;
  r.path = path;
  if (!token.empty()) r.authorization = "Bearer " + token;
  return r;
}

TEST(RequestAuthorizer, AnswersAndCachesPerTokenVerbAndPath) {
  Api api;
  core::FakeClock clock;
  RequestAuthorizer a(api.client, clock, std::chrono::seconds(10));

  auto none = a.Check(Get("/metrics", ""));
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(api.reviews, 0) << "no token: the API server is not asked";

  auto bad = a.Check(Get("/metrics", "forged"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 401);

  auto stranger = a.Check(Get("/metrics", "stranger"));
  ASSERT_TRUE(stranger.has_value());
  EXPECT_EQ(stranger->status, 403);
  EXPECT_NE(stranger->body.find("system:serviceaccount:mon:stranger"), std::string::npos) << stranger->body;

  EXPECT_FALSE(a.Check(Get("/metrics", "reader")).has_value());
  EXPECT_EQ(api.last_sar["spec"]["nonResourceAttributes"]["path"], "/metrics");
  EXPECT_EQ(api.last_sar["spec"]["groups"], json::array({"system:serviceaccounts"}));
  const int reviews = api.reviews;
  // Cached: the next scrapes within the ttl ask nothing.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(a.Check(Get("/metrics", "reader")).has_value());
  EXPECT_EQ(api.reviews, reviews);
  // HEAD is a read, as GET; PUT is another verb, and the reader may not.
  EXPECT_FALSE(a.Check(Get("/metrics", "reader", "HEAD")).has_value());
  auto put = a.Check(Get("/debug/flags/v", "reader", "PUT"));
  ASSERT_TRUE(put.has_value());
  EXPECT_EQ(put->status, 403);
  EXPECT_EQ(api.last_sar["spec"]["nonResourceAttributes"]["verb"], "put");
  // After the ttl the API server is asked again.
  clock.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(a.Check(Get("/metrics", "reader")).has_value());
  EXPECT_GT(api.reviews, reviews);
}

TEST(RequestAuthorizer, ApiServerDownIs503AndNotCached) {
  Api api;
  core::FakeClock clock;
  RequestAuthorizer a(api.client, clock);
  api.fail = true;
  auto r = a.Check(Get("/metrics", "reader"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  api.fail = false;
  EXPECT_FALSE(a.Check(Get("/metrics", "reader")).has_value()) << "the failure must not be remembered";
}

TEST(MetricsServing, ValidateNamesTheFlag) {
  EXPECT_TRUE(Validate(MetricsServing{}).ok());
  MetricsServing half;
  half.tls_cert_file = "c.pem";
  EXPECT_NE(Validate(half).message().find("--metrics-tls-private-key-file"), std::string::npos);
  MetricsServing ca;
  ca.client_ca_file = "ca.pem";
  EXPECT_NE(Validate(ca).message().find("--metrics-client-ca-file"), std::string::npos);
  MetricsServing mode;
  mode.auth = "oauth";
  EXPECT_NE(Validate(mode).message().find("--metrics-auth"), std::string::npos);
}

TEST(LogLevel, FromKlogVerbosityOrName) {
  EXPECT_EQ(*log::LevelFromFlag("0"), log::Level::kInfo);
  EXPECT_EQ(*log::LevelFromFlag("3"), log::Level::kInfo);
  EXPECT_EQ(*log::LevelFromFlag("4"), log::Level::kDebug);
  EXPECT_EQ(*log::LevelFromFlag("6"), log::Level::kTrace);
  EXPECT_EQ(*log::LevelFromFlag("warn"), log::Level::kWarn);
  EXPECT_FALSE(log::LevelFromFlag("").ok());
  EXPECT_FALSE(log::LevelFromFlag("loud").ok());
  EXPECT_FALSE(log::LevelFromFlag("99999").ok());
}

}  // namespace
}  // namespace tephra::kube
