// Scheduler cycle: session open -> configured actions (src/actions/, looked up by name in the
// ActionRegistry) -> stuck-gang release -> session close -> status.
#include "tephra/sched/scheduler.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <set>

#include "tephra/sched/reservation.h"

namespace tephra::sched {

using core::Status;
using core::StatusCode;

Scheduler::Scheduler(SchedulerConf conf, PluginRegistry registry, ActionRegistry actions, const core::Clock* clock)
    : conf_(std::move(conf)), registry_(std::move(registry)), action_registry_(std::move(actions)), clock_(clock),
      state_(conf_.core) {}

core::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerConf conf, PluginRegistry registry,
                                                             const core::Clock* clock,
                                                             std::vector<std::string>* warnings) {
  return Create(std::move(conf), std::move(registry), ActionRegistry::Builtin(), clock, warnings);
}

core::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerConf conf, PluginRegistry registry,
                                                             ActionRegistry actions, const core::Clock* clock,
                                                             std::vector<std::string>* warnings) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry, actions, warnings));
  std::unique_ptr<Scheduler> s(new Scheduler(std::move(conf), std::move(registry), std::move(actions), clock));
  TEPHRA_RETURN_IF_ERROR(s->Build(s->conf_, &s->plugins_, &s->actions_));
  return s;
}

Status Scheduler::Build(const SchedulerConf& conf, std::vector<PluginSlot>* plugins,
                        std::vector<std::unique_ptr<Action>>* actions) const {
  std::vector<PluginSlot> slots;
  for (size_t t = 0; t < conf.tiers.size(); ++t) {
    for (const auto& opt : conf.tiers[t].plugins) {
      if (!registry_.Has(opt.name)) continue;  // known Volcano plugin Tephra does not implement (Validate warned)
      TEPHRA_ASSIGN_OR_RETURN(std::unique_ptr<Plugin> p, registry_.Create(opt));
      slots.push_back({std::move(p), opt, static_cast<int>(t)});
    }
  }
  std::vector<std::unique_ptr<Action>> list;
  for (const auto& name : conf.actions) {
    if (!action_registry_.Has(name)) continue;  // known Volcano action Tephra does not implement (Validate warned)
    const ActionConfiguration* c = conf.FindConfiguration(name);
    TEPHRA_ASSIGN_OR_RETURN(std::unique_ptr<Action> a, action_registry_.Create(c ? *c : ActionConfiguration{name, {}}));
    list.push_back(std::move(a));
  }
  *plugins = std::move(slots);
  *actions = std::move(list);
  return Status::OK();
}

Status Scheduler::UpdateConf(SchedulerConf conf, std::vector<std::string>* warnings) {
  TEPHRA_RETURN_IF_ERROR(conf.Validate(registry_, action_registry_, warnings));
  std::vector<PluginSlot> plugins;
  std::vector<std::unique_ptr<Action>> actions;
  TEPHRA_RETURN_IF_ERROR(Build(conf, &plugins, &actions));
  // Fresh instances: caches kept by the old ones (allocate's predicate results) go with them.
  conf_ = std::move(conf);
  plugins_ = std::move(plugins);
  actions_ = std::move(actions);
  state_.set_options(conf_.core);
  state_.ForEachJob([](const JobInfo& j) { j.sched.failed = false; });
  return Status::OK();
}

CycleResult Scheduler::RunCycle(WallTime now) {
  ++cycle_;
  CycleResult out;
  Session ssn(&state_, &conf_, &plugins_, now, clock_, &out, cycle_);
  int64_t t0 = ssn.NowUs();
  if (Status s = ssn.Open(); !s.ok()) {
    // Deciding without a plugin's state could break what that plugin guarantees (gang): decide nothing.
    ssn.Close();
    out.status = std::move(s);
    out.metrics.e2e_us = ssn.NowUs() - t0;
    return out;
  }
  out.metrics.open_session_us = ssn.NowUs() - t0;
  for (const auto& action : actions_) {
    // A yielded allocate defers the rest of the round's actions: preempting or backfilling for jobs that
    // allocate has not reached yet would act on a half-made decision.
    if (out.yielded) break;
    int64_t ta = ssn.NowUs();
    action->Execute(ssn);
    out.metrics.action_us[std::string(action->Name())] += ssn.NowUs() - ta;
  }
  ReleaseStuckGangs(ssn);
  // Start estimates (docs/reservations.md): a round that reached every job replaces them; a yielded one only
  // refreshes the jobs it reached.
  if (!out.yielded) {
    estimates_.clear();
    reserved_order_.clear();
    for (const auto& e : out.estimates)
      if (e.kind == StartEstimate::Kind::kReserved) reserved_order_.push_back(e.job);
  }
  for (const auto& e : out.estimates) estimates_[e.job] = e;
  ComputePositions(ssn);
  // Kept past the session for metrics and the web view (a map of queues: small).
  queue_deserved_ = ssn.queue_deserved();
  ssn.Close();
  WriteStatus(ssn);
  out.metrics.e2e_us = ssn.NowUs() - t0;
  return out;
}

// ------------------------------------------------------------------------------------- gang timeout

void Scheduler::ReleaseStuckGangs(Session& ssn) {
  const int64_t timeout = conf_.core.gang_timeout_seconds;
  std::vector<const JobInfo*> jobs;
  state_.ForEachJob([&](const JobInfo& j) { jobs.push_back(&j); });
  for (const JobInfo* jp : jobs) {
    const JobInfo& j = *jp;
    const std::string& key = j.key;
    if (j.min_member <= 0) continue;
    // Gang's own rule (docs/scheduler.md, gang plugin): pending best-effort pods count as ready, since backfill
    // places them one at a time. Without them here, a best-effort gang that backfill had just started was
    // "partial", and its pods were evicted in the cycle that bound them (found by sched_invariant_test).
    int ready = j.ReadyCount() + j.pending_best_effort;
    // "Whole" means confirmed by the API (Bound/Running/Succeeded), not merely assumed (Binding).
    int confirmed = j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning) + j.Count(TaskStatus::kSucceeded);
    if (confirmed >= j.min_member) j.sched.ever_ready = true;
    if (ready >= j.min_member) {
      j.sched.partial_since.reset();
      continue;
    }
    int placed = j.Count(TaskStatus::kBinding) + j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning);
    // A gang that was whole and lost pods (a node died, a card failed) counts only while replacements wait:
    // without pending pods, recreating them is the job controller's business (its lifecycle policies). With
    // them, a gang that cannot be made whole again holds its nodes for nothing (docs/faults.md).
    const bool lost = j.sched.ever_ready;
    if (placed == 0 || timeout <= 0 || (lost && j.Count(TaskStatus::kPending) == 0)) {
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
                            " tasks of the gang were ready for " + std::to_string(timeout) + "s" +
                            (lost ? " after it lost pods, and their replacements found no place" : "") +
                            "; released its " + std::to_string(placed) + " placed pod(s)");
  }
}

// ----------------------------------------------------------------------------------- queue positions

namespace {

constexpr const char* kQueued = "Queued";

// In the line: not yet admitted, or admitted with its pods there and not all of them placed. An admitted job
// whose controller has not created its pods yet waits for the controller, not for the scheduler: it has no
// place in the line, so a burst of new jobs does not rewrite each one's position while its pods are made.
bool Waiting(const JobInfo& j) {
  if (j.ReadyCount() >= j.min_member) return false;
  if (j.phase == PodGroupPhase::kPending) return true;
  return j.phase == PodGroupPhase::kInqueue && j.TotalTasks() >= j.min_member;
}

// Exact near the front of the line, where users watch every step; ranges further back, so the text (and
// hence a write) changes once per range, not once per job that starts ahead.
std::string PositionText(int p, const std::string& queue) {
  if (p <= 20) return "position " + std::to_string(p) + " in queue " + queue;
  int bucket = p <= 100 ? 10 : p <= 1000 ? 100 : 1000;
  int lo = (p - 1) / bucket * bucket + 1;
  return "position " + std::to_string(lo) + "-" + std::to_string(lo + bucket - 1) + " in queue " + queue;
}

// The start estimate after the position (docs/reservations.md), its time rounded up to `resolution` seconds so
// the text moves by steps, not every cycle.
std::string EstimateText(const StartEstimate& e, int64_t resolution) {
  if (e.kind == StartEstimate::Kind::kUnknown) return "; no start estimate: " + e.why;
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(e.at.time_since_epoch()).count();
  if (resolution > 1) secs = (secs + resolution - 1) / resolution * resolution;
  const std::string at = core::FormatRfc3339(WallTime(std::chrono::seconds(secs)));
  if (e.kind == StartEstimate::Kind::kPlanned) return "; planned start " + at + " (not reserved)";
  return "; estimated start " + at + " (reserved on " + std::to_string(e.nodes.size()) + " node(s))";
}

const PodGroupCondition* FindCondition(const std::vector<PodGroupCondition>& cs, const char* type) {
  for (const auto& c : cs)
    if (c.type == type) return &c;
  return nullptr;
}

}  // namespace

void Scheduler::ComputePositions(Session& ssn) {
  const int64_t interval = conf_.core.queue_position_interval_ms;
  if (interval <= 0) return;
  if (positions_at_ != WallTime{} && ssn.now() - positions_at_ < std::chrono::milliseconds(interval)) return;
  positions_at_ = ssn.now();
  std::map<std::string, std::vector<const JobInfo*>> by_queue;
  state_.ForEachJob([&](const JobInfo& j) {
    if (Waiting(j)) by_queue[j.queue].push_back(&j);
  });
  position_.clear();
  for (auto& [queue, jobs] : by_queue) {
    std::stable_sort(jobs.begin(), jobs.end(), [&](const JobInfo* a, const JobInfo* b) { return ssn.JobLess(*a, *b); });
    for (size_t i = 0; i < jobs.size(); ++i) position_[jobs[i]->key] = static_cast<int>(i) + 1;
  }
  for (const auto& [key, pos] : position_) {
    auto e = emitted_pg_.find(key);
    if (e == emitted_pg_.end()) continue;  // its first write carries the position anyway
    const JobInfo* j = state_.FindJob(key);
    const PodGroupCondition* q = FindCondition(e->second.conditions, kQueued);
    if (j && (!q || q->message != QueuedText(key, pos, j->queue))) refresh_dirty_.insert(key);
  }
}

core::StatusOr<StartEstimate> Scheduler::WhatIf(const JobInfo& job, std::vector<TaskInfo> tasks, WallTime now) {
  // Plugin instances of its own, as the extender has: opening a session must not touch the cycle's.
  std::vector<PluginSlot> plugins;
  std::vector<std::unique_ptr<Action>> actions;
  TEPHRA_RETURN_IF_ERROR(Build(conf_, &plugins, &actions));
  CycleResult scratch;
  Session ssn(&state_, &conf_, &plugins, now, clock_, &scratch);
  if (Status s = ssn.Open(); !s.ok()) {
    ssn.Close();
    return s;
  }
  // The state's tasks have interned shapes; the hypothetical ones get shapes of their own, one per request,
  // above any the state hands out.
  std::vector<const Resource*> requests;
  for (auto& t : tasks) {
    t.best_effort = t.request.IsBestEffort();
    size_t i = 0;
    while (i < requests.size() && !(*requests[i] == t.request)) ++i;
    if (i == requests.size()) requests.push_back(&t.request);
    t.shape = 0x80000000u + static_cast<uint32_t>(i);
  }
  std::map<uint32_t, std::vector<int>> feasible;
  ReservationPlanner plan(state_, now, [&](const TaskInfo& t) -> const std::vector<int>& {
    auto [it, fresh] = feasible.try_emplace(t.shape);
    if (fresh)
      for (int slot : state_.CandidateNodes())
        if (ssn.StaticFit(t, state_.NodeAt(slot)).ok()) it->second.push_back(slot);
    return it->second;
  });
  auto less = [&](const TaskInfo& a, const TaskInfo& b) { return ssn.TaskLess(a, b); };
  auto domain = [&](const JobInfo& j) {
    ReservationPlanner::Domain d;
    if (j.network_topology.mode == TopologyMode::kHard) {
      d.hard_topology = true;
      d.max_tier = MaxTierFor(j.network_topology, state_.Topology());
    }
    return d;
  };
  std::string why;
  for (const auto& key : reserved_order_) {
    const JobInfo* j = state_.FindJob(key);
    if (!j) continue;
    if (auto f = plan.Earliest(*j, MissingMembers(state_, *j, less), true, domain(*j), &why)) plan.Reserve(*j, *f);
  }
  std::vector<const TaskInfo*> members;
  for (const auto& t : tasks)
    if (!t.best_effort) members.push_back(&t);
  std::sort(members.begin(), members.end(), [&](const TaskInfo* a, const TaskInfo* b) { return less(*a, *b); });
  if (job.min_member > 0 && members.size() > static_cast<size_t>(job.min_member))
    members.resize(static_cast<size_t>(job.min_member));
  StartEstimate e;
  e.job = job.key;
  e.queue = job.queue;
  why.clear();
  // Backfill first: a job that fits now where the reservations allow it (it leaves their capacity alone, or
  // ends before they start) starts now.
  if (auto now_fit = plan.Earliest(job, members, false, domain(job), &why); now_fit && now_fit->start == now) {
    const auto end = plan.EndOf(job);
    bool admitted = true;
    for (const auto& [slot, amount] : now_fit->amounts) admitted = admitted && plan.Admits(slot, amount, end);
    if (admitted) {
      e.kind = StartEstimate::Kind::kReserved;
      e.at = now;
      for (const auto& [slot, amount] : now_fit->amounts) e.nodes.push_back(state_.NodeAt(slot).name);
      e.why = "it fits now, beside the reservations";
      ssn.Close();
      return e;
    }
  }
  why.clear();
  if (auto f = plan.Earliest(job, members, true, domain(job), &why)) {
    e.kind = StartEstimate::Kind::kReserved;
    e.at = f->start;
    for (const auto& [slot, amount] : f->amounts) e.nodes.push_back(state_.NodeAt(slot).name);
    e.why = plan.reservations() > 0 ? "after the " + std::to_string(plan.reservations()) +
                                          " gang(s) holding reservations; running pods end at their running estimates"
                                    : "running pods end at their running estimates";
  } else {
    e.why = members.empty() ? "it has no pods that need resources" : why;
  }
  ssn.Close();
  return e;
}

std::string Scheduler::QueuedText(const std::string& key, int position, const std::string& queue) const {
  std::string text = position > 0 ? PositionText(position, queue) : "waiting in queue " + queue;
  auto e = estimates_.find(key);
  if (e != estimates_.end()) text += EstimateText(e->second, conf_.core.estimate_resolution_seconds);
  return text;
}

// -------------------------------------------------------------------------------------------- status

void Scheduler::WriteStatus(Session& ssn) {
  CycleResult& out = ssn.result();
  const auto& fit = ssn.fit_errors();
  // Jobs to evaluate: those with an event this cycle (small maps) plus those whose version moved.
  std::set<std::string> todo;
  for (const auto& [k, v] : fit) todo.insert(k);
  for (const auto& [k, v] : ssn.scheduled_jobs()) todo.insert(k);
  for (auto& k : state_.JobsWithBindFailures()) todo.insert(std::move(k));
  state_.ForEachJob([&](const JobInfo& j) {
    if (j.sched.status_version != j.version) todo.insert(j.key);
  });
  // Refresh-only writes (a moved position, new numbers under the same reason), front of each line first, as
  // many as the bucket holds.
  const auto& co = conf_.core;
  if (tokens_at_ == WallTime{}) position_tokens_ = co.position_write_burst;
  else position_tokens_ += co.position_writes_per_second *
                           std::chrono::duration<double>(ssn.now() - tokens_at_).count();
  position_tokens_ = std::min<double>(position_tokens_, co.position_write_burst);
  tokens_at_ = ssn.now();
  std::set<std::string> granted;
  if (!refresh_dirty_.empty() && position_tokens_ >= 1) {
    std::vector<std::pair<int, std::string>> order;
    for (const auto& key : refresh_dirty_) {
      auto p = position_.find(key);
      order.push_back({p != position_.end() ? p->second : std::numeric_limits<int>::max(), key});
    }
    std::sort(order.begin(), order.end());
    for (const auto& [pos, key] : order) {
      if (granted.size() >= static_cast<size_t>(position_tokens_)) break;
      granted.insert(key);
      todo.insert(key);
    }
  }
  // Tokens not reserved for the front of the line: any other refresh this cycle may use them.
  double spare = position_tokens_ - static_cast<double>(granted.size());
  for (const auto& key : todo) {
    const JobInfo* jp = state_.FindJob(key);
    if (!jp) continue;
    const JobInfo& j = *jp;
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
    if (j.phase != phase) state_.SetJobPhase(key, phase);

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
    // The exception is the PodGroup that replaces an implicit gang of one (uid ""): it is the same job, and
    // it gets what was decided for it so far (phase, counts, condition) in its first write.
    bool first_of_implicit = false;
    if (prev != emitted_pg_.end() && prev->second.uid != j.uid) {
      if (prev->second.uid.empty() && !j.implicit) {
        first_of_implicit = true;
      } else {
        emitted_pg_.erase(prev);
        prev = emitted_pg_.end();
      }
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
      // Volcano's gang plugin puts the sentence in the reason and leaves the message empty; tools that read
      // the condition see the same fields.
      cond = PodGroupCondition{"Scheduled", "True", "tasks in gang are ready to be scheduled", "", {}};
    }
    // conditions: [the cycle's Scheduled/Unschedulable (Volcano's), then Tephra's Queued], each optional.
    const PodGroupCondition* prev_main =
        prev != emitted_pg_.end() && !prev->second.conditions.empty() && prev->second.conditions[0].type != kQueued
            ? &prev->second.conditions[0]
            : nullptr;
    const PodGroupCondition* prev_queued = prev != emitted_pg_.end() ? FindCondition(prev->second.conditions, kQueued) : nullptr;
    // A resync re-sends the status but is not itself news: what the budget holds back (moved positions,
    // refreshed numbers) stays held in what it re-sends, or each resync would write every moved position of
    // every line at once.
    const bool counts_changed = first_of_implicit || prev == emitted_pg_.end() ||
                                prev->second.phase != u.phase || prev->second.running != u.running ||
                                prev->second.succeeded != u.succeeded || prev->second.failed != u.failed;
    const bool may_refresh = counts_changed || granted.count(key) > 0 || spare >= 1;
    bool refreshed = false;  // something was written only because a token allowed it
    if (cond) {
      bool same = prev_main && *prev_main == *cond;
      // A job that was and still is unschedulable, with new numbers ("short by cpu 3" -> "short by cpu 2") or
      // even a new gate, moves whenever any other job starts or ends. Like a moved position, that refresh is
      // written with a token or with a write that happens anyway, so a busy cluster does not rewrite every
      // waiting PodGroup each time; the front of the line is refreshed first (docs/why-pending.md).
      if (!same && prev_main && prev_main->type == cond->type) {
        if (!may_refresh) {
          cond = *prev_main;
          same = true;
          refresh_dirty_.insert(key);
        } else if (!counts_changed) {
          refreshed = true;
        }
      }
      cond->last_transition_time = same ? prev_main->last_transition_time : ssn.now();
      u.conditions = {*cond};
      if (!same) {
        out.events.push_back({"PodGroup", j.ns, j.name, cond->type == "Scheduled" ? "Normal" : "Warning",
                              cond->type, cond->message.empty() ? cond->reason : cond->message});
      }
    } else if (prev_main) {
      u.conditions = {*prev_main};
    }
    const PodGroupCondition* main_now = u.conditions.empty() ? nullptr : &u.conditions[0];
    bool changed = counts_changed || (prev_main == nullptr) != (main_now == nullptr) ||
                   (prev_main && !(*prev_main == *main_now));
    // Queued: True with the position while the job waits, False once it started. A moved position alone
    // is written only with a token (granted) or riding on a write that happens anyway.
    bool waiting = (phase == PodGroupPhase::kPending || phase == PodGroupPhase::kInqueue) && !scheduled &&
                   j.ReadyCount() < j.min_member;
    std::optional<PodGroupCondition> queued;
    if (waiting) {
      auto p = position_.find(key);
      std::string text = QueuedText(key, p != position_.end() ? p->second : 0, j.queue);
      bool was_waiting = prev_queued && prev_queued->status == "True";
      if (was_waiting && prev_queued->message != text && !changed) {
        if (!may_refresh) {
          text = prev_queued->message;  // no token: the old position stays until one is free
          refresh_dirty_.insert(key);
        } else if (!counts_changed) {
          refreshed = true;
        }
      }
      queued = PodGroupCondition{kQueued, "True", "InQueue", text, {}};
    } else if (prev_queued && prev_queued->status == "True") {
      queued = PodGroupCondition{kQueued, "False", "Started", "the job left its queue and started", {}};
    } else if (prev_queued) {
      queued = *prev_queued;
    }
    if (queued) {
      bool same_status = prev_queued && prev_queued->status == queued->status;
      queued->last_transition_time = same_status ? prev_queued->last_transition_time : ssn.now();
      if (!prev_queued || !(*prev_queued == *queued)) changed = true;
      u.conditions.push_back(*queued);
    }
    if (refreshed && changed) {
      position_tokens_ -= 1;
      if (!granted.count(key)) spare -= 1;
    }
    if (granted.count(key)) {
      refresh_dirty_.erase(key);
    } else if (changed || !waiting) {
      refresh_dirty_.erase(key);  // written with everything current, or no longer waiting
    }
    j.sched.status_version = j.version;
    if (!changed && !resync_status_) continue;
    emitted_pg_[key] = u;
    if (j.implicit) continue;  // remembered for the PodGroup that will replace it; nothing to write yet
    out.pod_groups.push_back(std::move(u));
  }
  for (const auto& key : state_.TakeRemovedJobs()) {
    if (state_.FindJob(key)) continue;
    emitted_pg_.erase(key);
    position_.erase(key);
    estimates_.erase(key);
    refresh_dirty_.erase(key);
  }
  state_.ForEachQueue([&](const QueueInfo& q) {
    auto it = emitted_queue_.find(q.name);
    if (!resync_status_ && it != emitted_queue_.end() && it->second == q.allocated) return;
    emitted_queue_[q.name] = q.allocated;
    out.queues.push_back({q.name, q.allocated});
  });
  resync_status_ = false;
}

void Scheduler::ResyncStatus() {
  resync_status_ = true;
  state_.ForEachJob([](const JobInfo& j) { j.sched.status_version = 0; });
}

}  // namespace tephra::sched
