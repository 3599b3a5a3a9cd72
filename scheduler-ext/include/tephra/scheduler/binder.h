// The asynchronous binder: the scheduling loop hands it the cycle's BindDecisions and moves on; a pool of
// workers POSTs pods/binding through kube::Client (whose QPS/burst limiter paces them) and reports each
// outcome through a callback, which the process applies to the core (see ApplyBindOutcome).
//
// Why asynchronous: at 50-200 binds/s a 1,000-pod gang would otherwise stall the loop for seconds, and
// the core already "assumed" the placement (TaskStatus::kBinding), so the next cycle sees the capacity as
// taken whether or not the POST has happened yet.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/guard.h"
#include "tephra/sched/result.h"

namespace tephra::scheduler {

enum class BindResult {
  kBound,            // 201
  kAlreadyAssigned,  // 409 from pods/binding: someone (maybe an earlier us) bound it first
  kFailed,           // anything else (pod gone, node gone, apiserver refused after retries)
};

struct BindOutcome {
  sched::BindDecision decision;
  BindResult result = BindResult::kFailed;
  core::Status status;
  // Stage times in milliseconds (volcano_scheduling_stage_duration_milliseconds): the volume writes before the
  // binding (0 when there were none; -1 when not reached) and the binding call itself (-1 when not made).
  double prebind_ms = -1, bind_ms = -1;
};

// Classifies a pods/binding Status.
BindResult ClassifyBind(const core::Status& s);

// Applies one outcome to the core: kBound and kAlreadyAssigned -> BindSucceeded (for a 409 the informer's
// nodeName then supersedes the assumption, per ClusterState's contract), kFailed -> BindFailed (which
// rolls back the gang's other still-binding tasks). Returns the uids rolled back (empty unless kFailed).
std::vector<std::string> ApplyBindOutcome(sched::ClusterState& state, const BindOutcome& o);

// The bind guard (docs/scheduler.md, "Bind guard"), run on the state thread just before a cycle's decisions go
// to the binder: each decision is checked against the state as it is at that moment (sched::CheckPlacement).
// A failing one is refused: state.BindFailed puts it, and the other still-binding tasks of its gang, back to
// pending (the gang is never bound in part), and they are removed from *binds. Returns the refusals in order;
// `rolled_back` lists the uids BindFailed undid (the caller drops those already queued in the binder).
struct RefusedBind {
  sched::BindDecision decision;
  sched::PlacementCheck check;
  std::vector<std::string> rolled_back;
};
std::vector<RefusedBind> GuardBinds(sched::ClusterState& state, std::vector<sched::BindDecision>* binds);

class Binder {
 public:
  using Callback = std::function<void(const BindOutcome&)>;
  // `workers` threads; the client's limiter is the real throttle, workers only hide request latency.
  Binder(kube::ClientPtr client, int workers, Callback on_done);
  ~Binder();
  Binder(const Binder&) = delete;
  Binder& operator=(const Binder&) = delete;

  void Submit(std::vector<sched::BindDecision> binds);
  // Removes queued (not yet started) binds of these pods: the core rolled them back, sending them would
  // bind part of a gang. Returns how many were dropped.
  size_t Drop(const std::vector<std::string>& uids);
  // Stops after the in-flight requests; queued binds are discarded (the core's assumptions die with the
  // process, and a restarted scheduler rebuilds from the API).
  void Stop();
  // Blocks until nothing is queued or in flight, or the deadline passes (tests and graceful shutdown).
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  size_t Pending() const;

 private:
  void Worker() TEPHRA_EXCLUDES(mu_);
  core::Status ClaimVolume(const std::string& ns, const sched::BindDecision::VolumeBinding& vb);

  kube::ClientPtr client_;
  Callback on_done_;
  mutable core::Mutex mu_;
  core::CondVar cv_, idle_cv_;
  std::deque<sched::BindDecision> queue_ TEPHRA_GUARDED_BY(mu_);
  int in_flight_ TEPHRA_GUARDED_BY(mu_) = 0;
  bool stopping_ TEPHRA_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // started by the constructor, joined by Stop(); no other access
};

}  // namespace tephra::scheduler
