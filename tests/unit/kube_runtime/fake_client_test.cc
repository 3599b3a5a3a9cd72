// The in-memory FakeClient behaves like the API server where tests rely on it.
#include "testing/fake_client.h"

#include <gtest/gtest.h>

#include <thread>

namespace tephra::kube::testing {
namespace {

const ResourceInfo kPods{"", "v1", "Pod", "pods", true};
const ResourceInfo kJobs{"batch.volcano.sh", "v1alpha1", "Job", "jobs", true};
const ResourceInfo kNodes{"", "v1", "Node", "nodes", false};

json PodJson(const std::string& name, std::map<std::string, std::string> labels = {}) {
  json j = {{"metadata", {{"name", name}}}, {"spec", {{"containers", json::array()}}}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

TEST(FakeClientTest, CreateGetAlreadyExistsAndMetadata) {
  core::FakeClock clock;
  FakeClient c(&clock);
  auto p = c.Create(kPods, "ns", PodJson("a"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)["metadata"]["namespace"], "ns");
  EXPECT_EQ((*p)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*p)["metadata"]["generation"], 1);
  EXPECT_FALSE((*p)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ((*p)["metadata"]["creationTimestamp"], core::FormatRfc3339(clock.WallNow()));
  EXPECT_EQ((*p)["apiVersion"], "v1");
  EXPECT_EQ((*p)["kind"], "Pod");
  auto dup = c.Create(kPods, "ns", PodJson("a"));
  EXPECT_TRUE(core::IsAlreadyExists(dup.status()));
  EXPECT_EQ(dup.status().http_status(), 409);
  EXPECT_TRUE(c.Create(kPods, "other", PodJson("a")).ok());  // namespaces are separate
  EXPECT_EQ(*c.Get(kPods, "ns", "a"), *p);
  EXPECT_TRUE(core::IsNotFound(c.Get(kPods, "ns", "zz").status()));
  EXPECT_TRUE(core::IsNotFound(c.Get(kJobs, "ns", "a").status()));  // resources are separate
}

TEST(FakeClientTest, GenerateNameAndClusterScoped) {
  FakeClient c;
  auto p = c.Create(kPods, "ns", json{{"metadata", {{"generateName", "job-"}}}});
  ASSERT_TRUE(p.ok());
  std::string name = (*p)["metadata"]["name"];
  EXPECT_EQ(name.rfind("job-", 0), 0u);
  EXPECT_EQ(name.size(), 9u);
  EXPECT_EQ(c.Create(kPods, "ns", json{{"metadata", json::object()}}).status().code(),
            core::StatusCode::kInvalidArgument);
  auto n = c.Create(kNodes, "", json{{"metadata", {{"name", "n1"}}}});
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE((*n)["metadata"].contains("namespace"));
  EXPECT_TRUE(c.Get(kNodes, "", "n1").ok());
}

TEST(FakeClientTest, UpdateEnforcesResourceVersionAndStatusSubresource) {
  FakeClient c;
  auto p = *c.Create(kPods, "ns", PodJson("a"));
  json stale = p;
  json upd = p;
  upd["spec"]["nodeSelector"] = {{"gpu", "a100"}};
  upd["status"] = {{"phase", "Running"}};  // ignored on the main resource
  auto u = c.Update(kPods, "ns", upd);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ((*u)["metadata"]["resourceVersion"], "2");
  EXPECT_EQ((*u)["metadata"]["generation"], 2);
  EXPECT_FALSE((*u).contains("status"));
  // Stale RV -> 409 Conflict as kAborted.
  stale["spec"]["nodeSelector"] = {{"x", "y"}};
  auto conflict = c.Update(kPods, "ns", stale);
  EXPECT_TRUE(core::IsConflict(conflict.status()));
  EXPECT_EQ(conflict.status().reason(), "Conflict");
  // Status subresource changes only status and does not bump generation.
  json st = *u;
  st["status"] = {{"phase", "Running"}};
  st["spec"]["nodeSelector"] = {{"ignored", "yes"}};
  auto s = c.Update(kPods, "ns", st, "status");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)["status"]["phase"], "Running");
  EXPECT_EQ((*s)["spec"]["nodeSelector"]["gpu"], "a100");
  EXPECT_EQ((*s)["metadata"]["generation"], 2);
  // A no-op update keeps the resourceVersion.
  auto same = c.Update(kPods, "ns", *s);
  EXPECT_EQ((*same)["metadata"]["resourceVersion"], (*s)["metadata"]["resourceVersion"]);
  // Empty RV means unconditional.
  json blind = *s;
  blind["metadata"].erase("resourceVersion");
  blind["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_TRUE(c.Update(kPods, "ns", blind).ok());
}

TEST(FakeClientTest, MergeAndJsonPatch) {
  FakeClient c;
  c.Create(kPods, "ns", PodJson("a", {{"x", "1"}})).value();
  auto m = c.Patch(kPods, "ns", "a", PatchType::kMerge, json{{"metadata", {{"labels", {{"y", "2"}, {"x", nullptr}}}}}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)["metadata"]["labels"], (json{{"y", "2"}}));
  auto jp = c.Patch(kPods, "ns", "a", PatchType::kJson,
                    json::array({{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"k", "v"}}}}}));
  ASSERT_TRUE(jp.ok()) << jp.status();
  EXPECT_EQ((*jp)["metadata"]["annotations"]["k"], "v");
  auto bad = c.Patch(kPods, "ns", "a", PatchType::kJson, json::array({{{"op", "remove"}, {"path", "/nope"}}}));
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  auto st = c.Patch(kPods, "ns", "a", PatchType::kMerge, json{{"status", {{"phase", "Failed"}}}}, "status");
  EXPECT_EQ((*st)["status"]["phase"], "Failed");
  // A patch carrying an old resourceVersion is a precondition.
  auto pre = c.Patch(kPods, "ns", "a", PatchType::kMerge, json{{"metadata", {{"resourceVersion", "1"}}}});
  EXPECT_TRUE(core::IsConflict(pre.status()));
  EXPECT_TRUE(core::IsNotFound(c.Patch(kPods, "ns", "zz", PatchType::kMerge, json::object()).status()));
}

TEST(FakeClientTest, DeleteWithFinalizersAndPreconditions) {
  FakeClient c;
  json j = PodJson("a");
  j["metadata"]["finalizers"] = {"tephra.io/cleanup"};
  auto p = *c.Create(kPods, "ns", j);
  DeleteOptions wrong;
  wrong.precondition_uid = "other";
  EXPECT_TRUE(core::IsConflict(c.Delete(kPods, "ns", "a", wrong)));
  ASSERT_TRUE(c.Delete(kPods, "ns", "a").ok());
  auto marked = *c.Get(kPods, "ns", "a");
  EXPECT_TRUE(marked["metadata"].contains("deletionTimestamp"));
  marked["metadata"]["finalizers"] = json::array();
  ASSERT_TRUE(c.Update(kPods, "ns", marked).ok());
  EXPECT_TRUE(core::IsNotFound(c.Get(kPods, "ns", "a").status()));
  EXPECT_TRUE(core::IsNotFound(c.Delete(kPods, "ns", "a")));
}

TEST(FakeClientTest, BindAndEvict) {
  FakeClient c;
  auto p = *c.Create(kPods, "ns", PodJson("a"));
  std::string uid = p["metadata"]["uid"];
  EXPECT_TRUE(core::IsConflict(c.Bind("ns", "a", "wrong-uid", "n1")));
  ASSERT_TRUE(c.Bind("ns", "a", uid, "n1").ok());
  EXPECT_EQ((*c.Get(kPods, "ns", "a"))["spec"]["nodeName"], "n1");
  auto again = c.Bind("ns", "a", uid, "n2");
  EXPECT_TRUE(core::IsConflict(again));
  EXPECT_EQ(again.reason(), "Conflict");
  EXPECT_TRUE(core::IsNotFound(c.Bind("ns", "zz", "", "n1")));
  ASSERT_TRUE(c.Evict("ns", "a").ok());
  EXPECT_TRUE(core::IsNotFound(c.Get(kPods, "ns", "a").status()));
}

TEST(FakeClientTest, ListSelectorsAndPaging) {
  FakeClient c;
  for (int i = 0; i < 5; ++i) c.Create(kPods, "ns", PodJson("p" + std::to_string(i), {{"app", i % 2 ? "odd" : "even"}})).value();
  c.Create(kPods, "other", PodJson("q", {{"app", "odd"}})).value();
  ListOptions o;
  o.label_selector = "app=odd";
  EXPECT_EQ(c.List(kPods, "ns", o)->items.size(), 2u);
  EXPECT_EQ(c.List(kPods, "", o)->items.size(), 3u);
  o.label_selector = "app!=odd";
  EXPECT_EQ(c.List(kPods, "ns", o)->items.size(), 3u);
  o.label_selector = "!app";
  EXPECT_EQ(c.List(kPods, "ns", o)->items.size(), 0u);
  o.label_selector = "app in (odd,none)";
  EXPECT_EQ(c.List(kPods, "ns", o)->items.size(), 2u);
  o.label_selector = "app in (odd";
  EXPECT_EQ(c.List(kPods, "ns", o).status().code(), core::StatusCode::kInvalidArgument);
  ListOptions f;
  f.field_selector = "metadata.name=p3";
  EXPECT_EQ(c.List(kPods, "", f)->items.size(), 1u);
  ListOptions page;
  page.limit = 2;
  std::vector<std::string> names;
  while (true) {
    auto l = *c.List(kPods, "ns", page);
    for (auto& i : l.items) names.push_back(i["metadata"]["name"]);
    if (l.metadata.continue_token.empty()) break;
    page.continue_token = l.metadata.continue_token;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));
  EXPECT_EQ(c.List(kPods, "ns", {})->metadata.resource_version, std::to_string(c.CurrentResourceVersion()));
}

TEST(FakeClientTest, WatchReplaysFromResourceVersionAndStreamsLive) {
  FakeClient c;
  c.Create(kPods, "ns", PodJson("a")).value();
  std::string rv = std::to_string(c.CurrentResourceVersion());
  c.Create(kPods, "ns", PodJson("b")).value();
  std::vector<std::pair<WatchEvent::Type, std::string>> got;
  ListOptions o;
  o.resource_version = rv;
  std::thread t([&] {
    Status s = c.Watch(kPods, "ns", o, [&](WatchEvent&& e) {
      got.emplace_back(e.type, e.object["metadata"]["name"]);
      return got.size() < 2;
    });
    EXPECT_TRUE(s.ok());
  });
  // "b" is replayed; then live events.
  while (c.ActiveWatches() == 0) std::this_thread::yield();
  c.Create(kPods, "other", PodJson("ignored")).value();  // other namespace: filtered out
  ASSERT_TRUE(c.Delete(kPods, "ns", "a").ok());
  t.join();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(WatchEvent::Type::kAdded, std::string("b")));
  EXPECT_EQ(got[1], std::make_pair(WatchEvent::Type::kDeleted, std::string("a")));
}

TEST(FakeClientTest, WatchWithoutRvSendsSyntheticAddsAndCloseEndsIt) {
  FakeClient c;
  c.Create(kPods, "ns", PodJson("a")).value();
  int adds = 0;
  std::thread t([&] {
    EXPECT_TRUE(c.Watch(kPods, "", {}, [&](WatchEvent&& e) {
      adds += e.type == WatchEvent::Type::kAdded;
      return true;
    }).ok());
  });
  while (c.ActiveWatches() == 0) std::this_thread::yield();
  c.CloseWatches();
  t.join();
  EXPECT_EQ(adds, 1);
}

TEST(FakeClientTest, CompactMakesOldResourceVersionsGone) {
  FakeClient c;
  c.Create(kPods, "ns", PodJson("a")).value();
  c.Create(kPods, "ns", PodJson("b")).value();
  c.Compact();
  ListOptions old;
  old.resource_version = "1";
  Status s = c.Watch(kPods, "ns", old, [](WatchEvent&&) { return false; });
  EXPECT_TRUE(core::IsGone(s)) << s;
  EXPECT_EQ(s.http_status(), 410);
}

TEST(FakeClientTest, FailureInjectionAndActions) {
  FakeClient c;
  int n = 0;
  c.SetFailureInjector([&](const Action& a) -> std::optional<Status> {
    if (a.verb == "create" && n++ == 0) return core::UnavailableError("injected").WithHttp(503, "ServiceUnavailable");
    return std::nullopt;
  });
  EXPECT_TRUE(core::IsUnavailable(c.Create(kPods, "ns", PodJson("a")).status()));
  EXPECT_TRUE(core::IsNotFound(c.Get(kPods, "ns", "a").status()));  // the failed call had no effect
  EXPECT_TRUE(c.Create(kPods, "ns", PodJson("a")).ok());
  auto acts = c.Actions();
  ASSERT_EQ(acts.size(), 3u);
  EXPECT_EQ(acts[0].verb, "create");
  EXPECT_EQ(acts[0].resource, "pods");
  EXPECT_EQ(acts[1].verb, "get");
  c.ClearActions();
  EXPECT_TRUE(c.Actions().empty());
  EXPECT_EQ(c.Raw("GET", "/version", nullptr).status().code(), core::StatusCode::kUnimplemented);
  c.SetRawHandler([](const std::string&, const std::string& path, const json*) -> StatusOr<json> {
    return json{{"path", path}};
  });
  EXPECT_EQ((*c.Raw("GET", "/version", nullptr))["path"], "/version");
  EXPECT_EQ(ResourceName(kJobs), "jobs.batch.volcano.sh");
}

}  // namespace
}  // namespace tephra::kube::testing

namespace tephra::kube::testing {
namespace {

TEST(FakeClientWatchTest, CancellerEndsTheWatch) {
  FakeClient c;
  ListOptions o;
  o.canceller = std::make_shared<WatchCanceller>();
  Status s;
  std::thread t([&] { s = c.Watch(kPods, "", o, [](WatchEvent&&) { return true; }); });
  while (c.ActiveWatches() == 0) std::this_thread::yield();
  o.canceller->Cancel();
  t.join();
  EXPECT_EQ(s.code(), core::StatusCode::kCancelled);
  // Already cancelled: the stream does not start.
  EXPECT_EQ(c.Watch(kPods, "", o, [](WatchEvent&&) { return true; }).code(), core::StatusCode::kCancelled);
}

}  // namespace
}  // namespace tephra::kube::testing
