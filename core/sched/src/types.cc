#include "tephra/sched/types.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

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

bool HostPort::Conflicts(const HostPort& o) const {
  if (port != o.port || port <= 0) return false;
  auto proto = [](const std::string& p) -> std::string_view { return p.empty() ? std::string_view("TCP") : p; };
  if (proto(protocol) != proto(o.protocol)) return false;
  auto any = [](const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; };
  return any(ip) || any(o.ip) || ip == o.ip;
}

int64_t ScoreCpu(const TaskInfo& t) {
  if (t.score_cpu >= 0) return t.score_cpu;
  const int64_t r = t.request.Get(kCpu);
  return r > 0 ? r : kDefaultScoreMilliCpu;
}

int64_t ScoreMemory(const TaskInfo& t) {
  if (t.score_memory >= 0) return t.score_memory;
  const int64_t r = t.request.Get(kMemory);
  return r > 0 ? r : kDefaultScoreMemory;
}

bool OccupiesNode(TaskStatus s) {
  return s == TaskStatus::kAllocated || s == TaskStatus::kBinding || s == TaskStatus::kBound ||
         s == TaskStatus::kRunning || s == TaskStatus::kReleasing;
}

bool OnNodeForScheduling(TaskStatus s) { return OccupiesNode(s) || s == TaskStatus::kPipelined; }

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

bool PodAffinityTerm::Selects(const TaskInfo& pod) const {
  if (null_selector) return false;
  if (!all_namespaces && std::find(namespaces.begin(), namespaces.end(), pod.ns) == namespaces.end()) return false;
  return selector.Matches(pod.labels);
}

int JobInfo::ReadyCount() const {
  return Count(TaskStatus::kAllocated) + Count(TaskStatus::kBinding) + Count(TaskStatus::kBound) +
         Count(TaskStatus::kRunning) + Count(TaskStatus::kSucceeded);
}

std::string CsiLimitKey(const std::string& driver) {
  // kube's GetCSIAttachLimitKey; names of 63 characters or more are hashed there, which is not reproduced
  // (docs/scheduler.md): a CSINode limit still applies to them, a node-allocatable one does not.
  return "attachable-volumes-csi-" + driver;
}

int JobInfo::SubGroupOf(const TaskInfo& t, std::string* id) const {
  for (size_t i = 0; i < sub_group_policies.size(); ++i) {
    const SubGroupPolicy& p = sub_group_policies[i];
    if (p.match_label_keys.empty()) continue;
    if (p.selector && !p.selector->Matches(t.labels)) continue;
    std::string values;
    bool all = true;
    for (const auto& key : p.match_label_keys) {
      auto it = t.labels.find(key);
      if (it == t.labels.end() || it->second.empty()) {
        all = false;
        break;
      }
      if (!values.empty()) values += '-';
      values += it->second;
    }
    if (!all) continue;
    if (id) *id = std::move(values);
    return static_cast<int>(i);
  }
  if (id) id->clear();
  return -1;
}

int JobInfo::TotalTasks() const {
  int n = 0;
  for (int c : status_count) n += c;
  return n;
}

}  // namespace tephra::sched
