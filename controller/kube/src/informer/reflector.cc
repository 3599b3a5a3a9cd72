// List+watch loop behind every informer (see informer.h for the semantics and docs/failure-scenarios.md, "List and
// watch" for why).
#include <algorithm>
#include <random>


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
  std::lock_guard lock(mu_);
  return last_rv_;
}

void Reflector::Stop() {
  std::shared_ptr<WatchCanceller> c;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    c = canceller_;
  }
  cv_.notify_all();
  if (c) c->Cancel();
}

bool Reflector::SleepUnlessStopped(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopped_; });
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
  sink_->Replace(std::move(list->items));
  {
    std::lock_guard lock(mu_);
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
    std::lock_guard lock(mu_);
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
        sink_->Apply(ev.type, std::move(ev.object));
        break;
      case WatchEvent::Type::kError:
        return false;  // Client::Watch turns ERROR into a Status; not expected here
    }
    if (!new_rv.empty()) {
      std::lock_guard lock(mu_);
      last_rv_ = std::move(new_rv);
    }
    return true;
  });
  {
    std::lock_guard lock(mu_);
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
      std::lock_guard lock(mu_);
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
  std::lock_guard lock(run_mu_);
  if (running_) return;
  running_ = true;
  stop_resync_ = false;
  reflector_thread_ = std::thread([this] { reflector_.Run(); });
  if (opts_.resync_period.count() > 0) {
    resync_thread_ = std::thread([this] {
      std::unique_lock l(run_mu_);
      while (!resync_cv_.wait_for(l, opts_.resync_period, [this] { return stop_resync_; })) {
        if (!HasSynced()) continue;
        l.unlock();
        Resync();
        l.lock();
      }
    });
  }
}

void InformerBase::Stop() {
  std::thread r, s;
  {
    std::lock_guard lock(run_mu_);
    if (!running_) return;
    running_ = false;
    stop_resync_ = true;
    r = std::move(reflector_thread_);
    s = std::move(resync_thread_);
  }
  resync_cv_.notify_all();
  reflector_.Stop();
  if (r.joinable()) r.join();
  if (s.joinable()) s.join();
}

void InformerBase::MarkSynced() {
  {
    std::lock_guard lock(sync_mu_);
    synced_ = true;
  }
  sync_cv_.notify_all();
}

bool InformerBase::WaitForSync(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(sync_mu_);
  sync_cv_.wait_until(lock, deadline, [this] { return synced_.load(); });
  return synced_.load();
}

void InformerBase::Transform(json* j) const {
  if (opts_.transform) opts_.transform(j);
  else api::StripForCache(j);
}

}  // namespace tephra::kube
