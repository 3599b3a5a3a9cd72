// Read-only view of cluster state needed by defaulting and validation, so those functions stay pure.
// The webhook implements it over informer caches; tests implement it over maps (FakeClusterLookup).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/scheduling.h"

namespace tephra::api {

class ClusterLookup {
 public:
  virtual ~ClusterLookup() = default;
  // The queue named `name`, or nullopt if it does not exist.
  virtual std::optional<Queue> GetQueue(std::string_view name) const = 0;
  // All queues (for hierarchy checks: children, siblings, subtree capabilities).
  virtual std::vector<Queue> ListQueues() const = 0;
  virtual bool PvcExists(std::string_view ns, std::string_view name) const = 0;
  // Value of a PriorityClass, or nullopt if unknown.
  virtual std::optional<int32_t> PriorityClassValue(std::string_view name) const = 0;
  // Annotations of a namespace (empty if unknown).
  virtual std::map<std::string, std::string> NamespaceAnnotations(std::string_view ns) const = 0;
  // Whether pods are currently allocated to the queue (optional queue-allocated-pods checks).
  virtual bool QueueHasAllocatedPods(std::string_view queue) const = 0;
};

// In-memory implementation for tests and offline tools.
class FakeClusterLookup : public ClusterLookup {
 public:
  std::map<std::string, Queue, std::less<>> queues;
  std::map<std::string, std::vector<std::string>, std::less<>> pvcs;  // namespace -> names
  std::map<std::string, int32_t, std::less<>> priority_classes;
  std::map<std::string, std::map<std::string, std::string>, std::less<>> namespace_annotations;
  std::map<std::string, bool, std::less<>> queues_with_pods;

  // Adds an Open queue with the given parent (empty = none).
  FakeClusterLookup& AddQueue(std::string name, std::string parent = "", std::string state = "Open");

  std::optional<Queue> GetQueue(std::string_view name) const override;
  std::vector<Queue> ListQueues() const override;
  bool PvcExists(std::string_view ns, std::string_view name) const override;
  std::optional<int32_t> PriorityClassValue(std::string_view name) const override;
  std::map<std::string, std::string> NamespaceAnnotations(std::string_view ns) const override;
  bool QueueHasAllocatedPods(std::string_view queue) const override;
};

}  // namespace tephra::api
