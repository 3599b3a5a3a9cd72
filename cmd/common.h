// Flags shared by every role of the one `tephra` binary. Names match Volcano's where the option exists.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tephra/kube/metrics_auth.h"

namespace tephra::cmd {

struct CommonFlags {
  std::string kubeconfig;         // --kubeconfig, then $KUBECONFIG, then in-cluster
  std::string master;             // --master: API server URL overriding the kubeconfig's
  double kube_api_qps = 50;       // --kube-api-qps (the scheduler sets 2000 before adding the flags)
  int kube_api_burst = 100;       // --kube-api-burst (scheduler: 2000)
  std::string log_level = "info"; // --log-level: trace|debug|info|warn|error
  std::string log_format = "logfmt";  // --log-format: logfmt|json
  std::string metrics_addr;       // --metrics-addr host:port ("" = role default, "0" = off)
  std::string health_addr;        // --health-addr host:port
  kube::MetricsServing metrics_serving;  // --metrics-tls-cert-file, --metrics-tls-private-key-file, --metrics-client-ca-file, --metrics-auth
  double graceful_shutdown_seconds = 5;  // --graceful-shutdown-seconds: first stop signal -> forced exit
};

// Adds the common flags to a role's subcommand, and the flags Volcano's charts pass to every component
// (klog's --logtostderr and -v, --enable-healthz, --enable-metrics, --enable-pprof, --feature-gates, and the
// stray "2>&1" argument its charts carry), so a Volcano Deployment's args start Tephra unchanged
// (docs/volcano-conformance.md). Tephra always logs to stderr and serves health and metrics; the others
// have no effect, which a line on stderr says.
void AddCommonFlags(CLI::App* app, CommonFlags* flags);

// Volcano flags of one role that Tephra accepts and ignores (e.g. the controller's --worker-threads-for-gc):
// each takes a value; using one prints that it has no effect.
void AddNoOpFlags(CLI::App* app, const std::vector<std::string>& names);

// Copies the connection and process flags into a role's options, whose fields have the same names
// (kubeconfig, master, kube_api_qps, kube_api_burst, log_level, graceful_shutdown). The listen addresses
// differ per role (Volcano's names), so each role maps those itself.
template <typename RoleOptions>
void ApplyCommonFlags(const CommonFlags& f, RoleOptions* o) {
  o->kubeconfig = f.kubeconfig;
  o->master = f.master;
  o->kube_api_qps = f.kube_api_qps;
  o->kube_api_burst = f.kube_api_burst;
  o->log_level = f.log_level;
  o->log_format = f.log_format;
  o->metrics_serving = f.metrics_serving;
  o->graceful_shutdown = std::chrono::milliseconds(static_cast<int64_t>(f.graceful_shutdown_seconds * 1000));
}

// Each role registers its subcommand; the callback runs the role and stores its exit code.
void RegisterController(CLI::App& root, int* exit_code);
void RegisterScheduler(CLI::App& root, int* exit_code);
void RegisterWebhook(CLI::App& root, int* exit_code);
void RegisterNodesim(CLI::App& root, int* exit_code);
void RegisterCtl(CLI::App& root, int* exit_code);
void RegisterSimulate(CLI::App& root, int* exit_code);
void RegisterVersion(CLI::App& root, int* exit_code);

// The binary invoked as `vcctl` (a symlink): the ctl command tree at the top level.
int VcctlMain(int argc, char** argv);

// For roles not built yet: prints why and exits non-zero (no silent stubs).
int NotImplemented(const char* role, const char* issue);

}  // namespace tephra::cmd
