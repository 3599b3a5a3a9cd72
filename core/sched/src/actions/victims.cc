// The victim search of the preempt and reclaim actions (docs/volcano-behaviour.md, "Preempt and reclaim"): a starving gang (pending
// tasks, ready + pipelined below minMember) makes room by evicting victims, then pipelines its tasks onto the nodes being freed.
//
//   preempt  victims are tasks of other jobs in the starving job's queue; plugins answer Preemptable
//            (priority: strictly lower priority; gang: only the surplus above minMember; conformance:
//            never critical pods; drf: share order).
//   reclaim  the starving job's queue is not overused; victims are tasks of jobs in other, reclaimable
//            queues; plugins answer Reclaimable (gang, conformance, proportion). The action also refuses a
//            victim whose queue would fall below its deserved share (proportion's numbers), whatever tier
//            answered: taking more than the surplus would only make that queue reclaim it back.
//
// Everything for one starving job goes through one Statement: evictions and pipelined placements are
// committed together when the job becomes pipelined (gang JobPipelined), otherwise discarded, so a gang
// that cannot fit even after evicting never evicts anything. Pipelined placements last for the cycle only
// (the session undoes them at close); the victims stay kReleasing (TaskInfo::evicting) until their pods
// are gone, and the next cycles place the preemptor onto the FutureIdle they leave (allocate pipelines,
// then binds once the victims are deleted). A victim already releasing is never chosen again, which keeps
// repeated cycles from evicting more than once for the same need.
//
// Victim choice per preemptor task: first a node whose FutureIdle already fits (no eviction: capacity
// released earlier, or by this job's own earlier evictions); otherwise the node that needs the fewest
// evictions, name order breaking ties. Victims on a node go lowest TaskOrder first (reverse of the
// scheduling order: lower priority, then younger), one by one, only until the preemptor task fits: as in
// Volcano, a victim job loses only the tasks the preemptor needs. Whether a victim job may drop below its
// minMember is the plugins' answer (gang with enablePreemptable / enableReclaimable offers only the tasks
// above minMember); with gang's hook off (Helm's preempt setting) a victim gang can be left below its
// minimum, and the job controller's policies (PodEvicted) decide what happens to it.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "actions.h"

namespace tephra::sched::actions {

namespace {
// A pod marked volcano.sh/preemptable: "false" is never offered to the plugins, in preempt or in reclaim
// (Volcano filters it out before asking them), so no plugin configuration can make it a victim.
bool IsVictimStatus(const TaskInfo& t) {
  return (t.status == TaskStatus::kRunning || t.status == TaskStatus::kBound) && !t.evicting && !t.node.empty() &&
         t.preemptable;
}

class VictimPlanner {
 public:
  VictimPlanner(Session& ssn, const VictimSearchOptions& options)
      : ssn_(ssn), st_(ssn.mutable_state()), reclaim_(options.reclaim), reason_(options.reclaim ? "reclaim" : "preempt"),
        max_jobs_(options.max_jobs_per_cycle) {}

  void Run() {
    const bool enqueue_on = ssn_.ActionConfigured("enqueue");
    const int mi = reclaim_ ? 1 : 0;
    std::map<std::string, std::vector<const JobInfo*>> by_queue;
    st_.ForEachJob([&](const JobInfo& j) {
      if (j.Count(TaskStatus::kPending) - j.pending_best_effort <= 0) return;
      if (j.ReadyCount() + j.Count(TaskStatus::kPipelined) >= std::max(1, j.min_member)) return;  // not starving
      if (enqueue_on && j.phase == PodGroupPhase::kPending) return;
      // Topology-constrained gangs are placed only by allocate's HyperNode search (Volcano excludes them too).
      if (j.network_topology.mode == TopologyMode::kHard) return;
      // A failed search is not retried on a timer (unlike allocate's memo): its inputs are the job (version),
      // free capacity and shares (capacity epoch, bumped by every pod/job/queue/node change) and the running
      // candidates (victim epoch), so with all three unchanged the answer cannot change. A timer retry made
      // an idle cycle with 1,000 starving gangs cost ~250 ms (32 searches of ~7 ms each, for ever).
      const auto& m = j.sched.evict[mi];
      if (m.failed && m.version == j.version && m.capacity_epoch == st_.capacity_epoch() &&
          m.victim_epoch == st_.victim_epoch())
        return;
      const QueueInfo* q = st_.FindQueue(j.queue);
      if (!q || q->state != QueueState::kOpen) return;
      if (!ssn_.JobValid(j).pass) return;
      by_queue[j.queue].push_back(&j);
    });
    if (by_queue.empty()) return;
    std::vector<const QueueInfo*> queues;
    for (const auto& [name, jobs] : by_queue) queues.push_back(st_.FindQueue(name));
    std::stable_sort(queues.begin(), queues.end(),
                     [&](const QueueInfo* a, const QueueInfo* b) { return ssn_.QueueLess(*a, *b); });
    // Victim searches are costly at scale (candidates are every running task of the queue or of the other
    // queues); a cycle tries at most `maxJobsPerCycle` starving jobs (action argument, default 32) in
    // queue/job order, and the rest wait for the next cycle (not marked as failed).
    int budget = max_jobs_;
    for (const QueueInfo* q : queues) {
      auto& jobs = by_queue[q->name];
      std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn_.JobLess(*a, *b); });
      for (const JobInfo* j : jobs) {
        if (reclaim_ && ssn_.Overused(*q)) break;
        if (budget-- <= 0) return;
        ++ssn_.result().metrics.victim_searches;
        bool ok = TryJob(*j, *q);
        auto& m = j->sched.evict[mi];
        m.failed = !ok;
        if (!ok) {
          // The discarded attempt restored the job's version (Statement::Discard: the job is exactly as it
          // was), so allocate's memo, the other evicting action's memo and the status writer do not take it
          // as news every cycle.
          m.version = j->version;
          m.capacity_epoch = st_.capacity_epoch();
          m.victim_epoch = st_.victim_epoch();
          m.cycle = ssn_.cycle();
        }
      }
    }
  }

 private:
  // Candidate victims for `job`, in a deterministic order (job key, then creation order). The list for a
  // queue is built once per action run (nothing is evicted for good within it: a committed victim is
  // releasing and filtered out by IsVictimStatus when plans are made).
  std::vector<const TaskInfo*> Candidates(const JobInfo& job) {
    auto [it, fresh] = scope_.try_emplace(job.queue);
    if (fresh) it->second = BuildScope(job);
    std::vector<const TaskInfo*> out;
    out.reserve(it->second.size());
    for (const TaskInfo* t : it->second)
      if (t->job != job.key && IsVictimStatus(*t)) out.push_back(t);
    return out;
  }
  std::vector<const TaskInfo*> BuildScope(const JobInfo& job) const {
    std::vector<const TaskInfo*> out;
    st_.ForEachJob([&](const JobInfo& vj) {
      if (!reclaim_ && vj.queue != job.queue) return;
      if (reclaim_) {
        if (vj.queue == job.queue) return;
        const QueueInfo* vq = st_.FindQueue(vj.queue);
        if (!vq || !vq->reclaimable || !AboveDeserved(*vq, vq->allocated)) return;
      }
      if (vj.Count(TaskStatus::kRunning) + vj.Count(TaskStatus::kBound) == 0) return;
      size_t first = out.size();
      st_.ForEachTaskOfJob(vj.key, [&](const TaskInfo& t) {
        if (IsVictimStatus(t)) out.push_back(&t);
      });
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(), [](const TaskInfo* a, const TaskInfo* b) {
        return a->creation_index != b->creation_index ? a->creation_index < b->creation_index : a->uid < b->uid;
      });
    });
    return out;
  }

  // Cluster-wide FutureIdle (computed once per action run: a lower-bound check only).
  const Resource& FutureIdle() {
    if (!future_idle_) {
      Resource r;
      for (int slot : st_.SchedulableNodes()) r += st_.NodeAt(slot).FutureIdle().ClampZero();
      future_idle_ = r;
    }
    return *future_idle_;
  }
  // Upper bound of what evictions could free for `job` (see TryJob), from per-queue sums computed once.
  Resource Freeable(const JobInfo& job) {
    if (!queue_alloc_) {
      queue_alloc_.emplace();
      st_.ForEachJob([&](const JobInfo& j) { (*queue_alloc_)[j.queue] += j.allocated; });
    }
    if (!reclaim_) {
      auto it = queue_alloc_->find(job.queue);
      return it == queue_alloc_->end() ? Resource() : (it->second - job.allocated).ClampZero();
    }
    Resource surplus;
    const auto& des = ssn_.queue_deserved();
    for (const auto& [name, alloc] : *queue_alloc_) {
      if (name == job.queue) continue;
      const QueueInfo* vq = st_.FindQueue(name);
      if (!vq || !vq->reclaimable) continue;
      auto d = des.find(name);
      surplus += d == des.end() ? alloc : (alloc - d->second).ClampZero();
    }
    return surplus;
  }

  // Whether a queue holding `alloc` is at or above its deserved share on its dominant dimension
  // (no deserved published, e.g. proportion off: no restriction).
  bool AboveDeserved(const QueueInfo& q, const Resource& alloc) const {
    const auto& des = ssn_.queue_deserved();
    auto it = des.find(q.name);
    if (it == des.end()) return true;
    for (int i = 0; i < kMaxResources; ++i) {
      if (i == kPods || alloc.Get(i) <= 0) continue;
      if (alloc.Get(i) >= it->second.Get(i)) return true;
    }
    return false;
  }

  // Evictions needed on `node` for `t`, as the ordered victim list (one by one until `t` fits), or nullopt.
  std::optional<std::vector<const TaskInfo*>> PlanNode(const TaskInfo& t, const NodeInfo& n,
                                                       const std::vector<const TaskInfo*>& victims) {
    Resource avail = n.FutureIdle();
    std::vector<const TaskInfo*> plan;
    // Queue allocations as the plan would leave them (reclaim's share guard must see earlier picks).
    std::map<std::string, Resource> qalloc;
    for (const TaskInfo* v : victims) {
      if (t.request.FitsIn(avail)) break;
      if (!IsVictimStatus(*v)) continue;
      if (reclaim_) {
        const JobInfo* j = st_.FindJob(v->job);
        const QueueInfo* q = j ? st_.FindQueue(j->queue) : nullptr;
        if (q) {
          auto it = qalloc.try_emplace(q->name, q->allocated).first;
          if (!AboveDeserved(*q, it->second - v->request)) continue;
          it->second -= v->request;
        }
      }
      plan.push_back(v);
      avail += v->request;
    }
    if (!t.request.FitsIn(avail)) return std::nullopt;
    return plan;
  }

  bool TryJob(const JobInfo& job, const QueueInfo& q) {
    std::vector<const TaskInfo*> tasks;
    st_.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
      if (t.status == TaskStatus::kPending && !t.scheduling_gated && !t.best_effort) tasks.push_back(&t);
    });
    if (tasks.empty()) return false;
    // Fast fail before any victim search: the gang's missing minimum (per-dimension smallest request x
    // missing tasks, a lower bound) must fit in what is idle or releasing plus the most evictions could
    // free (preempt: everything other jobs of the queue hold; reclaim: the other reclaimable queues'
    // surplus over deserved).
    {
      int missing = std::max(1, job.min_member - job.ReadyCount() - job.Count(TaskStatus::kPipelined));
      Resource smallest = tasks[0]->request;
      for (const TaskInfo* t : tasks) smallest = smallest.Min(t->request);
      smallest_ = smallest;
      Resource need;
      for (int d = 0; d < kMaxResources; ++d) need.Set(d, smallest.Get(d) * missing);
      Resource bound = FutureIdle() + Freeable(job);
      if (!need.FitsIn(bound)) return false;
    }
    std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn_.TaskLess(*a, *b); });

    // Plugins judge victims per job (every built-in hook compares jobs, or the victims themselves), so one
    // call with the job's first task as preemptor covers all of its tasks.
    std::vector<const TaskInfo*> cands = Candidates(job);
    std::vector<const TaskInfo*> permitted;
    if (!cands.empty())
      permitted = reclaim_ ? ssn_.Reclaimable(*tasks[0], cands) : ssn_.Preemptable(*tasks[0], cands);
    // No permitted victim: nothing this action can do (placing onto capacity already being released is
    // allocate's job), so skip the per-task node search.
    if (permitted.empty()) return false;
    // Victims grouped per node (hash on the name, then nodes in name order for deterministic ties); each
    // node's victims are put in eviction order (the reverse of the scheduling order) the first time the node
    // is planned.
    struct NodeVictims {
      const NodeInfo* node = nullptr;
      Resource freeable;  // upper bound of what evicting could free (stays one as victims go)
      std::vector<const TaskInfo*> victims;
      bool sorted = false;
    };
    std::vector<NodeVictims> nodes;
    {
      std::unordered_map<std::string_view, size_t> index;
      for (const TaskInfo* v : permitted) {
        auto [it, fresh] = index.try_emplace(v->node, nodes.size());
        if (fresh) nodes.push_back({st_.FindNode(v->node), {}, {}, false});
        NodeVictims& nv = nodes[it->second];
        nv.freeable += v->request;
        nv.victims.push_back(v);
      }
      nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [](const NodeVictims& nv) { return nv.node == nullptr; }),
                  nodes.end());
      std::sort(nodes.begin(), nodes.end(),
                [](const NodeVictims& a, const NodeVictims& b) { return a.node->name < b.node->name; });
    }
    // Nodes where something is idle or being released, for step 1 (kept as a short list: most of a busy
    // cluster has none); nodes this job evicts on are appended.
    std::vector<const NodeInfo*> free_nodes;
    for (int slot : st_.CandidateNodes()) {
      const NodeInfo& n = st_.NodeAt(slot);
      if (tasks[0]->request.FitsIn(n.FutureIdle()) || smallest_.FitsIn(n.FutureIdle())) free_nodes.push_back(&n);
    }

    Statement stmt(&st_);
    Resource promised;  // pipelined requests of this job (not in its queue's allocated yet)
    bool evicted_any = false;
    for (const TaskInfo* t : tasks) {
      if (reclaim_) {
        QueueInfo view = q;
        view.allocated += promised;
        if (!ssn_.Allocatable(view, *t)) break;
      }
      std::string target;
      std::vector<const TaskInfo*> plan;
      // 1. Capacity already being released (or idle): no new eviction.
      for (const NodeInfo* n : free_nodes) {
        if (!t->request.FitsIn(n->FutureIdle())) continue;
        if (!ssn_.StaticFit(*t, *n).ok() || !ssn_.DynamicFit(*t, *n).ok()) continue;
        target = n->name;
        break;
      }
      // 2. The node needing the fewest evictions.
      if (target.empty()) {
        for (NodeVictims& nv : nodes) {
          const NodeInfo* n = nv.node;
          if (!n->ready || !t->request.FitsIn(n->FutureIdle() + nv.freeable)) continue;
          if (!ssn_.StaticFit(*t, *n).ok()) continue;
          if (!nv.sorted) {
            std::stable_sort(nv.victims.begin(), nv.victims.end(),
                             [&](const TaskInfo* a, const TaskInfo* b) { return ssn_.TaskLess(*b, *a); });
            nv.sorted = true;
          }
          auto p = PlanNode(*t, *n, nv.victims);
          if (!p || p->empty()) continue;
          if (target.empty() || p->size() < plan.size()) {
            target = n->name;
            plan = std::move(*p);
            if (plan.size() == 1) break;  // cannot do better
          }
        }
        if (!target.empty()) {
          std::set<const NodeInfo*> touched;
          for (const TaskInfo* v : plan) touched.insert(st_.FindNode(v->node));
          for (const NodeInfo* n : touched)
            if (n && std::find(free_nodes.begin(), free_nodes.end(), n) == free_nodes.end()) free_nodes.push_back(n);
        }
      }
      if (target.empty()) break;  // this task cannot be placed; the gang verdict comes below
      for (const TaskInfo* v : plan) {
        if (stmt.Evict(v->uid, reason_, job.key).ok()) evicted_any = true;
      }
      if (!stmt.Pipeline(t->uid, target).ok()) break;
      promised += t->request;
    }
    if (!evicted_any || !ssn_.JobPipelined(job)) {
      // No eviction without the gang fitting; and nothing to do here when no eviction was needed (the job
      // only waits for capacity already being released: allocate pipelines it).
      stmt.Discard();
      return false;
    }
    size_t before = ssn_.result().evictions.size();
    stmt.Commit(&ssn_.result(), &ssn_.pipelined());
    ssn_.result().metrics.evictions += static_cast<int64_t>(ssn_.result().evictions.size() - before);
    return true;
  }

  Session& ssn_;
  ClusterState& st_;
  bool reclaim_;
  std::string reason_;
  int max_jobs_;
  std::optional<Resource> future_idle_;
  Resource smallest_;  // per-dimension smallest request of the job being tried
  std::map<std::string, std::vector<const TaskInfo*>> scope_;  // queue -> candidate victims (see Candidates)
  std::optional<std::map<std::string, Resource>> queue_alloc_;
};

}  // namespace

void RunVictimSearch(Session& ssn, const VictimSearchOptions& options) {
  VictimPlanner p(ssn, options);
  p.Run();
}

core::StatusOr<VictimSearchOptions> ParseVictimSearchOptions(const ActionConfiguration& c, bool reclaim) {
  ArgParser args("action \"" + c.name + "\"", c.arguments);
  VictimSearchOptions o;
  o.reclaim = reclaim;
  o.max_jobs_per_cycle = static_cast<int>(args.Int("maxJobsPerCycle", 32, 0, 1 << 20));
  if (!args.status().ok()) return args.status();
  return o;
}

}  // namespace tephra::sched::actions
