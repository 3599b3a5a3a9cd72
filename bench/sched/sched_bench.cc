// Scheduling-core benchmark (issue #6, docs/failure-scenarios.md, scenario 19).
// Shape at full size: 5,000 nodes x 8 GPUs (leaf/spine labels, 32 nodes per leaf, 8 leaves per spine),
// 100,000 running pods (CPU-only, 20 per node, in jobs of 50), 1,000 pending gangs of 8-128 one-GPU pods
// over 4 weighted queues, 20% of them with hard network topology (tier 2) and task-topology annotations;
// all implemented plugins on. Counters: placements/s (placements per second of cycle time), cycle p50/p99,
// peak RSS, and the cost of a cycle where nothing changed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tephra/sched/scheduler.h"

namespace tephra::sched {
namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;

struct Lcg {  // seeded, so every run builds the same cluster
  uint64_t s;
  uint64_t Next() { return s = s * 6364136223846793005ULL + 1442695040888963407ULL; }
  int Uniform(int lo, int hi) { return lo + static_cast<int>((Next() >> 33) % static_cast<uint64_t>(hi - lo + 1)); }
};

// `preempt`: Volcano's full action list (enqueue, allocate, preempt, reclaim, backfill) instead of the Helm
// default; with 1,000 starving gangs over lower-priority running pods it is the victim search's worst case.
SchedulerConf BenchConf(bool preempt = false) {
  SchedulerConf c = SchedulerConf::Default();
  if (preempt) c.actions = {"enqueue", "allocate", "preempt", "reclaim", "backfill"};
  for (auto& p : c.tiers[1].plugins)
    if (p.name == "binpack") p.arguments["binpack.resources"] = "nvidia.com/gpu";
  c.tiers[1].plugins.push_back(PluginOption::Named("task-topology"));
  c.tiers[1].plugins.push_back(PluginOption::Named("network-topology-aware"));
  return c;
}

// `affinity` 1: every fourth gang wants its pods in one spine (required pod affinity to itself on the spine
// label) and every fourth gang, offset by two, one pod per node (hostname anti-affinity to itself): the
// inter-pod affinity filter's cost on a busy cluster. 2: the same gangs with the soft forms, which only score
// (preferred pod affinity on the spine, weight 100; a ScheduleAnyway hostname spread): the cost of the batch
// scores, whose tasks are placed by a scan of the feasible nodes instead of from the shared heaps. 3: no
// terms, but every gang behind a Service (vcjob's svc plugin), so every pod is spread by the system defaults.
// 4: no terms, but every node's 8 GPUs modelled as cards (NVLink islands of 4) and every gang pod given its
// card by the Statement (docs/devices.md): the cost of device-level placement.
std::unique_ptr<Scheduler> Build(int nodes, int running_pods, int gangs, bool preempt = false, int affinity = 0) {
  auto s = std::move(Scheduler::Create(BenchConf(preempt))).value();
  ClusterState& st = s->state();
  int gpu = *st.resources().Intern("nvidia.com/gpu");
  for (int q = 0; q < 4; ++q) {
    QueueInfo qi;
    qi.name = "q" + std::to_string(q);
    qi.weight = q + 1;
    st.UpsertQueue(qi);
  }
  for (int i = 0; i < nodes; ++i) {
    NodeInfo n;
    n.name = "node-" + std::to_string(100000 + i);
    n.allocatable = Resource::CpuMem(128000, 1024 * kGi).With(kPods, 110).With(gpu, 8);
    n.labels = {{"volcano.sh/hypernode-leaf", "leaf-" + std::to_string(i / 32)},
                {"volcano.sh/hypernode-spine", "spine-" + std::to_string(i / 256)}};
    if (affinity == 4) {
      n.devices.kind = DeviceKind::kNvidiaGpu;
      n.devices.topology = CardTopology::kNvLink;
      for (int c = 0; c < 8; ++c) n.devices.cards.push_back({.id = "GPU-" + std::to_string(c), .index = c});
      n.devices.links.assign(8, std::vector<int32_t>(8, 10));
      for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b)
          if (a != b && a / 4 == b / 4) n.devices.links[static_cast<size_t>(a)][static_cast<size_t>(b)] = 100;
    }
    st.UpsertNode(n);
  }
  Lcg rng{42};
  uint64_t order = 0;
  const int per_job = 50;
  for (int j = 0; j * per_job < running_pods; ++j) {
    JobInfo job;
    job.key = "run/j" + std::to_string(j);
    job.ns = "run";
    job.name = "j" + std::to_string(j);
    job.uid = job.key;
    job.queue = "q" + std::to_string(j % 4);
    job.min_member = per_job;
    job.phase = PodGroupPhase::kRunning;
    st.UpsertJob(job);
    for (int k = 0; k < per_job && j * per_job + k < running_pods; ++k) {
      int idx = j * per_job + k;
      TaskInfo t;
      t.uid = job.key + "-" + std::to_string(k);
      t.ns = job.ns;
      t.name = t.uid;
      t.job = job.key;
      t.role = "worker";
      t.request = Resource::CpuMem(2000, 8 * kGi);
      t.status = TaskStatus::kRunning;
      t.node = "node-" + std::to_string(100000 + idx % nodes);
      t.creation_index = order++;
      st.UpsertPod(t);
    }
  }
  for (int g = 0; g < gangs; ++g) {
    int size = 8 << rng.Uniform(0, 4);  // 8..128
    JobInfo job;
    job.key = "train/g" + std::to_string(g);
    job.ns = "train";
    job.name = "g" + std::to_string(g);
    job.uid = job.key;
    job.queue = "q" + std::to_string(g % 4);
    job.min_member = size;
    job.priority = rng.Uniform(0, 2);
    job.creation_time = WallTime(std::chrono::seconds(1000 + g));
    if (g % 5 == 0) {
      job.network_topology = {TopologyMode::kHard, 2, ""};
      job.task_topology_affinity = "ps,worker";
    }
    st.UpsertJob(job);
    for (int k = 0; k < size; ++k) {
      TaskInfo t;
      t.uid = job.key + "-" + std::to_string(k);
      t.ns = job.ns;
      t.name = t.uid;
      t.job = job.key;
      t.role = k == 0 ? "ps" : "worker";
      t.request = Resource::CpuMem(8000, 64 * kGi).With(gpu, 1);
      if (affinity == 4) t.devices = {.kind = DeviceKind::kNvidiaGpu, .whole = 1};
      t.creation_index = order++;
      if (affinity == 3) {
        // Every gang behind its own headless Service, as vcjob's svc plugin makes one: kube-scheduler's
        // system-default spread constraints score every pending pod.
        t.labels = {{"volcano.sh/job-name", job.name}};
        if (k == 0) st.UpsertService(job.ns, job.name, t.labels);
      } else if ((affinity == 1 || affinity == 2) && g % 2 == 0) {
        // A term selecting the gang's own pods: affinity on the spine (g % 4 == 0) or anti-affinity per node.
        t.labels = {{"gang", job.name}};
        PodAffinityTerm term;
        term.selector.match_labels = t.labels;
        term.namespaces = {job.ns};
        term.topology_key = g % 4 == 0 ? "volcano.sh/hypernode-spine" : "kubernetes.io/hostname";
        if (affinity == 1) {
          (g % 4 == 0 ? t.pod_affinity : t.pod_anti_affinity).push_back(std::move(term));
        } else if (g % 4 == 0) {
          t.preferred_pod_terms.push_back({100, false, std::move(term)});
        } else {
          SpreadConstraint c;
          c.selector.match_labels = t.labels;
          c.topology_key = "kubernetes.io/hostname";
          t.soft_spread.push_back(std::move(c));
        }
      }
      st.UpsertPod(t);
    }
  }
  return s;
}

const WallTime kNow = WallTime(std::chrono::seconds(2'000'000'000));

// VmHWM of this process image. Not getrusage's ru_maxrss: Linux keeps that across fork and exec, so a
// benchmark started by a bigger parent (the threshold checker's Python) reports the parent's peak.
double PeakRssMb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:   12345 kB"
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// First cycle on a fresh cluster: enqueue + allocate of all pending gangs.
void FirstCycles(benchmark::State& state, int affinity) {
  const int nodes = static_cast<int>(state.range(0)), pods = static_cast<int>(state.range(1)),
            gangs = static_cast<int>(state.range(2));
  std::vector<double> ms;
  int64_t placements = 0;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, pods, gangs, false, affinity);
    state.ResumeTiming();
    auto t0 = std::chrono::steady_clock::now();
    CycleResult r = s->RunCycle(kNow);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(r.binds.data());
    state.PauseTiming();
    ms.push_back(dt * 1000);
    seconds += dt;
    placements += static_cast<int64_t>(r.binds.size());
    s.reset();
    state.ResumeTiming();
  }
  state.counters["placements_per_s"] = seconds > 0 ? static_cast<double>(placements) / seconds : 0;
  state.counters["placements"] = static_cast<double>(placements) / static_cast<double>(ms.size());
  state.counters["cycle_p50_ms"] = Percentile(ms, 0.5);
  state.counters["cycle_p99_ms"] = Percentile(ms, 0.99);
  state.counters["peak_rss_mb"] = PeakRssMb();
}

void BM_FullCycle(benchmark::State& state) { FirstCycles(state, 0); }

// BM_FullCycle with a quarter of the gangs in one spine by pod affinity and a quarter spread one pod per
// node by anti-affinity (fourth argument 1), the soft forms of both (2), every gang behind a Service (3), or
// the same cluster without any of them (0).
void BM_AffinityCycle(benchmark::State& state) { FirstCycles(state, static_cast<int>(state.range(3))); }

// BM_FullCycle with every node's GPUs modelled as cards and every gang pod given its card (Build, mode 4).
void BM_DeviceCycle(benchmark::State& state) { FirstCycles(state, 4); }

// Cycles after the first, with no input change: must skip unschedulable gangs and write nothing.
// Fourth argument 1 = preempt and reclaim on: after a change, victim searches run for up to
// maxJobsPerCycle (32) starving jobs per cycle until every one is memoised, so the steady state is measured
// after enough warm-up cycles for 1,000 gangs (1,000 / 32 < 40).
void BM_NoChangeCycle(benchmark::State& state) {
  const bool preempt = state.range(3) != 0;
  auto s = Build(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), static_cast<int>(state.range(2)),
                 preempt);
  CycleResult first = s->RunCycle(kNow);
  // Binder feedback for everything bound, as the scheduler process would deliver it.
  for (const auto& b : first.binds) s->state().BindSucceeded(b.task_uid);
  (void)s->RunCycle(kNow);  // absorbs the status changes caused by the feedback
  for (int i = 0; preempt && i < 40; ++i) (void)s->RunCycle(kNow);
  int64_t considered = 0, writes = 0;
  for (auto _ : state) {
    CycleResult r = s->RunCycle(kNow);
    considered += r.metrics.jobs_considered;
    writes += static_cast<int64_t>(r.pod_groups.size() + r.queues.size() + r.binds.size());
  }
  state.counters["jobs_considered_per_cycle"] = static_cast<double>(considered) / static_cast<double>(state.iterations());
  state.counters["writes_per_cycle"] = static_cast<double>(writes) / static_cast<double>(state.iterations());
  state.counters["peak_rss_mb"] = PeakRssMb();
}

// A long line (docs/why-pending.md): `range(0)` one-pod jobs (range(1): queue positions on/off) wait in one queue for a node that runs one at a
// time. Each iteration the running job finishes, 2 s pass (positions recomputed every cycle, 40 tokens
// earned) and one cycle runs: the head starts and every waiting job moves up by one. writes_per_cycle counts
// PodGroup status writes; without the position budget it would be the length of the line.
void BM_PendingLine(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  SchedulerConf conf = BenchConf();
  if (state.range(1) == 0) conf.core.queue_position_interval_ms = 0;  // positions off: the cost baseline
  auto s = std::move(Scheduler::Create(conf)).value();
  ClusterState& st = s->state();
  QueueInfo q;
  q.name = "default";
  st.UpsertQueue(q);
  NodeInfo n;
  n.name = "node-0";
  n.allocatable = Resource::CpuMem(1000, 16 * kGi).With(kPods, 110);
  st.UpsertNode(n);
  for (int i = 0; i < jobs; ++i) {
    JobInfo j;
    j.name = "j" + std::to_string(100000 + i);
    j.ns = "ns";
    j.key = "ns/" + j.name;
    j.uid = "uid-" + j.name;
    j.queue = "default";
    j.min_member = 1;
    j.creation_time = WallTime(std::chrono::seconds(1000 + i));
    st.UpsertJob(j);
    TaskInfo t;
    t.uid = j.name + "-0";
    t.ns = "ns";
    t.name = t.uid;
    t.job = j.key;
    t.role = "worker";
    t.request = Resource::CpuMem(1000, kGi).With(kPods, 1);
    t.creation_index = static_cast<uint64_t>(i);
    st.UpsertPod(t);
  }
  int64_t seconds = 0;
  auto at = [&] { return kNow + std::chrono::seconds(seconds); };
  (void)s->RunCycle(at());  // first status of every PodGroup
  int head = 0;
  int64_t writes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string name = "j" + std::to_string(100000 + head++);
    st.RemovePod(name + "-0");
    st.RemoveJob("ns/" + name);
    seconds += 2;
    state.ResumeTiming();
    CycleResult r = s->RunCycle(at());
    writes += static_cast<int64_t>(r.pod_groups.size());
  }
  state.counters["writes_per_cycle"] = static_cast<double>(writes) / static_cast<double>(state.iterations());
  state.counters["waiting_jobs"] = jobs;
}

BENCHMARK(BM_FullCycle)->Args({200, 4000, 40})->Args({5000, 100000, 1000})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_DeviceCycle)->Args({200, 4000, 40})->Args({5000, 100000, 1000})->Unit(benchmark::kMillisecond)->Iterations(3);
// Fourth argument: 0 = the same cluster without affinity terms (the baseline), 1 = with them. Manual.
BENCHMARK(BM_AffinityCycle)->Args({1000, 20000, 250, 0})->Args({1000, 20000, 250, 1})->Args({1000, 20000, 250, 2})->Args({1000, 20000, 250, 3})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_NoChangeCycle)
    ->Args({200, 4000, 40, 0})
    ->Args({5000, 100000, 1000, 0})
    ->Args({200, 4000, 40, 1})
    ->Args({5000, 100000, 1000, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PendingLine)->Args({2000, 1})->Args({10000, 1})->Args({10000, 0})->Unit(benchmark::kMillisecond)->Iterations(50);

}  // namespace
}  // namespace tephra::sched

BENCHMARK_MAIN();
