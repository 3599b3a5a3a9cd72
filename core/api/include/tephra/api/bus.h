// bus.volcano.sh/v1alpha1 Command (docs/volcano-behaviour.md, "Command"): a one-shot request (AbortJob,
// OpenQueue, ...) that the controller consumes and deletes. No spec/status: the fields are top-level.
#pragma once

#include <optional>
#include <string>

#include "tephra/api/batch.h"  // action constants
#include "tephra/api/codec.h"
#include "tephra/api/meta.h"

namespace tephra::api {

struct Command {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  std::string action;
  std::optional<OwnerReference> target;
  std::string reason;
  std::string message;
  json extra;
};
Status Decode(const json& j, Command* out);
void Encode(const Command& in, json* j);

}  // namespace tephra::api
