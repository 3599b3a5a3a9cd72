#include "testing/fake_client.h"

#include <algorithm>
#include <atomic>
#include <sstream>

#include "tephra/core/labels.h"

namespace tephra::kube::testing {
namespace {

using core::Status;

Status NotFound(const std::string& res, const std::string& name) {
  return core::NotFoundError(res + " \"" + name + "\" not found").WithHttp(404, "NotFound");
}
Status Conflict(const std::string& msg) { return core::AbortedError(msg).WithHttp(409, "Conflict"); }

std::string Str(const json& j, const char* a, const char* b = nullptr) {
  const json* p = &j;
  if (!p->is_object() || !p->contains(a)) return "";
  p = &(*p)[a];
  if (b) {
    if (!p->is_object() || !p->contains(b)) return "";
    p = &(*p)[b];
  }
  return p->is_string() ? p->get<std::string>() : "";
}

// Dotted-path lookup for field selectors; non-strings are rendered as JSON text without quotes.
std::string FieldValue(const json& obj, const std::string& path) {
  const json* p = &obj;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!p->is_object() || !p->contains(part)) return "";
    p = &(*p)[part];
  }
  if (p->is_string()) return p->get<std::string>();
  if (p->is_null()) return "";
  return p->dump();
}

// The string form of a selector ("a=b,c!=d,e,!f"), parsed into the core's one selector model
// (tephra/core/labels.h) so this fake matches exactly like the real components: "=" and "==" are In,
// "!=" is NotIn (an absent key matches), "k" is Exists and "!k" DoesNotExist.
StatusOr<core::LabelSelector> ParseSelector(const std::string& sel) {
  core::LabelSelector out;
  std::stringstream ss(sel);
  std::string term;
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  };
  while (std::getline(ss, term, ',')) {
    term = trim(term);
    if (term.empty()) continue;
    if (term.find(" in ") != std::string::npos || term.find(" notin ") != std::string::npos || term.find('(') != std::string::npos) {
      return core::InvalidArgumentError("fake client: set-based selectors are not supported: " + term);
    }
    core::SelectorRequirement r;
    size_t p;
    if ((p = term.find("!=")) != std::string::npos) {
      r.key = trim(term.substr(0, p));
      r.op = core::SelectorOp::kNotIn;
      r.values = {trim(term.substr(p + 2))};
    } else if ((p = term.find("==")) != std::string::npos) {
      r.key = trim(term.substr(0, p));
      r.values = {trim(term.substr(p + 2))};
    } else if ((p = term.find('=')) != std::string::npos) {
      r.key = trim(term.substr(0, p));
      r.values = {trim(term.substr(p + 1))};
    } else if (term[0] == '!') {
      r.key = trim(term.substr(1));
      r.op = core::SelectorOp::kDoesNotExist;
    } else {
      r.key = term;
      r.op = core::SelectorOp::kExists;
    }
    out.match_expressions.push_back(std::move(r));
  }
  return out;
}

bool MatchLabels(const core::LabelSelector& sel, const json& obj) {
  core::Labels labels;
  if (obj.contains("metadata") && obj["metadata"].contains("labels") && obj["metadata"]["labels"].is_object())
    for (const auto& [k, v] : obj["metadata"]["labels"].items()) labels[k] = v.is_string() ? v.get<std::string>() : "";
  return sel.Matches(labels);
}

// Field selectors: every referenced field has a value ("" when the object lacks it, as in Kubernetes).
bool MatchFields(const core::LabelSelector& sel, const json& obj) {
  core::Labels fields;
  for (const auto& r : sel.match_expressions) fields[r.key] = FieldValue(obj, r.key);
  return sel.Matches(fields);
}

// Everything except metadata bookkeeping and status, to decide whether generation moves.
json SpecPart(const json& o) {
  json c = o;
  c.erase("metadata");
  c.erase("status");
  return c;
}

}  // namespace

std::string ResourceName(const ResourceInfo& r) {
  std::string s(r.plural);
  if (!r.group.empty()) s += "." + std::string(r.group);
  return s;
}

// Volcano's PodGroup and Command CRDs declare no status subresource (crds/), so the API server stores the
// status sent with a plain update or patch of them; every other kind the tests use has one.
static bool HasStatusSubresource(const std::string& res) {
  return res != "podgroups.scheduling.volcano.sh" && res != "commands.bus.volcano.sh";
}

FakeClient::FakeClient(const core::Clock* clock) : clock_(clock ? *clock : core::RealClock::Get()) {}

FakeClient::~FakeClient() {
  core::MutexLock l(mu_);
  destroying_ = true;
  cv_.NotifyAll();
  while (active_watches_ != 0) cv_.Wait(l);
}

std::string FakeClient::NowRfc3339() const { return core::FormatRfc3339(clock_.WallNow()); }

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
int64_t FakeClient::CurrentResourceVersion() const {
  core::MutexLock l(mu_);
  return rv_;
}
int FakeClient::ActiveWatches() const {
  core::MutexLock l(mu_);
  return active_watches_;
}
void FakeClient::CloseWatches() {
  core::MutexLock l(mu_);
  ++close_epoch_;
  cv_.NotifyAll();
}
void FakeClient::Compact() {
  core::MutexLock l(mu_);
  compacted_rv_ = rv_;
  history_.clear();
}

void FakeClient::EmitLocked(const std::string& res, const std::string& ns, WatchEvent::Type t, const json& obj,
                            const json* before) {
  history_.push_back(StoredEvent{rv_, res, ns, t, obj, before ? std::optional<json>(*before) : std::nullopt});
  cv_.NotifyAll();
}

json FakeClient::CreateLocked(const std::string& res, const ResourceInfo& r, const std::string& ns, json obj) {
  json& md = obj["metadata"];
  if (r.namespaced) md["namespace"] = ns;
  md["uid"] = "fake-uid-" + std::to_string(++uid_counter_);
  md["creationTimestamp"] = NowRfc3339();
  md["resourceVersion"] = std::to_string(++rv_);
  md["generation"] = 1;
  md.erase("deletionTimestamp");
  if (!obj.contains("apiVersion")) obj["apiVersion"] = r.ApiVersion();
  if (!obj.contains("kind")) obj["kind"] = std::string(r.kind);
  objects_[{res, r.namespaced ? ns : "", md["name"].get<std::string>()}] = obj;
  EmitLocked(res, r.namespaced ? ns : "", WatchEvent::Type::kAdded, obj);
  return obj;
}

json FakeClient::Seed(const ResourceInfo& r, const json& obj) {
  core::MutexLock l(mu_);
  std::string ns = r.namespaced ? Str(obj, "metadata", "namespace") : "";
  if (r.namespaced && ns.empty()) ns = "default";
  return CreateLocked(ResourceName(r), r, ns, obj);
}

StatusOr<json> FakeClient::Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                               const std::string& subresource) {
  std::string res = ResourceName(r);
  if (auto s = Inject({"get", res, ns, name, subresource, {}})) return *s;
  core::MutexLock l(mu_);
  auto it = objects_.find({res, r.namespaced ? ns : "", name});
  if (it == objects_.end()) return NotFound(res, name);
  return it->second;
}

StatusOr<ObjectList> FakeClient::List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) {
  std::string res = ResourceName(r);
  if (auto s = Inject({"list", res, ns, "", "", {}})) return *s;
  auto labels = ParseSelector(opts.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = ParseSelector(opts.field_selector);
  if (!fields.ok()) return fields.status();
  core::MutexLock l(mu_);
  std::vector<json> all;
  for (const auto& [k, obj] : objects_) {
    if (std::get<0>(k) != res) continue;
    if (r.namespaced && !ns.empty() && std::get<1>(k) != ns) continue;
    if (!MatchLabels(*labels, obj) || !MatchFields(*fields, obj)) continue;
    all.push_back(obj);
  }
  ObjectList out;
  out.metadata.resource_version = std::to_string(rv_);
  size_t start = 0;
  if (!opts.continue_token.empty()) {
    try {
      start = std::stoul(opts.continue_token);
    } catch (...) {
      return core::InvalidArgumentError("fake client: bad continue token").WithHttp(400, "BadRequest");
    }
  }
  size_t end = all.size();
  if (opts.limit > 0 && start + static_cast<size_t>(opts.limit) < all.size()) {
    end = start + static_cast<size_t>(opts.limit);
    out.metadata.continue_token = std::to_string(end);
    out.metadata.remaining_item_count = static_cast<int64_t>(all.size() - end);
  }
  for (size_t i = start; i < end && i < all.size(); ++i) out.items.push_back(std::move(all[i]));
  return out;
}

StatusOr<json> FakeClient::Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                                  const std::string& subresource) {
  std::string res = ResourceName(r);
  std::string name = Str(obj, "metadata", "name");
  if (auto s = Inject({"create", res, ns, name, subresource, obj})) return *s;
  if (!subresource.empty()) return core::UnimplementedError("fake client: create of subresource " + subresource);
  if (!obj.is_object()) return core::InvalidArgumentError("object must be a JSON object").WithHttp(400, "BadRequest");
  core::MutexLock l(mu_);
  json o = obj;
  if (name.empty()) {
    std::string gen = Str(obj, "metadata", "generateName");
    if (gen.empty()) {
      return core::InvalidArgumentError(res + ": name or generateName is required").WithHttp(422, "Invalid");
    }
    // Deterministic 5-character suffix (the real server uses random ones).
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = static_cast<uint64_t>(uid_counter_ + 1) * 2654435761u;
    std::string suffix;
    for (int i = 0; i < 5; ++i, n /= 27) suffix += kAlphabet[n % 27];
    name = gen + suffix;
    o["metadata"]["name"] = name;
  }
  std::string sns = r.namespaced ? ns : "";
  if (objects_.count({res, sns, name})) {
    return core::AlreadyExistsError(res + " \"" + name + "\" already exists").WithHttp(409, "AlreadyExists");
  }
  return CreateLocked(res, r, sns, std::move(o));
}

json FakeClient::StoreUpdateLocked(const ObjKey& k, json obj, const json& old) {
  json& md = obj["metadata"];
  const json& omd = old["metadata"];
  for (const char* f : {"uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation"}) {
    if (omd.contains(f)) {
      md[f] = omd[f];
    } else {
      md.erase(f);
    }
  }
  md["resourceVersion"] = omd.value("resourceVersion", "");
  if (obj == old) return old;  // no-op writes do not bump the resourceVersion, like the real server
  if (SpecPart(obj) != SpecPart(old)) md["generation"] = omd.value("generation", int64_t{0}) + 1;
  md["resourceVersion"] = std::to_string(++rv_);
  bool finalizers_empty = !md.contains("finalizers") || md["finalizers"].empty();
  if (md.contains("deletionTimestamp") && finalizers_empty) {
    objects_.erase(k);
    EmitLocked(std::get<0>(k), std::get<1>(k), WatchEvent::Type::kDeleted, obj);
    return obj;
  }
  objects_[k] = obj;
  EmitLocked(std::get<0>(k), std::get<1>(k), WatchEvent::Type::kModified, obj, &old);
  return obj;
}

StatusOr<json> FakeClient::Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                                  const std::string& subresource) {
  std::string res = ResourceName(r);
  std::string name = Str(obj, "metadata", "name");
  if (auto s = Inject({"update", res, ns, name, subresource, obj})) return *s;
  core::MutexLock l(mu_);
  ObjKey k{res, r.namespaced ? ns : "", name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(res, name);
  const json old = it->second;
  // As the API server: a uid in the body is a precondition (an update meant for a deleted object must not
  // land on a new object of the same name).
  if (std::string want_uid = Str(obj, "metadata", "uid"); !want_uid.empty() && want_uid != Str(old, "metadata", "uid")) {
    return Conflict("Precondition failed: UID in precondition: " + want_uid + ", UID in object meta: " +
                    Str(old, "metadata", "uid"));
  }
  std::string want_rv = Str(obj, "metadata", "resourceVersion");
  if (!want_rv.empty() && want_rv != Str(old, "metadata", "resourceVersion")) {
    return Conflict("Operation cannot be fulfilled on " + res + " \"" + name +
                    "\": the object has been modified; please apply your changes to the latest version and try again");
  }
  json next;
  if (subresource == "status") {
    next = old;
    if (obj.contains("status")) {
      next["status"] = obj["status"];
    } else {
      next.erase("status");
    }
  } else if (subresource.empty() && !HasStatusSubresource(res)) {
    next = obj;
  } else if (subresource.empty()) {
    next = obj;
    if (old.contains("status")) {
      next["status"] = old["status"];
    } else {
      next.erase("status");
    }
  } else {
    return core::UnimplementedError("fake client: update of subresource " + subresource);
  }
  return StoreUpdateLocked(k, std::move(next), old);
}

StatusOr<json> FakeClient::Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                 PatchType type, const json& patch, const std::string& subresource) {
  std::string res = ResourceName(r);
  if (auto s = Inject({"patch", res, ns, name, subresource, patch})) return *s;
  core::MutexLock l(mu_);
  ObjKey k{res, r.namespaced ? ns : "", name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(res, name);
  const json old = it->second;
  json patched;
  try {
    if (type == PatchType::kJson) {
      patched = old.patch(patch);
    } else {
      patched = old;
      patched.merge_patch(patch);
    }
  } catch (const std::exception& e) {
    return core::InvalidArgumentError(std::string("patch could not be applied: ") + e.what()).WithHttp(422, "Invalid");
  }
  std::string want_rv = Str(patched, "metadata", "resourceVersion");
  if (!want_rv.empty() && want_rv != Str(old, "metadata", "resourceVersion")) {
    return Conflict("Operation cannot be fulfilled on " + res + " \"" + name + "\": the object has been modified");
  }
  json next;
  if (subresource == "status") {
    next = old;
    if (patched.contains("status")) next["status"] = patched["status"];
  } else if (subresource.empty()) {
    next = patched;
    if (old.contains("status") && HasStatusSubresource(res)) next["status"] = old["status"];
  } else {
    return core::UnimplementedError("fake client: patch of subresource " + subresource);
  }
  return StoreUpdateLocked(k, std::move(next), old);
}

Status FakeClient::Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                          const DeleteOptions& opts) {
  std::string res = ResourceName(r);
  if (auto s = Inject({"delete", res, ns, name, "", {}})) return *s;
  core::MutexLock l(mu_);
  return DeleteLocked(res, r.namespaced ? ns : "", name, opts);
}

Status FakeClient::DeleteLocked(const std::string& res, const std::string& sns, const std::string& name,
                                const DeleteOptions& opts) {
  ObjKey k{res, sns, name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(res, name);
  json obj = it->second;
  if (opts.precondition_uid && *opts.precondition_uid != Str(obj, "metadata", "uid")) {
    return Conflict("Precondition failed: UID in precondition: " + *opts.precondition_uid);
  }
  if (opts.precondition_resource_version &&
      *opts.precondition_resource_version != Str(obj, "metadata", "resourceVersion")) {
    return Conflict("Precondition failed: ResourceVersion in precondition: " + *opts.precondition_resource_version);
  }
  json& md = obj["metadata"];
  if (md.contains("finalizers") && !md["finalizers"].empty()) {
    if (md.contains("deletionTimestamp")) return Status::OK();
    md["deletionTimestamp"] = NowRfc3339();
    md["deletionGracePeriodSeconds"] = 0;
    md["resourceVersion"] = std::to_string(++rv_);
    json before = it->second;
    it->second = obj;
    EmitLocked(res, std::get<1>(k), WatchEvent::Type::kModified, obj, &before);
    return Status::OK();
  }
  md["resourceVersion"] = std::to_string(++rv_);
  objects_.erase(it);
  EmitLocked(res, std::get<1>(k), WatchEvent::Type::kDeleted, obj);
  return Status::OK();
}

Status FakeClient::Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                        const std::string& node, const std::map<std::string, std::string>& annotations) {
  if (auto s = Inject({"bind", "pods", ns, pod, "binding", json{{"target", {{"name", node}}}}})) return *s;
  core::MutexLock l(mu_);
  ObjKey k{"pods", ns, pod};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound("pods", pod);
  json old = it->second;
  if (!pod_uid.empty() && pod_uid != Str(old, "metadata", "uid")) {
    return Conflict("Precondition failed: UID in precondition: " + pod_uid);
  }
  std::string cur = Str(old, "spec", "nodeName");
  if (!cur.empty()) return Conflict("pod " + pod + " is already assigned to node \"" + cur + "\"");
  json next = old;
  next["spec"]["nodeName"] = node;
  for (const auto& [k, v] : annotations) next["metadata"]["annotations"][k] = v;  // as the API server merges them
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  it->second = next;
  EmitLocked("pods", ns, WatchEvent::Type::kModified, next, &old);
  return Status::OK();
}

Status FakeClient::Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts) {
  if (auto s = Inject({"evict", "pods", ns, pod, "eviction", {}})) return *s;
  core::MutexLock l(mu_);
  return DeleteLocked("pods", ns, pod, opts);
}

Status FakeClient::Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
                         const std::function<bool(WatchEvent&&)>& handler) {
  std::string res = ResourceName(r);
  if (auto s = Inject({"watch", res, ns, "", "", {}})) return *s;
  auto labels = ParseSelector(opts.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = ParseSelector(opts.field_selector);
  if (!fields.ok()) return fields.status();
  std::string want_ns = r.namespaced ? ns : "";
  auto matches = [&](const std::string& eres, const std::string& ens, const json& obj) {
    return eres == res && (want_ns.empty() || ens == want_ns) && MatchLabels(*labels, obj) && MatchFields(*fields, obj);
  };

  // Honour the caller's canceller like the real transport: Cancel() ends the stream with kCancelled.
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  if (opts.canceller) {
    bool armed = opts.canceller->SetCallback([this, cancelled] {
      cancelled->store(true);
      // Under mu_ so the notification cannot fall between a watch's check of `cancelled` and its wait.
      core::MutexLock g(mu_);
      cv_.NotifyAll();
    });
    if (!armed) return core::CancelledError("watch cancelled");
  }
  struct ClearOnExit {
    const std::shared_ptr<WatchCanceller>& c;
    ~ClearOnExit() {
      if (c) c->ClearCallback();
    }
  } clear_on_exit{opts.canceller};  // declared before the lock below, so it runs after the lock is released

  core::MutexLock l(mu_);
  std::vector<WatchEvent> pending;
  int64_t last = 0;
  if (!opts.resource_version.empty() && opts.resource_version != "0") {
    try {
      last = std::stoll(opts.resource_version);
    } catch (...) {
      return core::InvalidArgumentError("bad resourceVersion " + opts.resource_version).WithHttp(400, "BadRequest");
    }
    if (last < compacted_rv_) {
      return core::OutOfRangeError("too old resource version: " + opts.resource_version + " (" +
                                   std::to_string(compacted_rv_) + ")")
          .WithHttp(410, "Expired");
    }
  } else {
    // No RV: "get state and start at most recent" - synthetic ADDED for what exists now.
    for (const auto& [k, obj] : objects_) {
      if (matches(std::get<0>(k), std::get<1>(k), obj)) pending.push_back({WatchEvent::Type::kAdded, obj});
    }
    last = rv_;
  }
  ++active_watches_;
  const uint64_t epoch = close_epoch_;
  bool stop = false;
  while (true) {
    for (const auto& e : history_) {
      if (e.rv <= last) continue;
      const bool now_in = matches(e.resource, e.ns, e.object);
      if (e.type == WatchEvent::Type::kModified && e.before) {
        const bool was_in = matches(e.resource, e.ns, *e.before);
        if (now_in) pending.push_back({was_in ? e.type : WatchEvent::Type::kAdded, e.object});
        else if (was_in) pending.push_back({WatchEvent::Type::kDeleted, e.object});
        continue;
      }
      if (now_in) pending.push_back({e.type, e.object});
    }
    last = std::max(last, rv_);
    if (!pending.empty()) {
      l.Unlock();  // the handler may call back into this client
      for (auto& e : pending) {
        if (!handler(std::move(e))) {
          stop = true;
          break;
        }
      }
      pending.clear();
      l.Lock();
      if (stop || cancelled->load()) break;
      continue;  // events may have arrived while the handler ran
    }
    while (!(rv_ > last || close_epoch_ != epoch || destroying_ || cancelled->load())) cv_.Wait(l);
    if (close_epoch_ != epoch || destroying_ || cancelled->load()) break;
  }
  --active_watches_;
  cv_.NotifyAll();
  if (cancelled->load()) return core::CancelledError("watch cancelled");
  return Status::OK();
}

StatusOr<json> FakeClient::Raw(const std::string& method, const std::string& path, const json* body,
                               const std::string& content_type) {
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
