// The REST implementation of kube::Client over a Transport: paths, query strings, verbs, the HTTP -> Status
// table, the client-side token bucket, per-request timeouts and bounded retries of kUnavailable.
#include <algorithm>
#include <cctype>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "rest_internal.h"
#include "tephra/api/json_pruned.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/caught.h"
#include "tephra/kube/log.h"
#include "tephra/kube/config.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < k.size() && eq; ++i)
      eq = std::tolower(static_cast<unsigned char>(k[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    if (eq) return v;
  }
  return "";
}

namespace {

// Process-wide request counts. A short lock per request: the request itself costs a round trip.
struct RequestStats {
  core::Mutex mu;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> counts TEPHRA_GUARDED_BY(mu);
  std::map<std::string, double> limiter_wait TEPHRA_GUARDED_BY(mu);

  void Count(const std::string& client, const std::string& method, int code) {
    core::MutexLock l(mu);
    ++counts[{client, method, code}];
  }
  void Waited(const std::string& client, std::chrono::nanoseconds d) {
    if (d.count() <= 0) return;
    core::MutexLock l(mu);
    limiter_wait[client] += std::chrono::duration<double>(d).count();
  }
};

RequestStats& Stats() {
  static RequestStats* s = new RequestStats();  // never destroyed: clients may outlive static teardown
  return *s;
}

}  // namespace

std::vector<RestRequestCount> RestRequestCounts() {
  auto& st = Stats();
  core::MutexLock l(st.mu);
  std::vector<RestRequestCount> out;
  out.reserve(st.counts.size());
  for (const auto& [k, n] : st.counts) out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), n});
  return out;
}

std::vector<std::pair<std::string, double>> RestLimiterWaitSeconds() {
  auto& st = Stats();
  core::MutexLock l(st.mu);
  return {st.limiter_wait.begin(), st.limiter_wait.end()};
}

namespace rest {

std::string ResourcePath(const ResourceInfo& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string p;
  p.reserve(96);
  if (r.group.empty()) {
    p += "/api/";
  } else {
    p += "/apis/";
    p += r.group;
    p += '/';
  }
  p += r.version;
  if (r.namespaced && !ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += '/';
  p += r.plural;
  if (!name.empty()) {
    p += '/';
    p += name;
    if (!subresource.empty()) {
      p += '/';
      p += subresource;
    }
  }
  return p;
}

std::string QueryEscape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string ListQuery(const ListOptions& o, bool watch) {
  std::string q;
  auto add = [&](const char* k, const std::string& v) {
    q += q.empty() ? '?' : '&';
    q += k;
    q += '=';
    q += QueryEscape(v);
  };
  if (watch) add("watch", "true");
  if (!o.label_selector.empty()) add("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) add("fieldSelector", o.field_selector);
  if (!watch && o.limit > 0) add("limit", std::to_string(o.limit));
  if (!watch && !o.continue_token.empty()) add("continue", o.continue_token);
  if (!o.resource_version.empty()) add("resourceVersion", o.resource_version);
  if (watch && o.allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  if (o.timeout_seconds) add("timeoutSeconds", std::to_string(*o.timeout_seconds));
  return q;
}

TokenBucket::TokenBucket(double qps, int burst) : qps_(qps), burst_(std::max(1, burst)), tokens_(burst_) {}

std::chrono::nanoseconds TokenBucket::Reserve(std::chrono::steady_clock::time_point now) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  core::MutexLock lock(mu_);
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  // Reservation model: tokens may go negative; the caller waits until its token has accrued. This keeps
  // concurrent callers in arrival order without a condition variable.
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

std::chrono::nanoseconds TokenBucket::Acquire() {
  auto wait = Reserve(std::chrono::steady_clock::now());
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
  return wait;
}

}  // namespace rest

namespace {

using core::Status;
using core::StatusOr;

const char* PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

json DeleteOptionsJson(const DeleteOptions& o) {
  json j = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!o.propagation_policy.empty()) j["propagationPolicy"] = o.propagation_policy;
  if (o.grace_period_seconds) j["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (o.precondition_uid) j["preconditions"]["uid"] = *o.precondition_uid;
  if (o.precondition_resource_version) j["preconditions"]["resourceVersion"] = *o.precondition_resource_version;
  return j;
}

std::string StrField(const json& obj, const char* a, const char* b) {
  auto x = obj.find(a);
  if (x == obj.end() || !x->is_object()) return "";
  auto y = x->find(b);
  if (y == x->end() || !y->is_string()) return "";
  return y->get<std::string>();
}

std::string ObjectKey(const json& obj) {
  if (!obj.is_object()) return "";
  const std::string ns = StrField(obj, "metadata", "namespace");
  const std::string name = StrField(obj, "metadata", "name");
  return ns.empty() ? name : ns + "/" + name;
}

// Deeper objects are passed over (LIST, watch) or refused (GET): their DOM would cost stack per level to copy
// or write. No Kubernetes or Volcano kind comes near it; only a free-form field can.
constexpr int kMaxObjectDepth = 512;

void ReportSkipped(const ResourceInfo& r, const json& obj) {
  CountSkippedObject(r.plural);
  log::Warn("skipped an object that cannot be decoded").Kv("resource", r.plural).Kv("object", ObjectKey(obj))
      .Kv("reason", "nested deeper than " + std::to_string(kMaxObjectDepth) + " levels");
}

class RestClient : public Client {
 public:
  RestClient(RestConfig cfg, std::shared_ptr<Transport> t)
      : cfg_(std::move(cfg)), transport_(std::move(t)), limiter_(cfg_.qps, cfg_.burst), tokens_(cfg_) {}

  StatusOr<json> Get(const ResourceInfo& r, const std::string& ns, const std::string& name,
                     const std::string& subresource) override {
    return Call("GET", rest::ResourcePath(r, ns, name, subresource), nullptr, "", "get",
                Describe(r, ns, name));
  }

  StatusOr<ObjectList> List(const ResourceInfo& r, const std::string& ns, const ListOptions& opts) override {
    std::vector<std::vector<std::string>> pruned;
    auto j = Call("GET", rest::ResourcePath(r, ns) + rest::ListQuery(opts, false), nullptr, "", "list",
                  std::string(r.plural), &pruned);
    if (!j.ok()) return j.status();
    ObjectList out;
    std::set<size_t> too_deep;
    for (const auto& where : pruned) {
      if (where.size() == 2 && where[0] == "items") too_deep.insert(std::strtoull(where[1].c_str(), nullptr, 10));
      else return core::UnavailableError("list " + std::string(r.plural) + ": nested deeper than " +
                                         std::to_string(kMaxObjectDepth) + " levels outside its items");
    }
    // An item too deep to decode is left out (as if absent) and reported; the list, and the informer's sync,
    // go on without it.
    if (!j->is_object()) return core::InternalError(std::string("list ") + std::string(r.plural) + ": not an object");
    if (auto m = j->find("metadata"); m != j->end()) {
      Status s = api::Decode(*m, &out.metadata);
      if (!s.ok()) return std::move(s).Annotate("list metadata");
    }
    if (auto items = j->find("items"); items != j->end() && items->is_array()) {
      out.items.reserve(items->size());
      for (size_t i = 0; i < items->size(); ++i) {
        json& it = (*items)[i];
        if (too_deep.count(i)) {
          ReportSkipped(r, it);
          continue;
        }
        out.items.push_back(std::move(it));
      }
    }
    return out;
  }

  StatusOr<json> Create(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource) override {
    std::string path = subresource.empty()
                           ? rest::ResourcePath(r, ns)
                           : rest::ResourcePath(r, ns, StrField(obj, "metadata", "name"), subresource);
    return Call("POST", path, &obj, "application/json", subresource.empty() ? "create" : "post",
                Describe(r, ns, StrField(obj, "metadata", "name")));
  }

  StatusOr<json> Update(const ResourceInfo& r, const std::string& ns, const json& obj,
                        const std::string& subresource) override {
    std::string name = StrField(obj, "metadata", "name");
    if (name.empty()) return core::InvalidArgumentError("update " + std::string(r.plural) + ": metadata.name is empty");
    return Call("PUT", rest::ResourcePath(r, ns, name, subresource), &obj, "application/json", "update",
                Describe(r, ns, name));
  }

  StatusOr<json> Patch(const ResourceInfo& r, const std::string& ns, const std::string& name, PatchType type,
                       const json& patch, const std::string& subresource) override {
    return Call("PATCH", rest::ResourcePath(r, ns, name, subresource), &patch, PatchContentType(type), "patch",
                Describe(r, ns, name));
  }

  Status Delete(const ResourceInfo& r, const std::string& ns, const std::string& name,
                const DeleteOptions& opts) override {
    json body = DeleteOptionsJson(opts);
    auto j = Call("DELETE", rest::ResourcePath(r, ns, name), &body, "application/json", "delete", Describe(r, ns, name));
    return j.ok() ? Status::OK() : j.status();
  }

  Status Bind(const std::string& ns, const std::string& pod, const std::string& pod_uid, const std::string& node,
              const std::map<std::string, std::string>& annotations) override {
    json body = {{"apiVersion", "v1"},
                 {"kind", "Binding"},
                 {"metadata", {{"name", pod}, {"namespace", ns}}},
                 {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    if (!pod_uid.empty()) body["metadata"]["uid"] = pod_uid;
    if (!annotations.empty()) body["metadata"]["annotations"] = annotations;
    auto j = Call("POST", "/api/v1/namespaces/" + ns + "/pods/" + pod + "/binding", &body, "application/json", "bind",
                  "binding pod " + ns + "/" + pod + " to " + node);
    return j.ok() ? Status::OK() : j.status();
  }

  Status Evict(const std::string& ns, const std::string& pod, const DeleteOptions& opts) override {
    // Kubernetes 1.20 serves only policy/v1beta1 Eviction; newer servers also policy/v1. Start with the one
    // that worked last time.
    std::string first = eviction_version_.load() == 1 ? "policy/v1" : "policy/v1beta1";
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::string gv = attempt == 0 ? first : (first == "policy/v1" ? "policy/v1beta1" : "policy/v1");
      json body = {{"apiVersion", gv},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", pod}, {"namespace", ns}}},
                   {"deleteOptions", DeleteOptionsJson(opts)}};
      auto j = Call("POST", "/api/v1/namespaces/" + ns + "/pods/" + pod + "/eviction", &body, "application/json",
                    "evict", "evicting pod " + ns + "/" + pod);
      if (j.ok()) {
        eviction_version_ = gv == "policy/v1" ? 1 : 0;
        return Status::OK();
      }
      // A server that does not know this group version rejects the body as 400.
      if (j.status().code() != core::StatusCode::kInvalidArgument) return j.status();
      if (attempt == 1) return j.status();
    }
    return Status::OK();
  }

  Status Watch(const ResourceInfo& r, const std::string& ns, const ListOptions& opts,
               const std::function<bool(WatchEvent&&)>& handler) override {
    HttpRequest req;
    req.method = "GET";
    req.path = rest::ResourcePath(r, ns) + rest::ListQuery(opts, true);
    req.timeout = opts.timeout_seconds
                      ? std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::seconds(*opts.timeout_seconds) + cfg_.watch_slack)
                      : std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.watch_idle_timeout);
    Status hs = AddHeaders(&req);
    if (!hs.ok()) return hs;
    Stats().Waited(cfg_.user_agent, limiter_.Acquire());
    const std::string what = "watch " + std::string(r.plural);
    Status result;
    HttpResponse head;
    Status s = transport_->Stream(
        req, &head,
        [&](std::string_view line) {
          if (line.empty()) return true;
          auto j = api::ParseJson(line, kMaxObjectDepth);
          if (!j.ok()) {
            // One object too deep to decode (the API server stores up to 10,000 levels) is reported and passed
            // over; ending the watch would re-read it on the next one, and the stream would never move past it.
            // Its resourceVersion is not taken: a later event or bookmark moves the informer on.
            auto p = api::ParseJsonPruned(line, kMaxObjectDepth, 1);
            if (p.ok() && !p->pruned.empty()) {
              const json* o = p->value.is_object() && p->value.contains("object") ? &p->value["object"] : nullptr;
              ReportSkipped(r, o ? *o : json());
              return true;
            }
          }
          if (!j.ok() || !j->is_object()) {
            // A cut-off line is what a truncated stream or a reset looks like: re-watch from the last RV.
            result = core::UnavailableError(what + ": malformed event (stream cut?): " + j.status().message());
            return false;
          }
          std::string type;
          if (auto t = j->find("type"); t != j->end() && t->is_string()) type = t->get<std::string>();
          WatchEvent ev;
          if (auto o = j->find("object"); o != j->end()) ev.object = std::move(*o);
          if (type == "ADDED") ev.type = WatchEvent::Type::kAdded;
          else if (type == "MODIFIED") ev.type = WatchEvent::Type::kModified;
          else if (type == "DELETED") ev.type = WatchEvent::Type::kDeleted;
          else if (type == "BOOKMARK") ev.type = WatchEvent::Type::kBookmark;
          else if (type == "ERROR") {
            int code = 500;
            if (ev.object.is_object())
              if (auto c = ev.object.find("code"); c != ev.object.end() && c->is_number_integer()) code = c->get<int>();
            result = rest::StatusFromResponse(code, ev.object.dump(-1, ' ', false, json::error_handler_t::replace), "", "watch", what);
            return false;
          } else {
            result = core::UnavailableError(what + ": unknown event type \"" + type + "\"");
            return false;
          }
          return handler(std::move(ev));
        },
        opts.canceller);
    Stats().Count(cfg_.user_agent, "WATCH", head.status);
    if (!s.ok()) {
      // A read timeout means the stream stayed quiet past timeoutSeconds + slack: a normal end.
      if (s.code() == core::StatusCode::kDeadlineExceeded) return Status::OK();
      return s;
    }
    if (head.status < 200 || head.status >= 300)
      return rest::StatusFromResponse(head.status, head.body, head.Header("Retry-After"), "watch", what);
    return result;
  }

  StatusOr<json> Raw(const std::string& method, const std::string& path, const json* body,
                     const std::string& content_type) override {
    return Call(method, path, body, content_type, method == "POST" ? "create" : "raw", method + " " + path);
  }

 private:
  static std::string Describe(const ResourceInfo& r, const std::string& ns, const std::string& name) {
    std::string s(r.plural);
    s += ' ';
    if (!ns.empty()) s += ns + "/";
    s += name;
    return s;
  }

  Status AddHeaders(HttpRequest* req) {
    auto tok = tokens_.Token();
    if (!tok.ok()) return tok.status();
    if (!tok->empty()) req->headers.emplace_back("Authorization", "Bearer " + *tok);
    req->headers.emplace_back("Accept", "application/json");
    req->headers.emplace_back("User-Agent", cfg_.user_agent);
    return Status::OK();
  }

  std::chrono::milliseconds Backoff(int attempt) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    auto base = cfg_.retry_initial * (int64_t{1} << std::min(attempt, 16));
    base = std::min(base, cfg_.retry_max);
    std::uniform_int_distribution<int64_t> dist(base.count() / 2, std::max<int64_t>(base.count(), 1));
    return std::chrono::milliseconds(dist(rng));
  }

  // pruned: when set, a body with a value nested too deep is read with that value as null, and where is said
  // here (a LIST, whose other items are good); otherwise such a body is an error.
  StatusOr<json> Call(const std::string& method, const std::string& path, const json* body,
                      const std::string& content_type, const std::string& verb, const std::string& what,
                      std::vector<std::vector<std::string>>* pruned = nullptr) {
    HttpRequest req;
    req.method = method;
    req.path = path;
    req.timeout = cfg_.timeout;
    if (body) {
      // Text that is not UTF-8 is replaced rather than thrown on: a write is never lost to one bad string.
      req.body = body->dump(-1, ' ', false, json::error_handler_t::replace);
      req.content_type = content_type;
    }
    Status hs = AddHeaders(&req);
    if (!hs.ok()) return hs;
    Status last;
    const int tries = std::max(1, cfg_.max_tries);
    for (int attempt = 0; attempt < tries; ++attempt) {
      Stats().Waited(cfg_.user_agent, limiter_.Acquire());
      auto resp = transport_->Do(req);
      Stats().Count(cfg_.user_agent, method, resp.ok() ? resp->status : 0);
      if (resp.ok() && resp->status >= 200 && resp->status < 300) {
        if (resp->body.empty()) return json::object();
        auto j = api::ParseJson(resp->body, kMaxObjectDepth);
        if (!j.ok() && pruned) {
          auto p = api::ParseJsonPruned(resp->body, kMaxObjectDepth, 2);
          if (p.ok() && !p->pruned.empty()) {
            *pruned = std::move(p->pruned);
            return std::move(p->value);
          }
        }
        // Raw reads of text endpoints (pods/log is text/plain) return the text as a JSON string.
        if (!j.ok() && resp->Header("Content-Type").find("json") == std::string::npos) return json(resp->body);
        if (!j.ok()) return core::UnavailableError(what + ": bad response body: " + j.status().message());
        return std::move(j).value();
      }
      if (!resp.ok()) {
        last = resp.status();
        if (last.code() == core::StatusCode::kDeadlineExceeded || last.code() == core::StatusCode::kUnavailable)
          last = core::UnavailableError(what + ": " + last.message());
        else
          return last;
      } else {
        last = rest::StatusFromResponse(resp->status, resp->body, resp->Header("Retry-After"), verb, what);
      }
      if (!core::IsUnavailable(last) || attempt + 1 >= tries) break;
      auto delay = last.retry_after() ? *last.retry_after() : Backoff(attempt);
      std::this_thread::sleep_for(delay);
    }
    return last;
  }

  RestConfig cfg_;
  std::shared_ptr<Transport> transport_;
  rest::TokenBucket limiter_;
  TokenSource tokens_;
  std::atomic<int> eviction_version_{0};
};

}  // namespace

ClientPtr NewRestClient(const RestConfig& cfg, std::shared_ptr<Transport> transport) {
  return std::make_shared<RestClient>(cfg, std::move(transport));
}

StatusOr<ClientPtr> NewClient(const RestConfig& cfg) {
  auto t = NewCpprestTransport(cfg);
  if (!t.ok()) return t.status();
  return NewRestClient(cfg, std::shared_ptr<Transport>(std::move(t).value()));
}

}  // namespace tephra::kube
