#include "tephra/sched/framework.h"

#include <algorithm>
#include <bit>

#include "tephra/sched/action.h"

namespace tephra::sched {

using core::Status;
using core::StatusCode;

// ------------------------------------------------------------------------------------------- registry

Status PluginRegistry::Register(const std::string& name, PluginFactory factory) {
  if (factories_.count(name)) return Status(StatusCode::kAlreadyExists, "plugin already registered: " + name);
  factories_.emplace(name, std::move(factory));
  return Status::OK();
}

core::StatusOr<std::unique_ptr<Plugin>> PluginRegistry::Create(const PluginOption& option) const {
  auto it = factories_.find(option.name);
  if (it == factories_.end()) return Status(StatusCode::kNotFound, "plugin \"" + option.name + "\" is not registered");
  auto p = it->second(option);
  if (p.ok() && !p.value()) return Status(StatusCode::kInternal, "plugin \"" + option.name + "\": factory returned null");
  return p;
}

Status ActionRegistry::Register(const std::string& name, ActionFactory factory) {
  if (factories_.count(name)) return Status(StatusCode::kAlreadyExists, "action already registered: " + name);
  factories_.emplace(name, std::move(factory));
  return Status::OK();
}

core::StatusOr<std::unique_ptr<Action>> ActionRegistry::Create(const ActionConfiguration& conf) const {
  auto it = factories_.find(conf.name);
  if (it == factories_.end()) return Status(StatusCode::kNotFound, "action \"" + conf.name + "\" is not registered");
  auto a = it->second(conf);
  if (a.ok() && !a.value()) return Status(StatusCode::kInternal, "action \"" + conf.name + "\": factory returned null");
  return a;
}

std::vector<std::string> ActionRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories_) out.push_back(k);
  return out;
}

std::string Fit::Text() const {
  if (!reason) return {};
  std::string out = reason;
  if (!detail_key.empty()) {
    out += " {";
    out += detail_key;
    out += ": ";
    out += detail_value;
    out += '}';
  }
  return out;
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories_) out.push_back(k);
  return out;
}

// -------------------------------------------------------------------------------------------- session

namespace {
// Volcano's enable* switch governing each hook (nullopt or true = enabled).
bool HookEnabled(const PluginOption& o, Hook h) {
  auto on = [](const std::optional<bool>& b) { return b.value_or(true); };
  switch (h) {
    case kHookJobOrder: return on(o.enable_job_order);
    case kHookTaskOrder: return on(o.enable_task_order);
    case kHookQueueOrder: return on(o.enable_queue_order);
    case kHookJobValid: return true;
    case kHookJobReady: return on(o.enable_job_ready);
    case kHookJobPipelined: return on(o.enable_job_pipelined);
    case kHookJobEnqueueable: return on(o.enable_job_enqueued);
    case kHookOverused: return on(o.enabled_overused);
    case kHookAllocatable: return on(o.enabled_allocatable);
    case kHookPredicate: return on(o.enable_predicate);
    case kHookNodeOrder: return on(o.enable_node_order);
    case kHookHyperNodeOrder: return on(o.enabled_hyper_node_order);
    case kHookPreemptable: return on(o.enable_preemptable);
    case kHookReclaimable: return on(o.enable_reclaimable);
  }
  return true;
}
constexpr Hook kAllHooks[] = {kHookJobOrder, kHookTaskOrder, kHookQueueOrder, kHookJobValid,
                              kHookJobReady, kHookJobPipelined, kHookJobEnqueueable, kHookOverused,
                              kHookAllocatable, kHookPredicate, kHookNodeOrder, kHookHyperNodeOrder,
                              kHookPreemptable, kHookReclaimable};
const std::map<std::string, std::string> kNoArgs;
constexpr size_t HookIndex(Hook h) { return static_cast<size_t>(std::countr_zero(static_cast<uint32_t>(h))); }
static_assert(HookIndex(kHookReclaimable) == 13, "Session::kHookCount must cover every hook");
}  // namespace

Session::Session(ClusterState* state, const SchedulerConf* conf, std::vector<PluginSlot>* plugins, WallTime now,
                 const core::Clock* clock, CycleResult* out, uint64_t cycle)
    : state_(state), conf_(conf), plugins_(plugins), now_(now), clock_(clock), out_(out), cycle_(cycle) {}

bool Session::ActionConfigured(std::string_view action) const {
  return std::find(conf_->actions.begin(), conf_->actions.end(), action) != conf_->actions.end();
}

int64_t Session::NowUs() const {
  if (!clock_) return 0;
  return std::chrono::duration_cast<std::chrono::microseconds>(clock_->Now().time_since_epoch()).count();
}

Status Session::Open() {
  for (auto& slot : *plugins_) {
    uint32_t hooks = slot.plugin->Hooks();
    for (Hook h : kAllHooks)
      if ((hooks & h) && HookEnabled(slot.option, h)) hooks_[HookIndex(h)].push_back({slot.plugin.get(), slot.tier});
  }
  for (auto& slot : *plugins_) {
    int64_t t0 = NowUs();
    Status s = slot.plugin->OnSessionOpen(*this);
    AddPluginTime(slot.plugin->Name(), NowUs() - t0);
    if (!s.ok())
      return Status(s.code(), "plugin \"" + slot.plugin->Name() + "\": session open: " + s.message());
    ++opened_;
  }
  return Status::OK();
}

void Session::Close() {
  for (size_t i = 0; i < opened_ && i < plugins_->size(); ++i) {
    auto& slot = (*plugins_)[i];
    int64_t t0 = NowUs();
    slot.plugin->OnSessionClose(*this);
    AddPluginTime(slot.plugin->Name(), NowUs() - t0);
  }
  opened_ = 0;
  // Pipelined placements were promises for this cycle only: give the resources back, newest first.
  Statement undo(state_);
  undo.Revert(pipelined_);
  pipelined_.clear();
}

bool Session::HasHook(Hook h) const { return !hooks_[HookIndex(h)].empty(); }

#define TEPHRA_HOOKS(h) const std::vector<Bound>& list = hooks_[HookIndex(h)]

bool Session::JobLess(const JobInfo& a, const JobInfo& b) const {
  TEPHRA_HOOKS(kHookJobOrder);
  for (const auto& x : list) {
    int c = x.plugin->JobOrder(*this, a, b);
    if (c != 0) return c < 0;
  }
  if (a.creation_time != b.creation_time) return a.creation_time < b.creation_time;
  if (a.uid != b.uid) return a.uid < b.uid;
  return a.key < b.key;
}

bool Session::TaskLess(const TaskInfo& a, const TaskInfo& b) const {
  TEPHRA_HOOKS(kHookTaskOrder);
  for (const auto& x : list) {
    int c = x.plugin->TaskOrder(*this, a, b);
    if (c != 0) return c < 0;
  }
  if (a.creation_index != b.creation_index) return a.creation_index < b.creation_index;
  return a.uid < b.uid;
}

bool Session::QueueLess(const QueueInfo& a, const QueueInfo& b) const {
  TEPHRA_HOOKS(kHookQueueOrder);
  for (const auto& x : list) {
    int c = x.plugin->QueueOrder(*this, a, b);
    if (c != 0) return c < 0;
  }
  return a.name < b.name;
}

ValidateResult Session::JobValid(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookJobValid);
  for (const auto& x : list) {
    ValidateResult r = x.plugin->JobValid(*this, job);
    if (!r.pass) return r;
  }
  return {};
}

bool Session::JobReady(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookJobReady);
  for (const auto& x : list)
    if (!x.plugin->JobReady(*this, job)) return false;
  return true;
}

namespace {
// Volcano's voting rule: any reject -> false; a tier containing a permit -> true; default true.
template <typename F>
bool TierVote(const std::vector<Session::Bound>& list, F&& vote) {
  size_t i = 0;
  while (i < list.size()) {
    int tier = list[i].tier;
    bool permit = false;
    for (; i < list.size() && list[i].tier == tier; ++i) {
      Vote v = vote(list[i].plugin);
      if (v == Vote::kReject) return false;
      if (v == Vote::kPermit) permit = true;
    }
    if (permit) return true;
  }
  return true;
}
}  // namespace

bool Session::JobPipelined(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookJobPipelined);
  return TierVote(list, [&](Plugin* p) { return p->JobPipelined(*this, job); });
}

bool Session::JobEnqueueable(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookJobEnqueueable);
  return TierVote(list, [&](Plugin* p) { return p->JobEnqueueable(*this, job); });
}

void Session::JobEnqueued(const JobInfo& job) {
  for (auto& slot : *plugins_) slot.plugin->OnJobEnqueued(*this, job);
}

bool Session::Overused(const QueueInfo& q) const {
  TEPHRA_HOOKS(kHookOverused);
  for (const auto& x : list)
    if (x.plugin->Overused(*this, q)) return true;
  return false;
}

bool Session::Allocatable(const QueueInfo& q, const TaskInfo& t) const {
  TEPHRA_HOOKS(kHookAllocatable);
  for (const auto& x : list)
    if (!x.plugin->Allocatable(*this, q, t)) return false;
  return true;
}

namespace {
Refusal Named(Refusal r, const Plugin& p, const char* reason, const std::string& what) {
  if (!r.empty()) return r;
  return {reason, "plugin " + p.Name() + " refused " + what};
}
}  // namespace

Refusal Session::ExplainEnqueue(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookJobEnqueueable);
  // The same walk as TierVote: the first rejecting plugin is the one that decided.
  for (const auto& x : list)
    if (x.plugin->JobEnqueueable(*this, job) == Vote::kReject)
      return Named(x.plugin->ExplainEnqueue(*this, job), *x.plugin, "NotEnqueueable", "to admit the job");
  return {};
}

Refusal Session::ExplainOverused(const QueueInfo& q) const {
  TEPHRA_HOOKS(kHookOverused);
  for (const auto& x : list)
    if (x.plugin->Overused(*this, q))
      return Named(x.plugin->ExplainOverused(*this, q), *x.plugin, "QueueOverused", "queue " + q.name);
  return {};
}

Refusal Session::ExplainAllocatable(const QueueInfo& q, const TaskInfo& t) const {
  TEPHRA_HOOKS(kHookAllocatable);
  for (const auto& x : list)
    if (!x.plugin->Allocatable(*this, q, t))
      return Named(x.plugin->ExplainAllocatable(*this, q, t), *x.plugin, "QueueOverused",
                   "another pod in queue " + q.name);
  return {};
}

Fit Session::StaticFit(const TaskInfo& t, const NodeInfo& n) const {
  TEPHRA_HOOKS(kHookPredicate);
  for (const auto& x : list) {
    Fit r = x.plugin->StaticPredicate(*this, t, n);
    if (!r.ok()) return r;
  }
  return Fit::Yes();
}

Fit Session::DynamicFit(const TaskInfo& t, const NodeInfo& n) const {
  TEPHRA_HOOKS(kHookPredicate);
  for (const auto& x : list) {
    Fit r = x.plugin->DynamicPredicate(*this, t, n);
    if (!r.ok()) return r;
  }
  return Fit::Yes();
}

double Session::NodeScore(const TaskInfo& t, const NodeInfo& n) const {
  TEPHRA_HOOKS(kHookNodeOrder);
  double s = 0;
  for (const auto& x : list) s += x.plugin->NodeScore(*this, t, n);
  return s;
}

std::optional<std::vector<int>> Session::ChooseCards(const TaskInfo& t, const NodeInfo& n) const {
  if (t.devices.empty() || n.devices.cards.empty()) return std::nullopt;
  TEPHRA_HOOKS(kHookNodeOrder);
  for (const auto& x : list)
    if (auto c = x.plugin->ChooseCards(*this, t, n)) return c;
  return std::nullopt;
}

bool Session::JobDependentScore(const JobInfo& job) const {
  TEPHRA_HOOKS(kHookNodeOrder);
  for (const auto& x : list)
    if (x.plugin->JobDependentScore(*this, job)) return true;
  return false;
}

bool Session::BatchScored(const TaskInfo& t) const {
  TEPHRA_HOOKS(kHookNodeOrder);
  for (const auto& x : list)
    if (x.plugin->BatchScored(*this, t)) return true;
  return false;
}

void Session::BatchNodeScore(const TaskInfo& t, std::span<const int> slots, std::span<double> scores) const {
  TEPHRA_HOOKS(kHookNodeOrder);
  for (const auto& x : list) x.plugin->BatchNodeScore(*this, t, slots, scores);
}

std::optional<Plugin::SparseScores> Session::SparseBatchNodeScore(const TaskInfo& t, size_t candidates,
                                                                  const std::function<bool(int)>& is_candidate) const {
  TEPHRA_HOOKS(kHookNodeOrder);
  // One plugin at most: the scan adds each plugin's score in turn (base + a + b), and a sum formed here
  // (base + (a + b)) could round differently and turn a tie.
  const Plugin* scorer = nullptr;
  for (const auto& x : list) {
    if (!x.plugin->BatchScored(*this, t)) continue;
    if (scorer) return std::nullopt;
    scorer = x.plugin;
  }
  if (!scorer) return Plugin::SparseScores{};
  return scorer->SparseBatchNodeScore(*this, t, candidates, is_candidate);
}

double Session::HyperNodeScore(const JobInfo& job, const std::string& hypernode) const {
  TEPHRA_HOOKS(kHookHyperNodeOrder);
  double s = 0;
  for (const auto& x : list) s += x.plugin->HyperNodeScore(*this, job, hypernode);
  return s;
}
namespace {
// Plugins answer subsets of `candidates` in candidate order (the hook's contract), so intersections are
// one linear merge along the candidate list instead of hashing tens of thousands of pointers.
std::vector<const TaskInfo*> Intersect(const std::vector<const TaskInfo*>& candidates,
                                       const std::vector<const TaskInfo*>& a, const std::vector<const TaskInfo*>& b) {
  std::vector<const TaskInfo*> out;
  size_t i = 0, j = 0;
  for (const TaskInfo* x : candidates) {
    if (i >= a.size() || j >= b.size()) break;
    bool in_a = a[i] == x, in_b = b[j] == x;
    if (in_a) ++i;
    if (in_b) ++j;
    if (in_a && in_b) out.push_back(x);
  }
  return out;
}

// Combines the victim answers tier by tier. Plugins of one tier intersect; a tier where some plugin answered
// decides. A tier left with no victim:
//  - reclaim (between queues): makes no decision and the next tier is asked, as Volcano combines them (so
//    gang's "nothing above minAvailable" in tier 1 lets proportion's reclaim answer in tier 2);
//  - preempt (inside a queue): is a veto. Otherwise priority's "no job here has a lower priority" in tier 1
//    would be overruled by a later tier's share-based answer (drf), and a low-priority job would take a
//    high-priority job's pods one by one, every cycle (found by the randomized invariants test). Volcano's
//    default configuration reaches the same result because no later-tier plugin votes on preemption there.
template <typename F>
std::vector<const TaskInfo*> TierVictims(const std::vector<Session::Bound>& list,
                                         const std::vector<const TaskInfo*>& candidates, bool empty_tier_defers,
                                         F&& ask) {
  size_t i = 0;
  while (i < list.size()) {
    int tier = list[i].tier;
    bool answered = false;
    bool empty = false;  // a plugin of this tier offered nothing
    std::vector<const TaskInfo*> victims;
    for (; i < list.size() && list[i].tier == tier; ++i) {
      if (empty) continue;
      auto c = ask(list[i].plugin);
      if (!c) continue;
      if (c->empty()) {
        empty = true;
        continue;
      }
      if (!answered) {
        victims = std::move(*c);
        answered = true;
        continue;
      }
      victims = Intersect(candidates, victims, *c);
      if (victims.empty()) empty = true;
    }
    if (empty && !empty_tier_defers) return {};
    if (answered && !empty) return victims;
  }
  return {};
}
}  // namespace

std::vector<const TaskInfo*> Session::Preemptable(const TaskInfo& preemptor,
                                                  const std::vector<const TaskInfo*>& candidates) const {
  TEPHRA_HOOKS(kHookPreemptable);
  return TierVictims(list, candidates, /*empty_tier_defers=*/false,
                     [&](Plugin* p) { return p->Preemptable(*this, preemptor, candidates); });
}

std::vector<const TaskInfo*> Session::Reclaimable(const TaskInfo& reclaimer,
                                                  const std::vector<const TaskInfo*>& candidates) const {
  TEPHRA_HOOKS(kHookReclaimable);
  return TierVictims(list, candidates, /*empty_tier_defers=*/true,
                     [&](Plugin* p) { return p->Reclaimable(*this, reclaimer, candidates); });
}
#undef TEPHRA_HOOKS

const std::map<std::string, std::string>& Session::ActionArgs(const std::string& action) const {
  const ActionConfiguration* c = conf_->FindConfiguration(action);
  return c ? c->arguments : kNoArgs;
}

void Session::RecordFitErrors(const std::string& job, int unschedulable_tasks, std::string message) {
  fit_errors_[job] = {unschedulable_tasks, std::move(message)};
}

}  // namespace tephra::sched
