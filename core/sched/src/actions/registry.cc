// ActionRegistry::Builtin(): the actions of this folder by their Volcano names.
#include "actions.h"

namespace tephra::sched {

namespace actions {
std::string ResourceReason(const ClusterState& st, const TaskInfo& t, const Resource& avail) {
  // Named first: a resource no node offers is the one no change of nodes' load can fix.
  if (t.request.Get(kUnoffered) > 0) return "node(s) had insufficient " + UnofferedText(t.unoffered);
  int d = t.request.FirstShortDimension(avail);
  if (d < 0) return {};
  if (d == kPods) return "node(s) had too many pods";
  return "node(s) had insufficient " + st.resources().Name(d);
}

bool QueueAdmits(Session& ssn, const JobInfo& job) {
  const QueueInfo* q = ssn.state().FindQueue(job.queue);
  if (q && q->state == QueueState::kOpen) return true;
  if (!q) {
    ssn.RecordFitErrors(job.key, -1, "QueueNotFound\nqueue " + job.queue +
                                         " does not exist; create it or set the job's queue to an existing one");
  } else {
    ssn.RecordFitErrors(job.key, -1,
                        "QueueClosed\nqueue " + job.queue + " is " +
                            (q->state == QueueState::kClosing ? "closing" : q->state == QueueState::kClosed ? "closed" : "not open") +
                            " and starts no jobs; open it (vcctl queue operate -n " + job.queue + " -a open)");
  }
  return false;
}
}  // namespace actions

ActionRegistry ActionRegistry::Builtin() {
  ActionRegistry r;
  auto add = [&r](const std::string& name, ActionFactory f) { (void)r.Register(name, std::move(f)); };
  add("enqueue", actions::NewEnqueue);
  add("allocate", actions::NewAllocate);
  add("backfill", actions::NewBackfill);
  add("preempt", actions::NewPreempt);
  add("reclaim", actions::NewReclaim);
  return r;
}

}  // namespace tephra::sched
