// The Mutating/ValidatingWebhookConfigurations that send the API server's admission requests to `tephra
// webhook`: built as pure JSON from the enabled endpoints (tests compare them), then kept current by the role.
//
// Deliberate choices (docs/webhook.md, "Never a single point of failure"):
//   * mutating webhooks fail open (Ignore): the job controller applies the same job defaults, so a job stored
//     while the webhook is down ends up the same;
//   * pod webhooks fail open and match only pods whose schedulerName is ours (matchConditions on API servers
//     that have them, 1.28+; the handler's early exit elsewhere): a dead webhook never blocks other pods;
//   * validating webhooks of Volcano's own kinds use --failure-policy (default Fail: an invalid job refused
//     later is worse than a retry now; Ignore is for clusters that prefer availability);
//   * the release namespace and kube-system are excluded, so the webhook's own Deployment can always start;
//   * timeoutSeconds 5: admission answers in milliseconds, a hung webhook costs at most 5 s a request.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/webhooks/admission.h"

namespace tephra::webhooks {

struct ConfigurationOptions {
  // Where the API server reaches the webhook: a URL prefix ("https://127.0.0.1:8443"), or a Service.
  std::string webhook_url;
  std::string service_name = "volcano-admission-service";
  std::string service_namespace = "volcano-system";
  int service_port = 443;
  std::string ca_bundle_pem;                 // becomes clientConfig.caBundle (base64 of the PEM)
  std::string failure_policy = "Fail";       // validating webhooks of Volcano kinds
  int timeout_seconds = 5;
  std::vector<std::string> scheduler_names;  // for the pods' matchConditions
  bool match_conditions = false;             // the API server serves matchConditions (1.28+)
  std::vector<std::string> excluded_namespaces = {"kube-system"};  // plus service_namespace
};

// The name of the configuration object for `ep`, Volcano's: "<service>-jobs-mutate".
std::string ConfigurationName(const ConfigurationOptions& o, const Endpoint& ep);

// One configuration object per enabled endpoint (kind MutatingWebhookConfiguration or
// ValidatingWebhookConfiguration, admissionregistration.k8s.io/v1), in Endpoints() order.
std::vector<api::json> BuildConfigurations(const ConfigurationOptions& o, const std::set<std::string>& enabled);

}  // namespace tephra::webhooks
