// tephra::sched::Scheduler: the entry point of the pure scheduling core, and the boundary with the
// scheduler process (scheduler-ext/).
//
//  scheduler-ext (process, owns I/O)                    core/sched (this library, pure)
//  ---------------------------------                    ------------------------------------
//  informers: Node/Pod/PodGroup/Queue/HyperNode/   -->  state().Upsert*/Remove*/SetPriorityClass
//             PriorityClass events (converted to
//             NodeInfo/TaskInfo/JobInfo/QueueInfo/
//             HyperNodeInfo, see types.h for rules)
//  YAML config file (Volcano format)               -->  SchedulerConf (config.h) -> Create()/UpdateConf()
//  period timer (schedulePeriod, default 1s)       -->  RunCycle(now)  returns CycleResult (result.h)
//  async binder: POST pods/binding per BindDecision     (the core has already assumed the bind: kBinding)
//      success / 409 already-assigned              -->  state().BindSucceeded(uid)
//      other failure                               -->  state().BindFailed(uid, reason) (rolls back gang)
//  evictor: DELETE pod per EvictDecision                (the informer delete/update follows)
//  status writers: PodGroup status, Queue allocated,
//      events, Prometheus metrics                  <--  CycleResult.pod_groups/queues/events/metrics
//
// Everything here is single-threaded and deterministic: the same sequence of inputs and the same `now`
// produce identical CycleResults. No wall clock is read: `now` stamps conditions; the optional Clock is
// used only to measure durations for metrics.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/sched/action.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/config.h"
#include "tephra/sched/framework.h"
#include "tephra/sched/result.h"

namespace tephra::sched {

class Scheduler {
 public:
  // Validates `conf` against `registry`; warnings (known-but-unimplemented Volcano actions/plugins,
  // which are skipped) are returned through *warnings.
  // Malformed plugin or action arguments are errors (the message names the plugin or action and the
  // argument).
  static core::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerConf conf,
                                                           PluginRegistry registry = PluginRegistry::Builtin(),
                                                           const core::Clock* duration_clock = nullptr,
                                                           std::vector<std::string>* warnings = nullptr);
  // With a custom action registry (actions are looked up by their configured names).
  static core::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerConf conf, PluginRegistry registry,
                                                           ActionRegistry actions,
                                                           const core::Clock* duration_clock = nullptr,
                                                           std::vector<std::string>* warnings = nullptr);

  ClusterState& state() { return state_; }
  const ClusterState& state() const { return state_; }
  const SchedulerConf& conf() const { return conf_; }

  // Hot reload of the configuration file; on error the old configuration stays in force.
  core::Status UpdateConf(SchedulerConf conf, std::vector<std::string>* warnings = nullptr);

  // One scheduling cycle: open session, run actions in order, close session. Cheap when nothing
  // changed: unschedulable gangs are only retried when something relevant changed (capacity epoch or
  // the job itself) or every CoreOptions::retry_unchanged_every_cycles cycles. When a plugin cannot open
  // its session the cycle decides nothing and CycleResult::status says why.
  CycleResult RunCycle(WallTime now);

  uint64_t cycle() const { return cycle_; }
  // What-if (Slurm's `sbatch --test-only`; docs/reservations.md): when and on which nodes a gang would start if
  // it were submitted now, behind the gangs holding reservations (a conservative scheduler's answer). `job`
  // and `tasks` (its pods, pending) are not added to the state; the state is not changed. Runs on the thread
  // that owns the state, between cycles. An error when a plugin cannot open its session.
  core::StatusOr<StartEstimate> WhatIf(const JobInfo& job, std::vector<TaskInfo> tasks, WallTime now);
  // The latest start estimates of waiting gangs (docs/reservations.md), by job key.
  const std::map<std::string, StartEstimate>& estimates() const { return estimates_; }
  // Waiting jobs' 1-based places in their queue's order (job key -> place), as last computed (at most every
  // CoreOptions::queue_position_interval_ms).
  const std::map<std::string, int>& positions() const { return position_; }
  // Each queue's deserved share as the last session's proportion or capacity plugin computed it; empty when
  // neither runs.
  const std::map<std::string, Resource>& queue_deserved() const { return queue_deserved_; }

  // Makes the next cycle emit the full desired status of every PodGroup and Queue again, even where it
  // equals what was last emitted (no Events are repeated). The process calls this periodically: the
  // emitted memory says what was *sent*, and a write that failed, or a status someone else overwrote,
  // would otherwise never be corrected. The writer skips objects whose stored status already matches.
  void ResyncStatus();

 private:
  Scheduler(SchedulerConf conf, PluginRegistry registry, ActionRegistry actions, const core::Clock* clock);
  // Instances for `conf` (plugins per tier, actions in order); the configured ones only are replaced
  // when both build.
  core::Status Build(const SchedulerConf& conf, std::vector<PluginSlot>* plugins,
                     std::vector<std::unique_ptr<Action>>* actions) const;
  void ReleaseStuckGangs(Session& ssn);
  // Recomputes position_ (at most every CoreOptions::queue_position_interval_ms); needs the open session
  // for the JobOrder plugins.
  void ComputePositions(Session& ssn);
  void WriteStatus(Session& ssn);
  // The Queued condition's message: the job's place in its queue (0: not known yet), then its start estimate.
  std::string QueuedText(const std::string& key, int position, const std::string& queue) const;

  SchedulerConf conf_;
  PluginRegistry registry_;
  ActionRegistry action_registry_;
  std::vector<PluginSlot> plugins_;
  std::vector<std::unique_ptr<Action>> actions_;  // in configured order; unimplemented Volcano ones skipped
  const core::Clock* clock_;
  ClusterState state_;
  uint64_t cycle_ = 0;
  std::map<std::string, PodGroupStatusUpdate> emitted_pg_;  // job key -> last emitted (carries the uid)
  bool resync_status_ = false;
  std::map<std::string, Resource> emitted_queue_;
  // Waiting jobs' 1-based places in their queue's order, as of positions_at_. refresh_dirty_: jobs whose
  // written position or Unschedulable message is out of date only in detail (same reason); they are written
  // as the token bucket allows, front of the line first.
  std::map<std::string, int> position_;
  std::set<std::string> refresh_dirty_;
  WallTime positions_at_{};
  std::map<std::string, StartEstimate> estimates_;  // job key -> its latest start estimate
  std::map<std::string, Resource> queue_deserved_;
  std::vector<std::string> reserved_order_;         // gangs holding a reservation, in allocate's order
  double position_tokens_ = 0;
  WallTime tokens_at_{};
};

}  // namespace tephra::sched
