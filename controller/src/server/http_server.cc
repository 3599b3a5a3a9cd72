// POSIX-socket adapter for http_server.h.
#include "tephra/kube/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "tephra/kube/leader_election.h"

namespace tephra::kube {
namespace {

constexpr size_t kMaxRequestHead = 16 * 1024;

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // peer went away: nothing useful to do
    off += static_cast<size_t>(n);
  }
}

void SendResponse(int fd, const ServerResponse& r, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head) out += r.body;
  WriteAll(fd, out);
}

// Value of header `name` (case-insensitive) in the request head, trimmed; "" when absent.
std::string HeaderValue(const std::string& head, const std::string& name) {
  size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos + 2 < head.size()) {
    size_t start = pos + 2;
    size_t end = head.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    std::string line = head.substr(start, end - start);
    auto colon = line.find(':');
    if (colon != std::string::npos && colon == name.size() &&
        std::equal(name.begin(), name.end(), line.begin(),
                   [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                               std::tolower(static_cast<unsigned char>(b)); })) {
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      v.erase(v.find_last_not_of(" \t") + 1);
      return v;
    }
    pos = end;
  }
  return {};
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

HttpServer::HttpServer() = default;
HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler) {
  std::lock_guard<std::mutex> l(mu_);
  handlers_[path] = std::move(handler);
}

void HttpServer::HandlePost(const std::string& path, HttpHandler handler) {
  std::lock_guard<std::mutex> l(mu_);
  post_handlers_[path] = std::move(handler);
}

core::Status HttpServer::Start(const std::string& address) {
  if (listen_fd_ >= 0) return core::FailedPreconditionError("http server already started");
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return core::InvalidArgumentError("address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty()) return core::InvalidArgumentError("address \"" + address + "\" has no port");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return core::InvalidArgumentError("resolving \"" + address + "\": " + gai_strerror(rc));
  std::string last_err = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_err = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) break;
    last_err = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return core::UnavailableError("listening on \"" + address + "\": " + last_err);

  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    ::close(fd);
    return core::InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  listen_fd_ = fd;
  thread_ = std::thread([this] { Serve(); });
  return core::Status::OK();
}

void HttpServer::Stop() {
  if (listen_fd_ < 0) return;
  char c = 'x';
  ssize_t ignored = ::write(wake_pipe_[1], &c, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
  listen_fd_ = -1;
}

void HttpServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    timeval tv{2, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    HandleConnection(c);
    ::close(c);
  }
}

void HttpServer::HandleConnection(int fd) {
  const std::string text = "text/plain; charset=utf-8";
  std::string head;
  char buf[8192];
  size_t head_end;
  while ((head_end = head.find("\r\n\r\n")) == std::string::npos) {
    if (head.size() > kMaxRequestHead) {
      SendResponse(fd, {431, text, "request head too large\n"}, false);
      return;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  // Whatever arrived after the blank line is the start of the body.
  std::string body = head.substr(head_end + 4);
  head.resize(head_end + 2);  // keep the last header's CRLF so HeaderValue sees complete lines
  auto eol = head.find("\r\n");
  std::string line = head.substr(0, eol);
  auto s1 = line.find(' ');
  auto s2 = line.find(' ', s1 == std::string::npos ? 0 : s1 + 1);
  if (s1 == std::string::npos || s2 == std::string::npos) {
    SendResponse(fd, {400, text, "malformed request line\n"}, false);
    return;
  }
  ServerRequest req;
  req.method = line.substr(0, s1);
  std::string target = line.substr(s1 + 1, s2 - s1 - 1);
  auto q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) req.query = target.substr(q + 1);
  const bool head_only = req.method == "HEAD";
  const bool post = req.method == "POST";
  if (req.method != "GET" && !head_only && !post) {
    SendResponse(fd, {405, text, "only GET, HEAD and POST are supported\n"}, false);
    return;
  }
  HttpHandler h;
  bool other_method = false;  // the path exists, but not for this method
  {
    std::lock_guard<std::mutex> l(mu_);
    auto& mine = post ? post_handlers_ : handlers_;
    auto& other = post ? handlers_ : post_handlers_;
    auto it = mine.find(req.path);
    if (it != mine.end()) h = it->second;
    else other_method = other.count(req.path) > 0;
  }
  if (!h) {
    if (other_method) SendResponse(fd, {405, text, req.method + " is not supported on " + req.path + "\n"}, head_only);
    else SendResponse(fd, {404, text, "404 page not found\n"}, head_only);
    return;
  }
  if (post) {
    if (!HeaderValue(head, "Transfer-Encoding").empty() && !EqualsIgnoreCase(HeaderValue(head, "Transfer-Encoding"), "identity")) {
      SendResponse(fd, {411, text, "request body must have a Content-Length (chunked is not supported)\n"}, false);
      return;
    }
    const std::string cl = HeaderValue(head, "Content-Length");
    size_t length = 0;
    if (!cl.empty()) {
      // Digits only: a sign, spaces or a suffix make the length ambiguous, so they are rejected.
      if (cl.size() > 19 || cl.find_first_not_of("0123456789") != std::string::npos) {
        SendResponse(fd, {400, text, "malformed Content-Length \"" + cl + "\"\n"}, false);
        return;
      }
      length = static_cast<size_t>(std::stoull(cl));
    }
    if (length > max_body_bytes_) {
      SendResponse(fd, {413, text, "request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                                       std::to_string(max_body_bytes_) + " bytes\n"}, false);
      return;
    }
    if (body.size() > length) {
      SendResponse(fd, {400, text, "more data than Content-Length (pipelining is not supported)\n"}, false);
      return;
    }
    // curl and some clients wait for this interim response before sending a large body.
    if (EqualsIgnoreCase(HeaderValue(head, "Expect"), "100-continue") && body.size() < length)
      WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    body.reserve(length);
    while (body.size() < length) {
      ssize_t n = ::recv(fd, buf, std::min(sizeof buf, length - body.size()), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // Timeout or the peer closed early: tell it (if it still listens) rather than run a truncated body.
        SendResponse(fd, {400, text, "request body shorter than Content-Length\n"}, false);
        return;
      }
      body.append(buf, static_cast<size_t>(n));
    }
    req.body = std::move(body);
  }
  ServerResponse resp;
  try {
    resp = h(req);
  } catch (const std::exception& e) {
    resp = {500, text, std::string("internal error: ") + e.what() + "\n"};
  }
  SendResponse(fd, resp, head_only);
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
