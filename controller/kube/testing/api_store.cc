#include "testing/api_store.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <string_view>

namespace tephra::kube::testing {
namespace {

using core::Status;

Status NotFound(const std::string& res, const std::string& name) {
  return core::NotFoundError(res + " \"" + name + "\" not found").WithHttp(404, "NotFound");
}
Status Conflict(const std::string& msg) { return core::AbortedError(msg).WithHttp(409, "Conflict"); }
Status BadRequest(const std::string& msg) { return core::InvalidArgumentError(msg).WithHttp(400, "BadRequest"); }
Status Invalid(const std::string& msg) { return core::InvalidArgumentError(msg).WithHttp(422, "Invalid"); }

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

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

// Kubernetes serves strategic merge only for its built-in kinds (custom resources have no Go struct tags to
// read merge keys from); built-in groups are "", one word ("apps") or end in ".k8s.io".
bool IsBuiltIn(const std::string& resource) {
  auto dot = resource.find('.');
  if (dot == std::string::npos) return true;
  std::string group = resource.substr(dot + 1);
  return group.find('.') == std::string::npos ||
         (group.size() > 7 && group.compare(group.size() - 7, 7, ".k8s.io") == 0);
}

// patchMergeKey of the list fields tests touch, from the Kubernetes API types. Paths name fields from the
// object's root and skip list positions ("spec.containers.env" is every container's env). A merge key of ""
// marks a list of scalars merged as a set (patchStrategy "merge" without a key). A list not listed is atomic.
struct MergeRule {
  std::string_view resource;  // "*" = every built-in kind
  std::string_view path;
  std::string_view key;
};
constexpr MergeRule kMergeRules[] = {
    {"*", "metadata.finalizers", ""},
    {"*", "metadata.ownerReferences", "uid"},
    {"pods", "spec.containers", "name"},
    {"pods", "spec.initContainers", "name"},
    {"pods", "spec.ephemeralContainers", "name"},
    {"pods", "spec.containers.env", "name"},
    {"pods", "spec.initContainers.env", "name"},
    {"pods", "spec.containers.ports", "containerPort"},
    {"pods", "spec.initContainers.ports", "containerPort"},
    {"pods", "spec.containers.volumeMounts", "mountPath"},
    {"pods", "spec.initContainers.volumeMounts", "mountPath"},
    {"pods", "spec.containers.volumeDevices", "devicePath"},
    {"pods", "spec.volumes", "name"},
    {"pods", "spec.imagePullSecrets", "name"},
    {"pods", "spec.hostAliases", "ip"},
    {"pods", "spec.schedulingGates", "name"},
    {"pods", "status.conditions", "type"},
    {"pods", "status.podIPs", "ip"},
    {"nodes", "spec.podCIDRs", ""},
    {"nodes", "status.conditions", "type"},
    {"nodes", "status.addresses", "type"},
    {"namespaces", "status.conditions", "type"},
    {"services", "spec.ports", "port"},
    {"persistentvolumeclaims", "status.conditions", "type"},
};

const MergeRule* FindRule(const std::string& resource, const std::string& path) {
  std::string plural = resource.substr(0, resource.find('.'));
  for (const auto& r : kMergeRules) {
    if ((r.resource == "*" || (r.resource == plural && resource.find('.') == std::string::npos)) && r.path == path)
      return &r;
  }
  return nullptr;
}

constexpr std::string_view kPatchKey = "$patch";
constexpr std::string_view kDeleteFromPrimitive = "$deleteFromPrimitiveList/";

bool IsDirectiveKey(const std::string& k) { return !k.empty() && k[0] == '$'; }

// A patch value stored where the original has nothing to merge with: directives go, nulls inside maps go.
json Strip(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, x] : v.items()) {
      if (IsDirectiveKey(k) || x.is_null()) continue;
      out[k] = Strip(x);
    }
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& x : v) {
      if (x.is_object() && x.contains(kPatchKey)) continue;
      out.push_back(Strip(x));
    }
    return out;
  }
  return v;
}

struct Smp {
  const std::string& resource;
  std::string error;

  std::string Join(const std::string& path, const std::string& k) { return path.empty() ? k : path + "." + k; }

  // Returns false (and sets error) on a malformed directive.
  bool MergeMap(json& orig, const json& patch, const std::string& path) {
    if (!orig.is_object()) orig = json::object();
    if (auto d = patch.find(kPatchKey); d != patch.end()) {
      if (*d == "replace") {
        orig = Strip(patch);
        return true;
      }
      error = "unknown $patch directive in a map at " + (path.empty() ? "<root>" : path) + ": " + d->dump();
      return false;
    }
    for (const auto& [k, v] : patch.items()) {
      if (k.rfind(kDeleteFromPrimitive, 0) == 0) {
        std::string field = k.substr(kDeleteFromPrimitive.size());
        if (!v.is_array()) {
          error = k + " needs a list";
          return false;
        }
        if (auto it = orig.find(field); it != orig.end() && it->is_array()) {
          json kept = json::array();
          for (const auto& x : *it)
            if (std::find(v.begin(), v.end(), x) == v.end()) kept.push_back(x);
          *it = std::move(kept);
        }
        continue;
      }
      if (IsDirectiveKey(k)) continue;  // $setElementOrder/..., $retainKeys: order and pruning are not modelled
      if (v.is_null()) {
        orig.erase(k);
        continue;
      }
      const std::string child = Join(path, k);
      if (v.is_object()) {
        if (auto d = v.find(kPatchKey); d != v.end() && *d == "delete") {
          orig.erase(k);
          continue;
        }
        json& target = orig[k];
        if (!MergeMap(target, v, child)) return false;
        continue;
      }
      const MergeRule* rule = v.is_array() ? FindRule(resource, child) : nullptr;
      if (!rule) {
        orig[k] = Strip(v);
        continue;
      }
      json& target = orig[k];
      if (!target.is_array()) target = json::array();
      if (!MergeList(target, v, std::string(rule->key), child)) return false;
    }
    return true;
  }

  bool MergeList(json& orig, const json& patch, const std::string& key, const std::string& path) {
    for (const auto& e : patch) {
      if (e.is_object() && e.value(std::string(kPatchKey), "") == "replace") {
        orig = Strip(patch);
        return true;
      }
    }
    if (key.empty()) {  // a set of scalars
      for (const auto& e : patch)
        if (std::find(orig.begin(), orig.end(), e) == orig.end()) orig.push_back(e);
      return true;
    }
    for (const auto& e : patch) {
      if (!e.is_object() || !e.contains(key)) {
        error = "list " + path + " merges by " + key + ", and an element lacks it: " + e.dump();
        return false;
      }
      const json& id = e[key];
      auto match = std::find_if(orig.begin(), orig.end(),
                                [&](const json& o) { return o.is_object() && o.contains(key) && o[key] == id; });
      if (auto d = e.find(kPatchKey); d != e.end()) {
        if (*d != "delete") {
          error = "unknown $patch directive in list " + path + ": " + d->dump();
          return false;
        }
        orig.erase(std::remove_if(orig.begin(), orig.end(),
                                  [&](const json& o) { return o.is_object() && o.contains(key) && o[key] == id; }),
                   orig.end());
        continue;
      }
      if (match == orig.end()) {
        orig.push_back(Strip(e));
      } else if (!MergeMap(*match, e, path)) {
        return false;
      }
    }
    return true;
  }
};

// Splits on commas outside parentheses ("a in (x,y),b" -> "a in (x,y)", "b").
std::vector<std::string> SplitTerms(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::string ResourceName(const ResourceInfo& r) {
  std::string s(r.plural);
  if (!r.group.empty()) s += "." + std::string(r.group);
  return s;
}

bool HasStatusSubresource(const std::string& resource) {
  // Volcano's PodGroup and Command CRDs declare `subresources: {}` (crds/), so the API server has no /status
  // for them and stores the status sent with a plain write; the other Volcano CRDs declare `status: {}`.
  static const std::set<std::string> kWithStatus = {
      "pods", "nodes", "namespaces", "services", "persistentvolumeclaims", "persistentvolumes",
      "replicationcontrollers", "resourcequotas",
      "deployments.apps", "replicasets.apps", "statefulsets.apps", "daemonsets.apps",
      "jobs.batch", "cronjobs.batch", "poddisruptionbudgets.policy", "customresourcedefinitions.apiextensions.k8s.io",
      "jobs.batch.volcano.sh", "cronjobs.batch.volcano.sh", "queues.scheduling.volcano.sh",
      "jobflows.flow.volcano.sh", "jobtemplates.flow.volcano.sh", "hypernodes.topology.volcano.sh",
  };
  return kWithStatus.count(resource) > 0;
}

StatusOr<json> StrategicMergePatch(const std::string& resource, const json& original, const json& patch) {
  if (!patch.is_object()) return Invalid("strategic merge patch must be a JSON object");
  Smp smp{resource, {}};
  json out = original;
  if (!smp.MergeMap(out, patch, "")) return Invalid(smp.error);
  return out;
}

StatusOr<core::LabelSelector> ParseSelector(const std::string& sel) {
  core::LabelSelector out;
  for (std::string term : SplitTerms(sel)) {
    term = Trim(term);
    if (term.empty()) continue;
    core::SelectorRequirement r;
    size_t p;
    if (auto open = term.find('('); open != std::string::npos) {
      std::string head = Trim(term.substr(0, open));
      if (term.back() != ')') return BadRequest("unable to parse requirement: " + term);
      auto sp = head.rfind(' ');
      if (sp == std::string::npos) return BadRequest("unable to parse requirement: " + term);
      std::string op = head.substr(sp + 1);
      r.key = Trim(head.substr(0, sp));
      if (op == "in") {
        r.op = core::SelectorOp::kIn;
      } else if (op == "notin") {
        r.op = core::SelectorOp::kNotIn;
      } else {
        return BadRequest("unknown selector operator " + op + " in " + term);
      }
      std::stringstream vs(term.substr(open + 1, term.size() - open - 2));
      std::string v;
      while (std::getline(vs, v, ',')) r.values.push_back(Trim(v));
    } else if ((p = term.find("!=")) != std::string::npos) {
      r.key = Trim(term.substr(0, p));
      r.op = core::SelectorOp::kNotIn;
      r.values = {Trim(term.substr(p + 2))};
    } else if ((p = term.find("==")) != std::string::npos) {
      r.key = Trim(term.substr(0, p));
      r.values = {Trim(term.substr(p + 2))};
    } else if ((p = term.find('=')) != std::string::npos) {
      r.key = Trim(term.substr(0, p));
      r.values = {Trim(term.substr(p + 1))};
    } else if (term[0] == '!') {
      r.key = Trim(term.substr(1));
      r.op = core::SelectorOp::kDoesNotExist;
    } else {
      r.key = term;
      r.op = core::SelectorOp::kExists;
    }
    if (r.key.empty()) return BadRequest("selector requirement without a key: " + term);
    out.match_expressions.push_back(std::move(r));
  }
  return out;
}

ApiStore::ApiStore(const core::Clock* clock) : clock_(clock ? *clock : core::RealClock::Get()) {}

std::string ApiStore::NowRfc3339() const { return core::FormatRfc3339(clock_.WallNow()); }

int64_t ApiStore::ResourceVersion() const {
  core::MutexLock l(mu_);
  return rv_;
}

void ApiStore::Compact() {
  core::MutexLock l(mu_);
  compacted_rv_ = rv_;
  history_.clear();
  cv_.NotifyAll();
}

void ApiStore::SetWatchPaused(bool paused) {
  core::MutexLock l(mu_);
  watch_paused_ = paused;
  cv_.NotifyAll();
}

void ApiStore::Wake() {
  // Under mu_ so the notification cannot fall between a waiter's check of its wake() and its wait.
  core::MutexLock l(mu_);
  cv_.NotifyAll();
}

void ApiStore::EmitLocked(const std::string& res, const std::string& ns, WatchEvent::Type t, const json& obj,
                          const json* before) {
  history_.push_back(StoredEvent{rv_, res, ns, t, obj, before ? std::optional<json>(*before) : std::nullopt});
  cv_.NotifyAll();
}

json ApiStore::CreateLocked(const std::string& res, const ResourceInfo& r, const std::string& ns, json obj,
                           bool keep_uid) {
  json& md = obj["metadata"];
  if (!ns.empty()) md["namespace"] = ns;
  if (!keep_uid || Str(obj, "metadata", "uid").empty()) md["uid"] = "fake-uid-" + std::to_string(++uid_counter_);
  md["creationTimestamp"] = NowRfc3339();
  md["resourceVersion"] = std::to_string(++rv_);
  md["generation"] = 1;
  md.erase("deletionTimestamp");
  if (!obj.contains("apiVersion") && !r.version.empty()) obj["apiVersion"] = r.ApiVersion();
  if (!obj.contains("kind") && !r.kind.empty()) obj["kind"] = std::string(r.kind);
  objects_[{res, ns, md["name"].get<std::string>()}] = obj;
  EmitLocked(res, ns, WatchEvent::Type::kAdded, obj);
  return obj;
}

json ApiStore::Put(const ResourceInfo& r, const std::string& ns, json obj, bool keep_uid) {
  core::MutexLock l(mu_);
  const std::string res = ResourceName(r);
  const std::string sns = r.namespaced ? ns : "";
  ObjKey k{res, sns, Str(obj, "metadata", "name")};
  auto it = objects_.find(k);
  if (it == objects_.end()) return CreateLocked(res, r, sns, std::move(obj), keep_uid);
  const json old = it->second;
  json& md = obj["metadata"];
  for (const char* f : {"uid", "creationTimestamp"})
    if (old["metadata"].contains(f)) md[f] = old["metadata"][f];
  if (!sns.empty()) md["namespace"] = sns;
  md["resourceVersion"] = std::to_string(++rv_);
  it->second = obj;
  EmitLocked(res, sns, WatchEvent::Type::kModified, obj, &old);
  return obj;
}

bool ApiStore::Remove(const ResourceInfo& r, const std::string& ns, const std::string& name) {
  core::MutexLock l(mu_);
  ObjKey k{ResourceName(r), r.namespaced ? ns : "", name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return false;
  json obj = std::move(it->second);
  objects_.erase(it);
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  EmitLocked(std::get<0>(k), std::get<1>(k), WatchEvent::Type::kDeleted, obj);
  return true;
}

std::optional<json> ApiStore::Lookup(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
  core::MutexLock l(mu_);
  auto it = objects_.find({ResourceName(r), r.namespaced ? ns : "", name});
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

StatusOr<json> ApiStore::Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                             const std::string& subresource) {
  const std::string res = ResourceName(r);
  if (!subresource.empty() && !(subresource == "status" && HasStatusSubresource(res))) {
    return NotFound(res + "/" + subresource, name);
  }
  core::MutexLock l(mu_);
  auto it = objects_.find({res, r.namespaced ? ns : "", name});
  if (it == objects_.end()) return NotFound(res, name);
  return it->second;
}

StatusOr<ObjectList> ApiStore::List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) {
  const std::string res = ResourceName(r);
  auto labels = ParseSelector(opts.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = ParseSelector(opts.field_selector);
  if (!fields.ok()) return fields.status();
  // The continue token is "<offset>:<resourceVersion>": every page reports the first page's resourceVersion.
  size_t start = 0;
  std::string token_rv;
  if (!opts.continue_token.empty()) {
    const std::string& t = opts.continue_token;
    auto c = t.find(':');
    if (c == std::string::npos || c == 0 || t.find_first_not_of("0123456789") != c) {
      return BadRequest("invalid continue token " + t);
    }
    start = std::stoul(t.substr(0, c));
    token_rv = t.substr(c + 1);
  }
  core::MutexLock l(mu_);
  std::vector<const json*> all;
  for (const auto& [k, obj] : objects_) {
    if (std::get<0>(k) != res) continue;
    if (!ns.empty() && std::get<1>(k) != ns) continue;
    if (!MatchLabels(*labels, obj) || !MatchFields(*fields, obj)) continue;
    all.push_back(&obj);
  }
  ObjectList out;
  out.metadata.resource_version = token_rv.empty() ? std::to_string(rv_) : token_rv;
  size_t end = all.size();
  if (opts.limit > 0 && start + static_cast<size_t>(opts.limit) < all.size()) {
    end = start + static_cast<size_t>(opts.limit);
    out.metadata.continue_token = std::to_string(end) + ":" + out.metadata.resource_version;
    out.metadata.remaining_item_count = static_cast<int64_t>(all.size() - end);
  }
  for (size_t i = start; i < end && i < all.size(); ++i) out.items.push_back(*all[i]);
  return out;
}

StatusOr<json> ApiStore::Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                                const std::string& subresource) {
  const std::string res = ResourceName(r);
  if (!subresource.empty()) {
    if (res == "pods" && subresource == "binding") {
      std::map<std::string, std::string> annotations;
      if (obj.contains("metadata") && obj["metadata"].contains("annotations") &&
          obj["metadata"]["annotations"].is_object()) {
        for (const auto& [k, v] : obj["metadata"]["annotations"].items())
          if (v.is_string()) annotations[k] = v.get<std::string>();
      }
      std::string name = Str(obj, "metadata", "name");
      Status s = Bind(ns, name, Str(obj, "metadata", "uid"), Str(obj, "target", "name"), annotations);
      if (!s.ok()) return s;
      return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}};
    }
    if (res == "pods" && subresource == "eviction") {
      DeleteOptions opts;
      const json d = obj.value("deleteOptions", json::object());
      if (d.is_object() && d.contains("preconditions")) {
        if (std::string u = Str(d, "preconditions", "uid"); !u.empty()) opts.precondition_uid = u;
        if (std::string v = Str(d, "preconditions", "resourceVersion"); !v.empty()) opts.precondition_resource_version = v;
      }
      Status s = Evict(ns, Str(obj, "metadata", "name"), opts);
      if (!s.ok()) return s;
      return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}};
    }
    return NotFound(res + "/" + subresource, Str(obj, "metadata", "name"));
  }
  if (!obj.is_object()) return BadRequest("object must be a JSON object");
  std::string name = Str(obj, "metadata", "name");
  core::MutexLock l(mu_);
  json o = obj;
  if (name.empty()) {
    std::string gen = Str(obj, "metadata", "generateName");
    if (gen.empty()) return Invalid(res + ": name or generateName is required");
    // Deterministic 5-character suffix (the real server uses random ones).
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = static_cast<uint64_t>(uid_counter_ + 1) * 2654435761u;
    std::string suffix;
    for (int i = 0; i < 5; ++i, n /= 27) suffix += kAlphabet[n % 27];
    name = gen + suffix;
    o["metadata"]["name"] = name;
  }
  const std::string sns = r.namespaced ? ns : "";
  if (objects_.count({res, sns, name})) {
    return core::AlreadyExistsError(res + " \"" + name + "\" already exists").WithHttp(409, "AlreadyExists");
  }
  return CreateLocked(res, r, sns, std::move(o));
}

json ApiStore::StoreUpdateLocked(const ObjKey& k, json obj, const json& old) {
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

// What a write stores, as the API server splits an object between its main resource and `status`: a write to
// /status changes only the status; a write to the main resource of a kind that serves /status keeps the stored
// status; a kind without the subresource stores the whole body.
static json WithStatusFrom(const json& old, const json& incoming, bool to_status, bool has_status) {
  json next = to_status ? old : incoming;
  const json& status_source = to_status ? incoming : old;
  if (!to_status && !has_status) return next;
  if (status_source.contains("status")) {
    next["status"] = status_source["status"];
  } else {
    next.erase("status");
  }
  return next;
}

StatusOr<json> ApiStore::Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                                const std::string& subresource) {
  const std::string res = ResourceName(r);
  const std::string name = Str(obj, "metadata", "name");
  const bool has_status = HasStatusSubresource(res);
  if (!subresource.empty() && !(subresource == "status" && has_status)) {
    return NotFound(res + "/" + subresource, name);
  }
  if (!obj.is_object()) return BadRequest("object must be a JSON object");
  core::MutexLock l(mu_);
  ObjKey k{res, r.namespaced ? ns : "", name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(res, name);
  const json old = it->second;
  // A uid in the body is a precondition: an update meant for a deleted object must not land on a new object
  // of the same name.
  if (std::string want_uid = Str(obj, "metadata", "uid"); !want_uid.empty() && want_uid != Str(old, "metadata", "uid")) {
    return Conflict("Precondition failed: UID in precondition: " + want_uid + ", UID in object meta: " +
                    Str(old, "metadata", "uid"));
  }
  std::string want_rv = Str(obj, "metadata", "resourceVersion");
  if (!want_rv.empty() && want_rv != Str(old, "metadata", "resourceVersion")) {
    return Conflict("Operation cannot be fulfilled on " + res + " \"" + name +
                    "\": the object has been modified; please apply your changes to the latest version and try again");
  }
  return StoreUpdateLocked(k, WithStatusFrom(old, obj, subresource == "status", has_status), old);
}

StatusOr<json> ApiStore::Patch(const ResourceInfo& r, const std::string& ns, const std::string& name,
                               PatchType type, const json& patch, const std::string& subresource) {
  const std::string res = ResourceName(r);
  const bool has_status = HasStatusSubresource(res);
  if (!subresource.empty() && !(subresource == "status" && has_status)) {
    return NotFound(res + "/" + subresource, name);
  }
  if (type == PatchType::kStrategicMerge && !IsBuiltIn(res)) {
    return core::UnknownError("the body of the request was in an unknown format - accepted media types include: "
                              "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
        .WithHttp(415, "UnsupportedMediaType");
  }
  core::MutexLock l(mu_);
  ObjKey k{res, r.namespaced ? ns : "", name};
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(res, name);
  const json old = it->second;
  json patched;
  if (type == PatchType::kStrategicMerge) {
    auto p = StrategicMergePatch(res, old, patch);
    if (!p.ok()) return p.status();
    patched = std::move(*p);
  } else {
    try {
      if (type == PatchType::kJson) {
        patched = old.patch(patch);
      } else {
        patched = old;
        patched.merge_patch(patch);
      }
    } catch (const std::exception& e) {
      return Invalid(std::string("patch could not be applied: ") + e.what());
    }
  }
  if (std::string want_uid = Str(patched, "metadata", "uid"); !want_uid.empty() && want_uid != Str(old, "metadata", "uid")) {
    return Conflict("Precondition failed: UID in precondition: " + want_uid + ", UID in object meta: " +
                    Str(old, "metadata", "uid"));
  }
  std::string want_rv = Str(patched, "metadata", "resourceVersion");
  if (!want_rv.empty() && want_rv != Str(old, "metadata", "resourceVersion")) {
    return Conflict("Operation cannot be fulfilled on " + res + " \"" + name + "\": the object has been modified");
  }
  return StoreUpdateLocked(k, WithStatusFrom(old, patched, subresource == "status", has_status), old);
}

StatusOr<json> ApiStore::Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                const DeleteOptions& opts) {
  core::MutexLock l(mu_);
  return DeleteLocked({ResourceName(r), r.namespaced ? ns : "", name}, opts);
}

StatusOr<json> ApiStore::DeleteLocked(const ObjKey& k, const DeleteOptions& opts) {
  auto it = objects_.find(k);
  if (it == objects_.end()) return NotFound(std::get<0>(k), std::get<2>(k));
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
    if (md.contains("deletionTimestamp")) return obj;
    md["deletionTimestamp"] = NowRfc3339();
    md["deletionGracePeriodSeconds"] = 0;
    md["resourceVersion"] = std::to_string(++rv_);
    json before = it->second;
    it->second = obj;
    EmitLocked(std::get<0>(k), std::get<1>(k), WatchEvent::Type::kModified, obj, &before);
    return obj;
  }
  md["resourceVersion"] = std::to_string(++rv_);
  objects_.erase(it);
  EmitLocked(std::get<0>(k), std::get<1>(k), WatchEvent::Type::kDeleted, obj);
  return obj;
}

Status ApiStore::Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                      const std::string& node, const std::map<std::string, std::string>& annotations) {
  core::MutexLock l(mu_);
  return BindLocked(ns, pod, pod_uid, node, annotations);
}

Status ApiStore::BindLocked(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                            const std::string& node, const std::map<std::string, std::string>& annotations) {
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
  for (const auto& [key, v] : annotations) next["metadata"]["annotations"][key] = v;  // as the API server merges them
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  it->second = next;
  EmitLocked("pods", ns, WatchEvent::Type::kModified, next, &old);
  return Status::OK();
}

Status ApiStore::Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts) {
  core::MutexLock l(mu_);
  auto r = DeleteLocked({"pods", ns, pod}, opts);
  return r.ok() ? Status::OK() : r.status();
}

bool ApiStore::Matches(const WatchCursor& c, const std::string& res, const std::string& ns, const json& obj) {
  return res == c.resource && (c.ns.empty() || ns == c.ns) && MatchLabels(c.labels, obj) && MatchFields(c.fields, obj);
}

StatusOr<ApiStore::WatchCursor> ApiStore::OpenWatch(const ResourceInfo& r, const std::string& ns,
                                                    const ListOptions& opts, std::vector<WatchEvent>* initial) {
  WatchCursor c;
  c.resource = ResourceName(r);
  c.ns = r.namespaced ? ns : "";
  auto labels = ParseSelector(opts.label_selector);
  if (!labels.ok()) return labels.status();
  auto fields = ParseSelector(opts.field_selector);
  if (!fields.ok()) return fields.status();
  c.labels = std::move(*labels);
  c.fields = std::move(*fields);
  core::MutexLock l(mu_);
  if (!opts.resource_version.empty() && opts.resource_version != "0") {
    const std::string& rv = opts.resource_version;
    if (rv.find_first_not_of("0123456789") != std::string::npos || rv.size() > 18) {
      return BadRequest("bad resourceVersion " + rv);
    }
    c.last = std::stoll(rv);
    if (c.last < compacted_rv_) {
      return core::OutOfRangeError("too old resource version: " + rv + " (" + std::to_string(compacted_rv_) + ")")
          .WithHttp(410, "Expired");
    }
    return c;
  }
  // No RV: "get state and start at most recent" - synthetic ADDED for what exists now.
  for (const auto& [k, obj] : objects_) {
    if (Matches(c, std::get<0>(k), std::get<1>(k), obj)) initial->push_back({WatchEvent::Type::kAdded, obj});
  }
  c.last = rv_;
  return c;
}

Status ApiStore::NextEvents(WatchCursor& c, std::vector<WatchEvent>* out,
                            std::chrono::steady_clock::time_point deadline, const std::function<bool()>& wake) {
  core::MutexLock l(mu_);
  while (!((rv_ > c.last && !watch_paused_) || wake() || std::chrono::steady_clock::now() >= deadline)) {
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      cv_.Wait(l);  // no timed wait: a deadline at the clock's end overflows some wait_until implementations
    } else {
      cv_.WaitUntil(l, deadline);
    }
  }
  if (watch_paused_ || rv_ <= c.last) return Status::OK();
  if (c.last < compacted_rv_) {
    return core::OutOfRangeError("too old resource version: " + std::to_string(c.last) + " (" +
                                 std::to_string(compacted_rv_) + ")")
        .WithHttp(410, "Expired");
  }
  for (const auto& e : history_) {
    if (e.rv <= c.last) continue;
    const bool now_in = Matches(c, e.resource, e.ns, e.object);
    if (e.type == WatchEvent::Type::kModified && e.before) {
      const bool was_in = Matches(c, e.resource, e.ns, *e.before);
      if (now_in) {
        out->push_back({was_in ? e.type : WatchEvent::Type::kAdded, e.object});
      } else if (was_in) {
        out->push_back({WatchEvent::Type::kDeleted, e.object});
      }
      continue;
    }
    if (now_in) out->push_back({e.type, e.object});
  }
  c.last = rv_;
  return Status::OK();
}

}  // namespace tephra::kube::testing
