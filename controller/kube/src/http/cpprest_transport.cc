// The one cpprestsdk user: Transport over cpprest's http_client (Boost.Asio + OpenSSL underneath).
//
// Facts this relies on (checked against kube-apiserver):
//  - TLS trust/identity is configured through http_client_config::set_ssl_context_callback on the asio context.
//    cpprest calls it for every new connection, on a fresh context into which it has already loaded OpenSSL's
//    default verify paths (see PrepareProcessTls in transport.h for what that costs and how it is avoided).
//  - client.request(req).get() returns once the headers arrived; the body can then be read as it streams.
//  - Watch bodies are read in blocks and split into lines here: istream::read_line costs ~120 µs of task
//    machinery per line (bench/RESULTS.md "client"). A block read asks only for what in_avail() says is
//    buffered (getn on the response's producer/consumer buffer waits for the *full* count otherwise, which
//    would stall a quiet watch); when nothing is buffered one bumpc() blocks for the next byte.
//  - set_timeout bounds every leg of a request, including each body read, so a watch client gets a timeout
//    longer than the watch's timeoutSeconds (the REST client sets HttpRequest::timeout accordingly).
//  - cpprest reports failures by throwing (http_exception, pplx::task_canceled): all caught here.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <openssl/x509.h>

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {

namespace {

using core::Status;
using core::StatusOr;
namespace http = web::http;

// Set by PrepareProcessTls: OpenSSL's default trust file is the empty one, so a context only trusts what
// the callback below adds; g_system_trust_file is what the default was (written before the flag is set).
std::atomic<bool> g_default_trust_file_emptied{false};
std::string g_system_trust_file;

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
      auto sb = resp.body().streambuf();
      using Traits = decltype(sb)::traits;
      std::string pending;  // bytes after the last complete line
      std::vector<uint8_t> block(64 * 1024);
      while (true) {
        if (cancelled()) return core::CancelledError("watch cancelled");
        const size_t avail = sb.in_avail();
        if (avail == 0) {
          auto c = sb.bumpc().get();  // blocks until a byte arrives or the body ends
          if (c == Traits::eof()) {
            std::string_view v(pending);
            if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
            if (!v.empty()) on_line(v);  // a final line without '\n'
            return Status::OK();
          }
          pending.push_back(static_cast<char>(c));
          if (c != '\n') continue;
        } else {
          size_t n = sb.getn(block.data(), std::min(avail, block.size())).get();
          pending.append(reinterpret_cast<const char*>(block.data()), n);
        }
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          std::string_view v(pending.data() + start, nl - start);
          if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
          if (v.empty()) continue;  // keep-alive newline
          if (!on_line(v)) return Status::OK();
        }
        pending.erase(0, start);
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
  std::shared_ptr<http::client::http_client> ClientFor(std::chrono::milliseconds timeout) TEPHRA_EXCLUDES(mu_) {
    core::MutexLock lock(mu_);
    auto& c = clients_[timeout.count()];
    if (c) return c;
    http::client::http_client_config hc;
    hc.set_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout) + std::chrono::seconds(1));
    hc.set_validate_certificates(!cfg_.insecure_skip_tls_verify);
    RestConfig cfg = cfg_;
    std::string system_roots;  // empty: cpprest's default-path load already added them
    if (cfg.ca_file.empty() && cfg.ca_data.empty() && g_default_trust_file_emptied.load())
      system_roots = g_system_trust_file;
    hc.set_ssl_context_callback([cfg, system_roots](boost::asio::ssl::context& ctx) {
      // Runs for every new connection. Exceptions from here would surface as http_exception at request time;
      // keep them as such.
      if (!system_roots.empty()) {
        // No CA named: the system roots, which cpprest's default-path load skipped (PrepareProcessTls). A
        // missing file is ignored, as OpenSSL's own default load ignores it.
        boost::system::error_code ignored;
        ctx.load_verify_file(system_roots, ignored);
      }
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
  core::Mutex mu_;
  std::map<int64_t, std::shared_ptr<http::client::http_client>> clients_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace

void PrepareProcessTls() {
  if (g_default_trust_file_emptied.load()) return;
  // X509_get_default_cert_file_env() is the variable's name ("SSL_CERT_FILE"); OpenSSL reads it on every
  // default-path load. A value the user set is still the system trust, for configurations without a CA.
  const char* var = X509_get_default_cert_file_env();
  const char* set = std::getenv(var);
  std::string system = set && *set ? set : X509_get_default_cert_file();
  if (::setenv(var, "/dev/null", 1) != 0) return;
  g_system_trust_file = std::move(system);
  g_default_trust_file_emptied = true;
}

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
