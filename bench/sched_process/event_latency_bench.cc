// Event-to-state latency of the scheduler process: how long a watch event waits between reaching the
// scheduler (its informer handler) and being applied to the scheduling state, while cycles over a large
// cluster keep running. Also the cycle lengths seen in the same run, since an event that arrives during a
// cycle waits for it.
//
// Shape: <nodes> nodes (32 cpu, 8 GPUs) with two running pods each, and <gangs> pending gangs of 16 pods
// that ask for more GPUs than a node has (unschedulable; retried every cycle, so every cycle walks the whole
// cluster, which is what a busy 5,000-node cycle costs). A writer changes running pods at --rate per second
// (label updates: MODIFIED events the scheduler must apply). The process runs on the in-memory fake client,
// so the numbers are the process's own, not the API server's.
//
//   event_latency_bench --benchmark_filter=/5000/   (manual, bench/RESULTS.md; slice 0 vs the default 20 ms)
//   ctest -L bench runs /500/ with thresholds (bench/thresholds.yaml, section sched_process)
#include <algorithm>
#include <atomic>
#include <thread>

#include <benchmark/benchmark.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/api/scheduling.h"
#include "tephra/kube/log.h"
#include "tephra/kube/metrics.h"
#include "tephra/scheduler/process.h"

namespace {

using tephra::api::json;
namespace api = tephra::api;
namespace sch = tephra::scheduler;

json NodeJson(int i) {
  json res = {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "node-" + std::to_string(i)}}},
          {"status",
           {{"allocatable", res}, {"capacity", res}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json PodJson(const std::string& name, const std::string& group, const std::string& node, const std::string& gpus,
             const std::string& phase) {
  json spec = {{"schedulerName", "volcano"},
               {"containers",
                json::array({{{"name", "c"},
                              {"image", "x"},
                              {"resources", {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus}}},
                                             {"limits", {{"nvidia.com/gpu", gpus}}}}}}})}};
  if (!node.empty()) spec["nodeName"] = node;
  json meta = {{"name", name}, {"namespace", "bench"}, {"labels", {{"rev", "0"}}}};
  if (!group.empty()) meta["annotations"] = {{std::string(api::kPodGroupAnnotation), group}};
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}, {"status", {{"phase", phase}}}};
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void BM_EventToState(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int gangs = static_cast<int>(state.range(1));
  const int rate = static_cast<int>(state.range(2));
  const auto run_for = std::chrono::seconds(state.range(3));
  const auto slice = std::chrono::milliseconds(state.range(4));
  (void)tephra::kube::log::Init("warn");

  for (auto _ : state) {
    auto fc = std::make_shared<tephra::kube::testing::FakeClient>();
    fc->Seed(api::Queue::Resource(), {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                                      {"kind", "Queue"},
                                      {"metadata", {{"name", "default"}}},
                                      {"spec", {{"weight", 1}}},
                                      {"status", {{"state", "Open"}}}});
    std::vector<std::string> running;
    for (int i = 0; i < nodes; ++i) {
      fc->Seed(api::Node::Resource(), NodeJson(i));
      for (int k = 0; k < 2; ++k) {
        std::string name = "run-" + std::to_string(i) + "-" + std::to_string(k);
        fc->Seed(api::Pod::Resource(), PodJson(name, "", "node-" + std::to_string(i), "1", "Running"));
        running.push_back(name);
      }
    }
    for (int g = 0; g < gangs; ++g) {
      const std::string pg = "gang-" + std::to_string(g);
      fc->Seed(api::PodGroup::Resource(), {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                                           {"kind", "PodGroup"},
                                           {"metadata", {{"name", pg}, {"namespace", "bench"}}},
                                           {"spec", {{"minMember", 16}, {"queue", "default"}}},
                                           {"status", {{"phase", "Inqueue"}}}});
      for (int k = 0; k < 16; ++k)
        fc->Seed(api::Pod::Resource(), PodJson(pg + "-" + std::to_string(k), pg, "", "16", "Pending"));
    }

    tephra::kube::metrics::Registry registry;
    sch::SchedulerOptions o;
    o.schedule_period = std::chrono::milliseconds(50);
    o.min_schedule_interval = std::chrono::milliseconds(1);
    o.retry_unchanged_every_cycles = 1;  // every cycle walks every gang over every node
    o.status_resync_period = std::chrono::milliseconds(0);
    o.allocate_slice = slice;
    sch::SchedulerDeps d;
    d.client = fc;
    d.status_client = fc;
    d.registry = &registry;
    auto proc = sch::SchedulerProcess::Create(o, d);
    if (!proc.ok()) {
      state.SkipWithError(proc.status().ToString().c_str());
      return;
    }
    if (!(*proc)->Start().ok() ||
        !(*proc)->WaitForSync(std::chrono::steady_clock::now() + std::chrono::seconds(120))) {
      state.SkipWithError("informers did not sync");
      return;
    }
    (*proc)->WithState([](tephra::sched::ClusterState&) {});  // the initial list is applied
    const uint64_t applied0 = (*proc)->event_latency().applied;
    (*proc)->SetLeading(true);

    // The writer: label updates on running pods, evenly spaced.
    std::atomic<bool> stop{false};
    std::atomic<int64_t> sent{0};
    std::thread writer([&] {
      const auto gap = std::chrono::nanoseconds(1'000'000'000LL / std::max(1, rate));
      auto next = std::chrono::steady_clock::now();
      size_t i = 0;
      while (!stop) {
        std::this_thread::sleep_until(next);
        next += gap;
        const std::string& name = running[i++ % running.size()];
        auto p = fc->Get(api::Pod::Resource(), "bench", name);
        if (!p.ok()) continue;
        (*p)["metadata"]["labels"]["rev"] = std::to_string(i);
        if (fc->Update(api::Pod::Resource(), "bench", *p).ok()) ++sent;
      }
    });
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(run_for);
    stop = true;
    writer.join();
    (*proc)->WithState([](tephra::sched::ClusterState&) {});  // everything sent has been applied
    const auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto lat = (*proc)->event_latency();
    const uint64_t cycles = (*proc)->cycles();
    // Only the events of the measured window (the initial list was applied before it; the ring holds 64k
    // samples, more than both together at these sizes).
    std::vector<double> window(lat.recent_ms.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(applied0, lat.recent_ms.size())),
                               lat.recent_ms.end());
    (*proc)->Stop();
    state.SetIterationTime(elapsed);
    state.counters["events_sent"] = static_cast<double>(sent.load());
    state.counters["events_applied"] = static_cast<double>(lat.applied - applied0);
    state.counters["event_p50_ms"] = Percentile(window, 0.50);
    state.counters["event_p99_ms"] = Percentile(window, 0.99);
    state.counters["event_max_ms"] = Percentile(window, 1.0);
    state.counters["cycles"] = static_cast<double>(cycles);
    state.counters["cycle_p50_ms"] = Percentile(lat.recent_cycle_ms, 0.50);
    state.counters["cycle_p99_ms"] = Percentile(lat.recent_cycle_ms, 0.99);
  }
}

// nodes, pending gangs, events/s, seconds, allocate slice ms (0: none, the whole allocate in one cycle)
BENCHMARK(BM_EventToState)
    ->Args({500, 100, 200, 4, 20})
    ->Args({5000, 1000, 400, 10, 0})
    ->Args({5000, 1000, 400, 10, 20})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
