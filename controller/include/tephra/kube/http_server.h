// A small HTTP/1.1 server for /metrics, /healthz and /readyz, and for small JSON POST APIs (the scheduler
// extender). GET/HEAD on Handle() paths, POST on HandlePost() paths; one request per connection
// (Connection: close), exact path match. Requests are handled one at a time on the server thread with a
// 2 s socket timeout: enough for probes, scrapes and a scheduler's webhook calls, not a general web server.
// POST bodies need Content-Length (chunked is answered 411) and are capped (413 beyond max_body_bytes).
// No socket library type appears here (POSIX sockets live in controller/src/server/http_server.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/kube/metrics.h"

namespace tephra::kube {

class LeaderElector;

struct ServerRequest {
  std::string method;
  std::string path;   // without the query
  std::string query;  // after '?', raw
  std::string body;   // POST only; exactly Content-Length bytes
};

struct ServerResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<ServerResponse(const ServerRequest&)>;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a handler for an exact path. Thread-safe; may be called after Start.
  void Handle(const std::string& path, HttpHandler handler);
  // Registers a POST handler for an exact path (a path may have both a GET and a POST handler).
  void HandlePost(const std::string& path, HttpHandler handler);
  // Largest accepted POST body; larger requests get 413 without the body being read. Default 16 MiB. Call before Start().
  void set_max_body_bytes(size_t n) { max_body_bytes_ = n; }
  // Binds "host:port", ":port" (all interfaces) or "[v6]:port"; port 0 picks a free port (see port()).
  core::Status Start(const std::string& address);
  int port() const { return port_; }
  // Closes the listener and joins the thread. Idempotent.
  void Stop();

 private:
  void Serve();
  void HandleConnection(int fd);

  std::mutex mu_;
  std::map<std::string, HttpHandler> handlers_;
  std::map<std::string, HttpHandler> post_handlers_;
  size_t max_body_bytes_ = 16u << 20;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
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
