// Session / plugin framework (Volcano's model: docs/volcano-behaviour.md, "Session and statements",
// "Combining plugin answers").
//
// A Plugin overrides only the hooks it implements and declares them in Hooks(); the Session builds one
// dispatch list per hook from the configured tiers, honouring each plugin's enable* switch, and combines
// results with Volcano's rules:
//   JobOrder/TaskOrder/QueueOrder   first non-zero comparison wins (tiers in order), then creation, then uid
//   JobValid                        first failing plugin rejects
//   JobReady/Predicate/Allocatable  all must pass
//   JobPipelined/JobEnqueueable     any Reject -> false; a tier with a Permit -> true; default true
//   NodeOrder                       summed
//   Overused                        any true
// Predicates are split in two so results can be shared: StaticPredicate depends only on the task's shape
// and the node's spec (labels, taints, readiness) and is cached per (shape, node version); DynamicPredicate
// depends on usage and is evaluated at placement time.
//
// Failure model: what can fail because of the configuration fails early and says where. A plugin's
// factory parses its arguments and returns InvalidArgument naming the plugin and the argument
// (ArgParser, config.h), so a bad configuration is refused by SchedulerConf::Validate / Scheduler::Create /
// UpdateConf instead of being silently defaulted; OnSessionOpen returns a Status, and a cycle whose
// session cannot open makes no decisions (CycleResult::status says which plugin failed). Predicates are
// on the hot path (millions of calls per cycle) and return a Fit, which never allocates.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/config.h"
#include "tephra/sched/result.h"
#include "tephra/sched/statement.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

class Session;

enum class Vote : int8_t { kAbstain = 0, kPermit = 1, kReject = -1 };

// Bit per hook; a plugin returns the OR of the hooks it implements.
enum Hook : uint32_t {
  kHookJobOrder = 1u << 0,
  kHookTaskOrder = 1u << 1,
  kHookQueueOrder = 1u << 2,
  kHookJobValid = 1u << 3,
  kHookJobReady = 1u << 4,
  kHookJobPipelined = 1u << 5,
  kHookJobEnqueueable = 1u << 6,
  kHookOverused = 1u << 7,
  kHookAllocatable = 1u << 8,
  kHookPredicate = 1u << 9,   // StaticPredicate and/or DynamicPredicate
  kHookNodeOrder = 1u << 10,
  kHookHyperNodeOrder = 1u << 11,
  kHookPreemptable = 1u << 12,  // enablePreemptable
  kHookReclaimable = 1u << 13,  // enableReclaimable
};

// A predicate's verdict. Building or returning one never allocates: `reason` is static text (a string
// literal), and the optional detail points at data owned by the node or task being judged (valid while
// they are). Text() renders Volcano's fit-error wording, e.g. "node(s) had untolerated taint {gpu: h100}",
// and is called only where a message is needed (failure histograms, the extender).
struct Fit {
  const char* reason = nullptr;  // nullptr: the node fits
  std::string_view detail_key, detail_value;  // rendered as " {key: value}" when detail_key is set

  static Fit Yes() { return {}; }
  static Fit No(const char* why) { return Fit{why, {}, {}}; }
  static Fit No(const char* why, std::string_view key, std::string_view value) { return Fit{why, key, value}; }
  bool ok() const { return reason == nullptr; }
  std::string Text() const;  // "" when ok()
};

// Why a plugin said no, in words a user can act on (docs/why-pending.md). `reason` is a stable CamelCase
// word tools may switch on ("OverCapability", "OverDeserved", "OverClusterCapacity"); `message` names the
// queue, the resource that is short and by how much. Built only after a refusal, never on the hot path.
struct Refusal {
  std::string reason;
  std::string message;
  bool empty() const { return reason.empty(); }
};

struct ValidateResult {
  bool pass = true;
  std::string reason;   // "NotEnoughTasks", "NotEnoughPodsOfTask"
  std::string message;
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string Name() const = 0;
  virtual uint32_t Hooks() const = 0;
  // Per-cycle setup (shares, budgets, caches). A non-OK status aborts the cycle before any action runs:
  // every built-in hook may assume its plugin opened (gang without its state would break gangs).
  virtual core::Status OnSessionOpen(Session& ssn) { return core::Status::OK(); }
  virtual void OnSessionClose(Session& ssn) {}

  // Orders: negative when a goes first.
  virtual int JobOrder(const Session&, const JobInfo& a, const JobInfo& b) const { return 0; }
  virtual int TaskOrder(const Session&, const TaskInfo& a, const TaskInfo& b) const { return 0; }
  virtual int QueueOrder(const Session&, const QueueInfo& a, const QueueInfo& b) const { return 0; }
  virtual ValidateResult JobValid(const Session&, const JobInfo&) const { return {}; }
  virtual bool JobReady(const Session&, const JobInfo&) const { return true; }
  virtual Vote JobPipelined(const Session&, const JobInfo&) const { return Vote::kAbstain; }
  virtual Vote JobEnqueueable(const Session&, const JobInfo&) const { return Vote::kAbstain; }
  virtual bool Overused(const Session&, const QueueInfo&) const { return false; }
  virtual bool Allocatable(const Session&, const QueueInfo&, const TaskInfo&) const { return true; }
  // Fit::Yes() when the node passes, else a fit-error reason such as "node(s) had untolerated taint {k: v}".
  // Messages are aggregated Volcano-style: "<count> <reason>". Hot path: do not allocate.
  virtual Fit StaticPredicate(const Session&, const TaskInfo&, const NodeInfo&) const { return Fit::Yes(); }
  virtual Fit DynamicPredicate(const Session&, const TaskInfo&, const NodeInfo&) const { return Fit::Yes(); }
  // Contract for NodeScore: the score of node N for task T may change only when N changes (its version)
  // or when the same job places a task on N. The allocate action relies on this to keep per-shape score
  // heaps instead of rescoring every node for every task (topology preferences that span several nodes
  // are expressed through HyperNodeOrder instead).
  virtual double NodeScore(const Session&, const TaskInfo&, const NodeInfo&) const { return 0; }
  // Which of the node's cards a task that asks for cards gets there (positions in n.devices.cards), when
  // this plugin has a better rule than devices.h ChooseCards; nullopt leaves the choice to the next plugin
  // and, at the end, to ChooseCards. Only node-order plugins are asked (the choice is part of the score).
  virtual std::optional<std::vector<int>> ChooseCards(const Session&, const TaskInfo&, const NodeInfo&) const {
    return std::nullopt;
  }
  // True when NodeScore for this job's tasks depends on the job itself (e.g. task-topology annotations):
  // such jobs get private score heaps instead of the per-shape heaps shared across jobs.
  virtual bool JobDependentScore(const Session&, const JobInfo&) const { return false; }
  // Scores that break the NodeScore contract (Volcano's BatchNodeOrderFn): they depend on pods anywhere in
  // a node's topology domain and are normalised over the nodes the task may use (kube-scheduler's
  // InterPodAffinity). BatchScored says whether the task has such a score now; allocate then places it by
  // scanning every feasible node instead of through the shared heaps, and BatchNodeScore adds the scores
  // of `slots` (the nodes that passed every predicate and fit) to `scores`, index for index. It is called
  // when any plugin's BatchScored said yes, so a plugin adds nothing for a task it does not batch score.
  virtual bool BatchScored(const Session&, const TaskInfo&) const { return false; }
  virtual void BatchNodeScore(const Session&, const TaskInfo&, std::span<const int> slots,
                              std::span<double> scores) const {}
  // The same scores in a sparse form, when the plugin can give it: one score for every candidate but a few.
  // `candidates` is how many nodes passed every predicate and fit, `is_candidate(slot)` says which;
  // BatchNodeScore over exactly those nodes must add `uniform` to every one of them except the listed slots,
  // which get their own score. allocate then finds the best node from its heaps instead of scoring every
  // node (docs/scheduler.md, "Sparse batch scores"). nullopt: no sparse form now (allocate scans).
  struct SparseScores {
    double uniform = 0;
    std::vector<std::pair<int, double>> exceptions;  // slot -> score, candidates only
  };
  virtual std::optional<SparseScores> SparseBatchNodeScore(const Session&, const TaskInfo&, size_t candidates,
                                                           const std::function<bool(int)>& is_candidate) const {
    return std::nullopt;
  }
  // Explanations of a refusal by this plugin's JobEnqueueable (kReject), Overused (true) or Allocatable
  // (false). Called only after that refusal; an empty Refusal means "no words", and the session falls back
  // to a generic one naming the plugin.
  virtual Refusal ExplainEnqueue(const Session&, const JobInfo&) const { return {}; }
  virtual Refusal ExplainOverused(const Session&, const QueueInfo&) const { return {}; }
  virtual Refusal ExplainAllocatable(const Session&, const QueueInfo&, const TaskInfo&) const { return {}; }
  // Called by the enqueue action after a job moved Pending -> Inqueue (plugins track inqueue resources).
  virtual void OnJobEnqueued(Session&, const JobInfo&) {}
  // Higher is better; used to rank HyperNodes of one tier that can hold a job.
  virtual double HyperNodeScore(const Session&, const JobInfo&, const std::string& hypernode) const { return 0; }
  // Victim selection (Volcano preemptableFn / reclaimableFn): given the preemptor (a pending task of the
  // starving job) and candidate victims (occupying, not releasing), return the subset this plugin allows,
  // in candidate order (required: the session intersects answers by merging along the candidate list).
  // nullopt abstains. Plugins that judge a set (gang: how many tasks of one job may
  // go) see the whole candidate list at once.
  virtual std::optional<std::vector<const TaskInfo*>> Preemptable(const Session&, const TaskInfo& preemptor,
                                                                  const std::vector<const TaskInfo*>& candidates) const {
    return std::nullopt;
  }
  virtual std::optional<std::vector<const TaskInfo*>> Reclaimable(const Session&, const TaskInfo& reclaimer,
                                                                  const std::vector<const TaskInfo*>& candidates) const {
    return std::nullopt;
  }
};

// Builds a configured plugin instance; InvalidArgument (naming the plugin and the argument) when an
// argument is malformed.
using PluginFactory = std::function<core::StatusOr<std::unique_ptr<Plugin>>(const PluginOption& option)>;

class PluginRegistry {
 public:
  // AlreadyExists on duplicate names.
  core::Status Register(const std::string& name, PluginFactory factory);
  bool Has(const std::string& name) const { return factories_.count(name) > 0; }
  // NotFound when the name is not registered; the factory's error when its arguments are malformed.
  core::StatusOr<std::unique_ptr<Plugin>> Create(const PluginOption& option) const;
  std::vector<std::string> Names() const;
  // gang, priority, conformance, drf, proportion, overcommit, predicates, nodeorder, binpack,
  // task-topology, network-topology-aware, sla.
  static PluginRegistry Builtin();

 private:
  std::map<std::string, PluginFactory> factories_;
};

// A configured plugin instance; instances live across cycles (created at Create()/UpdateConf()).
struct PluginSlot {
  std::unique_ptr<Plugin> plugin;
  PluginOption option;
  int tier = 0;
};

class Session {
 public:
  // `cycle` numbers the scheduler's cycles (memos that retry "every N cycles" read it); 0 outside cycles.
  Session(ClusterState* state, const SchedulerConf* conf, std::vector<PluginSlot>* plugins, WallTime now,
          const core::Clock* clock, CycleResult* out, uint64_t cycle = 0);

  ClusterState& state() { return *state_; }
  const ClusterState& state() const { return *state_; }
  const SchedulerConf& conf() const { return *conf_; }
  WallTime now() const { return now_; }
  uint64_t cycle() const { return cycle_; }
  // Whether `action` is in the configured action list (e.g. allocate treats Pending jobs as admitted when
  // enqueue is not configured).
  bool ActionConfigured(std::string_view action) const;
  CycleResult& result() { return *out_; }
  const HyperNodeView& hypernodes() const { return state_->Topology(); }
  const NodeInfo& node(int slot) const { return state_->NodeAt(slot); }
  // Alive, ready and schedulable-by-spec nodes, sorted by name (the deterministic candidate order).
  const std::vector<int>& node_order() const { return state_->SchedulableNodes(); }
  Resource total_allocatable() const { return state_->TotalAllocatable(); }

  // ---- combined hooks (docs/volcano-behaviour.md, "Combining plugin answers") ----
  bool JobLess(const JobInfo& a, const JobInfo& b) const;
  bool TaskLess(const TaskInfo& a, const TaskInfo& b) const;
  bool QueueLess(const QueueInfo& a, const QueueInfo& b) const;
  ValidateResult JobValid(const JobInfo& job) const;
  bool JobReady(const JobInfo& job) const;
  bool JobPipelined(const JobInfo& job) const;
  bool JobEnqueueable(const JobInfo& job) const;
  bool Overused(const QueueInfo& q) const;
  bool Allocatable(const QueueInfo& q, const TaskInfo& t) const;
  // Why the combined hook said no (call after JobEnqueueable false / Overused true / Allocatable false):
  // the first refusing plugin's explanation.
  Refusal ExplainEnqueue(const JobInfo& job) const;
  Refusal ExplainOverused(const QueueInfo& q) const;
  Refusal ExplainAllocatable(const QueueInfo& q, const TaskInfo& t) const;
  Fit StaticFit(const TaskInfo& t, const NodeInfo& n) const;
  Fit DynamicFit(const TaskInfo& t, const NodeInfo& n) const;
  // Text forms ("" = fits) for callers that need the message anyway; allocate only on failure.
  std::string StaticPredicate(const TaskInfo& t, const NodeInfo& n) const { return StaticFit(t, n).Text(); }
  std::string DynamicPredicate(const TaskInfo& t, const NodeInfo& n) const { return DynamicFit(t, n).Text(); }
  double NodeScore(const TaskInfo& t, const NodeInfo& n) const;
  // The first node-order plugin's card choice for `t` on `n`, or nullopt (Statement then uses ChooseCards).
  std::optional<std::vector<int>> ChooseCards(const TaskInfo& t, const NodeInfo& n) const;
  bool JobDependentScore(const JobInfo& job) const;
  bool BatchScored(const TaskInfo& t) const;
  void BatchNodeScore(const TaskInfo& t, std::span<const int> slots, std::span<double> scores) const;
  // The sparse form of the batch scores of `t`, when exactly one plugin batch-scores it and has one
  // (nullopt otherwise).
  std::optional<Plugin::SparseScores> SparseBatchNodeScore(const TaskInfo& t, size_t candidates,
                                                           const std::function<bool(int)>& is_candidate) const;
  double HyperNodeScore(const JobInfo& job, const std::string& hypernode) const;
  // Volcano's rule: intersection of the plugins' answers within a tier; the first tier where some plugin
  // answered decides; an empty answer vetoes (no victims). Nobody answering = no victims either (an
  // eviction needs at least one plugin's consent).
  std::vector<const TaskInfo*> Preemptable(const TaskInfo& preemptor, const std::vector<const TaskInfo*>& candidates) const;
  std::vector<const TaskInfo*> Reclaimable(const TaskInfo& reclaimer, const std::vector<const TaskInfo*>& candidates) const;
  bool HasHook(Hook h) const;
  void JobEnqueued(const JobInfo& job);

  // Per-action arguments from `configurations` (actions normally read them once, in their factory).
  const std::map<std::string, std::string>& ActionArgs(const std::string& action) const;

  // Fit errors collected during allocation, consumed by gang at session close.
  void RecordFitErrors(const std::string& job, int unschedulable_tasks, std::string message);
  struct JobFitError { int unschedulable = 0; std::string message; };
  const std::map<std::string, JobFitError>& fit_errors() const { return fit_errors_; }
  // Jobs the allocate action successfully committed this cycle.
  std::map<std::string, bool>& scheduled_jobs() { return scheduled_jobs_; }
  // Pipelined placements to undo at session close.
  std::vector<Statement::Entry>& pipelined() { return pipelined_; }

  // Binds the hooks and opens every plugin; the first plugin that fails to open stops it, and the error
  // names the plugin. Close() must still be called (it closes only the plugins that opened).
  core::Status Open();
  void Close();
  // Microsecond timer on the injected clock (0 without a clock).
  int64_t NowUs() const;
  bool has_clock() const { return clock_ != nullptr; }
  void AddPluginTime(const std::string& plugin, int64_t us) { out_->metrics.plugin_us[plugin] += us; }
  // The state for actions: its cycle interface (AdmitJob, the Statement journal) is how a cycle changes it.
  ClusterState& mutable_state() { return *state_; }

  // Plugin state other plugins may read (e.g. proportion's per-queue deserved share).
  std::map<std::string, Resource>& queue_deserved() { return queue_deserved_; }
  const std::map<std::string, Resource>& queue_deserved() const { return queue_deserved_; }

 public:
  struct Bound {
    Plugin* plugin;
    int tier;
  };

 private:

  ClusterState* state_;
  const SchedulerConf* conf_;
  std::vector<PluginSlot>* plugins_;
  WallTime now_;
  const core::Clock* clock_;
  CycleResult* out_;
  uint64_t cycle_ = 0;
  size_t opened_ = 0;  // plugins whose OnSessionOpen succeeded (closed in Close)
  // Dispatch lists indexed by the hook's bit position (an array, not a map: predicates and scores look
  // their list up millions of times per cycle).
  static constexpr int kHookCount = 14;
  std::array<std::vector<Bound>, kHookCount> hooks_;
  std::map<std::string, JobFitError> fit_errors_;
  std::map<std::string, bool> scheduled_jobs_;
  std::vector<Statement::Entry> pipelined_;
  std::map<std::string, Resource> queue_deserved_;
};

}  // namespace tephra::sched
