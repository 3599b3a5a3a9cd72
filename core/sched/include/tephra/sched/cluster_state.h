// ClusterState: the scheduler's incrementally maintained view of the cluster.
//
// Why live state + journal instead of a per-cycle snapshot: at 5,000 nodes / 100k pods a deep copy per
// cycle costs tens of milliseconds and allocates; instead every informer event is applied here in
// O(changed) (aggregates kept current), and a scheduling cycle mutates this same state through a
// Statement journal (statement.h) whose Discard() undoes each operation in reverse. Between cycles the
// state only changes through the methods below, so a cycle always sees one consistent view.
//
// Who may change it: the scheduler process through the informer/binder methods below; a scheduling cycle
// only through the "cycle interface" at the end of the public section — task placements and evictions
// via a Statement (the journal), job admission via AdmitJob, the reported phase via SetJobPhase. There are
// no friend classes: actions are registered objects like plugins, and what they may do is this interface.
//
// Threading: none. The scheduler process serialises informer callbacks, binder feedback and RunCycle()
// (e.g. on one event loop, or under one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tephra/sched/config.h"
#include "tephra/sched/resource.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

// HyperNode tree (real HyperNodes, or synthetic ones from CoreOptions::topology_label_keys when the cluster
// has none), rebuilt lazily only when nodes or HyperNodes change.
struct HyperNodeView {
  struct Entry {
    std::string name;
    int tier = 0;
    std::string tier_name;
    std::string parent;              // "" at the top
    std::vector<int> nodes;          // node slot indexes of all descendant nodes, sorted by node name
    std::vector<std::string> children;
  };
  std::map<std::string, Entry> entries;
  std::map<int, std::vector<std::string>> by_tier;  // tier -> names (sorted)
  std::map<std::string, int> tier_of_name;           // tierName -> tier
  std::map<int, std::string> leaf_of_node;            // node slot -> lowest-tier HyperNode containing it
  bool empty() const { return entries.empty(); }
};

class ClusterState {
 public:
  explicit ClusterState(CoreOptions options = {});
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  ResourceRegistry& resources() { return registry_; }
  const ResourceRegistry& resources() const { return registry_; }
  const CoreOptions& options() const { return options_; }
  void set_options(CoreOptions o);

  // ---- informer input; each O(changed) ----
  // Only the caller-set fields of the argument are read; ClusterState keeps its own usage counters.
  void UpsertNode(const NodeInfo& node);
  void RemoveNode(const std::string& name);
  // A pod as the API shows it. Supersedes any assumption, except that an update still showing the pod
  // Pending without nodeName does not cancel an in-flight assumed bind (kBinding): the informer may lag
  // the binder, and forgetting the assumption would double-book the node. BindFailed() cancels it.
  void UpsertPod(const TaskInfo& task);
  void RemovePod(const std::string& uid);
  void UpsertJob(const JobInfo& job);  // phase from the API is taken only if the core has not set one
  void RemoveJob(const std::string& key);
  void UpsertQueue(const QueueInfo& queue);
  void RemoveQueue(const std::string& name);
  void UpsertHyperNode(const HyperNodeInfo& hypernode);
  void RemoveHyperNode(const std::string& name);
  // PriorityClasses re-resolve JobInfo::priority. A PodGroup's job whose priorityClassName is empty or names no
  // known class takes the value of the class marked globalDefault (0 without one), as Volcano's cache does;
  // a plain pod's stand-in job keeps the pod's own priority (the API server already applied the default).
  void SetPriorityClass(const std::string& name, int32_t value, bool global_default = false);
  void RemovePriorityClass(const std::string& name);
  // Volumes: what the volume predicates read. A change can make a waiting pod placeable (a claim binds) or
  // move where it may go, so each one counts as a node spec change.
  void UpsertClaim(const std::string& key, const ClaimInfo& claim);  // key "<namespace>/<name>"
  void RemoveClaim(const std::string& key);
  void UpsertVolume(const std::string& name, const VolumeInfo& volume);
  void RemoveVolume(const std::string& name);
  void UpsertStorageClass(const std::string& name, const StorageClassInfo& sc);
  void RemoveStorageClass(const std::string& name);
  // A node's CSINode: per CSI driver, the limit key (CsiLimitKey) and how many volumes the node can attach.
  // Kept apart from the node (it can arrive first); read by the NodeVolumeLimits predicate.
  void UpsertCsiNode(const std::string& node, std::map<std::string, int64_t> limits);
  void RemoveCsiNode(const std::string& node);
  // What kube-scheduler's system-default topology spread reads (DefaultSelector; docs/scheduler.md,
  // "Topology spread"): the selectors of Services, and of the ReplicationControllers, ReplicaSets and
  // StatefulSets that own pods. They only move scores, so a change wakes nothing and invalidates nothing
  // (the selector is part of every memoised spread question).
  void UpsertService(const std::string& ns, const std::string& name, Labels selector);  // empty: selects no pod
  void RemoveService(const std::string& ns, const std::string& name);
  // `controller` as TaskInfo::controller names it ("<Kind>/<name>"). A selector that does not parse is
  // passed as an empty one: kube-scheduler then adds nothing from the owner.
  void UpsertController(const std::string& ns, const std::string& controller, LabelSelector selector);
  void RemoveController(const std::string& ns, const std::string& controller);

  // ---- binder feedback ----
  // Binding -> Bound. Unknown uid or other status: ignored (the informer already superseded it).
  void BindSucceeded(const std::string& uid);
  // Undo the assumption for `uid` and for every other still-kBinding task of the same job (gang
  // all-or-nothing across the async binder); they return to kPending. The job's next PodGroup update
  // carries an Unschedulable condition with reason "BindFailed" and `reason` in the message.
  // A 409 Conflict from pods/binding means "already assigned": call BindSucceeded instead and let the
  // informer's nodeName win. Returns the uids rolled back, sorted.
  std::vector<std::string> BindFailed(const std::string& uid, const std::string& reason);
  // The pod delete for an eviction failed (not NotFound): the victim returns to the status it had before
  // the eviction, so it is neither counted as releasing nor evicted twice meanwhile. Unknown uid: ignored.
  void EvictFailed(const std::string& uid);

  // ---- read access (pointers valid until the object is removed) ----
  const NodeInfo* FindNode(const std::string& name) const;
  const TaskInfo* FindTask(const std::string& uid) const;
  const JobInfo* FindJob(const std::string& key) const;
  const QueueInfo* FindQueue(const std::string& name) const;
  const ClaimInfo* FindClaim(const std::string& key) const;
  const VolumeInfo* FindVolume(const std::string& name) const;
  // nullptr for a class that does not exist (and for "", no class): Immediate binding, as Kubernetes reads it.
  const StorageClassInfo* FindStorageClass(const std::string& name) const;
  const std::map<std::string, int64_t>* CsiLimits(const std::string& node) const;  // nullptr: no CSINode
  // The selector of `t`'s system-default spread constraints: the union of the selectors of the Services in
  // its namespace that select it, plus its controller's selector. Empty: the pod gets no default spreading.
  LabelSelector DefaultSpreadSelector(const TaskInfo& t) const;
  // The class of an unbound claim that binds when its first pod is scheduled (WaitForFirstConsumer): the
  // binder names the chosen node on such a claim. nullptr for a bound claim, or one of any other class.
  const StorageClassInfo* FirstConsumerClass(const ClaimInfo& c) const;
  // kube-scheduler's volume binder for WaitForFirstConsumer claims (docs/scheduler.md, "Volumes"): for each
  // unbound claim of `t` with such a class, smallest request first, a pre-created volume usable from `n`
  // (pre-bound to the claim, else the smallest free one of the class that fits it; none twice), or, when
  // none fits, provisioning by the class (not kubernetes.io/no-provisioner, allowedTopologies admitting
  // `n`). False when a claim has neither. `out` (may be null) gets each claim and its volume ("" =
  // provisioned).
  struct VolumeChoice {
    std::string claim;   // name, in the task's namespace
    std::string volume;  // "" = the class provisions one on the node
  };
  bool ChooseVolumes(const TaskInfo& t, const NodeInfo& n, std::vector<VolumeChoice>* out) const;
  // The volume this cycle's placements set aside for a claim ("<ns>/<name>"), until the volume shows the
  // claim in its claimRef, the claim binds, or the bind fails; nullptr if none.
  const std::string* AssumedVolume(const std::string& claim_key) const;
  size_t node_count() const { return node_index_.size(); }
  size_t task_count() const { return tasks_.size(); }
  // Every task, in no particular order (the fgd plugin's request mix).
  template <typename Fn>
  void ForEachTask(Fn&& fn) const {
    for (const auto& [uid, t] : tasks_) fn(*t);
  }
  // Deterministic (name-ordered) iteration.
  void ForEachJob(const std::function<void(const JobInfo&)>& fn) const;
  void ForEachQueue(const std::function<void(const QueueInfo&)>& fn) const;
  std::vector<const TaskInfo*> TasksOfJob(const std::string& key) const;  // sorted by creation_index, uid
  std::vector<const TaskInfo*> TasksOnNode(const std::string& node) const;  // sorted by uid
  // Unordered, allocation-free visit (for counting in hot paths; never let the order leak into results).
  template <typename Fn>
  void ForEachTaskOnNode(const std::string& node, Fn&& fn) const {
    auto it = tasks_by_node_.find(node);
    if (it == tasks_by_node_.end()) return;
    for (const TaskInfo* t : it->second) fn(*t);
  }

  const HyperNodeView& Topology() const;
  // Slots of nodes that are ready and not cordoned, sorted by name: what capacity sums run over.
  const std::vector<int>& SchedulableNodes() const;
  // Slots of ready nodes, cordoned ones included, sorted by name: the deterministic candidate order for
  // placement. A cordoned node passes the predicates only for a pod that tolerates the cordon
  // (node.kubernetes.io/unschedulable:NoSchedule), as kube-scheduler's NodeUnschedulable filter decides.
  const std::vector<int>& CandidateNodes() const;
  const NodeInfo& NodeAt(int slot) const { return nodes_[static_cast<size_t>(slot)]; }
  // Totals over schedulable (ready, schedulable) nodes.
  Resource TotalAllocatable() const;
  Resource TotalIdle() const;

  // Monotonic counters for dirty tracking: `generation` moves on every change; `capacity_epoch` moves on
  // changes that can make a previously unschedulable job fit (node add/update/remove, a pod leaving or
  // finishing or releasing, queue or HyperNode changes, binds rolled back).
  uint64_t generation() const { return generation_; }
  // What the last Transition changed, so a cache one generation behind can apply it instead of recomputing
  // (the allocate loop places one task at a time). Valid when `generation` equals generation().
  struct LastTransition {
    uint64_t generation = 0;
    const TaskInfo* task = nullptr;  // its status/node are the new ones
    std::string old_node;
    TaskStatus old_status = TaskStatus::kPending;
  };
  const LastTransition& last_transition() const { return last_transition_; }
  // Pods (any status) that carry required anti-affinity terms; 0 lets predicates skip the symmetric check.
  int anti_affinity_pods() const { return static_cast<int>(anti_affinity_tasks_.size()); }
  // Those pods, for the symmetric check (unordered; never let the order reach a result).
  const std::unordered_set<const TaskInfo*>& anti_affinity_tasks() const { return anti_affinity_tasks_; }
  // Pods (any status) that carry preferred pod affinity or anti-affinity terms: their terms score the nodes
  // of the pods they select (kube-scheduler's symmetry), so a pod without terms of its own may be scored by
  // them (unordered; never let the order reach a result).
  const std::unordered_set<const TaskInfo*>& preferred_pod_term_tasks() const { return preferred_pod_term_tasks_; }
  // Pods (any status) that carry required pod affinity terms.
  int pod_affinity_pods() const { return pod_affinity_pods_; }
  // Pods (any status) that carry DoNotSchedule topology spread constraints: a placement can open or close
  // nodes for them, as for pod affinity.
  int spread_pods() const { return spread_pods_; }
  // Unordered visit of every known node (schedulable or not: kube-scheduler's spreading counts the domains
  // of cordoned nodes too).
  template <typename Fn>
  void ForEachNode(Fn&& fn) const {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (node_alive_[i]) fn(nodes_[i]);
  }
  // Unordered, allocation-free visit of the tasks of one namespace (any status).
  template <typename Fn>
  void ForEachTaskInNamespace(const std::string& ns, Fn&& fn) const {
    auto it = tasks_by_ns_.find(ns);
    if (it == tasks_by_ns_.end()) return;
    for (const TaskInfo* t : it->second) fn(*t);
  }
  // Unordered, allocation-free visit of the tasks of one namespace that are on a node or pipelined onto one
  // (OnNodeForScheduling): what spreading and pod affinity count, without walking a namespace's pending pods.
  template <typename Fn>
  void ForEachPlacedTaskInNamespace(const std::string& ns, Fn&& fn) const {
    auto it = placed_by_ns_.find(ns);
    if (it == placed_by_ns_.end()) return;
    for (const TaskInfo* t : it->second) fn(*t);
  }
  // Unordered, allocation-free visit of every task that occupies a known node or is pipelined onto one, with
  // that node (looked up once per node).
  template <typename Fn>
  void ForEachPlacedTask(Fn&& fn) const {
    for (const auto& [node, tasks] : tasks_by_node_) {
      const NodeInfo* n = FindNode(node);
      if (!n) continue;
      for (const TaskInfo* t : tasks)
        if (OnNodeForScheduling(t->status)) fn(*n, *t);
    }
  }
  uint64_t capacity_epoch() const { return capacity_epoch_; }
  // Moves when a task may have become a possible victim (a pod placed or confirmed on a node, priorities,
  // jobs or queues changed): preempt/reclaim retry a starving job only when this or capacity moved.
  uint64_t victim_epoch() const { return victim_epoch_; }

  // Last bind failure recorded for a job by BindFailed (consumed by the next cycle's status update).
  std::string TakeBindFailure(const std::string& job_key);

  // ---- cycle interface: what actions, Statement and the status writer use during RunCycle ----
  // Unordered, allocation-free visit of a job's tasks (sort before letting the order reach a result).
  template <typename Fn>
  void ForEachTaskOfJob(const std::string& key, Fn&& fn) const {
    auto it = tasks_by_job_.find(key);
    if (it == tasks_by_job_.end()) return;
    for (const TaskInfo* t : it->second) fn(*t);
  }
  // A job's sub-groups as its tasks stand now (JobInfo::sub_group_policies; the default group, policy -1,
  // only when a task falls into it), sorted by policy then id. Walks the job's tasks: for jobs with policies.
  struct SubGroupTally {
    int policy = -1;
    std::string id;
    int match_index = 0;    // the first match value as a number (0 when it is not one): Volcano's order
    int32_t priority = 0;   // the highest priority of its tasks
    int valid = 0;          // tasks that can still count (not failed, not being deleted)
    int ready = 0;          // allocated, binding, bound, running, succeeded, or pending best-effort
    int pipelined = 0;      // pipelined in this cycle
  };
  std::vector<SubGroupTally> SubGroupsOf(const JobInfo& job) const;
  int NodeIndex(const std::string& name) const;  // node slot, -1 if unknown
  // Size of the node slot vector (slots of removed nodes included): for per-cycle bitmaps over slots.
  size_t node_slots() const { return nodes_.size(); }
  // Moves on node add/remove/spec change and HyperNode change: keys caches of static predicate results
  // and of the node name order.
  uint64_t topology_version() const { return topology_version_; }
  // How Statement picks among shared cards that fit (the deviceshare plugin's SchedulePolicy).
  void set_share_policy(SharePolicy p) { share_policy_ = p; }
  SharePolicy share_policy() const { return share_policy_; }
  // The enqueue action's change: Pending -> Inqueue. Bumps the job's version (it became schedulable).
  // Unknown key: ignored.
  void AdmitJob(const std::string& key);
  // The phase the status writer derived. No version bump: the reported phase is an output of the cycle,
  // and a bump would make every job look changed to the next cycle's memos. Unknown key: ignored.
  void SetJobPhase(const std::string& key, PodGroupPhase phase);
  // Jobs with a bind failure not yet taken by TakeBindFailure (sorted).
  std::vector<std::string> JobsWithBindFailures() const;
  // Keys of jobs removed since the last call (the status writer forgets what it emitted for them).
  std::vector<std::string> TakeRemovedJobs() { return std::exchange(removed_jobs_, {}); }

  // The journal's access: only Statement can make a JournalKey (passkey idiom), so every task status or
  // node change made during a cycle is recorded in a Statement and can be undone.
  class JournalKey {
    friend class Statement;
    JournalKey() = default;
  };
  TaskInfo* MutableTask(JournalKey, const std::string& uid) { return MutableTask(uid); }
  // Sets `volume` aside for `claim_key` (ChooseVolumes then offers it to that claim only), or releases it.
  void AssumeVolume(JournalKey, const std::string& volume, const std::string& claim_key);
  void ForgetVolume(JournalKey, const std::string& volume) { ForgetVolume(volume); }
  // Moves a task between statuses/nodes, keeping node/job/queue aggregates current.
  void Transition(JournalKey, TaskInfo& task, TaskStatus to, const std::string& node) { Transition(task, to, node); }
  // Puts a job's version back to what it was before a discarded attempt (the job is exactly as it was;
  // a moved version would make memos and the status writer take it as news).
  void RestoreJobVersion(JournalKey, const std::string& key, uint64_t version);
  // A task was newly placed: a possible victim for a starving job (see victim_epoch).
  void NoteVictimCandidate(JournalKey) { BumpVictims(); }

 private:
  SharePolicy share_policy_ = SharePolicy::kBinpack;
  // The caller's part of two nodes' devices (identity, health, capacity, topology) is the same; usage ignored.
  static bool SameDeviceSpec(const NodeDevices& a, const NodeDevices& b);
  // Recomputes the usage of n's cards from the tasks holding them (after the card set or a node arrived).
  void RebuildCardHolds(NodeInfo& n);
  TaskInfo* MutableTask(const std::string& uid);
  // The only place that changes TaskInfo::status/node after insertion.
  void Transition(TaskInfo& task, TaskStatus to, const std::string& node);
  void Account(TaskInfo& task, int sign);
  // NodeInfo::score_cpu/score_memory/host_port_tasks for one task on `n` (occupying or pipelined).
  static void AccountScoring(NodeInfo& n, const TaskInfo& task, int sign);
  uint32_t InternShape(const TaskInfo& task);
  void BumpCapacity() { ++capacity_epoch_; }
  void BumpVictims() { ++victim_epoch_; }

  CoreOptions options_;
  ResourceRegistry registry_;
  uint64_t generation_ = 1, capacity_epoch_ = 1, victim_epoch_ = 1;
  LastTransition last_transition_;
  std::unordered_set<const TaskInfo*> anti_affinity_tasks_;
  std::unordered_set<const TaskInfo*> preferred_pod_term_tasks_;
  int pod_affinity_pods_ = 0;
  int spread_pods_ = 0;

  // Nodes live in a slot vector (stable indexes for per-cycle bitmaps); removed slots are reused.
  std::vector<NodeInfo> nodes_;
  std::vector<bool> node_alive_;
  std::vector<int> free_node_slots_;
  std::unordered_map<std::string, int> node_index_;
  std::unordered_map<std::string, std::unordered_set<TaskInfo*>> tasks_by_node_;  // by name: pods may
                                                                                 // precede their node
  std::unordered_map<std::string, std::unique_ptr<TaskInfo>> tasks_;
  std::map<std::string, JobInfo> jobs_;
  std::unordered_map<std::string, std::unordered_set<TaskInfo*>> tasks_by_job_;  // job may be unknown yet
  // Pod affinity terms select within namespaces: a pending pod's question walks only those.
  std::unordered_map<std::string, std::unordered_set<const TaskInfo*>> tasks_by_ns_;
  // The placed tasks of each namespace: a vector (TaskInfo::placed_pos is each one's index, removal swaps the
  // last in), a pointer per placed task, not a hash node.
  std::unordered_map<std::string, std::vector<TaskInfo*>> placed_by_ns_;
  // Files or unfiles `t` under placed_by_ns_ when it has a node and OnNodeForScheduling(status).
  void IndexPlaced(TaskInfo& t, bool add);
  std::map<std::string, QueueInfo> queues_;
  std::map<std::string, HyperNodeInfo> hypernodes_;
  // Bumped on node add/remove/spec change and HyperNode change; keys the lazy caches below.
  uint64_t topology_version_ = 1;
  mutable uint64_t cached_topology_version_ = 0, cached_order_version_ = 0;
  mutable HyperNodeView topology_cache_;
  mutable std::vector<int> schedulable_cache_, candidate_cache_;
  mutable Resource total_allocatable_cache_;
  void RebuildOrder() const;
  std::map<std::string, int32_t> priority_classes_;
  std::string default_priority_class_;  // the globalDefault class ("" = none)
  int32_t ResolvedPriority(const JobInfo& j) const;
  void ResolvePriorities();
  std::unordered_map<std::string, ClaimInfo> claims_;
  std::unordered_map<std::string, VolumeInfo> volumes_;
  std::unordered_map<std::string, StorageClassInfo> classes_;
  std::unordered_map<std::string, std::map<std::string, int64_t>> csi_nodes_;
  std::unordered_map<std::string, std::map<std::string, Labels>> service_selectors_;  // ns -> name -> selector
  // ns -> the first (key, value) of each selector -> Services: a pod looks up its own labels, not every
  // Service of its namespace (vcjob's svc plugin makes one per job).
  std::unordered_map<std::string, std::map<std::pair<std::string, std::string>, std::set<std::string>>> service_index_;
  std::unordered_map<std::string, LabelSelector> controller_selectors_;            // "<ns>/<Kind>/<name>"
  // Volumes by (storage class, hostname): a volume whose node affinity is one `kubernetes.io/hostname In`
  // requirement is filed under each of those hosts, any other under "". ChooseVolumes looks at a node's
  // host and "" only, so local volumes cost per node, not per cluster.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> volumes_by_class_host_;
  std::unordered_map<std::string, std::string> assumed_claim_of_volume_, assumed_volume_of_claim_;
  std::unordered_map<std::string, std::string> prebound_volume_of_claim_;  // claimRef "<ns>/<name>" -> volume
  void IndexVolume(const std::string& name, const VolumeInfo& v, bool add);
  void ForgetVolume(const std::string& volume);
  void ForgetClaim(const std::string& claim_key);
  void VolumesChanged();
  std::map<std::string, std::string> bind_failures_;
  std::vector<std::string> removed_jobs_;  // drained by the Scheduler's status writer
  std::unordered_map<std::string, uint32_t> shapes_;
};

}  // namespace tephra::sched
