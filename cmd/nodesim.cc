// `tephra nodesim`: registers simulated nodes and drives the pods bound to them (docs/nodesim.md).

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common.h"
#include "tephra/kube/log.h"
#include "tephra/kube/manager.h"
#include "tephra/nodesim/config.h"
#include "tephra/nodesim/simulator.h"

namespace tephra::cmd {
namespace {

struct NodesimFlags {
  CommonFlags common;
  nodesim::FlagValues nodes;
  std::string config;
  int workers = 8;
  int heartbeat_workers = 2;
  double heartbeat_qps = 0;  // 0: sized from the node count
  double lease_renew_seconds = 10;
  int lease_duration_seconds = 40;
  double node_status_seconds = 300;
  int max_grace_seconds = 1;
  double stats_seconds = 30;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "tephra nodesim: %s\n", what.c_str());
  return 2;
}

int Run(const NodesimFlags& f) {
  nodesim::SimConfig cfg;
  if (!f.config.empty()) {
    std::ifstream in(f.config);
    if (!in) return Fail("--config: cannot read \"" + f.config + "\"");
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = nodesim::ParseConfigYaml(ss.str(), f.config);
    if (!parsed.ok()) return Fail(parsed.status().message());
    cfg = std::move(*parsed);
  } else {
    auto g = nodesim::GroupFromFlags(f.nodes);
    if (!g.ok()) return Fail(g.status().message());
    cfg.groups.push_back(std::move(*g));
  }
  auto nodes = nodesim::ExpandNodes(cfg);
  if (!nodes.ok()) return Fail(nodes.status().message());
  if (nodes->empty()) return Fail("no nodes to simulate (set --nodes or --config)");

  kube::ManagerOptions mo;
  mo.component = "nodesim";
  mo.kubeconfig = f.common.kubeconfig;
  mo.master = f.common.master;
  mo.kube_api_qps = f.common.kube_api_qps;
  mo.kube_api_burst = f.common.kube_api_burst;
  mo.log_level = f.common.log_level;
  mo.log_format = f.common.log_format == "json" ? kube::log::Format::kJson : kube::log::Format::kLogfmt;
  mo.graceful_shutdown = std::chrono::milliseconds(static_cast<int64_t>(f.common.graceful_shutdown_seconds * 1000));
  mo.metrics_address = f.common.metrics_addr;  // off unless asked for
  mo.health_address = f.common.health_addr;
  mo.metrics_serving = f.common.metrics_serving;
  auto created = kube::Manager::Create(std::move(mo));
  if (!created.ok()) return Fail(created.status().ToString());
  kube::Manager& mgr = **created;

  // Leases get their own client and limiter: one renewal per node per interval, with 50% headroom, so pod
  // traffic never delays liveness (each real kubelet has its own connection too).
  kube::ClientLimits hl;
  hl.qps = f.heartbeat_qps > 0 ? f.heartbeat_qps
                               : std::max(5.0, 1.5 * static_cast<double>(nodes->size()) / f.lease_renew_seconds);
  hl.burst = static_cast<int>(std::max(10.0, hl.qps));
  auto heartbeat = mgr.ClientFor("heartbeat", hl);
  if (!heartbeat.ok()) return Fail(heartbeat.status().ToString());

  nodesim::SimulatorOptions o;
  o.workers = f.workers;
  o.heartbeat_workers = f.heartbeat_workers;
  o.lease_renew_interval = std::chrono::milliseconds(static_cast<int64_t>(f.lease_renew_seconds * 1000));
  o.lease_duration_seconds = f.lease_duration_seconds;
  o.node_status_interval = std::chrono::milliseconds(static_cast<int64_t>(f.node_status_seconds * 1000));
  o.max_grace_seconds = f.max_grace_seconds;
  nodesim::Simulator sim(mgr.client(), *heartbeat, std::move(*nodes), o);

  auto& reg = mgr.registry();
  auto* writes = &reg.AddCounter("tephra_nodesim_writes_total", "API writes by the node simulator, by kind", {"kind"});
  auto* write_errors = reg.AddCounter("tephra_nodesim_write_errors_total", "Failed API writes by the node simulator").With({});
  auto* registered = reg.AddGauge("tephra_nodesim_registered_nodes", "Simulated nodes registered").With({});
  auto* tracked = reg.AddGauge("tephra_nodesim_tracked_pods", "Pods bound to simulated nodes and tracked, finished ones included").With({});
  auto* confirmed = reg.AddCounter("tephra_nodesim_finished_terminating_deletes_total",
                                   "Finished pods that were given a deletionTimestamp and then deleted by the simulated kubelet (grace 0)")
                        .With({});
  mgr.AddCollector([&] {
    const auto& st = sim.stats();
    writes->With({"pod_status"})->SetTotal(static_cast<double>(st.pod_status_writes.load()));
    writes->With({"pod_delete"})->SetTotal(static_cast<double>(st.pod_deletes.load()));
    writes->With({"lease_renewal"})->SetTotal(static_cast<double>(st.lease_renewals.load()));
    writes->With({"node_create"})->SetTotal(static_cast<double>(st.nodes_created.load()));
    write_errors->SetTotal(static_cast<double>(st.write_errors.load()));
    registered->Set(static_cast<double>(sim.RegisteredNodes()));
    tracked->Set(static_cast<double>(sim.TrackedPods()));
    confirmed->SetTotal(static_cast<double>(st.deletes_confirmed_after_finish.load()));
  });

  mgr.Add(kube::MakeRunnable("simulator", /*needs_leader_election=*/false, [&](std::stop_token stop) {
    TEPHRA_RETURN_IF_ERROR(sim.Start());
    kube::log::Info("nodesim running").Kv("heartbeat_qps", hl.qps).Kv("qps", f.common.kube_api_qps);
    const auto period = std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, f.stats_seconds) * 1000));
    while (!kube::SleepUnlessStopped(stop, f.stats_seconds > 0 ? period : std::chrono::hours(1))) {
      const auto& st = sim.stats();
      kube::log::Info("nodesim stats")
          .Kv("registered", sim.RegisteredNodes())
          .Kv("created", st.nodes_created.load())
          .Kv("tracked_pods", static_cast<int64_t>(sim.TrackedPods()))
          .Kv("pod_status_writes", st.pod_status_writes.load())
          .Kv("pods_finished", st.pods_finished.load())
          .Kv("pod_deletes", st.pod_deletes.load())
          .Kv("lease_renewals", st.lease_renewals.load())
          .Kv("write_errors", st.write_errors.load());
    }
    sim.Stop();
    return core::Status::OK();
  }));
  return mgr.Run();
}

}  // namespace

void RegisterNodesim(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("nodesim", "Simulate nodes (KWOK-like): register them, keep them alive, run their pods");
  auto* f = new NodesimFlags();  // lives for the process
  AddCommonFlags(app, &f->common);
  auto* nodes = app->add_option("--nodes", f->nodes.nodes, "Number of nodes to register")->check(CLI::NonNegativeNumber);
  app->add_option("--name-prefix", f->nodes.name_prefix, "Node name prefix (nodes are <prefix><i>)")->capture_default_str();
  app->add_option("--cpu", f->nodes.cpu, "CPU capacity per node (a quantity)")->capture_default_str();
  app->add_option("--memory", f->nodes.memory, "Memory capacity per node")->capture_default_str();
  app->add_option("--pods", f->nodes.pods, "Pod capacity per node")->capture_default_str();
  app->add_option("--ephemeral-storage", f->nodes.ephemeral_storage, "Ephemeral storage per node")->capture_default_str();
  app->add_option("--gpus", f->nodes.gpus, "nvidia.com/gpu per node (0: not advertised)")->capture_default_str();
  app->add_option("--npus", f->nodes.npus, "huawei.com/Ascend910 per node (0: not advertised)")->capture_default_str();
  app->add_option("--vgpu-split", f->nodes.vgpu_split,
                  "Share each GPU between up to this many pods through Volcano's vGPU protocol (0: whole GPUs only)")
      ->capture_default_str();
  app->add_option("--vgpu-memory-mib", f->nodes.vgpu_memory_mib, "Memory of each shared GPU, MiB")->capture_default_str();
  app->add_option("--gpu-product", f->nodes.gpu_product,
                  "GPU product for GPU Feature Discovery's nvidia.com/gpu.product label (e.g. A100-SXM4-80GB)");
  app->add_option("--mig-strategy", f->nodes.mig_strategy,
                  "MIG strategy of the NVIDIA device plugin: none, single (slices as nvidia.com/gpu) or mixed "
                  "(nvidia.com/mig-<profile>)");
  app->add_option("--mig-profiles", f->nodes.mig_profiles, "MIG slices per GPU: 1g.10gb=7 or 3g.40gb=1,2g.20gb=2");
  app->add_option("--labels", f->nodes.labels, "Extra node labels: k=v,k2=v2");
  app->add_option("--taints", f->nodes.taints, "Node taints: key=value:Effect,key:Effect");
  app->add_option("--nodes-per-leaf", f->nodes.nodes_per_leaf, "Nodes per leaf switch (tephra.io/leaf label; 0: none)");
  app->add_option("--leaves-per-spine", f->nodes.leaves_per_spine, "Leaves per spine switch (tephra.io/spine label)");
  app->add_option("--config", f->config, "YAML file with node groups (instead of --nodes and the capacity flags)")
      ->excludes(nodes);
  app->add_option("--workers", f->workers, "Workers writing pod and node status")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--heartbeat-workers", f->heartbeat_workers, "Workers renewing leases")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--heartbeat-qps", f->heartbeat_qps, "QPS of the lease client (0: 1.5 x nodes / renew interval)");
  app->add_option("--lease-renew-seconds", f->lease_renew_seconds, "Lease renewal interval")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--lease-duration-seconds", f->lease_duration_seconds, "Lease spec.leaseDurationSeconds")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--node-status-seconds", f->node_status_seconds, "Node status heartbeat interval")->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--max-grace-seconds", f->max_grace_seconds, "Longest wait before deleting a terminating pod")->check(CLI::NonNegativeNumber)->capture_default_str();
  app->add_option("--stats-seconds", f->stats_seconds, "Interval of the stats log line (0: off)")->capture_default_str();
  app->callback([f, exit_code] { *exit_code = Run(*f); });
}

}  // namespace tephra::cmd
