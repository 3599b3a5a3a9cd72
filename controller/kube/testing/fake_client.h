// An in-memory kube::Client for unit tests: a tiny API server without HTTP.
//
// What it models: objects stored as JSON by (group/plural, namespace, name); one global resourceVersion
// counter (like etcd) bumped on every write; uid/creationTimestamp/generation on create, generateName;
// 409 AlreadyExists on create; resourceVersion preconditions on Update (409 -> kAborted, reason Conflict);
// the status subresource (Update without subresource keeps the stored status, "status" only replaces it);
// merge and JSON patches (strategic merge is approximated by a merge patch); finalizers (Delete marks
// deletionTimestamp, the object goes away when the last finalizer is removed); Bind sets spec.nodeName
// (409 if already bound); Evict deletes the pod; List with label selectors (equality, !=, exists) and
// limit/continue paging; Watch replays history after the given resourceVersion, sends synthetic ADDED
// events for RV "" and streams live events until the handler returns false, CloseWatches() is called (OK) or
// ListOptions::canceller is cancelled (kCancelled);
// Compact() makes older resourceVersions answer 410 Gone.
// Tests can inject failures per call and inspect the recorded calls.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/kube/client.h"

namespace tephra::kube::testing {

struct Action {
  std::string verb;         // get list create update patch delete bind evict watch raw
  std::string resource;     // "pods", "leases.coordination.k8s.io"
  std::string ns;
  std::string name;
  std::string subresource;
  api::json body;           // create/update/patch payload
};

class FakeClient final : public Client {
 public:
  // `clock` stamps creationTimestamp/deletionTimestamp; nullptr = RealClock.
  explicit FakeClient(const core::Clock* clock = nullptr);
  ~FakeClient() override;

  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                     const std::string& subresource = "") override;
  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) override;
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") override;
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") override;
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name, PatchType type,
                       const json& patch, const std::string& subresource = "") override;
  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                const DeleteOptions& opts = {}) override;
  Status Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid,
              const std::string& node) override;
  Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts = {}) override;
  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
               const std::function<bool(WatchEvent&&)>& handler) override;
  // Calls the raw handler if one is set, else kUnimplemented.
  StatusOr<json> Raw(const std::string& method, const std::string& path, const json* body,
                     const std::string& content_type = "application/json") override;

  // --- test controls ---
  // Called before every operation; a returned error is returned by the call (which then has no effect).
  void SetFailureInjector(std::function<std::optional<Status>(const Action&)> f);
  void SetRawHandler(std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> f);
  // Ends every running Watch with OK (like a server-side timeout). New watches still work.
  void CloseWatches();
  // Forgets history up to the current resourceVersion: watches from an older RV get 410 Gone.
  void Compact();
  // Number of Watch calls currently streaming (tests poll this before producing events).
  int ActiveWatches() const;
  std::vector<Action> Actions() const;
  void ClearActions();
  int64_t CurrentResourceVersion() const;
  // Stores an object as-is (no hooks, no failure injection) - for seeding; still bumps RV and notifies.
  json Seed(const ResourceInfo& r, const json& obj);

 private:
  struct StoredEvent {
    int64_t rv;
    std::string resource;
    std::string ns;
    WatchEvent::Type type;
    json object;
    // For kModified: the object before the write. A watch with a selector turns a write that moves an object
    // out of (into) its selection into kDeleted (kAdded), as the API server's watch cache does.
    std::optional<json> before;
  };
  using ObjKey = std::tuple<std::string, std::string, std::string>;  // resource, ns, name

  std::optional<Status> Inject(const Action& a);
  json CreateLocked(const std::string& res, const ResourceInfo& r, const std::string& ns, json obj);
  void EmitLocked(const std::string& res, const std::string& ns, WatchEvent::Type t, const json& obj,
                  const json* before = nullptr);
  Status DeleteLocked(const std::string& res, const std::string& sns, const std::string& name,
                      const DeleteOptions& opts);
  json StoreUpdateLocked(const ObjKey& k, json obj, const json& old);
  std::string NowRfc3339() const;

  const core::Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<ObjKey, json> objects_;
  std::vector<StoredEvent> history_;
  int64_t rv_ = 0;
  int64_t compacted_rv_ = 0;
  int64_t uid_counter_ = 0;
  uint64_t close_epoch_ = 0;
  int active_watches_ = 0;
  bool destroying_ = false;
  std::vector<Action> actions_;
  std::function<std::optional<Status>(const Action&)> injector_;
  std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> raw_handler_;
};

// "plural" for core resources, "plural.group" otherwise.
std::string ResourceName(const ResourceInfo& r);

}  // namespace tephra::kube::testing
