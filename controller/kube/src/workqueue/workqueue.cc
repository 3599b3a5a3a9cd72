#include "tephra/kube/workqueue.h"

#include <algorithm>

namespace tephra::kube {
namespace {

double Seconds(core::Clock::TimePoint::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

WorkQueue::WorkQueue(WorkQueueOptions opts)
    : clock_(opts.clock ? *opts.clock : core::RealClock::Get()),
      limiter_(opts.rate_limiter ? std::move(opts.rate_limiter) : NewControllerRateLimiter(clock_)) {
  if (!opts.name.empty()) {
    metrics::Registry& reg = opts.registry ? *opts.registry : metrics::Registry::Default();
    depth_ = reg.AddGauge("workqueue_depth", "Current depth of the work queue.", {"name"}).With({opts.name});
    adds_ = reg.AddCounter("workqueue_adds_total", "Total number of adds handled by the work queue.", {"name"})
                .With({opts.name});
    retries_ = reg.AddCounter("workqueue_retries_total", "Total number of rate-limited retries.", {"name"})
                   .With({opts.name});
    auto buckets = metrics::ExponentialBuckets(1e-6, 10, 10);  // 1 µs .. 1000 s
    work_duration_ = reg.AddHistogram("workqueue_work_duration_seconds",
                                      "Seconds a key is held by a worker, from Get to Done.", {"name"}, buckets)
                         .With({opts.name});
    queue_duration_ = reg.AddHistogram("workqueue_queue_duration_seconds",
                                       "Seconds a key waits in the queue before a worker gets it.", {"name"}, buckets)
                          .With({opts.name});
  }
  if (opts.start_timer_thread) timer_ = std::thread([this] { TimerLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  {
    core::MutexLock l(mu_);
    stop_timer_ = true;
  }
  timer_cond_.NotifyAll();
  if (timer_.joinable()) timer_.join();
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;  // already queued or re-added while in flight
  if (adds_) adds_->Inc();                 // counts effective adds, like client-go
  if (processing_.count(key)) return;      // Done() will queue it again
  queue_.push_back(key);
  added_at_[key] = clock_.Now();
  if (depth_) depth_->Set(static_cast<double>(queue_.size()));
  cond_.NotifyOne();
}

void WorkQueue::Add(const std::string& key) {
  core::MutexLock l(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  core::MutexLock l(mu_);
  if (shutting_down_) return;
  if (delay <= Duration::zero()) {
    AddLocked(key);
    return;
  }
  auto ready = clock_.Now() + std::chrono::duration_cast<core::Clock::TimePoint::duration>(delay);
  auto it = waiting_at_.find(key);
  if (it != waiting_at_.end()) {
    if (it->second <= ready) return;  // keep the earlier ready time
    auto range = waiting_.equal_range(it->second);
    for (auto w = range.first; w != range.second; ++w) {
      if (w->second == key) {
        waiting_.erase(w);
        break;
      }
    }
  }
  waiting_at_[key] = ready;
  bool new_head = waiting_.empty() || ready < waiting_.begin()->first;
  waiting_.emplace(ready, key);
  if (new_head) timer_cond_.NotifyAll();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Duration d = limiter_->When(key);
  if (retries_) retries_->Inc();
  AddAfter(key, d);
}

void WorkQueue::Forget(const std::string& key) { limiter_->Forget(key); }
int WorkQueue::NumRequeues(const std::string& key) { return limiter_->NumRequeues(key); }

std::string WorkQueue::PopLocked() {
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  auto now = clock_.Now();
  auto it = added_at_.find(key);
  if (it != added_at_.end()) {
    if (queue_duration_) queue_duration_->Observe(Seconds(now - it->second));
    added_at_.erase(it);
  }
  processing_[key] = now;
  dirty_.erase(key);
  if (depth_) depth_->Set(static_cast<double>(queue_.size()));
  return key;
}

std::optional<std::string> WorkQueue::Get() {
  core::MutexLock l(mu_);
  while (queue_.empty() && !shutting_down_) cond_.Wait(l);
  if (queue_.empty()) return std::nullopt;
  return PopLocked();
}

std::optional<std::string> WorkQueue::TryGet() {
  core::MutexLock l(mu_);
  if (queue_.empty()) return std::nullopt;
  return PopLocked();
}

void WorkQueue::Done(const std::string& key) {
  core::MutexLock l(mu_);
  auto it = processing_.find(key);
  if (it == processing_.end()) return;
  if (work_duration_) work_duration_->Observe(Seconds(clock_.Now() - it->second));
  processing_.erase(it);
  if (dirty_.count(key)) {
    // Re-added while in flight: hand it out once more. Allowed even during shutdown so nothing that was
    // accepted is lost while draining.
    queue_.push_back(key);
    added_at_[key] = clock_.Now();
    if (depth_) depth_->Set(static_cast<double>(queue_.size()));
    cond_.NotifyOne();
  } else if (processing_.empty()) {
    drain_cond_.NotifyAll();
  }
}

void WorkQueue::ShutDown() {
  core::MutexLock l(mu_);
  shutting_down_ = true;
  waiting_.clear();
  waiting_at_.clear();
  cond_.NotifyAll();
  timer_cond_.NotifyAll();
}

void WorkQueue::ShutDownWithDrain() {
  ShutDown();
  core::MutexLock l(mu_);
  while (!processing_.empty()) drain_cond_.Wait(l);
}

bool WorkQueue::ShuttingDown() const {
  core::MutexLock l(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  core::MutexLock l(mu_);
  return queue_.size();
}
size_t WorkQueue::NumDelayed() const {
  core::MutexLock l(mu_);
  return waiting_.size();
}
size_t WorkQueue::NumProcessing() const {
  core::MutexLock l(mu_);
  return processing_.size();
}

std::optional<core::Clock::TimePoint> WorkQueue::Tick() {
  core::MutexLock l(mu_);
  auto now = clock_.Now();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string key = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    waiting_at_.erase(key);
    AddLocked(key);
  }
  if (waiting_.empty()) return std::nullopt;
  return waiting_.begin()->first;
}

void WorkQueue::TimerLoop() {
  while (true) {
    auto next = Tick();
    core::MutexLock l(mu_);
    if (stop_timer_) return;
    if (!next) {
      while (!stop_timer_ && waiting_.empty()) timer_cond_.Wait(l);
    } else {
      // Sleep for the remaining time as measured by the injected clock; with a RealClock this is exact,
      // with a FakeClock the owner calls Tick() instead of relying on this thread.
      const auto until = std::chrono::steady_clock::now() +
                         std::max(*next - clock_.Now(), core::Clock::TimePoint::duration::zero());
      while (!stop_timer_ && (waiting_.empty() || waiting_.begin()->first >= *next)) {
        if (timer_cond_.WaitUntil(l, until) == std::cv_status::timeout) break;
      }
    }
    if (stop_timer_) return;
  }
}

}  // namespace tephra::kube
