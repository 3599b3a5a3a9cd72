// The scheduler's read-only web view (docs/web-view.md): a page at /ui/ on the metrics server
// (--enable-web-view) that polls /ui/api/v1/snapshot, a JSON picture of the scheduler's own state: queues and
// their shares, waiting jobs with their reasons, places and start estimates, running gangs and where they
// sit, the cluster map by spine and leaf, and the node faults and recoveries the scheduler saw.
//
// Why here and not a separate dashboard: the scheduler is the one process that knows positions, deserved
// shares, estimates and the reason it last gave for each waiting job; a dashboard fed from the API would
// have to re-derive them, and would show a different answer whenever it derived them differently.
//
// The JSON is a pure function of the core (`BuildWebSnapshot`), built on the state thread between cycles;
// what the core does not keep (the conditions it last emitted, node fault transitions) is kept by a small
// bounded recorder the process feeds. The page, script and style sheet are the files of scheduler-ext/web/,
// embedded into the binary at build time (no file is read at run time).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/core_v1.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/http_server.h"
#include "tephra/sched/result.h"
#include "tephra/sched/scheduler.h"

namespace tephra::scheduler {

// One change of a node's health as the scheduler saw it in the API (docs/faults.md signals).
struct NodeFaultEvent {
  sched::WallTime at{};
  std::string node;
  // "fault" (healthy -> some signal), "recovery" (some signal -> healthy), "change" (the signals changed),
  // "removed" (a node with signals left the cluster).
  std::string kind;
  std::vector<std::string> signals;  // what is wrong now; for a recovery, what was wrong before
};

// What is wrong with a node, by the signals of docs/faults.md as the API shows them, in a fixed order:
// "Fault:<tephra.io/fault value>" (the fault controller's mark), "NotReady", "Unschedulable" (cordoned),
// every other condition reported True by its type ("GpuXidError", "NetworkUnavailable", "MemoryPressure"),
// "DeviceUnhealthy:<resource> <allocatable>/<capacity>" for GPUs and Ascend cards below capacity, and
// "DeviceUnhealthy:<cards>" for the cards an Ascend device plugin lists. Empty: healthy.
std::vector<std::string> NodeFaultSignals(const api::Node& node);

// The conditions the core last emitted per PodGroup (job key -> [Scheduled|Unschedulable, Queued]).
using EmittedConditions = std::map<std::string, std::vector<sched::PodGroupCondition>>;

// The process's memory for the view: node fault transitions (a ring of the last `capacity`) and the
// conditions the core emitted. ObserveNode runs on watch threads, ObserveCycle and the snapshot on the state
// thread; everything is under one mutex, held for a map update or a copy of at most `capacity` entries.
class WebViewRecorder {
 public:
  explicit WebViewRecorder(size_t capacity = 100) : capacity_(capacity) {}
  // A node as the API now shows it; nullptr: deleted.
  void ObserveNode(const std::string& name, const api::Node* node, sched::WallTime now);
  // What a cycle emitted: the PodGroup statuses (only changes are emitted, so the map is always the latest).
  // `st` prunes jobs that left once the map has grown past twice the jobs alive.
  void ObserveCycle(const sched::CycleResult& res, const sched::ClusterState& st);

  std::vector<NodeFaultEvent> Faults() const;  // newest first
  std::map<std::string, std::vector<std::string>> NodeSignals() const;  // only nodes with signals
  // State thread only (the one writer): valid until the next ObserveCycle.
  const EmittedConditions& conditions() const { return conditions_; }

 private:
  const size_t capacity_;
  mutable core::Mutex mu_;
  std::deque<NodeFaultEvent> faults_ TEPHRA_GUARDED_BY(mu_);  // oldest first
  std::map<std::string, std::vector<std::string>> signals_ TEPHRA_GUARDED_BY(mu_);
  EmittedConditions conditions_;  // state thread only
  size_t prune_at_ = 64;          // conditions_ size that triggers the next prune (state thread only)
};

// What the snapshot needs besides the core.
struct WebExtras {
  sched::WallTime now{};
  bool leading = false;
  uint64_t cycles = 0;
  std::vector<NodeFaultEvent> faults;                            // newest first
  std::map<std::string, std::vector<std::string>> node_signals;  // node -> NodeFaultSignals (non-empty only)
  const EmittedConditions* conditions = nullptr;
  // Waiting and running jobs listed at most (the totals are always given): a page, not a database dump.
  size_t max_jobs = 500;
};

// The snapshot (schema in docs/web-view.md). Reads only; call on the thread that owns the state.
api::json BuildWebSnapshot(const sched::Scheduler& s, const WebExtras& x);

// One embedded file of scheduler-ext/web/.
struct WebAsset {
  std::string_view name;  // "index.html", "app.js", "app.css"
  std::string_view content_type;
  std::string_view body;
};
// The files, as the build embedded them (generated from scheduler-ext/web/ by CMake).
const std::vector<WebAsset>& WebAssets();
const WebAsset* FindWebAsset(std::string_view name);

// The view's GET routes: /ui and /ui/ (the page), /ui/<asset>, and /ui/api/v1/snapshot, which answers with
// `snapshot()`: a status and a JSON body (503 while the caches are not synced).
std::vector<std::pair<std::string, kube::HttpHandler>> WebViewRoutes(
    std::function<std::pair<int, std::string>()> snapshot);

}  // namespace tephra::scheduler
