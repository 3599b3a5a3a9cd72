// Leader election on a FakeClock against the in-memory FakeClient, including docs/failure-scenarios.md, scenario 7
// (a: standby takes over after a crash within 15..~24 s; b: a partitioned leader gives up before a standby
// can acquire; c: timing validation).
#include "tephra/kube/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/fake_client.h"

namespace tephra::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeClient;

const ResourceInfo kLeases{"coordination.k8s.io", "v1", "Lease", "leases", true};

// Forwards to a shared FakeClient unless "partitioned" from it.
class PartitionableClient final : public Client {
 public:
  explicit PartitionableClient(std::shared_ptr<FakeClient> f) : f_(std::move(f)) {}
  std::atomic<bool> partitioned{false};
  Status Down() const { return core::UnavailableError("connection refused"); }
  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& n, const std::string& s) override {
    if (partitioned) return Down();
    return f_->Get(r, ns, n, s);
  }
  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& o) override {
    if (partitioned) return Down();
    return f_->List(r, ns, o);
  }
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& o, const std::string& s) override {
    if (partitioned) return Down();
    return f_->Create(r, ns, o, s);
  }
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& o, const std::string& s) override {
    if (partitioned) return Down();
    return f_->Update(r, ns, o, s);
  }
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& n, PatchType t, const json& p,
                       const std::string& s) override {
    if (partitioned) return Down();
    return f_->Patch(r, ns, n, t, p, s);
  }
  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& n, const DeleteOptions& o) override {
    if (partitioned) return Down();
    return f_->Delete(r, ns, n, o);
  }
  Status Bind(const std::string& ns, const std::string& p, const std::string& u, const std::string& n,
              const std::map<std::string, std::string>& a) override {
    return f_->Bind(ns, p, u, n, a);
  }
  Status Evict(const std::string& ns, const std::string& p, const DeleteOptions& o) override { return f_->Evict(ns, p, o); }
  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& o,
               const std::function<bool(WatchEvent&&)>& h) override {
    return f_->Watch(r, ns, o, h);
  }
  StatusOr<json> Raw(const std::string& m, const std::string& p, const json* b, const std::string& c) override {
    return f_->Raw(m, p, b, c);
  }

 private:
  std::shared_ptr<FakeClient> f_;
};

struct Contender {
  std::shared_ptr<PartitionableClient> client;
  std::unique_ptr<LeaderElector> le;
  core::Clock::TimePoint next{};
  bool alive = true;
  std::optional<core::Clock::TimePoint> started, stopped;
  std::vector<std::string> new_leaders;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  core::FakeClock clock;
  std::shared_ptr<FakeClient> api = std::make_shared<FakeClient>(&clock);
  std::vector<std::unique_ptr<Contender>> cs;

  Contender* Add(const std::string& id, uint64_t seed) {
    auto c = std::make_unique<Contender>();
    c->client = std::make_shared<PartitionableClient>(api);
    LeaderElectionConfig cfg;
    cfg.lock_namespace = "volcano-system";
    cfg.lock_name = "tephra-scheduler";
    cfg.identity = id;
    cfg.seed = seed;
    Contender* raw = c.get();
    cfg.on_started_leading = [this, raw] { raw->started = clock.Now(); };
    cfg.on_stopped_leading = [this, raw] { raw->stopped = clock.Now(); };
    cfg.on_new_leader = [raw](const std::string& who) { raw->new_leaders.push_back(who); };
    auto le = LeaderElector::Create(c->client, cfg, &clock);
    EXPECT_TRUE(le.ok()) << le.status();
    c->le = std::move(*le);
    c->next = clock.Now();
    cs.push_back(std::move(c));
    return raw;
  }

  // Runs the contenders' polls in time order until `until`.
  void RunUntil(core::Clock::TimePoint until) {
    while (true) {
      Contender* n = nullptr;
      for (auto& c : cs) {
        if (c->alive && c->le->state() != LeaderElector::State::kStopped && (!n || c->next < n->next)) n = c.get();
      }
      if (!n || n->next > until) break;
      if (n->next > clock.Now()) clock.Advance(n->next - clock.Now());
      auto d = n->le->Poll();
      if (d) n->next = clock.Now() + *d;
    }
    if (until > clock.Now()) clock.Advance(until - clock.Now());
  }

  json Lease() { return *api->Get(kLeases, "volcano-system", "tephra-scheduler"); }
};

TEST(LeaderElectionConfigTest, Scenario7cTimingValidation) {
  LeaderElectionConfig c;
  c.lock_name = "x";
  EXPECT_TRUE(ValidateLeaderElectionConfig(c).ok());
  auto bad = c;
  bad.lease_duration = seconds(10);  // == renew deadline
  auto s = ValidateLeaderElectionConfig(bad);
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("leaseDuration (10s) must be greater than renewDeadline (10s)"), std::string::npos) << s;
  bad = c;
  bad.retry_period = milliseconds(8500);  // 1.2 × 8.5 s = 10.2 s > 10 s
  s = ValidateLeaderElectionConfig(bad);
  EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("renewDeadline (10s) must be greater than 1.20 x retryPeriod (8.5s)"), std::string::npos) << s;
  bad = c;
  bad.renew_deadline = milliseconds(2400);  // exactly 1.2 × 2 s: still rejected (strict)
  EXPECT_FALSE(ValidateLeaderElectionConfig(bad).ok());
  bad.renew_deadline = milliseconds(2401);
  EXPECT_TRUE(ValidateLeaderElectionConfig(bad).ok());
  bad = c;
  bad.lock_name = "";
  EXPECT_FALSE(ValidateLeaderElectionConfig(bad).ok());
  bad = c;
  bad.retry_period = milliseconds(0);
  EXPECT_FALSE(ValidateLeaderElectionConfig(bad).ok());
  // Create refuses an invalid config.
  auto le = LeaderElector::Create(std::make_shared<FakeClient>(), LeaderElectionConfig{});
  EXPECT_FALSE(le.ok());
}

TEST(LeaderElectionConfigTest, DefaultIdentityIsHostnameUnderscoreRandom) {
  std::string a = DefaultIdentity(), b = DefaultIdentity();
  EXPECT_NE(a, b);
  auto p = a.rfind('_');
  ASSERT_NE(p, std::string::npos);
  EXPECT_EQ(a.size() - p - 1, 8u);
  EXPECT_GT(p, 0u);
}

TEST_F(LeaderElectionTest, AcquiresMissingLeaseImmediately) {
  auto* a = Add("a", 1);
  RunUntil(clock.Now());
  EXPECT_TRUE(a->le->IsLeader());
  ASSERT_TRUE(a->started.has_value());
  auto lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  EXPECT_EQ(lease["spec"]["renewTime"].get<std::string>().size(), std::string("2023-11-14T22:13:20.000000Z").size());
  EXPECT_EQ(a->new_leaders, std::vector<std::string>{"a"});
}

TEST_F(LeaderElectionTest, Scenario7aStandbyTakesOverAfterCrashWithinBounds) {
  for (uint64_t seed : {1, 2, 3, 4, 5, 42, 1000}) {
    cs.clear();
    api = std::make_shared<FakeClient>(&clock);
    auto* a = Add("a", seed);
    RunUntil(clock.Now());
    auto* b = Add("b", seed + 7);
    RunUntil(clock.Now() + seconds(60));
    ASSERT_TRUE(a->le->IsLeader());
    ASSERT_FALSE(b->le->IsLeader()) << "standby must not acquire while the leader renews";
    EXPECT_EQ(b->le->GetLeader(), "a");
    // SIGKILL: a stops polling, no release. Its last renew is at most one retry period ago.
    a->alive = false;
    auto killed = clock.Now();
    RunUntil(clock.Now() + seconds(40));
    ASSERT_TRUE(b->le->IsLeader()) << "seed " << seed;
    auto takeover = *b->started - killed;
    EXPECT_GE(takeover, seconds(15) - seconds(2)) << "seed " << seed;    // last renew ≤ 2 s before the kill
    EXPECT_LE(takeover, milliseconds(15000 + 2 * 4400)) << "seed " << seed;
    auto lease = Lease();
    EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
    EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
    EXPECT_EQ(b->new_leaders.back(), "b");
  }
}

TEST_F(LeaderElectionTest, Scenario7bPartitionedLeaderStopsBeforeStandbyAcquires) {
  for (uint64_t seed : {1, 9, 77}) {
    cs.clear();
    api = std::make_shared<FakeClient>(&clock);
    auto* a = Add("a", seed);
    RunUntil(clock.Now());
    auto* b = Add("b", seed + 3);
    RunUntil(clock.Now() + seconds(30));
    ASSERT_TRUE(a->le->IsLeader());
    auto last_renew_wall = Lease()["spec"]["renewTime"].get<std::string>();
    a->client->partitioned = true;
    auto partitioned_at = clock.Now();
    RunUntil(clock.Now() + seconds(60));
    ASSERT_TRUE(a->stopped.has_value()) << "partitioned leader must give up";
    EXPECT_EQ(a->le->state(), LeaderElector::State::kStopped);
    ASSERT_TRUE(b->started.has_value());
    EXPECT_LT(*a->stopped, *b->started) << "the old leader gives up before the standby acquires";
    // ≈ 12 s after the last good renew (which was at most 2 s before the partition).
    EXPECT_LE(*a->stopped - partitioned_at, seconds(12));
    EXPECT_GE(*a->stopped - partitioned_at, seconds(10));
    EXPECT_GE(*b->started - partitioned_at, seconds(13));  // ≥ 15 s after a's last renew
    EXPECT_NE(Lease()["spec"]["renewTime"], last_renew_wall);
  }
}

TEST_F(LeaderElectionTest, CleanStopReleasesAndStandbyTakesOverAtNextPoll) {
  auto* a = Add("a", 1);
  RunUntil(clock.Now());
  auto* b = Add("b", 2);
  RunUntil(clock.Now() + seconds(20));
  a->le->Stop();
  auto released = clock.Now();
  EXPECT_TRUE(a->stopped.has_value());
  auto lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
  RunUntil(clock.Now() + seconds(10));
  ASSERT_TRUE(b->started.has_value());
  EXPECT_LE(*b->started - released, milliseconds(4400));
  EXPECT_EQ(Lease()["spec"]["leaseTransitions"], 1);
  a->le->Stop();  // idempotent
}

TEST_F(LeaderElectionTest, ConcurrentCandidatesOnlyOneWins) {
  // A lease held by a dead process; two candidates start together. Exactly one takes it over.
  api->Seed(kLeases, json{{"metadata", {{"name", "tephra-scheduler"}, {"namespace", "volcano-system"}}},
                          {"spec", {{"holderIdentity", "old"}, {"leaseDurationSeconds", 15}, {"leaseTransitions", 4}}}});
  auto* a = Add("a", 1);
  auto* b = Add("b", 2);
  RunUntil(clock.Now() + seconds(30));
  EXPECT_NE(a->le->IsLeader(), b->le->IsLeader());
  EXPECT_EQ(Lease()["spec"]["leaseTransitions"], 5);
  // Neither could take the stale lease before observing it unchanged for a full lease duration.
  Contender* w = a->le->IsLeader() ? a : b;
  EXPECT_GE(*w->started - core::Clock::TimePoint{}, seconds(15));
}

TEST_F(LeaderElectionTest, RunLoopWithRealClock) {
  LeaderElectionConfig cfg;
  cfg.lock_name = "real";
  cfg.lease_duration = milliseconds(300);
  cfg.renew_deadline = milliseconds(200);
  cfg.retry_period = milliseconds(50);
  std::atomic<int> started{0}, stopped{0};
  cfg.on_started_leading = [&] { started++; };
  cfg.on_stopped_leading = [&] { stopped++; };
  auto fake = std::make_shared<FakeClient>();
  auto le = LeaderElector::Create(fake, cfg);
  ASSERT_TRUE(le.ok());
  std::thread t([&] { (*le)->Run(); });
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (!(*le)->IsLeader() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE((*le)->IsLeader());
  (*le)->Stop();
  t.join();
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_EQ((*fake->Get(kLeases, "volcano-system", "real"))["spec"]["holderIdentity"], "");
}

}  // namespace
}  // namespace tephra::kube
