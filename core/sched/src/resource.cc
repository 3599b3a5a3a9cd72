#include "tephra/sched/resource.h"

#include <algorithm>
#include <string>

namespace tephra::sched {

ResourceRegistry::ResourceRegistry() : names_{"cpu", "memory", "pods"} {}

std::optional<int> ResourceRegistry::Find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return std::nullopt;
}

const std::string& ResourceRegistry::Name(int index) const {
  static const std::string kUnofferedName = "resources no node offers";
  return index == kUnoffered ? kUnofferedName : names_[static_cast<size_t>(index)];
}

std::optional<int> ResourceRegistry::Intern(std::string_view name) {
  if (auto i = Find(name)) return i;
  if (names_.size() >= static_cast<size_t>(kUnoffered)) return std::nullopt;
  names_.emplace_back(name);
  return static_cast<int>(names_.size() - 1);
}

Resource Shortfall(const Resource& need, const Resource& avail) {
  Resource out;
  for (int i = 0; i < kMaxResources; ++i)
    if (need.Get(i) > 0 && need.Get(i) > avail.Get(i)) out.Set(i, need.Get(i) - std::max<int64_t>(0, avail.Get(i)));
  return out;
}

std::string UnofferedText(const std::vector<std::string>& names) {
  if (names.empty()) return "resources no node offers";
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 8);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out + ", which no node offers";
}

namespace {
// Kubernetes' canonical quantity forms, so messages read like the pod specs users wrote: whole cores as
// "4", fractions as "500m"; bytes with the largest binary suffix that divides them exactly ("16Gi").
std::string Quantity(int i, int64_t v) {
  if (v >= kUnlimited) return "unlimited";
  if (i == kCpu) return v % 1000 == 0 ? std::to_string(v / 1000) : std::to_string(v) + "m";
  if (i == kMemory && v != 0) {
    static constexpr const char* kSuffix[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    for (int k = 0; k < 6; ++k) {
      int64_t unit = int64_t{1} << (10 * (6 - k));
      if (v % unit == 0) return std::to_string(v / unit) + kSuffix[k];
    }
  }
  return std::to_string(v);
}
}  // namespace

std::string ResourceRegistry::Format(const Resource& r, const char* if_empty) const {
  std::string out;
  for (int i = 0; i < size(); ++i) {
    int64_t v = r.Get(i);
    if (v == 0 || i == kPods) continue;
    if (!out.empty()) out += ", ";
    out += names_[static_cast<size_t>(i)];
    out += ' ';
    out += Quantity(i, v);
  }
  if (r.Get(kUnoffered) > 0) out += (out.empty() ? "" : ", ") + Name(kUnoffered);
  return out.empty() ? std::string(if_empty) : out;
}

std::string ResourceRegistry::FormatDims(const Resource& r, const Resource& dims) const {
  std::string out;
  for (int i = 0; i < size(); ++i) {
    if (dims.Get(i) <= 0 || i == kPods) continue;
    if (!out.empty()) out += ", ";
    out += names_[static_cast<size_t>(i)] + ' ' + Quantity(i, std::max<int64_t>(0, r.Get(i)));
  }
  if (dims.Get(kUnoffered) > 0) out += (out.empty() ? "none of the " : ", none of the ") + Name(kUnoffered);
  return out;
}

}  // namespace tephra::sched
