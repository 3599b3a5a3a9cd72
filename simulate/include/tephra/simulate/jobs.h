// Job-trace replay (docs/simulate.md, "Job traces"): a deep-learning job trace in the columns of Microsoft's
// ITP traces (job_id, submission_time, duration, num_gpu) replayed on a fake clock over the real scheduling
// core. Jobs arrive at their submission times as gangs of GPU pods, wait in one queue, run for their
// duration once the core binds them, and leave. The replay measures what reservations and time-limit
// backfill (CoreOptions::reservation_depth) change: the waits of large gangs, completion times, GPU
// utilisation, and how close the core's start-time estimates come to the starts that happen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/config.h"

namespace tephra::simulate {

// One row of the trace: seconds from the trace's start; seconds; GPUs (above 8: a multiple of 8).
struct TraceJob {
  std::string id = {};
  int64_t submit = 0;
  int64_t duration = 0;
  int gpus = 0;
};

// Columns job_id, submission_time, duration, num_gpu, found by header name (others are ignored). Errors
// name the line and the column. Rows are returned in the file's order.
core::StatusOr<std::vector<TraceJob>> ParseJobTrace(std::string_view csv);

// The slice of a trace a replay uses: the jobs sorted by submission (stable, so ties keep the file's order),
// then `window_jobs` of them from index `first_job` (0: to the end).
std::vector<TraceJob> TraceWindow(const std::vector<TraceJob>& jobs, size_t first_job, size_t window_jobs);

enum class BackfillMode {
  kNone,          // reservation_depth 0: Volcano's allocate, a blocked gang holds nothing
  kSla,           // Volcano's sla plugin (sla-waiting-time): jobs waiting longer go first; no reservations
  kEasy,          // reservation_depth 1: the first blocked gang is reserved, the rest backfill around it
  kConservative,  // reservation_depth JobReplayOptions::conservative_depth
};
enum class EstimateMode {
  kExact,  // the running estimate is the job's duration
  kUser,   // a modelled user estimate (UserEstimate): never below the duration, usually well above
};
// "none|sla|easy|conservative" and "exact|user"; InvalidArgument otherwise.
core::StatusOr<BackfillMode> ParseBackfillMode(std::string_view s);
core::StatusOr<EstimateMode> ParseEstimateMode(std::string_view s);
const char* BackfillModeName(BackfillMode m);
const char* EstimateModeName(EstimateMode m);

struct JobReplayOptions {
  int nodes = 64;  // nodes of 8 GPUs each
  BackfillMode mode = BackfillMode::kNone;
  EstimateMode estimates = EstimateMode::kExact;
  int conservative_depth = 16;
  uint64_t seed = 42;  // seed of the user estimates
  // A cycle runs at every arrival and completion instant and, while a job waits, at least this often.
  int64_t period_seconds = 60;
  int64_t sla_waiting_seconds = 3600;  // kSla: the plugin's sla-waiting-time
  int large_gang_gpus = 32;            // jobs with at least this many GPUs are the "large gangs"
  // false: PodGroups arrive Inqueue (admitted), so only allocate's order and reservations decide. true: they
  // arrive Pending with minResources set to the gang's request, and the enqueue action admits them
  // (overcommit's cluster room, the sla plugin's forced admission, the reservation depth's admission).
  bool enqueue = false;
};

// The user-estimate model: the duration times a factor drawn log-uniformly from [1, 4] by `rng_draw` (a
// uniform draw in [0, 1)), rounded up to a multiple of 15 minutes. Users ask for more than they need, by
// up to 4x, and in round numbers; the factor is never below 1, so no job outruns its estimate.
int64_t UserEstimate(int64_t duration, double rng_draw);

// What happened to one job.
struct JobOutcome {
  std::string id;
  int gpus = 0;
  int64_t submit = 0, duration = 0, estimate = 0;  // seconds from the trace's start; estimate = running_estimate
  int64_t start = -1, end = -1;                    // -1: never started (it asks for more than the cluster has)
  // The first start estimate the core gave it: the cycle time it was made at and the estimated start
  // (seconds from the trace's start), and its kind (StartEstimateKindName; empty: none was given).
  std::string estimate_kind = {};
  int64_t estimated_at = -1, estimated_start = -1;
  // Its first reservation (kReserved estimate), which may come cycles after a first planned start.
  int64_t reserved_at = -1, reserved_start = -1;
};

struct WaitStats {
  int jobs = 0;
  double mean_s = 0, p99_s = 0, max_s = 0;
};

struct JobReplayResult {
  int64_t total_gpus = 0;
  int jobs = 0, jobs_run = 0, jobs_too_big = 0;  // too big: more GPUs than the cluster has (never submitted)
  WaitStats all, large;                          // waits (start - submit) of all jobs and of the large gangs
  double mean_jct_s = 0;                         // mean of end - submit
  int64_t makespan_s = 0;                        // last end - first submit
  // Allocated GPU-seconds over capacity x makespan, and over capacity x the arrival window (first to last
  // submission: the part of the replay where the trace, not the drain, sets the load), in percent.
  double gpu_utilisation = 0, gpu_utilisation_arrivals = 0;
  // Estimates: how many jobs got each kind as their first, and how many got a reservation at some point.
  int est_reserved = 0, est_planned = 0, est_unknown = 0, est_ever_reserved = 0;
  // Among jobs whose first estimate had a time and that did not start in the cycle that made it: how many,
  // and the share (percent) within 10% of the wait from the estimate's time, and within 60 s. `reserved_`:
  // the same for each job's first reservation (whatever its first estimate was).
  int est_scored = 0, est_reserved_scored = 0;
  double est_within_10pct = 0, est_within_60s = 0;
  double est_reserved_within_10pct = 0, est_reserved_within_60s = 0;
  int64_t cycles = 0;
  double cycle_seconds = 0;  // time spent in the core's cycles
  std::vector<JobOutcome> outcomes;  // in submission order
};

// The configuration a mode uses: Volcano's default tiers (SchedulerConf::Default()) with actions enqueue and
// allocate (no pod is best-effort, so backfill would find nothing), reservation_depth and estimate
// resolution 0 (exact seconds) set from the options, and for kSla the sla plugin in the first tier.
// NotFound when kSla is asked for and the core has no plugin of that name.
core::StatusOr<sched::SchedulerConf> JobReplayConf(const JobReplayOptions& o);

// Replays `jobs` (any order; replayed by submission time) on `o.nodes` nodes of 8 GPUs with `conf`
// (JobReplayConf gives the mode's). Fails on a configuration the core refuses, or no nodes.
core::StatusOr<JobReplayResult> ReplayJobs(const std::vector<TraceJob>& jobs, const sched::SchedulerConf& conf,
                                           const JobReplayOptions& o);

}  // namespace tephra::simulate
