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
