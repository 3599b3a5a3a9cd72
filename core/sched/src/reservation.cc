// The reservation planner (docs/reservations.md): a forward walk over the expected ends of running pods.
#include "tephra/sched/reservation.h"

#include <algorithm>
#include <map>

namespace tephra::sched {

std::chrono::seconds EffectiveEstimate(const JobInfo& job, const QueueInfo* queue) {
  std::chrono::seconds est = job.running_estimate;
  if (queue) {
    if (est.count() <= 0) est = queue->default_running_estimate;
    if (queue->max_running_estimate.count() > 0 && est > queue->max_running_estimate) est = queue->max_running_estimate;
  }
  return est.count() > 0 ? est : std::chrono::seconds{0};
}

int MaxTierFor(const NetworkTopology& nt, const HyperNodeView& view) {
  int max_tier = view.by_tier.empty() ? 0 : view.by_tier.rbegin()->first;
  if (!nt.highest_tier_name.empty()) {
    auto it = view.tier_of_name.find(nt.highest_tier_name);
    if (it != view.tier_of_name.end()) max_tier = it->second;
  } else if (nt.highest_tier_allowed > 0) {
    max_tier = nt.highest_tier_allowed;
  }
  return max_tier;
}

std::vector<const TaskInfo*> MissingMembers(const ClusterState& st, const JobInfo& job,
                                            const std::function<bool(const TaskInfo&, const TaskInfo&)>& less) {
  std::vector<const TaskInfo*> tasks;
  const int need = job.min_member - job.ReadyCount() - job.Count(TaskStatus::kPipelined);
  if (need <= 0) return tasks;
  st.ForEachTaskOfJob(job.key, [&](const TaskInfo& t) {
    if (t.status == TaskStatus::kPending && !t.scheduling_gated && !t.best_effort) tasks.push_back(&t);
  });
  std::sort(tasks.begin(), tasks.end(), [&](const TaskInfo* a, const TaskInfo* b) { return less(*a, *b); });
  if (static_cast<int>(tasks.size()) > need) tasks.resize(static_cast<size_t>(need));
  return tasks;
}

namespace {

// How many `req` fit in `avail` (every requested dimension); `req` is never best-effort here, but a request
// of nothing fits any number of times, capped so callers can add it up.
int64_t FitCount(const Resource& req, const Resource& avail) {
  int64_t n = 1 << 20;
  for (int d = 0; d < kMaxResources; ++d) {
    const int64_t r = req.Get(d);
    if (r <= 0) continue;
    const int64_t a = avail.Get(d);
    if (a < r) return 0;
    n = std::min(n, a / r);
  }
  return n;
}

Resource Times(const Resource& r, int64_t k) {
  Resource out;
  for (int d = 0; d < kMaxResources; ++d) out.Set(d, r.Get(d) * k);
  return out;
}

}  // namespace

ReservationPlanner::ReservationPlanner(const ClusterState& st, WallTime now, FeasibleFn feasible)
    : st_(st), now_(now), feasible_(std::move(feasible)) {
  const size_t n = st_.node_slots();
  hold_.assign(n, Resource());
  spare_.assign(n, Resource::Unlimited());
  first_start_.assign(n, WallTime::max());
  reserved_.assign(n, 0);
  st_.ForEachTask([&](const TaskInfo& t) {
    if (!OccupiesNode(t.status) || t.node.empty()) return;
    const int slot = st_.NodeIndex(t.node);
    if (slot < 0) return;
    WallTime end = now_;
    if (t.status != TaskStatus::kReleasing) {
      const JobInfo* j = t.job.empty() ? nullptr : st_.FindJob(t.job);
      const auto est = j ? EffectiveEstimate(*j, st_.FindQueue(j->queue)) : std::chrono::seconds{0};
      if (est.count() <= 0) return;  // never expected to free its node
      const WallTime start = t.start_time == WallTime{} ? now_ : t.start_time;
      // A pod past its estimate is expected to end now: it is overdue, not endless.
      end = std::max(start + est, now_);
    }
    releases_.push_back({end, slot, t.request});
  });
  std::sort(releases_.begin(), releases_.end());
}

void ReservationPlanner::AddRelease(Release r) {
  releases_.insert(std::upper_bound(releases_.begin(), releases_.end(), r), std::move(r));
}

std::optional<WallTime> ReservationPlanner::EndOf(const JobInfo& job) const {
  const auto est = EffectiveEstimate(job, st_.FindQueue(job.queue));
  if (est.count() <= 0) return std::nullopt;
  return now_ + est;
}

bool ReservationPlanner::Fits(const std::vector<Class>& classes, const std::vector<int>& nodes,
                              std::vector<Resource>& scratch, std::vector<std::pair<int, Resource>>* amounts) const {
  std::map<int, Resource> took;
  for (const Class& c : classes) {
    int remaining = c.count;
    const Resource& req = c.rep->request;
    for (int slot : nodes) {
      if (!c.allowed[static_cast<size_t>(slot)]) continue;
      const int64_t k = std::min<int64_t>(FitCount(req, scratch[static_cast<size_t>(slot)]), remaining);
      if (k <= 0) continue;
      const Resource used = Times(req, k);
      scratch[static_cast<size_t>(slot)] -= used;
      took[slot] += used;
      remaining -= static_cast<int>(k);
      if (remaining == 0) break;
    }
    if (remaining > 0) return false;
  }
  amounts->assign(took.begin(), took.end());
  return true;
}

std::optional<ReservationPlanner::Found> ReservationPlanner::Earliest(const JobInfo& job,
                                                                       const std::vector<const TaskInfo*>& tasks,
                                                                       bool with_holds, const Domain& domain,
                                                                       std::string* why) {
  if (tasks.empty()) {
    *why = "it has no pods left to place";
    return std::nullopt;
  }
  // Classes of identical requests, the most demanding first (each class is placed greedily in turn).
  std::vector<Class> classes;
  std::map<uint32_t, size_t> by_shape;
  Resource need;
  for (const TaskInfo* t : tasks) {
    need += t->request;
    auto [it, fresh] = by_shape.emplace(t->shape, classes.size());
    if (fresh) classes.push_back({t, 0, &feasible_(*t), {}});
    ++classes[it->second].count;
  }
  const Resource total = st_.TotalAllocatable();
  auto weight = [&](const Resource& r) {
    double w = 0;
    for (int d = 0; d < kMaxResources; ++d)
      if (d != kPods && r.Get(d) > 0) w += static_cast<double>(r.Get(d)) / std::max<double>(1, static_cast<double>(total.Get(d)));
    return w;
  };
  std::stable_sort(classes.begin(), classes.end(),
                   [&](const Class& a, const Class& b) { return weight(a.rep->request) > weight(b.rep->request); });

  // The nodes any class may use; the walk keeps their free capacity and its sum.
  const size_t n = st_.node_slots();
  std::vector<char> usable(n, 0);
  for (Class& c : classes) {
    c.allowed.assign(n, 0);
    for (int slot : *c.feasible) usable[static_cast<size_t>(slot)] = c.allowed[static_cast<size_t>(slot)] = 1;
  }
  std::vector<Resource> free(n);
  Resource sum;
  Resource capacity;  // what the usable nodes hold in all, for the message when the gang can never fit
  for (int slot : st_.CandidateNodes()) {
    const auto i = static_cast<size_t>(slot);
    if (!usable[i]) continue;
    free[i] = st_.NodeAt(slot).Idle();
    if (with_holds) free[i] -= hold_[i];
    sum += free[i].ClampZero();
    capacity += st_.NodeAt(slot).allocatable;
  }

  // The places the gang may go: HyperNodes of an allowed tier (hard topology), else the whole cluster.
  std::vector<const std::vector<int>*> domains;
  const auto& view = st_.Topology();
  if (domain.hard_topology && !view.empty()) {
    for (const auto& [tier, names] : view.by_tier) {
      if (domain.max_tier > 0 && tier > domain.max_tier) break;
      for (const auto& name : names) domains.push_back(&view.entries.at(name).nodes);
    }
  } else {
    domains.push_back(&st_.CandidateNodes());
  }

  int checks = 0;
  std::vector<Resource> scratch(n);
  std::optional<Found> found;
  auto check = [&](WallTime at) {
    if (!need.FitsIn(sum) || checks >= kMaxFitChecks) return false;
    ++checks;
    for (const auto* nodes : domains) {
      for (int slot : *nodes) scratch[static_cast<size_t>(slot)] = free[static_cast<size_t>(slot)];
      Found f;
      if (Fits(classes, *nodes, scratch, &f.amounts)) {
        f.start = at;
        found = std::move(f);
        return true;
      }
    }
    return false;
  };
  if (check(now_)) return found;
  // Merge the pods' expected ends with the reservations' (when they count) in time order.
  size_t a = 0, b = 0;
  const size_t nb = with_holds ? hold_releases_.size() : 0;
  while (a < releases_.size() || b < nb) {
    const bool take_a = b >= nb || (a < releases_.size() && releases_[a].at <= hold_releases_[b].at);
    const Release& r = take_a ? releases_[a++] : hold_releases_[b++];
    const auto i = static_cast<size_t>(r.slot);
    if (usable[i]) {
      sum -= free[i].ClampZero();
      free[i] += r.amount;
      sum += free[i].ClampZero();
    }
    // Everything that ends at the same instant is applied before the gang is tried.
    const bool more_now = (a < releases_.size() && releases_[a].at == r.at) || (b < nb && hold_releases_[b].at == r.at);
    if (more_now) continue;
    if (check(std::max(r.at, now_))) return found;
    if (checks >= kMaxFitChecks) break;
  }
  if (checks >= kMaxFitChecks) {
    *why = "no fit found in " + std::to_string(kMaxFitChecks) + " steps of the timeline (fragmented capacity)";
  } else if (!need.FitsIn(capacity)) {
    *why = "the gang needs more than all the nodes it may use hold";
  } else if (domain.hard_topology && !view.empty()) {
    *why = "no HyperNode it may use frees enough for the whole gang by the time known pods end; "
           "pods without a runningEstimate hold the rest";
  } else {
    *why = "pods without a runningEstimate hold the capacity it needs";
  }
  (void)job;
  return std::nullopt;
}

void ReservationPlanner::Reserve(const JobInfo& job, const Found& found) {
  // What the node will have free when the gang starts, after it: the capacity a long job may use now.
  std::vector<std::pair<int, Resource>> left;
  for (const auto& [slot, amount] : found.amounts) {
    Resource at_start = st_.NodeAt(slot).Idle() - hold_[static_cast<size_t>(slot)];
    for (const Release& r : releases_) {
      if (r.at > found.start) break;
      if (r.slot == slot) at_start += r.amount;
    }
    for (const Release& r : hold_releases_) {
      if (r.at > found.start) break;
      if (r.slot == slot) at_start += r.amount;
    }
    left.push_back({slot, at_start - amount});
  }
  for (size_t k = 0; k < found.amounts.size(); ++k) {
    const auto i = static_cast<size_t>(found.amounts[k].first);
    spare_[i] = reserved_[i] ? spare_[i].Min(left[k].second) : left[k].second;
    reserved_[i] = 1;
    first_start_[i] = std::min(first_start_[i], found.start);
  }
  Plan(job, found);
  ++reservations_;
}

void ReservationPlanner::Plan(const JobInfo& job, const Found& found) {
  const auto est = EffectiveEstimate(job, st_.FindQueue(job.queue));
  for (const auto& [slot, amount] : found.amounts) {
    hold_[static_cast<size_t>(slot)] += amount;
    if (est.count() > 0) {
      Release r{found.start + est, slot, amount};
      hold_releases_.insert(std::upper_bound(hold_releases_.begin(), hold_releases_.end(), r), r);
    }
  }
}

void ReservationPlanner::Placed(const JobInfo& job, const std::vector<const TaskInfo*>& tasks) {
  const auto end = EndOf(job);
  if (!end) return;
  for (const TaskInfo* t : tasks) {
    const int slot = t->node.empty() ? -1 : st_.NodeIndex(t->node);
    if (slot >= 0) AddRelease({*end, slot, t->request});
  }
}

bool ReservationPlanner::Admits(int slot, const Resource& request, std::optional<WallTime> end) const {
  const auto i = static_cast<size_t>(slot);
  if (i >= reserved_.size() || !reserved_[i]) return true;
  if (end && *end <= first_start_[i]) return true;
  return request.FitsIn(spare_[i]);
}

void ReservationPlanner::Take(int slot, const Resource& request, std::optional<WallTime> end) {
  const auto i = static_cast<size_t>(slot);
  if (i >= reserved_.size() || !reserved_[i]) return;
  if (end && *end <= first_start_[i]) return;
  spare_[i] -= request;
}

std::optional<WallTime> ReservationPlanner::ReservedFrom(int slot) const {
  const auto i = static_cast<size_t>(slot);
  if (i >= reserved_.size() || !reserved_[i]) return std::nullopt;
  return first_start_[i];
}

}  // namespace tephra::sched

namespace tephra::sched {
const char* StartEstimateKindName(StartEstimate::Kind k) {
  switch (k) {
    case StartEstimate::Kind::kReserved: return "reservation";
    case StartEstimate::Kind::kPlanned: return "planned";
    case StartEstimate::Kind::kUnknown: return "unknown";
  }
  return "unknown";
}
}  // namespace tephra::sched
