#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "sim_core.h"
#include "tephra/sched/scheduler.h"
#include "tephra/simulate/replay.h"

namespace tephra::simulate {

namespace {

constexpr int64_t kMi = 1024 * 1024;
constexpr std::string_view kModelLabel = "nvidia.com/gpu.product";

}  // namespace

sched::SchedulerConf DefaultConf() {
  sched::SchedulerConf c;
  c.actions = {"enqueue", "allocate"};
  sched::Tier tier;
  tier.plugins.push_back(sched::PluginOption::Named("predicates"));
  tier.plugins.push_back(sched::PluginOption::Named("fgd"));
  c.tiers.push_back(std::move(tier));
  return c;
}

std::vector<TracePod> TuneWorkload(const std::vector<TracePod>& pods, int64_t capacity, const ReplayOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<TracePod> out = pods;
  if (o.shuffle) {
    std::sort(out.begin(), out.end(), [](const TracePod& a, const TracePod& b) { return a.name < b.name; });
    std::shuffle(out.begin(), out.end(), rng);
  }
  if (o.tune <= 0 || pods.empty()) return out;
  const double target = o.tune * static_cast<double>(capacity);
  int64_t total = 0;
  for (const auto& p : out) total += p.TotalGpuMilli();
  // The paper's simulator: remove random pods while above the target; append random copies of the original
  // list's pods until the next one would pass it.
  while (static_cast<double>(total) > target && !out.empty()) {
    size_t i = std::uniform_int_distribution<size_t>(0, out.size() - 1)(rng);
    total -= out[i].TotalGpuMilli();
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
  }
  for (int copy = 0;; ++copy) {
    const TracePod& src = pods[std::uniform_int_distribution<size_t>(0, pods.size() - 1)(rng)];
    if (static_cast<double>(total + src.gpu_milli) > target) break;
    TracePod p = src;
    p.name += "-tuned-" + std::to_string(copy);
    total += p.TotalGpuMilli();
    out.push_back(std::move(p));
  }
  return out;
}

core::StatusOr<ReplayResult> Replay(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                    const sched::SchedulerConf& conf, const ReplayOptions& o) {
  auto core = internal::NewSimCore(conf);
  if (!core.ok()) return core.status();
  auto& s = core->scheduler;
  sched::ClusterState& st = s->state();
  const int gpu = core->gpu;

  ReplayResult r;
  r.seed = o.seed;
  for (const auto& tn : nodes) {
    sched::NodeInfo n;
    n.name = tn.name;
    n.allocatable = sched::Resource::CpuMem(tn.cpu_milli, tn.memory_mib * kMi).With(sched::kPods, 1000).With(gpu, tn.gpus);
    n.labels = {{std::string(sched::kHostnameKey), tn.name}};
    if (!tn.model.empty()) n.labels[std::string(kModelLabel)] = tn.model;
    if (tn.gpus > 0) {
      n.devices.kind = sched::DeviceKind::kNvidiaGpu;
      n.devices.model = tn.model;
      // The trace shares GPUs by fractions with no limit on how many pods share one.
      for (int i = 0; i < tn.gpus; ++i)
        n.devices.cards.push_back({.id = "GPU-" + std::to_string(i), .index = i, .max_sharers = 1000});
    }
    r.total_gpus += tn.gpus;
    st.UpsertNode(n);
  }
  if (r.total_gpus == 0) return core::Status(core::StatusCode::kInvalidArgument, "the node list has no GPUs");
  const double capacity = static_cast<double>(r.total_gpus) * 1000;

  const std::vector<TracePod> workload = TuneWorkload(pods, r.total_gpus * 1000, o);
  int64_t arrived = 0, used = 0;
  std::map<int, std::pair<double, int>> sums;  // arrived % -> (sum of allocation %, samples)
  auto now = sched::WallTime(std::chrono::seconds(1'700'000'000));
  for (size_t i = 0; i < workload.size(); ++i) {
    const TracePod& p = workload[i];
    const std::string name = p.name + "-" + std::to_string(i);
    sched::JobInfo j;
    j.key = "sim/" + name;
    j.ns = "sim";
    j.name = name;
    j.uid = "pg-" + std::to_string(i);
    j.queue = "default";
    j.min_member = 1;
    j.creation_time = now;
    st.UpsertJob(j);
    sched::TaskInfo t;
    t.uid = "pod-" + std::to_string(i);
    t.ns = "sim";
    t.name = name;
    t.job = j.key;
    t.request = sched::Resource::CpuMem(p.cpu_milli, p.memory_mib * kMi);
    if (p.num_gpu > 0) {
      t.devices.kind = sched::DeviceKind::kNvidiaGpu;
      if (p.gpu_milli >= 1000) {
        t.devices.whole = p.num_gpu;
        t.request.Set(gpu, p.num_gpu);
      } else {
        t.devices.shared = p.num_gpu;
        t.devices.cores = static_cast<int32_t>(p.gpu_milli);
      }
    }
    if (!p.gpu_spec.empty()) {
      sched::NodeSelectorTerm term;
      sched::SelectorRequirement req;
      req.key = std::string(kModelLabel);
      req.op = sched::SelectorOp::kIn;
      size_t start = 0;
      while (start <= p.gpu_spec.size()) {
        size_t bar = p.gpu_spec.find('|', start);
        std::string model = p.gpu_spec.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
        if (!model.empty()) req.values.push_back(std::move(model));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
      term.match_expressions.push_back(std::move(req));
      t.required_affinity.push_back(std::move(term));
    }
    t.creation_index = i;
    st.UpsertPod(t);
    arrived += p.TotalGpuMilli();
    ++r.pods_arrived;

    auto t0 = std::chrono::steady_clock::now();
    sched::CycleResult cycle = s->RunCycle(now);
    r.cycle_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    now += std::chrono::seconds(1);
    bool placed = false;
    for (const auto& b : cycle.binds) {
      st.BindSucceeded(b.task_uid);
      placed |= b.task_uid == t.uid;
    }
    if (placed) {
      ++r.pods_placed;
      used += p.TotalGpuMilli();
    } else {
      // Pods never wait in this method: one that does not fit on arrival is counted and dropped.
      ++r.pods_failed;
      st.RemovePod(t.uid);
      st.RemoveJob(j.key);
    }
    const int at = static_cast<int>(std::lround(static_cast<double>(arrived) / capacity * 100));
    auto& [sum, n] = sums[at];
    sum += static_cast<double>(used) / capacity * 100;
    ++n;
  }
  for (const auto& [at, v] : sums) r.gpu_alloc_ratio_at[at] = v.first / v.second;
  r.final_gpu_alloc_ratio = static_cast<double>(used) / capacity * 100;
  return r;
}

}  // namespace tephra::simulate
