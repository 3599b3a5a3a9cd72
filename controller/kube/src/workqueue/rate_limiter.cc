#include "tephra/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace tephra::kube {

Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  int n;
  {
    core::MutexLock l(mu_);
    n = failures_[item]++;
  }
  // Computed in double so 2^n cannot overflow before the cap applies.
  double d = static_cast<double>(base_.count()) * std::pow(2.0, n);
  if (d >= static_cast<double>(max_.count())) return max_;
  return Duration(static_cast<Duration::rep>(d));
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  core::MutexLock l(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& item) {
  core::MutexLock l(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, const core::Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.Now()) {}

Duration BucketRateLimiter::When(const std::string&) {
  core::MutexLock l(mu_);
  auto now = clock_.Now();
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  // Reserve a token even if it does not exist yet: the balance goes negative and the caller waits until
  // it would have been refilled, so a burst of failures is spread at exactly qps.
  tokens_ -= 1;
  if (tokens_ >= 0 || qps_ <= 0) return Duration::zero();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(-tokens_ / qps_));
}

Duration MaxOfRateLimiter::When(const std::string& item) {
  Duration d = Duration::zero();
  for (auto& l : limiters_) d = std::max(d, l->When(item));
  return d;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int n = 0;
  for (auto& l : limiters_) n = std::max(n, l->NumRequeues(item));
  return n;
}

std::unique_ptr<RateLimiter> NewControllerRateLimiter(const core::Clock& clock, const RateLimiterOptions& o) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(o.base_delay, o.max_delay));
  v.push_back(std::make_unique<BucketRateLimiter>(o.qps, o.burst, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(v));
}

}  // namespace tephra::kube
