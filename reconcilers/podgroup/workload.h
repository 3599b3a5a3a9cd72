// The two workload kinds whose scale-to-zero removes their pods' automatic PodGroup (docs/controllers.md):
// apps/v1 ReplicaSet and StatefulSet. Only what the PodGroup controller reads is decoded (metadata and
// spec.replicas); the informer cache is read-only, so nothing else is kept.
#pragma once

#include <cstdint>
#include <string>

#include "tephra/api/meta.h"
#include "tephra/core/status.h"

namespace tephra::reconcilers::podgroup {

struct ScalableWorkload {
  std::string api_version, kind;
  api::ObjectMeta metadata;
  int32_t replicas = 1;  // spec.replicas; the API server defaults a missing value to 1
  api::json extra;       // unused (nothing unknown is kept); present for the kind shape of meta.h
};

struct ReplicaSet : ScalableWorkload {
  static const api::ResourceInfo& Resource();
};
struct StatefulSet : ScalableWorkload {
  static const api::ResourceInfo& Resource();
};

core::Status Decode(const api::json& j, ReplicaSet* out);
core::Status Decode(const api::json& j, StatefulSet* out);

}  // namespace tephra::reconcilers::podgroup
