// The scheduler's metrics that describe the scheduling state rather than one cycle: Volcano's queue, job,
// namespace and vGPU gauges, and Tephra's per-node and per-HyperNode resource gauges and queue positions
// (docs/metrics.md). They are computed when /metrics is scraped, on the state thread between cycles, from the
// core's live state: a scrape every few seconds costs one walk of nodes, jobs and queues, where computing
// them every cycle would cost it ten times a second for numbers nobody reads.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tephra/kube/metrics.h"
#include "tephra/sched/scheduler.h"

namespace tephra::scheduler {

// A queue's share as Volcano's proportion plugin reports it (volcano_queue_share, and the web view's bar): the
// largest allocated/deserved over the resources, where a resource held against a deserved of 0 counts as 1.
// `by`, when given, receives the resource that decides it.
double QueueShare(const sched::Resource& allocated, const sched::Resource& deserved,
                  const sched::ResourceRegistry& names, std::string* by = nullptr);

class StateMetrics {
 public:
  explicit StateMetrics(kube::metrics::Registry& r);
  // Sets every series from `core`'s state and removes the series of queues, jobs, nodes and cards that are
  // gone. Run on the thread that owns the state.
  void Export(const sched::Scheduler& core);

 private:
  using Family = kube::metrics::GaugeFamily;
  // One family's series set by the current Export; the rest are removed at its end.
  struct Tracked {
    Family* f = nullptr;
    std::set<std::vector<std::string>> live;
    void Set(std::vector<std::string> labels, double v);
    void Sweep();
  };
  // A Volcano resource triple: <prefix>_milli_cpu, <prefix>_memory_bytes, <prefix>_scalar_resources.
  struct Triple {
    Tracked cpu, mem, scalar;
    void Set(const std::string& queue, const sched::Resource& r, const sched::ResourceRegistry& names);
    void Sweep();
  };
  Triple Make(kube::metrics::Registry& r, const std::string& what, const std::string& help);

  Triple allocated_, request_, deserved_, capacity_, real_capacity_, inqueue_;
  Tracked queue_share_, queue_weight_, queue_overused_;
  Tracked job_share_, unschedule_tasks_;
  Tracked ns_share_, ns_weight_, ns_weighted_share_;
  Tracked vgpu_shared_, vgpu_memory_, vgpu_cores_, vgpu_limit_, vgpu_pod_memory_, vgpu_pod_cores_;
  Tracked position_;
  Tracked node_allocatable_, node_allocated_, hn_allocatable_, hn_allocated_;
};

}  // namespace tephra::scheduler
