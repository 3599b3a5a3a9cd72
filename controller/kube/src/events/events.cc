#include "tephra/kube/events.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "tephra/core/utf8.h"
#include "tephra/kube/caught.h"
#include "tephra/kube/log.h"

namespace tephra::kube {
namespace {

const ResourceInfo kEvents{"", "v1", "Event", "events", true};
constexpr size_t kMaxMessage = 1024;  // events.k8s.io caps notes at 1 kB; core/v1 callers should too

uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Join(std::initializer_list<std::string_view> parts) {
  std::string o;
  for (auto p : parts) {
    o.append(p);
    o.push_back('\x1f');  // unit separator: cannot appear in names, keeps fields apart
  }
  return o;
}

}  // namespace

ObjectReference ReferenceTo(const api::json& obj) {
  ObjectReference r;
  if (!obj.is_object()) return r;
  r.api_version = obj.value("apiVersion", "");
  r.kind = obj.value("kind", "");
  if (obj.contains("metadata") && obj["metadata"].is_object()) {
    const auto& md = obj["metadata"];
    r.namespace_ = md.value("namespace", "");
    r.name = md.value("name", "");
    r.uid = md.value("uid", "");
    r.resource_version = md.value("resourceVersion", "");
  }
  return r;
}

EventRecorder::EventRecorder(ClientPtr client, EventRecorderOptions opts)
    : client_(std::move(client)), opts_(std::move(opts)), clock_(opts_.clock ? *opts_.clock : core::RealClock::Get()) {
  if (opts_.host.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) opts_.host = host;
  }
  if (opts_.start_thread) thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() { Shutdown(); }

void EventRecorder::Event(const ObjectReference& obj, EventType type, std::string reason, std::string message) {
  // Messages quote tenant text (flow names, container messages): cut on a character boundary and made valid,
  // or the API write would fail to encode.
  if (message.size() > kMaxMessage || !core::IsValidUtf8(message)) message = core::CutUtf8(message, kMaxMessage);
  if (!core::IsValidUtf8(reason)) reason = core::ValidUtf8(reason);
  core::MutexLock l(mu_);
  if (shutdown_) return;
  if (queue_.size() >= opts_.queue_capacity) {
    stats_.dropped_queue_full++;
    return;
  }
  queue_.push_back(Pending{obj, type, std::move(reason), std::move(message), clock_.WallNow()});
  cv_.NotifyOne();
}

size_t EventRecorder::ProcessPending() {
  size_t n = 0;
  while (true) {
    Pending p;
    {
      core::MutexLock l(mu_);
      if (queue_.empty()) break;
      p = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    // One Event that cannot be written must not end the thread (and with it the process).
    try {
      Handle(p);
    } catch (const std::exception& e) {
      CountException("event-recorder", e.what());
      core::MutexLock l(mu_);
      stats_.errors++;
    } catch (...) {
      CountException("event-recorder", "unknown exception");
      core::MutexLock l(mu_);
      stats_.errors++;
    }
    ++n;
    core::MutexLock l(mu_);
    busy_ = false;
    if (queue_.empty()) idle_cv_.NotifyAll();
  }
  return n;
}

void EventRecorder::SetBeforeBatch(std::function<void()> hook) {
  core::MutexLock l(mu_);
  before_batch_ = std::move(hook);
}

void EventRecorder::Loop() {
  std::function<void()> hook;
  while (true) {
    {
      core::MutexLock l(mu_);
      while (!shutdown_ && queue_.empty()) cv_.Wait(l);
      if (queue_.empty() && shutdown_) return;
      hook = before_batch_;
    }
    if (hook) hook();
    ProcessPending();
  }
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  core::MutexLock l(mu_);
  // wait_for with a predicate, written out: the analysis cannot see that a predicate runs under the lock.
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!queue_.empty() || busy_) {
    if (idle_cv_.WaitUntil(l, until) == std::cv_status::timeout) return queue_.empty() && !busy_;
  }
  return true;
}

void EventRecorder::Shutdown() {
  {
    core::MutexLock l(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    cv_.NotifyAll();
  }
  if (thread_.joinable()) thread_.join();
}

EventRecorderStats EventRecorder::stats() const {
  core::MutexLock l(mu_);
  return stats_;
}

bool EventRecorder::AllowLocked(const std::string& key) {
  auto now = clock_.Now();
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    bucket_lru_.push_front(key);
    it = buckets_.emplace(key, Bucket{static_cast<double>(opts_.burst), now, bucket_lru_.begin()}).first;
    if (buckets_.size() > opts_.cache_size) {
      buckets_.erase(bucket_lru_.back());
      bucket_lru_.pop_back();
    }
  } else {
    bucket_lru_.splice(bucket_lru_.begin(), bucket_lru_, it->second.lru);
  }
  Bucket& b = it->second;
  if (now > b.last) {
    double refill = std::chrono::duration<double>(now - b.last).count() /
                    std::chrono::duration<double>(opts_.refill_interval).count();
    b.tokens = std::min(static_cast<double>(opts_.burst), b.tokens + refill);
    b.last = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void EventRecorder::Handle(const Pending& p) {
  core::MutexLock hl(handle_mu_);
  const auto& o = p.obj;
  const std::string type = p.type == EventType::kWarning ? "Warning" : "Normal";
  const std::string spam_key = Join({opts_.component, opts_.host, o.kind, o.namespace_, o.name, o.uid, o.api_version});
  if (!AllowLocked(spam_key)) {
    core::MutexLock l(mu_);
    stats_.dropped_rate_limited++;
    return;
  }
  const std::string agg_key = spam_key + Join({o.field_path, type, p.reason, p.message});
  const std::string ns = o.namespace_.empty() ? "default" : o.namespace_;
  const std::string ts = core::FormatRfc3339(p.when);
  const auto now = clock_.Now();

  auto it = aggregates_.find(agg_key);
  if (it != aggregates_.end() && now - it->second.last_seen <= opts_.aggregation_window) {
    Aggregate& a = it->second;
    aggregate_lru_.splice(aggregate_lru_.begin(), aggregate_lru_, a.lru);
    json patch = {{"count", a.count + 1}, {"lastTimestamp", ts}, {"message", p.message}};
    auto r = client_->Patch(kEvents, a.ns, a.name, PatchType::kMerge, patch);
    if (r.ok()) {
      a.count++;
      a.last_seen = now;
      core::MutexLock l(mu_);
      stats_.patched++;
      return;
    }
    if (!core::IsNotFound(r.status())) {
      core::MutexLock l(mu_);
      stats_.errors++;
      log::Debug("event patch failed").Kv("event", a.name).Kv("error", r.status());
      return;
    }
    // The Event expired server-side (1 h TTL by default): start a new one below.
  }

  char hex[17];
  uint64_t h = Fnv1a(ts, Fnv1a(agg_key));
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string name = o.name + "." + hex;
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"involvedObject", {{"apiVersion", o.api_version}, {"kind", o.kind}, {"namespace", o.namespace_},
                                 {"name", o.name}, {"uid", o.uid}}},
             {"reason", p.reason},
             {"message", p.message},
             {"type", type},
             {"source", {{"component", opts_.component}, {"host", opts_.host}}},
             {"count", 1},
             {"firstTimestamp", ts},
             {"lastTimestamp", ts},
             {"reportingComponent", opts_.component},
             {"reportingInstance", opts_.host}};
  if (!o.resource_version.empty()) ev["involvedObject"]["resourceVersion"] = o.resource_version;
  if (!o.field_path.empty()) ev["involvedObject"]["fieldPath"] = o.field_path;
  auto r = client_->Create(kEvents, ns, ev);
  if (!r.ok() && !core::IsAlreadyExists(r.status())) {
    core::MutexLock l(mu_);
    stats_.errors++;
    log::Debug("event create failed").Kv("event", name).Kv("error", r.status());
    return;
  }
  if (it == aggregates_.end()) {
    aggregate_lru_.push_front(agg_key);
    it = aggregates_.emplace(agg_key, Aggregate{}).first;
    it->second.lru = aggregate_lru_.begin();
    if (aggregates_.size() > opts_.cache_size) {
      aggregates_.erase(aggregate_lru_.back());
      aggregate_lru_.pop_back();
    }
  } else {
    aggregate_lru_.splice(aggregate_lru_.begin(), aggregate_lru_, it->second.lru);
  }
  Aggregate& a = it->second;
  a.name = name;
  a.ns = ns;
  a.first_timestamp = ts;
  a.count = 1;
  a.last_seen = now;
  core::MutexLock l(mu_);
  stats_.created++;
}

}  // namespace tephra::kube
