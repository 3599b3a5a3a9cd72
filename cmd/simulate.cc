// `tephra simulate`: trace replay on the scheduling core, no API server (docs/simulate.md).
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common.h"
#include "tephra/scheduler/conf.h"
#include "tephra/simulate/replay.h"

namespace tephra::cmd {

namespace {

struct SimulateFlags {
  std::string node_list, pod_list, scheduler_conf, output = "json";
  uint64_t seed = 42;
  double tune = 1.3;
  bool shuffle = true;
};

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

int Run(const SimulateFlags& f) {
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
      "simulate", "Replay a pod trace against a node list on the scheduling core and print GPU allocation");
  auto f = std::make_shared<SimulateFlags>();
  app->add_option("--node-list", f->node_list, "Node list CSV (columns sn, cpu_milli, memory_mib, gpu, model)")
      ->required();
  app->add_option("--pod-list", f->pod_list,
                  "Pod list CSV (columns name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)")
      ->required();
  app->add_option("--seed", f->seed, "Seed of the arrival order and of the tuning samples")->capture_default_str();
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
