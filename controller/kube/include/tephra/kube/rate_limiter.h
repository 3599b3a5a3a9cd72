// Rate limiters for work-queue retries, modelled on client-go's workqueue package (v1.20):
//   per-item exponential backoff base·2^failures capped at max (default 5 ms → 1000 s), and an overall
//   token bucket (default 10 qps, burst 100), combined by taking the larger delay.
// All of them read time from an injected core::Clock so tests run on a FakeClock.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"

namespace tephra::kube {

using Duration = std::chrono::nanoseconds;

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long `item` should wait before it is processed again; records one more failure for it.
  virtual Duration When(const std::string& item) = 0;
  // Clears the item's failure history (call on success).
  virtual void Forget(const std::string& item) = 0;
  // Failures recorded since the last Forget.
  virtual int NumRequeues(const std::string& item) = 0;
};

// base · 2^n for the n-th consecutive failure of an item (n from 0), capped at max_delay.
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(Duration base, Duration max_delay) : base_(base), max_(max_delay) {}
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  Duration base_, max_;
  core::Mutex mu_;
  std::map<std::string, int> failures_ TEPHRA_GUARDED_BY(mu_);
};

// A token bucket shared by all items: each When() reserves one token and returns the wait until that
// token exists (like golang.org/x/time/rate Reserve().Delay()). Does not track items.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, const core::Clock& clock);
  Duration When(const std::string& item) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  double qps_;
  double burst_;
  const core::Clock& clock_;
  core::Mutex mu_;
  double tokens_ TEPHRA_GUARDED_BY(mu_);
  core::Clock::TimePoint last_ TEPHRA_GUARDED_BY(mu_);
};

// The maximum of several limiters' delays; NumRequeues is the maximum too.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters) : limiters_(std::move(limiters)) {}
  Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

struct RateLimiterOptions {
  Duration base_delay = std::chrono::milliseconds(5);
  Duration max_delay = std::chrono::seconds(1000);
  double qps = 10;
  int burst = 100;
};

// client-go's DefaultControllerRateLimiter, with every number configurable.
std::unique_ptr<RateLimiter> NewControllerRateLimiter(const core::Clock& clock, const RateLimiterOptions& o = {});

}  // namespace tephra::kube
