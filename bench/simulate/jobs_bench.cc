// Reservations measured on a deep-learning job trace (bench/RESULTS.md, "Reservations: ITP job-trace
// replay"): a window of Microsoft's ITP trace (bench/data/itp) replayed on a fake clock over the scheduling
// core in each backfill mode (none, sla, easy, conservative), with exact and with modelled user running
// estimates. One benchmark per mode reports the waits, completion time, utilisation and estimate accuracy as
// counters; BM_ItpCompare then reports each mode against `none` (the thresholds' ratios).
//
//   jobs_bench                                  the window bench/thresholds.yaml checks
//   jobs_bench --trace=FILE --nodes=N --first=F --jobs=K --depth=D   another cluster, window or depth
//   jobs_bench --enqueue                        PodGroups arrive Pending and the enqueue action admits them
//   jobs_bench --dump=PREFIX                    also write each mode's per-job outcomes
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tephra/sched/framework.h"
#include "tephra/simulate/jobs.h"

namespace {

namespace sim = tephra::simulate;

// The window the thresholds are set on (bench/RESULTS.md says why this one): cluster04's first 6,000 jobs
// (16 days, 114 gangs of 32 GPUs or more) on 72 nodes instead of the published 128, so the queue builds up.
std::string g_trace = std::string(TEPHRA_ITP_DIR) + "/cluster04.csv";
int g_nodes = 72;
size_t g_first = 0, g_jobs = 6000;
int g_depth = 16;
bool g_enqueue = false;  // --enqueue: PodGroups arrive Pending and the enqueue action admits them
std::string g_dump;  // --dump=PREFIX: each mode's per-job outcomes to PREFIX<mode>_<estimates>.csv

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::vector<sim::TraceJob>* Window() {
  static std::vector<sim::TraceJob> window;
  static bool loaded = false, ok = false;
  if (!loaded) {
    loaded = true;
    auto parsed = sim::ParseJobTrace(Read(g_trace));
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s: %s\n", g_trace.c_str(), parsed.status().ToString().c_str());
    } else {
      window = sim::TraceWindow(*parsed, g_first, g_jobs);
      ok = !window.empty();
    }
  }
  return ok ? &window : nullptr;
}

// For looking into a mode's numbers by hand: one row per job.
void Dump(const std::string& path, const sim::JobReplayResult& r) {
  std::ofstream out(path);
  out << "job_id,gpus,submit,duration,estimate,start,end,estimate_kind,estimated_at,estimated_start,reserved_at,"
         "reserved_start\n";
  for (const auto& o : r.outcomes)
    out << o.id << ',' << o.gpus << ',' << o.submit << ',' << o.duration << ',' << o.estimate << ',' << o.start << ','
        << o.end << ',' << o.estimate_kind << ',' << o.estimated_at << ',' << o.estimated_start << ',' << o.reserved_at
        << ',' << o.reserved_start << '\n';
}

// Modes that never read the running estimates (none, sla) run once, under the name of the mode alone.
bool ReadsEstimates(sim::BackfillMode m) { return m == sim::BackfillMode::kEasy || m == sim::BackfillMode::kConservative; }

std::map<std::string, sim::JobReplayResult> g_results;  // "<mode>_<estimates>" -> result

const sim::JobReplayResult* Run(sim::BackfillMode mode, sim::EstimateMode est, std::string* error) {
  const std::string key = std::string(sim::BackfillModeName(mode)) + "_" + sim::EstimateModeName(est);
  if (auto it = g_results.find(key); it != g_results.end()) return &it->second;
  const auto* jobs = Window();
  if (!jobs) {
    *error = "cannot read the trace " + g_trace;
    return nullptr;
  }
  sim::JobReplayOptions o;
  o.nodes = g_nodes;
  o.mode = mode;
  o.estimates = est;
  o.conservative_depth = g_depth;
  o.enqueue = g_enqueue;
  auto conf = sim::JobReplayConf(o);
  if (!conf.ok()) {
    *error = conf.status().ToString();
    return nullptr;
  }
  auto r = sim::ReplayJobs(*jobs, *conf, o);
  if (!r.ok()) {
    *error = r.status().ToString();
    return nullptr;
  }
  if (!g_dump.empty()) Dump(g_dump + key + ".csv", *r);
  return &g_results.emplace(key, std::move(*r)).first->second;
}

void BM_ItpReplay(benchmark::State& state, sim::BackfillMode mode, sim::EstimateMode est) {
  const sim::JobReplayResult* r = nullptr;
  std::string error;
  for (auto _ : state) {
    g_results.erase(std::string(sim::BackfillModeName(mode)) + "_" + sim::EstimateModeName(est));
    r = Run(mode, est, &error);
    if (!r) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  constexpr double kH = 3600;
  state.counters["jobs"] = r->jobs_run;
  state.counters["large_gangs"] = r->large.jobs;
  state.counters["large_wait_mean_h"] = r->large.mean_s / kH;
  state.counters["large_wait_p99_h"] = r->large.p99_s / kH;
  state.counters["wait_mean_h"] = r->all.mean_s / kH;
  state.counters["jct_mean_h"] = r->mean_jct_s / kH;
  state.counters["gpu_util"] = r->gpu_utilisation;
  state.counters["gpu_util_arrivals"] = r->gpu_utilisation_arrivals;
  state.counters["est_reserved"] = r->est_reserved;
  state.counters["est_planned"] = r->est_planned;
  state.counters["est_unknown"] = r->est_unknown;
  state.counters["est_ever_reserved"] = r->est_ever_reserved;
  state.counters["est_scored"] = r->est_scored;
  state.counters["est_reserved_scored"] = r->est_reserved_scored;
  state.counters["est_within_10pct"] = r->est_within_10pct;
  state.counters["est_within_60s"] = r->est_within_60s;
  state.counters["est_reserved_within_10pct"] = r->est_reserved_within_10pct;
  state.counters["est_reserved_within_60s"] = r->est_reserved_within_60s;
  state.counters["cycles"] = static_cast<double>(r->cycles);
  state.counters["cycle_ms"] = r->cycles > 0 ? r->cycle_seconds * 1000 / static_cast<double>(r->cycles) : 0;
}

// Each mode against `none` with the same estimates: large-gang p99 wait as a percentage of none's, and the
// utilisation difference in points.
void BM_ItpCompare(benchmark::State& state) {
  std::map<std::string, double> counters;
  for (auto _ : state) {
    for (auto est : {sim::EstimateMode::kExact, sim::EstimateMode::kUser}) {
      std::string error;
      const sim::JobReplayResult* none = Run(sim::BackfillMode::kNone, sim::EstimateMode::kExact, &error);
      if (!none) {
        state.SkipWithError(error.c_str());
        return;
      }
      for (auto mode : {sim::BackfillMode::kSla, sim::BackfillMode::kEasy, sim::BackfillMode::kConservative}) {
        if (mode == sim::BackfillMode::kSla && !tephra::sched::PluginRegistry::Builtin().Has("sla")) continue;
        if (!ReadsEstimates(mode) && est != sim::EstimateMode::kExact) continue;
        const sim::JobReplayResult* r = Run(mode, est, &error);
        if (!r) {
          state.SkipWithError(error.c_str());
          return;
        }
        std::string p = std::string(sim::BackfillModeName(mode)) + "_";
        if (ReadsEstimates(mode)) p += std::string(sim::EstimateModeName(est)) + "_";
        counters[p + "large_p99_pct_of_none"] = none->large.p99_s > 0 ? 100 * r->large.p99_s / none->large.p99_s : 100;
        counters[p + "util_minus_none"] = r->gpu_utilisation - none->gpu_utilisation;
        counters[p + "util_arrivals_minus_none"] = r->gpu_utilisation_arrivals - none->gpu_utilisation_arrivals;
      }
    }
  }
  for (const auto& [k, v] : counters) state.counters[k] = v;
}

void Register() {
  for (auto mode : {sim::BackfillMode::kNone, sim::BackfillMode::kSla, sim::BackfillMode::kEasy,
                    sim::BackfillMode::kConservative})
    for (auto est : {sim::EstimateMode::kExact, sim::EstimateMode::kUser}) {
      // Without the plugin there is no sla column: it is reported missing, not run as something else.
      if (mode == sim::BackfillMode::kSla && !tephra::sched::PluginRegistry::Builtin().Has("sla")) continue;
      if (!ReadsEstimates(mode) && est != sim::EstimateMode::kExact) continue;
      std::string name = std::string("BM_ItpReplay/") + sim::BackfillModeName(mode);
      if (ReadsEstimates(mode)) name += std::string("_") + sim::EstimateModeName(est);
      benchmark::RegisterBenchmark(name.c_str(), BM_ItpReplay, mode, est)->Unit(benchmark::kMillisecond)->Iterations(1);
    }
  benchmark::RegisterBenchmark("BM_ItpCompare", BM_ItpCompare)->Unit(benchmark::kMillisecond)->Iterations(1);
}

}  // namespace

int main(int argc, char** argv) {
  // --trace= --nodes= --first= --jobs= --depth= before Google Benchmark sees the arguments.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return std::strncmp(a, flag, n) == 0 ? a + n : nullptr;
    };
    if (const char* v = value("--trace=")) {
      g_trace = v;
    } else if (const char* v = value("--nodes=")) {
      g_nodes = std::atoi(v);
    } else if (const char* v = value("--first=")) {
      g_first = static_cast<size_t>(std::atoll(v));
    } else if (const char* v = value("--jobs=")) {
      g_jobs = static_cast<size_t>(std::atoll(v));
    } else if (std::strcmp(a, "--enqueue") == 0) {
      g_enqueue = true;
    } else if (const char* v = value("--dump=")) {
      g_dump = v;
    } else if (const char* v = value("--depth=")) {
      g_depth = std::atoi(v);
    } else {
      rest.push_back(argv[i]);
      continue;
    }
  }
  if (g_nodes < 1 || g_depth < 1) {
    std::fprintf(stderr, "--nodes and --depth: want at least 1\n");
    return 2;
  }
  if (!tephra::sched::PluginRegistry::Builtin().Has("sla"))
    std::fprintf(stderr, "the core has no sla plugin: the sla mode is not run\n");
  Register();
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
