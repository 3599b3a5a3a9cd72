// The one in-memory API store behind both test fakes: FakeClient (the kube::Client front, fake_client.h) and the
// fault-injecting HTTP fake API server (the HTTP front, tests/integration/fake_apiserver). The API server's
// semantics live here once, so a unit test and an integration test cannot disagree about them.
//
// What it models:
// - objects as JSON by (resource, namespace, name), resource = "plural" or "plural.group"; one global
//   resourceVersion counter (like etcd) bumped on every write, no-op writes do not bump it;
// - create: uid, creationTimestamp, generation 1, generateName (deterministic suffix), 409 AlreadyExists;
// - update: a metadata.resourceVersion or metadata.uid in the body is a precondition (409 Conflict);
//   generation moves when anything outside metadata and status changes;
// - subresources only where the resource serves them (HasStatusSubresource): `status` on a resource without it
//   answers 404 as the real API server does, and a plain write of such a resource stores the status it carries;
//   on a resource with it, a plain write keeps the stored status and a `status` write changes only status;
//   pods/binding (409 when already bound) and pods/eviction;
// - patches: merge (RFC 7386), JSON patch (RFC 6902), strategic merge by the patchMergeKey table of the
//   built-in kinds tests touch (StrategicMergePatch); strategic merge on a custom resource answers 415;
// - delete: preconditions, finalizers (deletionTimestamp set, the object goes when the last finalizer does);
// - list: label selectors in the core's selector model (core/labels.h; equality, !=, exists, in, notin),
//   field selectors on dotted paths, limit/continue paging;
// - watch: history replay after a resourceVersion, synthetic ADDED for RV ""/"0", 410 Gone below the compaction
//   point (Compact), selector-aware MODIFIED that turns into ADDED/DELETED when an object moves in/out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/labels.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"

namespace tephra::kube::testing {

// "plural" for core resources, "plural.group" otherwise.
std::string ResourceName(const ResourceInfo& r);

// Whether `resource` (as ResourceName spells it) serves the status subresource; from crds/*.yaml for the
// Volcano kinds and the Kubernetes API for the built-in ones. Unknown resources (test CRDs) serve none.
bool HasStatusSubresource(const std::string& resource);

// A strategic merge patch of `original` by `patch` with the list merge keys of `resource` (a list without a
// merge key is replaced whole, as in Kubernetes); honours the `$patch: replace|delete` directives and
// `$deleteFromPrimitiveList/<field>`; `$setElementOrder` and `$retainKeys` are accepted and ignored.
// kInvalidArgument (422) for a malformed directive.
StatusOr<json> StrategicMergePatch(const std::string& resource, const json& original, const json& patch);

// A label selector string ("a=b,c!=d,e,!f,g in (x,y),h notin (z)") in the core's selector model; kInvalidArgument
// (400) when it does not parse.
StatusOr<core::LabelSelector> ParseSelector(const std::string& selector);

class ApiStore {
 public:
  // `clock` stamps creationTimestamp/deletionTimestamp; nullptr = RealClock.
  explicit ApiStore(const core::Clock* clock = nullptr);

  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                     const std::string& subresource = "") TEPHRA_EXCLUDES(mu_);
  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts)
      TEPHRA_EXCLUDES(mu_);
  // `subresource` "binding"/"eviction" on pods does what Bind/Evict do.
  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") TEPHRA_EXCLUDES(mu_);
  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource = "") TEPHRA_EXCLUDES(mu_);
  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name, PatchType type,
                       const json& patch, const std::string& subresource = "") TEPHRA_EXCLUDES(mu_);
  // Returns the object as last stored: gone, or marked for deletion while finalizers remain.
  StatusOr<json> Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& opts = {}) TEPHRA_EXCLUDES(mu_);
  Status Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid, const std::string& node,
              const std::map<std::string, std::string>& annotations = {}) TEPHRA_EXCLUDES(mu_);
  Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts = {}) TEPHRA_EXCLUDES(mu_);

  // --- as if another client wrote, without checks (seeding) ---
  // Creates, or replaces keeping uid and creationTimestamp; bumps the resourceVersion and notifies watches.
  // A created object gets a fresh uid unless `keep_uid` and the object carries one.
  json Put(const ResourceInfo& r, const std::string& ns, json obj, bool keep_uid = false) TEPHRA_EXCLUDES(mu_);
  // Removes at once, finalizers or not. False when absent.
  bool Remove(const ResourceInfo& r, const std::string& ns, const std::string& name) TEPHRA_EXCLUDES(mu_);
  std::optional<json> Lookup(const ResourceInfo& r, const std::string& ns, const std::string& name) const
      TEPHRA_EXCLUDES(mu_);
  int64_t ResourceVersion() const TEPHRA_EXCLUDES(mu_);
  // Forgets history up to the current resourceVersion: watches from an older one get 410 Gone.
  void Compact() TEPHRA_EXCLUDES(mu_);
  // While paused, watches receive nothing (events stay in the history): a test can make changes and Compact()
  // them away before any watcher saw them.
  void SetWatchPaused(bool paused) TEPHRA_EXCLUDES(mu_);

  // --- watches, for the fronts: OpenWatch once, then NextEvents until the front stops ---
  struct WatchCursor {
    std::string resource;
    std::string ns;  // "" = every namespace
    core::LabelSelector labels;
    core::LabelSelector fields;
    int64_t last = 0;  // events up to here were delivered
  };
  // 410 when opts.resource_version is below the compaction point, 400 for a bad one or a bad selector. For RV ""
  // or "0", `initial` gets a synthetic ADDED per object that exists now.
  StatusOr<WatchCursor> OpenWatch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
                                  std::vector<WatchEvent>* initial) TEPHRA_EXCLUDES(mu_);
  // Waits until the cursor has events, `wake()` returns true or `deadline` passes; appends the cursor's events
  // to `out` and advances it. 410 when the history the cursor needs was compacted away. `wake` runs with the
  // store's lock held: it may only read atomics.
  Status NextEvents(WatchCursor& c, std::vector<WatchEvent>* out, std::chrono::steady_clock::time_point deadline,
                    const std::function<bool()>& wake) TEPHRA_EXCLUDES(mu_);
  // Makes waiting NextEvents calls look at their `wake` again.
  void Wake() TEPHRA_EXCLUDES(mu_);

 private:
  using ObjKey = std::tuple<std::string, std::string, std::string>;  // resource, ns, name
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

  json CreateLocked(const std::string& res, const ResourceInfo& r, const std::string& ns, json obj,
                    bool keep_uid = false) TEPHRA_REQUIRES(mu_);
  void EmitLocked(const std::string& res, const std::string& ns, WatchEvent::Type t, const json& obj,
                  const json* before = nullptr) TEPHRA_REQUIRES(mu_);
  StatusOr<json> DeleteLocked(const ObjKey& k, const DeleteOptions& opts) TEPHRA_REQUIRES(mu_);
  json StoreUpdateLocked(const ObjKey& k, json obj, const json& old) TEPHRA_REQUIRES(mu_);
  Status BindLocked(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                    const std::string& node, const std::map<std::string, std::string>& annotations)
      TEPHRA_REQUIRES(mu_);
  static bool Matches(const WatchCursor& c, const std::string& res, const std::string& ns, const json& obj);
  std::string NowRfc3339() const;

  const core::Clock& clock_;
  mutable core::Mutex mu_;
  core::CondVar cv_;
  std::map<ObjKey, json> objects_ TEPHRA_GUARDED_BY(mu_);
  std::vector<StoredEvent> history_ TEPHRA_GUARDED_BY(mu_);
  int64_t rv_ TEPHRA_GUARDED_BY(mu_) = 0;
  int64_t compacted_rv_ TEPHRA_GUARDED_BY(mu_) = 0;
  int64_t uid_counter_ TEPHRA_GUARDED_BY(mu_) = 0;
  bool watch_paused_ TEPHRA_GUARDED_BY(mu_) = false;
};

}  // namespace tephra::kube::testing
