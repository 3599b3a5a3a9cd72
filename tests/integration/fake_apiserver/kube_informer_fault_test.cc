// Informer (reflector + cache + handlers) over the real REST client and transport, against the fake API server:
// reconnects without relist, one relist after 410 (both forms) with deletes for vanished objects, quiet watches
// with and without bookmarks, cut streams, prompt Stop.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>

#include "fake_apiserver.h"
#include "test_kind.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {
namespace {

using fakeapi::Fault;
using fakeapi::FakeApiServer;
using testkind::MakeWidget;
using testkind::Widget;
using Clock = std::chrono::steady_clock;

const char* kWidgets = "/apis/example.com/v1/widgets";

// Records handler calls: per key, the list of "add@rv", "update@rv", "delete". The informer updates its cache
// before it calls handlers, so a test that reads the recorder first waits for the calls, not only the cache.
struct Recorder {
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> calls;
  int total = 0;
  Informer<Widget>::Handlers Handlers() {
    return {.on_add = [this](const auto& o) { Add(o->metadata.Key(), "add@" + o->metadata.resource_version); },
            .on_update = [this](const auto&, const auto& n) { Add(n->metadata.Key(), "update@" + n->metadata.resource_version); },
            .on_delete = [this](const auto& o) { Add(o->metadata.Key(), "delete"); }};
  }
  void Add(const std::string& k, std::string what) {
    std::lock_guard l(mu);
    calls[k].push_back(std::move(what));
    ++total;
  }
  int Total() {
    std::lock_guard l(mu);
    return total;
  }
  std::vector<std::string> For(const std::string& k) {
    std::lock_guard l(mu);
    return calls[k];
  }
};

template <typename F>
bool PollUntil(F f, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

class InformerFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Start();
    RestConfig cfg;
    cfg.server = server_.url();
    cfg.qps = 0;
    cfg.retry_initial = std::chrono::milliseconds(5);
    cfg.retry_max = std::chrono::milliseconds(20);
    cfg.watch_slack = std::chrono::seconds(1);
    auto c = NewClient(cfg);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *c;
    opts_.namespace_ = "ns";
    opts_.backoff_initial = std::chrono::milliseconds(20);
    opts_.backoff_max = std::chrono::milliseconds(100);
    opts_.min_watch_timeout_seconds = 30;
    opts_.max_watch_timeout_seconds = 30;
  }
  std::unique_ptr<Informer<Widget>> StartInformer() {
    auto inf = std::make_unique<Informer<Widget>>(client_, opts_);
    inf->AddEventHandler(rec_.Handlers());
    inf->Start();
    EXPECT_TRUE(inf->WaitForSync(Clock::now() + std::chrono::seconds(10)));
    return inf;
  }
  std::string Rv(const json& stored) { return stored["metadata"]["resourceVersion"]; }

  FakeApiServer server_;
  ClientPtr client_;
  InformerOptions opts_;
  Recorder rec_;
};

TEST_F(InformerFaultTest, ListsFromWatchCacheThenWatches) {
  server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  server_.Put(kWidgets, "other", MakeWidget("other", "x", ""));
  auto inf = StartInformer();
  EXPECT_EQ(inf->Size(), 1u);
  EXPECT_EQ(server_.Count("list", "widgets", "resourceVersion", "0"), 1);
  auto b = server_.Put(kWidgets, "ns", MakeWidget("ns", "b", "", 5));
  ASSERT_TRUE(PollUntil([&] { return inf->Get("ns/b") != nullptr && rec_.Total() >= 2; }));
  EXPECT_EQ(inf->Get("ns", "b")->size, 5);
  EXPECT_EQ(server_.Count("watch", "widgets", "allowWatchBookmarks", "true"), server_.Count("watch", "widgets"));
  EXPECT_EQ(rec_.For("ns/b"), std::vector<std::string>{"add@" + Rv(b)});
}

TEST_F(InformerFaultTest, DropRewatchesFromLastRvWithoutRelist) {
  auto a = server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  auto inf = StartInformer();
  ASSERT_TRUE(PollUntil([&] { return server_.open_watches() == 1; }));
  auto a2 = server_.Put(kWidgets, "ns", MakeWidget("ns", "a", "", 2));
  ASSERT_TRUE(PollUntil([&] { return inf->Get("ns/a")->size == 2; }));
  // Changes made while the stream is down must arrive exactly once on the next watch.
  server_.set_watch_paused(true);
  server_.DropWatches();
  auto a3 = server_.Put(kWidgets, "ns", MakeWidget("ns", "a", "", 3));
  auto c = server_.Put(kWidgets, "ns", MakeWidget("ns", "c", ""));
  server_.set_watch_paused(false);
  ASSERT_TRUE(PollUntil([&] { return inf->Get("ns/c") != nullptr && inf->Get("ns/a")->size == 3 && rec_.Total() >= 4; }));
  EXPECT_EQ(inf->stats().lists.load(), 1);
  EXPECT_EQ(inf->stats().relists_after_410.load(), 0);
  EXPECT_GE(server_.Count("watch", "widgets"), 2);
  EXPECT_EQ(server_.Count("watch", "widgets", "resourceVersion", Rv(a2)), 1);  // re-watch from the last RV
  EXPECT_EQ(rec_.For("ns/a"), (std::vector<std::string>{"add@" + Rv(a), "update@" + Rv(a2), "update@" + Rv(a3)}));
  EXPECT_EQ(rec_.For("ns/c"), std::vector<std::string>{"add@" + Rv(c)});
}

// docs/failure-scenarios.md, scenario 2 (410 Gone when resuming a watch), in both forms.
class GoneTest : public InformerFaultTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GoneTest, RelistsOnceAndDeliversDiff) {
  server_.set_gone_in_stream(GetParam());
  server_.Put(kWidgets, "ns", MakeWidget("ns", "keep", ""));
  server_.Put(kWidgets, "ns", MakeWidget("ns", "vanish", ""));
  auto change = server_.Put(kWidgets, "ns", MakeWidget("ns", "change", ""));
  auto inf = StartInformer();
  ASSERT_TRUE(PollUntil([&] { return server_.open_watches() == 1; }));
  server_.set_watch_paused(true);
  server_.Remove(kWidgets, "ns", "vanish");
  auto changed = server_.Put(kWidgets, "ns", MakeWidget("ns", "change", "", 9));
  auto fresh = server_.Put(kWidgets, "ns", MakeWidget("ns", "fresh", ""));
  server_.Compact();  // the informer's RV is now out of the window
  server_.DropWatches();
  server_.set_watch_paused(false);
  ASSERT_TRUE(PollUntil([&] { return inf->stats().relists_after_410.load() == 1; }));
  ASSERT_TRUE(PollUntil([&] { return inf->Get("ns/fresh") != nullptr && rec_.Total() >= 6; }));
  EXPECT_EQ(inf->Get("ns/vanish"), nullptr);
  EXPECT_EQ(inf->Get("ns/change")->size, 9);
  EXPECT_EQ(inf->Size(), 3u);
  EXPECT_EQ(server_.Count("list", "widgets", "resourceVersion", std::string("")), 1);  // one quorum relist
  EXPECT_EQ(rec_.For("ns/vanish").back(), "delete");
  EXPECT_EQ(rec_.For("ns/change"), (std::vector<std::string>{"add@" + Rv(change), "update@" + Rv(changed)}));
  EXPECT_EQ(rec_.For("ns/fresh"), std::vector<std::string>{"add@" + Rv(fresh)});
  EXPECT_EQ(rec_.For("ns/keep").size(), 1u);  // unchanged objects are not re-delivered
  // And it keeps watching afterwards.
  server_.Put(kWidgets, "ns", MakeWidget("ns", "after", ""));
  EXPECT_TRUE(PollUntil([&] { return inf->Get("ns/after") != nullptr; }));
}

INSTANTIATE_TEST_SUITE_P(InStreamAndHttp, GoneTest, ::testing::Values(true, false));

TEST_F(InformerFaultTest, InjectedInStreamErrorMidStream) {
  server_.AddFault({.kind = Fault::Kind::kWatchError410, .verb = "watch", .after_events = 1});
  auto inf = StartInformer();
  server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  server_.Put(kWidgets, "ns", MakeWidget("ns", "b", ""));
  ASSERT_TRUE(PollUntil([&] { return inf->stats().relists_after_410.load() == 1 && inf->Size() == 2 && rec_.Total() >= 2; }));
  EXPECT_EQ(rec_.For("ns/a").size(), 1u);
  EXPECT_EQ(rec_.For("ns/b").size(), 1u);
}

TEST_F(InformerFaultTest, QuietWatchWithBookmarksAdvancesRvWithoutRelist) {
  opts_.min_watch_timeout_seconds = opts_.max_watch_timeout_seconds = 1;
  server_.set_bookmark_interval(std::chrono::milliseconds(150));
  server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  auto inf = StartInformer();
  // Activity in another namespace moves the global RV; bookmarks carry it to the informer.
  auto other = server_.Put(kWidgets, "elsewhere", MakeWidget("elsewhere", "z", ""));
  ASSERT_TRUE(PollUntil([&] { return server_.Count("watch", "widgets", "resourceVersion", Rv(other)) >= 1; },
                        std::chrono::seconds(10)));
  ASSERT_TRUE(PollUntil([&] { return server_.Count("watch", "widgets") >= 3; }, std::chrono::seconds(10)));
  EXPECT_EQ(inf->stats().lists.load(), 1);
  EXPECT_EQ(rec_.Total(), 1);  // only the initial add: bookmarks never reach handlers
}

TEST_F(InformerFaultTest, QuietWatchPastClientTimeoutIsANormalEnd) {
  // The server ignores timeoutSeconds and sends nothing: the client's read timeout (timeoutSeconds + slack)
  // fires and the informer simply re-watches from the same RV.
  opts_.min_watch_timeout_seconds = opts_.max_watch_timeout_seconds = 1;
  server_.set_ignore_watch_timeout(true);
  auto a = server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  auto inf = StartInformer();
  ASSERT_TRUE(PollUntil([&] { return server_.Count("watch", "widgets") >= 2; }, std::chrono::seconds(15)));
  EXPECT_EQ(inf->stats().lists.load(), 1);
  EXPECT_EQ(server_.Count("watch", "widgets", "resourceVersion", Rv(a)), server_.Count("watch", "widgets"));
  auto b = server_.Put(kWidgets, "ns", MakeWidget("ns", "b", ""));
  EXPECT_TRUE(PollUntil([&] { return inf->Get("ns/b") != nullptr; }));
}

TEST_F(InformerFaultTest, CutStreamLinesAndResetsRewatch) {
  server_.AddFault({.kind = Fault::Kind::kWatchCutLine, .verb = "watch", .after_events = 1});
  server_.AddFault({.kind = Fault::Kind::kWatchDrop, .verb = "watch", .after_events = 1});
  server_.AddFault({.kind = Fault::Kind::kReset, .verb = "watch"});
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "watch", .status = 500});
  auto inf = StartInformer();
  for (int i = 0; i < 5; ++i) server_.Put(kWidgets, "ns", MakeWidget("ns", "w" + std::to_string(i), ""));
  ASSERT_TRUE(PollUntil([&] { return inf->Size() == 5 && rec_.Total() >= 5; }));
  EXPECT_EQ(inf->stats().lists.load(), 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rec_.For("ns/w" + std::to_string(i)).size(), 1u) << i;
  EXPECT_GE(inf->stats().watch_errors.load(), 3);
}

TEST_F(InformerFaultTest, ListFailuresAreRetried) {
  server_.AddFault({.kind = Fault::Kind::kStatus, .verb = "list", .status = 403, .times = 2});
  server_.Put(kWidgets, "ns", MakeWidget("ns", "a", ""));
  auto inf = StartInformer();
  EXPECT_EQ(inf->Size(), 1u);
  EXPECT_EQ(server_.Count("list"), 3);
}

TEST_F(InformerFaultTest, StopInterruptsAnOpenWatchPromptly) {
  auto inf = StartInformer();
  ASSERT_TRUE(PollUntil([&] { return server_.open_watches() == 1; }));
  auto start = Clock::now();
  inf->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace tephra::kube
