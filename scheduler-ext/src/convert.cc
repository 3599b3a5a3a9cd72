#include "tephra/scheduler/convert.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "tephra/api/duration.h"
#include "tephra/api/labels.h"
#include "tephra/api/resources.h"
#include "tephra/core/clock.h"

namespace tephra::scheduler {

using api::json;

int64_t ClampQuantity(int64_t v, int64_t ceiling) { return std::clamp<int64_t>(v, 0, ceiling); }

namespace {

// Clamped to [0, sched::kMaxQuantity] (resource.h): quantities are tenant input, and the core sums them
// without overflow checks; a negative request means nothing, a huge one stays larger than any node.
int64_t ScalarOf(const std::string& name, const core::Quantity& q, int64_t ceiling = sched::kMaxQuantity) {
  return ClampQuantity(name == api::kResourceCPU ? q.MilliValue()  // millicores
                                                 : q.Value(),      // memory/storage in bytes, pods and devices in units
                       ceiling);
}

// The API and the core share the selector types (tephra/core/labels.h); the core keeps no unknown members
// (it never writes objects back).
sched::LabelSelector ToSelector(const api::LabelSelector& sel) {
  sched::LabelSelector out = sel;
  out.unknown.clear();
  for (auto& r : out.match_expressions) r.unknown.clear();
  return out;
}

sched::NetworkTopology ToNetworkTopology(const api::NetworkTopologySpec& nt) {
  sched::NetworkTopology out;
  out.mode = nt.mode == api::kNetworkTopologyHard   ? sched::TopologyMode::kHard
             : nt.mode == api::kNetworkTopologySoft ? sched::TopologyMode::kSoft
                                                     : sched::TopologyMode::kNone;
  out.highest_tier_allowed = nt.highest_tier_allowed.value_or(0);
  out.highest_tier_name = nt.highest_tier_name;
  return out;
}

// matchLabelKeys / mismatchLabelKeys: each key the pod carries becomes an `op` requirement on the pod's own
// value (a key the pod does not carry is ignored).
void FoldLabelKeys(const api::Pod& pod, const std::vector<std::string>& keys, sched::SelectorOp op,
                   sched::LabelSelector* selector) {
  for (const auto& k : keys) {
    auto it = pod.metadata.labels.find(k);
    if (it == pod.metadata.labels.end()) continue;
    sched::SelectorRequirement r;
    r.key = k;
    r.op = op;
    r.values = {it->second};
    selector->match_expressions.push_back(std::move(r));
  }
}

// A required pod (anti-)affinity term as kube-scheduler resolves it for `pod`: no namespaces and no
// namespaceSelector mean the pod's own namespace, `{}` means every namespace; matchLabelKeys and
// mismatchLabelKeys become In / NotIn requirements on the pod's own values of those labels (a key the pod
// does not carry is ignored), and apply only to a term with a labelSelector.
sched::PodAffinityTerm ToAffinityTerm(const api::PodAffinityTerm& term, const api::Pod& pod) {
  sched::PodAffinityTerm out;
  out.topology_key = term.topology_key;
  out.namespaces = term.namespaces;
  if (term.namespace_selector) {
    const auto& ns = *term.namespace_selector;
    if (ns.match_labels.empty() && ns.match_expressions.empty()) out.all_namespaces = true;
    else out.unsupported_namespace_selector = true;
  } else if (out.namespaces.empty()) {
    out.namespaces.push_back(pod.metadata.namespace_);
  }
  if (!term.label_selector) {
    out.null_selector = true;
    return out;
  }
  out.selector = ToSelector(*term.label_selector);
  FoldLabelKeys(pod, term.match_label_keys, sched::SelectorOp::kIn, &out.selector);
  FoldLabelKeys(pod, term.mismatch_label_keys, sched::SelectorOp::kNotIn, &out.selector);
  return out;
}

// A topology spread constraint (either kind) with kube-scheduler's defaults for the optional fields (minDomains
// 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore). A constraint without a labelSelector matches no pod,
// and matchLabelKeys then add nothing (kube-scheduler merges them into the selector only when there is one).
sched::SpreadConstraint ToSpreadConstraint(const api::TopologySpreadConstraint& c, const api::Pod& pod) {
  sched::SpreadConstraint out;
  out.max_skew = c.max_skew;
  out.topology_key = c.topology_key;
  if (c.label_selector) {
    out.selector = ToSelector(*c.label_selector);
    FoldLabelKeys(pod, c.match_label_keys, sched::SelectorOp::kIn, &out.selector);
  } else {
    out.null_selector = true;
  }
  if (c.min_domains) out.min_domains = *c.min_domains;
  out.honor_node_affinity = c.node_affinity_policy.value_or("Honor") != "Ignore";
  out.honor_node_taints = c.node_taints_policy.value_or("Ignore") == "Honor";
  return out;
}

std::optional<sched::TaintEffect> EffectOf(const std::string& e) {
  if (e == api::kTaintNoSchedule) return sched::TaintEffect::kNoSchedule;
  if (e == api::kTaintPreferNoSchedule) return sched::TaintEffect::kPreferNoSchedule;
  if (e == api::kTaintNoExecute) return sched::TaintEffect::kNoExecute;
  return std::nullopt;
}

std::string Annotation(const api::ObjectMeta& m, std::string_view key) {
  auto it = m.annotations.find(std::string(key));
  return it == m.annotations.end() ? std::string() : it->second;
}

// kube-scheduler's scoring requests of a pod (v1.20.2 noderesources calculatePodResourceRequest with
// schedutil.GetNonzeroRequestForResource): per container the request, or 100m cpu / 200Mi memory when the
// container has none (an explicit 0 stays 0); summed over containers, the max with each init container,
// plus the pod overhead. A limit without a request counts as the request, as in PodRequests: the API
// server defaults requests to limits.
std::pair<int64_t, int64_t> ScoreRequests(const api::PodSpec& spec) {
  auto one = [](const api::Container& c, const std::string& name, int64_t dflt) -> int64_t {
    if (auto it = c.resources.requests.find(name); it != c.resources.requests.end()) return ScalarOf(name, it->second);
    if (auto it = c.resources.limits.find(name); it != c.resources.limits.end()) return ScalarOf(name, it->second);
    return dflt;
  };
  const std::string cpu(api::kResourceCPU), mem(api::kResourceMemory);
  int64_t c = 0, m = 0;
  for (const auto& ct : spec.containers) {
    c += one(ct, cpu, sched::kDefaultScoreMilliCpu);
    m += one(ct, mem, sched::kDefaultScoreMemory);
  }
  for (const auto& ct : spec.init_containers) {
    c = std::max(c, one(ct, cpu, sched::kDefaultScoreMilliCpu));
    m = std::max(m, one(ct, mem, sched::kDefaultScoreMemory));
  }
  if (auto it = spec.overhead.find(cpu); it != spec.overhead.end()) c += ScalarOf(cpu, it->second);
  if (auto it = spec.overhead.find(mem); it != spec.overhead.end()) m += ScalarOf(mem, it->second);
  return {c, m};
}

}  // namespace

// PodGroup minResources is written in ResourceQuota vocabulary by Volcano's job controller
// (docs/volcano-behaviour.md, "PodGroup of a vcjob (minResources)"):
// `cpu` and `requests.cpu`, `limits.cpu`, `pods` and `count/pods`, extended `requests.nvidia.com/gpu`. Only
// requests matter for admission: fold `requests.X` into X (max, as both hold the same sum), and drop limits
// and object counts, which no node advertises and which would otherwise make every gang look unplaceable.
// A vGPU memory percentage goes too: it is a share of each card, which the card model accounts for per pod
// (as ToTaskInfo drops it from a pod's requests); no node offers it, so in a minimum it would make every
// vGPU gang look unsatisfiable at enqueue.
api::ResourceList NormalizeQuotaKeys(const api::ResourceList& in) {
  api::ResourceList out;
  for (const auto& [name, q] : in) {
    if (name.rfind("limits.", 0) == 0 || name.rfind("count/", 0) == 0) continue;
    std::string key = name.rfind("requests.", 0) == 0 ? name.substr(9) : name;
    if (key == api::kVgpuMemoryPercentageResource) continue;
    auto it = out.find(key);
    if (it == out.end() || it->second < q) out[key] = q;
  }
  return out;
}

sched::Resource ToResource(const api::ResourceList& list, sched::ResourceRegistry* reg,
                           std::set<std::string>* dropped) {
  sched::Resource r;
  for (const auto& [name, q] : list) {
    std::optional<int> idx = reg->Intern(name);
    if (!idx) {
      if (dropped) dropped->insert(name);
      continue;
    }
    r.Set(*idx, ScalarOf(name, q));
  }
  return r;
}

sched::Resource ToRequest(const api::ResourceList& list, const sched::ResourceRegistry& reg,
                          std::vector<std::string>* unoffered, int64_t ceiling) {
  sched::Resource r;
  for (const auto& [name, q] : list) {
    const int64_t v = ScalarOf(name, q, ceiling);
    if (std::optional<int> idx = reg.Find(name)) {
      r.Set(*idx, v);
    } else if (v > 0) {
      // No node offers it (or it got no dimension): the request fits nowhere, and says which resource.
      r.Set(sched::kUnoffered, 1);
      if (unoffered) unoffered->push_back(name);
    }
  }
  return r;
}

api::ResourceList FromResource(const sched::Resource& r, const sched::ResourceRegistry& reg) {
  api::ResourceList out;
  for (int i = 0; i < reg.size(); ++i) {
    const int64_t v = r.Get(i);
    if (v <= 0 || v >= sched::kUnlimited) continue;
    if (i == sched::kPods) continue;  // Volcano's queue status does not report pods
    const std::string& name = reg.Name(i);
    out[name] = i == sched::kCpu ? core::Quantity::FromMilli(v) : core::Quantity::FromUnits(v);
  }
  return out;
}

sched::NodeInfo ToNodeInfo(const api::Node& node, sched::ResourceRegistry* reg, const api::AscendDeviceInfo* ascend_info,
                           std::set<std::string>* dropped) {
  sched::NodeInfo n;
  n.name = node.metadata.name;
  // attachable-volumes-* are attach limits, not resources (kube-scheduler's IsAttachableVolumeResourceName).
  api::ResourceList alloc = node.status.allocatable.empty() ? node.status.capacity : node.status.allocatable;
  for (auto it = alloc.begin(); it != alloc.end();) {
    if (!it->first.starts_with("attachable-volumes-")) {
      ++it;
      continue;
    }
    n.volume_limits[it->first] = it->second.Value();
    it = alloc.erase(it);
  }
  n.allocatable = ToResource(alloc, reg, dropped);
  n.labels = node.metadata.labels;
  for (const auto& t : node.spec.taints) {
    auto eff = EffectOf(t.effect);
    if (!eff) continue;
    n.taints.push_back({t.key, t.value, *eff});
  }
  // A node the fault controller marked faulted, or healed too recently, takes no new batch pods from
  // Tephra (docs/faults.md); other schedulers see only what the node itself says.
  n.unschedulable = node.spec.unschedulable || FaultAvoided(node.metadata, core::RealClock::Get().WallNow());
  n.ready = false;
  for (const auto& c : node.status.conditions)
    if (c.type == api::kNodeReady) n.ready = c.status == api::kConditionTrue;
  n.devices = ToNodeDevices(node, ascend_info);
  return n;
}

bool FaultAvoided(const api::ObjectMeta& node, sched::WallTime now) {
  if (!Annotation(node, api::kFaultAnnotation).empty()) return true;
  const std::string until = Annotation(node, api::kFaultAvoidUntilAnnotation);
  sched::WallTime t;
  return !until.empty() && core::ParseRfc3339(until, &t) && t > now;
}

sched::NodeDevices ToNodeDevices(const api::Node& node, const api::AscendDeviceInfo* ascend_info) {
  sched::NodeDevices d;
  const std::string ascend(api::kAscend910Resource);
  // Capacity counts every card the device plugin found, allocatable only the healthy ones.
  int64_t cards = 0;
  if (auto it = node.status.capacity.find(ascend); it != node.status.capacity.end()) cards = it->second.Value();
  else if (auto a = node.status.allocatable.find(ascend); a != node.status.allocatable.end()) cards = a->second.Value();
  if (cards > 0) {
    d.kind = sched::DeviceKind::kAscend;
    auto label = node.metadata.labels.find(std::string(api::kAcceleratorTypeLabel));
    d.model = label == node.metadata.labels.end() ? "" : label->second;
    d.topology = sched::AscendTopologyOf(d.model);
    for (int i = 0; i < cards && i < 1024; ++i)
      d.cards.push_back({.id = std::string(api::kAscendCardPrefix) + std::to_string(i), .index = i});
    api::AscendDeviceInfo from_annotations;
    if (!ascend_info) {
      from_annotations.unhealthy = api::SplitCardList(Annotation(node.metadata, api::kAscendUnhealthyKey));
      from_annotations.network_unhealthy = api::SplitCardList(Annotation(node.metadata, api::kAscendNetworkUnhealthyKey));
      from_annotations.recovering = api::SplitCardList(Annotation(node.metadata, api::kAscendRecoveringKey));
      ascend_info = &from_annotations;
    }
    auto mark = [&](const std::vector<std::string>& ids, sched::CardHealth h) {
      for (const auto& id : ids)
        if (int p = d.FindCard(id); p >= 0) d.cards[static_cast<size_t>(p)].health = h;
    };
    mark(ascend_info->recovering, sched::CardHealth::kRecovering);
    mark(ascend_info->unhealthy, sched::CardHealth::kUnhealthy);
    mark(ascend_info->network_unhealthy, sched::CardHealth::kUnhealthy);
    return d;
  }
  // GPU Feature Discovery's product label names the GPUs of a node whose cards are counted, not modelled
  // (the NVIDIA device plugin picks them), so `nvidia.com/use-gputype` can still be honoured there. Under the
  // MIG single strategy it carries the slice's profile ("A100-SXM4-40GB-MIG-1g.5gb").
  if (auto product = node.metadata.labels.find(std::string(api::kGpuProductLabel));
      product != node.metadata.labels.end() && !product->second.empty()) {
    d.kind = sched::DeviceKind::kNvidiaGpu;
    d.model = product->second;
  }
  std::string reg = Annotation(node.metadata, api::kVgpuRegisterAnnotation);
  if (reg.empty()) return d;
  auto gpus = api::ParseVgpuRegister(reg);
  if (gpus.empty()) return d;
  d.kind = sched::DeviceKind::kNvidiaGpu;
  if (d.model.empty()) d.model = gpus.front().type;
  std::set<int> unhealthy;
  for (const auto& id : api::SplitCardList(Annotation(node.metadata, api::kGpuUnhealthyIdsAnnotation))) {
    int i = -1;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), i);
    if (ec == std::errc() && p == id.data() + id.size()) unhealthy.insert(i);
  }
  for (size_t i = 0; i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    const bool healthy = g.healthy && !unhealthy.count(static_cast<int>(i));
    d.cards.push_back({.id = g.uuid,
                       .index = static_cast<int>(i),
                       .type = g.type,
                       .health = healthy ? sched::CardHealth::kHealthy : sched::CardHealth::kUnhealthy,
                       .memory = g.memory,
                       .max_sharers = g.split});
  }
  return d;
}

namespace {

// Whether a pod's requests count NVIDIA GPUs: whole ones or MIG slices.
bool RequestsNvidiaGpu(const api::ResourceList& req) {
  for (const auto& [name, q] : req)
    if (q.Value() > 0 && (name == api::kNvidiaGpuResource || api::MigProfileOfResource(name))) return true;
  return false;
}

}  // namespace

sched::DeviceRequest ToDeviceRequest(const api::Pod& pod) { return ToDeviceRequest(pod, api::PodRequests(pod.spec)); }

sched::DeviceRequest ToDeviceRequest(const api::Pod& pod, const api::ResourceList& req) {
  sched::DeviceRequest r;
  auto get = [&](std::string_view name) -> int64_t {
    auto it = req.find(std::string(name));
    return it == req.end() ? 0 : it->second.Value();
  };
  if (int64_t n = get(api::kAscend910Resource); n > 0) {
    r.kind = sched::DeviceKind::kAscend;
    r.whole = static_cast<int32_t>(std::min<int64_t>(n, 1 << 20));
    return r;
  }
  sched::DeviceDetail detail;
  detail.use_types = api::SplitAnnotationList(Annotation(pod.metadata, api::kGpuUseTypeAnnotation));
  detail.nouse_types = api::SplitAnnotationList(Annotation(pod.metadata, api::kGpuNoUseTypeAnnotation));
  // vGPU requests per container, as the vGPU device plugin reads them: a container asks when it names a
  // card count or memory (memory alone = one card); with neither memory nor a percentage it gets all of each
  // card's memory. A pod's shares each take a distinct card; memory and compute per card are the largest any
  // container asks, so every container's limit is honoured (docs/devices.md).
  auto of = [](const api::Container& c, std::string_view name) -> std::optional<int64_t> {
    for (const auto* list : {&c.resources.limits, &c.resources.requests})
      if (auto it = list->find(std::string(name)); it != list->end()) return it->second.Value();
    return std::nullopt;
  };
  int64_t total = 0;
  for (const auto& c : pod.spec.containers) {
    const auto number = of(c, api::kVgpuNumberResource);
    const auto memory = of(c, api::kVgpuMemoryResource);
    const int64_t count = number ? std::clamp<int64_t>(*number, 0, 1 << 16) : (memory ? 1 : 0);
    if (count == 0) continue;
    detail.per_container.push_back(static_cast<int32_t>(count));
    total += count;
    const int64_t percent = std::clamp<int64_t>(of(c, api::kVgpuMemoryPercentageResource).value_or(memory ? 0 : 100), 0, 100);
    r.memory = std::max(r.memory, memory.value_or(0));
    r.memory_percent = std::max(r.memory_percent, static_cast<int32_t>(percent));
    r.cores = std::max(r.cores, static_cast<int32_t>(std::clamp<int64_t>(of(c, api::kVgpuCoresResource).value_or(0), 0, 100) * 10));
  }
  if (total > 0) {
    r.kind = sched::DeviceKind::kNvidiaGpu;
    r.shared = static_cast<int32_t>(total);
    detail.use_ids = api::SplitAnnotationList(Annotation(pod.metadata, api::kVgpuUseUuidAnnotation));
    detail.nouse_ids = api::SplitAnnotationList(Annotation(pod.metadata, api::kVgpuNoUseUuidAnnotation));
    if (detail.per_container.size() <= 1) detail.per_container.clear();
  } else if (!detail.HasFilter() || !RequestsNvidiaGpu(req)) {
    return r;
  } else {
    r.kind = sched::DeviceKind::kNvidiaGpu;  // counted GPUs with a product filter
  }
  if (detail.HasFilter() || !detail.per_container.empty())
    r.detail = std::make_shared<const sched::DeviceDetail>(std::move(detail));
  return r;
}

std::vector<std::string> CardsOfPod(const api::Pod& pod) {
  std::string real = Annotation(pod.metadata, "huawei.com/AscendReal");
  if (!real.empty()) return api::SplitCardList(real);
  std::string ascend = Annotation(pod.metadata, api::kAscend910Resource);
  if (!ascend.empty()) return api::SplitCardList(ascend);
  std::vector<std::string> out;
  for (const auto& container : api::DecodeVgpuIds(Annotation(pod.metadata, api::kVgpuIdsAnnotation)))
    for (const auto& a : container) out.push_back(a.uuid);
  return out;
}

std::map<std::string, std::string> DeviceBindAnnotations(const sched::BindDecision& d, sched::WallTime now) {
  std::map<std::string, std::string> out;
  if (d.cards.empty()) return out;
  const auto since_epoch = now.time_since_epoch();
  if (d.devices.kind == sched::DeviceKind::kAscend) {
    out[std::string(api::kAscend910Resource)] = api::JoinCardList(d.cards);
    out[std::string(api::kAscendPredicateTimeAnnotation)] =
        std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
  } else if (d.devices.kind == sched::DeviceKind::kNvidiaGpu) {
    // Cards in order, each container taking its count; a pod of one container takes them all.
    std::vector<std::vector<api::VgpuAssignment>> per_container;
    const std::vector<int32_t> one{static_cast<int32_t>(d.cards.size())};
    const auto& split = d.devices.detail && !d.devices.detail->per_container.empty() ? d.devices.detail->per_container : one;
    size_t next = 0;
    for (int32_t count : split) {
      auto& cards = per_container.emplace_back();
      for (int32_t k = 0; k < count && next < d.cards.size(); ++k, ++next) {
        const int64_t memory = next < d.card_memory.size() ? d.card_memory[next] : d.devices.memory;
        cards.push_back({d.cards[next], memory, d.devices.cores / 10});
      }
    }
    const std::string seconds = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count());
    out[std::string(api::kVgpuIdsAnnotation)] = api::EncodeVgpuIds(per_container);
    out[std::string(api::kVgpuToAllocateAnnotation)] = out[std::string(api::kVgpuIdsAnnotation)];
    out[std::string(api::kVgpuNodeAnnotation)] = d.node;
    out[std::string(api::kVgpuTimeAnnotation)] = seconds;
    out[std::string(api::kVgpuBindTimeAnnotation)] = seconds;
    out[std::string(api::kVgpuBindPhaseAnnotation)] = "allocating";
  }
  return out;
}

bool IsManaged(const api::Pod& pod, const std::set<std::string>& names) {
  return names.count(pod.spec.scheduler_name.empty() ? "default-scheduler" : pod.spec.scheduler_name) > 0;
}

bool ShouldTrack(const api::Pod& pod, const std::set<std::string>& names) {
  if (IsManaged(pod, names)) return true;
  // Foreign pods matter only while they hold a node's resources.
  return !pod.spec.node_name.empty() && pod.status.phase != api::kPodSucceeded && pod.status.phase != api::kPodFailed;
}

sched::TaskStatus PodStatusOf(const api::Pod& pod) {
  if (pod.status.phase == api::kPodSucceeded) return sched::TaskStatus::kSucceeded;
  if (pod.status.phase == api::kPodFailed) return sched::TaskStatus::kFailed;
  if (!pod.metadata.deletion_timestamp.empty()) return sched::TaskStatus::kReleasing;
  if (pod.status.phase == api::kPodRunning) return sched::TaskStatus::kRunning;
  if (pod.status.phase == api::kPodPending || pod.status.phase.empty())
    return pod.spec.node_name.empty() ? sched::TaskStatus::kPending : sched::TaskStatus::kBound;
  return sched::TaskStatus::kUnknown;
}

namespace {
// Go's strconv.ParseBool, which is how Volcano reads the value.
std::optional<bool> ParseGoBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") return false;
  return std::nullopt;
}
}  // namespace

// Keeps only what scheduling reads from a pod before it is decoded into the cache: at 100k pods the
// informer's memory is dominated by env, volumes, probes and container statuses, none of which matter here.
void CompactPodForCache(api::json* j) {
  api::StripForCache(j);
  if (!j->is_object()) return;
  if (auto m = j->find("metadata"); m != j->end() && m->is_object()) {
    // Annotations can be large (kubectl last-applied); keep only the ones the scheduler reads.
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) {
      api::json keep = api::json::object();
      for (std::string_view k : {api::kPodGroupAnnotation, api::kTaskSpecKey, api::kSchedulingQueueNameAnnotation,
                                 api::kPreemptableKey,
                                 api::kNetworkTopologyModeAnnotation, api::kNetworkTopologyHighestTierAnnotation,
                                 api::kAscend910Resource, std::string_view("huawei.com/AscendReal"),
                                 api::kVgpuIdsAnnotation, api::kGpuUseTypeAnnotation, api::kGpuNoUseTypeAnnotation,
                                 api::kVgpuUseUuidAnnotation, api::kVgpuNoUseUuidAnnotation,
                                 api::kRunningEstimateAnnotation, api::kSlaWaitingTimeAnnotation,
                                 api::kSlaWaitingTimeShortAnnotation})
        if (auto it = a->find(std::string(k)); it != a->end()) keep[std::string(k)] = *it;
      *a = std::move(keep);
    }
    // Only whether the pod has a controlling owner matters (a plain pod without one is a gang of one).
    if (auto o = m->find("ownerReferences"); o != m->end() && o->is_array()) {
      api::json keep = api::json::array();
      for (auto& r : *o)
        if (r.is_object() && r.value("controller", false)) keep.push_back(std::move(r));
      if (keep.empty()) m->erase(o);
      else *o = std::move(keep);
    }
  }
  if (auto s = j->find("spec"); s != j->end() && s->is_object()) {
    for (const char* k : {"securityContext", "imagePullSecrets", "hostAliases", "readinessGates", "dnsConfig"})
      s->erase(k);
    // Only claims matter (volume predicates); configMap, secret and the other sources go.
    if (auto vs = s->find("volumes"); vs != s->end() && vs->is_array()) {
      api::json claims = api::json::array();
      for (auto& v : *vs)
        if (v.is_object() && v.contains("persistentVolumeClaim"))
          claims.push_back({{"name", v.value("name", "")}, {"persistentVolumeClaim", v["persistentVolumeClaim"]}});
      if (claims.empty()) s->erase(vs);
      else *vs = std::move(claims);
    }
    for (const char* list : {"containers", "initContainers"}) {
      auto cs = s->find(list);
      if (cs == s->end() || !cs->is_array()) continue;
      for (auto& c : *cs) {
        if (!c.is_object()) continue;
        api::json slim = api::json::object();
        if (c.contains("name")) slim["name"] = c["name"];
        if (c.contains("image")) slim["image"] = c["image"];
        if (c.contains("resources")) slim["resources"] = c["resources"];
        // Host ports are a predicate (NodePorts); ports without one bind nothing on the node.
        if (auto ports = c.find("ports"); ports != c.end() && ports->is_array()) {
          api::json held = api::json::array();
          for (auto& port : *ports)
            if (port.is_object() && port.value("hostPort", 0) > 0) held.push_back(std::move(port));
          if (!held.empty()) slim["ports"] = std::move(held);
        }
        c = std::move(slim);
      }
    }
    s->erase("ephemeralContainers");
  }
  if (auto st = j->find("status"); st != j->end() && st->is_object()) {
    api::json slim = api::json::object();
    // startTime: with its job's running estimate, when the pod is expected to free its node (reservations).
    for (const char* k : {"phase", "nominatedNodeName", "startTime"})
      if (st->contains(k)) slim[k] = (*st)[k];
    *st = std::move(slim);
  }
}

bool PodPreemptable(const api::ObjectMeta& meta) {
  // The annotation wins over the label (the job controller copies the job's annotation to annotations and its
  // label to labels). A value that is not a boolean protects the pod: Volcano treats a malformed value as
  // "not preemptable", the safe reading of a key whose only purpose is protection.
  const std::string key(api::kPreemptableKey);
  if (auto it = meta.annotations.find(key); it != meta.annotations.end()) return ParseGoBool(it->second).value_or(false);
  if (auto it = meta.labels.find(key); it != meta.labels.end()) return ParseGoBool(it->second).value_or(false);
  return true;
}

sched::TaskInfo ToTaskInfo(const api::Pod& pod, const sched::ResourceRegistry* reg, const std::set<std::string>& names) {
  sched::TaskInfo t;
  t.uid = pod.metadata.uid;
  t.ns = pod.metadata.namespace_;
  t.name = pod.metadata.name;
  if (IsManaged(pod, names)) {
    std::string group = Annotation(pod.metadata, api::kPodGroupAnnotation);
    if (!group.empty()) t.job = t.ns + "/" + group;
    else if (!pod.metadata.ControllerRef()) t.job = t.ns + "/" + std::string(api::kPodGroupNamePrefix) + t.uid;
  }
  t.role = Annotation(pod.metadata, api::kTaskSpecKey);
  if (t.role.empty())
    if (auto it = pod.metadata.labels.find(std::string(api::kTaskSpecKey)); it != pod.metadata.labels.end())
      t.role = it->second;
  const api::ResourceList all_requests = api::PodRequests(pod.spec);
  api::ResourceList requests = all_requests;
  // A percentage of each card's memory is no quantity a node holds: the card model accounts for it
  // (DeviceRequest::memory_percent), and no device plugin advertises it.
  requests.erase(std::string(api::kVgpuMemoryPercentageResource));
  t.request = ToRequest(requests, *reg, &t.unoffered);
  std::tie(t.score_cpu, t.score_memory) = ScoreRequests(pod.spec);
  // kube-scheduler's NodePorts reads app containers' ports only; hostPort 0 binds nothing on the node.
  for (const auto& c : pod.spec.containers)
    for (const auto& p : c.ports)
      if (p.host_port > 0)
        t.host_ports.push_back({p.host_ip.empty() ? "0.0.0.0" : p.host_ip, p.protocol.empty() ? "TCP" : p.protocol, p.host_port});
  for (const auto& v : pod.spec.volumes)
    if (v.persistent_volume_claim && !v.persistent_volume_claim->claim_name.empty())
      t.claims.push_back(v.persistent_volume_claim->claim_name);
  t.priority = pod.spec.priority.value_or(0);
  t.priority_class_name = pod.spec.priority_class_name;  // conformance never evicts system-*-critical pods
  t.preemptable = PodPreemptable(pod.metadata);
  t.status = PodStatusOf(pod);
  t.node = pod.spec.node_name;
  t.labels = pod.metadata.labels;
  t.node_selector = pod.spec.node_selector;
  for (const auto& tol : pod.spec.tolerations) {
    sched::Toleration st;
    st.key = tol.key;
    st.op_exists = tol.operator_ == api::kTolerationOpExists;
    st.value = tol.value;
    st.effect = EffectOf(tol.effect);
    t.tolerations.push_back(std::move(st));
  }
  if (pod.spec.affinity) {
    // The API and the core share the selector types (tephra/core/labels.h): terms and selectors are copied
    // as they are, unknown operators included (kInvalid: they never match, and the predicates plugin says
    // why the pod cannot be placed).
    const api::Affinity& aff = *pod.spec.affinity;
    if (aff.node_affinity)
      if (const auto& req = aff.node_affinity->required_during_scheduling_ignored_during_execution)
        for (const auto& term : req->node_selector_terms) {
          sched::NodeSelectorTerm st;
          st.match_expressions = term.match_expressions;
          st.match_fields = term.match_fields;
          t.required_affinity.push_back(std::move(st));
        }
    if (aff.node_affinity)
      for (const auto& pref : aff.node_affinity->preferred_during_scheduling_ignored_during_execution) {
        if (pref.weight == 0) continue;  // kube-scheduler skips a zero weight
        t.preferred_affinity.push_back({pref.weight, pref.preference.match_expressions});
      }
    if (aff.pod_affinity)
      for (const auto& term : aff.pod_affinity->required_during_scheduling_ignored_during_execution)
        t.pod_affinity.push_back(ToAffinityTerm(term, pod));
    if (aff.pod_anti_affinity)
      for (const auto& term : aff.pod_anti_affinity->required_during_scheduling_ignored_during_execution) {
        // A null labelSelector selects no pod: an anti-affinity term with one constrains nothing.
        if (!term.label_selector) continue;
        t.pod_anti_affinity.push_back(ToAffinityTerm(term, pod));
      }
    // Preferred terms only score (nodeorder's podaffinity.weight); a zero weight adds nothing.
    for (const auto& [side, anti] : {std::pair{&aff.pod_affinity, false}, std::pair{&aff.pod_anti_affinity, true}})
      if (*side)
        for (const auto& pref : (*side)->preferred_during_scheduling_ignored_during_execution)
          if (pref.weight != 0)
            t.preferred_pod_terms.push_back({pref.weight, anti, ToAffinityTerm(pref.pod_affinity_term, pod)});
  }
  for (const auto& c : pod.spec.topology_spread_constraints)
    (c.when_unsatisfiable == api::kDoNotSchedule ? t.spread : t.soft_spread).push_back(ToSpreadConstraint(c, pod));
  t.scheduling_gated = !pod.spec.scheduling_gates.empty();
  t.nominated_node = pod.status.nominated_node_name;
  if (!pod.status.start_time.empty()) t.start_time = ParseTime(pod.status.start_time);
  t.creation_time = ParseTime(pod.metadata.creation_timestamp);
  t.controller = SpreadControllerOf(pod);
  t.devices = ToDeviceRequest(pod, all_requests);
  if (!t.devices.empty() && !t.node.empty()) t.cards = CardsOfPod(pod);
  return t;
}

std::string SpreadControllerOf(const api::Pod& pod) {
  const api::OwnerReference* owner = pod.metadata.ControllerRef();
  if (!owner) return {};
  // kube-scheduler matches the owner's group, version and kind exactly (apps/v1beta2 is not apps/v1).
  for (const api::ResourceInfo* r :
       {&api::ReplicaSet::Resource(), &api::StatefulSet::Resource(), &api::ReplicationController::Resource()})
    if (owner->api_version == r->ApiVersion() && owner->kind == r->kind) return owner->kind + "/" + owner->name;
  return {};
}

sched::LabelSelector ToSpreadSelector(const api::Workload& w) {
  // A selector kube-scheduler cannot parse adds nothing to the default spread selector.
  if (!w.selector || !w.selector->Valid()) return {};
  return ToSelector(*w.selector);
}

namespace {

// A positive Go duration in whole seconds (rounded up); 0 for none or a malformed one (the webhook refuses a
// malformed runningEstimate; an annotation someone else wrote badly counts as not given).
std::chrono::seconds Seconds(const std::string& go) {
  if (go.empty()) return std::chrono::seconds{0};
  auto d = api::ParseGoDuration(go);
  if (!d.ok() || d->count() <= 0) return std::chrono::seconds{0};
  return std::chrono::ceil<std::chrono::seconds>(*d);
}

// The running estimate and Volcano's sla waiting time (volcano.sh/sla-waiting-time first, as Volcano reads it).
void ReadJobTimes(const api::ObjectMeta& meta, sched::JobInfo* j) {
  j->running_estimate = Seconds(Annotation(meta, api::kRunningEstimateAnnotation));
  for (auto key : {api::kSlaWaitingTimeAnnotation, api::kSlaWaitingTimeShortAnnotation}) {
    const std::string v = Annotation(meta, key);
    if (v.empty()) continue;
    auto d = api::ParseGoDuration(v);
    if (d.ok() && d->count() > 0) {
      j->sla_waiting_time = std::chrono::ceil<std::chrono::milliseconds>(*d);
      break;
    }
  }
}

}  // namespace

bool IsImplicitGangOfOne(const api::Pod& pod, const std::set<std::string>& names) {
  return IsManaged(pod, names) && Annotation(pod.metadata, api::kPodGroupAnnotation).empty() &&
         !pod.metadata.ControllerRef();
}

sched::JobInfo ImplicitJobInfo(const api::Pod& pod, const sched::ResourceRegistry* reg, const std::string& default_queue) {
  sched::JobInfo j;
  j.ns = pod.metadata.namespace_;
  j.name = std::string(api::kPodGroupNamePrefix) + pod.metadata.uid;
  j.key = j.ns + "/" + j.name;
  j.implicit = true;
  const std::string queue = Annotation(pod.metadata, api::kSchedulingQueueNameAnnotation);
  j.queue = queue.empty() ? default_queue : queue;
  j.min_member = 1;
  j.min_resources = ToRequest(NormalizeQuotaKeys(api::PodQuotaUsage(pod.spec)), *reg, &j.unoffered, sched::kMaxAggregateQuantity);
  j.priority_class_name = pod.spec.priority_class_name;
  j.priority = pod.spec.priority.value_or(0);  // ClusterState re-resolves the class when it knows it
  const std::string mode = Annotation(pod.metadata, api::kNetworkTopologyModeAnnotation);
  const std::string tier = Annotation(pod.metadata, api::kNetworkTopologyHighestTierAnnotation);
  if (!mode.empty() || !tier.empty()) {
    // As the controller writes it (a tier without a mode means hard) and ToJobInfo reads it back.
    j.network_topology.mode = mode.empty() || mode == api::kNetworkTopologyHard ? sched::TopologyMode::kHard
                              : mode == api::kNetworkTopologySoft               ? sched::TopologyMode::kSoft
                                                                                : sched::TopologyMode::kNone;
    int n = 0;
    auto [p, ec] = std::from_chars(tier.data(), tier.data() + tier.size(), n);
    if (ec == std::errc() && p == tier.data() + tier.size()) j.network_topology.highest_tier_allowed = n;
  }
  j.creation_time = ParseTime(pod.metadata.creation_timestamp);
  ReadJobTimes(pod.metadata, &j);
  return j;
}

sched::PodGroupPhase PhaseOf(const std::string& phase) {
  if (phase == api::kPodGroupInqueue) return sched::PodGroupPhase::kInqueue;
  if (phase == api::kPodGroupRunning) return sched::PodGroupPhase::kRunning;
  if (phase == api::kPodGroupUnknown) return sched::PodGroupPhase::kUnknown;
  if (phase == api::kPodGroupCompleted) return sched::PodGroupPhase::kCompleted;
  return sched::PodGroupPhase::kPending;
}

sched::JobInfo ToJobInfo(const api::PodGroup& pg, const sched::ResourceRegistry* reg, const std::string& default_queue) {
  sched::JobInfo j;
  j.ns = pg.metadata.namespace_;
  j.name = pg.metadata.name;
  j.key = j.ns + "/" + j.name;
  j.uid = pg.metadata.uid;
  j.queue = pg.spec.queue.empty() ? default_queue : pg.spec.queue;
  j.min_member = pg.spec.min_member;
  j.min_task_member = pg.spec.min_task_member;
  if (pg.spec.min_resources)
    j.min_resources = ToRequest(NormalizeQuotaKeys(*pg.spec.min_resources), *reg, &j.unoffered, sched::kMaxAggregateQuantity);
  j.priority_class_name = pg.spec.priority_class_name;
  j.phase = PhaseOf(pg.status.phase);
  if (pg.spec.network_topology) j.network_topology = ToNetworkTopology(*pg.spec.network_topology);
  for (const auto& sg : pg.spec.sub_group_policy) {
    sched::SubGroupPolicy p;
    p.name = sg.name;
    p.size = sg.sub_group_size.value_or(1);
    p.min_groups = sg.min_sub_groups.value_or(0);
    if (sg.label_selector) p.selector = ToSelector(*sg.label_selector);
    p.match_label_keys = sg.match_label_keys;
    if (sg.network_topology) p.network_topology = ToNetworkTopology(*sg.network_topology);
    j.sub_group_policies.push_back(std::move(p));
  }
  j.task_topology_affinity = Annotation(pg.metadata, api::kTaskTopologyAffinityAnnotation);
  j.task_topology_anti_affinity = Annotation(pg.metadata, api::kTaskTopologyAntiAffinityAnnotation);
  j.task_topology_order = Annotation(pg.metadata, api::kTaskTopologyTaskOrderAnnotation);
  j.creation_time = ParseTime(pg.metadata.creation_timestamp);
  ReadJobTimes(pg.metadata, &j);
  return j;
}

sched::QueueInfo ToQueueInfo(const api::Queue& q, const sched::ResourceRegistry* reg) {
  sched::QueueInfo out;
  out.name = q.metadata.name;
  out.weight = q.spec.weight > 0 ? q.spec.weight : 1;
  if (!q.spec.capability.empty()) {
    // Dimensions the capability does not name stay unlimited.
    sched::Resource cap = sched::Resource::Unlimited();
    // A resource no node offers has no dimension and limits nothing until a node offers it (the process
    // converts the queue again then).
    for (const auto& [name, qty] : q.spec.capability)
      if (auto idx = reg->Find(name)) cap.Set(*idx, ScalarOf(name, qty, sched::kMaxAggregateQuantity));
    out.capability = cap;
  }
  // Guarantees and deserved shares of resources no node offers are irrelevant: nothing can use them.
  sched::Resource guarantee = ToRequest(q.spec.guarantee.resource, *reg, nullptr, sched::kMaxAggregateQuantity);
  guarantee.Set(sched::kUnoffered, 0);
  out.guarantee = guarantee;
  if (!q.spec.deserved.empty()) {
    sched::Resource deserved = ToRequest(q.spec.deserved, *reg, nullptr, sched::kMaxAggregateQuantity);
    deserved.Set(sched::kUnoffered, 0);
    out.spec_deserved = deserved;
  }
  out.parent = q.spec.parent;
  const std::string& st = q.status.state;
  out.state = st == api::kQueueStateClosed    ? sched::QueueState::kClosed
              : st == api::kQueueStateClosing ? sched::QueueState::kClosing
              : st == api::kQueueStateUnknown ? sched::QueueState::kUnknown
                                              : sched::QueueState::kOpen;
  out.reclaimable = q.spec.reclaimable.value_or(true);
  out.priority = q.spec.priority;
  out.hierarchy = Annotation(q.metadata, api::kHierarchyAnnotation);
  out.hierarchy_weights = Annotation(q.metadata, api::kHierarchyWeightsAnnotation);
  out.default_running_estimate = Seconds(Annotation(q.metadata, api::kQueueDefaultRunningEstimateAnnotation));
  out.max_running_estimate = Seconds(Annotation(q.metadata, api::kQueueMaxRunningEstimateAnnotation));
  return out;
}

sched::HyperNodeInfo ToHyperNodeInfo(const api::HyperNode& hn) {
  // Member selectors are passed through; ClusterState resolves them against its nodes whenever nodes or
  // HyperNodes change (it rebuilds the topology lazily), so a node joining later is picked up.
  sched::HyperNodeInfo out;
  out.name = hn.metadata.name;
  out.tier = hn.spec.tier;
  out.tier_name = hn.spec.tier_name;
  for (const auto& m : hn.spec.members) {
    sched::HyperNodeMember mm;
    mm.type = m.type == api::kMemberTypeHyperNode ? sched::HyperNodeMemberType::kHyperNode
                                                  : sched::HyperNodeMemberType::kNode;
    if (m.selector.exact_match) {
      mm.kind = sched::MemberSelectorKind::kExact;
      mm.name_or_pattern = m.selector.exact_match->name;
    } else if (m.selector.regex_match) {
      mm.kind = sched::MemberSelectorKind::kRegex;
      mm.name_or_pattern = m.selector.regex_match->pattern;
    } else if (m.selector.label_match) {
      mm.kind = sched::MemberSelectorKind::kLabel;
      mm.label_selector = ToSelector(*m.selector.label_match);
    } else {
      continue;  // invalid member (rejected by admission); ignore rather than match everything
    }
    out.members.push_back(std::move(mm));
  }
  return out;
}

bool ApplyPodGroupStatus(const sched::PodGroupStatusUpdate& u, const std::string& now_rfc3339,
                         api::PodGroupStatus* status) {
  bool changed = false;
  const std::string phase = sched::PodGroupPhaseName(u.phase);
  if (status->phase != phase) {
    status->phase = phase;
    changed = true;
  }
  if (status->running != u.running || status->succeeded != u.succeeded || status->failed != u.failed) {
    status->running = u.running;
    status->succeeded = u.succeeded;
    status->failed = u.failed;
    changed = true;
  }
  for (const auto& c : u.conditions) {
    api::PodGroupCondition* existing = nullptr;
    for (auto& e : status->conditions)
      if (e.type == c.type) existing = &e;
    if (existing && existing->status == c.status && existing->reason == c.reason && existing->message == c.message)
      continue;
    api::PodGroupCondition nc;
    nc.type = c.type;
    nc.status = c.status;
    nc.reason = c.reason;
    nc.message = c.message;
    nc.last_transition_time =
        c.last_transition_time == sched::WallTime{} ? now_rfc3339 : Rfc3339(c.last_transition_time);
    if (existing) {
      nc.transition_id = existing->transition_id;
      *existing = std::move(nc);
    } else {
      status->conditions.push_back(std::move(nc));
    }
    changed = true;
  }
  return changed;
}

std::string Rfc3339(sched::WallTime t) {
  return core::FormatRfc3339(std::chrono::time_point_cast<std::chrono::system_clock::duration>(t));
}

sched::WallTime ParseTime(const std::string& s) {
  core::Clock::WallTime t{};
  if (s.empty() || !core::ParseRfc3339(s, &t)) return sched::WallTime{};
  return t;
}

namespace {

uint8_t AccessModes(const std::vector<std::string>& modes) {
  uint8_t out = 0;
  for (const auto& m : modes) {
    if (m == "ReadWriteOnce") out |= sched::kReadWriteOnce;
    else if (m == "ReadOnlyMany") out |= sched::kReadOnlyMany;
    else if (m == "ReadWriteMany") out |= sched::kReadWriteMany;
    else if (m == "ReadWriteOncePod") out |= sched::kReadWriteOncePod;
  }
  return out;
}

int64_t Storage(const api::ResourceList& list) {
  auto it = list.find("storage");
  return it == list.end() ? 0 : it->second.Value();
}

}  // namespace

sched::ClaimInfo ToClaimInfo(const api::PersistentVolumeClaim& pvc) {
  sched::ClaimInfo c;
  c.volume = pvc.spec.volume_name;
  c.storage_class = pvc.spec.storage_class_name.value_or("");
  c.deleting = !pvc.metadata.deletion_timestamp.empty();
  c.uid = pvc.metadata.uid;
  c.request = Storage(pvc.spec.resources.requests);
  c.access_modes = AccessModes(pvc.spec.access_modes);
  c.block = pvc.spec.volume_mode.value_or("") == "Block";
  if (pvc.spec.selector) c.selector = ToSelector(*pvc.spec.selector);
  return c;
}

sched::VolumeInfo ToVolumeInfo(const api::PersistentVolume& pv) {
  sched::VolumeInfo v;
  if (pv.spec.node_affinity && pv.spec.node_affinity->required)
    for (const auto& term : pv.spec.node_affinity->required->node_selector_terms) v.node_affinity.push_back(term);
  v.labels = pv.metadata.labels;
  if (pv.spec.csi) {
    v.csi_driver = pv.spec.csi->driver;
    v.csi_handle = pv.spec.csi->volume_handle;
  }
  v.storage_class = pv.spec.storage_class_name;
  v.capacity = Storage(pv.spec.capacity);
  v.access_modes = AccessModes(pv.spec.access_modes);
  v.block = pv.spec.volume_mode.value_or("") == "Block";
  if (pv.spec.claim_ref && !pv.spec.claim_ref->name.empty()) {
    v.claim_ref = pv.spec.claim_ref->namespace_ + "/" + pv.spec.claim_ref->name;
    v.claim_ref_uid = pv.spec.claim_ref->uid;
  }
  v.available = pv.status.is_object() && pv.status.value("phase", "") == "Available";
  v.deleting = !pv.metadata.deletion_timestamp.empty();
  return v;
}

std::map<std::string, int64_t> ToCsiLimits(const api::CSINode& node) {
  std::map<std::string, int64_t> out;
  for (const auto& d : node.spec.drivers)
    if (d.allocatable && d.allocatable->count) out[sched::CsiLimitKey(d.name)] = *d.allocatable->count;
  return out;
}

sched::StorageClassInfo ToStorageClassInfo(const api::StorageClass& sc) {
  sched::StorageClassInfo out;
  out.wait_for_first_consumer = sc.volume_binding_mode == "WaitForFirstConsumer";
  out.static_only = sc.provisioner == "kubernetes.io/no-provisioner";
  out.provisioner = sc.provisioner;
  for (const auto& term : sc.allowed_topologies) {
    sched::NodeSelectorTerm t;
    for (const auto& r : term.match_label_expressions) t.match_expressions.push_back({r.key, sched::SelectorOp::kIn, r.values});
    out.allowed_topologies.push_back(std::move(t));
  }
  return out;
}

}  // namespace tephra::scheduler
