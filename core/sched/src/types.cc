#include "tephra/sched/types.h"

#include <cstdlib>

namespace tephra::sched {

const char* TaskStatusName(TaskStatus s) {
  switch (s) {
    case TaskStatus::kPending: return "Pending";
    case TaskStatus::kAllocated: return "Allocated";
    case TaskStatus::kPipelined: return "Pipelined";
    case TaskStatus::kBinding: return "Binding";
    case TaskStatus::kBound: return "Bound";
    case TaskStatus::kRunning: return "Running";
    case TaskStatus::kReleasing: return "Releasing";
    case TaskStatus::kSucceeded: return "Succeeded";
    case TaskStatus::kFailed: return "Failed";
    case TaskStatus::kUnknown: return "Unknown";
  }
  return "Unknown";
}

bool OccupiesNode(TaskStatus s) {
  return s == TaskStatus::kAllocated || s == TaskStatus::kBinding || s == TaskStatus::kBound ||
         s == TaskStatus::kRunning || s == TaskStatus::kReleasing;
}

bool IsAllocatedStatus(TaskStatus s) {
  return s == TaskStatus::kAllocated || s == TaskStatus::kBinding || s == TaskStatus::kBound ||
         s == TaskStatus::kRunning;
}

const char* PodGroupPhaseName(PodGroupPhase p) {
  switch (p) {
    case PodGroupPhase::kPending: return "Pending";
    case PodGroupPhase::kInqueue: return "Inqueue";
    case PodGroupPhase::kRunning: return "Running";
    case PodGroupPhase::kUnknown: return "Unknown";
    case PodGroupPhase::kCompleted: return "Completed";
  }
  return "Unknown";
}

namespace {
bool ParseInt(const std::string& s, long long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return end && *end == '\0';
}
}  // namespace

bool MatchesRequirement(const SelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  switch (r.op) {
    case SelectorOp::kExists: return has;
    case SelectorOp::kDoesNotExist: return !has;
    case SelectorOp::kIn:
      if (!has) return false;
      for (const auto& v : r.values) if (v == it->second) return true;
      return false;
    case SelectorOp::kNotIn:
      if (!has) return true;
      for (const auto& v : r.values) if (v == it->second) return false;
      return true;
    case SelectorOp::kInvalid: return false;
    case SelectorOp::kGt:
    case SelectorOp::kLt: {
      long long a = 0, b = 0;
      if (!has || r.values.size() != 1 || !ParseInt(it->second, &a) || !ParseInt(r.values[0], &b)) return false;
      return r.op == SelectorOp::kGt ? a > b : a < b;
    }
  }
  return false;
}

bool LabelSelector::Matches(const Labels& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions)
    if (!MatchesRequirement(r, labels)) return false;
  return true;
}

bool LabelSelector::Valid() const {
  for (const auto& r : match_expressions)
    if (r.op != SelectorOp::kIn && r.op != SelectorOp::kNotIn && r.op != SelectorOp::kExists &&
        r.op != SelectorOp::kDoesNotExist)
      return false;
  return true;
}

bool Toleration::Tolerates(const Taint& t) const {
  if (effect && *effect != t.effect) return false;
  if (key.empty()) return op_exists;  // empty key + Exists tolerates every taint
  if (key != t.key) return false;
  return op_exists || value == t.value;
}

int JobInfo::ReadyCount() const {
  return Count(TaskStatus::kAllocated) + Count(TaskStatus::kBinding) + Count(TaskStatus::kBound) +
         Count(TaskStatus::kRunning) + Count(TaskStatus::kSucceeded);
}

int JobInfo::TotalTasks() const {
  int n = 0;
  for (int c : status_count) n += c;
  return n;
}

}  // namespace tephra::sched
