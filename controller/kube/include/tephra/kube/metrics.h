// A small Prometheus registry with text exposition (format 0.0.4).
//
// Metrics are declared once per component (usually from a static table of Desc) and the returned child
// pointers are cached by the caller: With() takes a lock and a map lookup, while Inc/Set/Observe on a child
// are single atomic operations, so hot paths never contend on the registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tephra/core/thread_annotations.h"

namespace tephra::kube::metrics {

enum class Type { kCounter, kGauge, kHistogram };

// Declaration of one metric family.
struct Desc {
  Type type = Type::kCounter;
  std::string name;
  std::string help;
  std::vector<std::string> labels;
  std::vector<double> buckets;  // histograms only; empty = DefaultBuckets()
};

// Prometheus client defaults: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 (seconds).
std::vector<double> DefaultBuckets();
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// `count` buckets from `min` to `max` growing by a constant factor (Prometheus' ExponentialBucketsRange, which
// Volcano's histograms use: the same bounds keep its dashboards' quantiles comparable).
std::vector<double> ExponentialBucketsRange(double min, double max, int count);

class Counter {
 public:
  // Counters only go up; negative increments are ignored.
  void Inc(double v = 1) {
    if (v > 0) v_.fetch_add(v, std::memory_order_relaxed);
  }
  double Value() const { return v_.load(std::memory_order_relaxed); }
  // For collectors that mirror a monotonic count kept elsewhere (a stats struct): raises the value to `v`;
  // a lower `v` is ignored, so the exported counter never goes down.
  void SetTotal(double v) {
    double cur = v_.load(std::memory_order_relaxed);
    while (v > cur && !v_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<double> v_{0};
};

class Gauge {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  void Add(double v) { v_.fetch_add(v, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  double Value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& UpperBounds() const { return bounds_; }
  // Cumulative count of observations <= UpperBounds()[i].
  uint64_t CumulativeCount(size_t i) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // non-cumulative per bucket
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// One named metric with a fixed list of label names; children are created on first use and live as long
// as the registry (pointers stay valid).
template <typename M>
class Family {
 public:
  // Label values in the order of Desc::labels. A wrong count is a programming error (aborts).
  M* With(const std::vector<std::string>& values) TEPHRA_EXCLUDES(mu_);
  M* With(std::initializer_list<std::string_view> values) TEPHRA_EXCLUDES(mu_) {
    return With(std::vector<std::string>(values.begin(), values.end()));
  }
  const Desc& desc() const { return desc_; }
  // Drops the children whose label values match (a deleted job's series), so the family does not grow for
  // ever. Any pointer to them from With() dangles: only for children the caller looks up each time.
  template <typename Pred>
  void RemoveIf(Pred&& match) TEPHRA_EXCLUDES(mu_) {
    core::MutexLock l(mu_);
    std::erase_if(children_, [&](const auto& kv) { return match(kv.first); });
  }

 private:
  friend class Registry;
  explicit Family(Desc d) : desc_(std::move(d)) {}
  // Calls write(label values, child) for each child in label order, holding mu_ (Registry::Expose).
  template <typename F>
  void ForEachChild(F&& write) const TEPHRA_EXCLUDES(mu_) {
    core::MutexLock l(mu_);
    for (const auto& [values, child] : children_) write(values, *child);
  }
  Desc desc_;
  mutable core::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<M>> children_ TEPHRA_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The process-wide registry that /metrics serves.
  static Registry& Default();

  // Declaring the same name again with the same type and labels returns the existing family (several
  // work queues share workqueue_depth{name}); a conflicting redeclaration is a programming error (aborts),
  // like Prometheus' MustRegister.
  CounterFamily& AddCounter(std::string name, std::string help, std::vector<std::string> labels = {})
      TEPHRA_EXCLUDES(mu_);
  GaugeFamily& AddGauge(std::string name, std::string help, std::vector<std::string> labels = {})
      TEPHRA_EXCLUDES(mu_);
  HistogramFamily& AddHistogram(std::string name, std::string help, std::vector<std::string> labels = {},
                                std::vector<double> buckets = {}) TEPHRA_EXCLUDES(mu_);
  // Declares a component's table of metrics at once.
  void AddAll(std::span<const Desc> table) TEPHRA_EXCLUDES(mu_);

  // Lookup of a declared family; nullptr if absent or of another type.
  CounterFamily* FindCounter(std::string_view name) TEPHRA_EXCLUDES(mu_);
  GaugeFamily* FindGauge(std::string_view name) TEPHRA_EXCLUDES(mu_);
  HistogramFamily* FindHistogram(std::string_view name) TEPHRA_EXCLUDES(mu_);

  // Text exposition, families sorted by name, children by label values.
  std::string Expose() const TEPHRA_EXCLUDES(mu_);

 private:
  struct Entry;
  Entry* Declare(Desc d) TEPHRA_EXCLUDES(mu_);
  mutable core::Mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>, std::less<>> families_ TEPHRA_GUARDED_BY(mu_);
};

[[noreturn]] void DieBadLabels(const std::string& metric, size_t want, size_t got);

template <typename M>
M* Family<M>::With(const std::vector<std::string>& values) {
  if (values.size() != desc_.labels.size()) DieBadLabels(desc_.name, desc_.labels.size(), values.size());
  core::MutexLock l(mu_);
  auto it = children_.find(values);
  if (it != children_.end()) return it->second.get();
  std::unique_ptr<M> m;
  if constexpr (std::is_same_v<M, Histogram>) {
    m = std::make_unique<Histogram>(desc_.buckets);
  } else {
    m = std::make_unique<M>();
  }
  M* raw = m.get();
  children_.emplace(values, std::move(m));
  return raw;
}

// Text-format helpers (exposed for tests and for other exposition code).
std::string EscapeHelp(std::string_view s);        // \ and newline
std::string EscapeLabelValue(std::string_view s);  // \, " and newline
std::string FormatValue(double v);                 // shortest round-trip; +Inf, -Inf, NaN

}  // namespace tephra::kube::metrics
