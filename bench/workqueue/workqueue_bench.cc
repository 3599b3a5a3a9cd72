// Work queue throughput: Add + Get + Done of many distinct keys, single-threaded and with N workers
// draining while one producer adds (the controller shape). Items/s = keys processed per second.
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tephra/kube/workqueue.h"

namespace tephra::kube {
namespace {

std::vector<std::string> Keys(int n) {
  std::vector<std::string> k;
  k.reserve(n);
  for (int i = 0; i < n; ++i) k.push_back("namespace-" + std::to_string(i % 100) + "/job-" + std::to_string(i));
  return k;
}

WorkQueueOptions Opts() {
  WorkQueueOptions o;
  o.start_timer_thread = false;  // no delayed adds here; keeps the bench about the queue itself
  return o;
}

// One thread: add N keys, then get/done all of them.
void BM_AddGetDone_SingleThread(benchmark::State& state) {
  auto keys = Keys(static_cast<int>(state.range(0)));
  WorkQueue q(Opts());
  for (auto _ : state) {
    for (const auto& k : keys) q.Add(k);
    while (auto k = q.TryGet()) q.Done(*k);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys.size()));
}
BENCHMARK(BM_AddGetDone_SingleThread)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// Duplicate adds of keys already queued (the stingy path): N distinct keys each added 10 times.
void BM_DuplicateAdds(benchmark::State& state) {
  auto keys = Keys(static_cast<int>(state.range(0)));
  WorkQueue q(Opts());
  for (auto _ : state) {
    for (int r = 0; r < 10; ++r)
      for (const auto& k : keys) q.Add(k);
    while (auto k = q.TryGet()) q.Done(*k);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys.size()) * 10);
}
BENCHMARK(BM_DuplicateAdds)->Arg(10000)->Unit(benchmark::kMillisecond);

// One producer adds N distinct keys while W workers Get/Done concurrently.
void BM_ProducerWorkers(benchmark::State& state) {
  auto keys = Keys(static_cast<int>(state.range(0)));
  const int workers = static_cast<int>(state.range(1));
  for (auto _ : state) {
    WorkQueue q(Opts());
    std::atomic<int64_t> processed{0};
    std::vector<std::thread> ts;
    for (int w = 0; w < workers; ++w) {
      ts.emplace_back([&] {
        while (auto k = q.Get()) {
          processed.fetch_add(1, std::memory_order_relaxed);
          q.Done(*k);
        }
      });
    }
    for (const auto& k : keys) q.Add(k);
    q.ShutDownWithDrain();
    for (auto& t : ts) t.join();
    benchmark::DoNotOptimize(processed.load());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys.size()));
}
BENCHMARK(BM_ProducerWorkers)->Args({100000, 1})->Args({100000, 8})->Unit(benchmark::kMillisecond)->UseRealTime();

// Rate-limited adds (backoff bookkeeping + delayed heap), then Tick past all delays.
void BM_AddRateLimited(benchmark::State& state) {
  auto keys = Keys(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    core::FakeClock clock;
    WorkQueueOptions o = Opts();
    o.clock = &clock;
    RateLimiterOptions rl;
    rl.qps = 1e9;  // measure the bookkeeping, not the bucket's spacing
    rl.burst = 1 << 30;
    o.rate_limiter = NewControllerRateLimiter(clock, rl);
    WorkQueue q(std::move(o));
    for (const auto& k : keys) q.AddRateLimited(k);
    clock.Advance(std::chrono::seconds(1));
    q.Tick();
    while (auto k = q.TryGet()) q.Done(*k);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys.size()));
}
BENCHMARK(BM_AddRateLimited)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tephra::kube

BENCHMARK_MAIN();
