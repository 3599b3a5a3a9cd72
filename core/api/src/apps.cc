#include "tephra/api/apps.h"

namespace tephra::api {
namespace {

// `map_selector`: spec.selector is a plain label map (ReplicationController), not a LabelSelector.
Status DecodeWorkload(const json& j, bool map_selector, Workload* out) {
  *out = Workload{};
  if (!j.is_object()) return core::InvalidArgumentError("workload: not a JSON object");
  if (auto it = j.find("apiVersion"); it != j.end() && it->is_string()) out->api_version = it->get<std::string>();
  if (auto it = j.find("kind"); it != j.end() && it->is_string()) out->kind = it->get<std::string>();
  if (auto it = j.find("metadata"); it != j.end()) TEPHRA_RETURN_IF_ERROR(Decode(*it, &out->metadata));
  auto spec = j.find("spec");
  if (spec == j.end() || !spec->is_object()) return Status::OK();
  if (auto r = spec->find("replicas"); r != spec->end() && r->is_number_integer()) out->replicas = r->get<int32_t>();
  auto sel = spec->find("selector");
  if (sel == spec->end() || sel->is_null()) return Status::OK();
  // A selector that does not decode is left out rather than losing the object: the API server validates
  // selectors, and the scale watch needs the rest.
  core::LabelSelector s;
  if (map_selector) {
    if (!sel->is_object()) return Status::OK();
    for (const auto& [k, v] : sel->items()) {
      if (!v.is_string()) return Status::OK();
      s.match_labels[k] = v.get<std::string>();
    }
  } else if (!Decode(*sel, &s).ok()) {
    return Status::OK();
  }
  out->selector = std::move(s);
  return Status::OK();
}

}  // namespace

const ResourceInfo& ReplicaSet::Resource() {
  static const ResourceInfo kInfo{"apps", "v1", "ReplicaSet", "replicasets", true};
  return kInfo;
}
const ResourceInfo& StatefulSet::Resource() {
  static const ResourceInfo kInfo{"apps", "v1", "StatefulSet", "statefulsets", true};
  return kInfo;
}
const ResourceInfo& ReplicationController::Resource() {
  static const ResourceInfo kInfo{"", "v1", "ReplicationController", "replicationcontrollers", true};
  return kInfo;
}

Status Decode(const json& j, ReplicaSet* out) { return DecodeWorkload(j, false, out); }
Status Decode(const json& j, StatefulSet* out) { return DecodeWorkload(j, false, out); }
Status Decode(const json& j, ReplicationController* out) { return DecodeWorkload(j, true, out); }

}  // namespace tephra::api
