// ActionRegistry::Builtin(): the actions of this folder by their Volcano names.
#include "actions.h"

namespace tephra::sched {

namespace actions {
std::string ResourceReason(const ClusterState& st, const TaskInfo& t, const Resource& avail) {
  int d = t.request.FirstShortDimension(avail);
  if (d < 0) return {};
  if (d == kPods) return "node(s) had too many pods";
  return "node(s) had insufficient " + st.resources().Name(d);
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
