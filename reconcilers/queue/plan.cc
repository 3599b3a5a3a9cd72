#include "queue/plan.h"

#include "tephra/api/batch.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::queue {
namespace {

bool IsClosedOrClosing(const std::string& s) {
  return s == api::kQueueStateClosed || s == api::kQueueStateClosing;
}
bool IsOpen(const std::string& s) { return s.empty() || s == api::kQueueStateOpen; }

}  // namespace

int32_t PodGroupCount(const Observed& obs) {
  int32_t n = 0;
  for (const auto& [phase, c] : obs.pod_groups_by_phase) n += c;
  return n;
}

std::string NextState(const std::string& state, const std::string& action, int32_t pod_groups) {
  const std::string closed = pod_groups > 0 ? std::string(api::kQueueStateClosing) : std::string(api::kQueueStateClosed);
  if (action == api::kActionOpenQueue) return std::string(api::kQueueStateOpen);
  if (action == api::kActionCloseQueue) return state == api::kQueueStateClosed ? state : closed;
  // SyncQueue (and anything else): keep the state, except that Closing finishes once empty.
  if (IsOpen(state)) return std::string(api::kQueueStateOpen);
  if (state == api::kQueueStateClosing) return closed;
  return state;  // Closed, Unknown
}

Actions Plan(const Observed& obs) {
  Actions a;
  const auto& q = obs.queue;
  const std::string& state = q.status.state;
  auto it = q.metadata.annotations.find(std::string(api::kClosedByParentAnnotation));
  const bool marked = it != q.metadata.annotations.end() && it->second == "true";
  // `root` never closes its children: it cannot be closed through this controller, and a root whose state was
  // written Closed by hand must not close every queue of the cluster, `default` included.
  const bool parent_closed = obs.parent && obs.parent->metadata.name != api::kRootQueue &&
                             IsClosedOrClosing(obs.parent->status.state);

  a.set_parent_root = q.spec.parent.empty() && q.metadata.name != api::kRootQueue;

  std::string action = obs.command.value_or(std::string(api::kActionSyncQueue));
  if (action == api::kActionCloseQueue && q.metadata.name == api::kRootQueue) {
    // Volcano refuses too (it only logs); a Warning Event tells the one who issued the Command.
    a.events.push_back({"Warning", "CloseQueueRejected",
                        "the root queue cannot be closed: every queue is under it, so closing it would close them all"});
    action = std::string(api::kActionSyncQueue);
  } else if (action == api::kActionOpenQueue && parent_closed) {
    a.events.push_back({"Warning", "OpenQueueRejected",
                        "queue " + q.metadata.name + " cannot open while its parent " + obs.parent->metadata.name +
                            " is " + obs.parent->status.state});
    action = std::string(api::kActionSyncQueue);
  } else if (action == api::kActionOpenQueue || action == api::kActionCloseQueue) {
    if (marked) a.closed_by_parent = false;
  }
  if (action == api::kActionSyncQueue) {
    if (parent_closed && IsOpen(state)) {
      action = std::string(api::kActionCloseQueue);
      a.closed_by_parent = true;
    } else if (!parent_closed && marked) {
      // The parent reopened (or is gone): undo what the parent did, nothing more.
      if (IsClosedOrClosing(state)) action = std::string(api::kActionOpenQueue);
      a.closed_by_parent = false;
    }
  }
  a.action = action;
  // Every open leaves volcano.sh/closed-by-parent: "false" behind, as Volcano's controller does (tools that
  // read the annotation see the same value); an explicit close that clears a parent's mark writes it too.
  const bool annotated_false = it != q.metadata.annotations.end() && it->second == "false";
  if (action == api::kActionOpenQueue && !annotated_false) a.closed_by_parent = false;
  if (a.closed_by_parent && !*a.closed_by_parent && annotated_false) a.closed_by_parent.reset();
  std::string next = NextState(state, action, PodGroupCount(obs));
  if (next != state) {
    a.set_state = next;
    // A new queue's first state write is not news. A close keeps Volcano's text; the open event (Volcano
    // records none) says where the queue came from.
    if (!state.empty())
      a.events.push_back({"Normal", action,
                          action == api::kActionCloseQueue ? std::string("Close queue succeed")
                                                           : "queue state " + state + " -> " + next});
  }
  return a;
}

}  // namespace tephra::reconcilers::queue
