// The Queue controller's pure plan (docs/controllers.md, "Queue controller"): Plan(Observed) -> Actions, no
// I/O, no clock.
//
// State table (action = the pending Command's, else SyncQueue; "" counts as Open):
//   state    | OpenQueue | CloseQueue                          | SyncQueue
//   Open     | Open      | Closed if no PodGroups, else Closing | Open
//   Closed   | Open      | Closed                               | Closed
//   Closing  | Open      | Closed when no PodGroups, else Closing | as CloseQueue
//   Unknown  | Open      | Closed / Closing                     | Unknown
//
// Hierarchy, in level form (the child's plan reads its parent's state, so the cascade needs no memory):
//   * a queue without spec.parent (except `root`) gets parent `root`;
//   * parent Closed/Closing and this queue Open -> close it and mark it volcano.sh/closed-by-parent=true;
//   * parent open again and this queue marked -> open it and remove the mark (only marked children reopen);
//   * OpenQueue on a queue whose parent is Closed/Closing is refused (Warning event);
//   * an explicit Open/CloseQueue removes the mark: the user decided, the parent no longer does;
//   * CloseQueue on `root` is refused (Warning event), and a `root` that is Closed anyway closes no child.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tephra/api/scheduling.h"

namespace tephra::reconcilers::queue {

struct Observed {
  api::Queue queue;
  // The parent queue when spec.parent names one that exists.
  std::optional<api::Queue> parent;
  // PodGroups whose spec.queue is this queue, by status.phase ("" counted as Pending).
  std::map<std::string, int32_t> pod_groups_by_phase;
  // The action of a consumed Command (OpenQueue, CloseQueue, SyncQueue), if one is pending.
  std::optional<std::string> command;
};

struct EventRecord {
  std::string type;  // "Normal" | "Warning"
  std::string reason;
  std::string message;
};

struct Actions {
  bool set_parent_root = false;                // merge-patch spec.parent = "root"
  std::optional<bool> closed_by_parent;        // the value to write to volcano.sh/closed-by-parent
  std::optional<std::string> set_state;        // merge-patch status.state
  std::vector<EventRecord> events;
  std::string action;                          // the effective action, for logs and tests

  bool Empty() const { return !set_parent_root && !closed_by_parent && !set_state; }
};

Actions Plan(const Observed& obs);

// The state table alone.
std::string NextState(const std::string& state, const std::string& action, int32_t pod_groups);

// Total PodGroups counted in obs.
int32_t PodGroupCount(const Observed& obs);

}  // namespace tephra::reconcilers::queue
