// ObjectMeta, OwnerReference and the per-kind resource descriptor shared by all typed objects.
//
// Every top-level kind T in tephra::api follows one shape, which the client runtime relies on:
//   struct T {
//     static const ResourceInfo& Resource();   // group/version/kind/plural/namespaced
//     std::string api_version, kind;           // TypeMeta as read (written from Resource() on encode)
//     ObjectMeta metadata;
//     <Spec> spec; <Status> status;             // where the kind has them
//     json extra;                               // unknown top-level keys
//   };
//   Status Decode(const json&, T*);  void Encode(const T&, json*);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"

namespace tephra::api {

struct ResourceInfo {
  std::string_view group;    // "" for core
  std::string_view version;  // "v1", "v1alpha1", ...
  std::string_view kind;     // "Pod"
  std::string_view plural;   // "pods"
  bool namespaced = true;
  // "batch.volcano.sh/v1alpha1" or "v1".
  std::string ApiVersion() const {
    return group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  }
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  json extra;
};
Status Decode(const json& j, OwnerReference* out);
void Encode(const OwnerReference& in, json* j);

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339, as the server wrote it
  std::string deletion_timestamp;  // empty unless being deleted
  std::optional<int64_t> deletion_grace_period_seconds;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  json extra;  // managedFields, selfLink, ... kept verbatim

  // The controlling owner reference (controller: true), if any.
  const OwnerReference* ControllerRef() const;
  std::string Key() const { return namespace_.empty() ? name : namespace_ + "/" + name; }
};
Status Decode(const json& j, ObjectMeta* out);
void Encode(const ObjectMeta& in, json* j);

// Standard list envelope metadata.
struct ListMeta {
  std::string resource_version;
  std::string continue_token;
  std::optional<int64_t> remaining_item_count;
};
Status Decode(const json& j, ListMeta* out);

// Drops metadata.managedFields (and other server bookkeeping that caches never need) in place.
void StripForCache(json* object);

}  // namespace tephra::api
