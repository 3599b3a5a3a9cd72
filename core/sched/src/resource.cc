#include "tephra/sched/resource.h"

#include <string>

namespace tephra::sched {

ResourceRegistry::ResourceRegistry() : names_{"cpu", "memory", "pods"} {}

std::optional<int> ResourceRegistry::Find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return std::nullopt;
}

std::optional<int> ResourceRegistry::Intern(std::string_view name) {
  if (auto i = Find(name)) return i;
  if (names_.size() >= static_cast<size_t>(kMaxResources)) return std::nullopt;
  names_.emplace_back(name);
  return static_cast<int>(names_.size() - 1);
}

std::string ResourceRegistry::Format(const Resource& r) const {
  std::string out;
  for (int i = 0; i < size(); ++i) {
    int64_t v = r.Get(i);
    if (v == 0) continue;
    if (!out.empty()) out += ", ";
    out += names_[static_cast<size_t>(i)];
    out += ' ';
    if (v >= kUnlimited) {
      out += "unlimited";
    } else if (i == kCpu) {
      out += std::to_string(v) + "m";
    } else {
      out += std::to_string(v);
    }
  }
  return out;
}

}  // namespace tephra::sched
