// How a role's metrics server is protected (docs/metrics.md, "Securing /metrics"): TLS with an optional client
// CA, and optionally delegated authentication and authorization, the way kube-apiserver's own components and
// kube-rbac-proxy do it: the caller's bearer token is checked with a TokenReview, and the user it names must be
// allowed the request's verb on its path by a SubjectAccessReview (a non-resource URL, so an RBAC rule such as
// `nonResourceURLs: ["/metrics"], verbs: ["get"]` grants it). Everything served beside /metrics (the
// scheduler's web view and what-if, the log-level endpoint) is behind the same check; /healthz, /livez and
// /readyz are not, so kubelet probes keep working.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/http_server.h"

namespace tephra::kube {

struct MetricsServing {
  // Both set: HTTPS (re-read when the files change). client_ca_file: clients must present a certificate it signed.
  std::string tls_cert_file, tls_key_file, client_ca_file;
  // "none": whoever reaches the address; "kubernetes": TokenReview + SubjectAccessReview (above).
  std::string auth = "none";
  // With auth "none": who may use what changes state or costs the process work beside /metrics (PUT
  // /debug/flags/v, the scheduler's POST /v1/test-only). "loopback" (the default): only a peer on this host,
  // which is what `kubectl port-forward` and a sidecar are; "any": whoever reaches the address (the old
  // behaviour; only behind a NetworkPolicy). With auth "kubernetes" the SubjectAccessReview decides instead.
  std::string actions_from = "loopback";
};
// kInvalidArgument naming the flag when the combination cannot work (a key without a certificate, an unknown
// auth mode, a client CA without TLS).
core::Status Validate(const MetricsServing& s);

// nullopt when a request that changes state or costs work may go on under `s` without an authorizer: always
// with actions_from "any", else only from a loopback peer. Otherwise the 403 to send, which says how to get in.
std::optional<ServerResponse> CheckActionPeer(const MetricsServing& s, const ServerRequest& req);

// Delegated authentication and authorization for one server. Decisions are cached for `ttl` per (token, verb,
// path), so a Prometheus scraping every few seconds costs the API server two requests per ttl, not per scrape.
class RequestAuthorizer {
 public:
  RequestAuthorizer(ClientPtr client, const core::Clock& clock, std::chrono::seconds ttl = std::chrono::seconds(10));
  // nullopt: allowed. Otherwise the answer to send: 401 without a token or with one the API server rejects,
  // 403 when the user may not, 503 when the API server could not be asked (never cached).
  std::optional<ServerResponse> Check(const ServerRequest& req) TEPHRA_EXCLUDES(mu_);

 private:
  struct Decision {
    int status = 0;  // 0 allowed, else the HTTP status
    std::string message;
    core::Clock::WallTime until;
  };
  ClientPtr client_;
  const core::Clock& clock_;
  std::chrono::seconds ttl_;
  core::Mutex mu_;
  std::map<std::string, Decision> cache_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::kube
