// The one adapter of cpp-httplib (and, for TLS certificates, of OpenSSL's SSL_CTX API): nothing else
// includes <httplib.h>. docs/http-server.md explains the choice and the threading model.
#include "tephra/kube/http_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <httplib.h>

#include "tephra/kube/caught.h"
#include "tephra/kube/leader_election.h"
#include "tephra/kube/log.h"

namespace tephra::kube {

namespace {

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

int64_t MTimeNs(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// The serving certificate, re-read when its files change. Handshakes ask for it through SSL_CTX's
// certificate callback, so a rotated certificate applies to the next connection; a rotation that cannot be
// loaded (half-written files, a key that does not match) keeps the last good pair and is logged.
class CertSource {
 public:
  CertSource(std::string cert_file, std::string key_file, std::chrono::seconds check)
      : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), check_(check) {}
  ~CertSource() { Free(&cur_); }

  core::Status LoadInitial() TEPHRA_EXCLUDES(mu_) {
    core::MutexLock l(mu_);
    Pair p;
    TEPHRA_RETURN_IF_ERROR(Read(&p));
    cur_ = p;
    last_check_ = std::chrono::steady_clock::now();
    return core::Status::OK();
  }

  // SSL_CTX_set_cert_cb callback.
  static int Callback(SSL* ssl, void* arg) { return static_cast<CertSource*>(arg)->Apply(ssl); }

 private:
  struct Pair {
    X509* cert = nullptr;
    STACK_OF(X509)* chain = nullptr;
    EVP_PKEY* key = nullptr;
    int64_t cert_mtime = 0, key_mtime = 0;
  };
  static void Free(Pair* p) {
    if (p->cert) X509_free(p->cert);
    if (p->chain) sk_X509_pop_free(p->chain, X509_free);
    if (p->key) EVP_PKEY_free(p->key);
    *p = Pair{};
  }

  core::Status Read(Pair* out) {
    Pair p;
    p.cert_mtime = MTimeNs(cert_file_);
    p.key_mtime = MTimeNs(key_file_);
    BIO* cb = BIO_new_file(cert_file_.c_str(), "r");
    if (!cb) return core::InvalidArgumentError("--tls-cert-file " + cert_file_ + ": cannot read: " + OpenSslError());
    p.cert = PEM_read_bio_X509_AUX(cb, nullptr, nullptr, nullptr);
    if (p.cert) {
      p.chain = sk_X509_new_null();
      while (X509* extra = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr)) sk_X509_push(p.chain, extra);
      ERR_clear_error();  // the loop ends on "no start line"
    }
    BIO_free(cb);
    if (!p.cert) {
      Free(&p);
      return core::InvalidArgumentError("--tls-cert-file " + cert_file_ + ": no PEM certificate: " + OpenSslError());
    }
    BIO* kb = BIO_new_file(key_file_.c_str(), "r");
    if (!kb) {
      Free(&p);
      return core::InvalidArgumentError("--tls-private-key-file " + key_file_ + ": cannot read: " + OpenSslError());
    }
    p.key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    if (!p.key) {
      Free(&p);
      return core::InvalidArgumentError("--tls-private-key-file " + key_file_ + ": no PEM private key: " + OpenSslError());
    }
    if (X509_check_private_key(p.cert, p.key) != 1) {
      Free(&p);
      return core::InvalidArgumentError("--tls-private-key-file " + key_file_ + " does not match the certificate in " +
                                        cert_file_);
    }
    *out = p;
    return core::Status::OK();
  }

  int Apply(SSL* ssl) TEPHRA_EXCLUDES(mu_) {
    core::MutexLock l(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_check_ >= check_) {
      last_check_ = now;
      if (MTimeNs(cert_file_) != cur_.cert_mtime || MTimeNs(key_file_) != cur_.key_mtime) {
        Pair next;
        if (auto s = Read(&next); s.ok()) {
          Free(&cur_);
          cur_ = next;
          log::Info("serving certificate reloaded").Kv("cert", cert_file_);
        } else {
          log::Warn("serving certificate changed but cannot be loaded; keeping the previous one").Kv("error", s);
        }
      }
    }
    // SSL_use_cert_and_key takes its own references.
    return SSL_use_cert_and_key(ssl, cur_.cert, cur_.key, cur_.chain, 1) == 1 ? 1 : 0;
  }

  const std::string cert_file_, key_file_;
  const std::chrono::seconds check_;
  core::Mutex mu_;
  Pair cur_ TEPHRA_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_check_ TEPHRA_GUARDED_BY(mu_){};
};

}  // namespace

bool IsLoopbackPeer(const std::string& remote_addr) {
  in_addr v4{};
  if (::inet_pton(AF_INET, remote_addr.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, remote_addr.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

struct HttpServer::Impl {
  std::unique_ptr<CertSource> certs;
  std::unique_ptr<httplib::Server> srv;
};

HttpServer::HttpServer() : HttpServer(HttpServerOptions{}) {}
HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}
HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler) {
  core::MutexLock l(mu_);
  handlers_[path] = std::move(handler);
}

void HttpServer::HandlePost(const std::string& path, HttpHandler handler) {
  core::MutexLock l(mu_);
  post_handlers_[path] = std::move(handler);
}

void HttpServer::HandlePut(const std::string& path, HttpHandler handler) {
  core::MutexLock l(mu_);
  put_handlers_[path] = std::move(handler);
}

ServerResponse HttpServer::Dispatch(const ServerRequest& req) {
  HttpHandler h;
  bool known = false;
  {
    core::MutexLock l(mu_);
    const bool get = req.method == "GET" || req.method == "HEAD";
    std::map<std::string, HttpHandler>* map = get ? &handlers_
                                              : req.method == "POST" ? &post_handlers_
                                              : req.method == "PUT"  ? &put_handlers_
                                                                     : nullptr;
    if (map) {
      if (auto it = map->find(req.path); it != map->end()) h = it->second;
    }
    known = handlers_.count(req.path) || post_handlers_.count(req.path) || put_handlers_.count(req.path);
  }
  if (!h) {
    if (known) return {405, "text/plain; charset=utf-8", "method " + req.method + " not allowed on " + req.path + "\n"};
    return {404, "text/plain; charset=utf-8", "not found: " + req.path + "\n"};
  }
  try {
    return h(req);
  } catch (const std::exception& e) {
    CountException("http", req.path + ": " + e.what());
    return {500, "text/plain; charset=utf-8", "internal error\n"};
  } catch (...) {
    CountException("http", req.path + ": unknown exception");
    return {500, "text/plain; charset=utf-8", "internal error\n"};
  }
}

core::Status HttpServer::Start(const std::string& address) {
  if (impl_) return core::FailedPreconditionError("http server already started");
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return core::InvalidArgumentError("address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  const std::string port_s = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(port_s, &used);
    if (used != port_s.size()) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) return core::InvalidArgumentError("address \"" + address + "\" has no valid port");
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty())
    return core::InvalidArgumentError("TLS needs both --tls-cert-file and --tls-private-key-file");

  auto impl = std::make_unique<Impl>();
  if (!options_.tls_cert_file.empty()) {
    impl->certs = std::make_unique<CertSource>(options_.tls_cert_file, options_.tls_key_file, options_.cert_check_interval);
    TEPHRA_RETURN_IF_ERROR(impl->certs->LoadInitial());
    CertSource* certs = impl->certs.get();
    std::string ca = options_.client_ca_file;
    std::string ca_error;
    impl->srv = std::make_unique<httplib::SSLServer>([certs, ca, &ca_error](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
      SSL_CTX_set_cert_cb(&ctx, &CertSource::Callback, certs);
      if (!ca.empty()) {
        if (SSL_CTX_load_verify_locations(&ctx, ca.c_str(), nullptr) != 1) {
          ca_error = "--ca-cert-file " + ca + ": " + OpenSslError();
          return false;
        }
        SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      }
      return true;
    });
    if (!impl->srv->is_valid())
      return core::InvalidArgumentError(ca_error.empty() ? "cannot set up TLS: " + OpenSslError() : ca_error);
  } else {
    impl->srv = std::make_unique<httplib::Server>();
  }
  httplib::Server& srv = *impl->srv;
  const size_t workers = static_cast<size_t>(std::max(1, options_.workers));
  srv.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  srv.set_keep_alive_max_count(options_.keep_alive_max_requests);
  srv.set_keep_alive_timeout(static_cast<time_t>(options_.keep_alive_timeout.count()));
  srv.set_read_timeout(options_.read_timeout);
  srv.set_write_timeout(options_.write_timeout);
  srv.set_payload_max_length(options_.max_body_bytes);
  srv.set_tcp_nodelay(true);
  // The library's default also sets SO_REUSEPORT, which lets a second process bind the same port and
  // silently share its traffic; a port in use must be an error, as it is for every other server.
  srv.set_socket_options([](socket_t sock) {
    int one = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  auto dispatch = [this](const httplib::Request& r, httplib::Response& w, std::string body) {
    ServerRequest req;
    req.method = r.method;
    req.path = r.path;
    if (auto q = r.target.find('?'); q != std::string::npos) req.query = r.target.substr(q + 1);
    req.body = std::move(body);
    req.content_type = r.get_header_value("Content-Type");
    req.authorization = r.get_header_value("Authorization");
    req.remote_addr = r.remote_addr;
    ServerResponse resp = Dispatch(req);
    w.status = resp.status;
    w.set_content(std::move(resp.body), resp.content_type.c_str());
  };
  auto serve = [dispatch](const httplib::Request& r, httplib::Response& w) { dispatch(r, w, r.body); };
  // Bodies are read here, not by the library: its limit holds for a Content-Length only, while a chunked body or
  // one without a length (read to the end of the stream) would grow without bound. Counting what arrives holds
  // for every transfer and content encoding (a compressed body is counted as it is inflated).
  const size_t max_body = options_.max_body_bytes;
  auto serve_body = [dispatch, max_body](const httplib::Request& r, httplib::Response& w,
                                         const httplib::ContentReader& read) {
    auto refuse = [&w](int status, const char* why) {
      w.status = status;
      w.set_header("Connection", "close");  // what is left of the body is not read
      w.set_content(why, "text/plain; charset=utf-8");
    };
    if (r.is_multipart_form_data()) return refuse(415, "multipart bodies are not accepted\n");
    std::string body;
    bool too_big = false;
    const bool ok = read([&](const char* data, size_t n) {
      if (n > max_body - body.size()) {
        too_big = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (too_big || w.status == 413) return refuse(413, "request body too large\n");
    if (!ok) return refuse(400, "the request body could not be read\n");
    dispatch(r, w, std::move(body));
  };
  // Catch-all routes: handlers may be added after Start (the map is ours, under mu_), and 404/405 are ours.
  srv.Get(".*", serve);
  srv.Post(".*", serve_body);
  srv.Put(".*", serve_body);
  srv.Patch(".*", serve_body);
  srv.Delete(".*", serve_body);
  srv.Options(".*", serve);
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& w, std::exception_ptr) {
    w.status = 500;
    w.set_content("internal error\n", "text/plain; charset=utf-8");
  });
  if (port == 0) {
    port = srv.bind_to_any_port(host);
    if (port < 0) return core::UnavailableError("listening on \"" + address + "\": cannot bind");
  } else if (!srv.bind_to_port(host, port)) {
    return core::UnavailableError("listening on \"" + address + "\": cannot bind (in use, or not a local address)");
  }
  port_ = port;
  impl_ = std::move(impl);
  httplib::Server* s = impl_->srv.get();
  thread_ = std::thread([s] { s->listen_after_bind(); });
  // The library's stop() does nothing until its loop has marked itself running, so a Stop() right after
  // Start() would leave accept() blocked for good: Start returns only once the loop runs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!s->is_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  return core::Status::OK();
}

void HttpServer::Stop() {
  if (!impl_) return;
  impl_->srv->stop();
  if (thread_.joinable()) thread_.join();
  impl_.reset();
}

void InstallStandardEndpoints(HttpServer& server, metrics::Registry& registry, std::vector<ReadinessCheck> checks) {
  server.Handle("/metrics", [&registry](const ServerRequest&) {
    return ServerResponse{200, "text/plain; version=0.0.4; charset=utf-8", registry.Expose()};
  });
  server.Handle("/healthz", [](const ServerRequest&) { return ServerResponse{200, "text/plain; charset=utf-8", "ok"}; });
  server.Handle("/readyz", [checks = std::move(checks)](const ServerRequest& req) {
    bool verbose = req.query.find("verbose") != std::string::npos;
    bool all_ok = true;
    std::string detail;
    for (const auto& c : checks) {
      bool ok = c.ready && c.ready();
      all_ok = all_ok && ok;
      if (ok && verbose) detail += "[+]" + c.name + " ok\n";
      if (!ok) detail += "[-]" + c.name + " failed\n";
    }
    if (all_ok) return ServerResponse{200, "text/plain; charset=utf-8", verbose ? detail + "readyz check passed\n" : "ok"};
    return ServerResponse{503, "text/plain; charset=utf-8", detail + "readyz check failed\n"};
  });
}

ReadinessCheck LeaderElectionCheck(const LeaderElector* elector) {
  return {"leader-election", [elector] { return elector && elector->state() != LeaderElector::State::kStopped; }};
}

}  // namespace tephra::kube
