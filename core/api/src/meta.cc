#include "tephra/api/meta.h"

namespace tephra::api {

Status Decode(const json& j, OwnerReference* out) {
  FieldReader r(j, &out->extra);
  r.Get("apiVersion", &out->api_version)
      .Get("kind", &out->kind)
      .Get("name", &out->name)
      .Get("uid", &out->uid)
      .Get("controller", &out->controller)
      .Get("blockOwnerDeletion", &out->block_owner_deletion);
  return r.status();
}

void Encode(const OwnerReference& in, json* j) {
  FieldWriter w(in.extra, j);
  w.SetAlways("apiVersion", in.api_version)
      .SetAlways("kind", in.kind)
      .SetAlways("name", in.name)
      .SetAlways("uid", in.uid)
      .Set("controller", in.controller)
      .Set("blockOwnerDeletion", in.block_owner_deletion);
}

Status Decode(const json& j, ObjectMeta* out) {
  FieldReader r(j, &out->extra);
  r.Get("name", &out->name)
      .Get("generateName", &out->generate_name)
      .Get("namespace", &out->namespace_)
      .Get("uid", &out->uid)
      .Get("resourceVersion", &out->resource_version)
      .Get("generation", &out->generation)
      .Get("creationTimestamp", &out->creation_timestamp)
      .Get("deletionTimestamp", &out->deletion_timestamp)
      .Get("deletionGracePeriodSeconds", &out->deletion_grace_period_seconds)
      .Get("labels", &out->labels)
      .Get("annotations", &out->annotations)
      .Get("ownerReferences", &out->owner_references)
      .Get("finalizers", &out->finalizers);
  return r.status();
}

void Encode(const ObjectMeta& in, json* j) {
  FieldWriter w(in.extra, j);
  w.Set("name", in.name)
      .Set("generateName", in.generate_name)
      .Set("namespace", in.namespace_)
      .Set("uid", in.uid)
      .Set("resourceVersion", in.resource_version)
      .Set("generation", in.generation)
      .Set("creationTimestamp", in.creation_timestamp)
      .Set("deletionTimestamp", in.deletion_timestamp)
      .Set("deletionGracePeriodSeconds", in.deletion_grace_period_seconds)
      .Set("labels", in.labels)
      .Set("annotations", in.annotations)
      .Set("ownerReferences", in.owner_references)
      .Set("finalizers", in.finalizers);
}

const OwnerReference* ObjectMeta::ControllerRef() const {
  for (const auto& o : owner_references)
    if (o.controller.value_or(false)) return &o;
  return nullptr;
}

Status Decode(const json& j, ListMeta* out) {
  json extra;
  FieldReader r(j, &extra);
  r.Get("resourceVersion", &out->resource_version)
      .Get("continue", &out->continue_token)
      .Get("remainingItemCount", &out->remaining_item_count);
  return r.status();
}

void StripForCache(json* object) {
  if (!object->is_object()) return;
  auto m = object->find("metadata");
  if (m != object->end() && m->is_object()) {
    m->erase("managedFields");
    m->erase("selfLink");
  }
}

}  // namespace tephra::api
