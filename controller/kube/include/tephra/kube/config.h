// How to reach the API server: kubeconfig / in-cluster resolution into one RestConfig.
//
// Resolution order (like client-go's clientcmd): an explicit --kubeconfig path, then $KUBECONFIG (first
// existing entry of a ':'-separated list), then the in-cluster service account
// (/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt} + KUBERNETES_SERVICE_HOST/PORT).
// `master_override` (--master) replaces the server URL whichever source was used.
// yaml-cpp is used only in controller/kube/src/config/; this header exposes no YAML type.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"

namespace tephra::kube {

struct RestConfig {
  std::string server;  // "https://127.0.0.1:6443" (no trailing slash)

  // Bearer token: either inline, or a file re-read when it rotates (projected service-account tokens
  // are refreshed by the kubelet; see TokenSource).
  std::string token;
  std::string token_file;

  // Client certificate authentication (PEM). *_file wins over *_data when both are set.
  std::string client_cert_file, client_cert_data;
  std::string client_key_file, client_key_data;

  // Server CA (PEM). Without one the system trust store is used.
  std::string ca_file, ca_data;
  bool insecure_skip_tls_verify = false;

  // Client-side limits (client-go defaults are 5/10; controllers usually raise them).
  double qps = 50;
  int burst = 100;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // per non-watch request

  std::string user_agent = "tephra";

  // Retries of kUnavailable (429, 5xx, timeouts, resets): at most max_tries attempts in all. The delay is the
  // server's Retry-After when given, else exponential from retry_initial to retry_max with jitter.
  int max_tries = 10;
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_max{std::chrono::seconds(5)};
  // A watch's read timeout is its timeoutSeconds plus this slack; a watch without timeoutSeconds uses
  // `watch_idle_timeout`. Either expiring ends the watch normally (the caller re-watches).
  std::chrono::seconds watch_slack{30};
  std::chrono::seconds watch_idle_timeout{330};
};

// Loads the configuration. `kubeconfig_path` is the --kubeconfig flag ("" = not given); `master_override` is
// --master ("" = none). Errors name the file and the key ("kubeconfig /x: users[0].user.token-file: ...").
core::StatusOr<RestConfig> LoadConfig(const std::string& kubeconfig_path = "",
                                      const std::string& master_override = "");

// Parses one kubeconfig document (its current-context). `path` is used for error messages and to resolve
// relative file references (relative to the kubeconfig's directory, as kubectl does).
core::StatusOr<RestConfig> ParseKubeconfig(const std::string& yaml_text, const std::string& path);

// In-cluster configuration from a service-account directory (tests pass their own directory).
core::StatusOr<RestConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// Supplies the current bearer token. With a token file it re-reads the file when its mtime changed, checked
// at most once per `recheck` interval, so rotated tokens are picked up without a restart. Thread-safe.
class TokenSource {
 public:
  explicit TokenSource(const RestConfig& cfg, std::chrono::seconds recheck = std::chrono::seconds(60));
  // "" when neither a token nor a token file is configured.
  core::StatusOr<std::string> Token() TEPHRA_EXCLUDES(mu_);

 private:
  core::Mutex mu_;
  std::string token_ TEPHRA_GUARDED_BY(mu_);
  const std::string file_;
  const std::chrono::seconds recheck_;
  std::chrono::steady_clock::time_point next_check_ TEPHRA_GUARDED_BY(mu_){};
  int64_t mtime_ns_ TEPHRA_GUARDED_BY(mu_) = -1;
};

}  // namespace tephra::kube
