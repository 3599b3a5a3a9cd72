// Umbrella header for every typed kind, plus the generic list envelope.
#pragma once

#include <string>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/bus.h"
#include "tephra/api/codec.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/flow.h"
#include "tephra/api/meta.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"

namespace tephra::api {

// {"apiVersion": ..., "kind": "<Kind>List", "metadata": {...}, "items": [...]}.
template <typename T>
struct ObjectList {
  ListMeta metadata;
  std::vector<T> items;
};

template <typename T>
Status Decode(const json& j, ObjectList<T>* out) {
  json extra;
  FieldReader r(j, &extra);
  r.Get("metadata", &out->metadata).Get("items", &out->items);
  return r.status();
}

}  // namespace tephra::api
