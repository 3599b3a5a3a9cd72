// The one cpprestsdk user: Transport over cpprest's http_client (Boost.Asio + OpenSSL underneath).
//
// Facts this relies on (design.md, checked against kube-apiserver):
//  - TLS trust/identity is configured through http_client_config::set_ssl_context_callback on the asio context.
//  - client.request(req).get() returns once the headers arrived; the body can then be read as it streams.
//    Each read_line needs a *fresh* container_buffer: reusing one corrupts the following lines.
//  - set_timeout bounds every leg of a request, including each body read, so a watch client gets a timeout
//    longer than the watch's timeoutSeconds (the REST client sets HttpRequest::timeout accordingly).
//  - cpprest reports failures by throwing (http_exception, pplx::task_canceled): all caught here.
#include <map>
#include <mutex>

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include "tephra/kube/transport.h"

namespace tephra::kube {

namespace {

using core::Status;
using core::StatusOr;
namespace http = web::http;

class CpprestTransport : public Transport {
 public:
  explicit CpprestTransport(const RestConfig& cfg) : cfg_(cfg) {}

  StatusOr<HttpResponse> Do(const HttpRequest& req) override {
    try {
      auto client = ClientFor(req.timeout);
      http::http_response resp = client->request(Build(req)).get();
      HttpResponse out;
      CopyHead(resp, &out);
      out.body = resp.extract_utf8string(true).get();
      return out;
    } catch (const http::http_exception& e) {
      return Map(e, req);
    } catch (const pplx::task_canceled&) {
      return core::CancelledError(req.method + " " + req.path + ": cancelled");
    } catch (const std::exception& e) {
      return core::UnavailableError(req.method + " " + req.path + ": " + e.what());
    }
  }

  Status Stream(const HttpRequest& req, HttpResponse* head, const std::function<bool(std::string_view)>& on_line,
                const std::shared_ptr<WatchCanceller>& canceller) override {
    pplx::cancellation_token_source cts;
    if (canceller && !canceller->SetCallback([cts]() mutable { cts.cancel(); }))
      return core::CancelledError("watch cancelled");
    struct Clear {
      const std::shared_ptr<WatchCanceller>& c;
      ~Clear() {
        if (c) c->ClearCallback();
      }
    } clear{canceller};
    auto cancelled = [&] { return canceller && canceller->cancelled(); };
    try {
      auto client = ClientFor(req.timeout);
      http::http_response resp = client->request(Build(req), cts.get_token()).get();
      CopyHead(resp, head);
      if (head->status < 200 || head->status >= 300) {
        head->body = resp.extract_utf8string(true).get();
        return Status::OK();
      }
      auto body = resp.body();
      while (true) {
        if (cancelled()) return core::CancelledError("watch cancelled");
        concurrency::streams::container_buffer<std::string> buf;  // fresh per line (see above)
        size_t n = body.read_line(buf).get();
        const std::string& line = buf.collection();
        if (n == 0 && line.empty()) {
          if (body.is_eof()) return Status::OK();
          continue;  // an empty line (keep-alive newline)
        }
        std::string_view v(line);
        if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
        if (!on_line(v)) return Status::OK();
      }
    } catch (const http::http_exception& e) {
      if (cancelled()) return core::CancelledError("watch cancelled");
      return Map(e, req);
    } catch (const pplx::task_canceled&) {
      return core::CancelledError("watch cancelled");
    } catch (const std::exception& e) {
      if (cancelled()) return core::CancelledError("watch cancelled");
      return core::UnavailableError(req.method + " " + req.path + ": " + e.what());
    }
  }

 private:
  static http::http_request Build(const HttpRequest& req) {
    http::http_request r(req.method);
    r.set_request_uri(req.path);
    for (const auto& [k, v] : req.headers) r.headers().add(k, v);
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH")
      r.set_body(std::string(req.body), req.content_type.empty() ? "application/json" : req.content_type);
    return r;
  }

  static void CopyHead(const http::http_response& resp, HttpResponse* out) {
    out->status = resp.status_code();
    out->headers.clear();
    for (const auto& [k, v] : resp.headers()) out->headers.emplace_back(k, v);
  }

  static Status Map(const http::http_exception& e, const HttpRequest& req) {
    const std::string what = req.method + " " + req.path + ": ";
    if (e.error_code() == std::errc::timed_out) return core::DeadlineExceededError(what + "timeout");
    return core::UnavailableError(what + e.what());
  }

  // cpprest binds the timeout to the client, so keep one client per distinct timeout (normal vs watch).
  std::shared_ptr<http::client::http_client> ClientFor(std::chrono::milliseconds timeout) {
    std::lock_guard lock(mu_);
    auto& c = clients_[timeout.count()];
    if (c) return c;
    http::client::http_client_config hc;
    hc.set_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout) + std::chrono::seconds(1));
    hc.set_validate_certificates(!cfg_.insecure_skip_tls_verify);
    RestConfig cfg = cfg_;
    hc.set_ssl_context_callback([cfg](boost::asio::ssl::context& ctx) {
      // Exceptions from here would surface as http_exception at request time; keep them as such.
      if (!cfg.ca_file.empty()) ctx.load_verify_file(cfg.ca_file);
      if (!cfg.ca_data.empty()) ctx.add_certificate_authority(boost::asio::buffer(cfg.ca_data));
      if (!cfg.client_cert_file.empty()) ctx.use_certificate_chain_file(cfg.client_cert_file);
      else if (!cfg.client_cert_data.empty()) ctx.use_certificate_chain(boost::asio::buffer(cfg.client_cert_data));
      if (!cfg.client_key_file.empty()) ctx.use_private_key_file(cfg.client_key_file, boost::asio::ssl::context::pem);
      else if (!cfg.client_key_data.empty())
        ctx.use_private_key(boost::asio::buffer(cfg.client_key_data), boost::asio::ssl::context::pem);
    });
    c = std::make_shared<http::client::http_client>(cfg_.server, hc);
    return c;
  }

  RestConfig cfg_;
  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<http::client::http_client>> clients_;
};

}  // namespace

StatusOr<std::unique_ptr<Transport>> NewCpprestTransport(const RestConfig& cfg) {
  if (cfg.server.empty()) return core::InvalidArgumentError("rest config: server is empty");
  try {
    web::uri u(cfg.server);
    if (u.scheme() != "http" && u.scheme() != "https")
      return core::InvalidArgumentError("rest config: server " + cfg.server + ": scheme must be http or https");
  } catch (const std::exception& e) {
    return core::InvalidArgumentError("rest config: server " + cfg.server + ": " + e.what());
  }
  return std::unique_ptr<Transport>(new CpprestTransport(cfg));
}

}  // namespace tephra::kube
