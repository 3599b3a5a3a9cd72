// SchedulerConf: Volcano's scheduler configuration, field for field (docs/volcano-behaviour.md, "Scheduler
// configuration"). The scheduler process parses YAML into this struct; the core validates it and never reads
// files.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tephra/core/status.h"

namespace tephra::sched {

class PluginRegistry;
class ActionRegistry;

struct PluginOption {
  static PluginOption Named(std::string n) {
    PluginOption o;
    o.name = std::move(n);
    return o;
  }
  std::string name;
  // Volcano's per-plugin switches; nullopt = default (true, except enable_hierarchy which defaults false).
  std::optional<bool> enable_job_order, enable_job_ready, enable_job_pipelined, enable_task_order,
      enable_preemptable, enable_reclaimable, enable_preemptive, enable_queue_order, enable_predicate,
      enable_best_node, enable_node_order, enable_target_job, enable_reserved_nodes, enable_job_enqueued,
      enabled_victim, enable_job_starving, enabled_overused, enabled_allocatable, enabled_hyper_node_order,
      enabled_sub_job_ready, enabled_sub_job_pipelined, enabled_sub_job_order, enabled_hyper_node_gradient,
      enable_hierarchy;
  // Arguments as strings exactly as written in YAML ("binpack.weight": "10"); plugins parse them.
  std::map<std::string, std::string> arguments;
};

struct Tier {
  std::vector<PluginOption> plugins;
};

struct ActionConfiguration {
  std::string name;  // action name
  std::map<std::string, std::string> arguments;
};

// Settings with no Volcano YAML equivalent (Tephra-specific; the scheduler process exposes them as flags).
struct CoreOptions {
  // Unschedulable gangs whose inputs did not change are retried at least every N cycles (0 = every cycle).
  int retry_unchanged_every_cycles = 10;
  // A gang below minMember that holds placed pods is released after this long: its placed pods are evicted
  // and the PodGroup says why. Either it never became whole (a bind failure or a scheduler restart mid-gang,
  // docs/failure-scenarios.md, scenario 8), or it was whole and its replacement pods find no place
  // (docs/faults.md). 0 disables.
  int64_t gang_timeout_seconds = 300;
  // Node label keys that define a leaf/spine/... hierarchy when the cluster has no HyperNode objects:
  // key i gives tier i+1. A node with label <key>=<v> belongs to synthetic HyperNode "<key>=<v>".
  std::vector<std::string> topology_label_keys = {"volcano.sh/hypernode-leaf", "volcano.sh/hypernode-spine"};
  // Longest stretch of the allocate action in one cycle, measured with the scheduler's clock (none: no
  // limit); 0 = no limit (Volcano: one session considers every job). When it runs out between two jobs, the
  // cycle ends there (the actions after allocate wait for the end of the round) and the next cycle resumes:
  // jobs already tried in this round are skipped unless they changed, so every job is reached, while the
  // process applies the watch events that arrived meanwhile between the two cycles. docs/scheduler.md.
  int64_t allocate_slice_us = 0;
  // Queue positions (docs/why-pending.md): each waiting job's place in its queue's order is recomputed at
  // most this often (a sort of every waiting job by the JobOrder plugins) and written to its PodGroup's
  // `Queued` condition, exact up to 20 and as a range beyond. A write that carries nothing but a moved
  // position spends a token of a bucket refilled at `position_writes_per_second` (burst
  // `position_write_burst`), the front of each queue first, so 10,000 pending jobs cost a bounded number of
  // writes per second however often the line moves. 0 interval: positions off.
  int64_t queue_position_interval_ms = 2000;
  double position_writes_per_second = 20;
  int position_write_burst = 100;
  // Reservations and time-limit backfill (docs/reservations.md). The first `reservation_depth` blocked gangs
  // in allocate's order each get a reservation: the earliest time, and the capacity on each node, at which
  // they fit, from the running pods' expected ends. A job behind them may start only where it leaves that
  // capacity alone, or where it ends before the reservation starts. 0: off (Volcano's behaviour); 1: EASY
  // backfill; more: conservative backfill up to that bound.
  int reservation_depth = 0;
  // Blocked gangs after the reserved ones that get a start-time estimate (a lower bound: the earliest time
  // they would fit if no other waiting job went first). 0: only reserved gangs get one.
  int estimate_depth = 100;
  // Written start estimates are rounded up to this many seconds, so a waiting job's status is rewritten when
  // its estimate moves by a step, not every cycle (Slurm's bf_resolution does the same). 0: exact seconds.
  int64_t estimate_resolution_seconds = 30;
};

struct SchedulerConf {
  std::vector<std::string> actions;  // e.g. {"enqueue", "allocate", "backfill"}
  std::vector<Tier> tiers;
  std::vector<ActionConfiguration> configurations;
  CoreOptions core;

  // Volcano's Helm default: enqueue, allocate, backfill; priority/gang/conformance;
  // overcommit/drf/predicates/proportion/nodeorder/binpack.
  static SchedulerConf Default();
  // Parses Volcano's comma-separated `actions: "enqueue, allocate, backfill"` string.
  static std::vector<std::string> ParseActions(const std::string& csv);

  const ActionConfiguration* FindConfiguration(const std::string& action) const;

  // Rejects what Volcano rejects: action names that are neither registered nor known Volcano actions,
  // including an empty one (a trailing comma); `proportion` together with `drf` enableHierarchy=true. Also
  // rejects malformed arguments of implemented plugins and actions (the message names the plugin or action
  // and the argument). Reported in *warnings and skipped, as Volcano skips them: unknown plugin names and
  // known Volcano actions/plugins that Tephra does not implement; a plugin listed twice is a warning too.
  core::Status Validate(const PluginRegistry& plugins, const ActionRegistry& actions,
                        std::vector<std::string>* warnings = nullptr) const;
  // Same, against ActionRegistry::Builtin().
  core::Status Validate(const PluginRegistry& registry, std::vector<std::string>* warnings = nullptr) const;
};

// Reads a boolean/int/double argument ("true", "10", "0.8"); returns fallback when absent or malformed.
// Lenient helpers; plugin and action factories use ArgParser so a malformed value is an error instead.
bool ArgBool(const std::map<std::string, std::string>& args, const std::string& key, bool fallback);
double ArgDouble(const std::map<std::string, std::string>& args, const std::string& key, double fallback);

// Typed reading of a plugin's or action's arguments for its factory. An absent (or empty) argument gives
// the fallback; a malformed one gives the fallback too and records the first error, which status()
// returns as InvalidArgument naming the owner and the argument:
//   plugin "binpack": argument "binpack.weight": "ten" is not a number
// Unknown argument names are not errors: Volcano configurations carry arguments of features Tephra does
// not implement.
class ArgParser {
 public:
  // `owner` is how the message names the argument's owner, e.g. `plugin "binpack"`.
  ArgParser(std::string owner, const std::map<std::string, std::string>& args)
      : owner_(std::move(owner)), args_(args) {}
  double Double(const std::string& key, double fallback);
  // A whole number in [min, max].
  int64_t Int(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  bool Bool(const std::string& key, bool fallback);  // true/false/1/0, case-insensitive
  // A Go duration ("1h2m3s") above zero.
  std::chrono::nanoseconds PositiveDuration(const std::string& key, std::chrono::nanoseconds fallback);
  const std::map<std::string, std::string>& args() const { return args_; }
  const core::Status& status() const { return status_; }

 private:
  void Fail(const std::string& key, const std::string& value, const char* what);
  std::string owner_;
  const std::map<std::string, std::string>& args_;
  core::Status status_;
};

}  // namespace tephra::sched
