// IANA time zones for cron schedules (core/cron.h). cctz reads the TZif files of the host's zoneinfo
// database (/usr/share/zoneinfo, or $TZDIR), as Go's time.LoadLocation does in Volcano's controller; cctz
// is used only in tz/src/tz.cc and this header exposes no cctz type.
#pragma once

#include <memory>
#include <string_view>

#include "tephra/core/cron.h"
#include "tephra/core/status.h"

namespace tephra::tz {

// Go's time.LoadLocation(name) for the names a CronJob may carry: "" and "UTC" are UTC; any other name must be
// a zone of the database (kNotFound otherwise, "unknown time zone <name>", Go's text). Names that could
// escape the database directory (a leading '/', "..") are kNotFound too. Loaded zones are cached for the
// life of the process (as Go caches them), so a reconcile never re-reads a file it already read.
core::StatusOr<std::shared_ptr<const core::cron::Zone>> Load(std::string_view name);

}  // namespace tephra::tz
