#include "testing/fake_client.h"

#include <atomic>
#include <chrono>

namespace tephra::kube::testing {
namespace {

std::string Str(const json& j, const char* a, const char* b) {
  if (!j.is_object() || !j.contains(a) || !j[a].is_object() || !j[a].contains(b) || !j[a][b].is_string()) return "";
  return j[a][b].get<std::string>();
}

}  // namespace

FakeClient::FakeClient(const core::Clock* clock) : store_(std::make_shared<ApiStore>(clock)) {}
FakeClient::FakeClient(std::shared_ptr<ApiStore> store) : store_(std::move(store)) {}

FakeClient::~FakeClient() {
  destroying_.store(true);
  store_->Wake();
  core::MutexLock l(mu_);
  while (active_watches_ != 0) cv_.Wait(l);
}

void FakeClient::SetFailureInjector(std::function<std::optional<Status>(const Action&)> f) {
  core::MutexLock l(mu_);
  injector_ = std::move(f);
}
void FakeClient::SetRawHandler(std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> f) {
  core::MutexLock l(mu_);
  raw_handler_ = std::move(f);
}

std::optional<Status> FakeClient::Inject(const Action& a) {
  std::function<std::optional<Status>(const Action&)> f;
  {
    core::MutexLock l(mu_);
    actions_.push_back(a);
    f = injector_;
  }
  if (f) return f(a);
  return std::nullopt;
}

std::vector<Action> FakeClient::Actions() const {
  core::MutexLock l(mu_);
  return actions_;
}
void FakeClient::ClearActions() {
  core::MutexLock l(mu_);
  actions_.clear();
}
int64_t FakeClient::CurrentResourceVersion() const { return store_->ResourceVersion(); }
int FakeClient::ActiveWatches() const {
  core::MutexLock l(mu_);
  return active_watches_;
}
void FakeClient::CloseWatches() {
  ++close_epoch_;
  store_->Wake();
}
void FakeClient::Compact() { store_->Compact(); }

json FakeClient::Seed(const ResourceInfo& r, const json& obj) {
  std::string ns = r.namespaced ? Str(obj, "metadata", "namespace") : "";
  if (r.namespaced && ns.empty()) ns = "default";
  return store_->Put(r, ns, obj);
}

StatusOr<json> FakeClient::Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                               const std::string& subresource) {
  if (auto s = Inject({"get", ResourceName(r), ns, name, subresource, {}})) return *s;
  return store_->Get(r, ns, name, subresource);
}

StatusOr<ObjectList> FakeClient::List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) {
  if (auto s = Inject({"list", ResourceName(r), ns, "", "", {}})) return *s;
  return store_->List(r, ns, opts);
}

StatusOr<json> FakeClient::Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                                  const std::string& subresource) {
  if (auto s = Inject({"create", ResourceName(r), ns, Str(obj, "metadata", "name"), subresource, obj})) return *s;
  return store_->Create(r, ns, obj, subresource);
}

StatusOr<json> FakeClient::Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                                  const std::string& subresource) {
  if (auto s = Inject({"update", ResourceName(r), ns, Str(obj, "metadata", "name"), subresource, obj})) return *s;
  return store_->Update(r, ns, obj, subresource);
}

StatusOr<json> FakeClient::Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                 PatchType type, const json& patch, const std::string& subresource) {
  if (auto s = Inject({"patch", ResourceName(r), ns, name, subresource, patch})) return *s;
  return store_->Patch(r, ns, name, type, patch, subresource);
}

Status FakeClient::Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                          const DeleteOptions& opts) {
  if (auto s = Inject({"delete", ResourceName(r), ns, name, "", {}})) return *s;
  auto d = store_->Delete(r, ns, name, opts);
  return d.ok() ? Status::OK() : d.status();
}

Status FakeClient::Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                        const std::string& node, const std::map<std::string, std::string>& annotations) {
  if (auto s = Inject({"bind", "pods", ns, pod, "binding", json{{"target", {{"name", node}}}}})) return *s;
  return store_->Bind(ns, pod, pod_uid, node, annotations);
}

Status FakeClient::Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts) {
  if (auto s = Inject({"evict", "pods", ns, pod, "eviction", {}})) return *s;
  return store_->Evict(ns, pod, opts);
}

Status FakeClient::Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
                         const std::function<bool(WatchEvent&&)>& handler) {
  if (auto s = Inject({"watch", ResourceName(r), ns, "", "", {}})) return *s;
  std::vector<WatchEvent> pending;
  auto cursor = store_->OpenWatch(r, ns, opts, &pending);
  if (!cursor.ok()) return cursor.status();

  // Honour the caller's canceller like the real transport: Cancel() ends the stream with kCancelled.
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  if (opts.canceller) {
    std::shared_ptr<ApiStore> store = store_;
    bool armed = opts.canceller->SetCallback([store, cancelled] {
      cancelled->store(true);
      store->Wake();
    });
    if (!armed) return core::CancelledError("watch cancelled");
  }
  struct ClearOnExit {
    const std::shared_ptr<WatchCanceller>& c;
    ~ClearOnExit() {
      if (c) c->ClearCallback();
    }
  } clear_on_exit{opts.canceller};

  // The close epoch is read before the watch counts as active: a caller that saw ActiveWatches() > 0 and then
  // called CloseWatches() must end this watch. Read after, a close in between became the watch's own baseline
  // and the watch never ended (a hang seen under TSan).
  const uint64_t epoch = close_epoch_.load();
  {
    core::MutexLock l(mu_);
    ++active_watches_;
  }
  auto stopped = [&] { return close_epoch_.load() != epoch || destroying_.load() || cancelled->load(); };
  Status result;
  while (true) {
    bool stop = false;
    for (auto& e : pending) {
      if (!handler(std::move(e))) {
        stop = true;
        break;
      }
    }
    pending.clear();
    if (stop || cancelled->load()) break;
    // With a stop requested this still drains what already happened, then the empty batch ends the stream.
    result = store_->NextEvents(*cursor, &pending, std::chrono::steady_clock::time_point::max(), stopped);
    if (!result.ok()) break;
    if (pending.empty() && stopped()) break;
  }
  {
    core::MutexLock l(mu_);
    --active_watches_;
    cv_.NotifyAll();
  }
  if (cancelled->load()) return core::CancelledError("watch cancelled");
  return result;
}

StatusOr<json> FakeClient::Raw(const std::string& method, const std::string& path, const json* body,
                               const std::string& content_type) {
  (void)content_type;
  if (auto s = Inject({"raw", path, "", method, "", body ? *body : json()})) return *s;
  std::function<StatusOr<json>(const std::string&, const std::string&, const json*)> h;
  {
    core::MutexLock l(mu_);
    h = raw_handler_;
  }
  if (!h) return core::UnimplementedError("fake client: no raw handler for " + method + " " + path);
  return h(method, path, body);
}

}  // namespace tephra::kube::testing
