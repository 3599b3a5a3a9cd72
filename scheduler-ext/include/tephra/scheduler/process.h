// `tephra scheduler`: the process around the pure scheduling core.
//
//   informers (Node, Pod, PodGroup, Queue, HyperNode, PriorityClass)
//       | convert (convert.h), under mu_
//       v
//   sched::Scheduler::state()  <-- binder feedback (binder.h), under mu_
//       |
//   loop: every schedule_period, RunCycle(now) under mu_ -> binds to the Binder, statuses/events to the
//         StatusWriter, metrics; the conf file is re-read when its mtime changes.
//
// One mutex serialises informer callbacks, binder feedback and the cycle, which is exactly the threading
// contract of ClusterState ("serialise ... under one mutex").
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/kube/client.h"
#include "tephra/sched/config.h"

namespace tephra::scheduler {

struct SchedulerOptions {
  std::string kubeconfig, master;
  double kube_api_qps = 50;
  int kube_api_burst = 100;
  std::string log_level = "info";
  std::chrono::milliseconds graceful_shutdown{5000};  // --graceful-shutdown-seconds (kube/signals.h)

  std::string scheduler_conf;  // --scheduler-conf; "" = built-in default (Volcano's Helm default)
  std::chrono::milliseconds schedule_period{1000};
  // Tephra-only: a change that can make a pod placeable (new pending pod, PodGroup, node, queue, a pod that
  // finished or left) starts a cycle early, but never sooner than this after the previous cycle ended, nor
  // sooner than that cycle took (so the loop uses at most half a core). schedule_period stays the longest
  // gap. Set it equal to schedule_period for Volcano's strictly periodic loop.
  std::chrono::milliseconds min_schedule_interval{20};
  // Tephra-only: how often every PodGroup/Queue status is re-sent (Scheduler::ResyncStatus); 0 = never.
  std::chrono::milliseconds status_resync_period{30000};
  std::string default_queue = "default";
  std::vector<std::string> scheduler_names = {"volcano"};
  bool leader_elect = true;
  std::string lock_object_namespace = "volcano-system";
  std::string listen_address = ":8080";  // /metrics (Volcano's --listen-address)
  std::string health_address = ":11251";  // /healthz, /readyz (Volcano's healthz port)
  // Tephra-only: host:port serving the kube-scheduler extender API (docs/extender.md); "" = off. Paths are
  // <extender_prefix>/filter, /prioritize and /bind.
  std::string extender_address;
  std::string extender_prefix;
  // Binds are latency-bound (one RPC each, ~50 ms on a busy API server): 64 in flight let a 128-pod gang bind
  // in a few hundred ms when the QPS limit allows; measured in bench/RESULTS.md (16 -> 64: p50 600 -> ~400 ms).
  int bind_workers = 64;
  std::chrono::seconds conf_poll{3};
  // Tephra-only: node label keys defining leaf/spine tiers when there are no HyperNodes (CoreOptions).
  std::vector<std::string> topology_label_keys;
  // Unschedulable gangs are retried at least every N cycles even when nothing changed (CoreOptions).
  int retry_unchanged_every_cycles = 10;
  bool create_default_queues = true;
};

// Runs until SIGTERM/SIGINT (exit 0) or a fatal error / lost leadership (non-zero). Blocks.
int RunScheduler(const SchedulerOptions& opts);

// Creates `root` and `default` queues if missing (docs/volcano-behaviour.md, "Queues and the queue
// controller"); AlreadyExists is success.
core::Status EnsureDefaultQueues(kube::Client& client, const std::string& default_queue);

}  // namespace tephra::scheduler
