#include "tephra/kube/signals.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/log.h"

namespace tephra::kube {
namespace {

// Atomic so StopSignal() needs no lock; g_mu only orders Deliver's notify against WaitForStop's wait.
std::atomic<int> g_signal{0};
core::Mutex g_mu;
core::CondVar g_cv;

void Deliver(int sig) {
  {
    core::MutexLock l(g_mu);
    g_signal.store(sig);
  }
  g_cv.NotifyAll();
}

}  // namespace

void InstallStopSignals(const StopSignalOptions& opts) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, opts] {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return;
    log::Info("stop signal received; shutting down")
        .Kv("role", opts.role)
        .Kv("signal", sig)
        .Kv("deadline_ms", static_cast<int64_t>(opts.grace.count()));
    Deliver(sig);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(opts.grace.count() / 1000);
    ts.tv_nsec = static_cast<long>((opts.grace.count() % 1000) * 1000000);
    siginfo_t info{};
    if (sigtimedwait(&set, &info, &ts) > 0) {
      log::Warn("second stop signal; exiting now").Kv("role", opts.role);
    } else {
      log::Error("graceful shutdown did not finish in time; exiting now")
          .Kv("role", opts.role)
          .Kv("deadline_ms", static_cast<int64_t>(opts.grace.count()));
    }
    std::_Exit(1);  // no destructors: they are what is stuck
  }).detach();
}

int StopSignal() { return g_signal.load(); }

bool WaitForStop(std::chrono::milliseconds timeout) {
  core::MutexLock l(g_mu);
  return g_cv.WaitFor(l, timeout, [] { return g_signal.load() != 0; });
}

void RequestStopForTest(int sig) { Deliver(sig); }
void ResetStopForTest() { g_signal.store(0); }

}  // namespace tephra::kube
