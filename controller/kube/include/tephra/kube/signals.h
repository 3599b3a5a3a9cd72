// Stop signals (SIGTERM, SIGINT) for every long-lived role, with a bounded graceful shutdown.
//
// A kubelet sends SIGTERM, waits terminationGracePeriodSeconds (30 s by default) and then SIGKILLs. A role
// whose graceful path blocks on an unreachable API server (a lease release, a final status write, a LIST
// that is still waiting for its timeout) would use all of that and be killed mid-write. So the first
// signal starts the graceful path *and* a deadline; when the deadline passes, or a second signal arrives,
// the process exits at once with code 1. Everything a role writes is level-triggered, so a write cut short
// is redone by whoever runs next.
//
// InstallStopSignals must be called from main's thread before any other thread exists: it blocks the two
// signals in the calling thread (new threads inherit the mask) and receives them on a thread of its own
// with sigwait, so no handler ever runs in an arbitrary thread.
#pragma once

#include <chrono>

namespace tephra::kube {

struct StopSignalOptions {
  std::chrono::milliseconds grace{5000};  // from the first signal to the forced exit; 0 = exit at once
  const char* role = "";                  // for the log line
};

void InstallStopSignals(const StopSignalOptions& opts);

// 0 until a stop signal arrived, then its number. Async-signal-free: a plain atomic load.
int StopSignal();
inline bool StopRequested() { return StopSignal() != 0; }

// Waits until a stop signal arrives or `timeout` passes; true when stopping. For loops that would otherwise
// sleep in small slices to notice the signal.
bool WaitForStop(std::chrono::milliseconds timeout);

// Test hook: behaves as if `sig` had arrived (no deadline is armed).
void RequestStopForTest(int sig);
void ResetStopForTest();

}  // namespace tephra::kube
