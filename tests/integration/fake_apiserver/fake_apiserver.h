// A small fault-injecting Kubernetes API server for integration tests (HTTP/1.1 on 127.0.0.1, no TLS): the HTTP
// front of the one fake API store (controller/kube/testing/api_store.h), which holds every API server semantic
// (resourceVersions and 409s, watches and 410, selectors, merge/JSON/strategic merge patches, subresources only
// where the kind serves them, finalizers). This front adds only HTTP: paths to store calls, chunked watches
// (timeoutSeconds, allowWatchBookmarks, 410 as HTTP status or in-stream), faults queued and consumed by the next
// matching request (see Fault), and a log of every request.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/api_store.h"

namespace tephra::fakeapi {

using json = nlohmann::json;

struct Fault {
  enum class Kind {
    kStatus,           // reply `status` (with Retry-After when retry_after_seconds >= 0) and a Status body
    kReset,            // close the connection without a response (RST)
    kTruncate,         // send headers announcing a longer body, half the body, then close
    kSlow,             // wait `delay` before serving normally
    kWatchError410,    // watch: send `after_events` events, then an in-stream ERROR 410 event
    kWatchDrop,        // watch: send `after_events` events, then reset the connection
    kWatchCutLine,     // watch: send `after_events` events, then half an event line, then close
  };
  Kind kind = Kind::kStatus;
  std::string verb;      // "list", "watch", "get", "create", "update", "patch", "delete", "bind", "" = any
  std::string resource;  // plural ("pods"), "" = any
  int status = 500;
  std::string reason;
  int retry_after_seconds = -1;
  std::chrono::milliseconds delay{0};
  int after_events = 0;
  int times = 1;         // how many matching requests it applies to
};

struct LoggedRequest {
  std::string method;
  std::string verb;      // as classified for faults
  std::string resource;  // plural
  std::string path;      // without query
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // lower-case names
  std::chrono::steady_clock::time_point at;
};

class FakeApiServer {
 public:
  FakeApiServer();
  // Serves a store another front (a kube::testing::FakeClient) may share.
  explicit FakeApiServer(std::shared_ptr<kube::testing::ApiStore> store);
  ~FakeApiServer();
  // Binds 127.0.0.1:0 and starts serving.
  void Start();
  void Stop();
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Store manipulation (as if another client wrote). `collection` is the collection path without namespace,
  // e.g. "/api/v1/pods" or "/apis/example.com/v1/widgets". Returns the stored object (with RV/uid set).
  json Put(const std::string& collection, const std::string& ns, json obj);
  bool Remove(const std::string& collection, const std::string& ns, const std::string& name);
  std::optional<json> Lookup(const std::string& collection, const std::string& ns, const std::string& name);
  int64_t current_rv() const;
  // Forgets history up to the current RV: watches from older RVs get 410 (HTTP or in-stream, see below).
  void Compact();
  // With true, a watch from a compacted RV gets HTTP 200 + an in-stream ERROR 410 (like a real apiserver
  // whose watch cache moved on); with false, HTTP 410 on the request.
  void set_gone_in_stream(bool v) { gone_in_stream_ = v; }
  // Bookmarks every `interval` on open watches that asked for them (0 = none).
  void set_bookmark_interval(std::chrono::milliseconds interval) { bookmark_interval_ = interval; }
  // When true, timeoutSeconds is ignored: watches stay open (quiet) until the client gives up.
  void set_ignore_watch_timeout(bool v) { ignore_watch_timeout_ = v; }

  // While paused, open watches deliver nothing (events queue up in the history): lets a test make changes and
  // Compact() them away before any watcher saw them.
  void set_watch_paused(bool v) { store_->SetWatchPaused(v); }
  kube::testing::ApiStore& store() { return *store_; }

  void AddFault(Fault f);
  std::vector<LoggedRequest> Requests() const;
  // Counts logged requests with the given verb/resource (and, when given, query key=value).
  int Count(const std::string& verb, const std::string& resource = "", const std::string& qkey = "",
            const std::optional<std::string>& qval = std::nullopt) const;
  // Number of currently open watch streams.
  int open_watches() const { return open_watches_.load(); }
  // Closes every open watch stream abruptly (as a server restart would).
  void DropWatches();

 private:
  struct Request;
  void AcceptLoop();
  void Serve(int fd);
  void Handle(int fd, Request& req);
  std::optional<Fault> TakeFault(const std::string& verb, const std::string& resource);
  void ServeWatch(int fd, Request& req, const std::optional<Fault>& fault);

  std::shared_ptr<kube::testing::ApiStore> store_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  mutable std::mutex conn_mu_;
  std::vector<std::thread> conn_threads_;
  std::set<int> conn_fds_;
  std::set<int> watch_fds_;

  mutable std::mutex mu_;  // faults_ and log_
  std::deque<Fault> faults_;
  std::vector<LoggedRequest> log_;
  std::atomic<bool> gone_in_stream_{true};
  std::atomic<bool> ignore_watch_timeout_{false};
  std::chrono::milliseconds bookmark_interval_{0};
  std::atomic<int> open_watches_{0};
};

}  // namespace tephra::fakeapi
