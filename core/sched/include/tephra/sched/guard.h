// The hard constraints of one placement, checked where a decision leaves the core (the process's bind guard,
// docs/scheduler.md "Bind guard") and after every cycle of the randomized invariant test.
//
// Why a second look at a decision the predicates already made: the predicates run inside caches (static
// results per shape and topology version, score heaps, sparse batch scores, memoised domains), and a stale
// or mis-keyed cache places a pod where policy forbids it without anybody being told. This check reads the
// node and the task as ClusterState holds them *now*, with none of those caches, through the same
// predicate functions the predicates plugin uses (no second copy of the rules).
#pragma once

#include <string>

#include "tephra/sched/cluster_state.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

// `reason` is a stable, low-cardinality code (a metric label and the Event reason's suffix); `detail` says
// what exactly failed, for the log and the Event message. ok() when reason is empty.
struct PlacementCheck {
  std::string reason;
  std::string detail;
  bool ok() const { return reason.empty(); }
};

// The reason codes, in the order they are checked.
inline constexpr const char* kGuardNodeGone = "node_gone";            // the node is not in the cache
inline constexpr const char* kGuardNotReady = "node_not_ready";       // Ready is not True
inline constexpr const char* kGuardCordoned = "cordoned";             // spec.unschedulable (or fault-avoided)
inline constexpr const char* kGuardSelector = "node_selector";        // nodeSelector or required node affinity
inline constexpr const char* kGuardTaint = "taint";                   // an untolerated NoSchedule/NoExecute taint
inline constexpr const char* kGuardResources = "resources";           // a requested dimension overcommitted
inline constexpr const char* kGuardDevices = "devices";               // cards missing, unhealthy or overshared
inline constexpr const char* kGuardHostPorts = "host_ports";          // a host port another pod on the node holds
inline constexpr const char* kGuardVolumes = "volumes";               // a bound volume's node affinity or zone
// Not CheckPlacement's: the process's guard uses it for a decision the state no longer holds as made.
inline constexpr const char* kGuardSuperseded = "superseded";

// Checks task `t` placed on node `node_name`, where ClusterState already counts it (status Allocated,
// Binding, Bound or Running: its request is in the node's `used`, its cards are held). Only hard constraints:
// nothing a score decides, nothing a gang or queue decides. Pod (anti-)affinity and topology spreading are
// not rechecked: they depend on the order of a cycle's placements, which a single look cannot replay.
PlacementCheck CheckPlacement(const ClusterState& st, const TaskInfo& t, const std::string& node_name);

}  // namespace tephra::sched
