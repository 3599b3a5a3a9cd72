#include "tephra/api/lookup.h"

namespace tephra::api {

FakeClusterLookup& FakeClusterLookup::AddQueue(std::string name, std::string parent, std::string state) {
  Queue q;
  q.metadata.name = name;
  q.spec.parent = std::move(parent);
  q.spec.weight = 1;
  q.status.state = std::move(state);
  queues[std::move(name)] = std::move(q);
  return *this;
}

std::optional<Queue> FakeClusterLookup::GetQueue(std::string_view name) const {
  auto it = queues.find(name);
  if (it == queues.end()) return std::nullopt;
  return it->second;
}

std::vector<Queue> FakeClusterLookup::ListQueues() const {
  std::vector<Queue> out;
  out.reserve(queues.size());
  for (const auto& [_, q] : queues) out.push_back(q);
  return out;
}

bool FakeClusterLookup::PvcExists(std::string_view ns, std::string_view name) const {
  auto it = pvcs.find(ns);
  if (it == pvcs.end()) return false;
  for (const auto& n : it->second)
    if (n == name) return true;
  return false;
}

std::optional<int32_t> FakeClusterLookup::PriorityClassValue(std::string_view name) const {
  auto it = priority_classes.find(name);
  if (it == priority_classes.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, std::string> FakeClusterLookup::NamespaceAnnotations(std::string_view ns) const {
  auto it = namespace_annotations.find(ns);
  if (it == namespace_annotations.end()) return {};
  return it->second;
}

bool FakeClusterLookup::QueueHasAllocatedPods(std::string_view queue) const {
  auto it = queues_with_pods.find(queue);
  return it != queues_with_pods.end() && it->second;
}

}  // namespace tephra::api
