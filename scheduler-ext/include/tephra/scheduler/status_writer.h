// Writes what a cycle decided about objects other than pods: PodGroup status, Queue status.allocated and
// Events. A pool of background workers, so a slow API server never delays the scheduling loop and one
// write's round trip never holds up the next object's (a vcjob's pods are created only once its PodGroup
// is written Inqueue, so this is on the critical path of every small job). Updates to the same object
// coalesce (only the newest matters: each carries the full desired status), and one object is never
// written by two workers at once: a newer status queued during a write waits for that write to finish.
// PodGroups are taken before Queues, Queues before pod conditions.
//
// PodGroup: Volcano's CRD has no status subresource, so the whole object is PUT with its resourceVersion
// as precondition; on 409 the object is re-read from the API server and the status re-applied (at most
// 5 attempts). Nothing is written when the stored status already equals the desired one.
// Queue: merge patch of status.allocated on the status subresource (the queue controller owns
// status.state; a merge patch touches only our field). Resources that dropped to zero are sent as null: a
// merge patch only removes keys it names, so an allocation that fell to nothing used to leave its last
// non-zero values on the Queue for good.
// Pods: PodScheduled=False / Unschedulable with the gang's reason, as kube-scheduler writes it, so
// `kubectl describe pod` and tools that read pod conditions (cluster autoscalers, dashboards) see why a pod
// waits. A strategic merge patch on pods/status (conditions merge by type); coalesced per pod.
// PodGroup counters (running/succeeded/failed) change with every pod that starts or ends; a status whose
// phase and conditions equal the last one sent for that PodGroup is held until `counter_interval` (1 s)
// after that write was sent, newer ones replacing it meanwhile. A phase or condition change is written at
// once (a vcjob's pods are created when its PodGroup turns Inqueue). Without the hold a 128-pod gang starting up
// cost one PUT per few pods, in the same API server as its binds (docs/scheduler-process.md). A Queue's
// allocation is held the same way: written at most once per `counter_interval` (it moved with every cycle of
// a burst of small jobs: 0.45 Queue writes per job).
// PodGroup and Queue writes that fail (other than NotFound) are retried with backoff (200 ms doubling to
// 10 s) until they land or a newer desired status for the same object replaces them. A PodGroup status is
// only written to the object (uid) it was computed for.
// Events go to the process's kube::EventRecorder (one Event writer per process: client-go's spam filter and
// aggregation, a bounded queue that drops and counts).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tephra/api/scheduling.h"
#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/events.h"
#include "tephra/sched/resource.h"
#include "tephra/sched/result.h"

namespace tephra::scheduler {

struct EventSpec {
  std::string kind;  // "Pod" | "PodGroup"
  std::string ns, name, uid;
  std::string type, reason, message;
};

struct PodConditionSpec {
  std::string ns, name, uid;
  std::string reason;  // "Unschedulable"
  std::string message;
};

// The pods/status strategic merge patch setting PodScheduled=False (pure; unit-tested).
api::json PodUnschedulablePatch(const PodConditionSpec& c, const std::string& now_rfc3339);

struct StatusWriterStats {
  std::atomic<int64_t> podgroup_writes{0}, podgroup_conflicts{0}, podgroup_errors{0}, podgroup_unchanged{0};
  std::atomic<int64_t> podgroup_superseded{0};  // status dropped: the PodGroup was re-created (new uid)
  std::atomic<int64_t> podgroup_held{0};  // counter-only statuses held for the interval (each may be replaced)
  std::atomic<int64_t> queue_writes{0}, queue_errors{0};
  std::atomic<int64_t> queue_held{0};  // allocations held for the interval (each may be replaced)
  std::atomic<int64_t> pod_condition_writes{0}, pod_condition_errors{0};
};

// Reads the current PodGroup (e.g. from the informer cache); null when unknown (then it is read from the API).
using PodGroupLookup = std::function<std::shared_ptr<const api::PodGroup>(const std::string& ns, const std::string& name)>;

// One PodGroup status write with the conflict loop; `cached` may be null or stale. Synchronous, for the
// writer thread and tests. Returns OK also when nothing needed writing; NotFound when the PodGroup is gone
// or is now another object (a uid other than u.uid).
core::Status WritePodGroupStatus(kube::Client& client, const sched::PodGroupStatusUpdate& u,
                                 std::shared_ptr<const api::PodGroup> cached, const std::string& now_rfc3339,
                                 StatusWriterStats* stats);

class StatusWriter {
 public:
  // `recorder`: the process's EventRecorder; nullptr = one of the writer's own on `client`, with `component`
  // as the Events' source.
  // `workers`: concurrent writes (at least 1). `counter_interval`: the least time between two writes of one
  // PodGroup that differ only in counters (zero: no hold).
  StatusWriter(kube::ClientPtr client, PodGroupLookup lookup, const core::Clock* clock,
               std::string component = "volcano", kube::EventRecorder* recorder = nullptr, int workers = 16,
               std::chrono::steady_clock::duration counter_interval = std::chrono::seconds(1));
  ~StatusWriter();

  void PodGroup(sched::PodGroupStatusUpdate u) TEPHRA_EXCLUDES(mu_);
  // `cleared`: resource names whose allocation is zero (removed from status.allocated).
  void Queue(const std::string& name, api::ResourceList allocated, std::vector<std::string> cleared = {})
      TEPHRA_EXCLUDES(mu_);
  void Event(EventSpec e);
  void PodUnschedulable(PodConditionSpec c) TEPHRA_EXCLUDES(mu_);
  void Stop() TEPHRA_EXCLUDES(mu_);
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) TEPHRA_EXCLUDES(mu_);
  const StatusWriterStats& stats() const { return stats_; }

 private:
  template <typename T>
  struct Retry {
    T value;
    int attempt = 0;
    std::chrono::steady_clock::time_point not_before;
  };
  // Which pending map a key belongs to; FlightKey prefixes keys with it, so a PodGroup and a pod of the same
  // name are different objects in in_flight_.
  enum class Kind { kPodGroup, kQueue, kPod };
  // What was last sent to a PodGroup, for the counter hold; forgotten `counter_interval` after sending.
  struct Written {
    std::string uid;
    sched::PodGroupPhase phase;
    std::vector<sched::PodGroupCondition> conditions;
    std::chrono::steady_clock::time_point at;
  };
  struct QueueAllocation {
    api::ResourceList allocated;
    std::vector<std::string> cleared;
  };
  void Run() TEPHRA_EXCLUDES(mu_);
  static std::chrono::steady_clock::duration RetryDelay(int attempt);
  template <typename Map, typename RetryMap>
  void TakeDueRetries(Map* pending, RetryMap* retry, Kind kind, std::chrono::steady_clock::time_point now)
      TEPHRA_REQUIRES(mu_);
  std::optional<std::chrono::steady_clock::time_point> NextRetry() const TEPHRA_REQUIRES(mu_);
  // The first queued key of `m` that no worker is writing.
  template <typename Map>
  typename Map::iterator FirstIdle(Map& m, Kind kind) TEPHRA_REQUIRES(mu_);
  bool HasIdleWork() TEPHRA_REQUIRES(mu_);
  bool Idle() const TEPHRA_REQUIRES(mu_);  // nothing queued, retrying or in flight
  static std::string FlightKey(Kind kind, const std::string& key);
  void WritePodGroup(const std::string& key, sched::PodGroupStatusUpdate u, int attempt, const std::string& now)
      TEPHRA_EXCLUDES(mu_);
  void WriteQueue(const std::string& name, QueueAllocation alloc, int attempt) TEPHRA_EXCLUDES(mu_);
  void WritePod(const PodConditionSpec& c, const std::string& now);
  void RecordWritten(const std::string& key, const sched::PodGroupStatusUpdate& u) TEPHRA_REQUIRES(mu_);

  kube::ClientPtr client_;
  PodGroupLookup lookup_;
  const core::Clock* clock_;
  std::string component_;
  std::chrono::steady_clock::duration counter_interval_;
  std::unique_ptr<kube::EventRecorder> own_recorder_;
  kube::EventRecorder* recorder_;
  mutable core::Mutex mu_;
  core::CondVar cv_, idle_cv_;
  std::map<std::string, sched::PodGroupStatusUpdate> pg_ TEPHRA_GUARDED_BY(mu_);  // key -> newest desired status
  std::map<std::string, QueueAllocation> queues_ TEPHRA_GUARDED_BY(mu_);
  std::map<std::string, PodConditionSpec> pods_ TEPHRA_GUARDED_BY(mu_);  // uid -> newest condition
  std::map<std::string, Retry<sched::PodGroupStatusUpdate>> pg_retry_ TEPHRA_GUARDED_BY(mu_);
  std::map<std::string, Retry<QueueAllocation>> queue_retry_ TEPHRA_GUARDED_BY(mu_);
  // FlightKey -> retry attempt of a queued value that came from a retry.
  std::map<std::string, int> attempts_ TEPHRA_GUARDED_BY(mu_);
  std::set<std::string> in_flight_ TEPHRA_GUARDED_BY(mu_);  // FlightKeys some worker is writing
  std::map<std::string, Written> pg_written_ TEPHRA_GUARDED_BY(mu_);
  // When each Queue's allocation was last sent (one entry per Queue the scheduler writes; dropped once older
  // than the interval when that Queue is written again).
  std::map<std::string, std::chrono::steady_clock::time_point> queue_written_ TEPHRA_GUARDED_BY(mu_);
  // (write time, key) in write order: expires pg_written_ entries, so the map holds one interval's writes.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> pg_written_order_ TEPHRA_GUARDED_BY(mu_);
  bool stopping_ TEPHRA_GUARDED_BY(mu_) = false;
  StatusWriterStats stats_;
  std::vector<std::thread> threads_;
};

}  // namespace tephra::scheduler
