// The controller loop: N workers take keys ("namespace/name") from a rate-limited WorkQueue and call a
// level-based Reconciler (controller-runtime's contract: the key carries no event data; read the current
// state from the cache or the API server).
//
// What happens to a key after Reconcile:
//   status OK, no requeue_after   -> Forget (backoff reset)                        result="success"
//   status OK, requeue_after = d  -> Forget, AddAfter(d)                           result="requeue_after"
//   error, terminal = false       -> AddRateLimited (5 ms·2^n .. 1000 s, 10 qps)   result="error"
//   error, terminal = true        -> Forget, never requeued, counted               result="terminal_error"
//   error and NumRequeues >= max_requeues -> on_max_requeues(key, status), Forget  result="max_requeues"
// Metrics: reconcile_total{controller,result}, reconcile_duration_seconds{controller},
// plus the queue's workqueue_*{name=controller}.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/rate_limiter.h"
#include "tephra/kube/workqueue.h"

namespace tephra::kube {

struct ReconcileResult {
  std::optional<Duration> requeue_after;
  core::Status status;
  bool terminal = false;

  static ReconcileResult Success() { return {}; }
  static ReconcileResult RequeueAfter(Duration d) { return {d, core::Status::OK(), false}; }
  // Retried with per-key exponential backoff.
  static ReconcileResult Error(core::Status s) { return {std::nullopt, std::move(s), false}; }
  // Not retried (bad spec, ...) but logged and counted.
  static ReconcileResult Terminal(core::Status s) { return {std::nullopt, std::move(s), true}; }
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  virtual ReconcileResult Reconcile(const std::string& key) = 0;
};

// Adapts a lambda.
class ReconcilerFunc final : public Reconciler {
 public:
  explicit ReconcilerFunc(std::function<ReconcileResult(const std::string&)> f) : f_(std::move(f)) {}
  ReconcileResult Reconcile(const std::string& key) override { return f_(key); }

 private:
  std::function<ReconcileResult(const std::string&)> f_;
};

struct ControllerOptions {
  std::string name;                    // metrics label and log field; required
  int workers = 1;
  const core::Clock* clock = nullptr;  // nullptr = RealClock
  metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  RateLimiterOptions rate_limits;
  // 0 = unlimited. When a retriable error occurs and the key has already been requeued this many times,
  // on_max_requeues runs instead of another requeue once a failing key was requeued this many times
  // (Volcano gives up on a job after 15; 0 gives up at the first failure). -1: retry for ever.
  int max_requeues = -1;
  std::function<void(const std::string& key, const core::Status& last_error)> on_max_requeues;
  bool start_timer_thread = true;      // see WorkQueueOptions; false for FakeClock tests
};

class Controller {
 public:
  // `reconciler` must outlive the controller.
  Controller(ControllerOptions opts, Reconciler* reconciler);
  ~Controller();  // Stop()
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void Enqueue(const std::string& key) { queue_.Add(key); }
  void EnqueueAfter(const std::string& key, Duration d) { queue_.AddAfter(key, d); }
  // Failures recorded for the key since its last success; a reconciler may read it to give up itself.
  int NumRequeues(const std::string& key) { return queue_.NumRequeues(key); }

  // Starts the worker threads. Calling it twice is kFailedPrecondition.
  core::Status Start();
  // Stops accepting keys, lets in-flight reconciles finish (drain), and joins the workers. Idempotent.
  void Stop();

  // Processes one ready key on the calling thread; false if none was ready. For single-threaded tests.
  bool ProcessNextForTest();

  WorkQueue& queue() { return queue_; }
  const std::string& name() const { return opts_.name; }

 private:
  void Worker();
  void Process(const std::string& key);

  ControllerOptions opts_;
  Reconciler* reconciler_;
  WorkQueue queue_;
  std::vector<std::thread> workers_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  metrics::CounterFamily* total_ = nullptr;
  metrics::Histogram* duration_ = nullptr;
};

// "namespace/name", or "name" for cluster-scoped objects (client-go MetaNamespaceKeyFunc).
std::string KeyOf(const api::json& obj);
std::string MakeKey(std::string_view ns, std::string_view name);
// Splits a key made by MakeKey.
void SplitKey(std::string_view key, std::string* ns, std::string* name);
// The key of the object's controller owner (ownerReferences entry with controller: true) when its kind is
// `owner_kind` (and, if non-empty, its apiVersion's group is `owner_group`); nullopt otherwise. Owners
// live in the object's namespace.
std::optional<std::string> ControllerOwnerKey(const api::json& obj, std::string_view owner_kind,
                                              std::string_view owner_group = "");

// Informer wiring. Handlers only enqueue keys (they run on the informer's thread and must stay short).
// They keep a reference to the controller: stop the informer before destroying the controller.

// Every add/update/delete of the controller's own kind enqueues the object's key. Every change is enqueued
// (resyncs included): reconcilers are level-based and the queue coalesces bursts.
template <typename T>
void EnqueueOwnKind(Controller& c, Informer<T>& informer) {
  informer.AddEventHandler({
      .on_add = [&c](const typename Informer<T>::Ptr& o) { c.Enqueue(o->metadata.Key()); },
      .on_update = [&c](const typename Informer<T>::Ptr&, const typename Informer<T>::Ptr& o) {
        c.Enqueue(o->metadata.Key());
      },
      .on_delete = [&c](const typename Informer<T>::Ptr& o) { c.Enqueue(o->metadata.Key()); },
  });
}

// The key of T's controlling owner when that owner is of kind `owner_kind` (same namespace, by
// Kubernetes' rule for namespaced owners); nullopt otherwise.
template <typename T>
std::optional<std::string> OwnerKeyOf(const T& obj, std::string_view owner_kind, std::string_view owner_group = "") {
  const api::OwnerReference* ref = obj.metadata.ControllerRef();
  if (!ref || ref->kind != owner_kind) return std::nullopt;
  if (!owner_group.empty()) {
    auto slash = ref->api_version.find('/');
    std::string_view group = slash == std::string::npos ? std::string_view() : std::string_view(ref->api_version).substr(0, slash);
    if (group != owner_group) return std::nullopt;
  }
  return MakeKey(obj.metadata.namespace_, ref->name);
}

// Every add/update/delete of an owned kind (e.g. Pods of a Job) enqueues its controller owner's key. On
// update both the old and the new owner are enqueued, in case the ownerReference changed.
template <typename T>
void EnqueueOwner(Controller& c, Informer<T>& informer, std::string owner_kind, std::string owner_group = "") {
  auto enqueue = [&c, owner_kind, owner_group](const T& o) {
    if (auto k = OwnerKeyOf(o, owner_kind, owner_group)) c.Enqueue(*k);
  };
  informer.AddEventHandler({
      .on_add = [enqueue](const typename Informer<T>::Ptr& o) { enqueue(*o); },
      .on_update = [enqueue](const typename Informer<T>::Ptr& old_obj, const typename Informer<T>::Ptr& o) {
        enqueue(*old_obj);
        enqueue(*o);
      },
      .on_delete = [enqueue](const typename Informer<T>::Ptr& o) { enqueue(*o); },
  });
}

}  // namespace tephra::kube
