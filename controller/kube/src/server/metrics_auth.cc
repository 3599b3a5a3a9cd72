#include "tephra/kube/metrics_auth.h"

#include <algorithm>
#include <cctype>

#include "tephra/kube/log.h"

namespace tephra::kube {

core::Status Validate(const MetricsServing& s) {
  if (s.tls_cert_file.empty() != s.tls_key_file.empty())
    return core::InvalidArgumentError("--metrics-tls-cert-file and --metrics-tls-private-key-file go together");
  if (!s.client_ca_file.empty() && s.tls_cert_file.empty())
    return core::InvalidArgumentError("--metrics-client-ca-file needs --metrics-tls-cert-file and --metrics-tls-private-key-file");
  if (s.auth != "none" && s.auth != "kubernetes")
    return core::InvalidArgumentError("--metrics-auth: want none or kubernetes, got \"" + s.auth + "\"");
  if (s.actions_from != "loopback" && s.actions_from != "any")
    return core::InvalidArgumentError("--metrics-actions-from: want loopback or any, got \"" + s.actions_from + "\"");
  return core::Status::OK();
}

std::optional<ServerResponse> CheckActionPeer(const MetricsServing& s, const ServerRequest& req) {
  if (s.actions_from == "any" || IsLoopbackPeer(req.remote_addr)) return std::nullopt;
  log::Warn("refused a request from another host").Kv("method", req.method).Kv("path", req.path)
      .Kv("peer", req.remote_addr);
  return ServerResponse{403, "text/plain; charset=utf-8",
                        req.method + " " + req.path +
                            " is served only to a peer on this host (kubectl port-forward) while --metrics-auth=none; "
                            "use --metrics-auth=kubernetes (or --metrics-actions-from=any behind a NetworkPolicy)\n"};
}

RequestAuthorizer::RequestAuthorizer(ClientPtr client, const core::Clock& clock, std::chrono::seconds ttl)
    : client_(std::move(client)), clock_(clock), ttl_(ttl) {}

std::optional<ServerResponse> RequestAuthorizer::Check(const ServerRequest& req) {
  auto deny = [](int code, std::string msg) {
    return std::optional<ServerResponse>(ServerResponse{code, "text/plain; charset=utf-8", std::move(msg) + "\n"});
  };
  std::string_view h = req.authorization;
  constexpr std::string_view kBearer = "Bearer ";
  if (h.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), h.begin(), [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
    return deny(401, "Unauthorized: send a bearer token (Authorization: Bearer <token>)");
  const std::string token(h.substr(kBearer.size()));
  // HEAD is read access, as GET (kube-apiserver maps both to "get").
  std::string verb = req.method == "HEAD" ? "get" : req.method;
  std::transform(verb.begin(), verb.end(), verb.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string key = token + '\n' + verb + '\n' + req.path;
  const auto now = clock_.WallNow();
  {
    core::MutexLock l(mu_);
    if (auto it = cache_.find(key); it != cache_.end() && it->second.until > now) {
      if (it->second.status == 0) return std::nullopt;
      return deny(it->second.status, it->second.message);
    }
  }

  Decision d;
  d.until = now + ttl_;
  api::json review = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}};
  auto tr = client_->Raw("POST", "/apis/authentication.k8s.io/v1/tokenreviews", &review);
  if (!tr.ok()) {
    log::Warn("cannot review a metrics client's token").Kv("error", tr.status());
    return deny(503, "cannot authenticate the request now: the API server did not answer the TokenReview");
  }
  const api::json status = tr->value("status", api::json::object());
  if (!status.value("authenticated", false)) {
    d.status = 401;
    d.message = "Unauthorized: the API server did not accept the token";
  } else {
    const api::json user = status.value("user", api::json::object());
    api::json spec = {{"user", user.value("username", "")},
                      {"nonResourceAttributes", {{"path", req.path}, {"verb", verb}}}};
    if (user.contains("uid")) spec["uid"] = user["uid"];
    if (user.contains("groups")) spec["groups"] = user["groups"];
    if (user.contains("extra")) spec["extra"] = user["extra"];
    api::json sar = {{"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
    auto ar = client_->Raw("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", &sar);
    if (!ar.ok()) {
      log::Warn("cannot authorize a metrics client").Kv("error", ar.status());
      return deny(503, "cannot authorize the request now: the API server did not answer the SubjectAccessReview");
    }
    if (!ar->value("status", api::json::object()).value("allowed", false)) {
      d.status = 403;
      d.message = "Forbidden: user \"" + user.value("username", std::string()) + "\" may not " + verb + " " + req.path;
    }
  }
  {
    core::MutexLock l(mu_);
    // Bounded: a flood of distinct tokens cannot grow the cache without limit.
    if (cache_.size() >= 4096) cache_.clear();
    cache_[key] = d;
  }
  if (d.status == 0) return std::nullopt;
  return deny(d.status, d.message);
}

}  // namespace tephra::kube
