// The HTTP transport under the REST client: one request -> one response, or a streamed response read line by
// line (watch). No cpprestsdk/Boost/OpenSSL type appears here; the only implementation talking to the network is
// controller/kube/src/http/cpprest_transport.cc. Tests substitute their own Transport.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/kube/client.h"
#include "tephra/kube/config.h"

namespace tephra::kube {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/namespaces/x/pods?limit=5" (already escaped)
  Headers headers;
  std::string body;
  std::string content_type;  // set when body is non-empty
  // Upper bound for the whole request (non-streamed) or for each read (streamed).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;  // whole body; for a streamed 2xx response only what was not delivered as lines
  // Case-insensitive header lookup; "" when absent.
  std::string Header(std::string_view name) const;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Transport failures (refused, reset, timeout, TLS) are kUnavailable; any HTTP status is a response.
  virtual core::StatusOr<HttpResponse> Do(const HttpRequest& req) = 0;
  // For a 2xx status, calls on_line for every '\n'-terminated line (without the '\n') until the body ends,
  // on_line returns false, or `canceller` fires (then kCancelled). For other statuses the body is read into
  // head->body and on_line is not called. A read timeout ends the stream with kDeadlineExceeded.
  virtual core::Status Stream(const HttpRequest& req, HttpResponse* head,
                              const std::function<bool(std::string_view line)>& on_line,
                              const std::shared_ptr<WatchCanceller>& canceller) = 0;
};

// The cpprestsdk-backed transport for `cfg` (TLS, CA, client certs). Bearer tokens are added by the REST client.
core::StatusOr<std::unique_ptr<Transport>> NewCpprestTransport(const RestConfig& cfg);

// Call first thing in main, before any thread exists (it sets an environment variable). cpprestsdk builds a
// new TLS context for every connection it opens and loads OpenSSL's default trust file into it before the
// transport can configure it: Debian's ~140 roots, ~45 ms of CPU per connection with OpenSSL 3, so a scheduler
// opening ~100 connections at start spent seconds of CPU there. This points SSL_CERT_FILE at an empty file so
// that load is free; the transport then adds what it trusts itself: the kubeconfig's CA, or, when the
// kubeconfig names no CA, the system trust file (SSL_CERT_FILE as it was, else OpenSSL's default), loaded
// explicitly as before (docs/api-client.md). Not for processes that start other programs needing the variable.
void PrepareProcessTls();

// What every REST client of this process sent, for the role's /metrics (kube::Manager exports it as
// rest_client_requests_total{client,method,code} and tephra_rest_client_rate_limiter_wait_seconds_total
// {client}): `client` is the client's user agent, `code` the HTTP status, 0 when no response came. One
// entry per attempt (a retried request counts twice). Watches count once, when they start.
struct RestRequestCount {
  std::string client, method;
  int code = 0;
  uint64_t count = 0;
};
std::vector<RestRequestCount> RestRequestCounts();
std::vector<std::pair<std::string, double>> RestLimiterWaitSeconds();

// The production Client: REST over NewCpprestTransport(cfg) with cfg's QPS/burst limiter and token source.
core::StatusOr<ClientPtr> NewClient(const RestConfig& cfg);
// Same over any transport (tests).
ClientPtr NewRestClient(const RestConfig& cfg, std::shared_ptr<Transport> transport);

}  // namespace tephra::kube
