#include "podgroup/workload.h"

namespace tephra::reconcilers::podgroup {
namespace {

core::Status DecodeWorkload(const api::json& j, ScalableWorkload* out) {
  *out = ScalableWorkload{};
  if (!j.is_object()) return core::InvalidArgumentError("workload: not a JSON object");
  if (auto it = j.find("apiVersion"); it != j.end() && it->is_string()) out->api_version = it->get<std::string>();
  if (auto it = j.find("kind"); it != j.end() && it->is_string()) out->kind = it->get<std::string>();
  if (auto it = j.find("metadata"); it != j.end()) TEPHRA_RETURN_IF_ERROR(api::Decode(*it, &out->metadata));
  if (auto spec = j.find("spec"); spec != j.end() && spec->is_object())
    if (auto r = spec->find("replicas"); r != spec->end() && r->is_number_integer()) out->replicas = r->get<int32_t>();
  return core::Status::OK();
}

}  // namespace

const api::ResourceInfo& ReplicaSet::Resource() {
  static const api::ResourceInfo kInfo{"apps", "v1", "ReplicaSet", "replicasets", true};
  return kInfo;
}
const api::ResourceInfo& StatefulSet::Resource() {
  static const api::ResourceInfo kInfo{"apps", "v1", "StatefulSet", "statefulsets", true};
  return kInfo;
}

core::Status Decode(const api::json& j, ReplicaSet* out) { return DecodeWorkload(j, out); }
core::Status Decode(const api::json& j, StatefulSet* out) { return DecodeWorkload(j, out); }

}  // namespace tephra::reconcilers::podgroup
