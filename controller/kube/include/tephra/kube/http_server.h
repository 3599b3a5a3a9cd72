// The HTTP/1.1 (and HTTPS) server of every role: /metrics, /healthz, /readyz, the scheduler extender API and
// the admission webhooks. Built on cpp-httplib (Debian's libcpp-httplib; controller/kube/src/server/ is its one
// adapter, docs/http-server.md says why this library): a worker pool, keep-alive, read/write/idle timeouts,
// bounded bodies (413 beyond max_body_bytes), TLS through OpenSSL with the certificate re-read when its
// files change (cert-manager and Helm rotate them in place). Handlers are looked up by exact path; GET
// handlers also answer HEAD; another method on a known path is 405, an unknown path 404; a handler that
// throws answers 500. No library type appears in this header.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/metrics.h"

namespace tephra::kube {

class LeaderElector;

struct ServerRequest {
  std::string method;
  std::string path;   // without the query
  std::string query;  // after '?', raw
  std::string body;   // POST only; exactly Content-Length bytes
  std::string content_type;  // the Content-Type header, as sent ("" when absent)
  std::string authorization;  // the Authorization header, as sent ("" when absent)
  std::string remote_addr;    // the peer's IP address ("127.0.0.1", "::1", ...); "" when unknown
};

// True for a peer on this host (127.0.0.0/8, ::1, ::ffff:127.x.y.z): reached without the network, so through
// `kubectl port-forward` or from the same pod.
bool IsLoopbackPeer(const std::string& remote_addr);

struct ServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<ServerResponse(const ServerRequest&)>;

struct HttpServerOptions {
  // TLS: both set = HTTPS. The files are re-read (at most every cert_check_interval, on the next handshake)
  // when their modification time changes, so a rotated certificate is served without a restart.
  std::string tls_cert_file, tls_key_file;
  std::string client_ca_file;  // set: clients must present a certificate signed by it (mutual TLS)
  std::chrono::seconds cert_check_interval{10};
  // cpp-httplib serves a connection on one worker for as long as it is kept alive, so this bounds open
  // connections, not only requests in progress; a connection beyond it waits for a free worker.
  int workers = 32;
  size_t max_body_bytes = 16u << 20;     // larger bodies: 413
  std::chrono::seconds read_timeout{10}, write_timeout{10};
  // An idle keep-alive connection is closed after this. Short: it also bounds how long Stop() waits for an
  // idle client to go (the library checks for a stop only between requests).
  std::chrono::seconds keep_alive_timeout{2};
  size_t keep_alive_max_requests = 10000;        // then the connection is closed (clients reconnect)
};

class HttpServer {
 public:
  HttpServer();
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a handler for an exact path. Thread-safe; may be called after Start.
  void Handle(const std::string& path, HttpHandler handler) TEPHRA_EXCLUDES(mu_);
  // Registers a POST handler for an exact path (a path may have both a GET and a POST handler).
  void HandlePost(const std::string& path, HttpHandler handler) TEPHRA_EXCLUDES(mu_);
  // Registers a PUT handler for an exact path.
  void HandlePut(const std::string& path, HttpHandler handler) TEPHRA_EXCLUDES(mu_);
  // Largest accepted request body; larger requests get 413. Call before Start().
  void set_max_body_bytes(size_t n) { options_.max_body_bytes = n; }
  // Binds "host:port", ":port" (all interfaces) or "[v6]:port"; port 0 picks a free port (see port()).
  // kInvalidArgument for a bad address or an unusable certificate/key (the message names the file),
  // kUnavailable when the port cannot be bound.
  core::Status Start(const std::string& address);
  int port() const { return port_; }
  bool tls() const { return !options_.tls_cert_file.empty(); }
  // Stops accepting, closes idle connections, waits for requests in progress, joins. Idempotent.
  void Stop();

 private:
  struct Impl;
  ServerResponse Dispatch(const ServerRequest& req) TEPHRA_EXCLUDES(mu_);

  HttpServerOptions options_;
  core::Mutex mu_;
  std::map<std::string, HttpHandler> handlers_ TEPHRA_GUARDED_BY(mu_);
  std::map<std::string, HttpHandler> post_handlers_ TEPHRA_GUARDED_BY(mu_);
  std::map<std::string, HttpHandler> put_handlers_ TEPHRA_GUARDED_BY(mu_);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

// A named readiness condition; false = not ready.
struct ReadinessCheck {
  std::string name;
  std::function<bool()> ready;
};

// Installs /metrics (the registry's exposition), /healthz (200 "ok" while the process serves) and /readyz
// (200 when every check passes, else 503 listing the failing ones; `?verbose` lists all, like kube-apiserver).
void InstallStandardEndpoints(HttpServer& server, metrics::Registry& registry, std::vector<ReadinessCheck> checks);

// Ready while the elector is leading or standing by; not ready once it stopped (lost the lease).
ReadinessCheck LeaderElectionCheck(const LeaderElector* elector);

}  // namespace tephra::kube
