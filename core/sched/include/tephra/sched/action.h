// Actions: the steps of a scheduling cycle (Volcano's enqueue, allocate, preempt, reclaim, backfill).
//
// The configuration names actions in order ("enqueue, allocate, backfill"); the Scheduler creates one
// instance per configured action from an ActionRegistry when the configuration is applied (Create /
// UpdateConf) and calls Execute once per cycle, in order, inside one open Session. Instances live until
// the next configuration change, so an action may keep caches across cycles (allocate keeps its
// per-shape predicate results) and must drop nothing it needs when a cycle changes the state.
//
// What an action may do: read the state through the Session, ask the plugins through the Session's
// combined hooks, and change the state only through a Statement (placements, evictions) or the
// ClusterState cycle interface (AdmitJob); see cluster_state.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/config.h"

namespace tephra::sched {

class Session;

class Action {
 public:
  virtual ~Action() = default;
  // The name the configuration uses ("allocate"); also the metrics label.
  virtual std::string_view Name() const = 0;
  virtual void Execute(Session& ssn) = 0;
};

// Builds an action from its `configurations` entry (empty arguments when the configuration has none);
// InvalidArgument naming the action and the argument when an argument is malformed.
using ActionFactory = std::function<core::StatusOr<std::unique_ptr<Action>>(const ActionConfiguration& conf)>;

class ActionRegistry {
 public:
  // AlreadyExists on duplicate names.
  core::Status Register(const std::string& name, ActionFactory factory);
  bool Has(const std::string& name) const { return factories_.count(name) > 0; }
  // NotFound when the name is not registered.
  core::StatusOr<std::unique_ptr<Action>> Create(const ActionConfiguration& conf) const;
  std::vector<std::string> Names() const;
  // enqueue, allocate, backfill, preempt, reclaim.
  static ActionRegistry Builtin();

 private:
  std::map<std::string, ActionFactory> factories_;
};

}  // namespace tephra::sched
