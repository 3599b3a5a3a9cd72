// Scheduler cycle: session open -> actions (enqueue, allocate, backfill) -> session close -> status.
#include "tephra/sched/scheduler.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace tephra::sched {

using core::Status;
using core::StatusCode;

const std::set<std::string>& ImplementedActions();  // config.cc

struct Scheduler::Caches {
  // Static predicate results per task shape, valid while the node set/specs are unchanged
  // (ClusterState::topology_version_). This is Volcano's predicateErrorCacheEnable idea taken further:
  // identical pod specs share the feasible node list and the per-reason failure counts.
  struct Shape {
    uint64_t topology_version = 0;
    std::vector<int> feasible;  // node slots in name order
    std::map<std::string, int> reasons;
  };
  std::unordered_map<uint32_t, Shape> shapes;
  uint64_t rank_version = 0;
  std::vector<int> rank;  // node slot -> position in name order (deterministic tie-break)
};

Scheduler::Scheduler(SchedulerConf conf, PluginRegistry registry, const core::Clock* clock)
    : conf_(std::move(conf)), registry_(std::move(registry)), clock_(clock), state_(conf_.core),
      caches_(std::make_unique<Caches>()) {}

Scheduler::~Scheduler() = default;

core::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerConf conf, PluginRegistry registry,
                                                             const core::Clock* clock,
                                                             std::vector<std::string>* warnings) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry, warnings));
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(conf), std::move(registry), clock));
  TEPHRA_RETURN_IF_ERROR(s->BuildPlugins(nullptr));
  return s;
}

Status Scheduler::BuildPlugins(std::vector<std::string>* warnings) {
  std::vector<PluginSlot> slots;
  for (size_t t = 0; t < conf_.tiers.size(); ++t) {
    for (const auto& opt : conf_.tiers[t].plugins) {
      auto p = registry_.Create(opt);
      if (!p) continue;  // known Volcano plugin Tephra does not implement (Validate warned)
      slots.push_back({std::move(p), opt, static_cast<int>(t)});
    }
  }
  plugins_ = std::move(slots);
  caches_->shapes.clear();
  return Status::OK();
}

Status Scheduler::UpdateConf(SchedulerConf conf, std::vector<std::string>* warnings) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry_, warnings));
  conf_ = std::move(conf);
  state_.set_options(conf_.core);
  for (auto& [k, j] : state_.jobs_) j.sched.failed = false;
  return BuildPlugins(warnings);
}

CycleResult Scheduler::RunCycle(WallTime now) {
  ++cycle_;
  CycleResult out;
  Session ssn(&state_, &conf_, &plugins_, now, clock_, &out);
  int64_t t0 = ssn.NowUs();
  ssn.Open();
  for (const auto& action : conf_.actions) {
    // A yielded allocate defers the rest of the round's actions: preempting or backfilling for jobs that
    // allocate has not reached yet would act on a half-made decision.
    if (out.yielded) break;
    int64_t ta = ssn.NowUs();
    if (action == "enqueue") Enqueue(ssn);
    else if (action == "allocate") Allocate(ssn);
    else if (action == "backfill") Backfill(ssn);
    else if (action == "preempt") EvictFor(ssn, false);
    else if (action == "reclaim") EvictFor(ssn, true);
    else continue;  // not implemented (Validate warned)
    out.metrics.action_us[action] += ssn.NowUs() - ta;
  }
  ReleaseStuckGangs(ssn);
  ssn.Close();
  WriteStatus(ssn);
  out.metrics.e2e_us = ssn.NowUs() - t0;
  return out;
}

// ------------------------------------------------------------------------------------------- enqueue

void Scheduler::Enqueue(Session& ssn) {
  // Queues in QueueOrder, jobs in JobOrder; Pending PodGroups move to Inqueue when every enqueue vote
  // allows it (proportion: queue capability; overcommit: cluster idle x factor). The job controller
  // creates pods only once the PodGroup is Inqueue, so jobs without tasks are considered too.
  std::map<std::string, std::vector<JobInfo*>> by_queue;
  for (auto& [key, j] : state_.jobs_) {
    if (j.phase != PodGroupPhase::kPending) continue;
    const QueueInfo* q = state_.FindQueue(j.queue);
    if (!q || q->state != QueueState::kOpen) continue;
    by_queue[j.queue].push_back(&j);
  }
  if (by_queue.empty()) return;
  std::vector<const QueueInfo*> queues;
  for (const auto& [name, jobs] : by_queue) queues.push_back(state_.FindQueue(name));
  std::stable_sort(queues.begin(), queues.end(),
                   [&](const QueueInfo* a, const QueueInfo* b) { return ssn.QueueLess(*a, *b); });
  for (const QueueInfo* q : queues) {
    auto& jobs = by_queue[q->name];
    std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn.JobLess(*a, *b); });
    for (JobInfo* j : jobs) {
      if (!ssn.JobEnqueueable(*j)) continue;
      j->phase = PodGroupPhase::kInqueue;
      ++j->version;
      ssn.JobEnqueued(*j);
    }
  }
}

// ------------------------------------------------------------------------------------------ allocate

namespace {

std::string FormatReasons(const std::map<std::string, int>& reasons) {
  std::vector<std::pair<std::string, int>> v(reasons.begin(), reasons.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [r, n] : v) {
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + r;
  }
  return out;
}

}  // namespace

// One allocate pass over the queues. Per job: tasks grouped by (shape, role); each group keeps a max-heap
// of (score, node) built once from the shape's cached feasible nodes. After a placement on node N only
// N's entry can change (NodeScore contract), so N is re-scored and pushed again in every group of the job;
// stale entries are recognised by the node version and dropped when they surface.
class Allocator {
 public:
  Allocator(Scheduler& s, Session& ssn) : s_(s), ssn_(ssn), st_(s.state_) {
    auto& c = *s.caches_;
    if (c.rank_version != st_.topology_version_) {
      c.rank.assign(st_.nodes_.size(), 1 << 30);
      const auto& order = st_.SchedulableNodes();
      for (size_t i = 0; i < order.size(); ++i) c.rank[static_cast<size_t>(order[i])] = static_cast<int>(i);
      c.rank_version = st_.topology_version_;
    }
  }

  void Run() {
    const bool enqueue_on = std::find(s_.conf_.actions.begin(), s_.conf_.actions.end(), "enqueue") != s_.conf_.actions.end();
    const int retry = st_.options().retry_unchanged_every_cycles;
    const int64_t slice = ssn_.has_clock() ? st_.options().allocate_slice_us : 0;
    const int64_t start_us = ssn_.NowUs();
    std::map<std::string, std::vector<JobInfo*>> by_queue;
    for (auto& [key, j] : st_.jobs_) {
      if (j.Count(TaskStatus::kPending) - j.pending_best_effort <= 0) continue;
      if (enqueue_on && j.phase == PodGroupPhase::kPending) continue;
      if (slice > 0) {
        // Tried earlier in this round and unchanged since: the round moves on to the jobs not reached yet.
        auto it = s_.round_tried_.find(key);
        if (it != s_.round_tried_.end() && it->second == j.version) continue;
      }
      const auto& m = j.sched;
      if (m.failed && retry > 0 && m.failed_version == j.version && m.failed_epoch == st_.capacity_epoch() &&
          s_.cycle_ - m.failed_cycle < static_cast<uint64_t>(retry)) {
        ++ssn_.result().metrics.jobs_skipped_clean;
        continue;
      }
      const QueueInfo* q = st_.FindQueue(j.queue);
      if (!q || q->state != QueueState::kOpen) continue;
      ValidateResult v = ssn_.JobValid(j);
      if (!v.pass) {
        invalid_[key] = v;
        continue;
      }
      by_queue[j.queue].push_back(&j);
    }
    for (auto& [q, jobs] : by_queue)
      std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn_.JobLess(*a, *b); });
    std::map<std::string, size_t> next;
    while (true) {
      // Pick the queue that goes first now (shares move as jobs are placed); skip overused queues.
      const QueueInfo* best = nullptr;
      for (auto& [name, jobs] : by_queue) {
        if (next[name] >= jobs.size()) continue;
        const QueueInfo* q = st_.FindQueue(name);
        if (ssn_.Overused(*q)) {
          next[name] = jobs.size();
          continue;
        }
        if (!best || ssn_.QueueLess(*q, *best)) best = q;
      }
      if (!best) break;
      if (slice > 0 && ssn_.NowUs() - start_us >= slice) {
        ssn_.result().yielded = true;
        return;
      }
      JobInfo* job = by_queue[best->name][next[best->name]++];
      AllocateJob(*job, *best);
      if (slice > 0) s_.round_tried_[job->key] = job->version;
    }
    s_.round_tried_.clear();  // the round reached every job
  }

  const std::map<std::string, ValidateResult>& invalid() const { return invalid_; }

 private:
  struct Entry {
    double score;
    int rank;
    int slot;
    uint64_t version;
    bool operator<(const Entry& o) const { return score != o.score ? score < o.score : rank > o.rank; }
  };
  struct Group {
    const TaskInfo* rep = nullptr;
    std::vector<Entry> heap;
    std::vector<int> future;  // nodes where only FutureIdle fits (pipeline candidates)
  };

  const Scheduler::Caches::Shape& StaticFor(const TaskInfo& t) {
    auto& sc = s_.caches_->shapes[t.shape];
    if (sc.topology_version == st_.topology_version_ && sc.topology_version != 0) return sc;
    int64_t t0 = ssn_.NowUs();
    sc = {};
    sc.topology_version = st_.topology_version_;
    for (int slot : st_.SchedulableNodes()) {
      std::string r = ssn_.StaticPredicate(t, st_.NodeAt(slot));
      if (r.empty()) sc.feasible.push_back(slot);
      else ++sc.reasons[r];
    }
    ssn_.AddPluginTime("predicates", ssn_.NowUs() - t0);
    return sc;
  }

  std::string ResourceReason(const TaskInfo& t, const Resource& avail) const {
    int d = t.request.FirstShortDimension(avail);
    if (d < 0) return {};
    if (d == kPods) return "node(s) had too many pods";
    return "node(s) had insufficient " + st_.resources().Name(d);
  }

  // Fits Idle and passes dynamic predicates -> score; otherwise nullopt.
  std::optional<double> Evaluate(const TaskInfo& t, const NodeInfo& n) const {
    if (!t.request.FitsIn(n.Idle())) return std::nullopt;
    if (!ssn_.DynamicPredicate(t, n).empty()) return std::nullopt;
    return ssn_.NodeScore(t, n);
  }

  void Build(Group& g, const std::vector<char>* allowed) {
    const auto& sc = StaticFor(*g.rep);
    int64_t t0 = ssn_.NowUs();
    g.heap.reserve(sc.feasible.size());
    for (int slot : sc.feasible) {
      if (allowed && !(*allowed)[static_cast<size_t>(slot)]) continue;
      const NodeInfo& n = st_.NodeAt(slot);
      if (auto score = Evaluate(*g.rep, n)) {
        g.heap.push_back({*score, s_.caches_->rank[static_cast<size_t>(slot)], slot, n.version});
      } else if (g.rep->request.FitsIn(n.FutureIdle())) {
        g.future.push_back(slot);
      }
    }
    std::make_heap(g.heap.begin(), g.heap.end());
    ssn_.AddPluginTime("nodeorder+binpack(score)", ssn_.NowUs() - t0);
  }

  // Failure histogram for a task that found no node within `allowed`.
  std::map<std::string, int> Explain(const TaskInfo& t, const std::vector<char>* allowed) {
    const auto& sc = StaticFor(t);
    std::map<std::string, int> reasons;
    if (!allowed) reasons = sc.reasons;
    for (int slot : sc.feasible) {
      if (allowed && !(*allowed)[static_cast<size_t>(slot)]) continue;
      const NodeInfo& n = st_.NodeAt(slot);
      std::string r = ResourceReason(t, n.Idle());
      if (r.empty()) r = ssn_.DynamicPredicate(t, n);
      if (!r.empty()) ++reasons[r];
    }
    return reasons;
  }

  // Places as many of `tasks` as possible on nodes in `allowed` (nullptr = all); unplaced tasks are
  // returned in order. Stops early when the queue refuses more (sets queue_full_).
  //
  // Heaps: when scores cannot depend on the job (no job-dependent NodeScore, no node restriction, no
  // anti-affinity in play), groups are keyed by shape alone and shared by every job of the cycle, so a
  // thousand identical gangs build one heap, not a thousand. Every node a statement touches (placement or
  // discard) is re-scored into all shared heaps (Touch), which keeps the lazy-invalidation invariant.
  std::vector<TaskInfo*> PlaceTasks(const JobInfo& job, const QueueInfo& q, const std::vector<TaskInfo*>& tasks,
                                    const std::vector<char>* allowed, Statement& stmt) {
    std::map<std::pair<uint32_t, std::string>, Group> local;
    std::set<Group*> failed;  // groups that failed during this call: nothing frees up meanwhile
    const bool may_share = allowed == nullptr && !ssn_.JobDependentScore(job) && st_.anti_affinity_pods() == 0;
    const bool recheck = st_.anti_affinity_pods() > 0;
    std::vector<TaskInfo*> unplaced;
    std::vector<Entry> skipped;
    for (size_t i = 0; i < tasks.size(); ++i) {
      TaskInfo* t = tasks[i];
      if (queue_full_) {
        unplaced.push_back(t);
        continue;
      }
      if (!ssn_.Allocatable(q, *t)) {
        queue_full_ = true;
        // Say what is short: node reasons when no node could take the task anyway, else the queue.
        if (last_reasons_.empty()) {
          auto reasons = Explain(*t, allowed);
          int failing = 0;
          for (const auto& [r, n] : reasons) failing += n;
          if (failing >= static_cast<int>(st_.SchedulableNodes().size())) last_reasons_ = std::move(reasons);
        }
        unplaced.push_back(t);
        continue;
      }
      Group& g = may_share ? shared_[t->shape] : local[{t->shape, t->role}];
      if (!g.rep) {
        g.rep = t;
        Build(g, allowed);
      }
      if (failed.count(&g)) {
        unplaced.push_back(t);
        continue;
      }
      int placed_slot = -1;
      bool pipelined = false;
      skipped.clear();
      while (!g.heap.empty()) {
        Entry top = g.heap.front();
        std::pop_heap(g.heap.begin(), g.heap.end());
        g.heap.pop_back();
        const NodeInfo& n = st_.NodeAt(top.slot);
        if (top.version != n.version) {
          if (auto score = Evaluate(*t, n)) {
            g.heap.push_back({*score, top.rank, top.slot, n.version});
            std::push_heap(g.heap.begin(), g.heap.end());
          } else if (t->request.FitsIn(n.FutureIdle())) {
            g.future.push_back(top.slot);
          }
          continue;
        }
        if (recheck && !ssn_.DynamicPredicate(*t, n).empty()) {  // rep passed, this task may not
          skipped.push_back(top);
          continue;
        }
        g.heap.push_back(top);  // stays a candidate until the placement bumps the node version
        std::push_heap(g.heap.begin(), g.heap.end());
        placed_slot = top.slot;
        break;
      }
      for (const Entry& e : skipped) {
        g.heap.push_back(e);
        std::push_heap(g.heap.begin(), g.heap.end());
      }
      if (placed_slot < 0) {
        for (int slot : g.future) {
          const NodeInfo& n = st_.NodeAt(slot);
          if (t->request.FitsIn(n.FutureIdle()) && ssn_.DynamicPredicate(*t, n).empty()) {
            placed_slot = slot;
            pipelined = true;
            break;
          }
        }
      }
      if (placed_slot < 0) {
        failed.insert(&g);
        if (last_reasons_.empty()) last_reasons_ = Explain(*t, allowed);
        unplaced.push_back(t);
        continue;
      }
      const std::string& node = st_.NodeAt(placed_slot).name;
      Status s = pipelined ? stmt.Pipeline(t->uid, node) : stmt.Allocate(t->uid, node);
      if (!s.ok()) {
        unplaced.push_back(t);
        continue;
      }
      // Re-score the changed node in every heap that may hold it.
      for (auto& [k, g2] : local) Push(g2, placed_slot);
      Touch(placed_slot);
    }
    return unplaced;
  }

  void Push(Group& g, int slot) {
    if (!g.rep) return;
    const NodeInfo& n = st_.NodeAt(slot);
    if (auto score = Evaluate(*g.rep, n)) {
      g.heap.push_back({*score, s_.caches_->rank[static_cast<size_t>(slot)], slot, n.version});
      std::push_heap(g.heap.begin(), g.heap.end());
    } else if (g.rep->request.FitsIn(n.FutureIdle())) {
      g.future.push_back(slot);
    }
  }
  void Touch(int slot) {
    for (auto& [shape, g] : shared_) Push(g, slot);
  }
  // Discard that keeps the shared heaps truthful: restored nodes may score higher than their entries.
  void Discard(Statement& stmt) {
    std::vector<int> slots;
    for (const auto& e : stmt.entries()) slots.push_back(st_.NodeIndex(e.node));
    stmt.Discard();
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (int slot : slots)
      if (slot >= 0) Touch(slot);
  }

  // Splits `domain` (node slots, name order) into leaf groups and fills them largest-idle first, so a
  // gang that needs several leaves uses as few as possible.
  std::vector<TaskInfo*> PlaceLeafGreedy(const JobInfo& job, const QueueInfo& q, std::vector<TaskInfo*> tasks,
                                         const std::vector<int>& domain, Statement& stmt) {
    const auto& view = ssn_.hypernodes();
    std::map<std::string, std::vector<int>> leaves;
    for (int slot : domain) {
      auto it = view.leaf_of_node.find(slot);
      leaves[it == view.leaf_of_node.end() ? std::string() : it->second].push_back(slot);
    }
    Resource need;
    for (const TaskInfo* t : tasks) need += t->request;
    int dim = kCpu;
    double best = -1;
    for (int i = 0; i < kMaxResources; ++i) {
      if (i == kPods || need.Get(i) <= 0) continue;
      double share = static_cast<double>(need.Get(i)) / std::max<double>(1, static_cast<double>(st_.TotalAllocatable().Get(i)));
      if (share > best) { best = share; dim = i; }
    }
    std::vector<std::pair<int64_t, std::string>> order;
    for (const auto& [name, slots] : leaves) {
      int64_t idle = 0;
      for (int slot : slots) idle += std::max<int64_t>(0, st_.NodeAt(slot).Idle().Get(dim));
      order.push_back({-idle, name});
    }
    std::sort(order.begin(), order.end());
    std::vector<char> allowed(st_.nodes_.size(), 0);
    for (const auto& [negidle, name] : order) {
      if (tasks.empty() || queue_full_) break;
      std::fill(allowed.begin(), allowed.end(), 0);
      for (int slot : leaves[name]) allowed[static_cast<size_t>(slot)] = 1;
      tasks = PlaceTasks(job, q, tasks, &allowed, stmt);
    }
    return tasks;
  }

  void AllocateJob(JobInfo& job, const QueueInfo& q) {
    ++ssn_.result().metrics.jobs_considered;
    std::vector<TaskInfo*> tasks;
    auto it = st_.tasks_by_job_.find(job.key);
    if (it != st_.tasks_by_job_.end())
      for (TaskInfo* t : it->second)
        if (t->status == TaskStatus::kPending && !t->scheduling_gated && !t->best_effort) tasks.push_back(t);
    if (tasks.empty()) return;
    queue_full_ = false;
    last_reasons_.clear();
    auto& m = ssn_.result().metrics;
    // Retry of a gang that failed before: if the whole cluster's future-idle cannot hold the gang's
    // missing minimum (lower bound: per-dimension smallest request x missing tasks), or its queue refuses
    // a task, it fails again without sorting or touching nodes, keeping its previous explanation.
    auto& memo = job.sched;
    if (memo.failed && !memo.message.empty()) {
      int missing = job.min_member - job.ReadyCount() - job.Count(TaskStatus::kPipelined);
      Resource smallest = tasks[0]->request;
      for (const TaskInfo* t : tasks) smallest = smallest.Min(t->request);
      Resource need;
      for (int d = 0; d < kMaxResources; ++d) need.Set(d, smallest.Get(d) * std::max(0, missing));
      if ((missing > 0 && !need.FitsIn(ClusterIdle())) || !ssn_.Allocatable(q, *tasks[0])) {
        ssn_.RecordFitErrors(job.key, memo.unschedulable, memo.message);
        ++m.schedule_attempts["unschedulable"];
        memo.failed_version = job.version;
        memo.failed_epoch = st_.capacity_epoch();
        memo.failed_cycle = s_.cycle_;
        return;
      }
    }
    std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn_.TaskLess(*a, *b); });
    const uint64_t version_before = job.version;
    Statement stmt(&st_);
    std::vector<TaskInfo*> unplaced;
    std::string topo_error;
    const auto& view = ssn_.hypernodes();
    if (job.network_topology.mode != TopologyMode::kNone && !view.empty()) {
      unplaced = PlaceWithTopology(job, q, tasks, stmt, &topo_error);
    } else {
      unplaced = PlaceTasks(job, q, tasks, nullptr, stmt);
    }
    if (ssn_.JobReady(job)) {
      for (const auto& e : stmt.entries()) cluster_idle_ -= st_.FindTask(e.task_uid)->request;
      size_t before = ssn_.result().binds.size();
      stmt.Commit(&ssn_.result(), &ssn_.pipelined());
      m.placements += static_cast<int64_t>(ssn_.result().binds.size() - before);
      ++m.schedule_attempts["scheduled"];
      ssn_.scheduled_jobs()[job.key] = true;
      job.sched.failed = false;
      return;
    }
    bool pipelined = !stmt.empty() && ssn_.JobPipelined(job);
    int unsched = static_cast<int>(unplaced.size());
    std::string msg = !topo_error.empty() ? topo_error : FormatReasons(last_reasons_);
    if (queue_full_ && msg.empty()) msg = "queue " + q.name + " resource quota insufficient";
    ssn_.RecordFitErrors(job.key, unsched, msg);
    ++m.schedule_attempts["unschedulable"];
    if (pipelined) {
      // Hold the placements (and the resources) until the session closes; nothing is bound.
      auto entries = stmt.Release();
      for (const auto& e : entries) cluster_idle_ -= st_.FindTask(e.task_uid)->request;
      ssn_.pipelined().insert(ssn_.pipelined().end(), entries.begin(), entries.end());
      return;
    }
    Discard(stmt);
    // The discarded attempt moved the job's version (placements + undo) but left the job exactly as it was;
    // restoring it keeps preempt/reclaim's memo of this job (keyed by version) valid, so a periodic allocate
    // retry does not trigger a victim search every time.
    job.version = version_before;
    job.sched.failed = true;
    job.sched.failed_version = job.version;
    job.sched.failed_epoch = st_.capacity_epoch();
    job.sched.failed_cycle = s_.cycle_;
    job.sched.unschedulable = unsched;
    job.sched.message = msg;
  }

  // docs/volcano-behaviour.md, "Network-topology ordering": smallest tier first; within a tier the best
  // HyperNodeOrder score first; the first HyperNode where the gang becomes ready wins (equivalent to scoring all dry runs when the score ranks
  // HyperNodes before trying them). Soft mode falls back to the whole cluster, still leaf-greedy.
  std::vector<TaskInfo*> PlaceWithTopology(JobInfo& job, const QueueInfo& q, const std::vector<TaskInfo*>& tasks,
                                           Statement& stmt, std::string* error) {
    const auto& view = ssn_.hypernodes();
    int max_tier = view.by_tier.empty() ? 0 : view.by_tier.rbegin()->first;
    if (!job.network_topology.highest_tier_name.empty()) {
      auto it = view.tier_of_name.find(job.network_topology.highest_tier_name);
      if (it != view.tier_of_name.end()) max_tier = it->second;
    } else if (job.network_topology.highest_tier_allowed > 0) {
      max_tier = job.network_topology.highest_tier_allowed;
    }
    // Nodes the job already occupies: the chosen HyperNode must contain them.
    std::set<int> existing;
    if (auto jt = st_.tasks_by_job_.find(job.key); jt != st_.tasks_by_job_.end())
      for (const TaskInfo* t : jt->second)
        if (OccupiesNode(t->status) && !t->node.empty()) {
          int idx = st_.NodeIndex(t->node);
          if (idx >= 0) existing.insert(idx);
        }
    int need_n = std::max(0, job.min_member - job.ReadyCount());
    Resource need;
    for (size_t i = 0; i < tasks.size() && static_cast<int>(i) < need_n; ++i) need += tasks[i]->request;
    for (const auto& [tier, names] : view.by_tier) {
      if (tier > max_tier) break;
      std::vector<std::pair<double, std::string>> cands;
      for (const auto& name : names) {
        const auto& e = view.entries.at(name);
        Resource idle;
        for (int slot : e.nodes) idle += st_.NodeAt(slot).FutureIdle().ClampZero();
        if (!need.FitsIn(idle)) continue;
        bool has_all = true;
        for (int x : existing)
          if (!std::binary_search(e.nodes.begin(), e.nodes.end(), x, [&](int a, int b) {
                return st_.NodeAt(a).name < st_.NodeAt(b).name;
              })) { has_all = false; break; }
        if (!has_all) continue;
        cands.push_back({-ssn_.HyperNodeScore(job, name), name});
      }
      std::sort(cands.begin(), cands.end());
      for (const auto& [negscore, name] : cands) {
        queue_full_ = false;
        auto rest = PlaceLeafGreedy(job, q, tasks, view.entries.at(name).nodes, stmt);
        if (ssn_.JobReady(job) || ssn_.JobPipelined(job)) return rest;
        Discard(stmt);
      }
    }
    if (job.network_topology.mode == TopologyMode::kHard) {
      *error = "no HyperNode with tier <= " + std::to_string(max_tier) + " can hold the gang";
      return tasks;
    }
    return PlaceLeafGreedy(job, q, tasks, st_.SchedulableNodes(), stmt);
  }

  // Sum of FutureIdle over schedulable nodes, computed on first use and kept current as jobs commit.
  const Resource& ClusterIdle() {
    if (!cluster_idle_valid_) {
      cluster_idle_ = Resource();
      for (int slot : st_.SchedulableNodes()) cluster_idle_ += st_.NodeAt(slot).FutureIdle().ClampZero();
      cluster_idle_valid_ = true;
    }
    return cluster_idle_;
  }

  Scheduler& s_;
  Session& ssn_;
  Resource cluster_idle_;
  bool cluster_idle_valid_ = false;
  std::map<uint32_t, Group> shared_;
  ClusterState& st_;
  bool queue_full_ = false;
  std::map<std::string, int> last_reasons_;
  std::map<std::string, ValidateResult> invalid_;

 public:
  std::map<std::string, ValidateResult> TakeInvalid() { return std::move(invalid_); }
};

void Scheduler::Allocate(Session& ssn) {
  Allocator a(*this, ssn);
  a.Run();
  for (auto& [k, v] : a.TakeInvalid()) ssn.RecordFitErrors(k, -1, v.reason + "\n" + v.message);
}

// ------------------------------------------------------------------------------------------ backfill

void Scheduler::Backfill(Session& ssn) {
  // Best-effort pending tasks (nothing requested but a pod slot) of admitted jobs go to the first node,
  // in name order, that passes the predicates and has a free pod slot.
  const bool enqueue_on = std::find(conf_.actions.begin(), conf_.actions.end(), "enqueue") != conf_.actions.end();
  for (auto& [key, j] : state_.jobs_) {
    if (j.pending_best_effort <= 0) continue;
    if (enqueue_on && j.phase == PodGroupPhase::kPending) continue;
    if (!ssn.JobValid(j).pass) continue;
    std::vector<TaskInfo*> tasks;
    for (TaskInfo* t : state_.tasks_by_job_[key])
      if (t->status == TaskStatus::kPending && t->best_effort && !t->scheduling_gated) tasks.push_back(t);
    std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn.TaskLess(*a, *b); });
    for (TaskInfo* t : tasks) {
      for (int slot : state_.SchedulableNodes()) {
        const NodeInfo& n = state_.NodeAt(slot);
        if (!t->request.FitsIn(n.Idle())) continue;
        if (!ssn.StaticPredicate(*t, n).empty() || !ssn.DynamicPredicate(*t, n).empty()) continue;
        Statement stmt(&state_);
        if (stmt.Allocate(t->uid, n.name).ok()) {
          stmt.Commit(&ssn.result(), &ssn.pipelined());
          ++ssn.result().metrics.placements;
        }
        break;
      }
    }
  }
}

// ------------------------------------------------------------------------------------- gang timeout

void Scheduler::ReleaseStuckGangs(Session& ssn) {
  const int64_t timeout = conf_.core.gang_timeout_seconds;
  for (auto& [key, j] : state_.jobs_) {
    if (j.min_member <= 0) continue;
    int ready = j.ReadyCount();
    // "Whole" means confirmed by the API (Bound/Running/Succeeded), not merely assumed (Binding).
    int confirmed = j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning) + j.Count(TaskStatus::kSucceeded);
    if (confirmed >= j.min_member) j.sched.ever_ready = true;
    if (ready >= j.min_member) {
      j.sched.partial_since.reset();
      continue;
    }
    int placed = j.Count(TaskStatus::kBinding) + j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning);
    // Only gangs that never became whole: a running gang that lost a pod is the job controller's business
    // (its lifecycle policies decide), not the scheduler's.
    if (j.sched.ever_ready || placed == 0 || timeout <= 0) {
      j.sched.partial_since.reset();
      continue;
    }
    if (!j.sched.partial_since) {
      j.sched.partial_since = ssn.now();
      continue;
    }
    if (ssn.now() - *j.sched.partial_since < std::chrono::seconds(timeout)) continue;
    Statement stmt(&state_);
    for (const TaskInfo* t : state_.TasksOfJob(key)) {
      if (t->status == TaskStatus::kBinding || t->status == TaskStatus::kBound || t->status == TaskStatus::kRunning)
        (void)stmt.Evict(t->uid, "GangTimeout", {});
    }
    stmt.Commit(&ssn.result(), nullptr);
    j.sched.partial_since.reset();
    ssn.RecordFitErrors(key, -1,
                        "GangTimeout\nonly " + std::to_string(ready) + "/" + std::to_string(j.min_member) +
                            " tasks of the gang were ready for " + std::to_string(timeout) +
                            "s; released its " + std::to_string(placed) + " placed pod(s)");
  }
}

// -------------------------------------------------------------------------------------------- status

void Scheduler::WriteStatus(Session& ssn) {
  CycleResult& out = ssn.result();
  const auto& fit = ssn.fit_errors();
  // Jobs to evaluate: those with an event this cycle (small maps) plus those whose version moved.
  std::set<std::string> todo;
  for (const auto& [k, v] : fit) todo.insert(k);
  for (const auto& [k, v] : ssn.scheduled_jobs()) todo.insert(k);
  for (const auto& [k, v] : state_.bind_failures_) todo.insert(k);
  for (const auto& [k, j] : state_.jobs_)
    if (j.sched.status_version != j.version) todo.insert(k);
  for (const auto& key : todo) {
    auto jit = state_.jobs_.find(key);
    if (jit == state_.jobs_.end()) continue;
    JobInfo& j = jit->second;
    auto fe = fit.find(key);
    bool scheduled = ssn.scheduled_jobs().count(key) > 0;
    std::string bind_failure = state_.TakeBindFailure(key);
    // docs/volcano-behaviour.md, "PodGroup phase".
    int running = j.Count(TaskStatus::kRunning), succeeded = j.Count(TaskStatus::kSucceeded),
        failed = j.Count(TaskStatus::kFailed);
    int scheduled_n = j.Count(TaskStatus::kAllocated) + j.Count(TaskStatus::kBinding) + j.Count(TaskStatus::kBound) +
                      running + succeeded + failed + j.Count(TaskStatus::kReleasing);
    bool unsched_now = fe != fit.end() || !bind_failure.empty();
    PodGroupPhase phase;
    if (running > 0 && unsched_now) phase = PodGroupPhase::kUnknown;
    else if (scheduled_n >= j.min_member && scheduled_n > 0)
      phase = (succeeded + failed == scheduled_n) ? PodGroupPhase::kCompleted : PodGroupPhase::kRunning;
    else phase = j.phase == PodGroupPhase::kInqueue ? PodGroupPhase::kInqueue : PodGroupPhase::kPending;
    if (j.phase != phase) j.phase = phase;

    PodGroupStatusUpdate u;
    u.job = key;
    u.ns = j.ns;
    u.name = j.name;
    u.phase = phase;
    u.running = running;
    u.succeeded = succeeded;
    u.failed = failed;
    u.uid = j.uid;
    auto prev = emitted_pg_.find(key);
    // What was emitted for an earlier PodGroup of the same name says nothing about this one: its first
    // status (often the very same Inqueue 0/0/0 the old one last had) must be written.
    if (prev != emitted_pg_.end() && prev->second.uid != j.uid) {
      emitted_pg_.erase(prev);
      prev = emitted_pg_.end();
    }
    std::optional<PodGroupCondition> cond;
    if (!bind_failure.empty()) {
      cond = PodGroupCondition{"Unschedulable", "True", "BindFailed",
                               "bind failed: " + bind_failure + "; the gang's pending binds were rolled back", {}};
    } else if (fe != fit.end() && fe->second.unschedulable < 0) {
      auto nl = fe->second.message.find('\n');
      cond = PodGroupCondition{"Unschedulable", "True", fe->second.message.substr(0, nl),
                               fe->second.message.substr(nl + 1), {}};
    } else if (fe != fit.end()) {
      cond = PodGroupCondition{"Unschedulable", "True", "NotEnoughResources",
                               std::to_string(fe->second.unschedulable) + "/" + std::to_string(j.TotalTasks()) +
                                   " tasks in gang unschedulable: " + fe->second.message,
                               {}};
    } else if (scheduled) {
      cond = PodGroupCondition{"Scheduled", "True", "", "tasks in gang are ready to be scheduled", {}};
    }
    if (cond) {
      bool same = prev != emitted_pg_.end() && !prev->second.conditions.empty() && prev->second.conditions[0] == *cond;
      cond->last_transition_time = same ? prev->second.conditions[0].last_transition_time : ssn.now();
      u.conditions = {*cond};
      if (!same) {
        out.events.push_back({"PodGroup", j.ns, j.name, cond->type == "Scheduled" ? "Normal" : "Warning",
                              cond->type, cond->message});
      }
    } else if (prev != emitted_pg_.end()) {
      u.conditions = prev->second.conditions;
    }
    bool changed = resync_status_ || prev == emitted_pg_.end() || prev->second.phase != u.phase || prev->second.running != u.running ||
                   prev->second.succeeded != u.succeeded || prev->second.failed != u.failed ||
                   prev->second.conditions != u.conditions;
    j.sched.status_version = j.version;
    if (!changed) continue;
    emitted_pg_[key] = u;
    out.pod_groups.push_back(std::move(u));
  }
  for (const auto& key : state_.removed_jobs_)
    if (!state_.FindJob(key)) emitted_pg_.erase(key);
  state_.removed_jobs_.clear();
  for (const auto& [name, q] : state_.queues_) {
    auto it = emitted_queue_.find(name);
    if (!resync_status_ && it != emitted_queue_.end() && it->second == q.allocated) continue;
    emitted_queue_[name] = q.allocated;
    out.queues.push_back({name, q.allocated});
  }
  resync_status_ = false;
}

void Scheduler::ResyncStatus() {
  resync_status_ = true;
  for (auto& [k, j] : state_.jobs_) j.sched.status_version = 0;
}

}  // namespace tephra::sched
