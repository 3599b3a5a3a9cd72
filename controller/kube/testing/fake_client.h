// An in-memory kube::Client for unit tests: the kube::Client front of the one fake API store (api_store.h,
// which holds every API server semantic the fakes model). This front adds what only a client has: per-call
// failure injection and a record of the calls, a raw handler, and watch streams that end when the handler
// returns false, CloseWatches() is called (OK) or ListOptions::canceller is cancelled (kCancelled).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "testing/api_store.h"

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
  // A front over a store another front (the HTTP fake API server) may share.
  explicit FakeClient(std::shared_ptr<ApiStore> store);
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
  ApiStore& store() { return *store_; }

 private:
  // Records the action under mu_, then calls the injector without it (the injector may call this client).
  std::optional<Status> Inject(const Action& a) TEPHRA_EXCLUDES(mu_);

  std::shared_ptr<ApiStore> store_;
  mutable core::Mutex mu_;
  core::CondVar cv_;  // the destructor waits on it for watches to end
  std::atomic<uint64_t> close_epoch_{0};
  std::atomic<bool> destroying_{false};
  int active_watches_ TEPHRA_GUARDED_BY(mu_) = 0;
  std::vector<Action> actions_ TEPHRA_GUARDED_BY(mu_);
  // Both callbacks are copied out under mu_ and called without it.
  std::function<std::optional<Status>(const Action&)> injector_ TEPHRA_GUARDED_BY(mu_);
  std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> raw_handler_
      TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::kube::testing
