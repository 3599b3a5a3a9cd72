#include "tephra/api/bus.h"

#include "codec_macros.h"

namespace tephra::api {

#define CMD_FIELDS(F, A) \
  F("metadata", metadata) F("action", action) F("target", target) F("reason", reason) F("message", message)
TEPHRA_API_KIND(Command, CMD_FIELDS, "bus.volcano.sh", "v1alpha1", "commands", true)

}  // namespace tephra::api
