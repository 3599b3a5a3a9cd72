#include "tephra/kube/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>

#include "tephra/core/clock.h"
#include "tephra/kube/leader_election.h"
#include "testing/fake_client.h"

namespace tephra::kube {
namespace {

// Minimal HTTP client: sends `request` verbatim, returns the whole response.
std::string Send(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}
std::string Get(int port, const std::string& path) {
  return Send(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}
std::string Body(const std::string& resp) { return resp.substr(resp.find("\r\n\r\n") + 4); }

TEST(HttpServerTest, ServesMetricsHealthAndReadiness) {
  metrics::Registry reg;
  reg.AddCounter("things_total", "Things.").With({})->Inc(3);
  std::atomic<bool> synced{false};
  HttpServer s;
  InstallStandardEndpoints(s, reg, {{"caches-synced", [&] { return synced.load(); }}});
  ASSERT_TRUE(s.Start("127.0.0.1:0").ok());
  ASSERT_GT(s.port(), 0);

  auto m = Get(s.port(), "/metrics");
  EXPECT_EQ(m.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << m;
  EXPECT_NE(m.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string::npos);
  EXPECT_EQ(Body(m), "# HELP things_total Things.\n# TYPE things_total counter\nthings_total 3\n");

  EXPECT_EQ(Body(Get(s.port(), "/healthz")), "ok");

  auto r = Get(s.port(), "/readyz");
  EXPECT_EQ(r.rfind("HTTP/1.1 503", 0), 0u) << r;
  EXPECT_EQ(Body(r), "[-]caches-synced failed\nreadyz check failed\n");
  synced = true;
  r = Get(s.port(), "/readyz?verbose");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_EQ(Body(r), "[+]caches-synced ok\nreadyz check passed\n");

  EXPECT_EQ(Get(s.port(), "/nope").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Send(s.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(Send(s.port(), "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  auto head = Send(s.port(), "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Body(head), "");
  EXPECT_NE(head.find("Content-Length: 2\r\n"), std::string::npos);
  // Still serving after the bad requests.
  EXPECT_EQ(Body(Get(s.port(), "/healthz")), "ok");
  s.Stop();
  s.Stop();
}

TEST(HttpServerTest, ReadinessFollowsLeaderElection) {
  core::FakeClock clock;
  auto api = std::make_shared<testing::FakeClient>(&clock);
  LeaderElectionConfig cfg;
  cfg.lock_name = "x";
  cfg.identity = "me";
  auto le = LeaderElector::Create(api, cfg, &clock);
  ASSERT_TRUE(le.ok());
  metrics::Registry reg;
  HttpServer s;
  InstallStandardEndpoints(s, reg, {LeaderElectionCheck(le->get())});
  ASSERT_TRUE(s.Start("127.0.0.1:0").ok());
  EXPECT_EQ(Get(s.port(), "/readyz").rfind("HTTP/1.1 200", 0), 0u);  // standing by counts as ready
  (*le)->Poll();
  EXPECT_TRUE((*le)->IsLeader());
  EXPECT_EQ(Get(s.port(), "/readyz").rfind("HTTP/1.1 200", 0), 0u);
  (*le)->Stop();
  EXPECT_EQ(Get(s.port(), "/readyz").rfind("HTTP/1.1 503", 0), 0u);
}

TEST(HttpServerTest, BadAddressesAreErrors) {
  HttpServer s;
  EXPECT_EQ(s.Start("nocolon").code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Start("127.0.0.1:").code(), core::StatusCode::kInvalidArgument);
  HttpServer a;
  ASSERT_TRUE(a.Start("127.0.0.1:0").ok());
  HttpServer b;
  EXPECT_EQ(b.Start("127.0.0.1:" + std::to_string(a.port())).code(), core::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tephra::kube
