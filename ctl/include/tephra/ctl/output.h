// Printing shared by the commands: printf-style formatting (vcctl's tables are Go format strings, copied
// verbatim so column widths match byte for byte), kubectl's human ages, and -o json|yaml.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"
#include "tephra/core/clock.h"
#include "tephra/core/status.h"

namespace tephra::ctl {

// snprintf into a std::string.
std::string Sprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Kubernetes' duration.HumanDuration ("45s", "2m30s", "3h", "4d5h", "2y10d").
std::string HumanDuration(std::chrono::nanoseconds d);
// Age of an RFC 3339 timestamp at clock's wall time; "<unknown>" when absent or unparsable.
std::string Age(const std::string& rfc3339, const core::Clock& clock);
// Go's time.Time.String() of an RFC 3339 timestamp in UTC ("2026-01-02 15:04:05 +0000 UTC"); the zero time
// when empty, like a metav1.Time that was never set.
std::string GoTimeString(const std::string& rfc3339);
// "2006-01-02" of an RFC 3339 timestamp (UTC), "0001-01-01" when empty.
std::string GoDate(const std::string& rfc3339);

// Output formats of the read commands: "" (vcctl's table), "wide" (the table plus columns), "json", "yaml".
enum class Format { kTable, kWide, kJson, kYaml };
core::StatusOr<Format> ParseFormat(std::string_view text);

// Prints one object (-o json|yaml) with apiVersion/kind filled in from `r` and managedFields dropped.
void PrintObject(std::ostream& out, api::json obj, const api::ResourceInfo& r, Format f);
// Prints objects as a kubectl-style `List` (kind: List, items: [...]).
void PrintList(std::ostream& out, const std::vector<api::json>& items, const api::ResourceInfo& r, Format f);

}  // namespace tephra::ctl
