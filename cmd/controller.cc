// `tephra controller`: the Volcano-compatible controller-manager (reconcilers/manager/, docs/controllers.md).
#include "common.h"
#include "manager/manager.h"

namespace tephra::cmd {

void RegisterController(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("controller", "Volcano-compatible controller-manager (vcjob, queue, podgroup, "
                                                "command, jobflow controllers)");
  auto* flags = new CommonFlags();                         // lives for the process
  auto* o = new reconcilers::manager::ManagerOptions();    // lives for the process
  auto* names = new std::vector<std::string>();
  auto* controllers = new std::vector<std::string>();
  auto* listen = new std::string();
  auto* healthz = new std::string();
  AddCommonFlags(app, flags);
  app->add_option("--scheduler-name", *names,
                  "Pods with one of these spec.schedulerName get a PodGroup; the first is the schedulerName a "
                  "job without one gets (repeatable; default volcano)");
  app->add_option("--max-requeue-num", o->max_requeue_num,
                  "Requeues of a failing job before it is terminated (-1: never give up; 0: at the first failure)")
      ->check(CLI::Range(-1, 1 << 30));
  app->add_option("--worker-threads", o->worker_threads, "Concurrent job reconciles")->check(CLI::PositiveNumber);
  app->add_option("--worker-threads-for-podgroup", o->worker_threads_for_podgroup,
                  "Concurrent PodGroup (plain pod) reconciles")
      ->check(CLI::PositiveNumber);
  app->add_option("--worker-threads-for-queue", o->worker_threads_for_queue, "Concurrent queue reconciles")
      ->check(CLI::PositiveNumber);
  app->add_option("--worker-threads-for-jobflow", o->worker_threads_for_jobflow,
                  "Concurrent JobFlow/JobTemplate reconciles")
      ->check(CLI::PositiveNumber);
  app->add_option("--worker-threads-for-cronjob", o->worker_threads_for_cronjob, "Concurrent CronJob reconciles")
      ->check(CLI::PositiveNumber);
  app->add_option("--controllers", *controllers,
                  "Controllers to run: \"*\" for all, \"name\" to enable, \"-name\" to disable (comma-separated or "
                  "repeated; default *)")
      ->delimiter(',');
  app->add_option("--leader-elect", o->leader_elect, "Take the vc-controller-manager Lease before acting")
      ->default_str("true");
  app->add_option("--lock-object-namespace,--leader-elect-resource-namespace", o->lock_object_namespace,
                  "Namespace of the leader-election Lease (both of Volcano's names)")
      ->default_str("volcano-system");
  AddNoOpFlags(app, {"--worker-threads-for-gc", "--sharding-configmap",
                     "--sharding-configmap-namespace", "--tls-cert-file", "--tls-private-key-file", "--ca-cert-file"});
  app->add_option("--inherit-owner-annotations", o->inherit_owner_annotations,
                  "PodGroups of plain pods inherit the owner's volcano.sh/ annotations")
      ->default_str("true");
  auto* fault_grace = new int(static_cast<int>(o->fault.not_ready_grace.count()));
  auto* fault_avoid = new int(static_cast<int>(o->fault.avoid_after_clear.count()));
  auto* fault_window = new int(static_cast<int>(o->fault.budget_window.count()));
  app->add_option("--fault-node-conditions", o->fault.conditions,
                  "Node condition types that are faults when True (comma-separated; docs/faults.md has the default "
                  "set: NVSentinel's Gpu*/SysLogs*/NVSwitch*, node-problem-detector's, NetworkUnavailable)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--fault-taints", o->fault.taints, "Taint keys that are faults, any effect (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--fault-not-ready-grace", *fault_grace,
                  "Seconds a node stays Ready=False/Unknown before its batch pods are replaced (the node "
                  "controller's unreachable/not-ready taints act at once)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app->add_option("--fault-cordon", o->fault.cordon, "Cordon a faulted node (uncordoned when the fault clears)")
      ->default_str("false");
  app->add_option("--fault-device-faults", o->fault.device_faults, "Replace pods that hold cards a device plugin "
                  "reports unhealthy")
      ->default_str("true");
  app->add_option("--fault-max-node-fraction", o->fault.max_node_fraction,
                  "At most this fraction of the nodes (at least one) has faults acted on within --fault-budget-window; "
                  "more is taken for a bad rule or a partition, and left alone with a Warning")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--fault-budget-window", *fault_window,
                  "Seconds over which --fault-max-node-fraction counts the nodes acted on (nodes dead for longer "
                  "no longer use the budget)")
      ->check(CLI::Range(1, 86400 * 7))
      ->capture_default_str();
  app->add_option("--fault-avoid-seconds", *fault_avoid,
                  "After a node's fault clears, Tephra's scheduler avoids it this long (0: not at all)")
      ->check(CLI::Range(0, 86400 * 7))
      ->capture_default_str();
  app->add_option("--listen-address", *listen, "host:port for /metrics (Volcano's name; default :8081)");
  app->add_option("--healthz-address", *healthz, "host:port for /healthz (Volcano's name; default :11251)");
  app->callback([=] {
    ApplyCommonFlags(*flags, o);
    if (!names->empty()) o->scheduler_names = *names;
    o->fault.not_ready_grace = std::chrono::seconds(*fault_grace);
    o->fault.avoid_after_clear = std::chrono::seconds(*fault_avoid);
    o->fault.budget_window = std::chrono::seconds(*fault_window);
    if (!controllers->empty()) o->controllers = *controllers;
    if (!listen->empty()) o->metrics_address = *listen;
    if (!flags->metrics_addr.empty()) o->metrics_address = flags->metrics_addr;
    if (!healthz->empty()) o->health_address = *healthz;
    if (!flags->health_addr.empty()) o->health_address = flags->health_addr;
    // hyperNode-controller's ConfigMap: Volcano locates it from the environment, not a flag.
    reconcilers::manager::NetworkTopologyConfigFromEnv(o);
    *exit_code = reconcilers::manager::RunControllerManager(*o);
  });
}

}  // namespace tephra::cmd
