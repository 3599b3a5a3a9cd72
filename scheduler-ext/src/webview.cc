#include "tephra/scheduler/webview.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "tephra/api/devices.h"
#include "tephra/api/labels.h"
#include "tephra/core/clock.h"
#include "tephra/scheduler/state_metrics.h"

namespace tephra::scheduler {

using api::json;

// --------------------------------------------------------------------------------------------- node faults

std::vector<std::string> NodeFaultSignals(const api::Node& node) {
  std::vector<std::string> out;
  const auto& ann = node.metadata.annotations;
  if (auto it = ann.find(std::string(api::kFaultAnnotation)); it != ann.end() && !it->second.empty())
    out.push_back("Fault:" + it->second);
  bool ready = false;
  for (const auto& c : node.status.conditions)
    if (c.type == api::kNodeReady) ready = c.status == api::kConditionTrue;
  if (!ready) out.push_back("NotReady");
  if (node.spec.unschedulable) out.push_back("Unschedulable");
  // Every other condition is a problem report when True (the kubelet's pressures, NPD, NVSentinel).
  std::vector<std::string> conds;
  for (const auto& c : node.status.conditions)
    if (c.type != api::kNodeReady && c.status == api::kConditionTrue) conds.push_back(c.type);
  std::sort(conds.begin(), conds.end());
  out.insert(out.end(), conds.begin(), conds.end());
  // Cards a device plugin took out of allocatable (docs/faults.md, "DeviceUnhealthy (count)").
  for (const auto& [name, cap] : node.status.capacity) {
    if (name != api::kNvidiaGpuResource && !name.starts_with(api::kAscend910Resource)) continue;
    auto a = node.status.allocatable.find(name);
    const int64_t alloc = a == node.status.allocatable.end() ? 0 : a->second.Value();
    if (alloc < cap.Value())
      out.push_back("DeviceUnhealthy:" + name + " " + std::to_string(alloc) + "/" + std::to_string(cap.Value()));
  }
  for (std::string_view key : {api::kAscendUnhealthyKey, api::kAscendNetworkUnhealthyKey})
    if (auto it = ann.find(std::string(key)); it != ann.end() && !it->second.empty())
      out.push_back("DeviceUnhealthy:" + it->second);
  return out;
}

void WebViewRecorder::ObserveNode(const std::string& name, const api::Node* node, sched::WallTime now) {
  std::vector<std::string> now_signals;
  if (node) now_signals = NodeFaultSignals(*node);
  core::MutexLock l(mu_);
  auto it = signals_.find(name);
  const std::vector<std::string> before = it == signals_.end() ? std::vector<std::string>{} : it->second;
  if (before == now_signals) return;  // a heartbeat or a usage change: nothing to tell
  NodeFaultEvent e{now, name, "", now_signals};
  if (!node) {
    e.kind = "removed";
    e.signals = before;
  } else if (before.empty()) {
    e.kind = "fault";
  } else if (now_signals.empty()) {
    e.kind = "recovery";
    e.signals = before;
  } else {
    e.kind = "change";
  }
  if (now_signals.empty()) signals_.erase(name);
  else signals_[name] = std::move(now_signals);
  faults_.push_back(std::move(e));
  while (faults_.size() > capacity_) faults_.pop_front();
}

void WebViewRecorder::ObserveCycle(const sched::CycleResult& res, const sched::ClusterState& st) {
  for (const auto& u : res.pod_groups) conditions_[u.job] = u.conditions;
  // Jobs that left: pruned in one pass once the map has doubled since the last prune, so the cost stays O(1)
  // amortised per job and a cycle never walks the jobs for it.
  if (conditions_.size() <= prune_at_) return;
  for (auto it = conditions_.begin(); it != conditions_.end();) {
    if (st.FindJob(it->first)) ++it;
    else it = conditions_.erase(it);
  }
  prune_at_ = 2 * conditions_.size() + 64;
}

std::vector<NodeFaultEvent> WebViewRecorder::Faults() const {
  core::MutexLock l(mu_);
  return {faults_.rbegin(), faults_.rend()};
}

std::map<std::string, std::vector<std::string>> WebViewRecorder::NodeSignals() const {
  core::MutexLock l(mu_);
  return signals_;
}

// ------------------------------------------------------------------------------------------------ snapshot

namespace {

// A resource as a JSON number: cpu in cores, memory in bytes, scalars in units. Unlimited and zero dimensions
// are left out (and pods, which no table shows), so `{}` means nothing.
json ResourceJson(const sched::Resource& r, const sched::ResourceRegistry& reg) {
  json out = json::object();
  for (int i = 0; i < reg.size(); ++i) {
    if (i == sched::kPods) continue;
    const int64_t v = r.Get(i);
    if (v <= 0 || v >= sched::kUnlimited) continue;
    if (i == sched::kCpu) out[reg.Name(i)] = static_cast<double>(v) / 1000.0;
    else out[reg.Name(i)] = v;
  }
  return out;
}

const char* QueueStateName(sched::QueueState s) {
  switch (s) {
    case sched::QueueState::kOpen: return "Open";
    case sched::QueueState::kClosed: return "Closed";
    case sched::QueueState::kClosing: return "Closing";
    case sched::QueueState::kUnknown: break;
  }
  return "Unknown";
}

bool IsDevice(const std::string& name) {
  return name == api::kNvidiaGpuResource || name.starts_with(api::kAscend910Resource) ||
         name.starts_with("volcano.sh/vgpu");
}

bool Waiting(const sched::JobInfo& j) {
  return (j.phase == sched::PodGroupPhase::kPending || j.phase == sched::PodGroupPhase::kInqueue) &&
         j.ReadyCount() < j.min_member;
}

json NodeJson(const sched::NodeInfo& n, const sched::ResourceRegistry& reg, const WebExtras& x) {
  json node = {{"name", n.name}, {"ready", n.ready}, {"unschedulable", n.unschedulable}, {"pods", n.task_count}};
  auto sig = x.node_signals.find(n.name);
  json signals = json::array();
  if (sig != x.node_signals.end())
    for (const auto& s : sig->second) signals.push_back(s);
  // Faulted: anything but a plain cordon (a cordon is an operator's choice, not a fault).
  bool faulted = !n.ready;
  for (const auto& s : signals) faulted = faulted || s.get<std::string>() != "Unschedulable";
  node["faulted"] = faulted;
  node["signals"] = std::move(signals);
  node["cpu"] = {{"allocated", static_cast<double>(n.used.Get(sched::kCpu)) / 1000.0},
                 {"allocatable", static_cast<double>(n.allocatable.Get(sched::kCpu)) / 1000.0}};
  node["memory"] = {{"allocated", n.used.Get(sched::kMemory)}, {"allocatable", n.allocatable.Get(sched::kMemory)}};
  json devices = json::array();
  for (int i = sched::kFirstScalar; i < reg.size(); ++i) {
    const int64_t cap = n.allocatable.Get(i), used = n.used.Get(i);
    if (cap <= 0 && used <= 0) continue;
    devices.push_back({{"name", reg.Name(i)}, {"allocated", used}, {"allocatable", cap}, {"device", IsDevice(reg.Name(i))}});
  }
  // Cards a device plugin reports unhealthy (devices.h), when the node's cards are modelled.
  int unhealthy = 0;
  for (const auto& c : n.devices.cards) unhealthy += c.Healthy() ? 0 : 1;
  if (unhealthy) node["unhealthyCards"] = unhealthy;
  node["devices"] = std::move(devices);
  return node;
}

}  // namespace

json BuildWebSnapshot(const sched::Scheduler& s, const WebExtras& x) {
  const sched::ClusterState& st = s.state();
  const sched::ResourceRegistry& reg = st.resources();
  json out = json::object();
  out["schemaVersion"] = 1;
  out["generatedAt"] = core::FormatRfc3339(x.now);
  out["scheduler"] = {{"leading", x.leading}, {"cycles", x.cycles}, {"nodes", st.node_count()}, {"pods", st.task_count()}};

  // ---- jobs: waiting and running, counted per queue
  struct QueueCount {
    int pending = 0, running = 0;
  };
  std::map<std::string, QueueCount> per_queue;
  std::vector<const sched::JobInfo*> waiting, running;
  st.ForEachJob([&](const sched::JobInfo& j) {
    if (j.phase == sched::PodGroupPhase::kCompleted) return;
    bool placed = false;
    for (size_t k = 0; k < sched::kTaskStatusCount && !placed; ++k)
      placed = sched::OccupiesNode(static_cast<sched::TaskStatus>(k)) && j.status_count[k] > 0;
    if (Waiting(j) || s.positions().count(j.key)) {
      waiting.push_back(&j);
      ++per_queue[j.queue].pending;
    }
    if (placed) {
      running.push_back(&j);
      ++per_queue[j.queue].running;
    }
  });

  // ---- queues
  json queues = json::array();
  st.ForEachQueue([&](const sched::QueueInfo& q) {
    json e = {{"name", q.name},
              {"weight", q.weight},
              {"state", QueueStateName(q.state)},
              {"parent", q.parent},
              {"reclaimable", q.reclaimable},
              {"allocated", ResourceJson(q.allocated, reg)},
              {"request", ResourceJson(q.request, reg)},
              {"capability", ResourceJson(q.capability, reg)}};
    auto d = s.queue_deserved().find(q.name);
    if (d != s.queue_deserved().end()) {
      e["deserved"] = ResourceJson(d->second, reg);
      // The share volcano_queue_share reports (state_metrics.h).
      std::string by;
      const double share = QueueShare(q.allocated, d->second, reg, &by);
      e["share"] = share;
      e["shareResource"] = by;
    } else {
      e["deserved"] = nullptr;
      e["share"] = nullptr;
    }
    auto c = per_queue.find(q.name);
    e["pending"] = c == per_queue.end() ? 0 : c->second.pending;
    e["running"] = c == per_queue.end() ? 0 : c->second.running;
    queues.push_back(std::move(e));
  });
  std::sort(queues.begin(), queues.end(), [](const json& a, const json& b) { return a["name"] < b["name"]; });
  out["queues"] = std::move(queues);

  // ---- waiting jobs: by queue, then place (jobs without one last, by creation)
  auto pos_of = [&](const sched::JobInfo* j) {
    auto p = s.positions().find(j->key);
    return p == s.positions().end() ? std::numeric_limits<int>::max() : p->second;
  };
  std::sort(waiting.begin(), waiting.end(), [&](const sched::JobInfo* a, const sched::JobInfo* b) {
    return std::make_tuple(a->queue, pos_of(a), a->creation_time, a->key) <
           std::make_tuple(b->queue, pos_of(b), b->creation_time, b->key);
  });
  json pending = json::array();
  for (const sched::JobInfo* j : waiting) {
    if (pending.size() >= x.max_jobs) break;
    json e = {{"namespace", j->ns},
              {"name", j->name},
              {"queue", j->queue},
              {"minMember", j->min_member},
              {"pods", j->TotalTasks()},
              {"ready", j->ReadyCount()},
              {"phase", sched::PodGroupPhaseName(j->phase)},
              {"created", core::FormatRfc3339(j->creation_time)},
              {"request", ResourceJson(j->pending_request, reg)}};
    const int pos = pos_of(j);
    e["position"] = pos == std::numeric_limits<int>::max() ? json(nullptr) : json(pos);
    // The reason the core last gave (the PodGroup's conditions); a plain pod's stand-in has no PodGroup and
    // falls back on its last allocation failure.
    e["reason"] = "";
    e["message"] = "";
    e["queued"] = "";
    const std::vector<sched::PodGroupCondition>* conds = nullptr;
    if (x.conditions)
      if (auto c = x.conditions->find(j->key); c != x.conditions->end()) conds = &c->second;
    if (conds) {
      for (const auto& c : *conds) {
        if (c.type == "Unschedulable") {
          e["reason"] = c.reason;
          e["message"] = c.message;
          e["since"] = core::FormatRfc3339(c.last_transition_time);
        } else if (c.type == "Queued" && c.status == "True") {
          e["queued"] = c.message;
        }
      }
    } else if (j->sched.failed) {
      e["reason"] = "NotEnoughResources";
      e["message"] = j->sched.message;
    }
    if (auto est = s.estimates().find(j->key); est != s.estimates().end()) {
      const sched::StartEstimate& se = est->second;
      json ej = {{"kind", sched::StartEstimateKindName(se.kind)}, {"why", se.why}, {"nodes", se.nodes}};
      ej["time"] = se.kind == sched::StartEstimate::Kind::kUnknown ? json(nullptr) : json(core::FormatRfc3339(se.at));
      e["estimate"] = std::move(ej);
    } else {
      e["estimate"] = nullptr;
    }
    pending.push_back(std::move(e));
  }
  out["pending"] = std::move(pending);
  out["pendingTotal"] = waiting.size();

  // ---- running jobs: where their pods are, and which leaves that spans
  const sched::HyperNodeView& topo = st.Topology();
  auto leaf_of = [&](const std::string& node) -> std::string {
    const int slot = st.NodeIndex(node);
    auto it = topo.leaf_of_node.find(slot);
    return slot < 0 || it == topo.leaf_of_node.end() ? std::string() : it->second;
  };
  std::sort(running.begin(), running.end(), [](const sched::JobInfo* a, const sched::JobInfo* b) {
    return std::tie(a->queue, a->key) < std::tie(b->queue, b->key);
  });
  json run = json::array();
  for (const sched::JobInfo* j : running) {
    if (run.size() >= x.max_jobs) break;
    std::map<std::string, int> placement;
    std::set<std::string> leaves;
    int on_nodes = 0;
    st.ForEachTaskOfJob(j->key, [&](const sched::TaskInfo& t) {
      if (!sched::OccupiesNode(t.status) || t.node.empty()) return;
      ++placement[t.node];
      ++on_nodes;
      if (std::string l = leaf_of(t.node); !l.empty()) leaves.insert(std::move(l));
    });
    run.push_back({{"namespace", j->ns},
                   {"name", j->name},
                   {"queue", j->queue},
                   {"phase", sched::PodGroupPhaseName(j->phase)},
                   {"running", j->Count(sched::TaskStatus::kRunning)},
                   {"placed", on_nodes},
                   {"minMember", j->min_member},
                   {"allocated", ResourceJson(j->allocated, reg)},
                   {"placement", placement},
                   {"leaves", leaves}});
  }
  out["running"] = std::move(run);
  out["runningTotal"] = running.size();

  // ---- the cluster map: leaves (lowest-tier HyperNodes holding nodes) grouped by their parent
  std::map<std::string, std::vector<const sched::NodeInfo*>> by_leaf;
  std::vector<const sched::NodeInfo*> ungrouped;
  st.ForEachNode([&](const sched::NodeInfo& n) {
    std::string l = leaf_of(n.name);
    if (l.empty()) ungrouped.push_back(&n);
    else by_leaf[l].push_back(&n);
  });
  auto by_name = [](const sched::NodeInfo* a, const sched::NodeInfo* b) { return a->name < b->name; };
  std::map<std::string, json> groups;  // parent ("" = none) -> group
  for (auto& [leaf, nodes] : by_leaf) {
    std::sort(nodes.begin(), nodes.end(), by_name);
    auto e = topo.entries.find(leaf);
    const std::string parent = e == topo.entries.end() ? "" : e->second.parent;
    json& g = groups[parent];
    if (g.is_null()) {
      auto pe = topo.entries.find(parent);
      g = {{"name", parent}, {"tier", pe == topo.entries.end() ? json(nullptr) : json(pe->second.tier)},
           {"leaves", json::array()}};
    }
    json lj = {{"name", leaf}, {"tier", e == topo.entries.end() ? 0 : e->second.tier}, {"nodes", json::array()}};
    for (const sched::NodeInfo* n : nodes) lj["nodes"].push_back(NodeJson(*n, reg, x));
    g["leaves"].push_back(std::move(lj));
  }
  json cluster = {{"groups", json::array()}, {"ungrouped", json::array()}};
  for (auto& [name, g] : groups) cluster["groups"].push_back(std::move(g));
  std::sort(ungrouped.begin(), ungrouped.end(), by_name);
  for (const sched::NodeInfo* n : ungrouped) cluster["ungrouped"].push_back(NodeJson(*n, reg, x));
  json tiers = json::object();
  for (const auto& [name, tier] : topo.tier_of_name) tiers[std::to_string(tier)] = name;
  cluster["tierNames"] = std::move(tiers);
  out["cluster"] = std::move(cluster);

  // ---- faults and recoveries
  json faults = json::array();
  for (const auto& f : x.faults)
    faults.push_back({{"time", core::FormatRfc3339(f.at)}, {"node", f.node}, {"kind", f.kind}, {"signals", f.signals}});
  out["faults"] = std::move(faults);
  return out;
}

// ------------------------------------------------------------------------------------------------- routes

const WebAsset* FindWebAsset(std::string_view name) {
  for (const auto& a : WebAssets())
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::pair<std::string, kube::HttpHandler>> WebViewRoutes(
    std::function<std::pair<int, std::string>()> snapshot) {
  std::vector<std::pair<std::string, kube::HttpHandler>> routes;
  auto asset = [](const WebAsset* a) {
    return [a](const kube::ServerRequest&) {
      return kube::ServerResponse{200, std::string(a->content_type), std::string(a->body)};
    };
  };
  // The page names its script and style sheet by absolute path, so /ui (no slash) can serve it as well:
  // the server has no way to send a redirect.
  if (const WebAsset* index = FindWebAsset("index.html")) {
    routes.emplace_back("/ui", asset(index));
    routes.emplace_back("/ui/", asset(index));
  }
  for (const auto& a : WebAssets()) routes.emplace_back("/ui/" + std::string(a.name), asset(&a));
  routes.emplace_back("/ui/api/v1/snapshot", [snapshot = std::move(snapshot)](const kube::ServerRequest&) {
    auto [code, body] = snapshot();
    return kube::ServerResponse{code, "application/json", std::move(body)};
  });
  return routes;
}

}  // namespace tephra::scheduler
