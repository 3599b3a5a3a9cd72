// `tephra webhook`: Volcano's admission webhooks (webhooks/, docs/webhook.md). Flag names are Volcano's
// webhook-manager's where the option exists.
#include <cstdio>

#include "common.h"
#include "tephra/api/duration.h"
#include "tephra/webhooks/server.h"

namespace tephra::cmd {

void RegisterWebhook(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("webhook", "Volcano-compatible admission webhooks (validation and defaults) over "
                                             "HTTPS");
  auto* flags = new CommonFlags();               // lives for the process
  auto* o = new webhooks::WebhookOptions();      // lives for the process
  auto* names = new std::vector<std::string>();
  auto* validity = new std::string("8760h");
  auto* resync = new std::string("60s");
  auto* manage = new std::string("true");
  auto* print = new bool(false);
  auto* print_match = new bool(false);
  AddCommonFlags(app, flags);
  app->add_option("--port", o->port, "HTTPS port the API server calls")->capture_default_str();
  app->add_option("--listen-address", o->listen_address, "Address to serve admission on (default: all interfaces)");
  app->add_option("--tls-cert-file", o->tls_cert_file,
                  "Serving certificate (PEM); re-read when it changes. Without it (and the key), a self-signed pair "
                  "is made and kept in --cert-secret-name");
  app->add_option("--tls-private-key-file", o->tls_private_key_file, "Serving private key (PEM)");
  app->add_option("--ca-cert-file", o->ca_cert_file,
                  "CA bundle (PEM) written into the webhook configurations' caBundle; re-read when it changes");
  // Volcano's /pods/mutate resourceGroups configuration file is not implemented (docs/webhook.md).
  AddNoOpFlags(app, {"--admission-conf"});
  app->add_option("--enabled-admission", o->enabled_admission,
                  "Comma-separated admission paths to serve, e.g. /jobs/mutate,/jobs/validate (default: "
                  "/jobs/mutate,/jobs/validate,/queues/mutate,/queues/validate,/podgroups/mutate,/pods/mutate,"
                  "/pods/validate)");
  app->add_option("--scheduler-name", *names,
                  "Scheduler names whose pods are admitted; the first is the default of jobs (repeatable; default "
                  "volcano)");
  app->add_option("--max-queue-depth", o->config.queue.max_queue_depth, "Deepest allowed queue hierarchy")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app->add_option("--enable-root-queue-protection", o->config.queue.enable_root_queue_protection,
                  "Refuse changes to the root queue's capability, deserved and guarantee")
      ->default_str("true");
  app->add_option("--enable-queue-allocated-pods-check", o->config.queue.enable_allocated_pods_check,
                  "Refuse deleting a queue, or making a queue a parent, while pods are allocated to it")
      ->default_str("false");
  app->add_option("--webhook-url", o->webhook_url,
                  "URL prefix the API server reaches the webhook at (e.g. https://127.0.0.1:8443); default: the "
                  "Service --webhook-service-name in --webhook-namespace");
  app->add_option("--webhook-namespace", o->webhook_namespace,
                  "Namespace of the webhook's Service and certificate Secret (excluded from admission)")
      ->capture_default_str();
  app->add_option("--webhook-service-name", o->webhook_service_name,
                  "Service in front of the webhook; also the prefix of the webhook configurations' names")
      ->capture_default_str();
  app->add_option("--manage-webhook-configurations", *manage,
                  "true: create the Mutating/ValidatingWebhookConfigurations and keep them current; ca-bundle: "
                  "only write caBundle into the ones the Helm chart created; false: touch nothing (cert-manager "
                  "injects caBundle)")
      ->capture_default_str();
  app->add_flag("--print-configurations", *print,
                "Print the webhook configurations this role would register for these flags (JSON List, no "
                "caBundle) and exit");
  app->add_flag("--print-match-conditions", *print_match,
                "With --print-configurations: as for an API server that has matchConditions (1.28+)");
  app->add_option("--failure-policy", o->failure_policy,
                  "failurePolicy of the validating webhooks of Volcano's kinds: Fail or Ignore (mutating and pod "
                  "webhooks always Ignore; docs/webhook.md)")
      ->check(CLI::IsMember({"Fail", "Ignore"}))
      ->capture_default_str();
  app->add_option("--cert-dir", o->cert_dir, "Where a self-signed pair is written for the server (default: a new "
                                             "temporary directory)");
  app->add_option("--cert-secret-name", o->cert_secret_name,
                  "Secret in --webhook-namespace that holds the self-signed CA and serving pair, shared by replicas")
      ->capture_default_str();
  app->add_option("--cert-host", o->cert_hosts,
                  "Extra DNS name or IP for the self-signed serving certificate (repeatable)");
  app->add_option("--cert-validity", *validity,
                  "Lifetime of a self-signed serving certificate; it is renewed when a third is left")
      ->capture_default_str();
  app->add_option("--resync-period", *resync,
                  "How often the certificate and the webhook configurations are checked and corrected")
      ->capture_default_str();
  app->callback([=] {
    ApplyCommonFlags(*flags, o);
    if (!flags->metrics_addr.empty()) o->metrics_address = flags->metrics_addr;
    if (!flags->health_addr.empty()) o->health_address = flags->health_addr;
    if (!names->empty()) o->config.scheduler_names = *names;
    auto v = api::ParseGoDuration(*validity);
    auto r = api::ParseGoDuration(*resync);
    if (!v.ok() || v->count() <= 0 || !r.ok() || r->count() <= 0) {
      std::fprintf(stderr, "tephra webhook: --cert-validity and --resync-period want a positive duration such as "
                           "8760h or 60s\n");
      *exit_code = 2;
      return;
    }
    o->cert_validity = std::chrono::duration_cast<std::chrono::seconds>(*v);
    o->resync_period = std::chrono::duration_cast<std::chrono::seconds>(*r);
    auto mode = webhooks::ParseConfigurationsMode(*manage);
    if (!mode.ok()) {
      std::fprintf(stderr, "tephra webhook: %s\n", mode.status().message().c_str());
      *exit_code = 2;
      return;
    }
    o->manage_configurations = *mode;
    if (*print) {
      auto configs = webhooks::RegisteredConfigurations(*o, *print_match, "");
      if (!configs.ok()) {
        std::fprintf(stderr, "tephra webhook: %s\n", configs.status().message().c_str());
        *exit_code = 2;
        return;
      }
      api::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", *configs}};
      std::printf("%s\n", list.dump(2).c_str());
      *exit_code = 0;
      return;
    }
    *exit_code = webhooks::RunWebhook(*o);
  });
}

}  // namespace tephra::cmd
