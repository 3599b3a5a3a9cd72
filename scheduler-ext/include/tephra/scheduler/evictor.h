// Executes the core's eviction decisions (preempt, reclaim, gang timeout) the way Volcano does: by
// deleting the victim pod (graceful, with a UID precondition so a re-created pod of the same name is never
// hit), then a Warning "Evict" Event on the pod and on its PodGroup.
//
// Idempotent: a victim already deleted (and still terminating, so the core may see it again through a
// lagging informer) is not deleted or counted twice; NotFound counts as done. A failed delete is returned
// so the caller can give the victim back to the core (ClusterState::EvictFailed) on its state thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/sched/result.h"
#include "tephra/scheduler/status_writer.h"

namespace tephra::scheduler {

struct EvictOutcome {
  int deleted = 0;     // delete calls that succeeded (or found the pod already gone)
  int duplicates = 0;  // decisions for victims already deleted earlier (not re-counted)
  std::vector<std::string> failed_uids;  // deletes that failed: hand back to the core
};

class Evictor {
 public:
  using EventSink = std::function<void(EventSpec)>;
  // `remember` bounds how long a deleted uid is remembered (longer than any graceful termination).
  Evictor(kube::ClientPtr client, EventSink events, std::chrono::seconds remember = std::chrono::seconds(600));
  ~Evictor();  // Stop()
  Evictor(const Evictor&) = delete;
  Evictor& operator=(const Evictor&) = delete;

  // Synchronous, on the caller's thread (tests; callers without a pool).
  EvictOutcome Execute(const std::vector<sched::EvictDecision>& decisions,
                       std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

  // Asynchronous: `workers` threads delete victims in parallel (a preemption can name dozens of victims, each
  // a DELETE of ~10-50 ms; one after another they would hold up the preemptor by seconds). `on_done` runs on
  // a worker after each decision with its outcome (failed_uids: give the victim back to the core).
  void Start(int workers, std::function<void(const EvictOutcome&)> on_done);
  void Submit(std::vector<sched::EvictDecision> decisions);
  // Blocks until nothing is queued or in flight, or the deadline passes.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Joins the workers after their in-flight deletes; queued decisions are dropped (the core re-decides).
  void Stop();

  size_t remembered() const;

 private:
  void ExecuteOne(const sched::EvictDecision& d, std::chrono::steady_clock::time_point now, EvictOutcome* out)
      TEPHRA_EXCLUDES(mu_);
  void Worker() TEPHRA_EXCLUDES(mu_);
  void Forget(std::chrono::steady_clock::time_point now) TEPHRA_REQUIRES(mu_);

  kube::ClientPtr client_;
  EventSink events_;
  std::chrono::seconds remember_;
  mutable core::Mutex mu_;
  // uid -> when deleted (or claimed by a worker about to delete it)
  std::map<std::string, std::chrono::steady_clock::time_point> deleted_ TEPHRA_GUARDED_BY(mu_);
  core::CondVar cv_, idle_cv_;
  std::deque<sched::EvictDecision> queue_ TEPHRA_GUARDED_BY(mu_);
  int in_flight_ TEPHRA_GUARDED_BY(mu_) = 0;
  bool stopping_ TEPHRA_GUARDED_BY(mu_) = false;
  std::function<void(const EvictOutcome&)> on_done_;  // set by Start before any worker exists
  std::vector<std::thread> threads_ TEPHRA_GUARDED_BY(mu_);
};

// "Pod ns/name is evicted by preempt for ns/job" (the message on both Events).
std::string EvictMessage(const sched::EvictDecision& d);

}  // namespace tephra::scheduler
