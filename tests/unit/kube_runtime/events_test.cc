#include "tephra/kube/events.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tephra/core/utf8.h"
#include "tephra/kube/caught.h"
#include "testing/fake_client.h"

namespace tephra::kube {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using testing::FakeClient;

const ResourceInfo kEvents{"", "v1", "Event", "events", true};

class EventsTest : public ::testing::Test {
 protected:
  core::FakeClock clock;
  std::shared_ptr<FakeClient> api = std::make_shared<FakeClient>(&clock);
  std::unique_ptr<EventRecorder> rec;
  ObjectReference job{"batch.volcano.sh/v1alpha1", "Job", "team-a", "train", "uid-1", "", ""};

  void SetUp() override {
    EventRecorderOptions o;
    o.component = "tephra-controller";
    o.host = "node-1";
    o.clock = &clock;
    o.start_thread = false;
    rec = std::make_unique<EventRecorder>(api, o);
  }
  std::vector<json> Events() { return api->List(kEvents, "", {})->items; }
};

TEST_F(EventsTest, CreatesCoreV1Event) {
  rec->Event(job, EventType::kWarning, "PodGroupPending", "not enough resources");
  EXPECT_EQ(rec->ProcessPending(), 1u);
  auto evs = Events();
  ASSERT_EQ(evs.size(), 1u);
  const json& e = evs[0];
  EXPECT_EQ(e["metadata"]["namespace"], "team-a");
  std::string name = e["metadata"]["name"];
  EXPECT_EQ(name.rfind("train.", 0), 0u);
  EXPECT_EQ(name.size(), std::string("train.").size() + 16);
  EXPECT_EQ(e["involvedObject"]["kind"], "Job");
  EXPECT_EQ(e["involvedObject"]["apiVersion"], "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(e["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(e["reason"], "PodGroupPending");
  EXPECT_EQ(e["message"], "not enough resources");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["source"]["component"], "tephra-controller");
  EXPECT_EQ(e["source"]["host"], "node-1");
  EXPECT_EQ(e["count"], 1);
  EXPECT_EQ(e["firstTimestamp"], core::FormatRfc3339(clock.WallNow()));
  EXPECT_EQ(e["lastTimestamp"], e["firstTimestamp"]);
}

TEST_F(EventsTest, IdenticalEventsWithinTenMinutesIncrementCount) {
  rec->Event(job, EventType::kNormal, "Created", "created pod train-0");
  rec->ProcessPending();
  auto first_ts = Events()[0]["firstTimestamp"];
  for (int i = 0; i < 4; ++i) {
    clock.Advance(minutes(2));
    rec->Event(job, EventType::kNormal, "Created", "created pod train-0");
  }
  rec->ProcessPending();
  auto evs = Events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["count"], 5);
  EXPECT_EQ(evs[0]["firstTimestamp"], first_ts);
  EXPECT_EQ(evs[0]["lastTimestamp"], core::FormatRfc3339(clock.WallNow()));
  EXPECT_EQ(rec->stats().created, 1u);
  EXPECT_EQ(rec->stats().patched, 4u);
  int patches = 0;
  for (const auto& a : api->Actions()) patches += a.verb == "patch";
  EXPECT_EQ(patches, 4);
  // A different message is a different event.
  rec->Event(job, EventType::kNormal, "Created", "created pod train-1");
  rec->ProcessPending();
  EXPECT_EQ(Events().size(), 2u);
  // After 10 quiet minutes the same event starts a new Event object.
  clock.Advance(minutes(10) + seconds(1));
  rec->Event(job, EventType::kNormal, "Created", "created pod train-0");
  rec->ProcessPending();
  EXPECT_EQ(Events().size(), 3u);
}

TEST_F(EventsTest, PerObjectTokenBucketStopsFloods) {
  for (int i = 0; i < 100; ++i) rec->Event(job, EventType::kWarning, "Failed", "attempt " + std::to_string(i));
  rec->ProcessPending();
  EXPECT_EQ(Events().size(), 25u);  // burst
  EXPECT_EQ(rec->stats().dropped_rate_limited, 75u);
  // Another object has its own bucket.
  ObjectReference other = job;
  other.name = "other";
  other.uid = "uid-2";
  rec->Event(other, EventType::kNormal, "Created", "x");
  rec->ProcessPending();
  EXPECT_EQ(Events().size(), 26u);
  // One token per 5 minutes.
  clock.Advance(minutes(5));
  rec->Event(job, EventType::kWarning, "Failed", "late 1");
  rec->Event(job, EventType::kWarning, "Failed", "late 2");
  rec->ProcessPending();
  EXPECT_EQ(Events().size(), 27u);
  EXPECT_EQ(rec->stats().dropped_rate_limited, 76u);
}

TEST_F(EventsTest, NamesAreDeterministic) {
  FakeClient api2(&clock);
  auto api2p = std::shared_ptr<FakeClient>(&api2, [](FakeClient*) {});
  EventRecorderOptions o;
  o.component = "tephra-controller";
  o.host = "node-1";
  o.clock = &clock;
  o.start_thread = false;
  EventRecorder rec2(api2p, o);
  rec->Event(job, EventType::kNormal, "Scheduled", "ok");
  rec2.Event(job, EventType::kNormal, "Scheduled", "ok");
  rec->ProcessPending();
  rec2.ProcessPending();
  EXPECT_EQ(Events()[0]["metadata"]["name"], api2.List(kEvents, "", {})->items[0]["metadata"]["name"]);
}

TEST_F(EventsTest, ExpiredEventIsRecreated) {
  rec->Event(job, EventType::kNormal, "Created", "x");
  rec->ProcessPending();
  std::string name = Events()[0]["metadata"]["name"];
  ASSERT_TRUE(api->Delete(kEvents, "team-a", name).ok());  // server-side TTL
  clock.Advance(seconds(1));
  rec->Event(job, EventType::kNormal, "Created", "x");
  rec->ProcessPending();
  auto evs = Events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["count"], 1);
  EXPECT_NE(evs[0]["metadata"]["name"], name);
}

TEST_F(EventsTest, QueueFullDropsWithoutBlocking) {
  EventRecorderOptions o;
  o.clock = &clock;
  o.start_thread = false;
  o.queue_capacity = 3;
  EventRecorder small(api, o);
  for (int i = 0; i < 10; ++i) small.Event(job, EventType::kNormal, "R", std::to_string(i));
  EXPECT_EQ(small.stats().dropped_queue_full, 7u);
  EXPECT_EQ(small.ProcessPending(), 3u);
}

TEST_F(EventsTest, ClusterScopedObjectsGoToDefaultNamespace) {
  ObjectReference node{"v1", "Node", "", "node-7", "uid-n", "", ""};
  rec->Event(node, EventType::kNormal, "NodeReady", "ready");
  rec->ProcessPending();
  auto evs = Events();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["metadata"]["namespace"], "default");
}

TEST_F(EventsTest, ApiErrorsAreCountedNotFatal) {
  api->SetFailureInjector([](const testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "create") return core::UnavailableError("down");
    return std::nullopt;
  });
  rec->Event(job, EventType::kNormal, "Created", "x");
  rec->ProcessPending();
  EXPECT_EQ(rec->stats().errors, 1u);
}

// Issue 41: a JobFlow's flow name of 700 'é' made a message cut at 1024 bytes in the middle of a character;
// writing it threw in the event thread and ended the process.
TEST_F(EventsTest, LongMessagesAreCutOnACharacterBoundary) {
  std::string flow;
  for (int i = 0; i < 700; ++i) flow += "\xC3\xA9";
  rec->Event(job, EventType::kWarning, "FlowFailed", "flow " + flow + " failed");
  rec->Event(job, EventType::kWarning, "Bad", std::string("not text: \xFF\xFE"));
  EXPECT_EQ(rec->ProcessPending(), 2u);
  auto evs = Events();
  ASSERT_EQ(evs.size(), 2u);
  for (const json& e : evs) {
    const std::string m = e["message"];
    EXPECT_LE(m.size(), 1024u);
    EXPECT_TRUE(core::IsValidUtf8(m)) << m;
    EXPECT_NO_THROW((void)e.dump());  // what the REST client does with it
  }
}

// Nothing an Event write throws leaves the recorder: the next Event still goes out, and the catch is counted.
TEST_F(EventsTest, AThrowingWriteIsCountedAndTheRecorderGoesOn) {
  bool thrown = false;
  api->SetFailureInjector([&](const testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "create" && !thrown) {
      thrown = true;
      throw std::runtime_error("encoder failed");
    }
    return std::nullopt;
  });
  auto caught = [] {
    for (const auto& [where, n] : CaughtExceptions())
      if (where == "event-recorder") return n;
    return uint64_t{0};
  };
  const uint64_t before = caught();
  rec->Event(job, EventType::kNormal, "Created", "first");
  rec->Event(job, EventType::kNormal, "Created", "second");
  EXPECT_EQ(rec->ProcessPending(), 2u);
  EXPECT_EQ(caught(), before + 1);
  EXPECT_EQ(rec->stats().errors, 1u);
  ASSERT_EQ(Events().size(), 1u);
  EXPECT_EQ(Events()[0]["message"], "second");
}

TEST(EventsThreadTest, BackgroundThreadDeliversAndFlushes) {
  auto api = std::make_shared<FakeClient>();
  EventRecorderOptions o;
  o.component = "c";
  EventRecorder rec(api, o);
  rec.Event(ReferenceTo(json{{"apiVersion", "v1"}, {"kind", "Pod"},
                             {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u"}}}}),
            EventType::kNormal, "Scheduled", "assigned ns/p to n1");
  ASSERT_TRUE(rec.Flush(std::chrono::seconds(10)));
  auto evs = api->List(kEvents, "ns", {})->items;
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0]["involvedObject"]["name"], "p");
  rec.Shutdown();
  rec.Event(ReferenceTo(json::object()), EventType::kNormal, "Ignored", "after shutdown");
  EXPECT_EQ(rec.ProcessPending(), 0u);
}

}  // namespace
}  // namespace tephra::kube
