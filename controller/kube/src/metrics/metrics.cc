#include "tephra/kube/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <variant>

namespace tephra::kube::metrics {

std::vector<double> DefaultBuckets() { return {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}; }

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> ExponentialBucketsRange(double min, double max, int count) {
  if (count < 2 || min <= 0 || max <= min) return {min};
  const double factor = std::pow(max / min, 1.0 / (count - 1));
  std::vector<double> b;
  double v = min;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  b.back() = max;  // no drift at the top
  return b;
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  if (bounds_.empty()) bounds_ = DefaultBuckets();
  std::sort(bounds_.begin(), bounds_.end());
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size());
  for (size_t i = 0; i < bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  if (i < bounds_.size()) buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Histogram::CumulativeCount(size_t i) const {
  uint64_t c = 0;
  for (size_t k = 0; k <= i && k < bounds_.size(); ++k) c += buckets_[k].load(std::memory_order_relaxed);
  return c;
}

void DieBadLabels(const std::string& metric, size_t want, size_t got) {
  std::fprintf(stderr, "metric %s: %zu label values given, %zu declared\n", metric.c_str(), got, want);
  std::abort();
}

struct Registry::Entry {
  Desc desc;
  std::variant<std::unique_ptr<CounterFamily>, std::unique_ptr<GaugeFamily>, std::unique_ptr<HistogramFamily>> family;
};

Registry::Registry() = default;
Registry::~Registry() = default;

Registry& Registry::Default() {
  static Registry* r = new Registry();  // never destroyed: metrics may be touched during exit
  return *r;
}

Registry::Entry* Registry::Declare(Desc d) {
  if (d.type == Type::kHistogram && d.buckets.empty()) d.buckets = DefaultBuckets();
  core::MutexLock l(mu_);
  auto it = families_.find(d.name);
  if (it != families_.end()) {
    const Desc& e = it->second->desc;
    if (e.type != d.type || e.labels != d.labels || (d.type == Type::kHistogram && e.buckets != d.buckets)) {
      std::fprintf(stderr, "metric %s redeclared with a different type, labels or buckets\n", d.name.c_str());
      std::abort();
    }
    return it->second.get();
  }
  auto entry = std::make_unique<Entry>();
  entry->desc = d;
  switch (d.type) {
    case Type::kCounter: entry->family = std::unique_ptr<CounterFamily>(new CounterFamily(d)); break;
    case Type::kGauge: entry->family = std::unique_ptr<GaugeFamily>(new GaugeFamily(d)); break;
    case Type::kHistogram: entry->family = std::unique_ptr<HistogramFamily>(new HistogramFamily(d)); break;
  }
  Entry* raw = entry.get();
  families_.emplace(d.name, std::move(entry));
  return raw;
}

CounterFamily& Registry::AddCounter(std::string name, std::string help, std::vector<std::string> labels) {
  return *std::get<0>(Declare({Type::kCounter, std::move(name), std::move(help), std::move(labels), {}})->family);
}
GaugeFamily& Registry::AddGauge(std::string name, std::string help, std::vector<std::string> labels) {
  return *std::get<1>(Declare({Type::kGauge, std::move(name), std::move(help), std::move(labels), {}})->family);
}
HistogramFamily& Registry::AddHistogram(std::string name, std::string help, std::vector<std::string> labels,
                                        std::vector<double> buckets) {
  return *std::get<2>(
      Declare({Type::kHistogram, std::move(name), std::move(help), std::move(labels), std::move(buckets)})->family);
}

void Registry::AddAll(std::span<const Desc> table) {
  for (const auto& d : table) Declare(d);
}

CounterFamily* Registry::FindCounter(std::string_view name) {
  core::MutexLock l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second->family.index() != 0) return nullptr;
  return std::get<0>(it->second->family).get();
}
GaugeFamily* Registry::FindGauge(std::string_view name) {
  core::MutexLock l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second->family.index() != 1) return nullptr;
  return std::get<1>(it->second->family).get();
}
HistogramFamily* Registry::FindHistogram(std::string_view name) {
  core::MutexLock l(mu_);
  auto it = families_.find(name);
  if (it == families_.end() || it->second->family.index() != 2) return nullptr;
  return std::get<2>(it->second->family).get();
}

std::string EscapeHelp(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string EscapeLabelValue(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '"') o += "\\\"";
    else o += c;
  }
  return o;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

// `{a="x",b="y"}` (with an optional extra label appended, for histogram `le`), or "" with no labels.
std::string LabelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      const char* extra_name = nullptr, const std::string& extra_value = "") {
  if (names.empty() && !extra_name) return "";
  std::string o = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) o += ",";
    o += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (extra_name) {
    if (!names.empty()) o += ",";
    o += std::string(extra_name) + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  return o + "}";
}

}  // namespace

std::string Registry::Expose() const {
  core::MutexLock l(mu_);
  std::string out;
  for (const auto& kv : families_) {
    // Named copies, not structured bindings: lambdas below capture them (clang 14 cannot capture bindings).
    const std::string& name = kv.first;
    const auto& entry = kv.second;
    const Desc& d = entry->desc;
    static const char* kTypeNames[] = {"counter", "gauge", "histogram"};
    out += "# HELP " + name + " " + EscapeHelp(d.help) + "\n";
    out += "# TYPE " + name + " " + kTypeNames[static_cast<int>(d.type)] + "\n";
    switch (d.type) {
      case Type::kCounter: {
        auto& f = *std::get<0>(entry->family);
        f.ForEachChild([&](const std::vector<std::string>& v, const Counter& c) {
          out += name + LabelText(d.labels, v) + " " + FormatValue(c.Value()) + "\n";
        });
        break;
      }
      case Type::kGauge: {
        auto& f = *std::get<1>(entry->family);
        f.ForEachChild([&](const std::vector<std::string>& v, const Gauge& g) {
          out += name + LabelText(d.labels, v) + " " + FormatValue(g.Value()) + "\n";
        });
        break;
      }
      case Type::kHistogram: {
        auto& f = *std::get<2>(entry->family);
        f.ForEachChild([&](const std::vector<std::string>& v, const Histogram& h) {
          // Read count first: a concurrent Observe may make buckets slightly ahead of it, never behind
          // in a way that breaks the +Inf == count rule below (we print count for +Inf).
          uint64_t count = h.Count();
          double sum = h.Sum();
          const auto& b = h.UpperBounds();
          for (size_t i = 0; i < b.size(); ++i) {
            out += name + "_bucket" + LabelText(d.labels, v, "le", FormatValue(b[i])) + " " +
                   std::to_string(std::min(h.CumulativeCount(i), count)) + "\n";
          }
          out += name + "_bucket" + LabelText(d.labels, v, "le", "+Inf") + " " + std::to_string(count) + "\n";
          out += name + "_sum" + LabelText(d.labels, v) + " " + FormatValue(sum) + "\n";
          out += name + "_count" + LabelText(d.labels, v) + " " + std::to_string(count) + "\n";
        });
        break;
      }
    }
  }
  return out;
}

}  // namespace tephra::kube::metrics
