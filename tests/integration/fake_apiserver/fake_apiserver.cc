// Fault-injecting fake API server: plain POSIX sockets, one thread per connection, `Connection: close`.
#include "fake_apiserver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

namespace tephra::fakeapi {

namespace {

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void ResetClose(int fd) {
  struct linger l {1, 0};  // RST instead of FIN
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  ::shutdown(fd, SHUT_RDWR);
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    default: return "Status";
  }
}

std::string Response(int code, const std::string& body, const std::string& extra_headers = "") {
  std::ostringstream o;
  o << "HTTP/1.1 " << code << " " << Reason(code) << "\r\nContent-Type: application/json\r\nContent-Length: "
    << body.size() << "\r\nConnection: close\r\n" << extra_headers << "\r\n" << body;
  return o.str();
}

json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"code", code}, {"reason", reason},
          {"message", message}, {"metadata", json::object()}};
}

std::string Chunk(const std::string& data) {
  std::ostringstream o;
  o << std::hex << data.size() << "\r\n" << data << "\r\n";
  return o.str();
}

bool MatchLabels(const json& obj, const std::string& selector) {
  if (selector.empty()) return true;
  std::stringstream ss(selector);
  std::string term;
  while (std::getline(ss, term, ',')) {
    auto eq = term.find('=');
    if (eq == std::string::npos) return false;
    std::string k = term.substr(0, eq), v = term.substr(eq + 1);
    if (!v.empty() && v[0] == '=') v = v.substr(1);
    const json* labels = nullptr;
    if (obj.contains("metadata") && obj["metadata"].contains("labels")) labels = &obj["metadata"]["labels"];
    if (!labels || !labels->contains(k) || (*labels)[k] != v) return false;
  }
  return true;
}

}  // namespace

struct FakeApiServer::Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;
  std::string body;
  // Parsed resource path.
  std::string collection, ns, name, sub, plural, verb;
};

FakeApiServer::FakeApiServer() = default;
FakeApiServer::~FakeApiServer() { Stop(); }

void FakeApiServer::Start() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  ::listen(listen_fd_, 128);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

void FakeApiServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  cv_.notify_all();
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(conn_mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    threads = std::move(conn_threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void FakeApiServer::AcceptLoop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    int r = ::poll(&p, 1, 100);
    if (r <= 0) continue;
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard lock(conn_mu_);
    if (stopping_) {
      ::close(fd);
      break;
    }
    conn_fds_.insert(fd);
    conn_threads_.emplace_back([this, fd] {
      Serve(fd);
      {
        std::lock_guard l(conn_mu_);
        conn_fds_.erase(fd);
        watch_fds_.erase(fd);
      }
      ::close(fd);
    });
  }
}

void FakeApiServer::Serve(int fd) {
  std::string buf;
  char tmp[8192];
  size_t header_end;
  while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return;
    buf.append(tmp, static_cast<size_t>(n));
  }
  Request req;
  std::istringstream hs(buf.substr(0, header_end));
  std::string line;
  std::getline(hs, line);
  {
    std::istringstream rl(line);
    std::string target;
    rl >> req.method >> target;
    auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::stringstream qs(target.substr(q + 1));
      std::string kv;
      while (std::getline(qs, kv, '&')) {
        auto eq = kv.find('=');
        req.query[Unescape(kv.substr(0, eq))] = eq == std::string::npos ? "" : Unescape(kv.substr(eq + 1));
      }
    }
  }
  while (std::getline(hs, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto c = line.find(':');
    if (c == std::string::npos) continue;
    std::string v = line.substr(c + 1);
    while (!v.empty() && v[0] == ' ') v.erase(0, 1);
    req.headers[Lower(line.substr(0, c))] = v;
  }
  req.body = buf.substr(header_end + 4);
  size_t want = req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
  while (req.body.size() < want) {
    ssize_t n = ::recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return;
    req.body.append(tmp, static_cast<size_t>(n));
  }
  Handle(fd, req);
}

std::optional<Fault> FakeApiServer::TakeFault(const std::string& verb, const std::string& resource) {
  std::lock_guard lock(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((it->verb.empty() || it->verb == verb) && (it->resource.empty() || it->resource == resource)) {
      Fault f = *it;
      if (--it->times <= 0) faults_.erase(it);
      return f;
    }
  }
  return std::nullopt;
}

void FakeApiServer::Handle(int fd, Request& req) {
  // Parse /api/v1/... or /apis/g/v/...
  std::vector<std::string> parts;
  {
    std::stringstream ss(req.path);
    std::string p;
    while (std::getline(ss, p, '/'))
      if (!p.empty()) parts.push_back(p);
  }
  size_t i = 0;
  std::string prefix;
  if (parts.size() >= 2 && parts[0] == "api") {
    prefix = "/api/" + parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    prefix = "/apis/" + parts[1] + "/" + parts[2];
    i = 3;
  } else {
    SendAll(fd, Response(404, StatusBody(404, "NotFound", "no such path " + req.path).dump()));
    return;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    req.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty()) {
    SendAll(fd, Response(404, StatusBody(404, "NotFound", "no resource").dump()));
    return;
  }
  req.plural = rest[0];
  req.collection = prefix + "/" + rest[0];
  if (rest.size() > 1) req.name = rest[1];
  if (rest.size() > 2) req.sub = rest[2];
  bool watch = req.query.count("watch") && req.query["watch"] == "true";
  if (req.method == "GET") req.verb = watch ? "watch" : (req.name.empty() ? "list" : "get");
  else if (req.method == "POST") req.verb = req.sub == "binding" ? "bind" : req.sub == "eviction" ? "evict" : "create";
  else if (req.method == "PUT") req.verb = "update";
  else if (req.method == "PATCH") req.verb = "patch";
  else if (req.method == "DELETE") req.verb = "delete";
  {
    std::lock_guard lock(mu_);
    log_.push_back({req.method, req.verb, req.plural, req.path, req.query, req.headers, std::chrono::steady_clock::now()});
  }
  std::optional<Fault> fault = TakeFault(req.verb, req.plural);
  if (fault) {
    switch (fault->kind) {
      case Fault::Kind::kStatus: {
        std::string extra;
        if (fault->retry_after_seconds >= 0) extra = "Retry-After: " + std::to_string(fault->retry_after_seconds) + "\r\n";
        std::string reason = fault->reason.empty() ? std::string(Reason(fault->status)) : fault->reason;
        SendAll(fd, Response(fault->status, StatusBody(fault->status, reason, "injected").dump(), extra));
        return;
      }
      case Fault::Kind::kReset:
        ResetClose(fd);
        return;
      case Fault::Kind::kTruncate: {
        std::string body = json{{"kind", "Status"}, {"message", std::string(200, 'x')}}.dump();
        std::string r = Response(200, body);
        SendAll(fd, r.substr(0, r.size() - body.size() / 2));
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
      case Fault::Kind::kSlow:
        std::this_thread::sleep_for(fault->delay);
        fault.reset();
        break;
      default:
        break;  // watch faults are handled by ServeWatch
    }
  }
  if (req.verb == "watch") {
    ServeWatch(fd, req, fault);
    return;
  }
  auto parse_body = [&](json* out) {
    try {
      *out = json::parse(req.body);
      return true;
    } catch (const std::exception& e) {
      SendAll(fd, Response(400, StatusBody(400, "BadRequest", e.what()).dump()));
      return false;
    }
  };
  std::unique_lock lock(mu_);
  auto& coll = objects_[req.collection];
  const std::string key = req.ns + "/" + req.name;
  if (req.verb == "list") {
    std::vector<const json*> match;
    for (const auto& [k, obj] : coll)
      if ((req.ns.empty() || k.rfind(req.ns + "/", 0) == 0) && MatchLabels(obj, req.query["labelSelector"]))
        match.push_back(&obj);
    size_t offset = 0, limit = match.size();
    std::string rv = std::to_string(rv_);
    if (req.query.count("continue") && !req.query["continue"].empty()) {
      // token: "<offset>:<rv>"
      const std::string& t = req.query["continue"];
      auto c = t.find(':');
      offset = std::stoul(t.substr(0, c));
      rv = t.substr(c + 1);
    }
    if (req.query.count("limit")) limit = std::stoul(req.query["limit"]);
    json items = json::array();
    size_t end = std::min(match.size(), offset + limit);
    for (size_t k = offset; k < end; ++k) items.push_back(*match[k]);
    json list = {{"kind", "List"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}, {"items", items}};
    if (end < match.size()) list["metadata"]["continue"] = std::to_string(end) + ":" + rv;
    lock.unlock();
    SendAll(fd, Response(200, list.dump()));
    return;
  }
  if (req.verb == "get") {
    auto it = coll.find(key);
    std::string r = it == coll.end() ? Response(404, StatusBody(404, "NotFound", req.plural + " \"" + req.name + "\" not found").dump())
                                     : Response(200, it->second.dump());
    lock.unlock();
    SendAll(fd, r);
    return;
  }
  if (req.verb == "create") {
    lock.unlock();
    json obj;
    if (!parse_body(&obj)) return;
    std::string name = obj["metadata"].value("name", "");
    lock.lock();
    if (coll.count(req.ns + "/" + name)) {
      lock.unlock();
      SendAll(fd, Response(409, StatusBody(409, "AlreadyExists", req.plural + " \"" + name + "\" already exists").dump()));
      return;
    }
    if (!req.ns.empty()) obj["metadata"]["namespace"] = req.ns;
    json stored = Store(req.collection, req.ns, std::move(obj), "ADDED");
    lock.unlock();
    SendAll(fd, Response(201, stored.dump()));
    return;
  }
  if (req.verb == "update" || req.verb == "patch" || req.verb == "bind") {
    lock.unlock();
    json body;
    if (!parse_body(&body)) return;
    lock.lock();
    auto it = coll.find(key);
    if (it == coll.end()) {
      lock.unlock();
      SendAll(fd, Response(404, StatusBody(404, "NotFound", req.plural + " \"" + req.name + "\" not found").dump()));
      return;
    }
    json next;
    if (req.verb == "update") {
      std::string want = body["metadata"].value("resourceVersion", "");
      if (!want.empty() && want != it->second["metadata"].value("resourceVersion", "")) {
        lock.unlock();
        SendAll(fd, Response(409, StatusBody(409, "Conflict", "the object has been modified").dump()));
        return;
      }
      next = std::move(body);
      next["metadata"]["uid"] = it->second["metadata"]["uid"];
    } else if (req.verb == "bind") {
      if (it->second.contains("spec") && !it->second["spec"].value("nodeName", "").empty()) {
        lock.unlock();
        SendAll(fd, Response(409, StatusBody(409, "Conflict", "pod is already assigned").dump()));
        return;
      }
      next = it->second;
      next["spec"]["nodeName"] = body["target"]["name"];
    } else {
      next = it->second;
      try {
        if (req.headers["content-type"] == "application/json-patch+json") next = next.patch(body);
        else next.merge_patch(body);
      } catch (const std::exception& e) {
        lock.unlock();
        SendAll(fd, Response(422, StatusBody(422, "Invalid", e.what()).dump()));
        return;
      }
    }
    json stored = Store(req.collection, req.ns, std::move(next), "MODIFIED");
    lock.unlock();
    SendAll(fd, Response(req.verb == "bind" ? 201 : 200, req.verb == "bind" ? StatusBody(201, "", "").dump() : stored.dump()));
    return;
  }
  if (req.verb == "delete" || req.verb == "evict") {
    auto it = coll.find(key);
    if (it == coll.end()) {
      lock.unlock();
      SendAll(fd, Response(404, StatusBody(404, "NotFound", req.plural + " \"" + req.name + "\" not found").dump()));
      return;
    }
    json obj = it->second;
    coll.erase(it);
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    history_.push_back({rv_, req.collection, req.ns, "DELETED", obj});
    lock.unlock();
    cv_.notify_all();
    SendAll(fd, Response(200, req.verb == "evict" ? StatusBody(201, "", "").dump() : obj.dump()));
    return;
  }
  lock.unlock();
  SendAll(fd, Response(405, StatusBody(405, "MethodNotAllowed", req.method).dump()));
}

json FakeApiServer::Store(const std::string& collection, const std::string& ns, json obj, const std::string& type) {
  // mu_ held.
  auto& meta = obj["metadata"];
  if (!meta.contains("uid") || meta["uid"].get<std::string>().empty()) meta["uid"] = "uid-" + std::to_string(++uid_seq_);
  meta["resourceVersion"] = std::to_string(++rv_);
  if (!ns.empty()) meta["namespace"] = ns;
  std::string name = meta.value("name", "");
  objects_[collection][ns + "/" + name] = obj;
  history_.push_back({rv_, collection, ns, type, obj});
  cv_.notify_all();
  return obj;
}

json FakeApiServer::Put(const std::string& collection, const std::string& ns, json obj) {
  std::lock_guard lock(mu_);
  std::string name = obj["metadata"].value("name", "");
  bool exists = objects_[collection].count(ns + "/" + name) > 0;
  return Store(collection, ns, std::move(obj), exists ? "MODIFIED" : "ADDED");
}

bool FakeApiServer::Remove(const std::string& collection, const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  auto& coll = objects_[collection];
  auto it = coll.find(ns + "/" + name);
  if (it == coll.end()) return false;
  json obj = it->second;
  coll.erase(it);
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  history_.push_back({rv_, collection, ns, "DELETED", obj});
  cv_.notify_all();
  return true;
}

std::optional<json> FakeApiServer::Lookup(const std::string& collection, const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  auto& coll = objects_[collection];
  auto it = coll.find(ns + "/" + name);
  if (it == coll.end()) return std::nullopt;
  return it->second;
}

int64_t FakeApiServer::current_rv() const {
  std::lock_guard lock(mu_);
  return rv_;
}

void FakeApiServer::Compact() {
  std::lock_guard lock(mu_);
  compacted_rv_ = rv_;
  history_.clear();
}

void FakeApiServer::AddFault(Fault f) {
  std::lock_guard lock(mu_);
  faults_.push_back(std::move(f));
}

std::vector<LoggedRequest> FakeApiServer::Requests() const {
  std::lock_guard lock(mu_);
  return log_;
}

int FakeApiServer::Count(const std::string& verb, const std::string& resource, const std::string& qkey,
                         const std::optional<std::string>& qval) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& r : log_) {
    if (!verb.empty() && r.verb != verb) continue;
    if (!resource.empty() && r.resource != resource) continue;
    if (!qkey.empty()) {
      auto it = r.query.find(qkey);
      if (qval) {
        std::string have = it == r.query.end() ? "" : it->second;
        if (have != *qval) continue;
      } else if (it == r.query.end()) {
        continue;
      }
    }
    ++n;
  }
  return n;
}

void FakeApiServer::DropWatches() {
  std::lock_guard lock(conn_mu_);
  for (int fd : watch_fds_) ResetClose(fd);
}

void FakeApiServer::ServeWatch(int fd, Request& req, const std::optional<Fault>& fault) {
  int64_t from = 0;
  if (req.query.count("resourceVersion") && !req.query["resourceVersion"].empty())
    from = std::stoll(req.query["resourceVersion"]);
  const bool bookmarks = req.query.count("allowWatchBookmarks") && req.query["allowWatchBookmarks"] == "true";
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  if (req.query.count("timeoutSeconds") && !ignore_watch_timeout_)
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(req.query["timeoutSeconds"]));
  {
    std::unique_lock lock(mu_);
    if (from != 0 && from < compacted_rv_ && !gone_in_stream_) {
      lock.unlock();
      SendAll(fd, Response(410, StatusBody(410, "Expired", "too old resource version").dump()));
      return;
    }
  }
  if (!SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                   "Connection: close\r\n\r\n"))
    return;
  {
    std::lock_guard l(conn_mu_);
    watch_fds_.insert(fd);
  }
  open_watches_++;
  struct Dec {
    std::atomic<int>& n;
    ~Dec() { n--; }
  } dec{open_watches_};
  auto send_error_410 = [&] {
    json ev = {{"type", "ERROR"}, {"object", StatusBody(410, "Expired", "too old resource version")}};
    SendAll(fd, Chunk(ev.dump() + "\n"));
    SendAll(fd, "0\r\n\r\n");
  };
  {
    std::lock_guard lock(mu_);
    if (from != 0 && from < compacted_rv_) {
      send_error_410();
      return;
    }
  }
  int64_t last = from;
  if (from == 0) {
    // Watch without RV: real servers send the current state as ADDED; emulate for completeness.
    std::lock_guard lock(mu_);
    last = rv_;
  }
  int sent = 0;
  auto next_bookmark = std::chrono::steady_clock::now() + bookmark_interval_;
  while (!stopping_) {
    std::vector<Event> batch;
    {
      std::unique_lock lock(mu_);
      auto has_new = [&] {
        return stopping_ || (!watch_paused_ && !history_.empty() && history_.back().rv > last);
      };
      auto wake = std::min(deadline, bookmark_interval_.count() > 0 && bookmarks ? next_bookmark
                                                                                  : std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
      cv_.wait_until(lock, wake, has_new);
      for (const auto& e : history_) {
        if (watch_paused_) break;
        if (e.rv <= last) continue;
        last = e.rv;
        if (e.collection != req.collection) continue;
        if (!req.ns.empty() && e.ns != req.ns) continue;
        if (!MatchLabels(e.object, req.query["labelSelector"])) continue;
        batch.push_back(e);
      }
    }
    for (const auto& e : batch) {
      if (fault && sent >= fault->after_events) break;
      json ev = {{"type", e.type}, {"object", e.object}};
      if (!SendAll(fd, Chunk(ev.dump() + "\n"))) return;
      ++sent;
    }
    if (fault && sent >= fault->after_events) {
      if (fault->kind == Fault::Kind::kWatchError410) {
        send_error_410();
      } else if (fault->kind == Fault::Kind::kWatchDrop) {
        ResetClose(fd);
      } else if (fault->kind == Fault::Kind::kWatchCutLine) {
        SendAll(fd, Chunk("{\"type\":\"ADDED\",\"object\":{\"metadata\":"));
        ::shutdown(fd, SHUT_RDWR);
      }
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (bookmarks && bookmark_interval_.count() > 0 && now >= next_bookmark) {
      json ev = {{"type", "BOOKMARK"},
                 {"object", {{"kind", "Bookmark"}, {"metadata", {{"resourceVersion", std::to_string(last)}}}}}};
      if (!SendAll(fd, Chunk(ev.dump() + "\n"))) return;
      next_bookmark = now + bookmark_interval_;
    }
    if (now >= deadline) {
      SendAll(fd, "0\r\n\r\n");
      return;
    }
  }
}

}  // namespace tephra::fakeapi
