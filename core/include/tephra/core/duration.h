// Go time.Duration strings as used by metav1.Duration fields ("1h30m", "30s", "1.5s", "-2m", "0"). In tephra_core:
// the API codecs and the scheduling core's plugin arguments both read them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "tephra/core/status.h"

namespace tephra::core {

// Parses a Go duration (units ns, us/µs, ms, s, m, h). Errors quote the input.
StatusOr<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);
// Formats like Go's Duration.String(): "1h2m3.5s", "150ms", "0s".
std::string FormatGoDuration(std::chrono::nanoseconds d);

}  // namespace tephra::core
