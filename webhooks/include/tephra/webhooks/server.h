// `tephra webhook`: Volcano's admission webhooks over HTTPS, on the runtime's Manager (docs/webhook.md).
//
//   informers (Queues, Namespaces) -> InformerLookup -> Admitter (pure rules) <- HttpServer (TLS, worker pool)
//   certificates: mounted files (re-read on change), or self-signed: a CA and serving pair kept in a Secret
//   that every replica shares, rotated before expiry
//   configurations: Mutating/ValidatingWebhookConfigurations created and kept current (caBundle included)
//
// Every replica serves (no leader election is needed to answer admission requests); writes to the Secret
// and the configurations are idempotent and guarded by resourceVersion, so replicas converge.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tephra/api/lookup.h"
#include "tephra/api/scheduling.h"
#include "tephra/core/status.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics_auth.h"
#include "tephra/webhooks/admission.h"

namespace tephra::webhooks {

struct WebhookOptions {
  // Connection and process (the common flags).
  std::string kubeconfig, master;
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  std::string log_level = "info";
  std::chrono::milliseconds graceful_shutdown{5000};
  std::string metrics_address = ":8081";  // "" or "0" = off
  kube::MetricsServing metrics_serving;   // TLS and auth of metrics_address (--metrics-*)
  std::string log_format = "logfmt";      // --log-format: logfmt or json
  std::string health_address = ":11251";

  // Serving (Volcano's flag names).
  std::string listen_address;  // --listen-address host ("" = all interfaces)
  int port = 8443;             // --port
  std::string tls_cert_file, tls_private_key_file;  // mounted pair; both empty = self-signed mode
  std::string ca_cert_file;    // --ca-cert-file: the CA bundle written into the configurations
  std::string enabled_admission;  // --enabled-admission: comma-separated paths ("" = the defaults)
  WebhookConfig config;

  // Configurations (--manage-webhook-configurations): kAll creates them and keeps every field current;
  // kCaBundle only writes caBundle into configurations someone else created (the Helm chart owns them, so
  // `helm uninstall` removes them and a stopping replica can never re-create one); kNone touches nothing
  // (cert-manager's CA injector fills caBundle).
  enum class ConfigurationsMode { kAll, kCaBundle, kNone };
  ConfigurationsMode manage_configurations = ConfigurationsMode::kAll;
  std::string webhook_url;            // --webhook-url: the API server reaches us at this URL prefix
  std::string webhook_namespace = "volcano-system";           // --webhook-namespace
  std::string webhook_service_name = "volcano-admission-service";  // --webhook-service-name
  std::string failure_policy = "Fail";                        // --failure-policy (validating, Volcano kinds)

  // Self-signed mode.
  std::string cert_dir;               // --cert-dir: where the pair is written for the server ("" = a temp dir)
  std::string cert_secret_name = "volcano-admission-secret";  // --cert-secret-name (in --webhook-namespace)
  std::vector<std::string> cert_hosts;  // --cert-host: extra DNS names / IPs for the serving certificate
  std::chrono::seconds cert_validity{std::chrono::hours(24 * 365)};  // --cert-validity
  std::chrono::seconds resync_period{std::chrono::seconds(60)};      // configurations and certificate check
};

// The role. Returns the process exit code (0 after a stop signal, 1 on failure, 2 on bad configuration).
int RunWebhook(const WebhookOptions& options);

// --manage-webhook-configurations: "true"/"all", "ca-bundle", "false"/"none".
core::StatusOr<WebhookOptions::ConfigurationsMode> ParseConfigurationsMode(const std::string& flag);

// The webhook configurations the role registers for these options (`/pods/mutate` is served, never
// registered: docs/webhook.md). `tephra webhook --print-configurations` prints them, so the Helm chart's copy
// can be checked against the role's (tests/chart/).
core::StatusOr<std::vector<api::json>> RegisteredConfigurations(const WebhookOptions& options, bool match_conditions,
                                                                const std::string& ca_bundle_pem);

// ClusterLookup over informer caches (the webhook's view of queues and namespaces).
class InformerLookup final : public api::ClusterLookup {
 public:
  InformerLookup(std::shared_ptr<kube::Informer<api::Queue>> queues,
                 std::shared_ptr<kube::Informer<api::Namespace>> namespaces)
      : queues_(std::move(queues)), namespaces_(std::move(namespaces)) {}
  std::optional<api::Queue> GetQueue(std::string_view name) const override;
  std::vector<api::Queue> ListQueues() const override;
  // Volume claims are checked by name only, as Volcano does; the claim may be created after the job.
  bool PvcExists(std::string_view, std::string_view) const override { return true; }
  std::optional<int32_t> PriorityClassValue(std::string_view) const override { return std::nullopt; }
  std::map<std::string, std::string> NamespaceAnnotations(std::string_view ns) const override;
  bool QueueHasAllocatedPods(std::string_view queue) const override;

 private:
  std::shared_ptr<kube::Informer<api::Queue>> queues_;
  std::shared_ptr<kube::Informer<api::Namespace>> namespaces_;
};

}  // namespace tephra::webhooks
