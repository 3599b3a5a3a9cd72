// Workload controllers that own pods: apps/v1 ReplicaSet and StatefulSet, v1 ReplicationController. Decoded
// only as far as Tephra reads them (metadata, spec.replicas, spec.selector): the PodGroup controller
// watches their scale, the scheduler their selectors (system-default topology spread). Their informer
// caches are read-only, so nothing else is kept and nothing is written back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"

namespace tephra::api {

struct Workload {
  std::string api_version, kind;
  ObjectMeta metadata;
  int32_t replicas = 1;  // spec.replicas; the API server defaults a missing value to 1
  // spec.selector; a ReplicationController's plain map is read into match_labels. nullopt: absent.
  std::optional<core::LabelSelector> selector;
  json extra;  // unused (nothing unknown is kept); present for the kind shape of meta.h
};

struct ReplicaSet : Workload {
  static const ResourceInfo& Resource();
};
struct StatefulSet : Workload {
  static const ResourceInfo& Resource();
};
struct ReplicationController : Workload {
  static const ResourceInfo& Resource();
};

Status Decode(const json& j, ReplicaSet* out);
Status Decode(const json& j, StatefulSet* out);
Status Decode(const json& j, ReplicationController* out);

}  // namespace tephra::api
