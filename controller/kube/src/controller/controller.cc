#include "tephra/kube/controller.h"

#include "tephra/kube/log.h"

namespace tephra::kube {
namespace {

WorkQueueOptions QueueOptions(const ControllerOptions& o) {
  WorkQueueOptions q;
  q.name = o.name;
  q.clock = o.clock;
  q.registry = o.registry;
  q.rate_limiter = NewControllerRateLimiter(o.clock ? *o.clock : core::RealClock::Get(), o.rate_limits);
  q.start_timer_thread = o.start_timer_thread;
  return q;
}

}  // namespace

Controller::Controller(ControllerOptions opts, Reconciler* reconciler)
    : opts_(std::move(opts)), reconciler_(reconciler), queue_(QueueOptions(opts_)) {
  metrics::Registry& reg = opts_.registry ? *opts_.registry : metrics::Registry::Default();
  total_ = &reg.AddCounter("reconcile_total", "Reconciliations by controller and result.", {"controller", "result"});
  duration_ = reg.AddHistogram("reconcile_duration_seconds", "Time spent in Reconcile.", {"controller"},
                               metrics::ExponentialBuckets(0.001, 2, 16))
                  .With({opts_.name});
}

Controller::~Controller() { Stop(); }

core::Status Controller::Start() {
  if (started_.exchange(true)) return core::FailedPreconditionError("controller " + opts_.name + " already started");
  int n = std::max(1, opts_.workers);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Worker(); });
  return core::Status::OK();
}

void Controller::Stop() {
  if (stopped_.exchange(true)) return;
  queue_.ShutDownWithDrain();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Controller::Worker() {
  while (auto key = queue_.Get()) {
    Process(*key);
    queue_.Done(*key);
  }
}

bool Controller::ProcessNextForTest() {
  auto key = queue_.TryGet();
  if (!key) return false;
  Process(*key);
  queue_.Done(*key);
  return true;
}

void Controller::Process(const std::string& key) {
  const core::Clock& clock = opts_.clock ? *opts_.clock : core::RealClock::Get();
  auto start = clock.Now();
  ReconcileResult r;
  try {
    r = reconciler_->Reconcile(key);
  } catch (const std::exception& e) {
    // A reconciler must not throw; if one does, treat it as a retriable error rather than kill the worker.
    r = ReconcileResult::Error(core::InternalError(std::string("reconciler threw: ") + e.what()));
  }
  duration_->Observe(std::chrono::duration<double>(clock.Now() - start).count());
  const char* result;
  if (r.status.ok()) {
    queue_.Forget(key);
    if (r.requeue_after) {
      queue_.AddAfter(key, *r.requeue_after);
      result = "requeue_after";
    } else {
      result = "success";
    }
  } else if (r.terminal) {
    queue_.Forget(key);
    result = "terminal_error";
    log::Error("reconcile failed terminally")
        .Kv("controller", opts_.name).Kv("key", key).Kv("error", r.status.ToString());
  } else if (opts_.max_requeues >= 0 && queue_.NumRequeues(key) >= opts_.max_requeues) {
    queue_.Forget(key);
    result = "max_requeues";
    log::Warn("giving up on key after max requeues")
        .Kv("controller", opts_.name).Kv("key", key).Kv("requeues", opts_.max_requeues)
        .Kv("error", r.status.ToString());
    if (opts_.on_max_requeues) opts_.on_max_requeues(key, r.status);
  } else {
    queue_.AddRateLimited(key);
    result = "error";
    log::Debug("reconcile failed, requeued with backoff")
        .Kv("controller", opts_.name).Kv("key", key).Kv("error", r.status.ToString());
  }
  total_->With({opts_.name, result})->Inc();
}

std::string MakeKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string k(ns);
  k += '/';
  k += name;
  return k;
}

void SplitKey(std::string_view key, std::string* ns, std::string* name) {
  auto p = key.find('/');
  if (p == std::string_view::npos) {
    ns->clear();
    *name = std::string(key);
  } else {
    *ns = std::string(key.substr(0, p));
    *name = std::string(key.substr(p + 1));
  }
}

std::string KeyOf(const api::json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const auto& md = obj["metadata"];
  std::string ns = md.contains("namespace") && md["namespace"].is_string() ? md["namespace"].get<std::string>() : "";
  std::string name = md.contains("name") && md["name"].is_string() ? md["name"].get<std::string>() : "";
  return MakeKey(ns, name);
}

std::optional<std::string> ControllerOwnerKey(const api::json& obj, std::string_view owner_kind,
                                              std::string_view owner_group) {
  if (!obj.is_object() || !obj.contains("metadata")) return std::nullopt;
  const auto& md = obj["metadata"];
  if (!md.contains("ownerReferences") || !md["ownerReferences"].is_array()) return std::nullopt;
  for (const auto& ref : md["ownerReferences"]) {
    if (!ref.is_object() || !ref.value("controller", false)) continue;
    if (ref.value("kind", "") != owner_kind) return std::nullopt;
    if (!owner_group.empty()) {
      std::string av = ref.value("apiVersion", "");
      auto slash = av.find('/');
      std::string group = slash == std::string::npos ? "" : av.substr(0, slash);
      if (group != owner_group) return std::nullopt;
    }
    std::string ns = md.contains("namespace") && md["namespace"].is_string() ? md["namespace"].get<std::string>() : "";
    return MakeKey(ns, ref.value("name", ""));
  }
  return std::nullopt;
}

}  // namespace tephra::kube
