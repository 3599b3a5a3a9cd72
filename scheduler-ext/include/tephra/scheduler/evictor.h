// Executes the core's eviction decisions (preempt, reclaim, gang timeout) the way Volcano does: by
// deleting the victim pod (graceful, with a UID precondition so a re-created pod of the same name is never
// hit), then a Warning "Evict" Event on the pod and on its PodGroup.
//
// Idempotent: a victim already deleted (and still terminating, so the core may see it again through a
// lagging informer) is not deleted or counted twice; NotFound counts as done. A failed delete is returned
// so the caller can give the victim back to the core (ClusterState::EvictFailed) under its lock.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

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

  // Synchronous: evictions are rare and few per cycle; the scheduling loop calls this outside its lock.
  EvictOutcome Execute(const std::vector<sched::EvictDecision>& decisions,
                       std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

  size_t remembered() const { return deleted_.size(); }

 private:
  kube::ClientPtr client_;
  EventSink events_;
  std::chrono::seconds remember_;
  std::map<std::string, std::chrono::steady_clock::time_point> deleted_;  // uid -> when
};

// "Pod ns/name is evicted by preempt for ns/job" (the message on both Events).
std::string EvictMessage(const sched::EvictDecision& d);

}  // namespace tephra::scheduler
