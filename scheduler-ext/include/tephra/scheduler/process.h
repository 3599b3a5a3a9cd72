// `tephra scheduler`: the process around the pure scheduling core.
//
//   watch threads (informers)        convert the object (convert.h) outside any lock, push a delta
//        |                           into the inbox, go back to reading the stream
//        v
//   inbox  <-- binder results, evictor results, extender evaluations (WithState)
//        |
//   state thread (the one owner of sched::Scheduler and its ClusterState): drains the inbox, applies
//        the deltas, and while leading runs a cycle when one is due; hands binds to the Binder, victims to
//        the Evictor's pool, statuses and Events to the StatusWriter. Nothing else touches the state, so
//        no lock is held across a cycle and a watch stream is never blocked by one.
//
// A cycle is due `schedule_period` after the previous one started, or earlier when a delta that can make
// something placeable arrived (a new pod, a finished pod, a PodGroup/Queue spec change, a node), but never
// sooner than `min_schedule_interval` after the previous cycle ended nor sooner than that cycle took.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/kube/client.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/metrics_auth.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/config.h"
namespace tephra::kube {
class HttpServer;
}

namespace tephra::scheduler {

struct SchedulerOptions {
  std::string kubeconfig, master;
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  std::string log_level = "info";
  std::chrono::milliseconds graceful_shutdown{5000};  // --graceful-shutdown-seconds (kube/signals.h)

  std::string scheduler_conf;  // --scheduler-conf; "" = built-in default (Volcano's Helm default)
  // --disable-default-scheduler-config (Volcano's flag): a --scheduler-conf that cannot be read or is invalid
  // at start-up stops the process instead of running with the built-in default (Volcano's behaviour without
  // the flag, logged as an error and visible in tephra_scheduler_conf_last_reload_successful).
  bool disable_default_conf = false;
  std::chrono::milliseconds schedule_period{1000};
  // Tephra-only: a change that can make a pod placeable (new pending pod, PodGroup, node, queue, a pod that
  // finished or left) starts a cycle early, but never sooner than this after the previous cycle ended, nor
  // sooner than that cycle took (so the loop uses at most half a core). schedule_period stays the longest
  // gap. Set it equal to schedule_period for Volcano's strictly periodic loop.
  std::chrono::milliseconds min_schedule_interval{20};
  // Tephra-only: the allocate action's time slice per cycle (CoreOptions::allocate_slice_us); 0 = none. A
  // 160 ms allocate at 5,000 nodes otherwise holds every watch event that arrives meanwhile out of the state.
  std::chrono::milliseconds allocate_slice{20};
  // Tephra-only: how often every PodGroup/Queue status is re-sent (Scheduler::ResyncStatus); 0 = never.
  std::chrono::milliseconds status_resync_period{30000};
  std::string default_queue = "default";
  std::vector<std::string> scheduler_names = {"volcano"};
  bool leader_elect = true;
  std::string lock_object_namespace = "volcano-system";
  std::string listen_address = ":8080";  // /metrics (Volcano's --listen-address)
  std::string health_address = ":11251";  // /healthz, /readyz (Volcano's healthz port)
  kube::MetricsServing metrics_serving;     // TLS and auth of listen_address (--metrics-*)
  std::string log_format = "logfmt";      // --log-format: logfmt or json
  // Tephra-only: host:port serving the kube-scheduler extender API (docs/extender.md); "" = off. Paths are
  // <extender_prefix>/filter, /prioritize and /bind.
  std::string extender_address;
  std::string extender_prefix;
  bool extender_bind_from_any = false;  // --extender-bind-from=any: /bind from other hosts too (extender.h)
  // Binds are latency-bound (one RPC each, ~50 ms on a busy API server): 64 in flight let a 128-pod gang bind
  // in a few hundred ms when the QPS limit allows; measured in bench/RESULTS.md (16 -> 64: p50 600 -> ~400 ms).
  int bind_workers = 64;
  // --bind-guard: before a Binding is posted, the pod's hard constraints are checked once more against the
  // node as the cache holds it (sched::CheckPlacement); a failing decision is refused, never posted
  // (docs/scheduler.md, "Bind guard"). On by default: a refusal is a scheduler bug made visible, not a cost.
  bool bind_guard = true;
  // PodGroup/Queue status and pod-condition writes in flight (the StatusWriter's pool). A vcjob's pods are
  // created only after its PodGroup is written Inqueue, so with one writer small jobs were paced by one
  // round trip at a time (bench/RESULTS.md, issue 12).
  int status_workers = 16;
  std::chrono::seconds conf_poll{3};
  // Tephra-only: node label keys defining leaf/spine tiers when there are no HyperNodes (CoreOptions).
  std::vector<std::string> topology_label_keys;
  // Unschedulable gangs are retried at least every N cycles even when nothing changed (CoreOptions).
  int retry_unchanged_every_cycles = 10;
  // --gang-timeout-seconds: a gang below its minimum that holds placed pods (never whole yet, or whole once
  // and waiting for replacements) is released after this long (docs/faults.md). 0 disables.
  int64_t gang_timeout_seconds = 300;
  // Queue positions on waiting PodGroups (CoreOptions; docs/why-pending.md): recomputed at most this often
  // (0 = off), and position-only status writes paced at this rate.
  std::chrono::milliseconds queue_position_interval{2000};
  double position_writes_per_second = 20;
  // Reservations and time-limit backfill (CoreOptions; docs/reservations.md): how many blocked gangs get a
  // reservation (0 = off), how many more get a lower-bound start estimate, and the step written estimates move by.
  int reservation_depth = 0;
  int estimate_depth = 100;
  std::chrono::seconds estimate_resolution{30};
  bool create_default_queues = true;
  // Tephra-only: the read-only web view at /ui/ on the metrics server (docs/web-view.md).
  bool enable_web_view = false;
};

// What the process is given; injected so unit tests run it on the in-memory fake client.
struct SchedulerDeps {
  kube::ClientPtr client;         // informers and binds: its QPS/burst is the bind throttle
  kube::ClientPtr status_client;  // PodGroup/Queue status, pod conditions, evictions, Events
  const core::Clock* clock = nullptr;               // nullptr = the real clock
  kube::metrics::Registry* registry = nullptr;      // nullptr = Registry::Default()
  kube::SharedInformerFactory* informers = nullptr;  // nullptr = a factory of its own on `client`
  kube::EventRecorder* events = nullptr;             // nullptr = the status writer's own
  int evict_workers = 8;
};

class SchedulerProcess {
 public:
  static core::StatusOr<std::unique_ptr<SchedulerProcess>> Create(const SchedulerOptions& o, SchedulerDeps deps);
  ~SchedulerProcess();  // Stop(0)
  SchedulerProcess(const SchedulerProcess&) = delete;
  SchedulerProcess& operator=(const SchedulerProcess&) = delete;

  // Starts the informers and the state thread. Every replica runs this: a standby keeps its state as current
  // as the leader's (it serves the extender and takes over without a cold start).
  core::Status Start();
  bool WaitForSync(std::chrono::steady_clock::time_point deadline) const;
  bool synced() const;
  // Cycles run only while leading.
  void SetLeading(bool leading);
  // Waits (at most `drain`) for binds in flight and pending status writes, after cycles stopped. A standby
  // must not start deciding while ours still land.
  void Drain(std::chrono::milliseconds drain);
  // Stops everything and joins. Idempotent.
  void Stop();

  // Runs `fn` on the state thread between cycles and returns when it ran (the extender, tests).
  void WithState(const std::function<void(sched::ClusterState&)>& fn);
  // The kube-scheduler extender API on `server`, evaluated on the state thread (docs/extender.md).
  core::Status ServeExtender(kube::HttpServer& server);
  // What-if (`tephra ctl job run --test-only`, docs/reservations.md): `body` is a Volcano Job (JSON); the answer
  // says when and on which nodes it would start if it were submitted now, without creating anything:
  //   {"job": "ns/name", "queue": q, "kind": "reservation"|"unknown", "startTime": RFC 3339, "nodes": [...],
  //    "pods": n, "why": "..."}
  // InvalidArgument (the field) for a body that is not such a Job.
  core::StatusOr<std::string> TestOnly(const std::string& body);
  // The web view's snapshot (webview.h, docs/web-view.md), built on the state thread between cycles: the
  // HTTP status (503 before the caches synced, 404 without --enable-web-view) and the JSON body.
  std::pair<int, std::string> WebSnapshot();

  // Copies the status writer's counters into the registry (a Manager collector).
  void CollectMetrics();
  uint64_t cycles() const;
  // Steady-clock milliseconds at the end of the last cycle (0 = none yet): the liveness check.
  int64_t last_cycle_ms() const;
  // Applied watch events and their latency from the watch thread to the state (also a metric).
  struct EventLatency {
    uint64_t applied = 0;
    std::vector<double> recent_ms;        // the last samples (bounded ring), for benchmarks and tests
    std::vector<double> recent_cycle_ms;  // durations of the last cycles (bounded ring)
  };
  EventLatency event_latency() const;

 private:
  class Impl;
  explicit SchedulerProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The role: a kube::Manager running a SchedulerProcess (every replica) and the scheduling loop (leader).
// Runs until SIGTERM/SIGINT (exit 0) or a fatal error / lost leadership (non-zero). Blocks.
int RunScheduler(const SchedulerOptions& opts);

// Creates `root` and `default` queues if missing (docs/volcano-behaviour.md, "Queues and the queue
// controller"); AlreadyExists is success.
core::Status EnsureDefaultQueues(kube::Client& client, const std::string& default_queue);

}  // namespace tephra::scheduler
