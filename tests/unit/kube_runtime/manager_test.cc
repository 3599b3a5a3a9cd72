// kube::Manager on the in-memory FakeClient: runnables gated by leader election, clients per purpose, exit
// codes, shutdown order, and the stats it exports. Real time, but every wait is for an observable event
// with a deadline (no sleep-and-assert).
#include "tephra/kube/manager.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"

namespace tephra::kube {
namespace {

using testing::FakeClient;

template <typename Pred>
bool Eventually(Pred p, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return p();
}

struct Harness {
  std::shared_ptr<FakeClient> fc = std::make_shared<FakeClient>();
  metrics::Registry registry;
  std::mutex mu;
  std::vector<RestConfig> made;  // every client the manager asked for

  ManagerOptions Options(bool leader_elect) {
    ManagerOptions o;
    o.component = "test";
    o.init_logging = false;
    o.install_signal_handlers = false;
    o.leader_elect = leader_elect;
    o.lock_namespace = "volcano-system";
    o.lock_name = "test-lock";
    o.leader_metric = "test_is_leader";
    o.lease_duration = std::chrono::milliseconds(900);
    o.renew_deadline = std::chrono::milliseconds(600);
    o.retry_period = std::chrono::milliseconds(100);
    o.registry = &registry;
    o.rest_config = [] { return core::StatusOr<RestConfig>(RestConfig{}); };
    o.client_factory = [this](const RestConfig& rc) -> core::StatusOr<ClientPtr> {
      std::lock_guard l(mu);
      made.push_back(rc);
      return ClientPtr(fc);
    };
    return o;
  }
};

// Counts runs; returns when stopped.
struct Probe {
  std::atomic<int> started{0}, stopped{0};
  std::unique_ptr<Runnable> Make(std::string name, bool leader) {
    return MakeRunnable(std::move(name), leader, [this](std::stop_token stop) {
      ++started;
      while (!SleepUnlessStopped(stop, std::chrono::seconds(5))) {
      }
      ++stopped;
      return core::Status::OK();
    });
  }
};

TEST(Manager, RunnablesStartAndStopWithoutLeaderElection) {
  Harness h;
  auto m = Manager::Create(h.Options(false));
  ASSERT_TRUE(m.ok()) << m.status();
  Probe p;
  (*m)->Add(p.Make("everywhere", false));
  (*m)->Add(p.Make("leader-only", true));
  auto code = std::async(std::launch::async, [&] { return (*m)->Run(); });
  ASSERT_TRUE(Eventually([&] { return p.started == 2 && (*m)->running(); }));
  EXPECT_TRUE((*m)->leading());
  (*m)->Stop();
  EXPECT_EQ(code.get(), 0);
  EXPECT_EQ(p.stopped, 2);
}

TEST(Manager, LeaderRunnablesWaitForTheLeaseAndMoveOnRelease) {
  Harness h;
  auto a = Manager::Create(h.Options(true));
  auto b = Manager::Create(h.Options(true));
  ASSERT_TRUE(a.ok() && b.ok());
  Probe pa, pb;
  (*a)->Add(pa.Make("state", false));
  (*a)->Add(pa.Make("loop", true));
  (*b)->Add(pb.Make("state", false));
  (*b)->Add(pb.Make("loop", true));
  auto ca = std::async(std::launch::async, [&] { return (*a)->Run(); });
  ASSERT_TRUE(Eventually([&] { return (*a)->running(); }));
  auto cb = std::async(std::launch::async, [&] { return (*b)->Run(); });
  // The standby runs its non-leader runnable at once, and not the leader's.
  ASSERT_TRUE(Eventually([&] { return pb.started == 1; }));
  // It polls the lease every ~retry_period: once it has read the lease a few times (the leader renews by
  // update, so gets are the standby's polls) it has had its chances and must still be waiting.
  auto lease_gets = [&] {
    int n = 0;
    for (const auto& a : h.fc->Actions()) n += a.verb == "get" && a.resource.starts_with("leases");
    return n;
  };
  const int before = lease_gets();
  ASSERT_TRUE(Eventually([&] { return lease_gets() >= before + 3; }));
  EXPECT_FALSE((*b)->leading());
  EXPECT_EQ(pb.started, 1);
  EXPECT_EQ(pa.started, 2);

  // A clean stop releases the lease; the standby takes over at its next poll, well before expiry.
  (*a)->Stop();
  EXPECT_EQ(ca.get(), 0);
  EXPECT_EQ(pa.stopped, 2);
  ASSERT_TRUE(Eventually([&] { return pb.started == 2; }, std::chrono::seconds(5)));
  EXPECT_TRUE((*b)->leading());
  (*b)->Stop();
  EXPECT_EQ(cb.get(), 0);
}

TEST(Manager, LosingTheLeaseStopsLeaderWorkAndExitsOne) {
  Harness h;
  auto m = Manager::Create(h.Options(true));
  ASSERT_TRUE(m.ok());
  Probe p;
  (*m)->Add(p.Make("loop", true));
  auto code = std::async(std::launch::async, [&] { return (*m)->Run(); });
  ASSERT_TRUE(Eventually([&] { return p.started == 1; }));
  // Another holder takes the lease (as after a partition): every renewal now fails.
  h.fc->SetFailureInjector([](const testing::Action& a) -> std::optional<core::Status> {
    if (a.resource.starts_with("leases") && a.verb == "update") return core::UnavailableError("partitioned");
    return std::nullopt;
  });
  EXPECT_EQ(code.get(), 1);
  EXPECT_TRUE((*m)->lost_lease());
  EXPECT_EQ(p.stopped, 1);
}

TEST(Manager, FailingRunnableEndsTheProcess) {
  Harness h;
  auto m = Manager::Create(h.Options(false));
  ASSERT_TRUE(m.ok());
  Probe p;
  (*m)->Add(p.Make("other", false));
  (*m)->Add(MakeRunnable("broken", false, [](std::stop_token) { return core::UnavailableError("cannot go on"); }));
  EXPECT_EQ((*m)->Run(), 1);
  EXPECT_EQ(p.stopped, 1);  // the others were stopped, not abandoned

  Harness h2;
  auto m2 = Manager::Create(h2.Options(false));
  ASSERT_TRUE(m2.ok());
  (*m2)->Add(MakeRunnable("misconfigured", false, [](std::stop_token) { return core::InvalidArgumentError("--flag: bad"); }));
  EXPECT_EQ((*m2)->Run(), 2);
}

TEST(Manager, ClientsPerPurposeHaveTheirOwnLimitsAndAreCached) {
  Harness h;
  auto o = h.Options(false);
  o.kube_api_qps = 300;
  o.kube_api_burst = 600;
  auto m = Manager::Create(std::move(o));
  ASSERT_TRUE(m.ok());
  auto lease = (*m)->ClientFor("leader-election", {5, 10});
  auto again = (*m)->ClientFor("leader-election", {99, 99});
  ASSERT_TRUE(lease.ok() && again.ok());
  std::lock_guard l(h.mu);
  ASSERT_EQ(h.made.size(), 2u);  // main + leader-election; the second call was served from the cache
  EXPECT_EQ(h.made[0].qps, 300);
  EXPECT_EQ(h.made[0].burst, 600);
  EXPECT_EQ(h.made[0].user_agent, "tephra-test");
  EXPECT_EQ(h.made[1].qps, 5);
  EXPECT_EQ(h.made[1].burst, 10);
  EXPECT_EQ(h.made[1].user_agent, "tephra-test/leader-election");
}

TEST(Manager, ExportsInformerAndEventStats) {
  Harness h;
  auto m = Manager::Create(h.Options(false));
  ASSERT_TRUE(m.ok());
  auto pods = (*m)->informers().For<api::Pod>();
  (void)pods;
  (*m)->events("test-component");
  std::atomic<int> collected{0};
  (*m)->AddCollector([&] { ++collected; });
  const std::string text = (*m)->ScrapeMetrics();
  EXPECT_EQ(collected, 1);
  EXPECT_NE(text.find("tephra_informer_lists_total"), std::string::npos) << text;
  EXPECT_NE(text.find("tephra_events_total{result=\"created\"}"), std::string::npos) << text;
}

TEST(Manager, RejectsLeaderElectionWithoutALock) {
  Harness h;
  auto o = h.Options(true);
  o.lock_name.clear();
  EXPECT_EQ(Manager::Create(std::move(o)).status().code(), core::StatusCode::kInvalidArgument);
}

// One HTTP/1.1 request over a raw socket from `from` (a local address) to `to`:port; returns the status code,
// 0 when nothing came back.
int RawRequest(const std::string& from, const std::string& to, int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, from.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, to.c_str(), &dst.sin_addr);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while (got.find("\r\n") == std::string::npos && (n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, n);
  }
  ::close(fd);
  if (got.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::atoi(got.c_str() + 9);
}

// A local IPv4 address that is not loopback, or "" when the host has none.
std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return "";
  std::string out;
  for (ifaddrs* a = all; a && out.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) out = buf;
  }
  ::freeifaddrs(all);
  return out;
}

// Issue 41: `PUT /debug/flags/v` with body `off` silenced any role for anyone on the pod network. Without an
// authorizer, what changes state is served to loopback peers only; reading stays open.
TEST(Manager, LogLevelPutIsRefusedToOtherHostsWithoutAuth) {
  const std::string remote = NonLoopbackAddress();
  if (remote.empty()) GTEST_SKIP() << "no non-loopback IPv4 address on this host";
  Harness h;
  ManagerOptions o = h.Options(false);
  o.metrics_address = "0.0.0.0:0";
  auto m = Manager::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  auto code = std::async(std::launch::async, [&] { return (*m)->Run(); });
  ASSERT_TRUE(Eventually([&] { return (*m)->metrics_port() > 0; }));
  const int port = (*m)->metrics_port();
  const log::Level was = log::GetLevel();
  const std::string put_off = "PUT /debug/flags/v HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\noff";
  EXPECT_EQ(RawRequest(remote, remote, port, put_off), 403);
  EXPECT_EQ(log::GetLevel(), was);
  EXPECT_EQ(RawRequest(remote, remote, port, "GET /debug/flags/v HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 200);
  EXPECT_EQ(RawRequest(remote, remote, port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), 200);
  // From this host (kubectl port-forward, a sidecar) it works as before.
  const std::string put_level = std::string("PUT /debug/flags/v HTTP/1.1\r\nHost: x\r\nContent-Length: ") +
                                std::to_string(std::string(log::LevelName(was)).size()) +
                                "\r\nConnection: close\r\n\r\n" + log::LevelName(was);
  EXPECT_EQ(RawRequest("127.0.0.1", "127.0.0.1", port, put_level), 200);
  (*m)->Stop();
  EXPECT_EQ(code.get(), 0);
  log::SetLevel(was);
}

TEST(Manager, LoopbackPeers) {
  EXPECT_TRUE(IsLoopbackPeer("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackPeer("127.3.2.1"));
  EXPECT_TRUE(IsLoopbackPeer("::1"));
  EXPECT_TRUE(IsLoopbackPeer("::ffff:127.0.0.1"));
  EXPECT_FALSE(IsLoopbackPeer("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackPeer("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsLoopbackPeer("fd00::2"));
  EXPECT_FALSE(IsLoopbackPeer(""));
  EXPECT_FALSE(IsLoopbackPeer("localhost"));
}

}  // namespace
}  // namespace tephra::kube
