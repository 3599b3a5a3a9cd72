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

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
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
                     const std::string& subresource = "") override TEPHRA_EXCLUDES(mu_);
  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) override
      TEPHRA_EXCLUDES(mu_);
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") override TEPHRA_EXCLUDES(mu_);
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") override TEPHRA_EXCLUDES(mu_);
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name, PatchType type,
                       const json& patch, const std::string& subresource = "") override TEPHRA_EXCLUDES(mu_);
  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                const DeleteOptions& opts = {}) override TEPHRA_EXCLUDES(mu_);
  Status Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid, const std::string& node,
              const std::map<std::string, std::string>& annotations = {}) override TEPHRA_EXCLUDES(mu_);
  Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts = {}) override
      TEPHRA_EXCLUDES(mu_);
  // The handler runs without mu_ held, so it may call back into this client.
  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
               const std::function<bool(WatchEvent&&)>& handler) override TEPHRA_EXCLUDES(mu_);
  // Calls the raw handler if one is set, else kUnimplemented.
  StatusOr<json> Raw(const std::string& method, const std::string& path, const json* body,
                     const std::string& content_type = "application/json") override TEPHRA_EXCLUDES(mu_);

  // --- test controls ---
  // Called before every operation; a returned error is returned by the call (which then has no effect).
  void SetFailureInjector(std::function<std::optional<Status>(const Action&)> f) TEPHRA_EXCLUDES(mu_);
  void SetRawHandler(std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> f)
      TEPHRA_EXCLUDES(mu_);
  // Ends every running Watch with OK (like a server-side timeout). New watches still work.
  void CloseWatches() TEPHRA_EXCLUDES(mu_);
  // Forgets history up to the current resourceVersion: watches from an older RV get 410 Gone.
  void Compact() TEPHRA_EXCLUDES(mu_);
  // Number of Watch calls currently streaming (tests poll this before producing events).
  int ActiveWatches() const TEPHRA_EXCLUDES(mu_);
  std::vector<Action> Actions() const TEPHRA_EXCLUDES(mu_);
  void ClearActions() TEPHRA_EXCLUDES(mu_);
  int64_t CurrentResourceVersion() const TEPHRA_EXCLUDES(mu_);
  // Stores an object as-is (no hooks, no failure injection) - for seeding; still bumps RV and notifies.
  json Seed(const ResourceInfo& r, const json& obj) TEPHRA_EXCLUDES(mu_);

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

  // Records the action under mu_, then calls the injector without it (the injector may call this client).
  std::optional<Status> Inject(const Action& a) TEPHRA_EXCLUDES(mu_);
  json CreateLocked(const std::string& res, const ResourceInfo& r, const std::string& ns, json obj)
      TEPHRA_REQUIRES(mu_);
  void EmitLocked(const std::string& res, const std::string& ns, WatchEvent::Type t, const json& obj,
                  const json* before = nullptr) TEPHRA_REQUIRES(mu_);
  Status DeleteLocked(const std::string& res, const std::string& sns, const std::string& name,
                      const DeleteOptions& opts) TEPHRA_REQUIRES(mu_);
  json StoreUpdateLocked(const ObjKey& k, json obj, const json& old) TEPHRA_REQUIRES(mu_);
  std::string NowRfc3339() const;

  const core::Clock& clock_;
  mutable core::Mutex mu_;
  core::CondVar cv_;  // watches wait on it for events, CloseWatches or cancellation; the destructor for watches to end
  std::map<ObjKey, json> objects_ TEPHRA_GUARDED_BY(mu_);
  std::vector<StoredEvent> history_ TEPHRA_GUARDED_BY(mu_);
  int64_t rv_ TEPHRA_GUARDED_BY(mu_) = 0;
  int64_t compacted_rv_ TEPHRA_GUARDED_BY(mu_) = 0;
  int64_t uid_counter_ TEPHRA_GUARDED_BY(mu_) = 0;
  uint64_t close_epoch_ TEPHRA_GUARDED_BY(mu_) = 0;
  int active_watches_ TEPHRA_GUARDED_BY(mu_) = 0;
  bool destroying_ TEPHRA_GUARDED_BY(mu_) = false;
  std::vector<Action> actions_ TEPHRA_GUARDED_BY(mu_);
  // Both callbacks are copied out under mu_ and called without it.
  std::function<std::optional<Status>(const Action&)> injector_ TEPHRA_GUARDED_BY(mu_);
  std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> raw_handler_
      TEPHRA_GUARDED_BY(mu_);
};

// "plural" for core resources, "plural.group" otherwise.
std::string ResourceName(const ResourceInfo& r);

}  // namespace tephra::kube::testing
