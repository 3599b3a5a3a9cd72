// `tephra simulate`: trace replay on the scheduling core, no API server (docs/simulate.md).
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common.h"
#include "tephra/scheduler/conf.h"
#include "tephra/simulate/jobs.h"
#include "tephra/simulate/replay.h"

namespace tephra::cmd {

namespace {

struct SimulateFlags {
  std::string node_list, pod_list, scheduler_conf, output = "json";
  uint64_t seed = 42;
  double tune = 1.3;
  bool shuffle = true;
  // Job-trace replay (--job-trace): a job trace instead of a pod list.
  std::string job_trace, mode = "none", estimates = "exact";
  int nodes = 64, depth = 16, large_gpus = 32;
  int64_t period = 60, sla_waiting = 3600;
  size_t first_job = 0, window_jobs = 0;
  bool enqueue = false;
};

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

double Round(double v, double scale) { return std::round(v * scale) / scale; }

int RunJobs(const SimulateFlags& f) {
  std::string text;
  if (!ReadFile(f.job_trace, &text)) {
    std::fprintf(stderr, "tephra simulate: --job-trace: cannot read %s\n", f.job_trace.c_str());
    return 2;
  }
  auto trace = simulate::ParseJobTrace(text);
  if (!trace.ok()) {
    std::fprintf(stderr, "tephra simulate: %s: %s\n", f.job_trace.c_str(), trace.status().ToString().c_str());
    return 2;
  }
  simulate::JobReplayOptions o;
  o.nodes = f.nodes;
  o.seed = f.seed;
  o.conservative_depth = f.depth;
  o.period_seconds = f.period;
  o.sla_waiting_seconds = f.sla_waiting;
  o.large_gang_gpus = f.large_gpus;
  o.enqueue = f.enqueue;
  auto mode = simulate::ParseBackfillMode(f.mode);
  auto est = simulate::ParseEstimateMode(f.estimates);
  if (!mode.ok() || !est.ok()) {
    std::fprintf(stderr, "tephra simulate: %s\n", (!mode.ok() ? mode.status() : est.status()).ToString().c_str());
    return 2;
  }
  o.mode = *mode;
  o.estimates = *est;
  auto conf = simulate::JobReplayConf(o);
  if (!conf.ok()) {
    std::fprintf(stderr, "tephra simulate: %s\n", conf.status().ToString().c_str());
    return 2;
  }
  const std::vector<simulate::TraceJob> window = simulate::TraceWindow(*trace, f.first_job, f.window_jobs);
  auto r = simulate::ReplayJobs(window, *conf, o);
  if (!r.ok()) {
    std::fprintf(stderr, "tephra simulate: %s\n", r.status().ToString().c_str());
    return 2;
  }
  auto waits = [](const simulate::WaitStats& w) {
    return nlohmann::json{{"jobs", w.jobs},
                          {"mean_seconds", Round(w.mean_s, 10)},
                          {"p99_seconds", Round(w.p99_s, 10)},
                          {"max_seconds", Round(w.max_s, 10)}};
  };
  if (f.output == "json") {
    nlohmann::json out = {
        {"mode", f.mode},
        {"estimates", f.estimates},
        {"seed", f.seed},
        {"nodes", f.nodes},
        {"total_gpus", r->total_gpus},
        {"reservation_depth", conf->core.reservation_depth},
        {"enqueue", f.enqueue},
        {"jobs", r->jobs},
        {"jobs_run", r->jobs_run},
        {"jobs_too_big", r->jobs_too_big},
        {"large_gang_gpus", f.large_gpus},
        {"wait", waits(r->all)},
        {"large_gang_wait", waits(r->large)},
        {"mean_jct_seconds", Round(r->mean_jct_s, 10)},
        {"makespan_seconds", r->makespan_s},
        {"gpu_utilisation", Round(r->gpu_utilisation, 100)},
        {"gpu_utilisation_arrivals", Round(r->gpu_utilisation_arrivals, 100)},
        {"estimates_first_kind",
         {{"reservation", r->est_reserved}, {"planned", r->est_planned}, {"unknown", r->est_unknown}}},
        {"estimate_accuracy",
         {{"first", {{"jobs", r->est_scored},
                     {"within_10pct", Round(r->est_within_10pct, 100)},
                     {"within_60s", Round(r->est_within_60s, 100)}}},
          {"reservation", {{"jobs", r->est_reserved_scored},
                           {"within_10pct", Round(r->est_reserved_within_10pct, 100)},
                           {"within_60s", Round(r->est_reserved_within_60s, 100)}}}}},
        {"cycles", r->cycles},
        {"cycle_seconds", Round(r->cycle_seconds, 1000)}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s, %s estimates, %d nodes: %d jobs run (%d too big)\n", f.mode.c_str(), f.estimates.c_str(), f.nodes,
                r->jobs_run, r->jobs_too_big);
    std::printf("  large gangs (>= %d GPUs, %d): wait mean %.2f h, p99 %.2f h\n", f.large_gpus, r->large.jobs,
                r->large.mean_s / 3600, r->large.p99_s / 3600);
    std::printf("  all jobs: wait mean %.2f h; JCT mean %.2f h; GPU utilisation %.2f%% (%.2f%% over the arrivals)\n",
                r->all.mean_s / 3600, r->mean_jct_s / 3600, r->gpu_utilisation, r->gpu_utilisation_arrivals);
    std::printf("  estimates: first within 10%% %.1f%%, within 60 s %.1f%% (%d jobs); reservations within 10%% %.1f%%, "
                "within 60 s %.1f%% (%d jobs)\n",
                r->est_within_10pct, r->est_within_60s, r->est_scored, r->est_reserved_within_10pct,
                r->est_reserved_within_60s, r->est_reserved_scored);
  }
  return 0;
}

int Run(const SimulateFlags& f) {
  if (!f.job_trace.empty()) return RunJobs(f);
  if (f.node_list.empty() || f.pod_list.empty()) {
    std::fprintf(stderr, "tephra simulate: want --node-list and --pod-list, or --job-trace\n");
    return 2;
  }
  std::string nodes_text, pods_text;
  if (!ReadFile(f.node_list, &nodes_text)) {
    std::fprintf(stderr, "tephra simulate: --node-list: cannot read %s\n", f.node_list.c_str());
    return 2;
  }
  if (!ReadFile(f.pod_list, &pods_text)) {
    std::fprintf(stderr, "tephra simulate: --pod-list: cannot read %s\n", f.pod_list.c_str());
    return 2;
  }
  auto nodes = simulate::ParseNodeList(nodes_text);
  if (!nodes.ok()) {
    std::fprintf(stderr, "tephra simulate: %s: %s\n", f.node_list.c_str(), nodes.status().ToString().c_str());
    return 2;
  }
  auto pods = simulate::ParsePodList(pods_text);
  if (!pods.ok()) {
    std::fprintf(stderr, "tephra simulate: %s: %s\n", f.pod_list.c_str(), pods.status().ToString().c_str());
    return 2;
  }
  sched::SchedulerConf conf = simulate::DefaultConf();
  if (!f.scheduler_conf.empty()) {
    std::vector<std::string> warnings;
    auto c = scheduler::LoadSchedulerConfFile(f.scheduler_conf, &warnings);
    for (const auto& w : warnings) std::fprintf(stderr, "tephra simulate: %s\n", w.c_str());
    if (!c.ok()) {
      std::fprintf(stderr, "tephra simulate: --scheduler-conf: %s\n", c.status().ToString().c_str());
      return 2;
    }
    conf = *c;
  }
  simulate::ReplayOptions o;
  o.seed = f.seed;
  o.tune = f.tune;
  o.shuffle = f.shuffle;
  auto r = simulate::Replay(*nodes, *pods, conf, o);
  if (!r.ok()) {
    std::fprintf(stderr, "tephra simulate: %s\n", r.status().ToString().c_str());
    return 2;
  }
  if (f.output == "json") {
    nlohmann::json at = nlohmann::json::object();
    for (const auto& [pct, alloc] : r->gpu_alloc_ratio_at) at[std::to_string(pct)] = std::round(alloc * 100) / 100;
    nlohmann::json out = {{"seed", r->seed},
                          {"tune", f.tune},
                          {"total_gpus", r->total_gpus},
                          {"pods_arrived", r->pods_arrived},
                          {"pods_placed", r->pods_placed},
                          {"pods_failed", r->pods_failed},
                          {"final_gpu_alloc_ratio", std::round(r->final_gpu_alloc_ratio * 100) / 100},
                          {"cycle_seconds", std::round(r->cycle_seconds * 1000) / 1000},
                          {"gpu_alloc_ratio_at", at}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("seed %llu: %d pods arrived, %d placed, %d failed; %lld GPUs\n", static_cast<unsigned long long>(r->seed),
                r->pods_arrived, r->pods_placed, r->pods_failed, static_cast<long long>(r->total_gpus));
    for (int pct : {50, 80, 90, 100, 110, 120, 130})
      if (auto it = r->gpu_alloc_ratio_at.find(pct); it != r->gpu_alloc_ratio_at.end())
        std::printf("  GPU allocation at %3d%% arrived: %.2f%%\n", pct, it->second);
  }
  return 0;
}

}  // namespace

void RegisterSimulate(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand(
      "simulate", "Replay a pod trace against a node list (or a job trace over time) on the scheduling core");
  auto f = std::make_shared<SimulateFlags>();
  auto* node_list =
      app->add_option("--node-list", f->node_list, "Node list CSV (columns sn, cpu_milli, memory_mib, gpu, model)");
  auto* pod_list = app->add_option("--pod-list", f->pod_list,
                                   "Pod list CSV (columns name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)");
  auto* job_trace = app->add_option(
      "--job-trace", f->job_trace,
      "Job trace CSV (columns job_id, submission_time, duration, num_gpu): replay jobs over time instead of a pod list");
  job_trace->excludes(node_list)->excludes(pod_list);
  app->add_option("--nodes", f->nodes, "--job-trace: nodes of 8 GPUs")->check(CLI::Range(1, 100000))->capture_default_str();
  app->add_option("--mode", f->mode, "--job-trace: backfill mode")
      ->check(CLI::IsMember({"none", "sla", "easy", "conservative"}))
      ->capture_default_str();
  app->add_option("--estimates", f->estimates, "--job-trace: running estimates, the durations or modelled user estimates")
      ->check(CLI::IsMember({"exact", "user"}))
      ->capture_default_str();
  app->add_option("--depth", f->depth, "--job-trace: reservation depth of --mode conservative")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--first-job", f->first_job, "--job-trace: first job of the window (in submission order)")
      ->capture_default_str();
  app->add_option("--window-jobs", f->window_jobs, "--job-trace: jobs in the window (0: to the end)")
      ->capture_default_str();
  app->add_option("--period", f->period, "--job-trace: seconds between cycles while jobs wait")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}))
      ->capture_default_str();
  app->add_option("--sla-waiting-seconds", f->sla_waiting, "--job-trace: the sla plugin's sla-waiting-time (--mode sla)")
      ->check(CLI::Range(int64_t{1}, int64_t{31536000}))
      ->capture_default_str();
  app->add_flag("--enqueue", f->enqueue,
               "--job-trace: PodGroups arrive Pending and the enqueue action admits them (default: they arrive Inqueue)");
  app->add_option("--large-gpus", f->large_gpus, "--job-trace: jobs with at least this many GPUs are large gangs")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--seed", f->seed, "Seed of the arrival order and of the tuning samples (--job-trace: of the user estimates)")->capture_default_str();
  app->add_option("--tune", f->tune, "Tune the workload to this multiple of the cluster's GPU capacity (0: as is)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--shuffle", f->shuffle, "Arrive in a seeded shuffle of the pod list (false: the list's order)")
      ->capture_default_str();
  app->add_option("--scheduler-conf", f->scheduler_conf,
                  "A Volcano scheduler configuration (default: enqueue, allocate; predicates, fgd)");
  app->add_option("--output,-o", f->output, "json or text")->check(CLI::IsMember({"json", "text"}))->capture_default_str();
  app->callback([f, exit_code] { *exit_code = Run(*f); });
}

}  // namespace tephra::cmd
