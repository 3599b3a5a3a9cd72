// REST client internals: paths, queries, the HTTP -> Status table, the token bucket; and the client over a
// scripted in-process Transport (retries, Retry-After, watch frame decoding) without sockets.
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include "rest/rest_internal.h"
#include "tephra/kube/caught.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {
namespace {

using core::StatusCode;

const ResourceInfo kPods{"", "v1", "Pod", "pods", true};
const ResourceInfo kNodes{"", "v1", "Node", "nodes", false};
const ResourceInfo kJobs{"batch.volcano.sh", "v1alpha1", "Job", "jobs", true};

TEST(ResourcePathTest, CoreGroupNamespacedAndCluster) {
  EXPECT_EQ(rest::ResourcePath(kPods, "ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(rest::ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(rest::ResourcePath(kNodes, "ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(rest::ResourcePath(kJobs, "ns", "j"), "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j");
  EXPECT_EQ(rest::ResourcePath(kJobs, "ns"), "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs");
}

TEST(ListQueryTest, EscapesAndOrders) {
  ListOptions o;
  o.label_selector = "app=a,tier in (x, y)";
  o.limit = 500;
  o.continue_token = "abc/=";
  o.resource_version = "0";
  EXPECT_EQ(rest::ListQuery(o, false),
            "?labelSelector=app%3Da%2Ctier%20in%20%28x%2C%20y%29&limit=500&continue=abc%2F%3D&resourceVersion=0");
  ListOptions w;
  w.resource_version = "42";
  w.allow_watch_bookmarks = true;
  w.timeout_seconds = 300;
  w.limit = 5;  // ignored for watches
  EXPECT_EQ(rest::ListQuery(w, true), "?watch=true&resourceVersion=42&allowWatchBookmarks=true&timeoutSeconds=300");
  EXPECT_EQ(rest::ListQuery(ListOptions{}, false), "");
}

TEST(StatusMappingTest, Table) {
  auto m = [](int code, const std::string& reason, const std::string& verb = "get") {
    std::string body = reason.empty() ? "" : R"({"kind":"Status","reason":")" + reason + R"(","message":"msg"})";
    return rest::StatusFromResponse(code, body, "", verb, "pods ns/p");
  };
  EXPECT_EQ(m(404, "NotFound").code(), StatusCode::kNotFound);
  EXPECT_EQ(m(409, "AlreadyExists", "create").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(m(409, "Conflict", "update").code(), StatusCode::kAborted);
  EXPECT_EQ(m(409, "Conflict", "create").code(), StatusCode::kAborted);  // e.g. a conflicting subresource POST
  EXPECT_EQ(m(409, "Conflict", "bind").code(), StatusCode::kAborted);
  EXPECT_EQ(m(400, "BadRequest").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m(422, "Invalid").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m(401, "Unauthorized").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(m(403, "Forbidden").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(m(429, "TooManyRequests").code(), StatusCode::kUnavailable);
  EXPECT_EQ(m(500, "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(m(503, "").code(), StatusCode::kUnavailable);
  Status gone = m(410, "");
  EXPECT_EQ(gone.code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(core::IsGone(gone));
  EXPECT_EQ(gone.reason(), "Expired");
  Status nf = m(404, "NotFound");
  EXPECT_EQ(nf.message(), "pods ns/p: msg");
  EXPECT_EQ(nf.reason(), "NotFound");
  EXPECT_EQ(nf.http_status(), 404);
}

TEST(StatusMappingTest, RetryAfterFromHeaderOrDetails) {
  Status h = rest::StatusFromResponse(429, "", "3", "get", "x");
  ASSERT_TRUE(h.retry_after().has_value());
  EXPECT_EQ(*h.retry_after(), std::chrono::seconds(3));
  Status d = rest::StatusFromResponse(500, R"({"details":{"retryAfterSeconds":2}})", "", "get", "x");
  ASSERT_TRUE(d.retry_after().has_value());
  EXPECT_EQ(*d.retry_after(), std::chrono::seconds(2));
  EXPECT_FALSE(rest::StatusFromResponse(500, "oops", "", "get", "x").retry_after().has_value());
}

TEST(TokenBucketTest, BurstThenRate) {
  rest::TokenBucket b(10, 3);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.Reserve(t0).count(), 0) << i;
  // 4th and 5th must wait 100 ms and 200 ms at 10 qps.
  EXPECT_NEAR(std::chrono::duration<double>(b.Reserve(t0)).count(), 0.1, 1e-6);
  EXPECT_NEAR(std::chrono::duration<double>(b.Reserve(t0)).count(), 0.2, 1e-6);
  // 10 s later the debt (-2) is repaid and savings are capped at the burst (3).
  auto t1 = t0 + std::chrono::seconds(10);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.Reserve(t1).count(), 0) << i;
  EXPECT_GT(b.Reserve(t1).count(), 0);
}

TEST(TokenBucketTest, ZeroQpsIsUnlimited) {
  rest::TokenBucket b(0, 1);
  auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(b.Reserve(t).count(), 0);
}

// A Transport answering from a script, recording requests.
class ScriptedTransport : public Transport {
 public:
  std::deque<core::StatusOr<HttpResponse>> replies;
  std::vector<std::string> stream_lines;
  int stream_status = 200;
  std::vector<HttpRequest> seen;
  core::StatusOr<HttpResponse> Do(const HttpRequest& req) override {
    seen.push_back(req);
    if (replies.empty()) return core::InternalError("script exhausted");
    auto r = replies.front();
    replies.pop_front();
    return r;
  }
  Status Stream(const HttpRequest& req, HttpResponse* head, const std::function<bool(std::string_view)>& on_line,
                const std::shared_ptr<WatchCanceller>&) override {
    seen.push_back(req);
    head->status = stream_status;
    if (stream_status != 200) {
      head->body = R"({"kind":"Status","code":410,"reason":"Expired","message":"too old"})";
      return Status::OK();
    }
    for (const auto& l : stream_lines)
      if (!on_line(l)) break;
    return Status::OK();
  }
};

HttpResponse Resp(int code, std::string body, Headers h = {}) {
  HttpResponse r;
  r.status = code;
  r.body = std::move(body);
  r.headers = std::move(h);
  return r;
}

RestConfig FastConfig() {
  RestConfig cfg;
  cfg.server = "http://unused";
  cfg.qps = 0;
  cfg.retry_initial = std::chrono::milliseconds(1);
  cfg.retry_max = std::chrono::milliseconds(2);
  cfg.token = "t0k";
  return cfg;
}

TEST(RestClientTest, RetriesUnavailableThenSucceeds) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(core::UnavailableError("connection reset"));
  t->replies.push_back(Resp(503, ""));
  t->replies.push_back(Resp(200, R"({"metadata":{"name":"p"}})"));
  auto c = NewRestClient(FastConfig(), t);
  auto got = c->Get(kPods, "ns", "p");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["metadata"]["name"], "p");
  ASSERT_EQ(t->seen.size(), 3u);
  EXPECT_EQ(t->seen[0].path, "/api/v1/namespaces/ns/pods/p");
  bool has_auth = false;
  for (const auto& [k, v] : t->seen[0].headers) has_auth |= (k == "Authorization" && v == "Bearer t0k");
  EXPECT_TRUE(has_auth);
}

TEST(RestClientTest, CountsEveryAttemptByClientMethodAndCode) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(core::UnavailableError("connection reset"));
  t->replies.push_back(Resp(503, ""));
  t->replies.push_back(Resp(200, "{}"));
  t->replies.push_back(Resp(201, "{}"));
  RestConfig cfg = FastConfig();
  cfg.user_agent = "tephra-test/counting";  // unique to this test: the counts are process-wide
  auto c = NewRestClient(cfg, t);
  ASSERT_TRUE(c->Get(kPods, "ns", "p").ok());
  ASSERT_TRUE(c->Bind("ns", "p", "", "n1").ok());
  std::map<std::string, uint64_t> got;
  for (const auto& r : RestRequestCounts())
    if (r.client == cfg.user_agent) got[r.method + " " + std::to_string(r.code)] = r.count;
  EXPECT_EQ(got, (std::map<std::string, uint64_t>{{"GET 0", 1}, {"GET 503", 1}, {"GET 200", 1}, {"POST 201", 1}}));
}

TEST(RestClientTest, DoesNotRetryTerminalErrors) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(Resp(422, R"({"kind":"Status","reason":"Invalid","message":"spec.x: bad"})"));
  auto c = NewRestClient(FastConfig(), t);
  auto r = c->Create(kPods, "ns", json{{"metadata", {{"name", "p"}}}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->seen.size(), 1u);
  EXPECT_EQ(t->seen[0].method, "POST");
  EXPECT_EQ(t->seen[0].path, "/api/v1/namespaces/ns/pods");
}

TEST(RestClientTest, PatchContentTypesAndDeleteBody) {
  auto t = std::make_shared<ScriptedTransport>();
  for (int i = 0; i < 4; ++i) t->replies.push_back(Resp(200, "{}"));
  auto c = NewRestClient(FastConfig(), t);
  ASSERT_TRUE(c->Patch(kJobs, "ns", "j", PatchType::kMerge, json::object(), "status").ok());
  ASSERT_TRUE(c->Patch(kJobs, "ns", "j", PatchType::kJson, json::array()).ok());
  ASSERT_TRUE(c->Patch(kPods, "ns", "p", PatchType::kStrategicMerge, json::object()).ok());
  DeleteOptions d;
  d.propagation_policy = "Foreground";
  d.precondition_uid = "u1";
  ASSERT_TRUE(c->Delete(kPods, "ns", "p", d).ok());
  EXPECT_EQ(t->seen[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(t->seen[0].path, "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status");
  EXPECT_EQ(t->seen[1].content_type, "application/json-patch+json");
  EXPECT_EQ(t->seen[2].content_type, "application/strategic-merge-patch+json");
  auto body = json::parse(t->seen[3].body);
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u1");
}

TEST(RestClientTest, WatchDecodesFramesAndInStreamErrors) {
  auto t = std::make_shared<ScriptedTransport>();
  t->stream_lines = {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})", "",
                     R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6"}}})",
                     R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"old"}})",
                     R"({"type":"ADDED","object":{}})"};
  auto c = NewRestClient(FastConfig(), t);
  std::vector<WatchEvent::Type> types;
  ListOptions o;
  o.timeout_seconds = 10;
  Status s = c->Watch(kPods, "", o, [&](WatchEvent&& e) {
    types.push_back(e.type);
    return true;
  });
  EXPECT_TRUE(core::IsGone(s)) << s;
  EXPECT_EQ(types, (std::vector<WatchEvent::Type>{WatchEvent::Type::kAdded, WatchEvent::Type::kBookmark}));
  // Read timeout = timeoutSeconds + slack, so a quiet stream ends by the server's timeout first.
  EXPECT_EQ(t->seen[0].timeout, std::chrono::seconds(10) + FastConfig().watch_slack);

  t->stream_lines = {R"({"type":"ADDED","object":{"metadata":{"na)"};
  s = c->Watch(kPods, "", o, [&](WatchEvent&&) { return true; });
  EXPECT_TRUE(core::IsUnavailable(s)) << s;  // a cut line is a dropped stream

  t->stream_status = 410;
  s = c->Watch(kPods, "", o, [&](WatchEvent&&) { return true; });
  EXPECT_TRUE(core::IsGone(s)) << s;
  EXPECT_EQ(s.http_status(), 410);
}

TEST(RestClientTest, ListAllFollowsContinue) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(Resp(200, R"({"metadata":{"resourceVersion":"9","continue":"c1"},"items":[{"a":1}]})"));
  t->replies.push_back(Resp(200, R"({"metadata":{"resourceVersion":"9"},"items":[{"a":2},{"a":3}]})"));
  auto c = NewRestClient(FastConfig(), t);
  ListOptions o;
  o.limit = 1;
  o.resource_version = "0";
  auto all = ListAll(*c, kPods, "", o);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->items.size(), 3u);
  EXPECT_EQ(all->metadata.resource_version, "9");
  EXPECT_EQ(t->seen[1].path, "/api/v1/pods?limit=1&continue=c1");  // no resourceVersion with a continue token
}

std::string DeepArray(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

uint64_t Skipped(const std::string& resource) {
  for (const auto& [res, n] : SkippedObjects())
    if (res == resource) return n;
  return 0;
}

// Issue 41: a JobTemplate holding a 600-deep array (the API server stores it) used to end every watch at that
// event and fail every LIST, so the informer never synced. Now it is passed over, counted, and the rest flows.
TEST(RestClientTest, WatchPassesOverAnObjectTooDeepToDecode) {
  auto t = std::make_shared<ScriptedTransport>();
  t->stream_lines = {
      R"({"type":"ADDED","object":{"metadata":{"name":"deep","namespace":"t","resourceVersion":"5"},"spec":{"x":)" +
          DeepArray(600) + "}}}",
      R"({"type":"ADDED","object":{"metadata":{"name":"fine","resourceVersion":"6"}}})"};
  auto c = NewRestClient(FastConfig(), t);
  std::vector<std::string> seen;
  ListOptions o;
  o.timeout_seconds = 10;
  const uint64_t before = Skipped("pods");
  Status s = c->Watch(kPods, "", o, [&](WatchEvent&& e) {
    seen.push_back(e.object["metadata"]["name"].get<std::string>());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, std::vector<std::string>{"fine"});
  EXPECT_EQ(Skipped("pods"), before + 1);
}

TEST(RestClientTest, ListSkipsAnItemTooDeepToDecode) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(Resp(200, R"({"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}},)"
                                 R"({"metadata":{"name":"deep","namespace":"t"},"spec":{"x":)" + DeepArray(600) +
                                     R"(}},{"metadata":{"name":"c"}}]})",
                            {{"Content-Type", "application/json"}}));
  auto c = NewRestClient(FastConfig(), t);
  const uint64_t before = Skipped("pods");
  auto all = ListAll(*c, kPods, "", ListOptions{});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_EQ(all->items[0]["metadata"]["name"], "a");
  EXPECT_EQ(all->items[1]["metadata"]["name"], "c");
  EXPECT_EQ(all->metadata.resource_version, "9");
  EXPECT_EQ(Skipped("pods"), before + 1);
  // A GET of it is a clear error, not a crash.
  t->replies.push_back(Resp(200, R"({"metadata":{"name":"deep"},"spec":)" + DeepArray(600) + "}",
                            {{"Content-Type", "application/json"}}));
  EXPECT_FALSE(c->Get(kPods, "t", "deep", "").ok());
}

// Text that is not UTF-8 in an object is replaced on the wire, never thrown on.
TEST(RestClientTest, InvalidUtf8InABodyIsReplacedNotThrown) {
  auto t = std::make_shared<ScriptedTransport>();
  t->replies.push_back(Resp(201, R"({"metadata":{"name":"e"}})"));
  auto c = NewRestClient(FastConfig(), t);
  json ev = {{"metadata", {{"name", "e"}}}, {"message", std::string("cut in half: \xC3")}};
  auto r = c->Create(kPods, "default", ev);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(t->seen[0].body.find("\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace tephra::kube
