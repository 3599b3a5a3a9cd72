// Injected time, so pure code and tests never read the wall clock directly.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "tephra/core/thread_annotations.h"

namespace tephra::core {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;       // monotonic, for timers and backoff
  virtual WallTime WallNow() const = 0;    // for timestamps written to the API
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  static RealClock& Get() {
    static RealClock c;
    return c;
  }
};

// A clock that only moves when told; thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'700'000'000)))
      : wall_start_(wall_start) {}
  TimePoint Now() const override TEPHRA_EXCLUDES(mu_) {
    MutexLock l(mu_);
    return now_;
  }
  WallTime WallNow() const override TEPHRA_EXCLUDES(mu_) {
    MutexLock l(mu_);
    return wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(now_.time_since_epoch());
  }
  void Advance(std::chrono::nanoseconds d) TEPHRA_EXCLUDES(mu_) {
    MutexLock l(mu_);
    now_ += d;
  }

 private:
  mutable Mutex mu_;
  TimePoint now_ TEPHRA_GUARDED_BY(mu_) = TimePoint{};
  WallTime wall_start_ TEPHRA_GUARDED_BY(mu_);  // only written by the constructor; read under mu_ anyway
};

// RFC 3339 "2026-11-22T09:10:55Z" (seconds precision, UTC), as Kubernetes writes metav1.Time.
std::string FormatRfc3339(Clock::WallTime t);
// Parses RFC 3339 with optional fractional seconds and a Z or +hh:mm offset.
bool ParseRfc3339(std::string_view s, Clock::WallTime* out);

}  // namespace tephra::core
