// The openb replay as a benchmark: GPU allocation at 100% and 130% of capacity arrived (user counters
// alloc_at_100 / alloc_at_130, percent), and the core's time per arriving pod. One iteration replays the
// whole tuned trace (about 10,800 pods on 1,523 nodes).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tephra/simulate/replay.h"

namespace {

using tephra::simulate::ReplayOptions;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int g_first_seed = 42, g_last_seed = 42;

void BM_OpenbReplay(benchmark::State& state) {
  auto nodes = tephra::simulate::ParseNodeList(Read(std::string(TEPHRA_OPENB_DIR) + "/openb_node_list_all_node.csv"));
  auto pods = tephra::simulate::ParsePodList(Read(std::string(TEPHRA_OPENB_DIR) + "/openb_pod_list_default.csv"));
  if (!nodes.ok() || !pods.ok()) {
    state.SkipWithError("cannot read the openb trace");
    return;
  }
  double at100 = 0, at130 = 0, cycle_s = 0, arrived = 0;
  int runs = 0;
  for (auto _ : state) {
    for (int seed = g_first_seed; seed <= g_last_seed; ++seed) {
      ReplayOptions o;
      o.seed = static_cast<uint64_t>(seed);
      auto r = tephra::simulate::Replay(*nodes, *pods, tephra::simulate::DefaultConf(), o);
      if (!r.ok()) {
        state.SkipWithError(r.status().ToString().c_str());
        return;
      }
      at100 += r->gpu_alloc_ratio_at.count(100) ? r->gpu_alloc_ratio_at.at(100) : 0;
      at130 += r->gpu_alloc_ratio_at.count(130) ? r->gpu_alloc_ratio_at.at(130) : 0;
      cycle_s += r->cycle_seconds;
      arrived += r->pods_arrived;
      std::fprintf(stderr, "seed %d: allocation %.2f%% at 100%% arrived, %.2f%% at 130%%\n", seed,
                   r->gpu_alloc_ratio_at.count(100) ? r->gpu_alloc_ratio_at.at(100) : 0.0,
                   r->gpu_alloc_ratio_at.count(130) ? r->gpu_alloc_ratio_at.at(130) : 0.0);
      ++runs;
    }
  }
  state.counters["alloc_at_100"] = at100 / runs;
  state.counters["alloc_at_130"] = at130 / runs;
  state.counters["seeds"] = g_last_seed - g_first_seed + 1;
  state.counters["cycle_ms_per_pod"] = cycle_s * 1000 / arrived;
}
BENCHMARK(BM_OpenbReplay)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  // --seeds=A-B (default 42-42) before Google Benchmark sees the arguments.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--seeds=", 8) == 0) {
      if (std::sscanf(argv[i] + 8, "%d-%d", &g_first_seed, &g_last_seed) != 2 || g_last_seed < g_first_seed) {
        std::fprintf(stderr, "--seeds: want A-B, e.g. 42-51\n");
        return 2;
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
