#include "tephra/simulate/jobs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>
#include <random>
#include <unordered_map>

#include "csv.h"
#include "sim_core.h"
#include "tephra/sched/framework.h"
#include "tephra/sched/scheduler.h"

namespace tephra::simulate {

namespace {

using core::Status;
using core::StatusCode;
using internal::Csv;

constexpr int64_t kGi = int64_t{1024} * 1024 * 1024;
constexpr int kGpusPerNode = 8;
// Trace second 0 on the fake clock: any fixed instant works, the core only compares and subtracts times.
const sched::WallTime kEpoch = sched::WallTime(std::chrono::seconds(1'700'000'000));

sched::WallTime At(int64_t t) { return kEpoch + std::chrono::seconds(t); }
int64_t SecondsOf(sched::WallTime w) {
  return std::chrono::duration_cast<std::chrono::seconds>(w - kEpoch).count();
}

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

WaitStats Waits(std::vector<double> w) {
  WaitStats s;
  s.jobs = static_cast<int>(w.size());
  if (w.empty()) return s;
  std::sort(w.begin(), w.end());
  double sum = 0;
  for (double x : w) sum += x;
  s.mean_s = sum / static_cast<double>(w.size());
  s.p99_s = Percentile(w, 0.99);
  s.max_s = w.back();
  return s;
}

// An estimate made at `made` for a start at `estimated` is within 10% when it misses the actual start by at
// most a tenth of the wait that was left when it was made.
bool Within10Percent(int64_t made, int64_t estimated, int64_t actual) {
  return static_cast<double>(std::llabs(estimated - actual)) <= 0.1 * static_cast<double>(actual - made);
}

}  // namespace

core::StatusOr<std::vector<TraceJob>> ParseJobTrace(std::string_view csv) {
  auto c = Csv::Parse(csv, {"job_id", "submission_time", "duration", "num_gpu"});
  if (!c.ok()) return c.status().Annotate("job trace");
  std::vector<TraceJob> out;
  out.reserve(c->rows().size());
  for (const auto& r : c->rows()) {
    TraceJob j;
    j.id = std::string(c->Cell(r, "job_id"));
    if (j.id.empty())
      return Status(StatusCode::kInvalidArgument, "job trace: line " + std::to_string(r.line) + ", column job_id: empty");
    auto field = [&](const char* column, int64_t* v) -> Status {
      auto x = c->Int(r, column);
      if (!x.ok()) return x.status().Annotate("job trace");
      *v = *x;
      return Status();
    };
    int64_t gpus = 0;
    TEPHRA_RETURN_IF_ERROR(field("submission_time", &j.submit));
    TEPHRA_RETURN_IF_ERROR(field("duration", &j.duration));
    TEPHRA_RETURN_IF_ERROR(field("num_gpu", &gpus));
    // A job without GPUs or time has nothing to measure here; one above 8 GPUs is a gang of 8-GPU pods, so
    // its size must split into them.
    if (gpus < 1 || gpus > 8192 || (gpus > kGpusPerNode && gpus % kGpusPerNode != 0))
      return Status(StatusCode::kInvalidArgument, "job trace: line " + std::to_string(r.line) +
                                                      ", column num_gpu: want 1..8 or a multiple of 8, got " +
                                                      std::to_string(gpus));
    if (j.duration < 1)
      return Status(StatusCode::kInvalidArgument, "job trace: line " + std::to_string(r.line) +
                                                      ", column duration: want at least 1 second, got " +
                                                      std::to_string(j.duration));
    j.gpus = static_cast<int>(gpus);
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<TraceJob> TraceWindow(const std::vector<TraceJob>& jobs, size_t first_job, size_t window_jobs) {
  std::vector<TraceJob> sorted = jobs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  if (first_job >= sorted.size()) return {};
  const size_t end = window_jobs == 0 ? sorted.size() : std::min(sorted.size(), first_job + window_jobs);
  return std::vector<TraceJob>(sorted.begin() + static_cast<std::ptrdiff_t>(first_job),
                               sorted.begin() + static_cast<std::ptrdiff_t>(end));
}

core::StatusOr<BackfillMode> ParseBackfillMode(std::string_view s) {
  if (s == "none") return BackfillMode::kNone;
  if (s == "sla") return BackfillMode::kSla;
  if (s == "easy") return BackfillMode::kEasy;
  if (s == "conservative") return BackfillMode::kConservative;
  return Status(StatusCode::kInvalidArgument, "mode: want none, sla, easy or conservative, got \"" + std::string(s) + "\"");
}

core::StatusOr<EstimateMode> ParseEstimateMode(std::string_view s) {
  if (s == "exact") return EstimateMode::kExact;
  if (s == "user") return EstimateMode::kUser;
  return Status(StatusCode::kInvalidArgument, "estimates: want exact or user, got \"" + std::string(s) + "\"");
}

const char* BackfillModeName(BackfillMode m) {
  switch (m) {
    case BackfillMode::kNone: return "none";
    case BackfillMode::kSla: return "sla";
    case BackfillMode::kEasy: return "easy";
    case BackfillMode::kConservative: return "conservative";
  }
  return "?";
}

const char* EstimateModeName(EstimateMode m) { return m == EstimateMode::kExact ? "exact" : "user"; }

int64_t UserEstimate(int64_t duration, double rng_draw) {
  constexpr int64_t kStep = 15 * 60;
  const double factor = std::exp(std::clamp(rng_draw, 0.0, 1.0) * std::log(4.0));  // log-uniform in [1, 4]
  const auto raw = static_cast<int64_t>(std::ceil(static_cast<double>(duration) * factor));
  return std::max<int64_t>(kStep, (raw + kStep - 1) / kStep * kStep);
}

core::StatusOr<sched::SchedulerConf> JobReplayConf(const JobReplayOptions& o) {
  sched::SchedulerConf c = sched::SchedulerConf::Default();
  // Every pod asks for cpu and memory, none is best-effort: the backfill action (best-effort pods only)
  // would never place anything.
  c.actions = {"enqueue", "allocate"};
  c.core.reservation_depth = o.mode == BackfillMode::kEasy           ? 1
                             : o.mode == BackfillMode::kConservative ? std::max(1, o.conservative_depth)
                                                                     : 0;
  // The replay scores the estimates themselves, not the rounding that keeps status writes down.
  c.core.estimate_resolution_seconds = 0;
  if (o.mode == BackfillMode::kSla) {
    if (!sched::PluginRegistry::Builtin().Has("sla"))
      return Status(StatusCode::kNotFound, "mode sla: the core has no sla plugin registered");
    sched::PluginOption sla = sched::PluginOption::Named("sla");
    sla.arguments["sla-waiting-time"] = std::to_string(o.sla_waiting_seconds) + "s";
    c.tiers[0].plugins.push_back(std::move(sla));
  }
  return c;
}

core::StatusOr<JobReplayResult> ReplayJobs(const std::vector<TraceJob>& trace, const sched::SchedulerConf& conf,
                                           const JobReplayOptions& o) {
  if (o.nodes < 1) return Status(StatusCode::kInvalidArgument, "the cluster needs at least one node");
  if (o.period_seconds < 1) return Status(StatusCode::kInvalidArgument, "the cycle period must be at least 1 second");
  auto core = internal::NewSimCore(conf);
  if (!core.ok()) return core.status();
  auto& s = core->scheduler;
  sched::ClusterState& st = s->state();
  const int gpu = core->gpu;

  JobReplayResult r;
  r.total_gpus = int64_t{o.nodes} * kGpusPerNode;
  // Zero-padded names: the core's name order is the numeric order.
  for (int i = 0; i < o.nodes; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04d", i);
    sched::NodeInfo n;
    n.name = name;
    // Ample cpu and memory: GPUs are the only resource that runs out.
    n.allocatable = sched::Resource::CpuMem(256'000, 2048 * kGi).With(sched::kPods, 110).With(gpu, kGpusPerNode);
    n.labels = {{std::string(sched::kHostnameKey), n.name}};
    st.UpsertNode(n);
  }

  std::vector<TraceJob> jobs = TraceWindow(trace, 0, 0);
  // The user estimates are drawn in submission order from the seed, so a window and its mode do not change
  // which estimate a job gets.
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  r.outcomes.reserve(jobs.size());
  for (const auto& j : jobs) {
    JobOutcome out;
    out.id = j.id;
    out.gpus = j.gpus;
    out.submit = j.submit;
    out.duration = j.duration;
    const double draw = unit(rng);
    out.estimate = o.estimates == EstimateMode::kExact ? j.duration : UserEstimate(j.duration, draw);
    r.outcomes.push_back(std::move(out));
  }
  r.jobs = static_cast<int>(jobs.size());
  if (jobs.empty()) return r;

  std::unordered_map<std::string, size_t> index;  // job key -> outcome
  std::vector<int> bound(jobs.size(), 0), members(jobs.size(), 0);
  using Due = std::pair<int64_t, size_t>;  // (end, job)
  std::priority_queue<Due, std::vector<Due>, std::greater<>> ends;
  size_t next_arrival = 0;
  int waiting = 0;
  int64_t last_cycle = std::numeric_limits<int64_t>::min();
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  auto arrive = [&](size_t i) {
    const TraceJob& tj = jobs[i];
    if (tj.gpus > r.total_gpus) {
      // It could never start: counting its wait would measure the cluster's size, not the scheduler.
      ++r.jobs_too_big;
      return;
    }
    const int pods = tj.gpus <= kGpusPerNode ? 1 : tj.gpus / kGpusPerNode;
    const int per_pod = tj.gpus <= kGpusPerNode ? tj.gpus : kGpusPerNode;
    sched::JobInfo j;
    j.ns = "itp";
    j.name = "j" + std::to_string(i);
    j.key = j.ns + "/" + j.name;
    j.uid = "pg-" + std::to_string(i);
    j.queue = "default";
    j.min_member = pods;
    // By default the PodGroup as it is once admitted: the replay measures allocate's order and reservations,
    // not enqueue's overcommit gate. With o.enqueue the gate decides when it is admitted, on the gang's
    // minResources as the job controller sets them.
    j.phase = o.enqueue ? sched::PodGroupPhase::kPending : sched::PodGroupPhase::kInqueue;
    if (o.enqueue)
      j.min_resources = sched::Resource::CpuMem(int64_t{4000} * tj.gpus, int64_t{32} * kGi * tj.gpus).With(gpu, tj.gpus);
    j.creation_time = At(tj.submit);
    j.running_estimate = std::chrono::seconds(r.outcomes[i].estimate);
    st.UpsertJob(j);
    for (int p = 0; p < pods; ++p) {
      sched::TaskInfo t;
      t.uid = j.name + "-" + std::to_string(p);
      t.ns = j.ns;
      t.name = t.uid;
      t.job = j.key;
      t.request = sched::Resource::CpuMem(int64_t{4000} * per_pod, int64_t{32} * kGi * per_pod).With(gpu, per_pod);
      t.creation_index = i * 1024 + static_cast<uint64_t>(p);
      st.UpsertPod(t);
    }
    members[i] = pods;
    index[j.key] = i;
    ++waiting;
  };
  auto finish = [&](size_t i) {
    const std::string key = "itp/j" + std::to_string(i);
    std::vector<std::string> uids;
    for (const sched::TaskInfo* t : st.TasksOfJob(key)) uids.push_back(t->uid);
    for (const auto& uid : uids) st.RemovePod(uid);
    st.RemoveJob(key);
    r.outcomes[i].end = r.outcomes[i].start + jobs[i].duration;
  };

  while (true) {
    const int64_t arrival = next_arrival < jobs.size() ? jobs[next_arrival].submit : kNever;
    const int64_t end = ends.empty() ? kNever : ends.top().first;
    const int64_t tick = waiting > 0 ? last_cycle + o.period_seconds : kNever;
    const int64_t now = std::min({arrival, end, tick});
    if (now == kNever) break;
    while (!ends.empty() && ends.top().first <= now) {
      finish(ends.top().second);
      ends.pop();
    }
    while (next_arrival < jobs.size() && jobs[next_arrival].submit <= now) arrive(next_arrival++);
    if (waiting == 0) {
      last_cycle = now;
      continue;  // nothing waits: a cycle would decide nothing
    }

    const auto t0 = std::chrono::steady_clock::now();
    sched::CycleResult cycle = s->RunCycle(At(now));
    r.cycle_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++r.cycles;
    last_cycle = now;
    if (!cycle.status.ok()) return cycle.status;
    for (const auto& e : cycle.estimates) {
      auto it = index.find(e.job);
      if (it == index.end()) continue;
      JobOutcome& out = r.outcomes[it->second];
      if (e.kind == sched::StartEstimate::Kind::kReserved && out.reserved_at < 0) {
        out.reserved_at = now;
        out.reserved_start = SecondsOf(e.at);
      }
      if (!out.estimate_kind.empty()) continue;  // the first estimate is the one scored
      out.estimate_kind = sched::StartEstimateKindName(e.kind);
      out.estimated_at = now;
      if (e.kind != sched::StartEstimate::Kind::kUnknown) out.estimated_start = SecondsOf(e.at);
    }
    // Every bind succeeds at once and the pod starts running.
    for (const auto& b : cycle.binds) {
      st.BindSucceeded(b.task_uid);
      const sched::TaskInfo* t = st.FindTask(b.task_uid);
      if (!t) continue;
      sched::TaskInfo running = *t;
      running.status = sched::TaskStatus::kRunning;
      running.start_time = At(now);
      st.UpsertPod(running);
      auto it = index.find(b.job);
      if (it == index.end()) continue;
      const size_t i = it->second;
      if (++bound[i] == members[i]) {
        r.outcomes[i].start = now;
        ends.push({now + jobs[i].duration, i});
        --waiting;
      }
    }
  }

  // ---- results ----
  const std::string kReserved = sched::StartEstimateKindName(sched::StartEstimate::Kind::kReserved);
  const std::string kPlanned = sched::StartEstimateKindName(sched::StartEstimate::Kind::kPlanned);
  const std::string kUnknown = sched::StartEstimateKindName(sched::StartEstimate::Kind::kUnknown);
  std::vector<double> all, large;
  double jct = 0, gpu_seconds = 0, window_gpu_seconds = 0;
  const int64_t first_submit = jobs.front().submit, last_submit = jobs.back().submit;
  int64_t last_end = first_submit;
  int scored = 0, in10 = 0, in60 = 0, rscored = 0, rin10 = 0, rin60 = 0;
  for (const auto& out : r.outcomes) {
    if (out.estimate_kind == kReserved) ++r.est_reserved;
    else if (out.estimate_kind == kPlanned) ++r.est_planned;
    else if (out.estimate_kind == kUnknown) ++r.est_unknown;
    if (out.reserved_at >= 0) ++r.est_ever_reserved;
    if (out.start < 0) continue;
    ++r.jobs_run;
    const auto wait = static_cast<double>(out.start - out.submit);
    all.push_back(wait);
    if (out.gpus >= o.large_gang_gpus) large.push_back(wait);
    jct += static_cast<double>(out.end - out.submit);
    gpu_seconds += static_cast<double>(out.gpus) * static_cast<double>(out.duration);
    const int64_t from = std::max(out.start, first_submit), to = std::min(out.end, last_submit);
    if (to > from) window_gpu_seconds += static_cast<double>(out.gpus) * static_cast<double>(to - from);
    last_end = std::max(last_end, out.end);
    if (out.estimated_start >= 0 && out.start > out.estimated_at) {
      const bool p10 = Within10Percent(out.estimated_at, out.estimated_start, out.start);
      const bool s60 = std::llabs(out.estimated_start - out.start) <= 60;
      ++scored, in10 += p10, in60 += s60;
    }
    if (out.reserved_start >= 0 && out.start > out.reserved_at) {
      ++rscored;
      rin10 += Within10Percent(out.reserved_at, out.reserved_start, out.start);
      rin60 += std::llabs(out.reserved_start - out.start) <= 60;
    }
  }
  r.all = Waits(std::move(all));
  r.large = Waits(std::move(large));
  r.mean_jct_s = r.jobs_run > 0 ? jct / r.jobs_run : 0;
  r.makespan_s = last_end - first_submit;
  const auto capacity = static_cast<double>(r.total_gpus);
  if (r.makespan_s > 0) r.gpu_utilisation = gpu_seconds / (capacity * static_cast<double>(r.makespan_s)) * 100;
  if (last_submit > first_submit)
    r.gpu_utilisation_arrivals = window_gpu_seconds / (capacity * static_cast<double>(last_submit - first_submit)) * 100;
  r.est_scored = scored;
  r.est_reserved_scored = rscored;
  if (scored > 0) r.est_within_10pct = 100.0 * in10 / scored, r.est_within_60s = 100.0 * in60 / scored;
  if (rscored > 0) r.est_reserved_within_10pct = 100.0 * rin10 / rscored, r.est_reserved_within_60s = 100.0 * rin60 / rscored;
  return r;
}

}  // namespace tephra::simulate
