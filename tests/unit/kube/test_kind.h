// A minimal API kind for informer tests, shaped like every tephra::api top-level kind (see api/meta.h).
#pragma once

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"

namespace tephra::testkind {

struct Widget {
  static const api::ResourceInfo& Resource() {
    static const api::ResourceInfo r{"example.com", "v1", "Widget", "widgets", true};
    return r;
  }
  std::string api_version, kind;
  api::ObjectMeta metadata;
  int64_t size = 0;
  api::json extra;
};

inline api::Status Decode(const api::json& j, Widget* out) {
  api::FieldReader r(j, &out->extra);
  r.Get("apiVersion", &out->api_version).Get("kind", &out->kind).Get("metadata", &out->metadata);
  api::json spec;
  r.Get("spec", &spec);
  if (spec.is_object() && spec.contains("size") && spec["size"].is_number_integer()) out->size = spec["size"];
  return r.status();
}
inline void DropUnknown(Widget* w) {
  w->extra = api::json();
  w->metadata.extra = api::json();
}

inline api::json MakeWidget(const std::string& ns, const std::string& name, const std::string& rv, int64_t size = 1,
                            const std::string& owner_uid = "") {
  api::json j = {{"apiVersion", "example.com/v1"},
                 {"kind", "Widget"},
                 {"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}, {"uid", "uid-" + name}}},
                 {"spec", {{"size", size}}}};
  if (!owner_uid.empty())
    j["metadata"]["ownerReferences"] = api::json::array({{{"apiVersion", "v1"}, {"kind", "Owner"}, {"name", "o"}, {"uid", owner_uid}}});
  return j;
}

}  // namespace tephra::testkind
