// REST client (over the real cpprest transport) against the fault-injecting fake API server.
#include <gtest/gtest.h>

#include <chrono>

#include "fake_apiserver.h"
#include "test_kind.h"
#include "tephra/kube/client.h"
#include "tephra/kube/transport.h"
#include "testing/fake_client.h"

namespace tephra::kube {
namespace {

using fakeapi::Fault;
using fakeapi::FakeApiServer;
using testkind::MakeWidget;
using testkind::Widget;
using Clock = std::chrono::steady_clock;

const char* kWidgets = "/apis/example.com/v1/widgets";

class ClientFaultTest : public ::testing::Test {
 protected:
  void SetUp() override { server_.Start(); }
  ClientPtr NewTestClient(RestConfig cfg = {}) {
    cfg.server = server_.url();
    cfg.token = "secret-token";
    if (cfg.qps == RestConfig{}.qps) cfg.qps = 0;  // unlimited unless a test asks
    cfg.retry_initial = std::chrono::milliseconds(5);
    cfg.retry_max = std::chrono::milliseconds(20);
    auto c = NewClient(cfg);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }
  FakeApiServer server_;
};

TEST_F(ClientFaultTest, EveryVerbRoundTrips) {
  auto c = NewTestClient();
  const auto& r = Widget::Resource();
  auto created = c->Create(r, "ns1", MakeWidget("ns1", "w1", ""));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE((*created)["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_TRUE(IsAlreadyExists(c->Create(r, "ns1", MakeWidget("ns1", "w1", "")).status()));

  auto got = c->Get(r, "ns1", "w1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["spec"]["size"], 1);
  EXPECT_TRUE(IsNotFound(c->Get(r, "ns1", "nope").status()));

  json upd = *got;
  upd["spec"]["size"] = 2;
  auto updated = c->Update(r, "ns1", upd);
  ASSERT_TRUE(updated.ok()) << updated.status();
  // The stale RV is now a conflict: kAborted, never AlreadyExists.
  auto stale = c->Update(r, "ns1", upd);
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status();
  EXPECT_EQ(stale.status().http_status(), 409);

  auto merged = c->Patch(r, "ns1", "w1", PatchType::kMerge, json{{"spec", {{"color", "red"}}}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ((*merged)["spec"]["color"], "red");
  EXPECT_EQ((*merged)["spec"]["size"], 2);
  auto jp = c->Patch(r, "ns1", "w1", PatchType::kJson,
                     json::array({{{"op", "replace"}, {"path", "/spec/size"}, {"value", 7}}}));
  ASSERT_TRUE(jp.ok()) << jp.status();
  EXPECT_EQ((*jp)["spec"]["size"], 7);

  auto list = c->List(r, "ns1", {});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items.size(), 1u);
  EXPECT_FALSE(list->metadata.resource_version.empty());

  DeleteOptions d;
  d.propagation_policy = "Background";
  EXPECT_TRUE(c->Delete(r, "ns1", "w1", d).ok());
  EXPECT_TRUE(core::IsNotFound(c->Delete(r, "ns1", "w1")));

  // The bearer token travels on every request.
  for (const auto& req : server_.Requests()) EXPECT_EQ(req.headers.at("authorization"), "Bearer secret-token");
}

TEST_F(ClientFaultTest, BindAndEvictUsePodSubresources) {
  auto c = NewTestClient();
  server_.Put("/api/v1/pods", "ns", json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}},
                                         {"spec", json::object()}});
  ASSERT_TRUE(c->Bind("ns", "p", "", "node-1").ok());
  EXPECT_EQ((*server_.Lookup("/api/v1/pods", "ns", "p"))["spec"]["nodeName"], "node-1");
  Status again = c->Bind("ns", "p", "", "node-2");
  EXPECT_TRUE(IsConflict(again)) << again;  // already assigned: the loser must not retry
  ASSERT_TRUE(c->Evict("ns", "p").ok());
  EXPECT_FALSE(server_.Lookup("/api/v1/pods", "ns", "p").has_value());
}

// Both fronts serve one store: what the kube::Client fake writes, the REST client reads over HTTP, with the
// same semantics (strategic merge by key, status only where the kind serves it).
TEST(SharedStoreTest, HttpAndClientFrontsServeOneStore) {
  auto store = std::make_shared<testing::ApiStore>();
  FakeApiServer server(store);
  server.Start();
  testing::FakeClient fake(store);
  RestConfig cfg;
  cfg.server = server.url();
  cfg.qps = 0;
  auto rc = NewClient(cfg);
  ASSERT_TRUE(rc.ok()) << rc.status();
  ClientPtr c = *rc;
  const ResourceInfo pods{"", "v1", "Pod", "pods", true};
  const ResourceInfo podgroups{"scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", true};
  json pod = {{"metadata", {{"name", "p"}}},
              {"spec", {{"containers", {{{"name", "a"}, {"image", "x"}}, {{"name", "b"}, {"image", "y"}}}}}}};
  ASSERT_TRUE(fake.Create(pods, "ns", pod).ok());
  auto smp = c->Patch(pods, "ns", "p", PatchType::kStrategicMerge,
                      json{{"spec", {{"containers", {{{"name", "b"}, {"image", "z"}}}}}}});
  ASSERT_TRUE(smp.ok()) << smp.status();
  EXPECT_EQ((*smp)["spec"]["containers"].size(), 2u);
  EXPECT_EQ((*fake.Get(pods, "ns", "p"))["spec"]["containers"][1]["image"], "z");
  EXPECT_EQ(fake.CurrentResourceVersion(), server.current_rv());

  ASSERT_TRUE(c->Create(podgroups, "ns", json{{"metadata", {{"name", "pg"}}}}).ok());
  auto st = c->Patch(podgroups, "ns", "pg", PatchType::kMerge, json{{"status", {{"phase", "Running"}}}}, "status");
  EXPECT_TRUE(core::IsNotFound(st.status())) << st.status();
  auto plain = c->Patch(podgroups, "ns", "pg", PatchType::kMerge, json{{"status", {{"phase", "Running"}}}});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*fake.Get(podgroups, "ns", "pg"))["status"]["phase"], "Running");
  server.Stop();
}

TEST_F(ClientFaultTest, RetriesHonourRetryAfter) {
  auto c = NewTestClient();
  server_.Put(kWidgets, "ns", MakeWidget("ns", "w", ""));
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "get", .status = 429, .retry_after_seconds = 1, .times = 2});
  auto start = Clock::now();
  auto got = c->Get(Widget::Resource(), "ns", "w");
  auto took = Clock::now() - start;
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(server_.Count("get"), 3);
  EXPECT_GE(took, std::chrono::milliseconds(1900));  // two Retry-After: 1 waits
}

TEST_F(ClientFaultTest, RetriesStopAfterTenTries) {
  auto c = NewTestClient();
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "get", .status = 429, .retry_after_seconds = 0, .times = 50});
  auto got = c->Get(Widget::Resource(), "ns", "w");
  EXPECT_TRUE(IsUnavailable(got.status())) << got.status();
  EXPECT_EQ(got.status().http_status(), 429);
  EXPECT_EQ(server_.Count("get"), 10);
}

TEST_F(ClientFaultTest, ResetsTruncationAnd5xxAreRetried) {
  auto c = NewTestClient();
  server_.Put(kWidgets, "ns", MakeWidget("ns", "w", ""));
  server_.AddFault({.kind = Fault::Kind::kReset, .verb = "get"});
  server_.AddFault({.kind = Fault::Kind::kTruncate, .verb = "get"});
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "get", .status = 503});
  auto got = c->Get(Widget::Resource(), "ns", "w");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(server_.Count("get"), 4);
}

TEST_F(ClientFaultTest, NonRetriableErrorsAreNotRetried) {
  auto c = NewTestClient();
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "get", .status = 403, .reason = "Forbidden"});
  auto got = c->Get(Widget::Resource(), "ns", "w");
  EXPECT_EQ(got.status().code(), core::StatusCode::kPermissionDenied);
  EXPECT_EQ(server_.Count("get"), 1);
}

TEST_F(ClientFaultTest, SlowResponsesTimeOut) {
  RestConfig cfg;
  cfg.timeout = std::chrono::seconds(1);
  cfg.max_tries = 2;
  auto c = NewTestClient(cfg);
  server_.AddFault({.kind = Fault::Kind::kSlow, .verb = "get", .delay = std::chrono::milliseconds(3500), .times = 2});
  auto start = Clock::now();
  auto got = c->Get(Widget::Resource(), "ns", "w");
  EXPECT_TRUE(IsUnavailable(got.status())) << got.status();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(6500));
  EXPECT_EQ(server_.Count("get"), 2);
}

TEST_F(ClientFaultTest, QpsLimiterSpacesRequests) {
  RestConfig cfg;
  cfg.qps = 20;
  cfg.burst = 1;
  auto c = NewTestClient(cfg);
  auto start = Clock::now();
  for (int i = 0; i < 21; ++i) (void)c->Get(Widget::Resource(), "ns", "w");
  // 1 burst token + 20 more at 20/s: at least ~1 s.
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(950));
}

TEST_F(ClientFaultTest, ListAllFollowsContinueTokens) {
  auto c = NewTestClient();
  for (int i = 0; i < 1200; ++i) server_.Put(kWidgets, "ns", MakeWidget("ns", "w" + std::to_string(i), ""));
  ListOptions o;
  o.limit = 500;
  auto all = ListAll(*c, Widget::Resource(), "ns", o);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 1200u);
  EXPECT_EQ(server_.Count("list"), 3);
  EXPECT_EQ(server_.Count("list", "", "continue"), 2);
}

TEST_F(ClientFaultTest, ListAllRestartsOnExpiredContinue) {
  auto c = NewTestClient();
  for (int i = 0; i < 30; ++i) server_.Put(kWidgets, "ns", MakeWidget("ns", "w" + std::to_string(i), ""));
  ListOptions o;
  o.limit = 10;
  // First page fine, then the continue request gets 410 once.
  server_.AddFault({.kind = Fault::Kind::kSlow, .verb = "list", .delay = std::chrono::milliseconds(0)});
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "list", .status = 410, .reason = "Expired"});
  auto all = ListAll(*c, Widget::Resource(), "ns", o);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 30u);
  EXPECT_EQ(server_.Count("list"), 2 + 3);
}

TEST_F(ClientFaultTest, WatchReportsGoneBothWays) {
  auto c = NewTestClient();
  server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  std::string old_rv = std::to_string(server_.current_rv());
  server_.Put(kWidgets, "ns", MakeWidget("ns", "b", ""));
  server_.Compact();
  ListOptions o;
  o.resource_version = "1";
  o.timeout_seconds = 5;
  server_.set_gone_in_stream(true);
  Status s = c->Watch(Widget::Resource(), "ns", o, [](WatchEvent&&) { return true; });
  EXPECT_TRUE(core::IsGone(s)) << s;
  server_.set_gone_in_stream(false);
  s = c->Watch(Widget::Resource(), "ns", o, [](WatchEvent&&) { return true; });
  EXPECT_TRUE(core::IsGone(s)) << s;
  EXPECT_EQ(s.http_status(), 410);
}

TEST_F(ClientFaultTest, WatchStreamsEventsAndCancels) {
  auto c = NewTestClient();
  ListOptions o;
  o.resource_version = std::to_string(server_.current_rv());
  o.timeout_seconds = 30;
  o.canceller = std::make_shared<WatchCanceller>();
  std::vector<std::string> names;
  std::atomic<int> seen{0};
  std::thread writer([&] {
    for (int i = 0; i < 3; ++i) server_.Put(kWidgets, "ns", MakeWidget("ns", "w" + std::to_string(i), ""));
  });
  auto start = Clock::now();
  std::thread canceller([&] {
    // Cancel once all three arrived (polling with a deadline): the stream is then blocked in a read, which
    // Cancel must interrupt.
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline && seen.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    o.canceller->Cancel();
  });
  Status s = c->Watch(Widget::Resource(), "ns", o, [&](WatchEvent&& ev) {
    names.push_back(ev.object["metadata"]["name"]);
    seen++;
    return true;
  });
  writer.join();
  canceller.join();
  EXPECT_EQ(s.code(), core::StatusCode::kCancelled) << s;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(names, (std::vector<std::string>{"w0", "w1", "w2"}));
}

}  // namespace
}  // namespace tephra::kube
