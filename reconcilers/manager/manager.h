// The `tephra controller` role: Volcano's vc-controller-manager. One process runs every enabled reconciler
// (docs/controllers.md), each as a kube::Controller with its own work queue and workers, all sharing one
// informer per kind.
//
// Lifecycle (RunControllerManager, on kube::Manager: kube/manager.h, which owns the clients, servers, lease
// and shutdown order; this file adds one leader-only runnable, "controllers"):
//   1. /healthz (--health-addr, default :11251) and /metrics (--metrics-addr, default :8081) start serving.
//   2. With --leader-elect, wait for the Lease `<--lock-object-namespace>/vc-controller-manager` (Volcano's
//      lock name: a Tephra and a Volcano controller-manager on one cluster never run together). Losing the
//      lease afterwards ends the process with exit code 1, as client-go controllers do (a restarted replica
//      re-lists; nothing is kept in memory that a re-list cannot rebuild).
//   3. Informers start; once synced, the controllers start.
//   4. SIGTERM/SIGINT: controllers drain their in-flight reconciles, informers stop, the lease is released
//      (a standby takes over at its next poll), events are flushed; exit code 0.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "fault/plan.h"
#include "tephra/core/status.h"
#include "tephra/kube/metrics_auth.h"

namespace tephra::reconcilers::manager {

// Volcano's controller names (--controllers).
inline constexpr const char* kJobController = "job-controller";
inline constexpr const char* kPodGroupController = "pg-controller";
inline constexpr const char* kQueueController = "queue-controller";
inline constexpr const char* kJobFlowController = "jobflow-controller";
inline constexpr const char* kJobTemplateController = "jobtemplate-controller";
inline constexpr const char* kCronJobController = "cronjob-controller";
// HyperNode discovery (label source). Volcano's spelling, capital N included; "*" enables it, as in Volcano.
inline constexpr const char* kHyperNodeController = "hyperNode-controller";
// Tephra's own: faults seen through the API (docs/faults.md). On with "*", like the others.
inline constexpr const char* kFaultController = "fault-controller";

// Every controller this build knows, in start order.
const std::vector<std::string>& KnownControllers();

struct ManagerOptions {
  // Connection (common flags).
  std::string kubeconfig;
  std::string master;
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  std::string log_level = "info";

  // Volcano's controller-manager flags.
  // --scheduler-name (repeatable): pods with these names get a PodGroup; the first is the schedulerName a
  // job stored without one gets (docs/job-controller.md, "Admission defaults applied by the controller").
  std::vector<std::string> scheduler_names = {"volcano"};
  int max_requeue_num = 15;  // --max-requeue-num: -1 retries for ever, 0 gives up at the first failure
  int worker_threads = 3;                                  // --worker-threads (job controller)
  int worker_threads_for_podgroup = 5;                     // --worker-threads-for-podgroup
  int worker_threads_for_queue = 5;                        // --worker-threads-for-queue
  int worker_threads_for_jobflow = 3;                      // --worker-threads-for-jobflow (Tephra's)
  int worker_threads_for_cronjob = 3;                      // --worker-threads-for-cronjob
  std::vector<std::string> controllers = {"*", "-sharding-controller"};  // --controllers (Volcano's default)
  bool leader_elect = true;                                // --leader-elect
  std::string lock_object_namespace = "volcano-system";    // --lock-object-namespace
  bool inherit_owner_annotations = true;                   // --inherit-owner-annotations
  // hyperNode-controller: the discovery ConfigMap. Volcano has no flag for it: the namespace is the env
  // KUBE_POD_NAMESPACE (default volcano-system), the name "<HELM_RELEASE_NAME>-controller-configmap" (release
  // default volcano); RunControllerManager fills these from the environment (NetworkTopologyConfigFromEnv).
  std::string network_topology_config_namespace = "volcano-system";
  std::string network_topology_config_name = "volcano-controller-configmap";

  // fault-controller (docs/faults.md): the --fault-* flags.
  fault::FaultConfig fault;

  std::chrono::milliseconds graceful_shutdown{5000};  // --graceful-shutdown-seconds (kube/signals.h)
  std::string metrics_address = ":8081";  // "" or "0" = off
  std::string health_address = ":11251";  // "" or "0" = off
  kube::MetricsServing metrics_serving;   // TLS and auth of metrics_address (--metrics-*)
  std::string log_format = "logfmt";      // --log-format: logfmt or json
};

// Resolves --controllers with Volcano's rule: for each controller the first entry naming it decides ("name"
// or "+name" enables it, "-name" disables it); otherwise a "*" anywhere enables it; an empty list enables
// everything. Entries may also be comma-separated within one flag. A name given twice ("x" and "-x") is
// kInvalidArgument, as in Volcano. Names of Volcano controllers Tephra does not have (sharding-controller,
// gc-controller, ...) are accepted; other names are accepted with a warning in *warnings (Volcano
// ignores them silently, so a typo would otherwise go unnoticed).
core::StatusOr<std::set<std::string>> ResolveControllers(const std::vector<std::string>& spec,
                                                         std::vector<std::string>* warnings = nullptr);

// Volcano's location of the discovery ConfigMap from KUBE_POD_NAMESPACE and HELM_RELEASE_NAME (unset or empty =
// volcano-system / volcano); `getenv` is injectable for tests.
void NetworkTopologyConfigFromEnv(ManagerOptions* o, const char* (*getenv)(const char*) = nullptr);

// Checks the options; kInvalidArgument names the flag.
core::Status ValidateOptions(const ManagerOptions& o);

// Runs the role until SIGTERM/SIGINT (exit 0) or a fatal error (lost lease: 1; bad flags or
// configuration: 2). Installs its own signal handlers.
int RunControllerManager(const ManagerOptions& o);

}  // namespace tephra::reconcilers::manager
