// The simulator loop: registers (or adopts) the configured nodes, keeps them alive with Leases and status
// heartbeats, applies node fault annotations, and drives every pod bound to them through PlanPod().
//
// Threads and queues:
//  - two reflectors (list+watch, kube::Reflector): nodes (all; ours are picked by name) and pods with
//    spec.nodeName set, finished ones included, as a kubelet watches them (pods of other nodes are dropped
//    on arrival);
//  - a pod/node work queue (kube::WorkQueue: a key is queued once however often it changes, never handled by
//    two workers at once, and can be scheduled for later) served by `workers` threads writing through
//    `client` (whose QPS/burst limiter bounds the write rate);
//  - a heartbeat queue for Leases served by `heartbeat_workers` threads through `heartbeat_client`, so pod
//    traffic can never starve node liveness. Lease renewals are spread evenly over the renew interval.
// Keys: "n/<node>" (register/adopt, then status every node_status_interval), "l/<node>" (lease),
// "p/<ns>/<name>" (pod).
// Every handler is level-based: it reads the latest state, so coalesced updates lose
// nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/workqueue.h"
#include "tephra/nodesim/config.h"
#include "tephra/nodesim/device_plugin.h"
#include "tephra/nodesim/node_model.h"
#include "tephra/nodesim/pod_plan.h"

namespace tephra::nodesim {

struct SimulatorOptions {
  int workers = 8;
  int heartbeat_workers = 2;
  std::chrono::milliseconds lease_renew_interval{std::chrono::seconds(10)};
  int lease_duration_seconds = 40;
  // Full node status (Ready heartbeat) refresh; the kubelet's nodeStatusReportFrequency default is 5 min
  // when Leases carry liveness.
  std::chrono::milliseconds node_status_interval{std::chrono::minutes(5)};
  int max_grace_seconds = 1;
  // Per-key backoff of failed writes: base * 2^failures, capped at 30 s.
  std::chrono::milliseconds retry_base_delay{200};
  const core::Clock* clock = nullptr;  // nullptr = RealClock
  // Reflector knobs (tests shorten them).
  int min_watch_timeout_seconds = 300;
  int max_watch_timeout_seconds = 600;
};

struct SimulatorStats {
  std::atomic<int64_t> nodes_created{0};
  std::atomic<int64_t> nodes_adopted{0};
  std::atomic<int64_t> node_status_writes{0};
  std::atomic<int64_t> lease_renewals{0};
  std::atomic<int64_t> pod_status_writes{0};
  std::atomic<int64_t> pods_running{0};    // Running writes
  std::atomic<int64_t> pods_finished{0};   // Succeeded/Failed writes
  std::atomic<int64_t> pod_deletes{0};
  std::atomic<int64_t> deletes_confirmed_after_finish{0};  // finished pods given a deletionTimestamp
  std::atomic<int64_t> events{0};
  std::atomic<int64_t> write_errors{0};
  std::atomic<int64_t> device_refusals{0};  // pods the simulated device plugin refused (UnexpectedAdmissionError)
  std::atomic<int64_t> device_failures{0};  // running pods failed because a card they hold went bad
};

class Simulator {
 public:
  Simulator(kube::ClientPtr client, kube::ClientPtr heartbeat_client, std::vector<NodeSpec> nodes,
            SimulatorOptions opts);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Lists existing nodes (to adopt ours), then starts reflectors and workers. Returns the list error, if any.
  core::Status Start();
  // Stops watches and workers; idempotent.
  void Stop();

  // Nodes known to exist on the server (created or adopted).
  int RegisteredNodes() const TEPHRA_EXCLUDES(mu_);
  // Pods currently tracked (bound to our nodes; finished ones until the watch reports them gone).
  size_t TrackedPods() const TEPHRA_EXCLUDES(mu_);
  const SimulatorStats& stats() const { return stats_; }

  // Resource descriptors used (cluster-scoped nodes, namespaced pods/leases/events).
  static const kube::ResourceInfo& NodeResource();
  static const kube::ResourceInfo& PodResource();
  static const kube::ResourceInfo& LeaseResource();
  static const kube::ResourceInfo& EventResource();

 private:
  struct NodeState {
    const NodeSpec* spec = nullptr;
    std::string uid;
    bool registered = false;
    bool status_stale = true;  // faults changed or adopted: write status at once
    bool ready_on_server = false;  // the last observed object had Ready=True
    NodeFaults faults;
    uint32_t next_pod_ip = 0;
    NodeCards cards;  // what the simulated device plugin knows (device_plugin.h)
  };
  struct PodRecord {
    PodView view;
    int64_t rv = -1;
    std::string warned_uid;  // problems already reported for this pod uid
    // Our grace-0 delete of this pod uid was accepted. A finalizer can keep the pod (and its events) coming;
    // deleting it again would change nothing.
    std::string deleted_uid;
    PodCards cards;              // its Ascend request and the cards the scheduler named
    std::string admitted_uid;    // the device plugin mounted this pod uid's cards (they are held)
  };
  class PodSink;
  class NodeSink;

  void Worker();
  void HeartbeatWorker();
  void HandleNode(const std::string& name) TEPHRA_EXCLUDES(mu_);
  void HandleLease(const std::string& name) TEPHRA_EXCLUDES(mu_);
  void HandlePod(const std::string& key) TEPHRA_EXCLUDES(mu_);
  bool DeletePodNow(const std::string& key, const std::string& uid, const std::string& retry_key);
  // The device plugin's admission of a pending pod that asks for cards: "" when its cards can be mounted
  // (they are then held), else the refusal. Called with mu_ held.
  std::string AdmitDevicesLocked(const std::string& key) TEPHRA_REQUIRES(mu_);
  // "" while a running pod's cards are healthy; else the device error that fails it. Called with mu_ held.
  std::string DeviceFailureLocked(const std::string& key) TEPHRA_REQUIRES(mu_);
  NodeCards NodeCardsLocked(const NodeState& st) const TEPHRA_REQUIRES(mu_);
  // Upserts a pod from the API (watch/list/write response); returns true if it is ours.
  bool UpsertPod(const json& pod) TEPHRA_EXCLUDES(mu_);
  void ReportProblems(const PodView& pod, const std::vector<std::string>& problems);
  void ObserveNode(const json& node, bool deleted) TEPHRA_EXCLUDES(mu_);
  core::Clock::WallTime WallNow() const { return clock_.WallNow(); }

  kube::ClientPtr client_;
  kube::ClientPtr heartbeat_client_;
  std::vector<NodeSpec> nodes_;
  SimulatorOptions opts_;
  const core::Clock& clock_;
  SimulatorStats stats_;

  // Also taken by PodSink (as s_->mu_).
  mutable core::Mutex mu_;
  std::unordered_map<std::string, NodeState> node_state_ TEPHRA_GUARDED_BY(mu_);
  std::unordered_map<std::string, PodRecord> pods_ TEPHRA_GUARDED_BY(mu_);

  std::unique_ptr<kube::WorkQueue> queue_;
  std::unique_ptr<kube::WorkQueue> heartbeat_queue_;
  std::unique_ptr<PodSink> pod_sink_;
  std::unique_ptr<NodeSink> node_sink_;
  std::unique_ptr<kube::Reflector> pod_reflector_;
  std::unique_ptr<kube::Reflector> node_reflector_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopped_{false};
  bool started_ = false;
};

}  // namespace tephra::nodesim
