#include "tephra/scheduler/extender.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/kube/log.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {

using api::json;

namespace {

// Go's encoding/json matches object keys case-insensitively (exact match first); kube-scheduler's structs
// have no tags, so "Pod" and "pod" both occur in the wild.
const json* Field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  if (auto it = obj.find(std::string(key)); it != obj.end()) return &*it;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() == key.size() &&
        std::equal(k.begin(), k.end(), key.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      return &*it;
  }
  return nullptr;
}

// A Pod with its volumes and affinity terms is about 20 levels deep; a NodeList a few more.
constexpr int kMaxExtenderDepth = 128;

ExtenderReply BadRequest(const std::string& what) { return {400, "bad extender request: " + what + "\n"}; }

}  // namespace

core::StatusOr<ExtenderArgs> ParseExtenderArgs(const std::string& body) {
  // Bounded: a body nested without end is refused before any DOM exists (copies and dumps recurse).
  auto parsed = api::ParseJson(body, kMaxExtenderDepth);
  if (!parsed.ok()) return core::InvalidArgumentError("body is not JSON: " + parsed.status().message());
  json j = std::move(parsed).value();
  if (!j.is_object()) return core::InvalidArgumentError("ExtenderArgs must be a JSON object");
  ExtenderArgs a;
  const json* pod = Field(j, "Pod");
  if (!pod || !pod->is_object()) return core::InvalidArgumentError("ExtenderArgs.Pod is missing or not an object");
  if (auto s = api::Decode(*pod, &a.pod); !s.ok()) return s.Annotate("ExtenderArgs.Pod");
  const json* names = Field(j, "NodeNames");
  const json* nodes = Field(j, "Nodes");
  if (names && !names->is_null()) {
    if (!names->is_array()) return core::InvalidArgumentError("ExtenderArgs.NodeNames must be an array of strings");
    for (const auto& n : *names) {
      if (!n.is_string()) return core::InvalidArgumentError("ExtenderArgs.NodeNames must be an array of strings");
      a.names.push_back(n.get<std::string>());
    }
    a.by_names = true;
  } else if (nodes && !nodes->is_null()) {
    const json* items = Field(*nodes, "items");
    if (!nodes->is_object() || !items || !(items->is_array() || items->is_null()))
      return core::InvalidArgumentError("ExtenderArgs.Nodes must be a NodeList with items");
    a.nodes = *nodes;
    if (items->is_array()) {
      for (const auto& n : *items) {
        const json* meta = Field(n, "metadata");
        const json* name = meta ? Field(*meta, "name") : nullptr;
        if (!name || !name->is_string())
          return core::InvalidArgumentError("ExtenderArgs.Nodes.items[] without metadata.name");
        a.names.push_back(name->get<std::string>());
      }
    }
  } else {
    return core::InvalidArgumentError("ExtenderArgs has neither NodeNames nor Nodes");
  }
  return a;
}

namespace {

// The pod as the core sees it. The job is not set (the pod is kube-scheduler's, not a task of a Tephra
// gang); pods=1 is what ClusterState would add on UpsertPod.
sched::TaskInfo TaskOf(const api::Pod& pod, sched::ClusterState& state) {
  sched::TaskInfo t = ToTaskInfo(pod, &state.resources(), {});
  t.request.Set(sched::kPods, 1);
  t.best_effort = t.request.IsBestEffort();
  return t;
}

// Gang admission: a pod of a PodGroup may only be placed once Tephra has admitted the gang (Inqueue or
// Running), otherwise kube-scheduler would start a gang piecemeal. "" when the pod may go ahead.
std::string GangBlock(const api::Pod& pod, const sched::ClusterState& state) {
  auto it = pod.metadata.annotations.find(std::string(api::kPodGroupAnnotation));
  if (it == pod.metadata.annotations.end() || it->second.empty()) return {};
  const std::string key = pod.metadata.namespace_ + "/" + it->second;
  const sched::JobInfo* j = state.FindJob(key);
  if (!j) return "gang not admitted: PodGroup " + key + " is unknown to the Tephra scheduler";
  if (j->phase == sched::PodGroupPhase::kInqueue || j->phase == sched::PodGroupPhase::kRunning) return {};
  return "gang not admitted: PodGroup " + key + " is " + sched::PodGroupPhaseName(j->phase) +
         " (Tephra admits a gang once its queue and the cluster can hold minResources)";
}

std::string ResourceReason(const sched::TaskInfo& t, const sched::NodeInfo& n, const sched::ResourceRegistry& reg) {
  if (t.request.Get(sched::kUnoffered) > 0) return "node(s) had insufficient " + sched::UnofferedText(t.unoffered);
  int d = t.request.FirstShortDimension(n.Idle());
  if (d < 0) return {};
  if (d == sched::kPods) return "node(s) had too many pods";
  return "node(s) had insufficient " + reg.Name(d);
}

core::StatusOr<std::vector<sched::PluginSlot>> BuildSlots(const sched::SchedulerConf& conf,
                                                          const sched::PluginRegistry& registry) {
  std::vector<sched::PluginSlot> slots;
  for (size_t i = 0; i < conf.tiers.size(); ++i) {
    for (const auto& opt : conf.tiers[i].plugins) {
      // Known Volcano plugins Tephra does not implement were reported by Validate and are skipped, like
      // the scheduler itself does.
      if (!registry.Has(opt.name)) continue;
      TEPHRA_ASSIGN_OR_RETURN(std::unique_ptr<sched::Plugin> p, registry.Create(opt));
      slots.push_back({std::move(p), opt, static_cast<int>(i)});
    }
  }
  return slots;
}

// The extender answers even when a plugin cannot open its session (no cycle state depends on it here),
// but says so: a 500 tells kube-scheduler this extender could not judge the pod.
ExtenderReply OpenFailed(const core::Status& s) {
  return {500, json{{"Error", "tephra: " + s.message()}}.dump()};
}

}  // namespace

core::StatusOr<std::unique_ptr<Extender>> Extender::Create(const sched::SchedulerConf& conf,
                                                           const sched::PluginRegistry& registry) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry));
  TEPHRA_ASSIGN_OR_RETURN(auto slots, BuildSlots(conf, registry));
  return std::unique_ptr<Extender>(new Extender(conf, registry, std::move(slots)));
}

core::Status Extender::UpdateConf(const sched::SchedulerConf& conf) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry_));
  TEPHRA_ASSIGN_OR_RETURN(plugins_, BuildSlots(conf, registry_));
  conf_ = conf;
  return core::Status::OK();
}

FilterVerdict Extender::Filter(sched::ClusterState& state, const ExtenderArgs& args) {
  const sched::TaskInfo t = TaskOf(args.pod, state);
  const std::string gang = GangBlock(args.pod, state);

  sched::CycleResult scratch;  // plugins may record into it; an extender call has no cycle output
  sched::Session ssn(&state, &conf_, &plugins_, sched::WallTime{}, nullptr, &scratch);
  FilterVerdict v;
  if (core::Status s = ssn.Open(); !s.ok()) {
    ssn.Close();
    v.error = std::move(s);
    return v;
  }
  for (const auto& name : args.names) {
    const sched::NodeInfo* n = state.FindNode(name);
    if (!n) {
      v.failed.emplace_back(name, "node(s) unknown to the Tephra scheduler (not in its cache yet)");
      continue;
    }
    if (!gang.empty()) {
      v.unresolvable.emplace_back(name, gang);
      continue;
    }
    // Static predicates (affinity, taints, readiness) cannot be fixed by preempting pods: unresolvable.
    // Resource shortage and anti-affinity with running pods can: plain failures.
    if (std::string r = ssn.StaticPredicate(t, *n); !r.empty()) {
      v.unresolvable.emplace_back(name, std::move(r));
    } else if (std::string r2 = ResourceReason(t, *n, state.resources()); !r2.empty()) {
      v.failed.emplace_back(name, std::move(r2));
    } else if (std::string r3 = ssn.DynamicPredicate(t, *n); !r3.empty()) {
      v.failed.emplace_back(name, std::move(r3));
    } else {
      v.passed.push_back(name);
    }
  }
  ssn.Close();
  return v;
}

ExtenderReply EncodeFilterResult(ExtenderArgs args, const FilterVerdict& v) {
  if (!v.error.ok()) return OpenFailed(v.error);
  // Unresolvable nodes are listed in FailedNodes too: kube-scheduler releases that predate
  // FailedAndUnresolvableNodes (it is ignored there) still show the reason; newer ones let it take precedence.
  json failed = json::object(), unresolvable = json::object();
  for (const auto& [n, r] : v.failed) failed[n] = r;
  for (const auto& [n, r] : v.unresolvable) {
    unresolvable[n] = r;
    failed[n] = r;
  }
  json out = {{"FailedNodes", std::move(failed)}, {"FailedAndUnresolvableNodes", std::move(unresolvable)}, {"Error", ""}};
  if (args.by_names) {
    out["NodeNames"] = v.passed;
  } else {
    // Echo the caller's NodeList with only the passing items (kube-scheduler maps them back by name).
    json nodes = std::move(args.nodes);
    json* items = nullptr;
    for (auto it = nodes.begin(); it != nodes.end(); ++it)
      if (std::string k = it.key(); k.size() == 5 && (k == "items" || k == "Items")) items = &it.value();
    json kept = json::array();
    if (items && items->is_array()) {
      std::set<std::string> ok(v.passed.begin(), v.passed.end());
      for (auto& item : *items) {
        const json* meta = Field(item, "metadata");
        const json* nm = meta ? Field(*meta, "name") : nullptr;
        if (nm && nm->is_string() && ok.count(nm->get<std::string>())) kept.push_back(std::move(item));
      }
    }
    nodes["items"] = std::move(kept);
    out["Nodes"] = std::move(nodes);
  }
  return {200, out.dump()};
}

ExtenderReply Extender::Filter(sched::ClusterState& state, const std::string& body) {
  auto args = ParseExtenderArgs(body);
  if (!args.ok()) return BadRequest(args.status().message());
  FilterVerdict v = Filter(state, *args);
  return EncodeFilterResult(std::move(*args), v);
}

core::StatusOr<std::vector<double>> Extender::Prioritize(sched::ClusterState& state, const ExtenderArgs& args) {
  const sched::TaskInfo t = TaskOf(args.pod, state);
  sched::CycleResult scratch;
  sched::Session ssn(&state, &conf_, &plugins_, sched::WallTime{}, nullptr, &scratch);
  if (core::Status s = ssn.Open(); !s.ok()) {
    ssn.Close();
    return s;
  }
  std::vector<double> raw(args.names.size(), std::nan(""));
  for (size_t i = 0; i < args.names.size(); ++i)
    if (const sched::NodeInfo* n = state.FindNode(args.names[i])) raw[i] = ssn.NodeScore(t, *n);
  if (ssn.BatchScored(t)) {
    // Scores normalised over the nodes asked about (kube-scheduler passes the ones its filters kept).
    std::vector<int> slots;
    std::vector<size_t> at;
    std::vector<double> batch;
    for (size_t i = 0; i < args.names.size(); ++i)
      if (int slot = state.NodeIndex(args.names[i]); slot >= 0) {
        slots.push_back(slot);
        at.push_back(i);
        batch.push_back(0);
      }
    ssn.BatchNodeScore(t, slots, batch);
    for (size_t k = 0; k < at.size(); ++k) raw[at[k]] += batch[k];
  }
  ssn.Close();
  return raw;
}

ExtenderReply EncodePrioritizeResult(const ExtenderArgs& args, const core::StatusOr<std::vector<double>>& scores) {
  if (!scores.ok()) return OpenFailed(scores.status());
  const std::vector<double>& raw = *scores;
  // Min-max scaling to 0..10: Tephra's raw scores are sums of 0..100-per-plugin terms whose absolute level
  // says little (binpack on a half-full cluster scores every node around 50); what kube-scheduler needs is
  // the order and spacing, so the best node gets 10 and the worst 0. All equal (or unknown) -> 0: no
  // preference, kube-scheduler's own scores decide.
  double lo = 0, hi = 0;
  bool any = false;
  for (double r : raw) {
    if (std::isnan(r)) continue;
    lo = any ? std::min(lo, r) : r;
    hi = any ? std::max(hi, r) : r;
    any = true;
  }
  json out = json::array();
  for (size_t i = 0; i < args.names.size(); ++i) {
    int64_t score = 0;
    if (i < raw.size() && !std::isnan(raw[i]) && hi > lo) score = std::llround(kMaxExtenderPriority * (raw[i] - lo) / (hi - lo));
    out.push_back({{"Host", args.names[i]}, {"Score", score}});
  }
  return {200, out.dump()};
}

ExtenderReply Extender::Prioritize(sched::ClusterState& state, const std::string& body) {
  auto args = ParseExtenderArgs(body);
  if (!args.ok()) return BadRequest(args.status().message());
  return EncodePrioritizeResult(*args, Prioritize(state, *args));
}

core::StatusOr<ExtenderBinding> ParseBindingArgs(const std::string& body) {
  auto parsed = api::ParseJson(body, kMaxExtenderDepth);
  if (!parsed.ok()) return core::InvalidArgumentError("body is not JSON: " + parsed.status().message());
  json j = std::move(parsed).value();
  if (!j.is_object()) return core::InvalidArgumentError("ExtenderBindingArgs must be a JSON object");
  ExtenderBinding b;
  struct F {
    const char* name;
    std::string* out;
    bool required;
  };
  for (const F& f : {F{"PodName", &b.pod_name, true}, F{"PodNamespace", &b.pod_namespace, false},
                     F{"PodUID", &b.pod_uid, false}, F{"Node", &b.node, true}}) {
    const json* v = Field(j, f.name);
    if (v && !v->is_null() && !v->is_string())
      return core::InvalidArgumentError(std::string("ExtenderBindingArgs.") + f.name + " must be a string");
    if (v && v->is_string()) *f.out = v->get<std::string>();
    if (f.required && f.out->empty())
      return core::InvalidArgumentError(std::string("ExtenderBindingArgs.") + f.name + " is missing");
  }
  if (b.pod_namespace.empty()) b.pod_namespace = "default";
  return b;
}

ExtenderReply Bind(kube::Client& client, const std::string& body) {
  auto b = ParseBindingArgs(body);
  if (!b.ok()) return BadRequest(b.status().message());
  core::Status s = client.Bind(b->pod_namespace, b->pod_name, b->pod_uid, b->node);
  json out = {{"Error", ""}};
  if (!s.ok()) {
    const bool conflict = core::IsConflict(s) || s.http_status() == 409;
    out["Error"] = (conflict ? "pod " + b->pod_namespace + "/" + b->pod_name + " is already assigned to a node: "
                             : "binding " + b->pod_namespace + "/" + b->pod_name + " to " + b->node + ": ") +
                   s.ToString();
  }
  return {200, out.dump()};
}

void InstallExtenderEndpoints(kube::HttpServer& server, const std::string& prefix, Extender* extender,
                              WithState with_state, kube::ClientPtr bind_client, bool bind_from_any) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  if (!p.empty() && p.front() != '/') p.insert(p.begin(), '/');
  auto respond = [](const ExtenderReply& r) {
    return kube::ServerResponse{r.http_status, r.http_status == 200 ? "application/json" : "text/plain; charset=utf-8",
                                r.body};
  };
  // JSON is parsed and written on the server's thread; only the evaluation runs with the state (on the
  // scheduler's state thread), so a large request never holds up the scheduler.
  server.HandlePost(p + "/filter", [=](const kube::ServerRequest& req) {
    auto args = ParseExtenderArgs(req.body);
    if (!args.ok()) return respond(BadRequest(args.status().message()));
    FilterVerdict v;
    with_state([&](sched::ClusterState& st) { v = extender->Filter(st, *args); });
    return respond(EncodeFilterResult(std::move(*args), v));
  });
  server.HandlePost(p + "/prioritize", [=](const kube::ServerRequest& req) {
    auto args = ParseExtenderArgs(req.body);
    if (!args.ok()) return respond(BadRequest(args.status().message()));
    core::StatusOr<std::vector<double>> raw = std::vector<double>{};
    with_state([&](sched::ClusterState& st) { raw = extender->Prioritize(st, *args); });
    return respond(EncodePrioritizeResult(*args, raw));
  });
  server.HandlePost(p + "/bind", [=](const kube::ServerRequest& req) {
    if (!bind_from_any && !kube::IsLoopbackPeer(req.remote_addr)) {
      kube::log::Warn("refused an extender bind from another host").Kv("peer", req.remote_addr);
      return kube::ServerResponse{403, "text/plain; charset=utf-8",
                                  "bind is served only to a peer on this host; start the scheduler with "
                                  "--extender-bind-from=any to allow others\n"};
    }
    // No scheduler state is involved: the informer records the binding like any other pod update.
    return respond(Bind(*bind_client, req.body));
  });
}

}  // namespace tephra::scheduler
