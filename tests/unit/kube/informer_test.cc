// Informer cache semantics, driven through the ReflectorSink interface (no threads), and the reflector loop
// over a scripted Client (list/watch outcomes decided by the test; backoffs of 1 ms).
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "test_kind.h"
#include "tephra/kube/informer.h"

namespace tephra::kube {
namespace {

using testkind::MakeWidget;
using testkind::Widget;
using Type = WatchEvent::Type;

struct Log {
  std::vector<std::string> entries;
  Informer<Widget>::Handlers Handlers() {
    return {[this](const auto& o) { entries.push_back("add " + o->metadata.Key()); },
            [this](const auto& a, const auto& b) {
              entries.push_back("update " + b->metadata.Key() + " " + a->metadata.resource_version + "->" +
                                b->metadata.resource_version);
            },
            [this](const auto& o) { entries.push_back("delete " + o->metadata.Key()); }};
  }
};

std::vector<json> Items(std::initializer_list<json> l) { return std::vector<json>(l); }

TEST(InformerCacheTest, ReplaceDiffsAgainstCache) {
  Informer<Widget> inf(nullptr);
  Log log;
  inf.AddEventHandler(log.Handlers());
  inf.Replace(Items({MakeWidget("a", "x", "1"), MakeWidget("a", "y", "2")}));
  EXPECT_EQ(inf.Size(), 2u);
  log.entries.clear();
  inf.Replace(Items({MakeWidget("a", "x", "1"), MakeWidget("a", "y", "3"), MakeWidget("b", "z", "4")}));
  std::sort(log.entries.begin(), log.entries.end());
  EXPECT_EQ(log.entries, (std::vector<std::string>{"add b/z", "update a/y 2->3"}));
  log.entries.clear();
  inf.Replace(Items({MakeWidget("b", "z", "4")}));
  std::sort(log.entries.begin(), log.entries.end());
  EXPECT_EQ(log.entries, (std::vector<std::string>{"delete a/x", "delete a/y"}));
  EXPECT_EQ(inf.Size(), 1u);
}

TEST(InformerCacheTest, ApplyDropsDuplicatesAndUnknownDeletes) {
  Informer<Widget> inf(nullptr);
  Log log;
  inf.AddEventHandler(log.Handlers());
  inf.Apply(Type::kAdded, MakeWidget("n", "w", "5"));
  inf.Apply(Type::kAdded, MakeWidget("n", "w", "5"));     // replayed after a reconnect
  inf.Apply(Type::kModified, MakeWidget("n", "w", "5"));  // same RV again
  inf.Apply(Type::kModified, MakeWidget("n", "w", "6", 2));
  inf.Apply(Type::kDeleted, MakeWidget("n", "w", "7"));
  inf.Apply(Type::kDeleted, MakeWidget("n", "w", "7"));  // already gone
  inf.Apply(Type::kModified, MakeWidget("n", "v", "8"));  // MODIFIED for an unknown key is an add
  EXPECT_EQ(log.entries, (std::vector<std::string>{"add n/w", "update n/w 5->6", "delete n/w", "add n/v"}));
  EXPECT_EQ(inf.stats().duplicates_dropped.load(), 2);
}

TEST(InformerCacheTest, IndexesFollowUpdatesAndDeletes) {
  Informer<Widget> inf(nullptr);
  inf.AddIndexer(kIndexOwnerUid, OwnerUidIndexer<Widget>());
  inf.Apply(Type::kAdded, MakeWidget("n1", "a", "1", 1, "job-1"));
  inf.Apply(Type::kAdded, MakeWidget("n1", "b", "2", 1, "job-1"));
  inf.Apply(Type::kAdded, MakeWidget("n2", "c", "3", 1, "job-2"));
  EXPECT_EQ(inf.ByIndex(kIndexOwnerUid, "job-1").size(), 2u);
  EXPECT_EQ(inf.ListNamespace("n1").size(), 2u);
  inf.Apply(Type::kModified, MakeWidget("n1", "b", "4", 1, "job-2"));
  EXPECT_EQ(inf.ByIndex(kIndexOwnerUid, "job-1").size(), 1u);
  EXPECT_EQ(inf.ByIndex(kIndexOwnerUid, "job-2").size(), 2u);
  inf.Apply(Type::kDeleted, MakeWidget("n2", "c", "5"));
  EXPECT_EQ(inf.ByIndex(kIndexOwnerUid, "job-2").size(), 1u);
  EXPECT_TRUE(inf.ListNamespace("n2").empty());
  // An indexer added later indexes what is already cached.
  inf.AddIndexer("size", [](const Widget& w) { return std::vector<std::string>{std::to_string(w.size)}; });
  EXPECT_EQ(inf.ByIndex("size", "1").size(), 2u);
  EXPECT_TRUE(inf.ByIndex("missing", "x").empty());
}

TEST(InformerCacheTest, LateHandlersSeeExistingObjectsAsAdds) {
  Informer<Widget> inf(nullptr);
  inf.Apply(Type::kAdded, MakeWidget("n", "a", "1"));
  Log log;
  inf.AddEventHandler(log.Handlers());
  EXPECT_EQ(log.entries, std::vector<std::string>{"add n/a"});
}

TEST(InformerCacheTest, TransformAndDropUnknown) {
  json w = MakeWidget("n", "a", "1");
  w["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  w["status"] = {{"big", std::string(100, 'x')}};
  {
    Informer<Widget> inf(nullptr);
    inf.Apply(Type::kAdded, json(w));
    auto o = inf.Get("n/a");
    ASSERT_TRUE(o);
    EXPECT_FALSE(o->metadata.extra.contains("managedFields"));  // default transform strips it
    EXPECT_TRUE(o->extra.contains("status"));                   // unknown fields kept by default
  }
  {
    InformerOptions opts;
    opts.drop_unknown_fields = true;
    opts.transform = [](json* j) { (*j)["spec"]["size"] = 42; };
    Informer<Widget> inf(nullptr, opts);
    inf.Apply(Type::kAdded, json(w));
    auto o = inf.Get("n/a");
    ASSERT_TRUE(o);
    EXPECT_EQ(o->size, 42);
    EXPECT_TRUE(o->extra.is_null());
    EXPECT_TRUE(o->metadata.extra.is_null());
  }
}

TEST(InformerCacheTest, UndecodableObjectsAreCountedNotCached) {
  Informer<Widget> inf(nullptr);
  json bad = MakeWidget("n", "a", "1");
  bad["metadata"]["labels"] = "not-a-map";
  inf.Apply(Type::kAdded, std::move(bad));
  EXPECT_EQ(inf.Size(), 0u);
  EXPECT_EQ(inf.stats().decode_errors.load(), 1);
}

// A Client whose List/Watch outcomes come from a script. Watch events are delivered synchronously.
class ScriptedClient : public Client {
 public:
  struct WatchScript {
    std::vector<WatchEvent> events;
    Status end;
  };
  std::mutex mu;
  std::deque<StatusOr<ObjectList>> lists;
  std::deque<WatchScript> watches;
  std::vector<ListOptions> list_calls, watch_calls;
  std::function<void()> on_exhausted;

  StatusOr<ObjectList> List(const ResourceInfo&, const std::string&, const ListOptions& o) override {
    std::lock_guard l(mu);
    list_calls.push_back(o);
    if (lists.empty()) return core::UnavailableError("no more lists");
    auto r = lists.front();
    lists.pop_front();
    return r;
  }
  Status Watch(const ResourceInfo&, const std::string&, const ListOptions& o,
               const std::function<bool(WatchEvent&&)>& h) override {
    WatchScript w;
    {
      std::lock_guard l(mu);
      watch_calls.push_back(o);
      if (watches.empty()) {
        if (on_exhausted) on_exhausted();
        return core::UnavailableError("script exhausted");
      }
      w = watches.front();
      watches.pop_front();
    }
    for (auto& e : w.events)
      if (!h(std::move(e))) return Status::OK();
    return w.end;
  }
  StatusOr<json> Get(const ResourceInfo&, const std::string&, const std::string&, const std::string&) override { return json(); }
  StatusOr<json> Create(const ResourceInfo&, const std::string&, const json&, const std::string&) override { return json(); }
  StatusOr<json> Update(const ResourceInfo&, const std::string&, const json&, const std::string&) override { return json(); }
  StatusOr<json> Patch(const ResourceInfo&, const std::string&, const std::string&, PatchType, const json&,
                       const std::string&) override { return json(); }
  Status Delete(const ResourceInfo&, const std::string&, const std::string&, const DeleteOptions&) override { return {}; }
  Status Bind(const std::string&, const std::string&, const std::string&, const std::string&,
              const std::map<std::string, std::string>&) override {
    return {};
  }
  Status Evict(const std::string&, const std::string&, const DeleteOptions&) override { return {}; }
  StatusOr<json> Raw(const std::string&, const std::string&, const json*, const std::string&) override { return json(); }
};

ObjectList ListOf(const std::string& rv, std::vector<json> items) {
  ObjectList l;
  l.metadata.resource_version = rv;
  l.items = std::move(items);
  return l;
}
WatchEvent Ev(Type t, json o) { return WatchEvent{t, std::move(o)}; }
json Bookmark(const std::string& rv) { return {{"metadata", {{"resourceVersion", rv}}}}; }

TEST(ReflectorTest, ReconnectsFromLastRvAndRelistsOnGone) {
  auto c = std::make_shared<ScriptedClient>();
  c->lists.push_back(ListOf("10", {MakeWidget("n", "a", "9"), MakeWidget("n", "b", "10")}));
  // Watch 1: an event, a bookmark, then a dropped connection.
  c->watches.push_back({{Ev(Type::kModified, MakeWidget("n", "a", "11")), Ev(Type::kBookmark, Bookmark("15"))},
                        core::UnavailableError("reset")});
  // Watch 2: normal end (server timeout).
  c->watches.push_back({{Ev(Type::kAdded, MakeWidget("n", "c", "16"))}, Status::OK()});
  // Watch 3: 410.
  c->watches.push_back({{}, core::OutOfRangeError("too old").WithHttp(410, "Expired")});
  // Relist: b vanished.
  c->lists.push_back(ListOf("30", {MakeWidget("n", "a", "11"), MakeWidget("n", "c", "16")}));
  InformerOptions opts;
  opts.backoff_initial = std::chrono::milliseconds(1);
  opts.backoff_max = std::chrono::milliseconds(2);
  auto inf = std::make_unique<Informer<Widget>>(c, opts);
  Log log;
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  c->on_exhausted = [&] {
    std::lock_guard l(done_mu);
    done = true;
    done_cv.notify_all();
  };
  inf->AddEventHandler(log.Handlers());
  inf->Start();
  {
    std::unique_lock l(done_mu);
    ASSERT_TRUE(done_cv.wait_for(l, std::chrono::seconds(5), [&] { return done; }));
  }
  inf->Stop();
  ASSERT_EQ(c->list_calls.size(), 2u);
  EXPECT_EQ(c->list_calls[0].resource_version, "0");
  EXPECT_EQ(c->list_calls[1].resource_version, "");
  ASSERT_GE(c->watch_calls.size(), 4u);
  EXPECT_EQ(c->watch_calls[0].resource_version, "10");
  EXPECT_EQ(c->watch_calls[1].resource_version, "15");  // bookmark RV, not the last object's
  EXPECT_EQ(c->watch_calls[2].resource_version, "16");
  EXPECT_EQ(c->watch_calls[3].resource_version, "30");
  for (const auto& w : c->watch_calls) {
    EXPECT_TRUE(w.allow_watch_bookmarks);
    ASSERT_TRUE(w.timeout_seconds.has_value());
    EXPECT_GE(*w.timeout_seconds, 300);
    EXPECT_LE(*w.timeout_seconds, 600);
  }
  // Adds from one list arrive in no particular order.
  ASSERT_GE(log.entries.size(), 2u);
  std::sort(log.entries.begin(), log.entries.begin() + 2);
  EXPECT_EQ(log.entries, (std::vector<std::string>{"add n/a", "add n/b", "update n/a 9->11", "add n/c", "delete n/b"}));
  EXPECT_EQ(inf->stats().relists_after_410.load(), 1);
  EXPECT_EQ(inf->stats().lists.load(), 2);
  EXPECT_TRUE(inf->HasSynced());
}

}  // namespace
}  // namespace tephra::kube
