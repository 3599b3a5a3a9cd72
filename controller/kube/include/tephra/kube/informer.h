// Informers: a list+watch reflector feeding a thread-safe, indexed cache of typed objects, with event handlers.
//
//   kube::InformerOptions opts;
//   opts.drop_unknown_fields = true;  // a read-only cache: ~6.5 KB per pod instead of ~8.3 KB (bench/RESULTS.md)
//   auto pods = std::make_shared<kube::Informer<api::Pod>>(client, opts);
//   pods->AddIndexer(kube::kIndexOwnerUid, kube::OwnerUidIndexer<api::Pod>());
//   pods->AddEventHandler({.on_add = ..., .on_update = ..., .on_delete = ...});
//   pods->Start();
//   if (!pods->WaitForSync(deadline)) ...;
//   for (const auto& p : pods->ByIndex(kube::kIndexOwnerUid, job_uid)) ...
//
// Semantics (client-go's reflector + shared informer; docs/failure-scenarios.md, "List and watch" and "Resync"):
//  - List first with resourceVersion "0" (watch cache), paged; then watch from the list's RV with
//    allowWatchBookmarks and timeoutSeconds random in [300, 600].
//  - A dropped or ended watch re-watches from the last RV seen (bookmarks advance it) with backoff 800 ms -> 30 s;
//    no relist. A 410 (HTTP or in-stream ERROR) relists with resourceVersion "" and the difference to the cache
//    is delivered as adds/updates/deletes (vanished objects become deletes); stats().relists_after_410 counts it.
//  - Handlers see every change once: a duplicate (same key, same resourceVersion) is dropped. They never see
//    BOOKMARK events. Handlers run on the informer's thread, one at a time, after the cache was updated; keep
//    them short (enqueue a key).
//  - Cached objects are immutable `shared_ptr<const T>`; never modify one, copy it first.
//  - Before decode, a transform hook runs on the JSON (default: strip managedFields/selfLink). With
//    drop_unknown_fields, `DropUnknown(T*)` (where tephra::api provides it, e.g. Pod and Node) clears every
//    `extra` after decode: use only for caches that never write objects back.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <typeindex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/api/meta.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"

namespace tephra::kube {

// Well-known index names.
inline constexpr const char* kIndexNamespace = "namespace";
inline constexpr const char* kIndexOwnerUid = "owner-uid";  // every ownerReference uid

struct InformerOptions {
  std::string namespace_;  // "" = all namespaces (or a cluster-scoped kind)
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // 0 = no resync. A resync replays the cache through on_update(obj, obj); it never relists.
  std::chrono::milliseconds resync_period{0};
  // Runs on each object's JSON before decode. Default (unset): api::StripForCache.
  std::function<void(json*)> transform;
  bool drop_unknown_fields = false;
  // Knobs mostly for tests; defaults follow client-go v1.20.
  int min_watch_timeout_seconds = 300;
  int max_watch_timeout_seconds = 600;
  std::chrono::milliseconds backoff_initial{800};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(30)};
};

// Counters, readable at any time.
struct ReflectorStats {
  std::atomic<int64_t> lists{0};              // full lists (initial + relists)
  std::atomic<int64_t> relists_after_410{0};
  std::atomic<int64_t> watches{0};            // watch requests started
  std::atomic<int64_t> watch_errors{0};       // watches that ended with an error other than 410
  std::atomic<int64_t> events{0};             // object events applied (not bookmarks)
  std::atomic<int64_t> duplicates_dropped{0};
  std::atomic<int64_t> decode_errors{0};
};

// Receives what the reflector reads. Implemented by Informer<T>; exposed for tests.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A complete list (initial or relist). The sink diffs it against its cache.
  virtual void Replace(std::vector<json>&& items) = 0;
  // One ADDED/MODIFIED/DELETED event (never BOOKMARK/ERROR).
  virtual void Apply(WatchEvent::Type type, json&& object) = 0;
  // Called once after the first successful list was replaced.
  virtual void MarkSynced() = 0;
};

// The list+watch loop (controller/kube/src/informer/reflector.cc). Not templated: works on JSON.
class Reflector {
 public:
  Reflector(ClientPtr client, const ResourceInfo& resource, const InformerOptions& opts, ReflectorSink* sink);
  ~Reflector();
  // Runs until Stop(); call from a dedicated thread.
  void Run() TEPHRA_EXCLUDES(mu_);
  // Thread-safe, idempotent; aborts an in-flight watch.
  void Stop() TEPHRA_EXCLUDES(mu_);
  const ReflectorStats& stats() const { return stats_; }
  ReflectorStats& mutable_stats() { return stats_; }
  std::string last_resource_version() const TEPHRA_EXCLUDES(mu_);
  const ResourceInfo& resource() const { return resource_; }

 private:
  Status ListAndReplace(const std::string& rv) TEPHRA_EXCLUDES(mu_);
  Status WatchOnce() TEPHRA_EXCLUDES(mu_);
  bool SleepUnlessStopped(std::chrono::milliseconds d) TEPHRA_EXCLUDES(mu_);

  ClientPtr client_;
  ResourceInfo resource_;
  InformerOptions opts_;
  ReflectorSink* sink_;
  ReflectorStats stats_;
  mutable core::Mutex mu_;
  core::CondVar cv_;  // SleepUnlessStopped waiting for Stop()
  bool stopped_ TEPHRA_GUARDED_BY(mu_) = false;
  std::string last_rv_ TEPHRA_GUARDED_BY(mu_);
  std::shared_ptr<WatchCanceller> canceller_ TEPHRA_GUARDED_BY(mu_);
};

// Type-independent part of every informer: the thread, sync state, stop.
class InformerBase : public ReflectorSink {
 public:
  InformerBase(ClientPtr client, const ResourceInfo& resource, InformerOptions opts);
  ~InformerBase() override;
  InformerBase(const InformerBase&) = delete;
  InformerBase& operator=(const InformerBase&) = delete;

  // Starts the reflector (and resync) threads. Idempotent.
  void Start() TEPHRA_EXCLUDES(run_mu_);
  // Stops and joins. Idempotent; also called by the destructor of the concrete informer.
  void Stop() TEPHRA_EXCLUDES(run_mu_);
  bool HasSynced() const { return synced_.load(); }
  // Blocks until synced or the deadline passes; returns HasSynced().
  bool WaitForSync(std::chrono::steady_clock::time_point deadline) const TEPHRA_EXCLUDES(sync_mu_);
  const ReflectorStats& stats() const { return reflector_.stats(); }
  const ResourceInfo& resource() const { return reflector_.resource(); }
  const InformerOptions& options() const { return opts_; }
  void MarkSynced() override TEPHRA_EXCLUDES(sync_mu_);

 protected:
  virtual void Resync() = 0;
  ReflectorStats& counters() { return reflector_.mutable_stats(); }
  // Prepares raw JSON for decode (transform hook or default strip).
  void Transform(json* j) const;

 private:
  InformerOptions opts_;
  Reflector reflector_;
  // Atomic so HasSynced() needs no lock; sync_mu_ only orders MarkSynced's notify against WaitForSync's wait.
  std::atomic<bool> synced_{false};
  mutable core::Mutex sync_mu_;
  mutable core::CondVar sync_cv_;
  core::Mutex run_mu_;
  bool running_ TEPHRA_GUARDED_BY(run_mu_) = false;
  bool stop_resync_ TEPHRA_GUARDED_BY(run_mu_) = false;
  core::CondVar resync_cv_;  // the resync thread waiting out the period or Stop()
  std::thread reflector_thread_ TEPHRA_GUARDED_BY(run_mu_);
  std::thread resync_thread_ TEPHRA_GUARDED_BY(run_mu_);
};

namespace internal {
template <typename T>
concept HasDropUnknown = requires(T* t) { DropUnknown(t); };
}  // namespace internal

template <typename T>
class Informer : public InformerBase {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add;
    std::function<void(const Ptr& old_obj, const Ptr& new_obj)> on_update;
    std::function<void(const Ptr&)> on_delete;
  };
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  explicit Informer(ClientPtr client, InformerOptions opts = {})
      : InformerBase(std::move(client), T::Resource(), std::move(opts)) {
    AddIndexer(kIndexNamespace, [](const T& o) { return std::vector<std::string>{o.metadata.namespace_}; });
  }
  ~Informer() override { Stop(); }

  // Adds an index. Call before Start() (objects already cached are indexed too, under the lock).
  void AddIndexer(const std::string& name, IndexFunc fn) TEPHRA_EXCLUDES(mu_) {
    core::WriterMutexLock lock(mu_);
    auto& idx = indices_[name];
    idx.fn = std::move(fn);
    for (const auto& [key, obj] : items_) IndexAdd(idx, key, *obj);
  }
  // Registers handlers; objects already in the cache are delivered to the new handlers as adds.
  void AddEventHandler(Handlers h) TEPHRA_EXCLUDES(dispatch_mu_) {
    core::MutexLock dispatch(dispatch_mu_);
    std::vector<Ptr> existing = List();
    handlers_.push_back(std::move(h));
    for (const auto& o : existing)
      if (handlers_.back().on_add) handlers_.back().on_add(o);
  }

  // Cache reads; thread-safe.
  Ptr Get(const std::string& key) const TEPHRA_EXCLUDES(mu_) {
    core::ReaderMutexLock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }
  Ptr Get(const std::string& ns, const std::string& name) const { return Get(ns.empty() ? name : ns + "/" + name); }
  std::vector<Ptr> List() const TEPHRA_EXCLUDES(mu_) {
    core::ReaderMutexLock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const TEPHRA_EXCLUDES(mu_) {
    core::ReaderMutexLock lock(mu_);
    std::vector<Ptr> out;
    auto ii = indices_.find(index);
    if (ii == indices_.end()) return out;
    auto vi = ii->second.values.find(value);
    if (vi == ii->second.values.end()) return out;
    for (const auto& key : vi->second) {
      auto it = items_.find(key);
      if (it != items_.end()) out.push_back(it->second);
    }
    return out;
  }
  std::vector<Ptr> ListNamespace(const std::string& ns) const { return ByIndex(kIndexNamespace, ns); }
  std::vector<std::string> Keys() const TEPHRA_EXCLUDES(mu_) {
    core::ReaderMutexLock lock(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }
  size_t Size() const TEPHRA_EXCLUDES(mu_) {
    core::ReaderMutexLock lock(mu_);
    return items_.size();
  }

  // ReflectorSink.
  void Replace(std::vector<json>&& items) override TEPHRA_EXCLUDES(dispatch_mu_, mu_) {
    std::unordered_map<std::string, Ptr> fresh;
    fresh.reserve(items.size());
    for (auto& j : items) {
      Ptr p = DecodeObject(std::move(j));
      if (p) fresh[p->metadata.Key()] = std::move(p);
    }
    items.clear();
    std::vector<Ptr> added, deleted;
    std::vector<std::pair<Ptr, Ptr>> updated;
    {
      core::WriterMutexLock lock(mu_);
      for (auto it = items_.begin(); it != items_.end();) {
        if (!fresh.count(it->first)) {
          IndexRemove(it->first, *it->second);
          deleted.push_back(std::move(it->second));
          it = items_.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& [key, obj] : fresh) {
        auto it = items_.find(key);
        if (it == items_.end()) {
          IndexAddAll(key, *obj);
          added.push_back(obj);
          items_.emplace(key, std::move(obj));
        } else if (it->second->metadata.resource_version != obj->metadata.resource_version) {
          IndexRemove(key, *it->second);
          IndexAddAll(key, *obj);
          updated.emplace_back(it->second, obj);
          it->second = std::move(obj);
        }
      }
    }
    core::MutexLock dispatch(dispatch_mu_);
    for (const auto& o : deleted) Dispatch(WatchEvent::Type::kDeleted, nullptr, o);
    for (const auto& o : added) Dispatch(WatchEvent::Type::kAdded, nullptr, o);
    for (const auto& [o, n] : updated) Dispatch(WatchEvent::Type::kModified, o, n);
  }

  void Apply(WatchEvent::Type type, json&& object) override TEPHRA_EXCLUDES(dispatch_mu_, mu_) {
    Ptr obj = DecodeObject(std::move(object));
    if (!obj) return;
    const std::string key = obj->metadata.Key();
    Ptr old;
    {
      core::WriterMutexLock lock(mu_);
      auto it = items_.find(key);
      if (type == WatchEvent::Type::kDeleted) {
        if (it == items_.end()) return;  // already gone (e.g. seen deleted by a relist)
        old = std::move(it->second);
        IndexRemove(key, *old);
        items_.erase(it);
      } else {
        if (it != items_.end()) {
          if (it->second->metadata.resource_version == obj->metadata.resource_version) {
            counters().duplicates_dropped++;
            return;
          }
          old = it->second;
          IndexRemove(key, *old);
          it->second = obj;
        } else {
          items_.emplace(key, obj);
        }
        IndexAddAll(key, *obj);
      }
    }
    core::MutexLock dispatch(dispatch_mu_);
    if (type == WatchEvent::Type::kDeleted) Dispatch(type, nullptr, old);
    else if (old) Dispatch(WatchEvent::Type::kModified, old, obj);
    else Dispatch(WatchEvent::Type::kAdded, nullptr, obj);
  }

  // Decodes one object as the cache would (transform, decode, optional DropUnknown). Null on decode error.
  Ptr DecodeObject(json&& j) {
    Transform(&j);
    auto obj = std::make_shared<T>();
    using api::Decode;
    Status s = Decode(j, obj.get());
    j = json();  // free the DOM before the next object is decoded
    if (!s.ok()) {
      counters().decode_errors++;
      return nullptr;
    }
    if constexpr (internal::HasDropUnknown<T>) {
      if (options().drop_unknown_fields) DropUnknown(obj.get());
    }
    return obj;
  }

 protected:
  void Resync() override TEPHRA_EXCLUDES(dispatch_mu_) {
    core::MutexLock dispatch(dispatch_mu_);
    for (const auto& o : List()) Dispatch(WatchEvent::Type::kModified, o, o);
  }

 private:
  struct Index {
    IndexFunc fn;
    std::unordered_map<std::string, std::set<std::string>> values;
  };
  void IndexAdd(Index& idx, const std::string& key, const T& obj) TEPHRA_REQUIRES(mu_) {
    for (auto& v : idx.fn(obj)) idx.values[v].insert(key);
  }
  void IndexAddAll(const std::string& key, const T& obj) TEPHRA_REQUIRES(mu_) {
    for (auto& [name, idx] : indices_) IndexAdd(idx, key, obj);
  }
  void IndexRemove(const std::string& key, const T& obj) TEPHRA_REQUIRES(mu_) {
    for (auto& [name, idx] : indices_) {
      for (const auto& v : idx.fn(obj)) {
        auto it = idx.values.find(v);
        if (it == idx.values.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) idx.values.erase(it);
      }
    }
  }
  void Dispatch(WatchEvent::Type type, const Ptr& old_obj, const Ptr& obj) TEPHRA_REQUIRES(dispatch_mu_) {
    for (const auto& h : handlers_) {
      switch (type) {
        case WatchEvent::Type::kAdded:
          if (h.on_add) h.on_add(obj);
          break;
        case WatchEvent::Type::kModified:
          if (h.on_update) h.on_update(old_obj, obj);
          break;
        case WatchEvent::Type::kDeleted:
          if (h.on_delete) h.on_delete(obj);
          break;
        default:
          break;
      }
    }
  }

  // Readers (every reconciler's cache reads) share the cache; the reflector thread writes it.
  mutable core::SharedMutex mu_;
  std::unordered_map<std::string, Ptr> items_ TEPHRA_GUARDED_BY(mu_);
  std::map<std::string, Index> indices_ TEPHRA_GUARDED_BY(mu_);
  // Serializes handler calls (reflector thread vs resync thread). Taken before mu_ (AddEventHandler and Resync
  // read the cache under it), never while mu_ is held. Not recursive: a handler must not call AddEventHandler,
  // Replace or Apply on its own informer.
  core::Mutex dispatch_mu_;
  std::vector<Handlers> handlers_ TEPHRA_GUARDED_BY(dispatch_mu_);
};

// Index functions for common needs.
template <typename T>
typename Informer<T>::IndexFunc OwnerUidIndexer() {
  return [](const T& o) {
    std::vector<std::string> out;
    for (const auto& r : o.metadata.owner_references) out.push_back(r.uid);
    return out;
  };
}
// Indexes by the value of one label (objects without the label are not indexed).
template <typename T>
typename Informer<T>::IndexFunc LabelIndexer(std::string label_key) {
  return [label_key = std::move(label_key)](const T& o) {
    auto it = o.metadata.labels.find(label_key);
    if (it == o.metadata.labels.end()) return std::vector<std::string>{};
    return std::vector<std::string>{it->second};
  };
}
// The index name LabelIndexer is conventionally registered under.
inline std::string LabelIndexName(const std::string& label_key) { return "label:" + label_key; }

// Shares one informer per (kind, namespace, selectors) between the controllers of a process.
class SharedInformerFactory {
 public:
  explicit SharedInformerFactory(ClientPtr client, InformerOptions defaults = {})
      : client_(std::move(client)), defaults_(std::move(defaults)) {}
  ~SharedInformerFactory() { StopAll(); }

  // The informer for T; `opts` (defaults if omitted) must be the same for every caller sharing it. Informers
  // requested after StartAll() are started immediately.
  template <typename T>
  std::shared_ptr<Informer<T>> For(const InformerOptions* opts = nullptr) TEPHRA_EXCLUDES(mu_) {
    const InformerOptions& o = opts ? *opts : defaults_;
    std::string key = std::string(typeid(T).name()) + "|" + o.namespace_ + "|" + o.label_selector + "|" +
                      o.field_selector;
    core::MutexLock lock(mu_);
    auto it = informers_.find(key);
    if (it != informers_.end()) return std::static_pointer_cast<Informer<T>>(it->second);
    auto inf = std::make_shared<Informer<T>>(client_, o);
    informers_.emplace(key, inf);
    if (started_) inf->Start();
    return inf;
  }
  void StartAll() TEPHRA_EXCLUDES(mu_) {
    core::MutexLock lock(mu_);
    started_ = true;
    for (auto& [k, inf] : informers_) inf->Start();
  }
  // True when every informer synced before the deadline.
  bool WaitForSync(std::chrono::steady_clock::time_point deadline) TEPHRA_EXCLUDES(mu_) {
    std::vector<std::shared_ptr<InformerBase>> all;
    {
      core::MutexLock lock(mu_);
      for (auto& [k, inf] : informers_) all.push_back(inf);
    }
    for (auto& inf : all)
      if (!inf->WaitForSync(deadline)) return false;
    return true;
  }
  // Visits every informer (for metrics); `fn` must not call back into the factory.
  void ForEach(const std::function<void(const InformerBase&)>& fn) const TEPHRA_EXCLUDES(mu_) {
    core::MutexLock lock(mu_);
    for (const auto& [k, inf] : informers_) fn(*inf);
  }
  void StopAll() TEPHRA_EXCLUDES(mu_) {
    core::MutexLock lock(mu_);
    for (auto& [k, inf] : informers_) inf->Stop();
  }

 private:
  ClientPtr client_;
  InformerOptions defaults_;
  mutable core::Mutex mu_;
  bool started_ TEPHRA_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<InformerBase>> informers_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::kube
