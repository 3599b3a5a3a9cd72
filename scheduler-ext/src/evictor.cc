#include "tephra/scheduler/evictor.h"

#include "tephra/api/core_v1.h"

namespace tephra::scheduler {

std::string EvictMessage(const sched::EvictDecision& d) {
  std::string m = "Pod " + d.ns + "/" + d.name + " is evicted by " + d.reason;
  if (!d.preemptor.empty()) m += " for " + d.preemptor;
  if (!d.node.empty()) m += " on node " + d.node;
  return m;
}

Evictor::Evictor(kube::ClientPtr client, EventSink events, std::chrono::seconds remember)
    : client_(std::move(client)), events_(std::move(events)), remember_(remember) {}

EvictOutcome Evictor::Execute(const std::vector<sched::EvictDecision>& decisions,
                              std::chrono::steady_clock::time_point now) {
  EvictOutcome out;
  for (auto it = deleted_.begin(); it != deleted_.end();) {
    if (now - it->second > remember_) it = deleted_.erase(it);
    else ++it;
  }
  for (const auto& d : decisions) {
    if (deleted_.count(d.task_uid)) {
      ++out.duplicates;
      continue;
    }
    kube::DeleteOptions opts;
    opts.precondition_uid = d.task_uid;  // never a re-created pod that reuses the name
    core::Status s = client_->Delete(api::Pod::Resource(), d.ns, d.name, opts);
    // NotFound: already gone. Conflict on the UID precondition: the pod we meant is gone too.
    if (!s.ok() && !core::IsNotFound(s) && !core::IsConflict(s)) {
      out.failed_uids.push_back(d.task_uid);
      continue;
    }
    deleted_[d.task_uid] = now;
    ++out.deleted;
    if (!s.ok()) continue;  // nothing was evicted by us: no Event
    const std::string msg = EvictMessage(d);
    if (events_) {
      events_({"Pod", d.ns, d.name, d.task_uid, "Warning", "Evict", msg});
      if (!d.job.empty()) {
        auto slash = d.job.find('/');
        if (slash != std::string::npos)
          events_({"PodGroup", d.job.substr(0, slash), d.job.substr(slash + 1), "", "Warning", "Evict", msg});
      }
    }
  }
  return out;
}

}  // namespace tephra::scheduler
