// A work queue with client-go semantics (workqueue/doc.go, v1.20):
//  * Stingy: a key added any number of times before a worker picks it up is handed out once.
//  * Fair: keys are handed out in the order they were (first) added.
//  * Never concurrent: a key is never given to two workers at once. A key added while a worker holds it
//    is marked dirty and handed out once more after Done(), however many times it was re-added.
//  * Delaying: AddAfter(key, d) adds the key once d has passed on the injected clock.
//  * Rate limited: AddRateLimited(key) = AddAfter(key, limiter.When(key)); Forget(key) resets the backoff.
//
// Time: a timer thread moves due delayed keys into the queue. It sleeps on the real steady clock, so
// with a FakeClock construct the queue with start_timer_thread = false and call Tick() after advancing the
// clock; Tick() does exactly what the thread would do, deterministically.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/rate_limiter.h"

namespace tephra::kube {

struct WorkQueueOptions {
  std::string name;                       // the `name` label of workqueue_* metrics ("" = no metrics)
  const core::Clock* clock = nullptr;     // nullptr = RealClock
  std::unique_ptr<RateLimiter> rate_limiter;  // nullptr = NewControllerRateLimiter(clock)
  metrics::Registry* registry = nullptr;  // nullptr = metrics::Registry::Default()
  bool start_timer_thread = true;         // false: the owner drives delayed keys with Tick()
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions opts = {});
  ~WorkQueue();  // shuts down and joins the timer thread
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Ignored after shutdown.
  void Add(const std::string& key) TEPHRA_EXCLUDES(mu_);
  // delay <= 0 is Add(). A key already waiting keeps the earlier of its two ready times.
  void AddAfter(const std::string& key, Duration delay) TEPHRA_EXCLUDES(mu_);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is available; nullopt once the queue is shut down and empty. The caller must call
  // Done(key) when finished with it.
  std::optional<std::string> Get() TEPHRA_EXCLUDES(mu_);
  // Like Get but returns nullopt immediately if nothing is ready (for single-threaded tests and benches).
  std::optional<std::string> TryGet() TEPHRA_EXCLUDES(mu_);
  void Done(const std::string& key) TEPHRA_EXCLUDES(mu_);

  // Stops accepting keys; Get() keeps returning what is already queued, then nullopt. Delayed keys are dropped.
  void ShutDown() TEPHRA_EXCLUDES(mu_);
  // ShutDown, then wait until every key handed out has been Done().
  void ShutDownWithDrain() TEPHRA_EXCLUDES(mu_);
  bool ShuttingDown() const TEPHRA_EXCLUDES(mu_);

  // Keys ready to be handed out (not counting in-flight or delayed ones).
  size_t Len() const TEPHRA_EXCLUDES(mu_);
  size_t NumDelayed() const TEPHRA_EXCLUDES(mu_);
  size_t NumProcessing() const TEPHRA_EXCLUDES(mu_);

  // Moves delayed keys whose time has come (on the injected clock) into the queue; returns the next
  // pending ready time, if any.
  std::optional<core::Clock::TimePoint> Tick() TEPHRA_EXCLUDES(mu_);

 private:
  void AddLocked(const std::string& key) TEPHRA_REQUIRES(mu_);
  std::string PopLocked() TEPHRA_REQUIRES(mu_);
  void TimerLoop() TEPHRA_EXCLUDES(mu_);

  const core::Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;

  mutable core::Mutex mu_;
  core::CondVar cond_;        // workers waiting for keys
  core::CondVar drain_cond_;  // ShutDownWithDrain waiting for in-flight keys
  core::CondVar timer_cond_;  // timer thread waiting for the next ready time
  std::deque<std::string> queue_ TEPHRA_GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ TEPHRA_GUARDED_BY(mu_);
  std::unordered_map<std::string, core::Clock::TimePoint> processing_ TEPHRA_GUARDED_BY(mu_);  // key -> when handed out
  std::unordered_map<std::string, core::Clock::TimePoint> added_at_ TEPHRA_GUARDED_BY(mu_);  // key -> when queued
  // Delayed keys: ready time -> keys, plus the reverse index so a key waits once.
  std::multimap<core::Clock::TimePoint, std::string> waiting_ TEPHRA_GUARDED_BY(mu_);
  std::unordered_map<std::string, core::Clock::TimePoint> waiting_at_ TEPHRA_GUARDED_BY(mu_);
  bool shutting_down_ TEPHRA_GUARDED_BY(mu_) = false;
  bool stop_timer_ TEPHRA_GUARDED_BY(mu_) = false;

  // Metrics (nullptr when the queue has no name).
  metrics::Gauge* depth_ = nullptr;
  metrics::Counter* adds_ = nullptr;
  metrics::Counter* retries_ = nullptr;
  metrics::Histogram* work_duration_ = nullptr;
  metrics::Histogram* queue_duration_ = nullptr;

  std::thread timer_;
};

}  // namespace tephra::kube
