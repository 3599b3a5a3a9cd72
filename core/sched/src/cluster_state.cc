#include "tephra/sched/cluster_state.h"

#include "tephra/pattern/pattern.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

namespace tephra::sched {

ClusterState::ClusterState(CoreOptions options) : options_(std::move(options)) {}

void ClusterState::set_options(CoreOptions o) {
  options_ = std::move(o);
  ++topology_version_;
  ++generation_;
  BumpCapacity();
}

std::vector<ClusterState::SubGroupTally> ClusterState::SubGroupsOf(const JobInfo& job) const {
  std::map<std::pair<int, std::string>, SubGroupTally> groups;
  std::string id;
  ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
    int p = job.SubGroupOf(t, &id);
    auto [it, fresh] = groups.try_emplace({p, id});
    SubGroupTally& g = it->second;
    if (fresh) {
      g.policy = p;
      g.id = id;
      int v = 0;
      std::string_view first = std::string_view(id).substr(0, id.find('-'));
      auto [ptr, ec] = std::from_chars(first.data(), first.data() + first.size(), v);
      g.match_index = ec == std::errc() && ptr == first.data() + first.size() ? v : 0;
      g.priority = t.priority;
    }
    g.priority = std::max(g.priority, t.priority);
    const bool pending = t.status == TaskStatus::kPending;
    if (IsAllocatedStatus(t.status) || t.status == TaskStatus::kSucceeded || (pending && t.best_effort)) ++g.ready;
    if (t.status == TaskStatus::kPipelined) ++g.pipelined;
    if (t.status != TaskStatus::kFailed && t.status != TaskStatus::kReleasing && t.status != TaskStatus::kUnknown) ++g.valid;
  });
  std::vector<SubGroupTally> out;
  out.reserve(groups.size());
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  return out;
}

int ClusterState::NodeIndex(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

// ---------------------------------------------------------------------------------------------- nodes

void ClusterState::UpsertNode(const NodeInfo& in) {
  ++generation_;
  int idx = NodeIndex(in.name);
  if (idx >= 0) {
    NodeInfo& n = nodes_[static_cast<size_t>(idx)];
    bool spec_changed = n.labels != in.labels || n.taints != in.taints || n.unschedulable != in.unschedulable ||
                        n.ready != in.ready || n.allocatable != in.allocatable || n.volume_limits != in.volume_limits;
    const bool devices_changed = !SameDeviceSpec(n.devices, in.devices);
    if (!spec_changed && !devices_changed) return;  // status heartbeats: nothing the scheduler reads changed
    if (devices_changed) {
      // A card's health or the card set changed: only fits move (dynamic predicates), not the static ones.
      n.devices = in.devices;
      RebuildCardHolds(n);
      ++n.version;
      BumpCapacity();
      if (!spec_changed) return;
    }
    n.allocatable = in.allocatable;
    n.volume_limits = in.volume_limits;
    n.labels = in.labels;
    n.taints = in.taints;
    n.unschedulable = in.unschedulable;
    n.ready = in.ready;
    ++n.version;
    ++topology_version_;
    BumpCapacity();
    return;
  }
  if (!free_node_slots_.empty()) {
    idx = free_node_slots_.back();
    free_node_slots_.pop_back();
  } else {
    idx = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    node_alive_.push_back(false);
  }
  NodeInfo& n = nodes_[static_cast<size_t>(idx)];
  uint64_t version = n.version + 1;
  n = NodeInfo{};
  n.name = in.name;
  n.allocatable = in.allocatable;
  n.volume_limits = in.volume_limits;
  n.labels = in.labels;
  n.taints = in.taints;
  n.unschedulable = in.unschedulable;
  n.ready = in.ready;
  n.devices = in.devices;
  n.version = version;
  node_alive_[static_cast<size_t>(idx)] = true;
  node_index_[n.name] = idx;
  // Pods can arrive before their node: account for them now.
  auto it = tasks_by_node_.find(n.name);
  if (it != tasks_by_node_.end()) {
    for (TaskInfo* t : it->second) {
      if (OccupiesNode(t->status)) {
        n.used += t->request;
        ++n.task_count;
        if (t->status == TaskStatus::kReleasing) n.releasing += t->request;
      } else if (t->status == TaskStatus::kPipelined) {
        n.pipelined += t->request;
      }
      if (OnNodeForScheduling(t->status)) AccountScoring(n, *t, +1);
    }
  }
  RebuildCardHolds(n);
  ++topology_version_;
  BumpCapacity();
}

bool ClusterState::SameDeviceSpec(const NodeDevices& a, const NodeDevices& b) {
  if (a.kind != b.kind || a.topology != b.topology || a.model != b.model || a.links != b.links ||
      a.cards.size() != b.cards.size())
    return false;
  for (size_t i = 0; i < a.cards.size(); ++i) {
    const Card& x = a.cards[i];
    const Card& y = b.cards[i];
    if (x.id != y.id || x.index != y.index || x.health != y.health || x.memory != y.memory || x.max_sharers != y.max_sharers)
      return false;
  }
  return true;
}

void ClusterState::RebuildCardHolds(NodeInfo& n) {
  if (n.devices.cards.empty()) return;
  for (Card& c : n.devices.cards) c.used_memory = c.used_cores = c.sharers = c.owners = 0;
  auto it = tasks_by_node_.find(n.name);
  if (it == tasks_by_node_.end()) return;
  for (const TaskInfo* t : it->second)
    if (OccupiesNode(t->status) && !t->cards.empty()) HoldCards(n.devices, t->devices, t->cards, +1);
}

void ClusterState::RemoveNode(const std::string& name) {
  int idx = NodeIndex(name);
  if (idx < 0) return;
  ++generation_;
  node_alive_[static_cast<size_t>(idx)] = false;
  ++nodes_[static_cast<size_t>(idx)].version;
  node_index_.erase(name);
  free_node_slots_.push_back(idx);
  ++topology_version_;
  BumpCapacity();
}

// ---------------------------------------------------------------------------------------------- tasks

uint32_t ClusterState::InternShape(const TaskInfo& t) {
  // Everything a StaticPredicate may read, plus the request; identical pod specs of a role share it.
  std::string key;
  key.reserve(256);
  for (int64_t v : t.request.raw()) { key += std::to_string(v); key += ','; }
  if (!t.devices.empty() || t.devices.detail) {
    key += 'd';
    for (int64_t v : {int64_t{static_cast<int>(t.devices.kind)}, int64_t{t.devices.whole}, int64_t{t.devices.shared},
                      t.devices.memory, int64_t{t.devices.memory_percent}, int64_t{t.devices.cores}}) {
      key += std::to_string(v);
      key += ',';
    }
    if (const auto& d = t.devices.detail) {
      for (const auto* list : {&d->use_types, &d->nouse_types, &d->use_ids, &d->nouse_ids}) {
        for (const auto& v : *list) { key += v; key += ','; }
        key += ';';
      }
    }
  }
  key += t.ns; key += '|';
  for (const auto& [k, v] : t.node_selector) { key += k; key += '='; key += v; key += ';'; }
  key += '|';
  auto add_requirements = [&key](const std::vector<SelectorRequirement>& reqs) {
    for (const auto& r : reqs) {
      key += r.key; key += static_cast<char>('0' + static_cast<int>(r.op));
      for (const auto& v : r.values) { key += v; key += ','; }
      key += ';';
    }
  };
  for (const auto& term : t.required_affinity) {
    add_requirements(term.match_expressions);
    key += "F";
    add_requirements(term.match_fields);
    key += '/';
  }
  key += '|';
  // Preferred terms change only scores, but tasks of one shape share score heaps.
  for (const auto& pt : t.preferred_affinity) {
    key += std::to_string(pt.weight); key += ':';
    add_requirements(pt.match_expressions);
    key += '/';
  }
  key += '|';
  for (const auto& tol : t.tolerations) {
    key += tol.key; key += tol.op_exists ? '?' : '='; key += tol.value;
    key += tol.effect ? static_cast<char>('0' + static_cast<int>(*tol.effect)) : '*';
    key += ';';
  }
  key += '|';
  // Pod (anti-)affinity is checked per node at placement time; only whether it exists, and whether a term
  // cannot be decided (then no node fits, a static answer), is part of the shape.
  for (const auto* terms : {&t.pod_affinity, &t.pod_anti_affinity}) {
    char c = terms->empty() ? '0' : '1';
    for (const auto& term : *terms)
      if (!term.Valid()) c = '2';
    key += c;
  }
  // Scores read the scoring requests and the ports predicate reads the host ports: tasks that share a
  // shape share score heaps and predicate answers in allocate, so both are part of it.
  key += '|'; key += std::to_string(t.score_cpu); key += ','; key += std::to_string(t.score_memory);
  for (const auto& p : t.host_ports) {
    key += '|'; key += p.ip; key += '/'; key += p.protocol; key += '/'; key += std::to_string(p.port);
  }
  // Claims decide where a pod may go (a bound volume's node affinity); the namespace is in the key already.
  if (!t.claims.empty()) {
    key += "|v";
    for (const auto& c : t.claims) { key += '/'; key += c; }
  }
  auto [it, inserted] = shapes_.emplace(std::move(key), static_cast<uint32_t>(shapes_.size() + 1));
  return it->second;
}

void ClusterState::Account(TaskInfo& t, int sign) {
  Resource req = t.request;
  if (sign < 0) {
    Resource neg;
    neg -= req;
    req = neg;
  }
  if (!t.node.empty()) {
    int idx = NodeIndex(t.node);
    if (idx >= 0) {
      NodeInfo& n = nodes_[static_cast<size_t>(idx)];
      if (OccupiesNode(t.status)) {
        n.used += req;
        n.task_count += sign;
        if (t.status == TaskStatus::kReleasing) n.releasing += req;
        if (!t.cards.empty() && !n.devices.cards.empty()) HoldCards(n.devices, t.devices, t.cards, sign);
        AccountScoring(n, t, sign);
        ++n.version;
      } else if (t.status == TaskStatus::kPipelined) {
        n.pipelined += req;
        AccountScoring(n, t, sign);
        ++n.version;
      }
    }
  }
  if (t.job.empty()) return;
  auto jit = jobs_.find(t.job);
  if (jit == jobs_.end()) return;
  JobInfo& j = jit->second;
  ++j.version;
  j.status_count[static_cast<size_t>(t.status)] += sign;
  if (IsAllocatedStatus(t.status) || t.status == TaskStatus::kSucceeded || t.status == TaskStatus::kPipelined ||
      t.status == TaskStatus::kPending)
    j.role_valid[t.role] += sign;
  if (IsAllocatedStatus(t.status) || t.status == TaskStatus::kSucceeded) j.role_ready[t.role] += sign;
  QueueInfo* q = nullptr;
  auto qit = queues_.find(j.queue);
  if (qit != queues_.end()) q = &qit->second;
  if (IsAllocatedStatus(t.status)) {
    j.allocated += req;
    if (q) { q->allocated += req; q->request += req; }
  } else if (t.status == TaskStatus::kPending || t.status == TaskStatus::kPipelined) {
    j.pending_request += req;
    if (t.status == TaskStatus::kPending && t.best_effort) j.pending_best_effort += sign;
    if (q) q->request += req;
  }
}

void ClusterState::AccountScoring(NodeInfo& n, const TaskInfo& t, int sign) {
  n.score_cpu += sign * t.score_cpu;
  n.score_memory += sign * t.score_memory;
  if (!t.host_ports.empty()) n.host_port_tasks += sign;
  if (!t.claims.empty()) n.claim_tasks += sign;
}

void ClusterState::IndexPlaced(TaskInfo& t, bool add) {
  if (t.node.empty() || !OnNodeForScheduling(t.status)) return;
  if (add) {
    auto& list = placed_by_ns_[t.ns];
    t.placed_pos = static_cast<uint32_t>(list.size());
    list.push_back(&t);
    return;
  }
  auto it = placed_by_ns_.find(t.ns);
  if (it == placed_by_ns_.end() || t.placed_pos >= it->second.size()) return;
  auto& list = it->second;
  list[t.placed_pos] = list.back();
  list[t.placed_pos]->placed_pos = t.placed_pos;
  list.pop_back();
  t.placed_pos = UINT32_MAX;
  if (list.empty()) placed_by_ns_.erase(it);
}

void ClusterState::Transition(TaskInfo& t, TaskStatus to, const std::string& node) {
  last_transition_.old_node = t.node;
  last_transition_.old_status = t.status;
  last_transition_.task = &t;
  IndexPlaced(t, false);
  Account(t, -1);
  if (t.node != node) {
    if (!t.node.empty()) {
      auto it = tasks_by_node_.find(t.node);
      if (it != tasks_by_node_.end()) {
        it->second.erase(&t);
        if (it->second.empty()) tasks_by_node_.erase(it);
      }
    }
    t.node = node;
    if (!node.empty()) tasks_by_node_[node].insert(&t);
  }
  // A task taken off every node holds no cards: its old node gave them back in Account(-1) above, and ids
  // kept past that would travel to its next node (Statement::Allocate only chooses cards for a task that
  // has none), which does not have them. A failed bind is such a move (BindFailed); so is an undone one.
  if (node.empty()) t.cards.clear();
  t.status = to;
  Account(t, +1);
  IndexPlaced(t, true);
  last_transition_.generation = ++generation_;
}

TaskInfo* ClusterState::MutableTask(const std::string& uid) {
  auto it = tasks_.find(uid);
  return it == tasks_.end() ? nullptr : it->second.get();
}

void ClusterState::UpsertPod(const TaskInfo& in) {
  ++generation_;
  TaskInfo incoming = in;
  incoming.request.Set(kPods, 1);
  incoming.best_effort = incoming.request.IsBestEffort();
  // Resolved once here, so node sums and shapes never see the "unset" marker (types.h).
  incoming.score_cpu = ScoreCpu(incoming);
  incoming.score_memory = ScoreMemory(incoming);
  if (incoming.status == TaskStatus::kAllocated || incoming.status == TaskStatus::kPipelined) {
    // Session-only states never come from the API.
    incoming.status = incoming.node.empty() ? TaskStatus::kPending : TaskStatus::kBound;
  }
  incoming.evicting = false;  // core-maintained
  incoming.placed_pos = UINT32_MAX;
  auto it = tasks_.find(in.uid);
  if (it == tasks_.end() && OccupiesNode(incoming.status)) BumpVictims();
  if (it != tasks_.end()) {
    TaskInfo& old = *it->second;
    if (old.status == TaskStatus::kBinding && incoming.status == TaskStatus::kPending && incoming.node.empty()) {
      incoming.status = TaskStatus::kBinding;  // informer lags the binder: keep the assumption
      incoming.node = old.node;
    }
    // The cards this scheduler chose stay held until the pod shows others (the binder writes them before it
    // binds, but an update from before that write carries none).
    if (incoming.cards.empty() && !old.cards.empty() && incoming.node == old.node && OccupiesNode(incoming.status))
      incoming.cards = old.cards;
    if (old.evicting && incoming.node == old.node &&
        (incoming.status == TaskStatus::kRunning || incoming.status == TaskStatus::kBound)) {
      incoming.status = TaskStatus::kReleasing;  // informer lags the evictor: do not count the victim twice
      incoming.evicting = true;
    }
    bool frees = OccupiesNode(old.status) &&
                 (!OccupiesNode(incoming.status) || incoming.node != old.node ||
                  incoming.status == TaskStatus::kReleasing || !incoming.request.LessEqual(old.request));
    const bool old_occupied = OccupiesNode(old.status);
    // A pod losing its volcano.sh/preemptable: "false" mark is a new possible victim.
    const bool became_preemptable = incoming.preemptable && !old.preemptable;
    RemovePod(in.uid);  // destroys `old`
    if (!frees) --capacity_epoch_;  // RemovePod bumped it; this update frees nothing
    if ((OccupiesNode(incoming.status) && !old_occupied) || became_preemptable) BumpVictims();
  }
  incoming.shape = InternShape(incoming);
  auto owned = std::make_unique<TaskInfo>(std::move(incoming));
  TaskInfo* t = owned.get();
  tasks_.emplace(t->uid, std::move(owned));
  if (!t->node.empty()) tasks_by_node_[t->node].insert(t);
  if (!t->job.empty()) tasks_by_job_[t->job].insert(t);
  tasks_by_ns_[t->ns].insert(t);
  IndexPlaced(*t, true);
  if (!t->pod_anti_affinity.empty()) anti_affinity_tasks_.insert(t);
  if (!t->preferred_pod_terms.empty()) preferred_pod_term_tasks_.insert(t);
  if (!t->pod_affinity.empty()) ++pod_affinity_pods_;
  if (!t->spread.empty()) ++spread_pods_;
  Account(*t, +1);
}

void ClusterState::RemovePod(const std::string& uid) {
  auto it = tasks_.find(uid);
  if (it == tasks_.end()) return;
  ++generation_;
  TaskInfo* t = it->second.get();
  Account(*t, -1);
  if (!t->node.empty()) {
    auto nit = tasks_by_node_.find(t->node);
    if (nit != tasks_by_node_.end()) {
      nit->second.erase(t);
      if (nit->second.empty()) tasks_by_node_.erase(nit);
    }
  }
  if (!t->job.empty()) {
    auto jit = tasks_by_job_.find(t->job);
    if (jit != tasks_by_job_.end()) {
      jit->second.erase(t);
      if (jit->second.empty()) tasks_by_job_.erase(jit);
    }
  }
  if (auto nsit = tasks_by_ns_.find(t->ns); nsit != tasks_by_ns_.end()) {
    nsit->second.erase(t);
    if (nsit->second.empty()) tasks_by_ns_.erase(nsit);
  }
  IndexPlaced(*t, false);
  if (!t->pod_anti_affinity.empty()) anti_affinity_tasks_.erase(t);
  if (!t->preferred_pod_terms.empty()) preferred_pod_term_tasks_.erase(t);
  if (!t->pod_affinity.empty()) --pod_affinity_pods_;
  if (!t->spread.empty()) --spread_pods_;
  tasks_.erase(it);
  BumpCapacity();
}

// ----------------------------------------------------------------------------------------------- jobs

void ClusterState::UpsertJob(const JobInfo& in) {
  ++generation_;
  auto it = jobs_.find(in.key);
  JobInfo j = in;
  j.caller_priority = in.priority;
  j.priority = ResolvedPriority(j);
  if (it != jobs_.end()) {
    JobInfo& old = it->second;
    // A PodGroup that exists is never replaced by a stand-in for one that does not.
    if (j.implicit && !old.implicit) return;
    // The PodGroup created for a plain pod that was scheduled as an implicit gang of one is the same job.
    const bool same_job = old.uid == j.uid || old.implicit;
    // The core owns the phase once it knows the PodGroup (the status writer is asynchronous, so the API
    // shows older phases); a new uid (PodGroup re-created) starts over from the API's phase.
    if (same_job) j.phase = old.phase;
    bool same = old.uid == j.uid && old.implicit == j.implicit && old.queue == j.queue && old.min_member == j.min_member &&
                old.min_task_member == j.min_task_member && old.min_resources == j.min_resources &&
                old.unoffered == j.unoffered && old.priority == j.priority && old.priority_class_name == j.priority_class_name &&
                old.network_topology == j.network_topology && old.sub_group_policies == j.sub_group_policies &&
                old.task_topology_affinity == j.task_topology_affinity &&
                old.task_topology_anti_affinity == j.task_topology_anti_affinity &&
                old.task_topology_order == j.task_topology_order;
    if (same) return;  // e.g. our own status write coming back through the informer
    if (old.queue != j.queue) {
      auto oq = queues_.find(old.queue);
      if (oq != queues_.end()) {
        oq->second.allocated -= old.allocated;
        oq->second.request -= old.allocated + old.pending_request;
      }
      auto nq = queues_.find(j.queue);
      if (nq != queues_.end()) {
        nq->second.allocated += old.allocated;
        nq->second.request += old.allocated + old.pending_request;
      }
    }
    j.status_count = old.status_count;
    j.role_valid = old.role_valid;
    j.role_ready = old.role_ready;
    j.allocated = old.allocated;
    j.pending_request = old.pending_request;
    j.pending_best_effort = old.pending_best_effort;
    // A new uid is a new PodGroup (deleted and re-created under the same name, seen as one update after a
    // re-list): none of the old gang's memos (ever ready, partial since, failed attempts, status) apply.
    if (same_job) j.sched = old.sched;
    j.version = old.version + 1;
    old = std::move(j);
    BumpCapacity();  // minMember/minResources/queue changes can make the job (or others) schedulable
    BumpVictims();
    return;
  }
  j.status_count.fill(0);
  j.role_valid.clear();
  j.role_ready.clear();
  j.allocated = Resource();
  j.pending_request = Resource();
  j.pending_best_effort = 0;
  j.sched = {};
  j.version = 1;
  auto [nit, _] = jobs_.emplace(j.key, std::move(j));
  auto tit = tasks_by_job_.find(nit->first);
  if (tit != tasks_by_job_.end())
    for (TaskInfo* t : tit->second) Account(*t, +1);
}

void ClusterState::RemoveJob(const std::string& key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  ++generation_;
  auto q = queues_.find(it->second.queue);
  if (q != queues_.end()) {
    q->second.allocated -= it->second.allocated;
    q->second.request -= it->second.allocated + it->second.pending_request;
  }
  jobs_.erase(it);
  bind_failures_.erase(key);
  removed_jobs_.push_back(key);
  BumpCapacity();
}

int32_t ClusterState::ResolvedPriority(const JobInfo& j) const {
  if (auto pc = priority_classes_.find(j.priority_class_name); pc != priority_classes_.end()) return pc->second;
  // A plain pod's stand-in carries the pod's priority, which the API server resolved when the pod was created.
  if (!j.implicit && !default_priority_class_.empty())
    if (auto d = priority_classes_.find(default_priority_class_); d != priority_classes_.end()) return d->second;
  return j.caller_priority;
}

void ClusterState::ResolvePriorities() {
  for (auto& [k, j] : jobs_) {
    int32_t p = ResolvedPriority(j);
    if (j.priority != p) {
      j.priority = p;
      ++j.version;
    }
  }
}

void ClusterState::SetPriorityClass(const std::string& name, int32_t value, bool global_default) {
  ++generation_;
  priority_classes_[name] = value;
  if (global_default) default_priority_class_ = name;
  else if (default_priority_class_ == name) default_priority_class_.clear();
  BumpVictims();
  ResolvePriorities();
}

void ClusterState::RemovePriorityClass(const std::string& name) {
  ++generation_;
  priority_classes_.erase(name);
  if (default_priority_class_ == name) default_priority_class_.clear();
  BumpVictims();
  ResolvePriorities();
}

// --------------------------------------------------------------------------------------------- queues

void ClusterState::UpsertQueue(const QueueInfo& in) {
  ++generation_;
  BumpCapacity();
  BumpVictims();
  auto it = queues_.find(in.name);
  QueueInfo q = in;
  if (it != queues_.end()) {
    q.allocated = it->second.allocated;
    q.request = it->second.request;
    q.version = it->second.version + 1;
    it->second = std::move(q);
    return;
  }
  q.allocated = Resource();
  q.request = Resource();
  q.version = 1;
  for (const auto& [k, j] : jobs_) {
    if (j.queue != q.name) continue;
    q.allocated += j.allocated;
    q.request += j.allocated + j.pending_request;
  }
  queues_.emplace(q.name, std::move(q));
}

void ClusterState::RemoveQueue(const std::string& name) {
  ++generation_;
  BumpCapacity();
  queues_.erase(name);
}

// ------------------------------------------------------------------------------------------ hypernodes

void ClusterState::UpsertHyperNode(const HyperNodeInfo& h) {
  ++generation_;
  ++topology_version_;
  BumpCapacity();
  hypernodes_[h.name] = h;
}

void ClusterState::RemoveHyperNode(const std::string& name) {
  ++generation_;
  ++topology_version_;
  BumpCapacity();
  hypernodes_.erase(name);
}

// ------------------------------------------------------------------------------------ binder feedback

void ClusterState::BindSucceeded(const std::string& uid) {
  TaskInfo* t = MutableTask(uid);
  if (!t || t->status != TaskStatus::kBinding) return;
  Transition(*t, TaskStatus::kBound, t->node);
}

void ClusterState::EvictFailed(const std::string& uid) {
  TaskInfo* t = MutableTask(uid);
  if (!t || !t->evicting || t->status != TaskStatus::kReleasing) return;
  t->evicting = false;
  Transition(*t, TaskStatus::kRunning, t->node);
  BumpVictims();
}

std::vector<std::string> ClusterState::BindFailed(const std::string& uid, const std::string& reason) {
  std::vector<std::string> rolled;
  TaskInfo* t = MutableTask(uid);
  if (!t || t->status != TaskStatus::kBinding) return rolled;
  std::string job = t->job;
  if (job.empty()) {
    Transition(*t, TaskStatus::kPending, "");
    rolled.push_back(uid);
    for (const auto& claim : t->claims) ForgetClaim(t->ns + "/" + claim);
  } else {
    auto it = tasks_by_job_.find(job);
    std::vector<TaskInfo*> victims;
    if (it != tasks_by_job_.end())
      for (TaskInfo* x : it->second)
        if (x->status == TaskStatus::kBinding) victims.push_back(x);
    for (TaskInfo* x : victims) {
      Transition(*x, TaskStatus::kPending, "");
      rolled.push_back(x->uid);
      for (const auto& claim : x->claims) ForgetClaim(x->ns + "/" + claim);  // the volumes it set aside
    }
    bind_failures_[job] = reason;
  }
  BumpCapacity();
  std::sort(rolled.begin(), rolled.end());
  return rolled;
}

void ClusterState::AdmitJob(const std::string& key) {
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  it->second.phase = PodGroupPhase::kInqueue;
  ++it->second.version;
  ++generation_;
}

void ClusterState::SetJobPhase(const std::string& key, PodGroupPhase phase) {
  auto it = jobs_.find(key);
  if (it != jobs_.end()) it->second.phase = phase;
}

void ClusterState::RestoreJobVersion(JournalKey, const std::string& key, uint64_t version) {
  auto it = jobs_.find(key);
  if (it != jobs_.end()) it->second.version = version;
}

std::vector<std::string> ClusterState::JobsWithBindFailures() const {
  std::vector<std::string> out;
  out.reserve(bind_failures_.size());
  for (const auto& [k, v] : bind_failures_) out.push_back(k);
  return out;
}

std::string ClusterState::TakeBindFailure(const std::string& job_key) {
  if (bind_failures_.empty()) return {};
  auto it = bind_failures_.find(job_key);
  if (it == bind_failures_.end()) return {};
  std::string s = std::move(it->second);
  bind_failures_.erase(it);
  return s;
}

// ---------------------------------------------------------------------------------------- read access

const NodeInfo* ClusterState::FindNode(const std::string& name) const {
  int idx = NodeIndex(name);
  return idx < 0 ? nullptr : &nodes_[static_cast<size_t>(idx)];
}
const TaskInfo* ClusterState::FindTask(const std::string& uid) const {
  auto it = tasks_.find(uid);
  return it == tasks_.end() ? nullptr : it->second.get();
}
const JobInfo* ClusterState::FindJob(const std::string& key) const {
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : &it->second;
}
void ClusterState::VolumesChanged() {
  ++generation_;
  ++topology_version_;  // static predicate answers are cached per topology version
  BumpCapacity();       // and waiting jobs are retried when capacity may have opened
}

void ClusterState::UpsertClaim(const std::string& key, const ClaimInfo& claim) {
  auto [it, inserted] = claims_.try_emplace(key, claim);
  if (!inserted) {
    if (it->second == claim) return;  // status-only updates
    it->second = claim;
  }
  if (!claim.volume.empty()) ForgetClaim(key);  // bound: the claim has its volume
  VolumesChanged();
}

void ClusterState::RemoveClaim(const std::string& key) {
  if (!claims_.erase(key)) return;
  ForgetClaim(key);
  VolumesChanged();
}

void ClusterState::UpsertVolume(const std::string& name, const VolumeInfo& volume) {
  auto [it, inserted] = volumes_.try_emplace(name, volume);
  if (!inserted) {
    if (it->second == volume) return;
    IndexVolume(name, it->second, false);
    it->second = volume;
  }
  IndexVolume(name, volume, true);
  // The volume now names a claim (the binder's write came back): nothing left to set aside.
  if (auto a = assumed_claim_of_volume_.find(name); a != assumed_claim_of_volume_.end() && a->second == volume.claim_ref)
    ForgetVolume(name);
  VolumesChanged();
}

void ClusterState::RemoveVolume(const std::string& name) {
  auto it = volumes_.find(name);
  if (it == volumes_.end()) return;
  IndexVolume(name, it->second, false);
  volumes_.erase(it);
  ForgetVolume(name);
  VolumesChanged();
}

void ClusterState::IndexVolume(const std::string& name, const VolumeInfo& v, bool add) {
  std::vector<std::string> hosts;
  if (v.node_affinity.size() == 1 && v.node_affinity[0].match_fields.empty() &&
      v.node_affinity[0].match_expressions.size() == 1) {
    const SelectorRequirement& r = v.node_affinity[0].match_expressions[0];
    if (r.key == kHostnameKey && r.op == SelectorOp::kIn) hosts = r.values;
  }
  if (hosts.empty()) hosts.emplace_back();
  if (!v.claim_ref.empty()) {
    if (add) {
      prebound_volume_of_claim_[v.claim_ref] = name;
    } else if (auto it = prebound_volume_of_claim_.find(v.claim_ref); it != prebound_volume_of_claim_.end() && it->second == name) {
      prebound_volume_of_claim_.erase(it);
    }
  }
  for (const auto& h : hosts) {
    auto key = std::make_pair(v.storage_class, h);
    if (add) {
      volumes_by_class_host_[key].insert(name);
    } else if (auto it = volumes_by_class_host_.find(key); it != volumes_by_class_host_.end()) {
      it->second.erase(name);
      if (it->second.empty()) volumes_by_class_host_.erase(it);
    }
  }
}

void ClusterState::AssumeVolume(JournalKey, const std::string& volume, const std::string& claim_key) {
  assumed_claim_of_volume_[volume] = claim_key;
  assumed_volume_of_claim_[claim_key] = volume;
  ++topology_version_;  // cached static answers offered this volume to other claims
}

void ClusterState::ForgetVolume(const std::string& volume) {
  auto it = assumed_claim_of_volume_.find(volume);
  if (it == assumed_claim_of_volume_.end()) return;
  auto c = assumed_volume_of_claim_.find(it->second);
  if (c != assumed_volume_of_claim_.end() && c->second == volume) assumed_volume_of_claim_.erase(c);
  assumed_claim_of_volume_.erase(it);
  ++topology_version_;
}

void ClusterState::ForgetClaim(const std::string& claim_key) {
  if (auto it = assumed_volume_of_claim_.find(claim_key); it != assumed_volume_of_claim_.end()) ForgetVolume(it->second);
}

const std::string* ClusterState::AssumedVolume(const std::string& claim_key) const {
  auto it = assumed_volume_of_claim_.find(claim_key);
  return it == assumed_volume_of_claim_.end() ? nullptr : &it->second;
}

bool ClusterState::ChooseVolumes(const TaskInfo& t, const NodeInfo& n, std::vector<VolumeChoice>* out) const {
  struct Want {
    const std::string* name;
    const ClaimInfo* claim;
    const StorageClassInfo* sc;
  };
  std::vector<Want> wants;
  for (const auto& name : t.claims) {
    const ClaimInfo* c = FindClaim(t.ns + "/" + name);
    if (!c) continue;
    if (const StorageClassInfo* sc = FirstConsumerClass(*c)) wants.push_back({&name, c, sc});
  }
  // kube's binder: the smallest request first, so a small claim does not take the volume a big one needs.
  std::stable_sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) { return a.claim->request < b.claim->request; });
  auto usable_from = [&](const VolumeInfo& v) { return v.UsableFrom(n.labels, n.name); };
  std::vector<const std::set<std::string>*> buckets;  // the node's own local volumes, then the rest
  std::vector<const std::string*> chosen;
  for (const Want& w : wants) {
    const std::string key = t.ns + "/" + *w.name;
    const std::string* pick = nullptr;
    bool search = true;
    if (const std::string* assumed = AssumedVolume(key)) {
      const VolumeInfo* v = FindVolume(*assumed);
      if (!v || !usable_from(*v)) return false;
      pick = assumed;
      search = false;
    } else if (auto pb = prebound_volume_of_claim_.find(key); pb != prebound_volume_of_claim_.end()) {
      // A volume pre-bound to the claim (its claimRef names the claim, and its uid if it names one) is the
      // claim's only volume, wherever it is (kube's FindMatchingVolume); one that cannot hold it is ignored.
      const VolumeInfo& v = volumes_.at(pb->second);
      if (v.storage_class == w.claim->storage_class && v.capacity >= w.claim->request && v.block == w.claim->block &&
          !v.deleting && (v.claim_ref_uid.empty() || v.claim_ref_uid == w.claim->uid)) {
        search = false;
        if (usable_from(v)) pick = &pb->second;
      }
    }
    if (search) {
      buckets.clear();
      auto host = n.labels.find(std::string(kHostnameKey));
      if (host != n.labels.end() && !host->second.empty())
        if (auto it = volumes_by_class_host_.find({w.claim->storage_class, host->second}); it != volumes_by_class_host_.end())
          buckets.push_back(&it->second);
      if (auto it = volumes_by_class_host_.find({w.claim->storage_class, std::string()}); it != volumes_by_class_host_.end())
        buckets.push_back(&it->second);
      const VolumeInfo* best = nullptr;
      for (const auto* bucket : buckets)
        for (const std::string& name : *bucket) {
          if (std::any_of(chosen.begin(), chosen.end(), [&](const std::string* c) { return *c == name; })) continue;
          const VolumeInfo& v = volumes_.at(name);
          if (v.capacity < w.claim->request || v.block != w.claim->block || v.deleting) continue;
          if (!v.claim_ref.empty()) continue;                  // pre-bound to another claim
          if (assumed_claim_of_volume_.count(name)) continue;  // set aside for another claim this cycle
          if (!v.available || (w.claim->access_modes & ~v.access_modes) != 0) continue;
          if (w.claim->selector && !w.claim->selector->Matches(v.labels)) continue;
          if (!usable_from(v)) continue;
          if (!best || v.capacity < best->capacity || (v.capacity == best->capacity && name < *pick)) {
            best = &v;
            pick = &name;
          }
        }
    }
    if (pick) {
      chosen.push_back(pick);
      if (out) out->push_back({*w.name, *pick});
      continue;
    }
    // No volume: the class must provision one here (not kubernetes.io/no-provisioner; allowedTopologies).
    if (w.sc->static_only) return false;
    if (!w.sc->allowed_topologies.empty() &&
        std::none_of(w.sc->allowed_topologies.begin(), w.sc->allowed_topologies.end(),
                     [&](const NodeSelectorTerm& term) { return term.Matches(n.labels, n.name); }))
      return false;
    if (out) out->push_back({*w.name, ""});
  }
  return true;
}

void ClusterState::UpsertStorageClass(const std::string& name, const StorageClassInfo& sc) {
  auto [it, inserted] = classes_.try_emplace(name, sc);
  if (!inserted) {
    if (it->second == sc) return;
    it->second = sc;
  }
  VolumesChanged();
}

void ClusterState::UpsertCsiNode(const std::string& node, std::map<std::string, int64_t> limits) {
  auto [it, inserted] = csi_nodes_.try_emplace(node, limits);
  if (!inserted) {
    if (it->second == limits) return;
    it->second = std::move(limits);
  }
  ++generation_;
  BumpCapacity();  // a raised limit can let a waiting pod in
}

void ClusterState::RemoveCsiNode(const std::string& node) {
  if (!csi_nodes_.erase(node)) return;
  ++generation_;
  BumpCapacity();
}

const std::map<std::string, int64_t>* ClusterState::CsiLimits(const std::string& node) const {
  auto it = csi_nodes_.find(node);
  return it == csi_nodes_.end() ? nullptr : &it->second;
}

void ClusterState::UpsertService(const std::string& ns, const std::string& name, Labels selector) {
  // kube-scheduler: a Service without a selector selects no pod (not every pod); the API server never sends
  // an empty selector apart from an absent one.
  if (selector.empty()) return RemoveService(ns, name);
  auto& by_name = service_selectors_[ns];
  auto it = by_name.find(name);
  if (it != by_name.end()) {
    if (it->second == selector) return;
    RemoveService(ns, name);
  }
  service_index_[ns][*selector.begin()].insert(name);
  service_selectors_[ns].emplace(name, std::move(selector));
  ++generation_;
}

void ClusterState::RemoveService(const std::string& ns, const std::string& name) {
  auto it = service_selectors_.find(ns);
  if (it == service_selectors_.end()) return;
  auto svc = it->second.find(name);
  if (svc == it->second.end()) return;
  auto& index = service_index_[ns];
  if (auto e = index.find(*svc->second.begin()); e != index.end()) {
    e->second.erase(name);
    if (e->second.empty()) index.erase(e);
  }
  if (index.empty()) service_index_.erase(ns);
  it->second.erase(svc);
  if (it->second.empty()) service_selectors_.erase(it);
  ++generation_;
}

void ClusterState::UpsertController(const std::string& ns, const std::string& controller, LabelSelector selector) {
  auto [it, inserted] = controller_selectors_.try_emplace(ns + "/" + controller, selector);
  if (!inserted) {
    if (it->second == selector) return;
    it->second = std::move(selector);
  }
  ++generation_;
}

void ClusterState::RemoveController(const std::string& ns, const std::string& controller) {
  if (controller_selectors_.erase(ns + "/" + controller)) ++generation_;
}

LabelSelector ClusterState::DefaultSpreadSelector(const TaskInfo& t) const {
  LabelSelector out;
  if (auto idx = service_index_.find(t.ns); idx != service_index_.end()) {
    const auto& selectors = service_selectors_.at(t.ns);
    for (const auto& label : t.labels) {
      auto e = idx->second.find(label);
      if (e == idx->second.end()) continue;
      for (const std::string& name : e->second) {
        const Labels& selector = selectors.at(name);
        if (std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
              auto l = t.labels.find(kv.first);
              return l != t.labels.end() && l->second == kv.second;
            }))
          for (const auto& [k, v] : selector) out.match_labels[k] = v;  // they select the pod: no conflicts
      }
    }
  }
  if (t.controller.empty() || controller_selectors_.empty()) return out;
  auto it = controller_selectors_.find(t.ns + "/" + t.controller);
  if (it == controller_selectors_.end()) return out;  // not known (yet): nothing from the owner
  const LabelSelector& owner = it->second;
  if (t.controller.starts_with("ReplicationController/")) {
    // An RC's selector is a plain map, merged into the Services' labels.
    for (const auto& [k, v] : owner.match_labels) out.match_labels[k] = v;
  } else {
    // A ReplicaSet's or StatefulSet's requirements are added to the Services' (a conflict selects nothing).
    for (const auto& [k, v] : owner.match_labels) {
      SelectorRequirement r;
      r.key = k;
      r.op = SelectorOp::kIn;
      r.values = {v};
      out.match_expressions.push_back(std::move(r));
    }
    out.match_expressions.insert(out.match_expressions.end(), owner.match_expressions.begin(),
                                 owner.match_expressions.end());
  }
  return out;
}

void ClusterState::RemoveStorageClass(const std::string& name) {
  if (classes_.erase(name)) VolumesChanged();
}

const StorageClassInfo* ClusterState::FindStorageClass(const std::string& name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : &it->second;
}

const StorageClassInfo* ClusterState::FirstConsumerClass(const ClaimInfo& c) const {
  if (!c.volume.empty()) return nullptr;
  const StorageClassInfo* sc = FindStorageClass(c.storage_class);
  return sc && sc->wait_for_first_consumer ? sc : nullptr;
}

const ClaimInfo* ClusterState::FindClaim(const std::string& key) const {
  auto it = claims_.find(key);
  return it == claims_.end() ? nullptr : &it->second;
}

const VolumeInfo* ClusterState::FindVolume(const std::string& name) const {
  auto it = volumes_.find(name);
  return it == volumes_.end() ? nullptr : &it->second;
}

const QueueInfo* ClusterState::FindQueue(const std::string& name) const {
  auto it = queues_.find(name);
  return it == queues_.end() ? nullptr : &it->second;
}

void ClusterState::ForEachJob(const std::function<void(const JobInfo&)>& fn) const {
  for (const auto& [k, j] : jobs_) fn(j);
}
void ClusterState::ForEachQueue(const std::function<void(const QueueInfo&)>& fn) const {
  for (const auto& [k, q] : queues_) fn(q);
}

std::vector<const TaskInfo*> ClusterState::TasksOfJob(const std::string& key) const {
  std::vector<const TaskInfo*> out;
  auto it = tasks_by_job_.find(key);
  if (it == tasks_by_job_.end()) return out;
  out.assign(it->second.begin(), it->second.end());
  std::sort(out.begin(), out.end(), [](const TaskInfo* a, const TaskInfo* b) {
    return a->creation_index != b->creation_index ? a->creation_index < b->creation_index : a->uid < b->uid;
  });
  return out;
}

std::vector<const TaskInfo*> ClusterState::TasksOnNode(const std::string& node) const {
  std::vector<const TaskInfo*> out;
  auto it = tasks_by_node_.find(node);
  if (it == tasks_by_node_.end()) return out;
  out.assign(it->second.begin(), it->second.end());
  std::sort(out.begin(), out.end(), [](const TaskInfo* a, const TaskInfo* b) { return a->uid < b->uid; });
  return out;
}

void ClusterState::RebuildOrder() const {
  if (cached_order_version_ == topology_version_) return;
  schedulable_cache_.clear();
  candidate_cache_.clear();
  total_allocatable_cache_ = Resource();
  for (const auto& [name, idx] : node_index_) {
    const NodeInfo& n = nodes_[static_cast<size_t>(idx)];
    if (!n.ready) continue;
    candidate_cache_.push_back(idx);
    if (n.unschedulable) continue;
    schedulable_cache_.push_back(idx);
    total_allocatable_cache_ += n.allocatable;
  }
  auto by_name = [this](int a, int b) { return nodes_[static_cast<size_t>(a)].name < nodes_[static_cast<size_t>(b)].name; };
  std::sort(schedulable_cache_.begin(), schedulable_cache_.end(), by_name);
  std::sort(candidate_cache_.begin(), candidate_cache_.end(), by_name);
  cached_order_version_ = topology_version_;
}

const std::vector<int>& ClusterState::SchedulableNodes() const {
  RebuildOrder();
  return schedulable_cache_;
}

const std::vector<int>& ClusterState::CandidateNodes() const {
  RebuildOrder();
  return candidate_cache_;
}

Resource ClusterState::TotalAllocatable() const {
  RebuildOrder();
  return total_allocatable_cache_;
}

Resource ClusterState::TotalIdle() const {
  Resource r;
  for (int idx : SchedulableNodes()) r += nodes_[static_cast<size_t>(idx)].Idle().ClampZero();
  return r;
}

const HyperNodeView& ClusterState::Topology() const {
  if (cached_topology_version_ == topology_version_) return topology_cache_;
  HyperNodeView v;
  // All alive nodes sorted by name, so member node lists come out sorted.
  std::vector<int> all;
  for (const auto& [name, idx] : node_index_) all.push_back(idx);
  std::sort(all.begin(), all.end(),
            [this](int a, int b) { return nodes_[static_cast<size_t>(a)].name < nodes_[static_cast<size_t>(b)].name; });
  if (!hypernodes_.empty()) {
    // Resolve direct node members and child HyperNodes.
    std::map<std::string, std::vector<int>> direct;
    for (const auto& [name, h] : hypernodes_) {
      auto& e = v.entries[name];
      e.name = name;
      e.tier = h.tier;
      e.tier_name = h.tier_name;
      if (!h.tier_name.empty()) v.tier_of_name[h.tier_name] = h.tier;
      for (const auto& m : h.members) {
        // regexMatch means what Go's regexp.MatchString means to Volcano: RE2 syntax, unanchored. Compiled
        // once per member; a pattern that does not compile matches nothing (the webhook refuses it).
        std::optional<pattern::Pattern> re;
        if (m.kind == MemberSelectorKind::kRegex) {
          auto compiled = pattern::Pattern::Compile(m.name_or_pattern);
          if (!compiled.ok()) continue;
          re = std::move(*compiled);
        }
        auto matches = [&](const std::string& candidate) {
          return m.kind == MemberSelectorKind::kExact ? candidate == m.name_or_pattern : re && re->Find(candidate);
        };
        if (m.type == HyperNodeMemberType::kHyperNode) {
          for (const auto& [cname, ch] : hypernodes_)
            if (cname != name && m.kind != MemberSelectorKind::kLabel && matches(cname)) e.children.push_back(cname);
          continue;
        }
        for (int idx : all) {
          const NodeInfo& n = nodes_[static_cast<size_t>(idx)];
          bool match = m.kind == MemberSelectorKind::kLabel ? m.label_selector.Matches(n.labels) : matches(n.name);
          if (match) direct[name].push_back(idx);
        }
      }
    }
    for (auto& [name, e] : v.entries) {
      std::sort(e.children.begin(), e.children.end());
      e.children.erase(std::unique(e.children.begin(), e.children.end()), e.children.end());
      for (const auto& c : e.children) v.entries[c].parent = name;
    }
    // Descendant node sets, bottom-up by tier (children have smaller tiers; guard against cycles by depth).
    std::vector<std::string> order;
    for (const auto& [name, e] : v.entries) order.push_back(name);
    std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      return v.entries[a].tier != v.entries[b].tier ? v.entries[a].tier < v.entries[b].tier : a < b;
    });
    for (const auto& name : order) {
      auto& e = v.entries[name];
      std::vector<int> nodes = direct[name];
      for (const auto& c : e.children) {
        if (v.entries[c].tier >= e.tier) continue;
        nodes.insert(nodes.end(), v.entries[c].nodes.begin(), v.entries[c].nodes.end());
      }
      std::sort(nodes.begin(), nodes.end(), [this](int a, int b) {
        return nodes_[static_cast<size_t>(a)].name < nodes_[static_cast<size_t>(b)].name;
      });
      nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      e.nodes = std::move(nodes);
    }
  } else {
    // Synthetic hierarchy from node labels: key i => tier i+1; parent = the next key's HyperNode.
    const auto& keys = options_.topology_label_keys;
    for (int idx : all) {
      const NodeInfo& n = nodes_[static_cast<size_t>(idx)];
      std::string child;
      for (size_t k = 0; k < keys.size(); ++k) {
        auto it = n.labels.find(keys[k]);
        if (it == n.labels.end()) continue;
        std::string name = keys[k] + "=" + it->second;
        auto& e = v.entries[name];
        e.name = name;
        e.tier = static_cast<int>(k) + 1;
        e.nodes.push_back(idx);
        if (!child.empty()) {
          v.entries[child].parent = name;
          if (std::find(e.children.begin(), e.children.end(), child) == e.children.end()) e.children.push_back(child);
        }
        child = name;
      }
    }
    for (auto& [name, e] : v.entries) std::sort(e.children.begin(), e.children.end());
  }
  for (const auto& [name, e] : v.entries) {
    v.by_tier[e.tier].push_back(name);
    for (int idx : e.nodes) {
      auto it = v.leaf_of_node.find(idx);
      if (it == v.leaf_of_node.end() || v.entries[it->second].tier > e.tier) v.leaf_of_node[idx] = name;
    }
  }
  topology_cache_ = std::move(v);
  cached_topology_version_ = topology_version_;
  return topology_cache_;
}

}  // namespace tephra::sched
