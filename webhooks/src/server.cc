// `tephra webhook` (server.h): the role around the pure admission rules.
#include "tephra/webhooks/server.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <utility>

#include "tephra/api/core_v1.h"
#include "tephra/kube/certs.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/log.h"
#include "tephra/kube/manager.h"
#include "tephra/webhooks/configurations.h"

namespace tephra::webhooks {

namespace log = kube::log;
using api::json;

// ------------------------------------------------------------------------------------------------ lookup

std::optional<api::Queue> InformerLookup::GetQueue(std::string_view name) const {
  auto q = queues_->Get(std::string(name));
  if (!q) return std::nullopt;
  return *q;
}

std::vector<api::Queue> InformerLookup::ListQueues() const {
  std::vector<api::Queue> out;
  for (const auto& q : queues_->List()) out.push_back(*q);
  return out;
}

std::map<std::string, std::string> InformerLookup::NamespaceAnnotations(std::string_view ns) const {
  auto n = namespaces_->Get(std::string(ns));
  if (!n) return {};
  return n->metadata.annotations;
}

bool InformerLookup::QueueHasAllocatedPods(std::string_view queue) const {
  auto q = queues_->Get(std::string(queue));
  if (!q) return false;
  auto it = q->status.allocated.find("pods");
  return it != q->status.allocated.end() && it->second.Value() > 0;
}

namespace {

// --------------------------------------------------------------------------------------- certificates

const api::ResourceInfo& SecretResource() { return api::Secret::Resource(); }

core::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !(f << content) || !f.flush()) return core::UnavailableError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return core::UnavailableError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return core::Status::OK();
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

kube::CertificateRequest ServingRequest(const WebhookOptions& o) {
  kube::CertificateRequest r;
  r.common_name = o.webhook_service_name + "." + o.webhook_namespace + ".svc";
  r.dns_names = {o.webhook_service_name, o.webhook_service_name + "." + o.webhook_namespace,
                 o.webhook_service_name + "." + o.webhook_namespace + ".svc",
                 o.webhook_service_name + "." + o.webhook_namespace + ".svc.cluster.local", "localhost"};
  r.ip_addresses = {"127.0.0.1", "::1"};
  for (const auto& h : o.cert_hosts) {
    bool ip = h.find_first_not_of("0123456789.") == std::string::npos || h.find(':') != std::string::npos;
    (ip ? r.ip_addresses : r.dns_names).push_back(h);
  }
  r.validity = o.cert_validity;
  return r;
}

// The self-signed pair, shared by every replica through one Secret (keys tls.crt, tls.key, ca.crt, ca.key:
// the kubernetes.io/tls layout plus the CA, which cert-manager also uses). Level-triggered: each call reads
// the Secret, creates it when missing, renews the serving pair when a third of its validity is left (signed by
// the same CA, so the caBundle never changes), and returns what is stored. Conflicts (another replica
// created or renewed it first) are answered by reading again.
class SelfSignedCerts {
 public:
  SelfSignedCerts(kube::ClientPtr client, const WebhookOptions& o) : client_(std::move(client)), o_(o) {}

  core::StatusOr<kube::CertificateBundle> Ensure() {
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto got = client_->Get(SecretResource(), o_.webhook_namespace, o_.cert_secret_name);
      if (!got.ok() && !core::IsNotFound(got.status())) return got.status();
      if (!got.ok()) {
        auto fresh = kube::GenerateServingCertificate(ServingRequest(o_));
        if (!fresh.ok()) return fresh.status();
        auto created = client_->Create(SecretResource(), o_.webhook_namespace, ToSecret(*fresh, nullptr));
        if (created.ok()) {
          log::Info("created the webhook's self-signed certificate").Kv("secret", o_.cert_secret_name);
          return *fresh;
        }
        if (core::IsAlreadyExists(created.status())) continue;  // another replica was first
        return created.status();
      }
      auto secret = api::FromJson<api::Secret>(*got);
      if (!secret.ok()) return secret.status();
      kube::CertificateBundle b;
      auto field = [&](const char* k) -> std::string {
        auto it = secret->data.find(k);
        if (it == secret->data.end()) return "";
        auto d = api::Base64Decode(it->second);
        return d.ok() ? *d : "";
      };
      b.cert_pem = field("tls.crt");
      b.key_pem = field("tls.key");
      b.ca_cert_pem = field("ca.crt");
      b.ca_key_pem = field("ca.key");
      auto not_after = kube::CertificateNotAfter(b.cert_pem);
      const auto now = std::chrono::system_clock::now();
      const bool usable = not_after.ok() && !b.key_pem.empty() && !b.ca_cert_pem.empty();
      if (usable && *not_after - now > o_.cert_validity / 3) return b;
      // Renew: with the stored CA when there is one, else start over with a new CA.
      auto renewed = usable || !b.ca_key_pem.empty() ? kube::RenewServingCertificate(b, ServingRequest(o_))
                                                     : kube::GenerateServingCertificate(ServingRequest(o_));
      if (!renewed.ok()) renewed = kube::GenerateServingCertificate(ServingRequest(o_));
      if (!renewed.ok()) return renewed.status();
      auto updated = client_->Update(SecretResource(), o_.webhook_namespace,
                                     ToSecret(*renewed, &*got));
      if (updated.ok()) {
        log::Info("renewed the webhook's serving certificate").Kv("secret", o_.cert_secret_name);
        return *renewed;
      }
      if (!core::IsConflict(updated.status())) return updated.status();
    }
    return core::UnavailableError("the certificate Secret kept changing under us; will retry");
  }

 private:
  // `existing` (the stored Secret, or null when creating): its metadata is kept as it is (resourceVersion,
  // and the labels and annotations of its owner, e.g. Helm's, which would otherwise treat the Secret as no
  // longer its own); only the data is ours.
  json ToSecret(const kube::CertificateBundle& b, const json* existing) const {
    json meta = {{"name", o_.cert_secret_name},
                 {"namespace", o_.webhook_namespace},
                 {"labels", {{"app.kubernetes.io/managed-by", "tephra-webhook"}}}};
    std::string type = "Opaque";
    if (existing && existing->contains("metadata") && (*existing)["metadata"].is_object()) {
      meta = (*existing)["metadata"];
      meta.erase("managedFields");
      if (existing->contains("type") && (*existing)["type"].is_string()) type = (*existing)["type"];  // immutable
    }
    return {{"apiVersion", "v1"},
            {"kind", "Secret"},
            {"metadata", meta},
            {"type", type},
            {"data",
             {{"tls.crt", api::Base64Encode(b.cert_pem)},
              {"tls.key", api::Base64Encode(b.key_pem)},
              {"ca.crt", api::Base64Encode(b.ca_cert_pem)},
              {"ca.key", api::Base64Encode(b.ca_key_pem)}}}};
  }

  kube::ClientPtr client_;
  const WebhookOptions& o_;
};

// ------------------------------------------------------------------------------------- configurations

const api::ResourceInfo& ConfigResource(bool mutating) {
  static const api::ResourceInfo kMutating{"admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
                                           "mutatingwebhookconfigurations", false};
  static const api::ResourceInfo kValidating{"admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
                                             "validatingwebhookconfigurations", false};
  return mutating ? kMutating : kValidating;
}

// True when every key of `want` has the same value in `have` (the server adds defaults we did not write).
bool Covers(const json& have, const json& want) {
  if (want.is_object()) {
    if (!have.is_object()) return false;
    for (auto it = want.begin(); it != want.end(); ++it) {
      auto h = have.find(it.key());
      if (h == have.end() || !Covers(*h, it.value())) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i)
      if (!Covers(have[i], want[i])) return false;
    return true;
  }
  return have == want;
}

// Creates or updates each configuration so it says what `want` says. Returns how many were written.
core::StatusOr<int> EnsureConfigurations(kube::Client& c, const std::vector<json>& want) {
  int written = 0;
  for (const json& w : want) {
    const bool mutating = w["kind"] == "MutatingWebhookConfiguration";
    const auto& res = ConfigResource(mutating);
    const std::string name = w["metadata"]["name"];
    for (int attempt = 0;; ++attempt) {
      auto have = c.Get(res, "", name);
      core::Status s;
      if (!have.ok() && core::IsNotFound(have.status())) {
        s = c.Create(res, "", w).status();
        if (core::IsAlreadyExists(s)) s = core::AbortedError("created concurrently");
      } else if (!have.ok()) {
        return have.status();
      } else if (Covers(*have, w)) {
        break;
      } else {
        json upd = *have;
        upd["webhooks"] = w["webhooks"];
        upd["metadata"]["labels"] = w["metadata"]["labels"];
        s = c.Update(res, "", upd).status();
      }
      if (s.ok()) {
        ++written;
        log::Info("webhook configuration written").Kv("kind", std::string(res.kind)).Kv("name", name);
        break;
      }
      if (!core::IsConflict(s) || attempt >= 4) return s;
    }
  }
  return written;
}

// --manage-webhook-configurations=ca-bundle: writes `ca_bundle_pem` into every webhook of the configurations
// named in `want` that exist, and nothing else. A missing one is reported, never created: its owner (the
// chart) decides whether it exists. Returns how many were written.
core::StatusOr<int> PatchCaBundles(kube::Client& c, const std::vector<json>& want, const std::string& ca_bundle_pem) {
  if (ca_bundle_pem.empty()) return 0;
  const std::string encoded = api::Base64Encode(ca_bundle_pem);
  int written = 0;
  for (const json& w : want) {
    const auto& res = ConfigResource(w["kind"] == "MutatingWebhookConfiguration");
    const std::string name = w["metadata"]["name"];
    for (int attempt = 0;; ++attempt) {
      auto have = c.Get(res, "", name);
      if (!have.ok() && core::IsNotFound(have.status())) {
        log::Warn("webhook configuration not found; with --manage-webhook-configurations=ca-bundle its owner "
                  "(the Helm chart) creates it")
            .Kv("kind", std::string(res.kind))
            .Kv("name", name);
        break;
      }
      if (!have.ok()) return have.status();
      json upd = *have;
      bool changed = false;
      if (upd.contains("webhooks") && upd["webhooks"].is_array()) {
        for (json& hook : upd["webhooks"]) {
          json& cc = hook["clientConfig"];
          if (!cc.is_object() || cc.value("caBundle", "") == encoded) continue;
          cc["caBundle"] = encoded;
          changed = true;
        }
      }
      if (!changed) break;
      auto s = c.Update(res, "", upd).status();
      if (s.ok()) {
        ++written;
        log::Info("webhook configuration caBundle written").Kv("kind", std::string(res.kind)).Kv("name", name);
        break;
      }
      if (!core::IsConflict(s) || attempt >= 4) return s;
    }
  }
  return written;
}

bool ServerHasMatchConditions(kube::Client& c) {
  auto v = c.Raw("GET", "/version", nullptr);
  if (!v.ok() || !v->is_object()) return false;
  auto num = [](const json& j, const char* k) {
    if (!j.contains(k) || !j[k].is_string()) return 0;
    return std::atoi(j[k].get<std::string>().c_str());  // "28+" reads as 28
  };
  const int major = num(*v, "major"), minor = num(*v, "minor");
  return major > 1 || (major == 1 && minor >= 28);
}

}  // namespace

// ------------------------------------------------------------------------------------------------ role

core::StatusOr<WebhookOptions::ConfigurationsMode> ParseConfigurationsMode(const std::string& flag) {
  using Mode = WebhookOptions::ConfigurationsMode;
  if (flag == "true" || flag == "all") return Mode::kAll;
  if (flag == "ca-bundle") return Mode::kCaBundle;
  if (flag == "false" || flag == "none") return Mode::kNone;
  return core::InvalidArgumentError("--manage-webhook-configurations must be true (or all), ca-bundle, or false "
                                    "(or none), got \"" + flag + "\"");
}

core::StatusOr<std::vector<json>> RegisteredConfigurations(const WebhookOptions& o, bool match_conditions,
                                                           const std::string& ca_bundle_pem) {
  auto enabled = ParseEnabledAdmission(o.enabled_admission);
  if (!enabled.ok()) return enabled.status();
  // /pods/mutate changes nothing without an admission configuration (docs/webhook.md, "Not yet"): it is
  // served, but not registered, so the API server does not pay a webhook round trip per pod for an answer
  // that is always "allowed, no patch". Measured: two pod webhooks cost a 1,000-pod job a third of its
  // creation rate on a 2-core control plane (bench/RESULTS.md, "admission webhook").
  std::set<std::string> registered = *enabled;
  registered.erase("/pods/mutate");
  ConfigurationOptions co;
  co.webhook_url = o.webhook_url;
  co.service_name = o.webhook_service_name;
  co.service_namespace = o.webhook_namespace;
  co.failure_policy = o.failure_policy;
  co.scheduler_names = o.config.scheduler_names;
  co.match_conditions = match_conditions;
  co.ca_bundle_pem = ca_bundle_pem;
  return BuildConfigurations(co, registered);
}

int RunWebhook(const WebhookOptions& o) {
  auto enabled = ParseEnabledAdmission(o.enabled_admission);
  if (!enabled.ok()) {
    std::fprintf(stderr, "tephra webhook: %s\n", enabled.status().message().c_str());
    return 2;
  }
  if (o.tls_cert_file.empty() != o.tls_private_key_file.empty()) {
    std::fprintf(stderr, "tephra webhook: --tls-cert-file and --tls-private-key-file go together (or neither, "
                         "for a self-signed certificate)\n");
    return 2;
  }
  if (o.failure_policy != "Fail" && o.failure_policy != "Ignore") {
    std::fprintf(stderr, "tephra webhook: --failure-policy must be Fail or Ignore, got \"%s\"\n",
                 o.failure_policy.c_str());
    return 2;
  }
  if (o.port <= 0 || o.port > 65535) {
    std::fprintf(stderr, "tephra webhook: --port %d is not a TCP port\n", o.port);
    return 2;
  }
  kube::ManagerOptions mo = kube::ManagerOptionsFor("webhook", o, o.metrics_address, o.health_address);
  auto created = kube::Manager::Create(std::move(mo));
  if (!created.ok()) {
    std::fprintf(stderr, "tephra webhook: %s\n", created.status().ToString().c_str());
    return 2;
  }
  kube::Manager& mgr = **created;

  auto queues = mgr.informers().For<api::Queue>();
  auto namespaces = mgr.informers().For<api::Namespace>();
  InformerLookup lookup(queues, namespaces);
  Admitter admitter(o.config, &lookup, *enabled);

  auto& requests = mgr.registry().AddCounter(
      "tephra_webhook_admission_requests_total",
      "Admission requests by webhook path and result (allowed, patched, denied, bad_request)", {"path", "result"});
  auto& latency = mgr.registry().AddHistogram(
      "tephra_webhook_admission_duration_seconds", "Time to answer one admission request, decoding included",
      {"path"}, {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1});

  std::atomic<bool> serving{false};
  mgr.AddReadinessCheck("certificate-loaded", [&] { return serving.load(); });
  mgr.AddReadinessCheck("informers-synced", [&] { return queues->HasSynced() && namespaces->HasSynced(); });

  const bool self_signed = o.tls_cert_file.empty();
  std::string cert_dir = o.cert_dir;
  std::unique_ptr<kube::HttpServer> server;
  mgr.Add(kube::MakeRunnable("admission", /*needs_leader_election=*/false, [&](std::stop_token stop) -> core::Status {
    mgr.informers().StartAll();
    auto next_warning = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!stop.stop_requested() && !mgr.informers().WaitForSync(std::chrono::steady_clock::now() +
                                                                  std::chrono::milliseconds(500))) {
      if (std::chrono::steady_clock::now() > next_warning) {
        log::Warn("informer caches not synced yet (is the Queue CRD installed, and may we list queues and "
                  "namespaces?)");
        next_warning += std::chrono::seconds(30);
      }
    }
    if (stop.stop_requested()) return core::Status::OK();

    kube::HttpServerOptions so;
    so.max_body_bytes = kMaxReviewBytes;
    so.workers = 64;  // the API server keeps a pool of keep-alive connections; one worker serves one
    so.cert_check_interval = std::chrono::seconds(1);
    std::unique_ptr<SelfSignedCerts> certs;
    std::string ca_bundle;
    if (self_signed) {
      if (cert_dir.empty()) {
        char tmpl[] = "/tmp/tephra-webhook-certs-XXXXXX";
        if (!mkdtemp(tmpl)) return core::InvalidArgumentError("cannot create a directory for the certificates");
        cert_dir = tmpl;
      }
      std::filesystem::create_directories(cert_dir);
      certs = std::make_unique<SelfSignedCerts>(mgr.client(), o);
      core::StatusOr<kube::CertificateBundle> b = core::UnavailableError("not tried");
      for (int i = 0; !stop.stop_requested(); ++i) {
        b = certs->Ensure();
        if (b.ok()) break;
        log::Warn("cannot set up the self-signed certificate yet").Kv("error", b.status());
        if (kube::SleepUnlessStopped(stop, std::chrono::seconds(std::min(i + 1, 10)))) return core::Status::OK();
      }
      if (stop.stop_requested()) return core::Status::OK();
      TEPHRA_RETURN_IF_ERROR(WriteFileAtomically(cert_dir + "/tls.key", b->key_pem));
      TEPHRA_RETURN_IF_ERROR(WriteFileAtomically(cert_dir + "/tls.crt", b->cert_pem));
      ca_bundle = b->ca_cert_pem;
      so.tls_cert_file = cert_dir + "/tls.crt";
      so.tls_key_file = cert_dir + "/tls.key";
    } else {
      so.tls_cert_file = o.tls_cert_file;
      so.tls_key_file = o.tls_private_key_file;
      if (!o.ca_cert_file.empty()) ca_bundle = ReadFile(o.ca_cert_file);
    }

    server = std::make_unique<kube::HttpServer>(so);
    for (const std::string& path : admitter.enabled_paths()) {
      server->HandlePost(path, [&, path](const kube::ServerRequest& req) {
        const auto t0 = std::chrono::steady_clock::now();
        Outcome out;
        HttpReply r = admitter.Serve(req.path, req.content_type, req.body, &out);
        const char* result = !out.decoded ? "bad_request" : !out.allowed ? "denied" : out.patched ? "patched" : "allowed";
        requests.With({path, result})->Inc();
        latency.With({path})->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (!out.decoded) log::Warn("bad admission request").Kv("path", path).Kv("status", r.status);
        return kube::ServerResponse{r.status, r.content_type, std::move(r.body)};
      });
    }
    const std::string address = o.listen_address + ":" + std::to_string(o.port);
    if (auto s = server->Start(address); !s.ok())
      return core::InvalidArgumentError("cannot serve admission on " + address + ": " + s.ToString());
    serving = true;
    log::Info("serving admission webhooks").Kv("address", address).Kv("paths", admitter.enabled_paths().size())
        .Kv("certificate", self_signed ? "self-signed" : o.tls_cert_file);

    // Level-triggered upkeep: the certificate (self-signed mode) and the configurations are checked every
    // resync period, so a deleted configuration or a renewal by another replica is picked up.
    bool have_version = false, match_conditions = false;
    while (true) {
      if (certs) {
        auto b = certs->Ensure();
        if (!b.ok()) {
          log::Warn("cannot check the self-signed certificate").Kv("error", b.status());
        } else {
          ca_bundle = b->ca_cert_pem;
          if (b->cert_pem != ReadFile(so.tls_cert_file)) {
            // Key first: a handshake between the two writes sees a pair that does not match and keeps the
            // last good one (kube/http_server.h).
            (void)WriteFileAtomically(so.tls_key_file, b->key_pem);
            (void)WriteFileAtomically(so.tls_cert_file, b->cert_pem);
            log::Info("serving a renewed certificate");
          }
        }
      } else if (!o.ca_cert_file.empty()) {
        ca_bundle = ReadFile(o.ca_cert_file);  // cert-manager rotates the CA file in place
      }
      if (o.manage_configurations != WebhookOptions::ConfigurationsMode::kNone) {
        if (!have_version) {
          match_conditions = ServerHasMatchConditions(*mgr.client());
          have_version = true;
        }
        auto want = RegisteredConfigurations(o, match_conditions, ca_bundle);
        core::Status s = want.status();
        if (want.ok() && o.manage_configurations == WebhookOptions::ConfigurationsMode::kAll)
          s = EnsureConfigurations(*mgr.client(), *want).status();
        else if (want.ok())
          s = PatchCaBundles(*mgr.client(), *want, ca_bundle).status();
        if (!s.ok()) log::Warn("cannot write the webhook configurations").Kv("error", s);
      }
      if (kube::SleepUnlessStopped(stop, o.resync_period)) break;
    }
    serving = false;
    server->Stop();
    return core::Status::OK();
  }));
  return mgr.Run();
}

}  // namespace tephra::webhooks
