// Work queue and rate limiter behaviour, including docs/failure-scenarios.md, scenario 6 (work-queue discipline).
#include "tephra/kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "tephra/core/clock.h"
#include "tephra/kube/metrics.h"

namespace tephra::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Fixture {
  core::FakeClock clock;
  metrics::Registry registry;
  std::unique_ptr<WorkQueue> q;
  explicit Fixture(RateLimiterOptions rl = {}) {
    WorkQueueOptions o;
    o.name = "test";
    o.clock = &clock;
    o.registry = &registry;
    o.rate_limiter = NewControllerRateLimiter(clock, rl);
    o.start_timer_thread = false;
    q = std::make_unique<WorkQueue>(std::move(o));
  }
  double Gauge(const char* name) { return registry.FindGauge(name)->With({"test"})->Value(); }
  double Counter(const char* name) { return registry.FindCounter(name)->With({"test"})->Value(); }
};

TEST(WorkQueueTest, StingyAddsCoalesceBeforeProcessing) {
  Fixture f;
  for (int i = 0; i < 5; ++i) f.q->Add("a");
  f.q->Add("b");
  EXPECT_EQ(f.q->Len(), 2u);
  EXPECT_EQ(f.Counter("workqueue_adds_total"), 2);
  EXPECT_EQ(f.Gauge("workqueue_depth"), 2);
  EXPECT_EQ(f.q->TryGet(), "a");  // FIFO by first add
  EXPECT_EQ(f.q->TryGet(), "b");
  EXPECT_EQ(f.q->TryGet(), std::nullopt);
  EXPECT_EQ(f.Gauge("workqueue_depth"), 0);
}

TEST(WorkQueueTest, ReAddWhileInFlightIsProcessedOnceMoreAfterDone) {
  Fixture f;
  f.q->Add("a");
  auto k = f.q->TryGet();
  ASSERT_EQ(k, "a");
  for (int i = 0; i < 1000; ++i) f.q->Add("a");
  // Never handed out while in flight.
  EXPECT_EQ(f.q->TryGet(), std::nullopt);
  EXPECT_EQ(f.q->Len(), 0u);
  f.q->Done("a");
  EXPECT_EQ(f.q->Len(), 1u);
  EXPECT_EQ(f.q->TryGet(), "a");
  f.q->Done("a");
  EXPECT_EQ(f.q->TryGet(), std::nullopt);  // exactly once more, not 1000 times
}

TEST(WorkQueueTest, DoneWithoutReAddDoesNotRequeue) {
  Fixture f;
  f.q->Add("a");
  ASSERT_EQ(f.q->TryGet(), "a");
  f.q->Done("a");
  EXPECT_EQ(f.q->Len(), 0u);
  EXPECT_EQ(f.q->NumProcessing(), 0u);
}

TEST(WorkQueueTest, AddAfterWaitsForTheFakeClock) {
  Fixture f;
  f.q->AddAfter("a", seconds(10));
  f.q->AddAfter("b", seconds(5));
  EXPECT_EQ(f.q->NumDelayed(), 2u);
  auto next = f.q->Tick();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next - f.clock.Now(), seconds(5));
  EXPECT_EQ(f.q->Len(), 0u);
  f.clock.Advance(seconds(5) - milliseconds(1));
  f.q->Tick();
  EXPECT_EQ(f.q->Len(), 0u);
  f.clock.Advance(milliseconds(1));
  f.q->Tick();
  EXPECT_EQ(f.q->TryGet(), "b");
  f.clock.Advance(seconds(5));
  EXPECT_FALSE(f.q->Tick().has_value());
  EXPECT_EQ(f.q->TryGet(), "a");
}

TEST(WorkQueueTest, AddAfterKeepsEarliestReadyTime) {
  Fixture f;
  f.q->AddAfter("a", seconds(10));
  f.q->AddAfter("a", seconds(2));
  f.q->AddAfter("a", seconds(30));
  EXPECT_EQ(f.q->NumDelayed(), 1u);
  f.clock.Advance(seconds(2));
  f.q->Tick();
  EXPECT_EQ(f.q->TryGet(), "a");
  EXPECT_EQ(f.q->NumDelayed(), 0u);
}

TEST(WorkQueueTest, AddAfterNonPositiveIsImmediate) {
  Fixture f;
  f.q->AddAfter("a", milliseconds(0));
  EXPECT_EQ(f.q->Len(), 1u);
}

TEST(WorkQueueTest, ShutDownDrainsQueuedThenReturnsNullopt) {
  Fixture f;
  f.q->Add("a");
  f.q->AddAfter("later", seconds(1));
  f.q->ShutDown();
  f.q->Add("b");  // ignored
  EXPECT_TRUE(f.q->ShuttingDown());
  EXPECT_EQ(f.q->Get(), "a");
  EXPECT_EQ(f.q->Get(), std::nullopt);
  EXPECT_EQ(f.q->NumDelayed(), 0u);
}

TEST(WorkQueueTest, GetBlocksUntilAddOrShutdown) {
  Fixture f;
  std::optional<std::string> got;
  std::thread t([&] { got = f.q->Get(); });
  f.q->Add("x");
  t.join();
  EXPECT_EQ(got, "x");
  std::thread t2([&] { got = f.q->Get(); });
  f.q->ShutDown();
  t2.join();
  EXPECT_EQ(got, std::nullopt);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForInFlight) {
  Fixture f;
  f.q->Add("a");
  ASSERT_EQ(f.q->TryGet(), "a");
  std::atomic<bool> drained{false};
  std::thread t([&] {
    f.q->ShutDownWithDrain();
    drained = true;
  });
  // The drain cannot finish while "a" is in flight; wait until shutdown is visible, then check.
  while (!f.q->ShuttingDown()) std::this_thread::yield();
  EXPECT_FALSE(drained.load());
  f.q->Done("a");
  t.join();
  EXPECT_TRUE(drained.load());
}

TEST(RateLimiterTest, ExponentialPerItemCappedAndForgotten) {
  ItemExponentialFailureRateLimiter rl(milliseconds(5), seconds(1000));
  for (int n = 0; n < 18; ++n) {
    EXPECT_EQ(rl.When("a"), milliseconds(5) * (1LL << n)) << n;  // 5 ms · 2^n; 2^17·5 ms = 655 s
  }
  EXPECT_EQ(rl.When("a"), seconds(1000));  // 2^18·5 ms = 1310 s, capped
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rl.When("a"), seconds(1000));
  EXPECT_EQ(rl.NumRequeues("a"), 119);
  EXPECT_EQ(rl.When("b"), milliseconds(5));  // independent per key
  rl.Forget("a");
  EXPECT_EQ(rl.NumRequeues("a"), 0);
  EXPECT_EQ(rl.When("a"), milliseconds(5));
}

TEST(RateLimiterTest, BucketAllowsBurstThenQps) {
  core::FakeClock clock;
  BucketRateLimiter rl(10, 100, clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(rl.When("k" + std::to_string(i)), Duration::zero()) << i;
  // The 101st waits one token (100 ms at 10 qps), the 102nd two.
  EXPECT_EQ(rl.When("x"), milliseconds(100));
  EXPECT_EQ(rl.When("y"), milliseconds(200));
  // After 10 s, 100 tokens were refilled, minus the 2 owed.
  clock.Advance(seconds(10));
  for (int i = 0; i < 98; ++i) ASSERT_EQ(rl.When("z"), Duration::zero()) << i;
  EXPECT_EQ(rl.When("z"), milliseconds(100));
}

TEST(RateLimiterTest, CombinedTakesMax) {
  core::FakeClock clock;
  RateLimiterOptions o;
  o.burst = 2;
  auto rl = NewControllerRateLimiter(clock, o);
  EXPECT_EQ(rl->When("a"), milliseconds(5));   // per-item 5 ms > bucket 0
  EXPECT_EQ(rl->When("b"), milliseconds(5));
  EXPECT_EQ(rl->When("c"), milliseconds(100));  // bucket empty: 100 ms > 5 ms
  EXPECT_EQ(rl->NumRequeues("a"), 1);
  rl->Forget("a");
  EXPECT_EQ(rl->NumRequeues("a"), 0);
}

// docs/failure-scenarios.md, scenario 6: one key fails forever; its delays are 5 ms·2^n capped at 1000 s; other keys keep
// flowing; the global limiter holds 10 qps / burst 100; success resets the key.
TEST(WorkQueueScenario6, FailingKeyBacksOffWhileOthersFlow) {
  Fixture f;
  f.q->Add("bad");
  std::vector<Duration> delays;
  int good_processed = 0;
  for (int round = 0; round < 25; ++round) {
    auto k = f.q->TryGet();
    ASSERT_EQ(k, "bad") << round;
    auto before = f.clock.Now();
    f.q->AddRateLimited("bad");
    f.q->Done("bad");
    // Other keys added meanwhile are handed out immediately, ahead of the backing-off key.
    f.q->Add("good-" + std::to_string(round));
    auto g = f.q->TryGet();
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(*g, "good-" + std::to_string(round));
    f.q->Done(*g);
    ++good_processed;
    auto next = f.q->Tick();
    ASSERT_TRUE(next.has_value());
    delays.push_back(*next - before);
    f.clock.Advance(*next - f.clock.Now());
    f.q->Tick();
  }
  EXPECT_EQ(good_processed, 25);
  for (size_t n = 0; n < delays.size(); ++n) {
    Duration want = std::min<Duration>(milliseconds(5) * (1LL << n), seconds(1000));
    EXPECT_EQ(delays[n], want) << "failure " << n;
  }
  EXPECT_EQ(f.q->NumRequeues("bad"), 25);
  EXPECT_EQ(f.Counter("workqueue_retries_total"), 25);
  f.q->Forget("bad");  // success
  EXPECT_EQ(f.q->NumRequeues("bad"), 0);
  auto before = f.clock.Now();
  f.q->TryGet();
  f.q->AddRateLimited("bad");
  EXPECT_EQ(*f.q->Tick() - before, milliseconds(5));
}

TEST(WorkQueueScenario6, GlobalLimiterHoldsTenQpsBurstHundred) {
  Fixture f;
  for (int i = 0; i < 300; ++i) f.q->AddRateLimited("k" + std::to_string(i));
  // The first 100 only wait their per-item 5 ms; the rest are spread at 10 qps.
  f.clock.Advance(milliseconds(5));
  f.q->Tick();
  EXPECT_EQ(f.q->Len(), 100u);
  f.clock.Advance(seconds(10) - milliseconds(5));
  f.q->Tick();
  EXPECT_EQ(f.q->Len(), 200u);  // +10 per second
  f.clock.Advance(seconds(5));
  f.q->Tick();
  EXPECT_EQ(f.q->Len(), 250u);
}

TEST(WorkQueueScenario6, NeverConcurrentUnderManyWorkers) {
  core::FakeClock clock;
  WorkQueueOptions o;
  o.clock = &clock;
  o.start_timer_thread = false;
  WorkQueue q(std::move(o));
  constexpr int kKeys = 20;
  std::atomic<int> in_flight[kKeys];
  for (auto& a : in_flight) a = 0;
  std::atomic<int> violations{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      while (auto k = q.Get()) {
        int i = std::stoi(*k);
        if (in_flight[i].fetch_add(1) != 0) violations++;
        std::this_thread::yield();
        in_flight[i].fetch_sub(1);
        processed++;
        q.Done(*k);
      }
    });
  }
  for (int r = 0; r < 2000; ++r) q.Add(std::to_string(r % kKeys));
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GE(processed.load(), kKeys);
  EXPECT_LE(processed.load(), 2000);
}

TEST(WorkQueueTest, TimerThreadDeliversWithRealClock) {
  WorkQueueOptions o;  // RealClock, timer thread on
  WorkQueue q(std::move(o));
  q.AddAfter("a", milliseconds(1));
  EXPECT_EQ(q.Get(), "a");  // blocks until the timer thread moves it (1 ms)
}

TEST(WorkQueueTest, WorkDurationObserved) {
  Fixture f;
  f.q->Add("a");
  f.q->TryGet();
  f.clock.Advance(milliseconds(250));
  f.q->Done("a");
  auto* h = f.registry.FindHistogram("workqueue_work_duration_seconds")->With({"test"});
  EXPECT_EQ(h->Count(), 1u);
  EXPECT_DOUBLE_EQ(h->Sum(), 0.25);
}

}  // namespace
}  // namespace tephra::kube
