// Trace replay on the scheduling core (docs/simulate.md): a node list and a pod list in the columns of
// Alibaba's openb GPU cluster trace, the workload tuned to a multiple of the cluster's GPU capacity the way
// the FGD paper's simulator does it, and every pod given to the real scheduler core one at a time; the GPU
// allocation ratio is recorded as the workload arrives.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/config.h"

namespace tephra::simulate {

// Node list columns: sn, cpu_milli, memory_mib, gpu, model.
struct TraceNode {
  std::string name = {};
  int64_t cpu_milli = 0, memory_mib = 0;
  int gpus = 0;
  std::string model = {};
};
// Pod list columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec (others are ignored).
struct TracePod {
  std::string name = {};
  int64_t cpu_milli = 0, memory_mib = 0;
  int num_gpu = 0;
  int64_t gpu_milli = 0;  // per GPU, 1..1000
  std::string gpu_spec = {};  // allowed GPU models joined by '|'; empty = any
  int64_t TotalGpuMilli() const { return num_gpu * gpu_milli; }
};

// Columns are found by their header names; errors name the line and the column.
core::StatusOr<std::vector<TraceNode>> ParseNodeList(std::string_view csv);
core::StatusOr<std::vector<TracePod>> ParsePodList(std::string_view csv);

struct ReplayOptions {
  uint64_t seed = 42;
  // The workload is tuned to `tune` times the cluster's GPU capacity: seeded samples of the pod list are
  // appended (or, below 1, pods removed) until its GPU request reaches that (0: the pod list as it is).
  double tune = 1.3;
  // Pods arrive in a seeded shuffle of the list (sorted by name first); false keeps the list's order.
  bool shuffle = true;
};

// The workload the replay submits, in arrival order (exposed for tests).
std::vector<TracePod> TuneWorkload(const std::vector<TracePod>& pods, int64_t capacity_gpu_milli,
                                   const ReplayOptions& o);

struct ReplayResult {
  uint64_t seed = 0;
  int64_t total_gpus = 0;
  int pods_arrived = 0, pods_placed = 0, pods_failed = 0;
  // Arrived GPU request as a percentage of capacity (rounded) -> mean GPU allocation percentage while the
  // arrivals were at that percentage.
  std::map<int, double> gpu_alloc_ratio_at;
  double final_gpu_alloc_ratio = 0;  // after the last pod
  double cycle_seconds = 0;          // time spent in the scheduler's cycles
};

// Fails on a configuration the core refuses, or an empty cluster.
core::StatusOr<ReplayResult> Replay(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                    const sched::SchedulerConf& conf, const ReplayOptions& o);

// The configuration `tephra simulate` uses without --scheduler-conf: enqueue and allocate with the
// predicates (cards included) and the fgd score.
sched::SchedulerConf DefaultConf();

}  // namespace tephra::simulate
