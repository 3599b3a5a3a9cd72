// Kubernetes core/v1 Events, recorded asynchronously with client-go's correlator rules (v1.20
// tools/record/events_cache.go):
//  * Spam filter: a token bucket per involved object (burst 25, one token per 5 minutes) so a hot
//    reconcile loop cannot flood the API server; excess events are dropped and counted.
//  * Aggregation: an event identical to one sent within the last 10 minutes (same object, type, reason,
//    message, source) increments `count` and `lastTimestamp` on the existing Event with a merge PATCH
//    instead of creating a new one.
//  * Names are `<object name>.<16 hex digits>`, a hash of the event's identity and its first timestamp, so
//    the same input always gives the same name.
// Event() never blocks: it appends to a bounded queue (dropping when full) that one thread drains.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"

namespace tephra::kube {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string field_path;
};

// From an object's JSON (apiVersion, kind, metadata).
ObjectReference ReferenceTo(const api::json& obj);
// From a typed tephra::api object.
template <typename T>
ObjectReference ReferenceTo(const T& obj) {
  return ObjectReference{T::Resource().ApiVersion(), std::string(T::Resource().kind), obj.metadata.namespace_,
                         obj.metadata.name, obj.metadata.uid, obj.metadata.resource_version, ""};
}

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component;  // source.component and reportingComponent, e.g. "tephra-controller"
  std::string host;       // source.host / reportingInstance ("" = hostname)
  const core::Clock* clock = nullptr;  // nullptr = RealClock
  size_t queue_capacity = 1000;
  int burst = 25;
  std::chrono::nanoseconds refill_interval = std::chrono::minutes(5);
  std::chrono::nanoseconds aggregation_window = std::chrono::minutes(10);
  size_t cache_size = 4096;  // objects / event identities remembered (LRU)
  bool start_thread = true;  // false: tests call ProcessPending() themselves
};

struct EventRecorderStats {
  uint64_t created = 0;
  uint64_t patched = 0;
  uint64_t dropped_queue_full = 0;
  uint64_t dropped_rate_limited = 0;
  uint64_t errors = 0;
};

class EventRecorder {
 public:
  EventRecorder(ClientPtr client, EventRecorderOptions opts);
  ~EventRecorder();  // Shutdown()
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Thread-safe, non-blocking. `reason` is UpperCamelCase ("Scheduled", "FailedCreatePod").
  void Event(const ObjectReference& obj, EventType type, std::string reason, std::string message)
      TEPHRA_EXCLUDES(mu_);

  // Processes everything queued on the calling thread; returns how many events were handled.
  size_t ProcessPending() TEPHRA_EXCLUDES(mu_, handle_mu_);
  // Waits until the queue is empty and nothing is in flight, or the timeout passes; true if idle.
  bool Flush(std::chrono::milliseconds timeout) TEPHRA_EXCLUDES(mu_);
  // Sends what is queued (bounded by the client's own timeouts), then stops the thread. Idempotent.
  void Shutdown() TEPHRA_EXCLUDES(mu_);
  EventRecorderStats stats() const TEPHRA_EXCLUDES(mu_);
  // Runs on the recorder's thread before each batch it writes. The scheduler makes it wait, boundedly, for
  // its binder to drain: an Event is informational, a bind is the product, and both cost the same API
  // server CPU.
  void SetBeforeBatch(std::function<void()> hook) TEPHRA_EXCLUDES(mu_);

 private:
  struct Pending {
    ObjectReference obj;
    EventType type;
    std::string reason, message;
    core::Clock::WallTime when;
  };
  struct Aggregate {
    std::string name, ns, first_timestamp;
    int64_t count = 0;
    core::Clock::TimePoint last_seen;
    std::list<std::string>::iterator lru;
  };
  struct Bucket {
    double tokens;
    core::Clock::TimePoint last;
    std::list<std::string>::iterator lru;
  };

  void Loop() TEPHRA_EXCLUDES(mu_, handle_mu_);
  // Takes handle_mu_, then mu_ briefly to count the outcome (the lock order is handle_mu_ before mu_).
  void Handle(const Pending& p) TEPHRA_EXCLUDES(mu_, handle_mu_);
  bool AllowLocked(const std::string& spam_key) TEPHRA_REQUIRES(handle_mu_);

  ClientPtr client_;
  EventRecorderOptions opts_;
  const core::Clock& clock_;
  mutable core::Mutex mu_;
  core::CondVar cv_;       // the worker waiting for events or shutdown
  core::CondVar idle_cv_;  // Flush waiting for the queue to drain
  std::deque<Pending> queue_ TEPHRA_GUARDED_BY(mu_);
  bool busy_ TEPHRA_GUARDED_BY(mu_) = false;
  bool shutdown_ TEPHRA_GUARDED_BY(mu_) = false;
  std::function<void()> before_batch_ TEPHRA_GUARDED_BY(mu_);
  EventRecorderStats stats_ TEPHRA_GUARDED_BY(mu_);
  // Worker-only state (no lock needed beyond the worker being single-threaded; guarded by handle_mu_ so
  // ProcessPending and the thread never run Handle concurrently).
  core::Mutex handle_mu_;
  std::unordered_map<std::string, Aggregate> aggregates_ TEPHRA_GUARDED_BY(handle_mu_);
  std::list<std::string> aggregate_lru_ TEPHRA_GUARDED_BY(handle_mu_);
  std::unordered_map<std::string, Bucket> buckets_ TEPHRA_GUARDED_BY(handle_mu_);
  std::list<std::string> bucket_lru_ TEPHRA_GUARDED_BY(handle_mu_);
  std::thread thread_;
};

}  // namespace tephra::kube
