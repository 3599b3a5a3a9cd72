// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and defaults (v1.20,
// leaderelection.go; docs/failure-scenarios.md, "Leader election"):
//  * A candidate polls every RetryPeriod stretched by jitter (2..4.4 s by default). It may take the lease
//    when the holder is empty (released) or when a full LeaseDuration has passed, on OUR monotonic clock,
//    since we last saw the lease record change. Skew between hosts' wall clocks therefore does not matter.
//  * The leader renews every RetryPeriod; if no renew succeeds within RenewDeadline of the renew round's
//    start (≈12 s after the last good renew by default) it calls OnStoppedLeading. That is before any
//    standby can acquire (≥ 15 s), but there is no fencing: writes must be safe under a brief overlap.
//  * On clean shutdown (Stop) the leader releases: holderIdentity cleared, leaseDurationSeconds = 1, so a
//    standby takes over at its next poll.
//  * Losing the lease is fatal by convention: roles exit in OnStoppedLeading (like kube-scheduler).
//
// Poll() is one step of the state machine and returns when to call it again, so tests drive several
// electors deterministically on a FakeClock; Run() is the production loop around it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"

namespace tephra::kube {

struct LeaderElectionConfig {
  std::string lock_namespace = "volcano-system";
  std::string lock_name;         // required, e.g. "tephra-scheduler"
  std::string identity;          // "" = DefaultIdentity()
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  double jitter_factor = 1.2;    // candidate polls every retry_period·(1 + U[0,1)·jitter_factor)
  bool release_on_cancel = true;
  uint64_t seed = 0;             // 0 = random; fixed for deterministic tests

  // Callbacks run on the Poll()/Run() thread and must return promptly.
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;  // lost or released
  std::function<void(const std::string& identity)> on_new_leader;  // observed holder changed
};

// kInvalidArgument unless LeaseDuration > RenewDeadline > jitter_factor·RetryPeriod, all positive, and a
// lock name is set.
core::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c);

// hostname + "_" + 8 random hex digits, so two replicas on one host differ.
std::string DefaultIdentity();

// The Lease spec as read and written (times on the wall clock, as Kubernetes stores them).
struct LeaderElectionRecord {
  std::string holder_identity;
  int lease_duration_seconds = 0;
  std::string acquire_time;  // RFC 3339 with microseconds (MicroTime)
  std::string renew_time;
  int lease_transitions = 0;
  bool operator==(const LeaderElectionRecord&) const = default;
};

class LeaderElector {
 public:
  enum class State { kFollower, kLeader, kStopped };

  static core::StatusOr<std::unique_ptr<LeaderElector>> Create(ClientPtr client, LeaderElectionConfig config,
                                                               const core::Clock* clock = nullptr);
  ~LeaderElector();

  // One step: try to acquire (follower) or renew (leader); fires callbacks on transitions. Returns the delay
  // until the next step (jittered for followers), or nullopt once stopped.
  std::optional<std::chrono::nanoseconds> Poll();
  // Polls until Stop() or leadership is lost (then returns). Sleeps on the real clock between polls.
  void Run();
  // Ends Run(); releases the lease if leading and release_on_cancel. Idempotent; thread-safe.
  void Stop();

  bool IsLeader() const;
  State state() const;
  // The holder from the last observed record ("" if none).
  std::string GetLeader() const;
  const std::string& identity() const { return config_.identity; }
  LeaderElectionRecord observed_record() const;

 private:
  LeaderElector(ClientPtr client, LeaderElectionConfig config, const core::Clock& clock);
  // client-go's tryAcquireOrRenew: true when we hold the lease after the call.
  bool TryAcquireOrRenew() TEPHRA_EXCLUDES(mu_);
  void Release() TEPHRA_EXCLUDES(mu_);
  void Finish() TEPHRA_EXCLUDES(mu_);  // after Stop: release if leading, fire on_stopped_leading
  std::chrono::nanoseconds Jittered() TEPHRA_EXCLUDES(mu_);

  ClientPtr client_;
  LeaderElectionConfig config_;
  const core::Clock& clock_;
  mutable core::Mutex mu_;
  core::CondVar cv_;
  State state_ TEPHRA_GUARDED_BY(mu_) = State::kFollower;
  bool stop_requested_ TEPHRA_GUARDED_BY(mu_) = false;
  bool running_ TEPHRA_GUARDED_BY(mu_) = false;  // Run() active
  LeaderElectionRecord observed_ TEPHRA_GUARDED_BY(mu_);
  std::string observed_rv_ TEPHRA_GUARDED_BY(mu_);
  bool have_observed_ TEPHRA_GUARDED_BY(mu_) = false;
  core::Clock::TimePoint observed_time_ TEPHRA_GUARDED_BY(mu_){};
  core::Clock::TimePoint renew_round_start_ TEPHRA_GUARDED_BY(mu_){};
  std::mt19937_64 rng_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::kube
