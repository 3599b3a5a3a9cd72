// The Kubernetes REST client every Tephra role uses. This header is the contract: it exposes no
// cpprestsdk, Boost or OpenSSL type, so reconcilers and webhooks can depend on it freely (layering).
//
// Error mapping (one table, controller/kube/src/rest/status_mapping.cc):
//   404 -> kNotFound; 409 on create -> kAlreadyExists, other 409 -> kAborted (re-read and redo);
//   410 -> kOutOfRange + IsGone(); 422/400 -> kInvalidArgument; 401 -> kUnauthenticated;
//   403 -> kPermissionDenied; 429 and 5xx, timeouts, resets -> kUnavailable with retry_after().
// The Kubernetes Status body's `message` becomes the Status message; its `reason` is kept in reason().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"
#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"

namespace tephra::kube {

using api::json;
using api::ResourceInfo;
using core::Status;
using core::StatusOr;

// Lets another thread abort a blocking Watch promptly (Informer::Stop, tests). The transport registers how to
// abort its in-flight stream; Cancel() runs that callback (or it runs at registration if already cancelled).
class WatchCanceller {
 public:
  void Cancel();
  bool cancelled() const;
  // Returns false (and does not keep cb) when already cancelled: the caller must not start the stream.
  bool SetCallback(std::function<void()> cb);
  void ClearCallback();

 private:
  mutable core::Mutex mu_;
  bool cancelled_ TEPHRA_GUARDED_BY(mu_) = false;
  std::function<void()> cb_ TEPHRA_GUARDED_BY(mu_);
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;              // 0 = server default (no paging)
  std::string continue_token;
  std::string resource_version;   // "" = quorum read, "0" = watch cache
  std::optional<int> timeout_seconds;
  bool allow_watch_bookmarks = false;
  // Watch only: aborts the stream from another thread (Watch then returns kCancelled).
  std::shared_ptr<WatchCanceller> canceller;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Foreground", "Background", "Orphan"
  std::optional<int64_t> grace_period_seconds;
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

struct ObjectList {
  api::ListMeta metadata;
  std::vector<json> items;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  json object;
};

// Thread-safe; one instance is shared by all threads of a process. Every call is subject to the
// client-side QPS/burst limiter, a per-request timeout and bounded retries of kUnavailable (429 honours
// Retry-After, at most 10 tries), and returns a Status, never throws.
class Client {
 public:
  virtual ~Client() = default;

  virtual StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                             const std::string& subresource = "") = 0;
  // One page; use ListAll() to follow `continue`.
  virtual StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) = 0;
  virtual StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                                const std::string& subresource = "") = 0;
  // PUT; obj's metadata.resourceVersion is the precondition (409 -> kAborted).
  virtual StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                                const std::string& subresource = "") = 0;
  virtual StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                               PatchType type, const json& patch, const std::string& subresource = "") = 0;
  virtual Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& opts = {}) = 0;

  // POST pods/{name}/binding. 409 ("already assigned") -> kAborted with reason "Conflict". `annotations` go on
  // the Binding, and the API server merges them into the pod in the same write (device plugins read the
  // cards the scheduler chose from them).
  virtual Status Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                      const std::string& node, const std::map<std::string, std::string>& annotations = {}) = 0;
  // POST pods/{name}/eviction (policy/v1beta1 on 1.20, policy/v1 where served).
  virtual Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts = {}) = 0;

  // Streams one watch request. `handler` is called for every event in order and may return false to stop.
  // Returns OK when the stream ended normally (server timeout, stop requested), IsGone() on 410 either as
  // HTTP status or as an in-stream ERROR event, kUnavailable on connection problems.
  virtual Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
                       const std::function<bool(WatchEvent&&)>& handler) = 0;

  // Raw request for anything else (discovery, leases in other groups...). `path` starts with "/". A 2xx body
  // that is not JSON (pods/{name}/log answers text/plain) is returned as a JSON string.
  virtual StatusOr<json> Raw(const std::string& method, const std::string& path, const json* body,
                             const std::string& content_type = "application/json") = 0;
};

using ClientPtr = std::shared_ptr<Client>;

// Follows `continue` tokens until the list is complete. On 410 for an expired continue token, restarts
// once from the beginning.
StatusOr<ObjectList> ListAll(Client& c, const ResourceInfo& r, const std::string& ns, ListOptions opts);

// Typed helpers over any kind T of tephra::api (see api/meta.h for the shape of T).
template <typename T>
StatusOr<T> GetAs(Client& c, const std::string& ns, const std::string& name) {
  auto j = c.Get(T::Resource(), ns, name);
  if (!j.ok()) return j.status();
  return api::FromJson<T>(*j);
}
template <typename T>
StatusOr<T> CreateAs(Client& c, const T& obj) {
  auto j = c.Create(T::Resource(), obj.metadata.namespace_, api::ToJson(obj));
  if (!j.ok()) return j.status();
  return api::FromJson<T>(*j);
}
template <typename T>
StatusOr<T> UpdateAs(Client& c, const T& obj, const std::string& subresource = "") {
  auto j = c.Update(T::Resource(), obj.metadata.namespace_, api::ToJson(obj), subresource);
  if (!j.ok()) return j.status();
  return api::FromJson<T>(*j);
}

}  // namespace tephra::kube
