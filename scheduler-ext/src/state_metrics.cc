#include "tephra/scheduler/state_metrics.h"

#include <algorithm>

namespace tephra::scheduler {

namespace {

// The largest share over the resources the cluster has (pods excluded): DRF's dominant share.
double DominantShare(const sched::Resource& used, const sched::Resource& total, int dims) {
  double share = 0;
  for (int i = 0; i < dims; ++i) {
    if (i == sched::kPods || total.Get(i) <= 0 || total.Get(i) >= sched::kUnlimited) continue;
    share = std::max(share, static_cast<double>(used.Get(i)) / static_cast<double>(total.Get(i)));
  }
  return share;
}

}  // namespace

double QueueShare(const sched::Resource& allocated, const sched::Resource& deserved,
                  const sched::ResourceRegistry& names, std::string* by) {
  double share = 0;
  bool any = false;
  for (int i = 0; i < names.size(); ++i) {
    if (i == sched::kPods) continue;
    const int64_t des = deserved.Get(i), alloc = allocated.Get(i);
    if (des >= sched::kUnlimited || (des <= 0 && alloc <= 0)) continue;
    // Volcano's helpers.Share: allocated/deserved, 1 when something is held against a deserved of 0.
    const double sh = des <= 0 ? 1.0 : static_cast<double>(alloc) / static_cast<double>(des);
    if (sh > share || !any) {
      share = sh;
      if (by) *by = names.Name(i);
      any = true;
    }
  }
  return share;
}

void StateMetrics::Tracked::Set(std::vector<std::string> labels, double v) {
  f->With(labels)->Set(v);
  live.insert(std::move(labels));
}

void StateMetrics::Tracked::Sweep() {
  f->RemoveIf([&](const std::vector<std::string>& labels) { return !live.count(labels); });
  live.clear();
}

void StateMetrics::Triple::Set(const std::string& queue, const sched::Resource& r, const sched::ResourceRegistry& names) {
  // Unlimited dimensions (an unset capability) have no series: Volcano's exporter skips them too.
  if (r.Get(sched::kCpu) < sched::kUnlimited) cpu.Set({queue}, static_cast<double>(r.Get(sched::kCpu)));
  if (r.Get(sched::kMemory) < sched::kUnlimited) mem.Set({queue}, static_cast<double>(r.Get(sched::kMemory)));
  for (int i = sched::kFirstScalar; i < names.size(); ++i)
    if (r.Get(i) < sched::kUnlimited) scalar.Set({queue, names.Name(i)}, static_cast<double>(r.Get(i)));
}

void StateMetrics::Triple::Sweep() {
  cpu.Sweep();
  mem.Sweep();
  scalar.Sweep();
}

StateMetrics::Triple StateMetrics::Make(kube::metrics::Registry& r, const std::string& what, const std::string& help) {
  Triple t;
  t.cpu.f = &r.AddGauge("volcano_queue_" + what + "_milli_cpu", help + " CPU (millicores) for one queue", {"queue_name"});
  t.mem.f = &r.AddGauge("volcano_queue_" + what + "_memory_bytes", help + " memory (bytes) for one queue", {"queue_name"});
  t.scalar.f = &r.AddGauge("volcano_queue_" + what + "_scalar_resources", help + " scalar resources for one queue",
                           {"queue_name", "resource"});
  return t;
}

StateMetrics::StateMetrics(kube::metrics::Registry& r) {
  allocated_ = Make(r, "allocated", "Allocated");
  request_ = Make(r, "request", "Requested (allocated plus pending)");
  deserved_ = Make(r, "deserved", "Deserved");
  capacity_ = Make(r, "capacity", "Capability (spec.capability)");
  real_capacity_ = Make(r, "real_capacity", "Real capacity (capability capped by the cluster less other queues' guarantees)");
  inqueue_ = Make(r, "inqueue", "Minimum resources of Inqueue PodGroups,");
  queue_share_.f = &r.AddGauge("volcano_queue_share", "Share of one queue: allocated over deserved, the largest over resources", {"queue_name"});
  queue_weight_.f = &r.AddGauge("volcano_queue_weight", "Weight of one queue", {"queue_name"});
  queue_overused_.f = &r.AddGauge("volcano_queue_overused", "1 when the queue's allocation exceeds its deserved share", {"queue_name"});
  job_share_.f = &r.AddGauge("volcano_job_share", "Dominant share of the cluster one job holds", {"job_ns", "job_id"});
  unschedule_tasks_.f = &r.AddGauge("volcano_unschedule_task_count", "Number of tasks could not be scheduled", {"job_id"});
  ns_share_.f = &r.AddGauge("volcano_namespace_share", "Dominant share of the cluster one namespace holds", {"namespace_name"});
  ns_weight_.f = &r.AddGauge("volcano_namespace_weight", "Weight of one namespace", {"namespace_name"});
  ns_weighted_share_.f = &r.AddGauge("volcano_namespace_weighted_share", "Share over weight of one namespace", {"namespace_name"});
  vgpu_shared_.f = &r.AddGauge("volcano_vgpu_device_shared_number", "Pods sharing one vGPU card", {"devID", "NodeName"});
  vgpu_memory_.f = &r.AddGauge("volcano_vgpu_device_allocated_memory", "MiB allocated on one vGPU card", {"devID", "NodeName"});
  vgpu_cores_.f = &r.AddGauge("volcano_vgpu_device_allocated_cores", "Core percentage allocated on one vGPU card", {"devID", "NodeName"});
  vgpu_limit_.f = &r.AddGauge("volcano_vgpu_device_memory_limit", "MiB of one vGPU card", {"devID", "NodeName"});
  vgpu_pod_memory_.f = &r.AddGauge("volcano_vgpu_device_memory_allocation_for_a_certain_pod",
                                   "MiB one pod holds on one vGPU card", {"devID", "NodeName", "podName"});
  vgpu_pod_cores_.f = &r.AddGauge("volcano_vgpu_device_core_allocation_for_a_certain_pod",
                                  "Core percentage one pod holds on one vGPU card", {"devID", "NodeName", "podName"});
  position_.f = &r.AddGauge("tephra_job_queue_position", "A waiting gang's 1-based place in its queue's order",
                            {"namespace", "podgroup", "queue"});
  node_allocatable_.f = &r.AddGauge("tephra_node_resource_allocatable",
                                    "What a node offers (cpu in millicores, memory in bytes, devices in units)", {"node", "resource"});
  node_allocated_.f = &r.AddGauge("tephra_node_resource_allocated", "What pods on a node hold", {"node", "resource"});
  hn_allocatable_.f = &r.AddGauge("tephra_hypernode_resource_allocatable", "What a HyperNode's nodes offer",
                                  {"hypernode", "tier", "resource"});
  hn_allocated_.f = &r.AddGauge("tephra_hypernode_resource_allocated", "What pods on a HyperNode's nodes hold",
                                {"hypernode", "tier", "resource"});
}

void StateMetrics::Export(const sched::Scheduler& core) {
  const sched::ClusterState& st = core.state();
  const sched::ResourceRegistry& names = st.resources();
  const int dims = names.size();
  const sched::Resource total = st.TotalAllocatable();

  // Queues. Real capacity follows Volcano's capacity plugin: what the cluster has beyond every queue's
  // guarantee, plus the queue's own guarantee, capped by its capability.
  sched::Resource guarantees;
  st.ForEachQueue([&](const sched::QueueInfo& q) { guarantees += q.guarantee; });
  std::map<std::string, sched::Resource> inqueue;
  std::map<std::string, sched::Resource> ns_alloc;
  std::map<std::string, int> unschedulable;
  st.ForEachJob([&](const sched::JobInfo& j) {
    if (j.phase == sched::PodGroupPhase::kInqueue && j.min_resources) inqueue[j.queue] += *j.min_resources;
    ns_alloc[j.ns] += j.allocated;
    if (!j.implicit) job_share_.Set({j.ns, j.name}, DominantShare(j.allocated, total, dims));
    // Pods pending and the minimum not placed: the same gangs volcano_unschedule_job_count counts.
    if (j.Count(sched::TaskStatus::kPending) > 0 && j.ReadyCount() < j.min_member)
      unschedule_tasks_.Set({j.name}, j.Count(sched::TaskStatus::kPending));
  });
  const auto& deserved = core.queue_deserved();
  st.ForEachQueue([&](const sched::QueueInfo& q) {
    allocated_.Set(q.name, q.allocated, names);
    request_.Set(q.name, q.request, names);
    capacity_.Set(q.name, q.capability, names);
    sched::Resource beyond = total;
    beyond -= guarantees;
    beyond = beyond.Max(sched::Resource());
    beyond += q.guarantee;
    real_capacity_.Set(q.name, beyond.Min(q.capability), names);
    auto in = inqueue.find(q.name);
    inqueue_.Set(q.name, in == inqueue.end() ? sched::Resource() : in->second, names);
    queue_weight_.Set({q.name}, q.weight);
    if (auto d = deserved.find(q.name); d != deserved.end()) {
      deserved_.Set(q.name, d->second, names);
      queue_share_.Set({q.name}, QueueShare(q.allocated, d->second, names));
      queue_overused_.Set({q.name}, q.allocated.FitsIn(d->second) ? 0 : 1);
    }
  });
  // Namespaces: Tephra reads no namespace weights, so every weight is 1 and the weighted share is the share.
  for (const auto& [ns, alloc] : ns_alloc) {
    const double share = DominantShare(alloc, total, dims);
    ns_share_.Set({ns}, share);
    ns_weight_.Set({ns}, 1);
    ns_weighted_share_.Set({ns}, share);
  }

  // Nodes: every resource the node offers or holds; cards shared as vGPUs per card and per pod.
  auto node_series = [&](Tracked& t, const std::string& node, const sched::Resource& r) {
    for (int i = 0; i < dims; ++i)
      if (i != sched::kPods && r.Get(i) > 0 && r.Get(i) < sched::kUnlimited) t.Set({node, names.Name(i)}, static_cast<double>(r.Get(i)));
  };
  st.ForEachNode([&](const sched::NodeInfo& n) {
    node_series(node_allocatable_, n.name, n.allocatable);
    // A resource the node offers and nobody uses is 0, not absent: "0 of 8 GPUs" is data.
    for (int i = 0; i < dims; ++i)
      if (i != sched::kPods && n.allocatable.Get(i) > 0 && n.allocatable.Get(i) < sched::kUnlimited)
        node_allocated_.Set({n.name, names.Name(i)}, static_cast<double>(n.used.Get(i)));
    bool shared = false;
    for (const sched::Card& c : n.devices.cards) {
      if (c.max_sharers <= 0) continue;
      shared = true;
      vgpu_shared_.Set({c.id, n.name}, c.sharers);
      vgpu_memory_.Set({c.id, n.name}, static_cast<double>(c.used_memory));
      vgpu_cores_.Set({c.id, n.name}, c.used_cores / 10.0);
      vgpu_limit_.Set({c.id, n.name}, static_cast<double>(c.memory));
    }
    if (!shared) return;
    st.ForEachTaskOnNode(n.name, [&](const sched::TaskInfo& t) {
      if (t.devices.shared == 0) return;
      for (const std::string& id : t.cards) {
        const int k = n.devices.FindCard(id);
        if (k < 0) continue;
        const sched::Card& c = n.devices.cards[static_cast<size_t>(k)];
        vgpu_pod_memory_.Set({id, n.name, t.name}, static_cast<double>(t.devices.MemoryOn(c)));
        vgpu_pod_cores_.Set({id, n.name, t.name}, t.devices.cores / 10.0);
      }
    });
  });
  // HyperNodes (leaves and spines): sums over their nodes.
  for (const auto& [name, e] : st.Topology().entries) {
    sched::Resource alloc, used;
    for (int slot : e.nodes) {
      alloc += st.NodeAt(slot).allocatable;
      used += st.NodeAt(slot).used;
    }
    const std::string tier = std::to_string(e.tier);
    for (int i = 0; i < dims; ++i) {
      if (i == sched::kPods || alloc.Get(i) <= 0 || alloc.Get(i) >= sched::kUnlimited) continue;
      hn_allocatable_.Set({name, tier, names.Name(i)}, static_cast<double>(alloc.Get(i)));
      hn_allocated_.Set({name, tier, names.Name(i)}, static_cast<double>(used.Get(i)));
    }
  }
  // Queue positions of waiting gangs.
  for (const auto& [key, pos] : core.positions()) {
    const sched::JobInfo* j = st.FindJob(key);
    if (!j || j->implicit || pos <= 0) continue;
    position_.Set({j->ns, j->name, j->queue}, pos);
  }

  for (Triple* t : {&allocated_, &request_, &deserved_, &capacity_, &real_capacity_, &inqueue_}) t->Sweep();
  for (Tracked* t : {&queue_share_, &queue_weight_, &queue_overused_, &job_share_, &unschedule_tasks_, &ns_share_,
                     &ns_weight_, &ns_weighted_share_, &vgpu_shared_, &vgpu_memory_, &vgpu_cores_, &vgpu_limit_,
                     &vgpu_pod_memory_, &vgpu_pod_cores_, &position_, &node_allocatable_, &node_allocated_,
                     &hn_allocatable_, &hn_allocated_})
    t->Sweep();
}

}  // namespace tephra::scheduler
