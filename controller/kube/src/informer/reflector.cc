// List+watch loop behind every informer (see informer.h for the semantics and docs/failure-scenarios.md, "List and
// watch" for why).
#include <algorithm>
#include <random>


#include "tephra/kube/caught.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/log.h"

namespace tephra::kube {

namespace {

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

// Full jitter on top of the base delay (client-go uses jitter factor 1.0: delay in [d, 2d)).
std::chrono::milliseconds Jittered(std::chrono::milliseconds d) {
  std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(d.count(), 1) - 1);
  return d + std::chrono::milliseconds(dist(Rng()));
}

}  // namespace

Reflector::Reflector(ClientPtr client, const ResourceInfo& resource, const InformerOptions& opts,
                     ReflectorSink* sink)
    : client_(std::move(client)), resource_(resource), opts_(opts), sink_(sink) {}

Reflector::~Reflector() { Stop(); }

std::string Reflector::last_resource_version() const {
  core::MutexLock lock(mu_);
  return last_rv_;
}

void Reflector::Stop() {
  std::shared_ptr<WatchCanceller> c;
  {
    core::MutexLock lock(mu_);
    stopped_ = true;
    c = canceller_;
  }
  cv_.NotifyAll();
  if (c) c->Cancel();
}

bool Reflector::SleepUnlessStopped(std::chrono::milliseconds d) {
  core::MutexLock lock(mu_);
  const auto until = std::chrono::steady_clock::now() + d;
  while (!stopped_) {
    if (cv_.WaitUntil(lock, until) == std::cv_status::timeout) break;
  }
  return !stopped_;
}

Status Reflector::ListAndReplace(const std::string& rv) {
  ListOptions lo;
  lo.label_selector = opts_.label_selector;
  lo.field_selector = opts_.field_selector;
  lo.limit = opts_.page_size;
  lo.resource_version = rv;
  auto list = ListAll(*client_, resource_, opts_.namespace_, lo);
  if (!list.ok()) return list.status();
  stats_.lists++;
  std::string list_rv = list->metadata.resource_version;
  try {
    sink_->Replace(std::move(list->items));
  } catch (const std::exception& e) {
    CountException("informer", std::string(resource_.plural) + ": " + e.what());
  }
  {
    core::MutexLock lock(mu_);
    last_rv_ = list_rv;
  }
  return Status::OK();
}

Status Reflector::WatchOnce() {
  ListOptions wo;
  wo.label_selector = opts_.label_selector;
  wo.field_selector = opts_.field_selector;
  wo.allow_watch_bookmarks = true;
  {
    std::uniform_int_distribution<int> dist(opts_.min_watch_timeout_seconds,
                                            std::max(opts_.min_watch_timeout_seconds, opts_.max_watch_timeout_seconds));
    wo.timeout_seconds = dist(Rng());
  }
  auto canceller = std::make_shared<WatchCanceller>();
  {
    core::MutexLock lock(mu_);
    if (stopped_) return core::CancelledError("stopped");
    wo.resource_version = last_rv_;
    canceller_ = canceller;
  }
  wo.canceller = canceller;
  stats_.watches++;
  Status s = client_->Watch(resource_, opts_.namespace_, wo, [&](WatchEvent&& ev) {
    const json* rv = nullptr;
    if (ev.object.is_object()) {
      auto m = ev.object.find("metadata");
      if (m != ev.object.end() && m->is_object()) {
        auto r = m->find("resourceVersion");
        if (r != m->end() && r->is_string()) rv = &*r;
      }
    }
    std::string new_rv = rv ? rv->get<std::string>() : "";
    switch (ev.type) {
      case WatchEvent::Type::kBookmark:
        break;
      case WatchEvent::Type::kAdded:
      case WatchEvent::Type::kModified:
      case WatchEvent::Type::kDeleted:
        stats_.events++;
        // A sink that throws must not end the reflector's thread (the informer would stop without a sign).
        try {
          sink_->Apply(ev.type, std::move(ev.object));
        } catch (const std::exception& e) {
          CountException("informer", std::string(resource_.plural) + ": " + e.what());
        }
        break;
      case WatchEvent::Type::kError:
        return false;  // Client::Watch turns ERROR into a Status; not expected here
    }
    if (!new_rv.empty()) {
      core::MutexLock lock(mu_);
      last_rv_ = std::move(new_rv);
    }
    return true;
  });
  {
    core::MutexLock lock(mu_);
    canceller_.reset();
  }
  return s;
}

void Reflector::Run() {
  std::chrono::milliseconds backoff = opts_.backoff_initial;
  // First list from the watch cache ("0"); after a 410 from etcd (""), as client-go does.
  std::string list_rv = "0";
  bool need_list = true;
  bool after_410 = false;
  while (true) {
    {
      core::MutexLock lock(mu_);
      if (stopped_) return;
    }
    if (need_list) {
      Status s = ListAndReplace(list_rv);
      if (!s.ok()) {
        if (IsGone(s) && list_rv == "0") list_rv = "";  // a stale "0" cannot happen, but never loop on it
        log::Warn("informer list failed; retrying").Kv("resource", resource_.plural).Kv("error", s);
        if (!SleepUnlessStopped(Jittered(backoff))) return;
        backoff = std::min(backoff * 2, opts_.backoff_max);
        continue;
      }
      if (after_410) stats_.relists_after_410++;
      after_410 = false;
      need_list = false;
      sink_->MarkSynced();
    }
    auto started = std::chrono::steady_clock::now();
    Status s = WatchOnce();
    if (s.code() == core::StatusCode::kCancelled) return;
    if (IsGone(s)) {
      log::Info("informer watch expired (410); relisting").Kv("resource", resource_.plural).Kv("from", last_resource_version());
      need_list = true;
      after_410 = true;
      list_rv = "";
      continue;  // client-go relists immediately on 410
    }
    if (s.ok()) {
      // Server-side timeout or a quiet stream ended: re-watch from the last RV at once.
      backoff = opts_.backoff_initial;
      continue;
    }
    stats_.watch_errors++;
    // A watch that stayed healthy for a while resets the backoff (client-go: 2 min).
    if (std::chrono::steady_clock::now() - started > std::chrono::minutes(2)) backoff = opts_.backoff_initial;
    log::Warn("informer watch failed; re-watching").Kv("resource", resource_.plural).Kv("error", s).Kv("from", last_resource_version());
    if (!SleepUnlessStopped(Jittered(backoff))) return;
    backoff = std::min(backoff * 2, opts_.backoff_max);
  }
}

InformerBase::InformerBase(ClientPtr client, const ResourceInfo& resource, InformerOptions opts)
    : opts_(std::move(opts)), reflector_(std::move(client), resource, opts_, this) {}

InformerBase::~InformerBase() { Stop(); }

void InformerBase::Start() {
  core::MutexLock lock(run_mu_);
  if (running_) return;
  running_ = true;
  stop_resync_ = false;
  reflector_thread_ = std::thread([this] { reflector_.Run(); });
  if (opts_.resync_period.count() > 0) {
    resync_thread_ = std::thread([this] {
      core::MutexLock l(run_mu_);
      while (true) {
        const auto until = std::chrono::steady_clock::now() + opts_.resync_period;
        while (!stop_resync_) {
          if (resync_cv_.WaitUntil(l, until) == std::cv_status::timeout) break;
        }
        if (stop_resync_) break;
        if (!HasSynced()) continue;
        l.Unlock();
        Resync();
        l.Lock();
      }
    });
  }
}

void InformerBase::Stop() {
  std::thread r, s;
  {
    core::MutexLock lock(run_mu_);
    if (!running_) return;
    running_ = false;
    stop_resync_ = true;
    r = std::move(reflector_thread_);
    s = std::move(resync_thread_);
  }
  resync_cv_.NotifyAll();
  reflector_.Stop();
  if (r.joinable()) r.join();
  if (s.joinable()) s.join();
}

void InformerBase::MarkSynced() {
  {
    core::MutexLock lock(sync_mu_);
    synced_ = true;
  }
  sync_cv_.NotifyAll();
}

bool InformerBase::WaitForSync(std::chrono::steady_clock::time_point deadline) const {
  core::MutexLock lock(sync_mu_);
  sync_cv_.WaitUntil(lock, deadline, [this] { return synced_.load(); });
  return synced_.load();
}

void InformerBase::Transform(json* j) const {
  if (opts_.transform) opts_.transform(j);
  else api::StripForCache(j);
}

}  // namespace tephra::kube
