// Go time.Duration strings as used by metav1.Duration fields: the parser lives in tephra_core
// (tephra/core/duration.h), where the scheduling core's plugin arguments can use it too.
#pragma once

#include "tephra/core/duration.h"

namespace tephra::api {
using core::FormatGoDuration;
using core::ParseGoDuration;
}  // namespace tephra::api
