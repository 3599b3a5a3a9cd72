// tephra: one binary, several roles (controller, scheduler, webhook, nodesim, ctl, simulate, version).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "common.h"
#include "tephra/ctl/ctl.h"
#include "tephra/kube/transport.h"

namespace tephra::cmd {

namespace {
void SaysNoEffect(const std::string& flag) {
  std::fprintf(stderr, "tephra: %s is accepted for Volcano compatibility and has no effect\n", flag.c_str());
}
}  // namespace

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
  app->add_option("--log-format", f->log_format, "logfmt or json (one object per line, for log pipelines)")
      ->check(CLI::IsMember({"logfmt", "json"}))
      ->capture_default_str();
  app->add_option("--metrics-addr", f->metrics_addr, "host:port for /metrics (empty: role default; 0: off)");
  app->add_option("--metrics-tls-cert-file", f->metrics_serving.tls_cert_file,
                  "Serve /metrics (and what is beside it) over HTTPS with this certificate (re-read when it changes)");
  app->add_option("--metrics-tls-private-key-file", f->metrics_serving.tls_key_file, "The key of --metrics-tls-cert-file");
  app->add_option("--metrics-client-ca-file", f->metrics_serving.client_ca_file,
                  "Require metrics clients to present a certificate signed by this CA");
  app->add_option("--metrics-auth", f->metrics_serving.auth,
                  "none, or kubernetes: a bearer token checked by TokenReview and allowed the request's verb on its "
                  "path by SubjectAccessReview (probes stay open)")
      ->check(CLI::IsMember({"none", "kubernetes"}))
      ->capture_default_str();
  app->add_option("--metrics-actions-from", f->metrics_serving.actions_from,
                  "With --metrics-auth=none, who may use what changes state or costs work beside /metrics (PUT "
                  "/debug/flags/v, the scheduler's POST /v1/test-only): loopback (a peer on this host, e.g. kubectl "
                  "port-forward) or any (only behind a NetworkPolicy)")
      ->check(CLI::IsMember({"loopback", "any"}))
      ->capture_default_str();
  app->add_option("--health-addr", f->health_addr, "host:port for /healthz and /readyz (empty: role default; 0: off)");
  app->add_option("--graceful-shutdown-seconds", f->graceful_shutdown_seconds,
                  "After SIGTERM/SIGINT, exit at the latest after this long even if the API server does not "
                  "answer (a second signal exits at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  // What Volcano's charts pass to every component. Tephra logs to stderr and serves /healthz and /metrics
  // always, so these three are satisfied as given.
  const char* group = "Volcano compatibility";
  app->add_flag_function("--logtostderr", [](int64_t) {}, "klog's flag; Tephra always logs to stderr")->group(group);
  app->add_option_function<std::string>("--enable-healthz", [](const std::string&) {},
                                        "Volcano's flag; Tephra always serves /healthz and /readyz")
      ->group(group);
  app->add_option_function<std::string>("--enable-metrics", [](const std::string&) {},
                                        "Volcano's flag; Tephra always serves /metrics")
      ->group(group);
  app->add_option_function<std::string>("--enable-pprof", [](const std::string&) { SaysNoEffect("--enable-pprof"); },
                                        "Volcano's flag; no effect")
      ->group(group);
  app->add_option_function<std::string>("--feature-gates", [](const std::string&) { SaysNoEffect("--feature-gates"); },
                                        "Volcano's flag; no effect (Tephra's features have no gates)")
      ->group(group);
  // Volcano's charts write "-v=4"; CLI11 hands a short option's "=4" over as the value.
  app->add_option_function<std::string>("-v,--v", [](const std::string&) {},
                                        "klog's verbosity (accepted; use --log-level: trace|debug|info|warn|error)")
      ->group(group)
      ->transform([](std::string v) {
        if (!v.empty() && v.front() == '=') v.erase(0, 1);
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
          throw CLI::ValidationError("-v", "want a number, got \"" + v + "\"");
        return v;
      });
  // Volcano's charts end the args with "2>&1", which reaches the process as an argument (no shell); Go's flag
  // parser leaves such words alone, and so does Tephra.
  app->add_option_function<std::vector<std::string>>(
         "args",
         [](const std::vector<std::string>& words) {
           for (const auto& w : words)
             if (w != "2>&1") std::fprintf(stderr, "tephra: ignoring the argument \"%s\"\n", w.c_str());
         },
         "")
      ->group("");
}

void AddNoOpFlags(CLI::App* app, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    app->add_option_function<std::string>(n, [n](const std::string&) { SaysNoEffect(n); },
                                          "Volcano's flag; accepted, no effect in Tephra")
        ->group("Volcano compatibility");
  }
}

int NotImplemented(const char* role, const char* issue) {
  std::fprintf(stderr, "tephra %s: not implemented in this build yet (tracked in %s)\n", role, issue);
  return 3;
}

}  // namespace tephra::cmd

int main(int argc, char** argv) {
  // Before any thread: every API connection's TLS context would otherwise load the system trust bundle.
  tephra::kube::PrepareProcessTls();
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
  tephra::cmd::RegisterSimulate(app, &exit_code);
  tephra::cmd::RegisterVersion(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
