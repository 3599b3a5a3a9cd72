// What one scheduling cycle decides. The scheduler process executes these (bind/evict via the API,
// PodGroup/Queue status patches, events, metrics); the core never performs I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/resource.h"
#include "tephra/sched/types.h"

namespace tephra::sched {

struct BindDecision {
  std::string task_uid, ns, name, node;
  std::string job;
  // Unbound WaitForFirstConsumer claims of the pod: the binder names `node` on each
  // (volume.kubernetes.io/selected-node) before it binds, so the provisioner creates the volume there.
  std::vector<std::string> select_node_claims;
  // Unbound WaitForFirstConsumer claims the scheduler chose a pre-created volume for: the binder writes the
  // claim into the volume's spec.claimRef before it binds (the volume controller then binds the claim).
  struct VolumeBinding {
    std::string claim, claim_uid, volume;
  };
  std::vector<VolumeBinding> bind_volumes = {};
  // The cards the scheduler chose (devices.h): the binder writes them where the node's device plugin reads
  // them before it binds.
  DeviceRequest devices = {};
  std::vector<std::string> cards = {};
  // MiB each of `cards` gives a shared request (DeviceRequest::MemoryOn: a percentage becomes MiB per card).
  std::vector<int64_t> card_memory = {};
};

struct EvictDecision {
  std::string task_uid, ns, name, node;
  std::string reason;     // "preempt", "reclaim", "GangTimeout"
  std::string job;        // victim's job key ("<ns>/<podgroup>"), "" for pods outside a gang
  std::string preemptor;  // job key of the job the victim makes room for ("" for GangTimeout)
};

struct PodGroupCondition {
  std::string type;    // "Scheduled" | "Unschedulable"
  std::string status;  // "True"
  std::string reason;  // "NotEnoughResources", "NotEnoughTasks", "NotEnoughPodsOfTask", "BindFailed"; Scheduled:
                       // "tasks in gang are ready to be scheduled" (Volcano's), with an empty message
  std::string message;
  WallTime last_transition_time{};
  bool operator==(const PodGroupCondition& o) const {
    return type == o.type && status == o.status && reason == o.reason && message == o.message;
  }
};

// Emitted only when the phase/counters/condition differ from what the core last emitted for that job,
// so a no-change cycle produces no status writes.
struct PodGroupStatusUpdate {
  std::string job;  // "<ns>/<name>"
  std::string ns, name;
  // The PodGroup this status was computed for. A PodGroup deleted and re-created under the same name (the
  // job controller does that on every full restart) is another object: a writer must never put one
  // object's status on the other.
  std::string uid;
  PodGroupPhase phase = PodGroupPhase::kPending;
  int32_t running = 0, succeeded = 0, failed = 0;
  std::vector<PodGroupCondition> conditions;  // 0 or 1 entries (the condition set this cycle)
};

// Queue status.allocated, emitted only when it changed since last emitted.
struct QueueStatusUpdate {
  std::string queue;
  Resource allocated;
};

struct SchedEvent {
  std::string kind;  // "PodGroup" | "Pod"
  std::string ns, name;
  std::string type;  // "Normal" | "Warning"
  std::string reason, message;
};

// When a waiting gang is expected to start (docs/reservations.md), as allocate worked it out this cycle.
struct StartEstimate {
  enum class Kind : uint8_t {
    kReserved,    // it holds a reservation: it starts at `at` on `nodes` unless running pods overrun
    kPlanned,     // beyond the reservation depth: where a conservative plan puts it, behind every gang ahead of
                  // it; it holds nothing, so jobs behind may take its place and it may start later (or earlier)
    kUnknown,     // no time can be given; `why` says what is missing
  };
  std::string job;  // "<ns>/<name>"
  std::string queue;
  Kind kind = Kind::kUnknown;
  WallTime at{};
  std::vector<std::string> nodes;  // kReserved: the nodes its reservation holds capacity on, by name
  // What the estimate rests on, in words: "running pods end at their jobs' runningEstimate" or, for
  // kUnknown, the reason there is none.
  std::string why;
};
const char* StartEstimateKindName(StartEstimate::Kind k);

struct CycleMetrics {
  // Durations in microseconds, measured with the injected clock (all zero when no clock was given).
  int64_t e2e_us = 0;
  int64_t open_session_us = 0;  // volcano_open_session_duration_milliseconds: plugins' OnSessionOpen
  std::map<std::string, int64_t> action_us;  // volcano_action_scheduling_latency_microseconds{action}
  std::map<std::string, int64_t> plugin_us;  // volcano_plugin_scheduling_latency_microseconds{plugin}
  // volcano_schedule_attempts_total{result="scheduled|unschedulable|error"}: job allocation attempts.
  std::map<std::string, int64_t> schedule_attempts;
  int64_t jobs_considered = 0;     // jobs the allocate action actually tried this cycle
  int64_t jobs_skipped_clean = 0;  // unschedulable jobs skipped because nothing relevant changed
  int64_t placements = 0;          // tasks placed (allocated or pipelined) and committed
  int64_t evictions = 0;           // victims evicted by preempt/reclaim this cycle
  int64_t victim_searches = 0;     // starving jobs preempt/reclaim searched victims for (memoised failures skip)
};

struct CycleResult {
  // Not OK when the cycle could not run (a plugin failed to open its session): nothing was decided, and
  // the message names the plugin. The state is unchanged; the next cycle tries again.
  core::Status status;
  // True when allocate ran out of CoreOptions::allocate_slice_us before it reached every job: the round goes
  // on in the next cycle, which the caller should start at once.
  bool yielded = false;
  std::vector<BindDecision> binds;       // deterministic order: allocation order within the cycle
  std::vector<EvictDecision> evictions;  // deterministic order
  std::vector<PodGroupStatusUpdate> pod_groups;  // sorted by job key
  std::vector<QueueStatusUpdate> queues;         // sorted by queue name
  std::vector<SchedEvent> events;
  // Blocked gangs allocate estimated a start for (reservations first), in its order. Empty when reservations
  // are off (CoreOptions::reservation_depth 0) or nothing waits.
  std::vector<StartEstimate> estimates;
  CycleMetrics metrics;
};

}  // namespace tephra::sched
