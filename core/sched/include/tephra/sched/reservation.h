// Reservations and time-limit backfill (docs/reservations.md).
//
// A gang that cannot start now is given a reservation: the earliest time at which it fits, found by walking
// forward through the times the running pods are expected to free their nodes (their start plus their job's
// running estimate), and the capacity it will take on each node then. The allocate action makes the first
// CoreOptions::reservation_depth blocked gangs such reservations, in its own order, and lets a job behind them
// start only where it leaves that capacity alone or ends before the reservation begins (Slurm's backfill rule;
// EASY with depth 1, conservative with more). The same walk gives every other blocked gang a lower bound on its
// start.
//
// The planner is built per cycle from the state and never changes it. Its model is deliberately coarse where
// precision would cost a placement search per step: tasks count against a node's resources and its static
// predicates only (no inter-pod affinity, spread or device ring rules), a reservation holds its capacity from
// now until its expected end (not only from its start), and pods whose job has no running estimate never free
// their nodes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tephra/sched/cluster_state.h"
#include "tephra/sched/resource.h"
#include "tephra/sched/result.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

// A job's running estimate as planning uses it: its own (capped by its queue's maximum), else its queue's
// default; 0 when neither is known.
std::chrono::seconds EffectiveEstimate(const JobInfo& job, const QueueInfo* queue);
// The highest HyperNode tier a gang with this network topology may use (its tier name or number, else the
// top tier).
int MaxTierFor(const NetworkTopology& nt, const HyperNodeView& view);
// The gang's members still to place: its pending tasks (not gated, not best-effort) in `less` order, as many
// as it lacks to reach minMember. Empty when it is whole.
std::vector<const TaskInfo*> MissingMembers(const ClusterState& st, const JobInfo& job,
                                            const std::function<bool(const TaskInfo&, const TaskInfo&)>& less);

class ReservationPlanner {
 public:
  // Node slots, in name order, whose static predicates the task passes.
  using FeasibleFn = std::function<const std::vector<int>&(const TaskInfo&)>;
  // Walks at most this many fit checks per search: a gang that fits nowhere for a long stretch of the
  // timeline (fragmentation) costs a bounded amount, and then has no estimate.
  static constexpr int kMaxFitChecks = 256;

  ReservationPlanner(const ClusterState& st, WallTime now, FeasibleFn feasible);

  struct Found {
    WallTime start{};
    std::vector<std::pair<int, Resource>> amounts;  // node slot -> what the gang takes there, by slot
  };
  // Where the search may look for one gang: the whole cluster, or (a hard network topology) each HyperNode of
  // a tier up to `max_tier`, smallest tier first.
  struct Domain {
    bool hard_topology = false;
    int max_tier = 0;
  };
  // The earliest time from now at which `tasks` (the gang's missing members, in TaskOrder) fit. `with_holds`:
  // the reservations made so far keep their capacity (a reservation's search); without, only running pods
  // count (a lower bound). nullopt: they never fit within what is known; *why says what stands in the way.
  std::optional<Found> Earliest(const JobInfo& job, const std::vector<const TaskInfo*>& tasks, bool with_holds,
                                const Domain& domain, std::string* why);
  // Makes `found` the reservation of `job`: later searches, Admits and Take see it.
  void Reserve(const JobInfo& job, const Found& found);
  // Plans `job` at `found` without reserving: later searches see its capacity taken (so the gangs behind it
  // get the start a conservative plan gives them), the backfill rule does not.
  void Plan(const JobInfo& job, const Found& found);
  // `job` placed `tasks` this cycle: they hold their nodes until the job's expected end.
  void Placed(const JobInfo& job, const std::vector<const TaskInfo*>& tasks);

  bool has_reservations() const { return reservations_ > 0; }
  int reservations() const { return reservations_; }
  // When a job placed now is expected to end: now + its estimate; nullopt when it has none.
  std::optional<WallTime> EndOf(const JobInfo& job) const;
  // The backfill rule: may a job ending at `end` (nullopt: unknown) take `request` on `slot` now? Yes when no
  // reservation holds capacity there, when the job ends before the first of them starts, or when the request
  // leaves every reservation on the node its capacity.
  bool Admits(int slot, const Resource& request, std::optional<WallTime> end) const;
  // Records that such a job took `request` on `slot`.
  void Take(int slot, const Resource& request, std::optional<WallTime> end);
  // The earliest reservation start on `slot`, if a reservation holds capacity there.
  std::optional<WallTime> ReservedFrom(int slot) const;

 private:
  struct Release {
    WallTime at;
    int slot;
    Resource amount;
    bool operator<(const Release& o) const { return at < o.at || (at == o.at && slot < o.slot); }
  };
  void AddRelease(Release r);
  // Per class of identical requests: the greedy fit of `counts` into `free` over `nodes`; fills *amounts.
  struct Class {
    const TaskInfo* rep;
    int count;
    const std::vector<int>* feasible;
    std::vector<char> allowed;  // by slot: the class passes the node's static predicates
  };
  bool Fits(const std::vector<Class>& classes, const std::vector<int>& nodes, std::vector<Resource>& scratch,
            std::vector<std::pair<int, Resource>>* amounts) const;

  const ClusterState& st_;
  WallTime now_;
  FeasibleFn feasible_;
  std::vector<Release> releases_;       // expected ends of placed pods, sorted
  std::vector<Release> hold_releases_;  // expected ends of reservations, sorted
  std::vector<Resource> hold_;          // by slot: capacity held by reservations
  std::vector<Resource> spare_;         // by slot: what a long job may still take there
  std::vector<WallTime> first_start_;   // by slot: earliest reservation start (meaningful where reserved_)
  std::vector<char> reserved_;
  int reservations_ = 0;
};

}  // namespace tephra::sched
