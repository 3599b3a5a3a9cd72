// kube::Manager: the process skeleton every long-lived role (controller, scheduler, nodesim, webhook) runs
// on, so signals, clients, servers, leader election and shutdown are written once.
//
//   Create(options)       logging, stop signals, the REST config, the main client
//   client()/ClientFor()  one client per purpose, each with its own rate limiter and connections: the lease
//                         client (5 QPS) can never be starved by binds or reconciles, status and events
//                         never delay the main work
//   informers()           one shared informer factory on the main client
//   events(component)     the one EventRecorder of the process (client-go's spam filter and aggregation)
//   registry()            one metrics registry; every runtime stats struct (reflectors, event recorder,
//                         and whatever a role adds with AddCollector) is exported from it on each scrape
//   Add(runnable)         what the role runs; a runnable that NeedsLeaderElection() starts only once this
//                         replica holds the lease, the others (informers, the extender, webhooks) at once
//   Run()                 serves /metrics, /healthz, /readyz; runs the runnables; returns the exit code
//
// Exit codes: 0 after a stop signal (or Stop()); 1 when the lease is lost or a runnable fails (a restarted
// replica re-lists, so nothing is lost); 2 when the process cannot start (bad flags, a port in use).
//
// Shutdown order, all within --graceful-shutdown-seconds (kube/signals.h forces the exit beyond it): the
// leader runnables are stopped and joined first (binds and reconciles in flight finish), then the lease is
// released (a standby takes over at its next poll instead of waiting out the lease), then the other
// runnables and the informers stop, Events are flushed, and the servers close.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/config.h"
#include "tephra/kube/events.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/log.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/metrics_auth.h"

namespace tephra::kube {

class HttpServer;
class LeaderElector;

// Something a role runs for the life of the process.
class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual std::string_view name() const = 0;
  // True (the default): runs on the leader only. False: runs on every replica from the start.
  virtual bool NeedsLeaderElection() const { return true; }
  // Blocks until `stop` is requested (then returns OK promptly) or the runnable cannot go on (non-OK: the
  // Manager stops everything and exits 1; kInvalidArgument means a configuration error and exits 2).
  virtual core::Status Run(std::stop_token stop) = 0;
};

// A Runnable from a function.
std::unique_ptr<Runnable> MakeRunnable(std::string name, bool needs_leader_election,
                                       std::function<core::Status(std::stop_token)> run);

// Sleeps until `stop` is requested or `d` passes; true when stopping. The way runnables wait.
bool SleepUnlessStopped(const std::stop_token& stop, std::chrono::nanoseconds d);

struct ClientLimits {
  double qps = 50;
  int burst = 100;
};

struct ManagerOptions {
  std::string component;  // "controller", "scheduler", ...: logs, user agents ("tephra-<component>")

  // Connection (the common flags).
  std::string kubeconfig, master;
  double kube_api_qps = 50;
  int kube_api_burst = 100;

  std::string log_level = "info";
  log::Format log_format = log::Format::kLogfmt;
  bool init_logging = true;  // false: keep the process's logger (tests)

  std::chrono::milliseconds graceful_shutdown{5000};
  // Installs the SIGTERM/SIGINT handling of kube/signals.h. Create() must then run on main's thread before
  // any other thread exists. Tests pass false and call Stop().
  bool install_signal_handlers = true;

  // "host:port", ":port"; "" or "0" = off. Equal addresses share one server.
  std::string metrics_address;
  std::string health_address;
  // TLS and delegated auth for everything on metrics_address but the probes (kube/metrics_auth.h).
  MetricsServing metrics_serving;

  bool leader_elect = false;
  std::string lock_namespace = "volcano-system";
  std::string lock_name;      // Volcano's names: vc-scheduler, vc-controller-manager
  std::string leader_metric;  // gauge set to 1 while leading, e.g. tephra_scheduler_is_leader; "" = none
  bool ensure_lock_namespace = false;  // create the namespace when missing (best effort)
  std::chrono::milliseconds lease_duration{15000}, renew_deadline{10000}, retry_period{2000};

  // Injection points for tests; nullptr = the real thing.
  std::function<core::StatusOr<ClientPtr>(const RestConfig&)> client_factory;
  std::function<core::StatusOr<RestConfig>()> rest_config;  // default: LoadConfig(kubeconfig, master)
  const core::Clock* clock = nullptr;
  metrics::Registry* registry = nullptr;
};

// ManagerOptions for `component` from a role's options, whose connection and process fields have the same
// names (kubeconfig, master, kube_api_qps, kube_api_burst, log_level, graceful_shutdown, metrics_address,
// health_address). The role then sets what is its own (leader election, lock names).
template <typename RoleOptions>
ManagerOptions ManagerOptionsFor(std::string component, const RoleOptions& o, std::string metrics_address,
                                 std::string health_address) {
  ManagerOptions mo;
  mo.component = std::move(component);
  mo.kubeconfig = o.kubeconfig;
  mo.master = o.master;
  mo.kube_api_qps = o.kube_api_qps;
  mo.kube_api_burst = o.kube_api_burst;
  mo.log_level = o.log_level;
  mo.log_format = o.log_format == "json" ? log::Format::kJson : log::Format::kLogfmt;
  mo.graceful_shutdown = o.graceful_shutdown;
  mo.metrics_address = std::move(metrics_address);
  mo.health_address = std::move(health_address);
  mo.metrics_serving = o.metrics_serving;
  return mo;
}

class Manager {
 public:
  static core::StatusOr<std::unique_ptr<Manager>> Create(ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  const ManagerOptions& options() const { return o_; }
  const RestConfig& rest_config() const { return rest_; }
  const core::Clock& clock() const { return *clock_; }
  metrics::Registry& registry() { return *registry_; }

  // The main client (--kube-api-qps/--kube-api-burst).
  ClientPtr client() { return main_; }
  // A client of its own for `purpose` ("status", "events", "binds", ...), created on first use with
  // `limits` and cached: later calls return it whatever limits they pass.
  core::StatusOr<ClientPtr> ClientFor(const std::string& purpose, ClientLimits limits);

  // On the main client. Its reflectors' counters are exported as tephra_informer_* metrics.
  SharedInformerFactory& informers() { return *factory_; }

  // The process's EventRecorder on the "events" client (created on first use; `component` is the Events'
  // source, e.g. "volcano" or "vc-controller-manager", and must be the same for every caller).
  EventRecorder& events(const std::string& component);

  // /readyz (and /healthz when `liveness`): every check must pass.
  void AddReadinessCheck(std::string name, std::function<bool()> ok);
  void AddLivenessCheck(std::string name, std::function<bool()> ok);
  // Called before each /metrics exposition, to copy counters kept elsewhere into the registry.
  void AddCollector(std::function<void()> collect);
  // A POST endpoint on the metrics server (the scheduler's what-if, docs/reservations.md), under the same
  // address and options as /metrics. Call before Run.
  void AddPostHandler(std::string path, std::function<ServerResponse(const ServerRequest&)> handler);
  // A GET endpoint on the metrics server (the scheduler's web view), under the same address and options as
  // /metrics. Call before Run.
  void AddGetHandler(std::string path, std::function<ServerResponse(const ServerRequest&)> handler);
  // The port the metrics server listens on once Run started it (0 before, or when off); for tests that bind
  // port 0.
  int metrics_port() const { return metrics_port_.load(); }
  // What /metrics serves: the collectors run, then the registry's exposition.
  std::string ScrapeMetrics();

  void Add(std::unique_ptr<Runnable> r);

  // Blocks until stopped; returns the exit code (see above). Call once.
  int Run();
  // As if a stop signal had arrived. Thread-safe; for tests and for roles that end on their own.
  void Stop();
  bool leading() const;
  // True once this replica lost the lease it held (the process is then ending with code 1).
  bool lost_lease() const;
  // True once Run() has started every runnable it may start (the leader's after acquiring the lease).
  bool running() const;

 private:
  explicit Manager(ManagerOptions o);
  core::Status Init();
  core::Status StartServers();
  void StartRunnables(bool leader);
  void StopRunnables(bool leader);
  bool WaitSome(std::chrono::milliseconds d);  // true when the process should stop
  void Collect();

  ManagerOptions o_;
  RestConfig rest_;
  const core::Clock* clock_ = nullptr;
  std::unique_ptr<core::Clock> owned_clock_;
  metrics::Registry* registry_ = nullptr;
  ClientPtr main_;
  std::unique_ptr<SharedInformerFactory> factory_;

  mutable core::Mutex mu_;
  core::CondVar cv_;
  std::map<std::string, ClientPtr> clients_ TEPHRA_GUARDED_BY(mu_);
  std::unique_ptr<EventRecorder> recorder_ TEPHRA_GUARDED_BY(mu_);
  std::string recorder_component_ TEPHRA_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::function<bool()>>> ready_checks_ TEPHRA_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::function<ServerResponse(const ServerRequest&)>>> post_handlers_
      TEPHRA_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::function<ServerResponse(const ServerRequest&)>>> get_handlers_
      TEPHRA_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, std::function<bool()>>> live_checks_ TEPHRA_GUARDED_BY(mu_);
  std::vector<std::function<void()>> collectors_ TEPHRA_GUARDED_BY(mu_);
  bool stop_ TEPHRA_GUARDED_BY(mu_) = false;
  bool lost_ TEPHRA_GUARDED_BY(mu_) = false;
  bool leading_ TEPHRA_GUARDED_BY(mu_) = false;
  bool running_ TEPHRA_GUARDED_BY(mu_) = false;
  core::Status failure_ TEPHRA_GUARDED_BY(mu_);

  struct Slot {
    std::unique_ptr<Runnable> r;
    std::thread t;
  };
  std::vector<Slot> runnables_ TEPHRA_GUARDED_BY(mu_);
  std::stop_source leader_stop_, all_stop_;

  std::unique_ptr<HttpServer> metrics_srv_, health_srv_;
  std::atomic<int> metrics_port_{0};
  std::unique_ptr<LeaderElector> elector_;
  std::thread elector_thread_;
};

}  // namespace tephra::kube
