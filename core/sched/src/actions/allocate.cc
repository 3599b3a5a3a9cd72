// The "allocate" action (docs/scheduler.md, "Fast predicate/score loop"): queues by QueueOrder
// (re-evaluated after every job, skipping overused ones), jobs by JobOrder, tasks by TaskOrder; a job's
// placements are committed only if it becomes JobReady, held until the session closes if only
// JobPipelined, otherwise discarded.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "actions.h"
#include "tephra/sched/reservation.h"

namespace tephra::sched::actions {

using core::Status;

// Kept by the action instance across cycles (instances live until the configuration changes).
struct AllocateCaches {
  // Static predicate results per task shape, valid while the node set/specs are unchanged
  // (ClusterState::topology_version()). This is Volcano's predicateErrorCacheEnable idea taken further:
  // identical pod specs share the feasible node list and the per-reason failure counts.
  struct Shape {
    uint64_t topology_version = 0;
    std::vector<int> feasible;  // node slots in name order
    std::map<std::string, int> reasons;
  };
  std::unordered_map<uint32_t, Shape> shapes;
  uint64_t rank_version = 0;
  std::vector<int> rank;  // node slot -> position in name order (deterministic tie-break)
  // Allocate time slices (CoreOptions::allocate_slice_us): job key -> its version when allocate last tried
  // it in the current round; cleared when a round reaches the end of the job order (docs/scheduler.md).
  std::unordered_map<std::string, uint64_t> round_tried;
};

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
  Allocator(AllocateCaches& caches, Session& ssn) : caches_(caches), ssn_(ssn), st_(ssn.mutable_state()) {
    auto& c = caches_;
    if (c.rank_version != st_.topology_version()) {
      c.rank.assign(st_.node_slots(), 1 << 30);
      const auto& order = st_.CandidateNodes();
      for (size_t i = 0; i < order.size(); ++i) c.rank[static_cast<size_t>(order[i])] = static_cast<int>(i);
      c.rank_version = st_.topology_version();
    }
  }

  void Run() {
    const bool enqueue_on = ssn_.ActionConfigured("enqueue");
    const int retry = st_.options().retry_unchanged_every_cycles;
    const int64_t slice = ssn_.has_clock() ? st_.options().allocate_slice_us : 0;
    const int64_t start_us = ssn_.NowUs();
    auto& tried = caches_.round_tried;
    // With reservations on, a blocked gang that this cycle does not try (not admitted by enqueue yet, tried
    // earlier in the round, or unchanged since it last failed) still takes its place in the order: it gets
    // its reservation there, so the jobs behind it cannot take what it waits for (docs/reservations.md).
    reserving_ = st_.options().reservation_depth > 0;
    const bool reserving = reserving_;
    std::map<std::string, std::vector<const JobInfo*>> by_queue;
    st_.ForEachJob([&](const JobInfo& j) {
      if (j.Count(TaskStatus::kPending) - j.pending_best_effort <= 0) return;
      bool reserve_only = false;
      if (enqueue_on && j.phase == PodGroupPhase::kPending) {
        if (!reserving_) return;
        reserve_only = true;
      }
      if (slice > 0) {
        // Tried earlier in this round and unchanged since: the round moves on to the jobs not reached yet.
        auto it = tried.find(j.key);
        if (it != tried.end() && it->second == j.version) {
          if (!reserving) return;
          reserve_only = true;
        }
      }
      const auto& m = j.sched;
      if (!reserve_only && m.failed && retry > 0 && m.failed_version == j.version &&
          m.failed_epoch == st_.capacity_epoch() && ssn_.cycle() - m.failed_cycle < static_cast<uint64_t>(retry)) {
        ++ssn_.result().metrics.jobs_skipped_clean;
        if (!reserving) return;
        reserve_only = true;
        memo_skipped_.insert(&j);
      }
      if (!QueueAdmits(ssn_, j)) return;
      ValidateResult v = ssn_.JobValid(j);
      if (!v.pass) {
        invalid_[j.key] = v;
        return;
      }
      by_queue[j.queue].push_back(&j);
      if (reserve_only) reserve_only_.insert(&j);
    });
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
          // Every job still waiting in this queue waits for the same thing: say so once per job.
          Refusal why = ssn_.ExplainOverused(*q);
          for (size_t i = next[name]; i < jobs.size(); ++i)
            ssn_.RecordFitErrors(jobs[i]->key, -1, why.reason + "\n" + why.message);
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
      const JobInfo* job = by_queue[best->name][next[best->name]++];
      if (reserve_only_.count(job)) {
        // A gang at the front of the line is tried even when nothing about it changed: what held it back may
        // have been the reservations of the gangs ahead, which move every cycle.
        if (!memo_skipped_.count(job) || reserved_ >= st_.options().reservation_depth) {
          Reserve(*job, *best);
          continue;
        }
      }
      AllocateJob(*job, *best);
      if (slice > 0) tried[job->key] = job->version;
    }
    tried.clear();  // the round reached every job
  }

  const std::map<std::string, ValidateResult>& invalid() const { return invalid_; }

 private:
  // A node the current job may use: inside `allowed` (a domain; nullptr = all) and not closed to it by the
  // reservations of the gangs ahead (reserve_mask_).
  bool Allowed(const std::vector<char>* allowed, int slot) const {
    const auto i = static_cast<size_t>(slot);
    return (!allowed || (*allowed)[i]) && (!reserve_mask_ || (*reserve_mask_)[i]);
  }

  ReservationPlanner& Plan() {
    if (!plan_)
      plan_.emplace(st_, ssn_.now(), [this](const TaskInfo& t) -> const std::vector<int>& { return StaticFor(t).feasible; });
    return *plan_;
  }

  // A gang that cannot start now (docs/reservations.md): the first CoreOptions::reservation_depth of them in
  // allocate's order get a reservation, the next estimate_depth a planned start behind all of those ahead
  // (conservative backfill's plan, which only the reserved ones are held to). Either way the estimate goes to
  // the cycle's result.
  void Reserve(const JobInfo& job, const QueueInfo& q) {
    const auto& co = st_.options();
    if (reserved_ >= co.reservation_depth && estimated_ >= co.estimate_depth) return;
    std::vector<const TaskInfo*> tasks =
        MissingMembers(st_, job, [&](const TaskInfo& a, const TaskInfo& b) { return ssn_.TaskLess(a, b); });
    if (tasks.empty()) return;  // the gang is whole: its extra pods wait like any other
    StartEstimate e;
    e.job = job.key;
    e.queue = job.queue;
    Resource want = q.allocated;
    for (const TaskInfo* t : tasks) want += t->request;
    if (!want.FitsIn(q.capability)) {
      // Holding capacity for it would be holding it for nothing: its queue may not grow that far.
      e.why = "its queue " + q.name + " may not hold the gang beside what it runs now (spec.capability)";
      ssn_.result().estimates.push_back(std::move(e));
      return;
    }
    ReservationPlanner::Domain domain;
    if (job.network_topology.mode == TopologyMode::kHard) {
      domain.hard_topology = true;
      domain.max_tier = MaxTier(job.network_topology);
    }
    std::string why;
    if (reserved_ < co.reservation_depth) {
      auto found = Plan().Earliest(job, tasks, /*with_holds=*/true, domain, &why);
      if (found) {
        Plan().Reserve(job, *found);
        ++reserved_;
        e.kind = StartEstimate::Kind::kReserved;
        e.at = found->start;
        for (const auto& [slot, amount] : found->amounts) e.nodes.push_back(st_.NodeAt(slot).name);
        e.why = "running pods end at their jobs' running estimates";
      } else {
        e.why = why;
      }
    } else {
      ++estimated_;
      auto found = Plan().Earliest(job, tasks, /*with_holds=*/true, domain, &why);
      if (found) {
        Plan().Plan(job, *found);
        e.kind = StartEstimate::Kind::kPlanned;
        e.at = found->start;
        e.why = "planned behind the gangs ahead of it, running pods ending at their estimates; not reserved, so "
                "it may move";
      } else {
        e.why = why;
      }
    }
    ssn_.result().estimates.push_back(std::move(e));
  }

  std::optional<ReservationPlanner> plan_;
  const std::vector<char>* reserve_mask_ = nullptr;
  bool reserving_ = false;
  std::set<const JobInfo*> reserve_only_;  // blocked gangs this cycle places in the order without trying them
  std::set<const JobInfo*> memo_skipped_;  // of those, the ones skipped only because they failed unchanged
  int reserved_ = 0, estimated_ = 0;

  struct Entry {
    double score;
    int rank;
    int slot;
    uint64_t version;
    bool operator<(const Entry& o) const { return score != o.score ? score < o.score : rank > o.rank; }
  };
  struct BaseScores {
    std::vector<double> score;
    std::vector<uint64_t> version;  // by slot: the node version scored, + 1
  };
  std::unordered_map<uint32_t, BaseScores> base_scores_;  // by shape (Scan)
  struct Group {
    const TaskInfo* rep = nullptr;
    std::vector<Entry> heap;
    std::vector<int> future;  // nodes where only FutureIdle fits (pipeline candidates)
    // By node slot: the rep's static predicates pass and the slot is allowed. Only these may enter the heap
    // when another placement changes a node (Push): a node the shape may never use must stay out.
    std::vector<char> eligible;
    // By node slot: the rep fits now (Evaluate), kept current by Build and Push; with `fit_count`, the
    // candidate set a sparse batch score is computed over (PlaceSparse).
    std::vector<char> fits;
    size_t fit_count = 0;
    void SetFits(int slot, bool f) {
      char& v = fits[static_cast<size_t>(slot)];
      if (v == static_cast<char>(f)) return;
      v = static_cast<char>(f);
      if (f) ++fit_count;
      else --fit_count;
    }
  };

  const AllocateCaches::Shape& StaticFor(const TaskInfo& t) {
    auto& sc = caches_.shapes[t.shape];
    if (sc.topology_version == st_.topology_version() && sc.topology_version != 0) return sc;
    int64_t t0 = ssn_.NowUs();
    sc = {};
    sc.topology_version = st_.topology_version();
    for (int slot : st_.CandidateNodes()) {
      Fit f = ssn_.StaticFit(t, st_.NodeAt(slot));
      if (f.ok()) sc.feasible.push_back(slot);
      else ++sc.reasons[f.Text()];
    }
    ssn_.AddPluginTime("predicates", ssn_.NowUs() - t0);
    return sc;
  }

  // Fits Idle and passes dynamic predicates -> score; otherwise nullopt. A task with required pod affinity
  // or topology spread keeps every node that fits it: a placement on one node can open all the nodes of its
  // domain (or, for spread, of every other domain, when it lifts the minimum), which the heap would never
  // revisit, so its dynamic predicates are checked when a node comes up (PlaceTasks).
  // Statement::Allocate with the cards a node-order plugin prefers for the task there, if one has a rule.
  Status AllocateOn(Statement& stmt, const TaskInfo& t, int slot) {
    const NodeInfo& n = st_.NodeAt(slot);
    if (auto cards = ssn_.ChooseCards(t, n)) return stmt.Allocate(t.uid, n.name, &*cards);
    return stmt.Allocate(t.uid, n.name);
  }

  std::optional<double> Evaluate(const TaskInfo& t, const NodeInfo& n) const {
    if (!t.request.FitsIn(n.Idle())) return std::nullopt;
    if (t.pod_affinity.empty() && t.spread.empty() && !ssn_.DynamicFit(t, n).ok()) return std::nullopt;
    return ssn_.NodeScore(t, n);
  }

  void Build(Group& g, const std::vector<char>* allowed) {
    const auto& sc = StaticFor(*g.rep);
    int64_t t0 = ssn_.NowUs();
    g.heap.reserve(sc.feasible.size());
    g.eligible.assign(st_.node_slots(), 0);
    g.fits.assign(st_.node_slots(), 0);
    g.fit_count = 0;
    for (int slot : sc.feasible) {
      if (!Allowed(allowed, slot)) continue;
      g.eligible[static_cast<size_t>(slot)] = 1;
      const NodeInfo& n = st_.NodeAt(slot);
      if (auto score = Evaluate(*g.rep, n)) {
        g.heap.push_back({*score, caches_.rank[static_cast<size_t>(slot)], slot, n.version});
        g.SetFits(slot, true);
      } else if (g.rep->request.FitsIn(n.FutureIdle())) {
        g.future.push_back(slot);
      }
    }
    std::make_heap(g.heap.begin(), g.heap.end());
    ssn_.AddPluginTime("nodeorder+binpack(score)", ssn_.NowUs() - t0);
  }

  // Kept apart from last_reasons_ (filled once, by the first failing task's Explain) and added to it when the
  // job's message is written.
  void NoteRefusal(const Status& s) { ++refusals_["node(s) passed the predicates but could not take the pod: " + s.message()]; }

  // Failure histogram for a task that found no node within `allowed`.
  std::map<std::string, int> Explain(const TaskInfo& t, const std::vector<char>* allowed) {
    const auto& sc = StaticFor(t);
    std::map<std::string, int> reasons;
    if (!allowed && !reserve_mask_) reasons = sc.reasons;
    for (int slot : sc.feasible) {
      if (!Allowed(allowed, slot)) continue;
      const NodeInfo& n = st_.NodeAt(slot);
      std::string r = ResourceReason(st_, t, n.Idle());
      if (r.empty()) r = ssn_.DynamicFit(t, n).Text();
      if (!r.empty()) ++reasons[r];
    }
    return reasons;
  }

  // Places as many of `tasks` as possible on nodes in `allowed` (nullptr = all); unplaced tasks are
  // returned in order. Stops early when the queue refuses more (sets queue_full_).
  //
  // Heaps: when scores cannot depend on the job (no job-dependent NodeScore, no node restriction, no pod
  // affinity or anti-affinity in play), groups are keyed by shape alone and shared by every job of the cycle, so a
  // thousand identical gangs build one heap, not a thousand. Every node a statement touches (placement or
  // discard) is re-scored into all shared heaps (Touch), which keeps the lazy-invalidation invariant.
  std::vector<const TaskInfo*> PlaceTasks(const JobInfo& job, const QueueInfo& q, const std::vector<const TaskInfo*>& tasks,
                                    const std::vector<char>* allowed, Statement& stmt) {
    std::map<std::pair<uint32_t, std::string>, Group> local;
    std::set<Group*> failed;  // groups that failed during this call: nothing frees up meanwhile
    const bool may_share = allowed == nullptr && reserve_mask_ == nullptr && !ssn_.JobDependentScore(job) && st_.anti_affinity_pods() == 0 &&
                           st_.pod_affinity_pods() == 0 && st_.spread_pods() == 0;
    // A placement on one node can close other nodes of its domain (anti-affinity), or open them (affinity);
    // for topology spread it can do both.
    const bool recheck = st_.anti_affinity_pods() > 0 || st_.pod_affinity_pods() > 0 || st_.spread_pods() > 0;
    std::vector<const TaskInfo*> unplaced;
    std::vector<Entry> skipped;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const TaskInfo* t = tasks[i];
      if (queue_full_) {
        unplaced.push_back(t);
        continue;
      }
      if (!ssn_.Allocatable(q, *t)) {
        queue_full_ = true;
        if (queue_refusal_.empty()) queue_refusal_ = ssn_.ExplainAllocatable(q, *t);
        // Say what is short: node reasons when no node could take the task anyway, else the queue.
        if (last_reasons_.empty()) {
          auto reasons = Explain(*t, allowed);
          int failing = 0;
          for (const auto& [r, n] : reasons) failing += n;
          if (failing >= static_cast<int>(st_.CandidateNodes().size())) last_reasons_ = std::move(reasons);
        }
        unplaced.push_back(t);
        continue;
      }
      int placed_slot = -1;
      bool pipelined = false;
      if (ssn_.BatchScored(*t)) {
        // Scores over a whole domain, normalised over the nodes that fit: no heap holds them, unless they
        // are the same for all but a few nodes (PlaceSparse); otherwise every node is scored (Scan).
        if (!recheck && t->host_ports.empty()) {
          Group& g = may_share ? shared_[t->shape] : local[{t->shape, t->role}];
          if (!g.rep) {
            g.rep = t;
            Build(g, allowed);
          }
          placed_slot = PlaceSparse(g, *t);
        }
        if (placed_slot < 0) placed_slot = Scan(*t, allowed, may_share, &pipelined);
        if (placed_slot < 0) {
          if (last_reasons_.empty()) last_reasons_ = Explain(*t, allowed);
          unplaced.push_back(t);
          continue;
        }
        if (Status s = pipelined ? stmt.Pipeline(t->uid, st_.NodeAt(placed_slot).name)
                                 : AllocateOn(stmt, *t, placed_slot);
            !s.ok()) {
          NoteRefusal(s);
          unplaced.push_back(t);
          continue;
        }
        for (auto& [k, g2] : local) Push(g2, placed_slot);
        Touch(placed_slot);
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
      skipped.clear();
      while (auto current = PopCurrent(g, *t)) {
        const Entry top = *current;
        const NodeInfo& n = st_.NodeAt(top.slot);
        // The rep passed, this task may not: pod (anti-)affinity, or host ports (a group's rep, once placed on N,
        // does not conflict with itself, so N comes back for its group; the next task of the same shape
        // would take the same port on N).
        if ((recheck || !t->host_ports.empty()) && !ssn_.DynamicFit(*t, n).ok()) {
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
          if (t->request.FitsIn(n.FutureIdle()) && ssn_.DynamicFit(*t, n).ok()) {
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
      Status s = pipelined ? stmt.Pipeline(t->uid, node) : AllocateOn(stmt, *t, placed_slot);
      if (!s.ok()) {
        // The node passed every check and the statement still refused it (cards the ring rule or shares
        // cannot give, a volume taken): say so, or the gang's reason names every node but the one it tried.
        NoteRefusal(s);
        unplaced.push_back(t);
        continue;
      }
      // Re-score the changed node in every heap that may hold it.
      for (auto& [k, g2] : local) Push(g2, placed_slot);
      Touch(placed_slot);
    }
    return unplaced;
  }

  // The best node for a batch-scored task whose batch score has a sparse form (Plugin::SparseBatchNodeScore)
  // over the group's candidates (the nodes its rep fits now): the best of the listed nodes, each scored,
  // against the group's heap top among the rest, which all get the same batch score. Scan's choice exactly,
  // ties to the node order included; -1 when there is no sparse form or no candidate (Scan then decides,
  // pipelining included). Needs what the group's heap needs: no recheck, no host ports.
  int PlaceSparse(Group& g, const TaskInfo& t) {
    if (g.fit_count == 0) return -1;
    const int64_t t0 = ssn_.NowUs();
    auto sparse = ssn_.SparseBatchNodeScore(t, g.fit_count, [&g](int slot) {
      return slot >= 0 && static_cast<size_t>(slot) < g.fits.size() && g.fits[static_cast<size_t>(slot)];
    });
    if (!sparse) return -1;
    auto better = [&](double score, int slot, double best_score, int best_slot) {
      return best_slot < 0 || score > best_score ||
             (score == best_score && caches_.rank[static_cast<size_t>(slot)] < caches_.rank[static_cast<size_t>(best_slot)]);
    };
    int best = -1;
    double best_score = 0;
    std::vector<int> listed;
    listed.reserve(sparse->exceptions.size());
    for (const auto& [slot, batch] : sparse->exceptions) {
      listed.push_back(slot);
      const double score = ssn_.NodeScore(t, st_.NodeAt(slot)) + batch;
      if (better(score, slot, best_score, best)) {
        best = slot;
        best_score = score;
      }
    }
    std::sort(listed.begin(), listed.end());
    // The heap's best node that is not listed (stale entries re-scored, as PlaceTasks does).
    std::vector<Entry> skipped;
    while (auto current = PopCurrent(g, t)) {
      const Entry top = *current;
      skipped.push_back(top);
      if (std::binary_search(listed.begin(), listed.end(), top.slot)) continue;
      const double score = top.score + sparse->uniform;
      if (better(score, top.slot, best_score, best)) best = top.slot;
      break;
    }
    for (const Entry& e : skipped) {
      g.heap.push_back(e);
      std::push_heap(g.heap.begin(), g.heap.end());
    }
    ssn_.AddPluginTime("nodeorder+binpack(score)", ssn_.NowUs() - t0);
    return best;
  }

  // The best node for `t` among every node it may use, scored as a whole (NodeScore plus the batch scores
  // normalised over the nodes that fit now); ties go to the node order. A task that fits nowhere now may be
  // pipelined onto the first node whose releasing pods would make room. -1 when neither.
  // `shared`: the task's node scores do not depend on its job (PlaceTasks' may_share), so its shape's base
  // scores are kept per node version and reused by the next task of the shape: a gang's consecutive tasks
  // change one node per placement, and only that node is scored again.
  int Scan(const TaskInfo& t, const std::vector<char>* allowed, bool shared, bool* pipelined) {
    const auto& sc = StaticFor(t);
    const int64_t t0 = ssn_.NowUs();
    scan_slots_.clear();
    scan_scores_.clear();
    BaseScores* base = nullptr;
    if (shared && t.shape != 0) {
      base = &base_scores_[t.shape];
      base->score.resize(st_.node_slots());
      base->version.resize(st_.node_slots(), 0);
    }
    for (int slot : sc.feasible) {
      if (!Allowed(allowed, slot)) continue;
      const NodeInfo& n = st_.NodeAt(slot);
      if (!t.request.FitsIn(n.Idle()) || !ssn_.DynamicFit(t, n).ok()) continue;
      scan_slots_.push_back(slot);
      if (!base) {
        scan_scores_.push_back(ssn_.NodeScore(t, n));
        continue;
      }
      const auto i = static_cast<size_t>(slot);
      if (base->version[i] != n.version + 1) {  // + 1: 0 means never scored
        base->score[i] = ssn_.NodeScore(t, n);
        base->version[i] = n.version + 1;
      }
      scan_scores_.push_back(base->score[i]);
    }
    int best = -1;
    if (!scan_slots_.empty()) {
      ssn_.BatchNodeScore(t, scan_slots_, scan_scores_);
      for (size_t i = 0; i < scan_slots_.size(); ++i)
        if (best < 0 || scan_scores_[i] > scan_scores_[static_cast<size_t>(best)] ||
            (scan_scores_[i] == scan_scores_[static_cast<size_t>(best)] &&
             caches_.rank[static_cast<size_t>(scan_slots_[i])] < caches_.rank[static_cast<size_t>(scan_slots_[static_cast<size_t>(best)])]))
          best = static_cast<int>(i);
    }
    ssn_.AddPluginTime("nodeorder+binpack(score)", ssn_.NowUs() - t0);
    *pipelined = false;
    if (best >= 0) return scan_slots_[static_cast<size_t>(best)];
    for (int slot : sc.feasible) {
      if (!Allowed(allowed, slot)) continue;
      const NodeInfo& n = st_.NodeAt(slot);
      if (t.request.FitsIn(n.FutureIdle()) && ssn_.DynamicFit(t, n).ok()) {
        *pipelined = true;
        return slot;
      }
    }
    return -1;
  }

  // Pops the group's best entry whose node has not changed since it was scored; a changed node met on the
  // way is scored again for `t` and pushed back (or kept as a pipeline candidate). nullopt: heap empty.
  std::optional<Entry> PopCurrent(Group& g, const TaskInfo& t) {
    while (!g.heap.empty()) {
      Entry top = g.heap.front();
      std::pop_heap(g.heap.begin(), g.heap.end());
      g.heap.pop_back();
      const NodeInfo& n = st_.NodeAt(top.slot);
      if (top.version == n.version) return top;
      if (auto score = Evaluate(t, n)) {
        g.heap.push_back({*score, top.rank, top.slot, n.version});
        std::push_heap(g.heap.begin(), g.heap.end());
      } else if (t.request.FitsIn(n.FutureIdle())) {
        g.future.push_back(top.slot);
      }
    }
    return std::nullopt;
  }

  void Push(Group& g, int slot) {
    if (!g.rep || slot < 0 || static_cast<size_t>(slot) >= g.eligible.size() || !g.eligible[static_cast<size_t>(slot)])
      return;
    const NodeInfo& n = st_.NodeAt(slot);
    if (auto score = Evaluate(*g.rep, n)) {
      g.heap.push_back({*score, caches_.rank[static_cast<size_t>(slot)], slot, n.version});
      std::push_heap(g.heap.begin(), g.heap.end());
      g.SetFits(slot, true);
      return;
    }
    g.SetFits(slot, false);
    if (g.rep->request.FitsIn(n.FutureIdle())) g.future.push_back(slot);
  }
  void Touch(int slot) {
    for (auto& [shape, g] : shared_) Push(g, slot);
  }
  // Discard that keeps the shared heaps truthful: restored nodes may score higher than their entries.
  void Discard(Statement& stmt) { DiscardFrom(stmt, 0); }
  // The same for the entries from `mark` on (one sub-group's part of the attempt).
  void DiscardFrom(Statement& stmt, size_t mark) {
    std::vector<int> slots;
    const auto& entries = stmt.entries();
    for (size_t i = mark; i < entries.size(); ++i) slots.push_back(st_.NodeIndex(entries[i].node));
    stmt.DiscardFrom(mark);
    std::sort(slots.begin(), slots.end());
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (int slot : slots)
      if (slot >= 0) Touch(slot);
  }

  // Splits `domain` (node slots, name order) into leaf groups and fills them largest-idle first, so a
  // gang that needs several leaves uses as few as possible.
  std::vector<const TaskInfo*> PlaceLeafGreedy(const JobInfo& job, const QueueInfo& q, std::vector<const TaskInfo*> tasks,
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
    std::vector<char> allowed(st_.node_slots(), 0);
    for (const auto& [negidle, name] : order) {
      if (tasks.empty() || queue_full_) break;
      std::fill(allowed.begin(), allowed.end(), 0);
      for (int slot : leaves[name]) allowed[static_cast<size_t>(slot)] = 1;
      tasks = PlaceTasks(job, q, tasks, &allowed, stmt);
    }
    return tasks;
  }

  void AllocateJob(const JobInfo& job, const QueueInfo& q) {
    ++ssn_.result().metrics.jobs_considered;
    std::vector<const TaskInfo*> tasks;
    // Pods that request a resource no node offers (resource.h, kUnoffered) fit no node: they are set aside
    // (no queue check, no node scan) and only named in the explanation; the rest of the gang goes on.
    std::set<std::string> unoffered_names;
    int unoffered = 0;
    st_.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
      if (t.status != TaskStatus::kPending || t.scheduling_gated || t.best_effort) return;
      if (t.request.Get(kUnoffered) > 0) {
        ++unoffered;
        unoffered_names.insert(t.unoffered.begin(), t.unoffered.end());
      } else {
        tasks.push_back(&t);
      }
    });
    if (tasks.empty() && unoffered == 0) return;
    queue_full_ = false;
    queue_refusal_ = {};
    last_reasons_.clear();
    refusals_.clear();
    auto& m = ssn_.result().metrics;
    // Retry of a gang that failed before: if the whole cluster's future-idle cannot hold the gang's
    // missing minimum (lower bound: per-dimension smallest request x missing tasks), or its queue refuses
    // a task, it fails again without sorting or touching nodes, keeping its previous explanation.
    auto& memo = job.sched;
    if (memo.failed && !memo.message.empty() && !tasks.empty()) {
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
        memo.failed_cycle = ssn_.cycle();
        if (reserving_) Reserve(job, q);
        return;
      }
    }
    std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return ssn_.TaskLess(*a, *b); });
    Statement stmt(&st_);
    std::vector<const TaskInfo*> unplaced;
    std::string topo_error;
    const auto& view = ssn_.hypernodes();
    // Reservations of the gangs ahead of this job: it may use a node they hold capacity on only where it
    // leaves that capacity alone or ends before they start (docs/reservations.md).
    std::vector<char> mask;
    const std::optional<WallTime> end = plan_ ? plan_->EndOf(job) : std::nullopt;
    reserve_mask_ = nullptr;
    if (plan_ && plan_->has_reservations() && !tasks.empty()) {
      Resource smallest = tasks[0]->request;
      for (const TaskInfo* t : tasks) smallest = smallest.Min(t->request);
      mask.assign(st_.node_slots(), 1);
      bool any = false;
      for (int slot : st_.CandidateNodes())
        if (!plan_->Admits(slot, smallest, end)) mask[static_cast<size_t>(slot)] = 0, any = true;
      if (any) reserve_mask_ = &mask;
    }
    auto place = [&] {
      sub_group_error_.clear();
      queue_full_ = false;
      if (job.network_topology.mode != TopologyMode::kNone && !view.empty()) {
        unplaced = PlaceWithTopology(job, q, tasks, stmt, &topo_error);
      } else if (!job.sub_group_policies.empty()) {
        unplaced = PlaceSubGroups(job, q, tasks, nullptr, stmt);
      } else if (const std::vector<int>* leaf = GangLeaf(job, view)) {
        // A gang that lost pods (a fault, an eviction) and whose placed pods all share one leaf: its
        // replacements try that leaf first, then the whole cluster (docs/faults.md, "In the same domain"). A
        // job with networkTopology has this as a rule; one without gets it as a preference.
        unplaced = PlaceIn(job, q, tasks, leaf, stmt);
        if (!ssn_.JobReady(job) && !ssn_.JobPipelined(job)) {
          Discard(stmt);
          queue_full_ = false;
          unplaced = PlaceTasks(job, q, tasks, nullptr, stmt);
        }
      } else {
        unplaced = PlaceTasks(job, q, tasks, nullptr, stmt);
      }
    };
    if (!tasks.empty()) place();
    // The mask admits a node for the job's smallest pod; several pods on one node may together take what a
    // reservation holds. Such nodes are closed to the job and it is placed once more.
    // Closes the nodes where the statement takes more than the reservations leave; true if there were any.
    auto close_overtaken = [&] {
      std::map<int, Resource> took;
      for (const auto& e : stmt.entries()) took[st_.NodeIndex(e.node)] += st_.FindTask(e.task_uid)->request;
      bool over = false;
      for (const auto& [slot, r] : took)
        if (slot >= 0 && !plan_->Admits(slot, r, end)) mask[static_cast<size_t>(slot)] = 0, over = true;
      return over;
    };
    if (reserve_mask_ && !stmt.empty() && close_overtaken()) {
      Discard(stmt);
      place();
      if (!stmt.empty() && close_overtaken()) {
        Discard(stmt);
        topo_error = "the capacity it fits in is reserved for gangs ahead of it in the queue order";
      }
    }
    reserve_mask_ = nullptr;
    if (ssn_.JobReady(job)) {
      if (plan_) {
        std::vector<const TaskInfo*> placed;
        for (const auto& e : stmt.entries()) {
          const TaskInfo* t = st_.FindTask(e.task_uid);
          placed.push_back(t);
          plan_->Take(st_.NodeIndex(e.node), t->request, end);
        }
        plan_->Placed(job, placed);
      }
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
    int unsched = static_cast<int>(unplaced.size()) + unoffered;
    for (const auto& [r, n] : refusals_) last_reasons_[r] += n;
    if (unoffered > 0) {
      // Every node fails these pods for the same reason, as kube-scheduler counts "Insufficient <name>".
      last_reasons_["node(s) had insufficient " +
                    UnofferedText(std::vector<std::string>(unoffered_names.begin(), unoffered_names.end()))] +=
          static_cast<int>(st_.CandidateNodes().size());
    }
    std::string msg = !topo_error.empty()       ? topo_error
                      : !sub_group_error_.empty() ? sub_group_error_
                                                  : FormatReasons(last_reasons_);
    if (queue_full_ && msg.empty()) {
      // The queue, not the nodes, is the limit: its own reason, with Volcano's count prefix in the message.
      msg = std::to_string(unsched) + "/" + std::to_string(job.TotalTasks()) + " tasks in gang unschedulable: " +
            (queue_refusal_.empty() ? "queue " + q.name + " resource quota insufficient" : queue_refusal_.message);
      unsched = -1;
      msg = (queue_refusal_.empty() ? std::string("OverDeserved") : queue_refusal_.reason) + "\n" + msg;
    } else {
      msg += Shortage(job, stmt, tasks);
    }
    ssn_.RecordFitErrors(job.key, unsched, msg);
    ++m.schedule_attempts["unschedulable"];
    if (pipelined) {
      // Hold the placements (and the resources) until the session closes; nothing is bound.
      auto entries = stmt.Release();
      for (const auto& e : entries) cluster_idle_ -= st_.FindTask(e.task_uid)->request;
      ssn_.pipelined().insert(ssn_.pipelined().end(), entries.begin(), entries.end());
      return;
    }
    // Discarding restores the job's version too (the job is exactly as it was), which keeps
    // preempt/reclaim's memo of this job (keyed by version) valid, so a periodic allocate retry does not
    // trigger a victim search every time.
    Discard(stmt);
    job.sched.failed = true;
    job.sched.failed_version = job.version;
    job.sched.failed_epoch = st_.capacity_epoch();
    job.sched.failed_cycle = ssn_.cycle();
    job.sched.unschedulable = unsched;
    job.sched.message = msg;
    if (reserving_) Reserve(job, q);
  }

  int MaxTier(const NetworkTopology& nt) const { return MaxTierFor(nt, ssn_.hypernodes()); }

  // docs/volcano-behaviour.md, "Network-topology ordering": the HyperNodes a gang (a job, or one of its
  // sub-groups) may be tried in, in order: tier <= `max_tier`, smallest tier first, within a tier the best
  // HyperNodeOrder score first; only those whose future idle can hold `need` and that contain the nodes the
  // gang already occupies (`existing`). Each is given to `fn` as its node slots (name order), cut to `within`
  // (the job's HyperNode, for a sub-group; null = no cut; a cut equal to `within` itself is offered once);
  // `fn` returns true to stop.
  template <typename Fn>
  void ForEachHyperNode(const JobInfo& job, int max_tier, const Resource& need, const std::set<int>& existing,
                        const std::vector<int>* within, Fn&& fn) {
    const auto& view = ssn_.hypernodes();
    auto by_name = [&](int a, int b) { return st_.NodeAt(a).name < st_.NodeAt(b).name; };
    bool whole_within_offered = false;
    std::vector<int> cut;
    for (const auto& [tier, names] : view.by_tier) {
      if (tier > max_tier) break;
      std::vector<std::tuple<double, std::string, std::vector<int>>> cands;
      for (const auto& name : names) {
        const auto& e = view.entries.at(name);
        const std::vector<int>* nodes = &e.nodes;
        if (within) {
          cut.clear();
          std::set_intersection(e.nodes.begin(), e.nodes.end(), within->begin(), within->end(), std::back_inserter(cut), by_name);
          if (cut.empty()) continue;
          if (cut.size() == within->size()) {
            if (whole_within_offered) continue;
            whole_within_offered = true;
          }
          nodes = &cut;
        }
        Resource idle;
        for (int slot : *nodes) idle += st_.NodeAt(slot).FutureIdle().ClampZero();
        if (!need.FitsIn(idle)) continue;
        bool has_all = true;
        for (int x : existing)
          if (!std::binary_search(nodes->begin(), nodes->end(), x, by_name)) {
            has_all = false;
            break;
          }
        if (!has_all) continue;
        cands.emplace_back(-ssn_.HyperNodeScore(job, name), name, *nodes);
      }
      std::sort(cands.begin(), cands.end());
      for (const auto& [negscore, name, nodes] : cands)
        if (fn(nodes)) return;
    }
  }

  // The nodes of the one leaf HyperNode that holds every placed pod of `job`; null when none is placed yet,
  // they span leaves or a node in no leaf, or there are no HyperNodes.
  const std::vector<int>* GangLeaf(const JobInfo& job, const HyperNodeView& view) {
    if (view.empty() || job.ReadyCount() == 0) return nullptr;
    const std::string* leaf = nullptr;
    bool mixed = false;
    st_.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
      if (mixed || !OccupiesNode(t.status) || t.node.empty()) return;
      auto it = view.leaf_of_node.find(st_.NodeIndex(t.node));
      if (it == view.leaf_of_node.end()) mixed = true;
      else if (!leaf) leaf = &it->second;
      else if (*leaf != it->second) mixed = true;
    });
    if (mixed || !leaf) return nullptr;
    auto e = view.entries.find(*leaf);
    return e == view.entries.end() ? nullptr : &e->second.nodes;
  }

  // The first HyperNode where the gang becomes ready (or pipelined) wins: equivalent to scoring all dry runs
  // when the score ranks HyperNodes before trying them. Soft mode falls back to the whole cluster, still
  // leaf-greedy.
  std::vector<const TaskInfo*> PlaceWithTopology(const JobInfo& job, const QueueInfo& q, const std::vector<const TaskInfo*>& tasks,
                                           Statement& stmt, std::string* error) {
    const int max_tier = MaxTier(job.network_topology);
    // Nodes the job already occupies: the chosen HyperNode must contain them.
    std::set<int> existing;
    st_.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
      if (OccupiesNode(t.status) && !t.node.empty()) {
        int idx = st_.NodeIndex(t.node);
        if (idx >= 0) existing.insert(idx);
      }
    });
    int need_n = std::max(0, job.min_member - job.ReadyCount());
    Resource need;
    for (size_t i = 0; i < tasks.size() && static_cast<int>(i) < need_n; ++i) need += tasks[i]->request;
    std::vector<const TaskInfo*> rest;
    bool placed = false;
    ForEachHyperNode(job, max_tier, need, existing, nullptr, [&](const std::vector<int>& nodes) {
      queue_full_ = false;
      sub_group_error_.clear();
      rest = PlaceIn(job, q, tasks, &nodes, stmt);
      if (ssn_.JobReady(job) || ssn_.JobPipelined(job)) return placed = true;
      Discard(stmt);
      return false;
    });
    if (placed) return rest;
    if (job.network_topology.mode == TopologyMode::kHard) {
      *error = "no HyperNode with tier <= " + std::to_string(max_tier) + " can hold the gang";
      return tasks;
    }
    sub_group_error_.clear();
    return PlaceIn(job, q, tasks, &st_.CandidateNodes(), stmt);
  }

  // Places `tasks` within `domain` (node slots, name order): leaf-greedy, or sub-group by sub-group when the
  // job has a subGroupPolicy.
  std::vector<const TaskInfo*> PlaceIn(const JobInfo& job, const QueueInfo& q, const std::vector<const TaskInfo*>& tasks,
                                       const std::vector<int>* domain, Statement& stmt) {
    if (!job.sub_group_policies.empty()) return PlaceSubGroups(job, q, tasks, domain, stmt);
    return PlaceLeafGreedy(job, q, tasks, *domain, stmt);
  }

  // docs/scheduler.md, "Sub-groups": Volcano's allocate for a job with subGroupPolicy. The sub-groups not
  // ready yet go first, the ones its policies' minSubGroups still need before the others; each sub-group is
  // placed whole (inside one HyperNode of its policy's tier when it has a network topology) and kept only if
  // it becomes ready or pipelined, so no sub-group is left half-placed. `domain`: the job's HyperNode (null =
  // every node). Returns the tasks left pending.
  std::vector<const TaskInfo*> PlaceSubGroups(const JobInfo& job, const QueueInfo& q, const std::vector<const TaskInfo*>& tasks,
                                              const std::vector<int>* domain, Statement& stmt) {
    struct Group {
      ClusterState::SubGroupTally tally;
      std::vector<const TaskInfo*> tasks;  // pending, in task order
      std::set<int> existing;              // nodes its placed tasks occupy
      bool required = false;
    };
    std::map<std::pair<int, std::string>, Group> groups;
    for (auto& t : st_.SubGroupsOf(job)) groups[{t.policy, t.id}].tally = std::move(t);
    std::string id;
    for (const TaskInfo* t : tasks) {
      int p = job.SubGroupOf(*t, &id);
      groups[{p, id}].tasks.push_back(t);
    }
    st_.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
      if (!OccupiesNode(t.status) || t.node.empty()) return;
      int p = job.SubGroupOf(t, &id);
      int idx = st_.NodeIndex(t.node);
      if (idx >= 0) groups[{p, id}].existing.insert(idx);
    });
    auto size_of = [&](const Group& g) {
      return g.tally.policy < 0 ? 1 : job.sub_group_policies[static_cast<size_t>(g.tally.policy)].size;
    };
    std::vector<Group*> order;
    std::vector<int> ready_groups(job.sub_group_policies.size(), 0);
    for (auto& [key, g] : groups) {
      if (g.tally.policy >= 0 && g.tally.ready >= size_of(g)) ++ready_groups[static_cast<size_t>(g.tally.policy)];
      if (!g.tasks.empty()) order.push_back(&g);
    }
    // Volcano's sub-job order: not ready first, then the higher priority, the smaller first match value, the id
    // (the default group's id sorts first).
    std::stable_sort(order.begin(), order.end(), [&](const Group* a, const Group* b) {
      bool ra = a->tally.ready >= size_of(*a), rb = b->tally.ready >= size_of(*b);
      if (ra != rb) return !ra;
      if (a->tally.priority != b->tally.priority) return a->tally.priority > b->tally.priority;
      if (a->tally.match_index != b->tally.match_index) return a->tally.match_index < b->tally.match_index;
      return false;  // the map's order: policy, then id
    });
    for (Group* g : order) {
      if (g->tally.policy < 0 || g->tally.ready >= size_of(*g)) continue;
      auto& have = ready_groups[static_cast<size_t>(g->tally.policy)];
      if (have < job.sub_group_policies[static_cast<size_t>(g->tally.policy)].min_groups) {
        g->required = true;
        ++have;
      }
    }
    std::stable_partition(order.begin(), order.end(), [](const Group* g) { return g->required; });

    const auto& view = ssn_.hypernodes();
    for (Group* g : order) {
      const size_t mark = stmt.entries().size();
      const int size = size_of(*g);
      const bool was_ready = g->tally.ready >= size;
      auto met = [&] {
        int ready = g->tally.ready, pipelined = g->tally.pipelined;
        for (const TaskInfo* t : g->tasks) {
          ready += t->status == TaskStatus::kAllocated;
          pipelined += t->status == TaskStatus::kPipelined;
        }
        return ready >= size || ready + pipelined >= size;
      };
      const SubGroupPolicy* policy = g->tally.policy < 0 ? nullptr : &job.sub_group_policies[static_cast<size_t>(g->tally.policy)];
      const TopologyMode mode = policy && !view.empty() ? policy->network_topology.mode : TopologyMode::kNone;
      if (mode != TopologyMode::kNone) {
        const int max_tier = MaxTier(policy->network_topology);
        Resource need;
        int need_n = std::max(0, size - g->tally.ready - g->tally.pipelined);
        for (size_t i = 0; i < g->tasks.size() && static_cast<int>(i) < need_n; ++i) need += g->tasks[i]->request;
        bool placed = false;
        ForEachHyperNode(job, max_tier, need, g->existing, domain, [&](const std::vector<int>& nodes) {
          PlaceLeafGreedy(job, q, g->tasks, nodes, stmt);
          if (met() && (!was_ready || stmt.entries().size() > mark)) return placed = true;
          DiscardFrom(stmt, mark);
          return false;
        });
        if (!placed && mode == TopologyMode::kSoft) {
          PlaceLeafGreedy(job, q, g->tasks, domain ? *domain : st_.CandidateNodes(), stmt);
        } else if (!placed && !was_ready && sub_group_error_.empty()) {
          sub_group_error_ = "subGroup " + policy->name + " " + g->tally.id + ": no HyperNode with tier <= " +
                             std::to_string(max_tier) + " can hold its " + std::to_string(size) + " pod(s)";
        }
      } else if (domain) {
        PlaceLeafGreedy(job, q, g->tasks, *domain, stmt);
      } else {
        PlaceTasks(job, q, g->tasks, nullptr, stmt);
      }
      // Volcano keeps a sub-job's placements only when it is ready or pipelined.
      if (!met()) DiscardFrom(stmt, mark);
    }
    std::vector<const TaskInfo*> unplaced;
    for (const TaskInfo* t : tasks)
      if (t->status == TaskStatus::kPending) unplaced.push_back(t);
    return unplaced;
  }

  // "; short by ..." for a gang that failed: what its missing minimum needs against what the whole cluster has
  // free (or being freed). When nothing is short in total, the pods fail on nodes one by one
  // (fragmentation, predicates), which the per-node reasons before this already say.
  std::string Shortage(const JobInfo& job, const Statement& stmt, const std::vector<const TaskInfo*>& sorted) {
    int missing = job.min_member - job.ReadyCount() - job.Count(TaskStatus::kPipelined);
    // Placements of this attempt still sit in the statement (not yet discarded): they are not "free".
    Resource idle = ClusterIdle();
    for (const auto& e : stmt.entries()) idle -= st_.FindTask(e.task_uid)->request;
    Resource need;
    int counted = 0;
    for (const TaskInfo* t : sorted) {
      if (counted >= missing) break;
      need += t->request;
      ++counted;
    }
    if (counted == 0) return {};
    idle = idle.ClampZero();
    Resource short_by = Shortfall(need, idle);
    const auto& fmt = st_.resources();
    if (short_by.IsZero()) {
      return "; the cluster has enough free in total (" + fmt.FormatDims(idle, need) + ") for the " +
             std::to_string(counted) + " pod(s) the gang still needs (" + fmt.Format(need) +
             "), but no node that fits them";
    }
    return "; short by " + fmt.Format(short_by) + ": the gang still needs " + std::to_string(counted) +
           " pod(s) (" + fmt.Format(need) + ") and the cluster has " +
           fmt.FormatDims(idle, need) + " free";
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

  AllocateCaches& caches_;
  Session& ssn_;
  Resource cluster_idle_;
  bool cluster_idle_valid_ = false;
  std::map<uint32_t, Group> shared_;
  std::vector<int> scan_slots_;  // Scan's scratch, reused across tasks
  std::vector<double> scan_scores_;
  ClusterState& st_;
  bool queue_full_ = false;
  std::string sub_group_error_;  // the first sub-group no HyperNode could hold (this job)
  Refusal queue_refusal_;  // why the queue refused this job's first refused pod
  std::map<std::string, int> last_reasons_;
  std::map<std::string, int> refusals_;  // placements the statement refused (NoteRefusal), this job
  std::map<std::string, ValidateResult> invalid_;

 public:
  std::map<std::string, ValidateResult> TakeInvalid() { return std::move(invalid_); }
};

namespace {

class Allocate final : public Action {
 public:
  std::string_view Name() const override { return "allocate"; }
  void Execute(Session& ssn) override {
    Allocator a(caches_, ssn);
    a.Run();
    for (auto& [k, v] : a.TakeInvalid()) ssn.RecordFitErrors(k, -1, v.reason + "\n" + v.message);
  }

 private:
  AllocateCaches caches_;
};

}  // namespace

Made NewAllocate(const ActionConfiguration&) { return std::unique_ptr<Action>(std::make_unique<Allocate>()); }

}  // namespace tephra::sched::actions
