// Fault-injecting fake API server: plain POSIX sockets, one thread per connection, `Connection: close`.
#include "fake_apiserver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

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
    case 405: return "Method Not Allowed";
    case 410: return "Gone";
    case 415: return "Unsupported Media Type";
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

// A collection path ("/api/v1/pods", "/apis/example.com/v1/widgets") as the store names resources. The strings
// outlive the ResourceInfo views taken from them.
struct Collection {
  std::string group, version, plural;
  kube::ResourceInfo Info(bool namespaced) const { return {group, version, "", plural, namespaced}; }
};

Collection ParseCollection(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  std::string p;
  while (std::getline(ss, p, '/'))
    if (!p.empty()) parts.push_back(p);
  if (parts.size() == 3 && parts[0] == "api") return {"", parts[1], parts[2]};
  if (parts.size() == 4 && parts[0] == "apis") return {parts[1], parts[2], parts[3]};
  std::abort();  // a test passed a path that is not a collection
}

std::string ErrorResponse(const core::Status& s) {
  int code = s.http_status() ? s.http_status() : 500;
  return Response(code, StatusBody(code, s.reason(), s.message()).dump());
}

const char* EventType(kube::WatchEvent::Type t) {
  switch (t) {
    case kube::WatchEvent::Type::kAdded: return "ADDED";
    case kube::WatchEvent::Type::kModified: return "MODIFIED";
    case kube::WatchEvent::Type::kDeleted: return "DELETED";
    case kube::WatchEvent::Type::kBookmark: return "BOOKMARK";
    case kube::WatchEvent::Type::kError: return "ERROR";
  }
  return "ERROR";
}

kube::DeleteOptions ParseDeleteOptions(const json& body) {
  kube::DeleteOptions o;
  if (!body.is_object()) return o;
  o.propagation_policy = body.value("propagationPolicy", "");
  if (body.contains("gracePeriodSeconds") && body["gracePeriodSeconds"].is_number_integer())
    o.grace_period_seconds = body["gracePeriodSeconds"].get<int64_t>();
  if (auto p = body.find("preconditions"); p != body.end() && p->is_object()) {
    if (p->contains("uid") && (*p)["uid"].is_string()) o.precondition_uid = (*p)["uid"].get<std::string>();
    if (p->contains("resourceVersion") && (*p)["resourceVersion"].is_string())
      o.precondition_resource_version = (*p)["resourceVersion"].get<std::string>();
  }
  return o;
}

}  // namespace

struct FakeApiServer::Request {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;
  std::string body;
  // Parsed resource path.
  std::string group, version, ns, name, sub, plural, verb;
  kube::ResourceInfo Info() const { return {group, version, "", plural, !ns.empty()}; }
};

FakeApiServer::FakeApiServer() : FakeApiServer(std::make_shared<kube::testing::ApiStore>()) {}
FakeApiServer::FakeApiServer(std::shared_ptr<kube::testing::ApiStore> store) : store_(std::move(store)) {}
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
  store_->Wake();
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(conn_mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    threads = std::move(conn_threads_);
  }
  store_->Wake();
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
  if (parts.size() >= 2 && parts[0] == "api") {
    req.version = parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    req.group = parts[1];
    req.version = parts[2];
    i = 3;
  } else {
    SendAll(fd, Response(404, StatusBody(404, "NotFound", "no such path " + req.path).dump()));
    return;
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(i), parts.end());
  // "namespaces/x/<plural>/..." is a namespaced path; "namespaces/x" and "namespaces/x/status" name a Namespace.
  if (rest.size() >= 3 && rest[0] == "namespaces" && !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
    req.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty()) {
    SendAll(fd, Response(404, StatusBody(404, "NotFound", "no resource").dump()));
    return;
  }
  req.plural = rest[0];
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
    if (req.body.empty()) {
      *out = json::object();
      return true;
    }
    try {
      *out = json::parse(req.body);
      return true;
    } catch (const std::exception& e) {
      SendAll(fd, Response(400, StatusBody(400, "BadRequest", e.what()).dump()));
      return false;
    }
  };
  kube::testing::ApiStore& store = *store_;
  const kube::ResourceInfo info = req.Info();
  auto reply = [&](const core::StatusOr<json>& r, int ok_code) {
    SendAll(fd, r.ok() ? Response(ok_code, r->dump()) : ErrorResponse(r.status()));
  };
  auto query = [&](const char* k) {
    auto it = req.query.find(k);
    return it == req.query.end() ? std::string() : it->second;
  };
  if (req.verb == "list") {
    kube::ListOptions o;
    o.label_selector = query("labelSelector");
    o.field_selector = query("fieldSelector");
    o.continue_token = query("continue");
    o.resource_version = query("resourceVersion");
    if (std::string l = query("limit"); !l.empty()) o.limit = std::stoll(l);
    auto list = store.List(info, req.ns, o);
    if (!list.ok()) {
      SendAll(fd, ErrorResponse(list.status()));
      return;
    }
    json out = {{"kind", "List"}, {"apiVersion", "v1"},
                {"metadata", {{"resourceVersion", list->metadata.resource_version}}}, {"items", list->items}};
    if (!list->metadata.continue_token.empty()) {
      out["metadata"]["continue"] = list->metadata.continue_token;
      if (list->metadata.remaining_item_count) out["metadata"]["remainingItemCount"] = *list->metadata.remaining_item_count;
    }
    SendAll(fd, Response(200, out.dump()));
    return;
  }
  if (req.verb == "get") {
    reply(store.Get(info, req.ns, req.name, req.sub), 200);
    return;
  }
  json body;
  if (!parse_body(&body)) return;
  if (req.verb == "bind") {
    std::map<std::string, std::string> annotations;
    if (body.contains("metadata") && body["metadata"].is_object() && body["metadata"].contains("annotations")) {
      for (const auto& [k, v] : body["metadata"]["annotations"].items())
        if (v.is_string()) annotations[k] = v.get<std::string>();
    }
    std::string uid, node;
    if (body.contains("metadata") && body["metadata"].is_object()) uid = body["metadata"].value("uid", "");
    if (body.contains("target") && body["target"].is_object()) node = body["target"].value("name", "");
    core::Status s = store.Bind(req.ns, req.name, uid, node, annotations);
    SendAll(fd, s.ok() ? Response(201, StatusBody(201, "", "").dump()) : ErrorResponse(s));
    return;
  }
  if (req.verb == "evict") {
    core::Status s = store.Evict(req.ns, req.name, ParseDeleteOptions(body.value("deleteOptions", json::object())));
    SendAll(fd, s.ok() ? Response(201, StatusBody(201, "", "").dump()) : ErrorResponse(s));
    return;
  }
  if (req.verb == "create") {
    reply(store.Create(info, req.ns, body, req.sub), 201);
    return;
  }
  if (req.verb == "update") {
    if (body.is_object() && !body.contains("metadata")) body["metadata"] = json::object();
    if (body.is_object() && body["metadata"].is_object() && !body["metadata"].contains("name"))
      body["metadata"]["name"] = req.name;
    reply(store.Update(info, req.ns, body, req.sub), 200);
    return;
  }
  if (req.verb == "patch") {
    const std::string ct = req.headers["content-type"].substr(0, req.headers["content-type"].find(';'));
    kube::PatchType type;
    if (ct == "application/json-patch+json") {
      type = kube::PatchType::kJson;
    } else if (ct == "application/merge-patch+json") {
      type = kube::PatchType::kMerge;
    } else if (ct == "application/strategic-merge-patch+json") {
      type = kube::PatchType::kStrategicMerge;
    } else {
      SendAll(fd, Response(415, StatusBody(415, "UnsupportedMediaType", "patch content type " + ct).dump()));
      return;
    }
    reply(store.Patch(info, req.ns, req.name, type, body, req.sub), 200);
    return;
  }
  if (req.verb == "delete") {
    reply(store.Delete(info, req.ns, req.name, ParseDeleteOptions(body)), 200);
    return;
  }
  SendAll(fd, Response(405, StatusBody(405, "MethodNotAllowed", req.method).dump()));
}

json FakeApiServer::Put(const std::string& collection, const std::string& ns, json obj) {
  Collection c = ParseCollection(collection);
  return store_->Put(c.Info(!ns.empty()), ns, std::move(obj), /*keep_uid=*/true);
}

bool FakeApiServer::Remove(const std::string& collection, const std::string& ns, const std::string& name) {
  Collection c = ParseCollection(collection);
  return store_->Remove(c.Info(!ns.empty()), ns, name);
}

std::optional<json> FakeApiServer::Lookup(const std::string& collection, const std::string& ns, const std::string& name) {
  Collection c = ParseCollection(collection);
  return store_->Lookup(c.Info(!ns.empty()), ns, name);
}

int64_t FakeApiServer::current_rv() const { return store_->ResourceVersion(); }

void FakeApiServer::Compact() { store_->Compact(); }

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
  kube::ListOptions o;
  if (auto it = req.query.find("resourceVersion"); it != req.query.end()) o.resource_version = it->second;
  if (auto it = req.query.find("labelSelector"); it != req.query.end()) o.label_selector = it->second;
  if (auto it = req.query.find("fieldSelector"); it != req.query.end()) o.field_selector = it->second;
  const bool bookmarks = req.query.count("allowWatchBookmarks") && req.query["allowWatchBookmarks"] == "true";
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  if (req.query.count("timeoutSeconds") && !ignore_watch_timeout_)
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::stoi(req.query["timeoutSeconds"]));
  std::vector<kube::WatchEvent> batch;
  auto cursor = store_->OpenWatch(req.Info(), req.ns, o, &batch);
  const bool gone = !cursor.ok() && core::IsGone(cursor.status());
  if (!cursor.ok() && !(gone && gone_in_stream_)) {
    SendAll(fd, ErrorResponse(cursor.status()));
    return;
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
  if (gone) {  // a real API server whose watch cache moved on answers 200 and then the ERROR event
    send_error_410();
    return;
  }
  int sent = 0;
  auto next_bookmark = std::chrono::steady_clock::now() + bookmark_interval_;
  while (!stopping_) {
    for (const auto& e : batch) {
      if (fault && sent >= fault->after_events) break;
      json ev = {{"type", EventType(e.type)}, {"object", e.object}};
      if (!SendAll(fd, Chunk(ev.dump() + "\n"))) return;
      ++sent;
    }
    batch.clear();
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
                 {"object", {{"kind", "Bookmark"}, {"metadata", {{"resourceVersion", std::to_string(cursor->last)}}}}}};
      if (!SendAll(fd, Chunk(ev.dump() + "\n"))) return;
      next_bookmark = now + bookmark_interval_;
    }
    if (now >= deadline) {
      SendAll(fd, "0\r\n\r\n");
      return;
    }
    // Wakes at least every 200 ms so a connection DropWatches() reset is noticed at the next write.
    auto wake = std::min(deadline, bookmarks && bookmark_interval_.count() > 0 ? next_bookmark
                                                                                : now + std::chrono::milliseconds(200));
    core::Status s = store_->NextEvents(*cursor, &batch, wake, [this] { return stopping_.load(); });
    if (!s.ok()) {
      send_error_410();
      return;
    }
  }
}

}  // namespace tephra::fakeapi
