// tephra: one binary, several roles (controller, scheduler, webhook, nodesim, ctl, version).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "common.h"
#include "tephra/ctl/ctl.h"

namespace tephra::cmd {

void AddCommonFlags(CLI::App* app, CommonFlags* f) {
  app->add_option("--kubeconfig", f->kubeconfig, "Path to a kubeconfig (default: $KUBECONFIG, then in-cluster)");
  app->add_option("--master", f->master, "API server address; overrides the kubeconfig's server");
  app->add_option("--kube-api-qps", f->kube_api_qps, "Client-side QPS limit towards the API server")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--kube-api-burst", f->kube_api_burst, "Client-side burst towards the API server")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--log-level", f->log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app->add_option("--metrics-addr", f->metrics_addr, "host:port for /metrics (empty: role default; 0: off)");
  app->add_option("--health-addr", f->health_addr, "host:port for /healthz and /readyz (empty: role default; 0: off)");
  app->add_option("--graceful-shutdown-seconds", f->graceful_shutdown_seconds,
                  "After SIGTERM/SIGINT, exit at the latest after this long even if the API server does not "
                  "answer (a second signal exits at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

int NotImplemented(const char* role, const char* issue) {
  std::fprintf(stderr, "tephra %s: not implemented in this build yet (tracked in %s)\n", role, issue);
  return 3;
}

}  // namespace tephra::cmd

int main(int argc, char** argv) {
  // A `vcctl -> tephra` symlink keeps vcctl scripts working unchanged.
  if (argc > 0 && tephra::ctl::InvokedAsVcctl(argv[0])) return tephra::cmd::VcctlMain(argc, argv);
  CLI::App app{"Tephra: a Volcano-compatible batch system for AI workloads on Kubernetes"};
  app.require_subcommand(1);
  int exit_code = 0;
  tephra::cmd::RegisterController(app, &exit_code);
  tephra::cmd::RegisterScheduler(app, &exit_code);
  tephra::cmd::RegisterWebhook(app, &exit_code);
  tephra::cmd::RegisterNodesim(app, &exit_code);
  tephra::cmd::RegisterCtl(app, &exit_code);
  tephra::cmd::RegisterVersion(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
