// For documents that hold many objects (a LIST page, a watch event): one object nested too deep must not cost
// the others. Kept apart from codec.h, which nearly every file includes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"

namespace tephra::api {

// Parses like ParseJson, but a container nested deeper than max_depth becomes null instead of failing the whole
// document, so the caller can pass over the one object that held it and keep the rest. Never recurses.
// `pruned` lists where values were replaced: the first `path_components` keys (objects) or indexes (arrays) from
// the root, e.g. {"items", "3"}; each distinct prefix once.
struct PrunedJson {
  json value;
  std::vector<std::vector<std::string>> pruned;
};
StatusOr<PrunedJson> ParseJsonPruned(std::string_view text, int max_depth = 512, size_t path_components = 2);

}  // namespace tephra::api
