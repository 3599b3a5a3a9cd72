// `job wait`: block until a vcjob reaches a state, driven by a watch (re-listed on expiry or 410), never by
// polling. Exit codes are ExitCode (ctl.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "tephra/core/status.h"
#include "tephra/ctl/context.h"

namespace tephra::ctl {

enum class WaitFor {
  kCompleted,  // --for=Completed
  kRunning,    // --for=Running: Running or a later successful phase (Completing, Completed)
  kTerminal,   // --for=terminal: any end state; only Completed exits 0
};

// Parses the --for value ("Completed", "Running", "terminal"; case-insensitive).
core::StatusOr<WaitFor> ParseWaitFor(std::string_view text);

// The one phase -> exit code mapping: the exit code once `phase` settles the wait, nullopt to keep waiting.
// Completed -> 0; Failed -> 3; Aborted/Terminated -> 4; for kRunning also Running/Completing -> 0.
std::optional<int> WaitExitCode(WaitFor target, std::string_view phase);

struct WaitOptions {
  std::string ns = "default";
  std::string name;
  WaitFor target = WaitFor::kCompleted;
  std::optional<std::chrono::milliseconds> timeout;  // none: wait for ever
  bool follow = false;                                // one line per phase change on ctx.out
};

int WaitForJob(Context& ctx, const WaitOptions& opts);

}  // namespace tephra::ctl
