#include "tephra/kube/manager.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <map>

#include "tephra/kube/caught.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/leader_election.h"
#include "tephra/kube/signals.h"
#include "tephra/kube/transport.h"

namespace tephra::kube {

namespace {

class FnRunnable : public Runnable {
 public:
  FnRunnable(std::string name, bool leader, std::function<core::Status(std::stop_token)> run)
      : name_(std::move(name)), leader_(leader), run_(std::move(run)) {}
  std::string_view name() const override { return name_; }
  bool NeedsLeaderElection() const override { return leader_; }
  core::Status Run(std::stop_token stop) override { return run_(std::move(stop)); }

 private:
  std::string name_;
  bool leader_;
  std::function<core::Status(std::stop_token)> run_;
};

bool AddressOn(const std::string& a) { return !a.empty() && a != "0"; }

}  // namespace

std::unique_ptr<Runnable> MakeRunnable(std::string name, bool needs_leader_election,
                                       std::function<core::Status(std::stop_token)> run) {
  return std::make_unique<FnRunnable>(std::move(name), needs_leader_election, std::move(run));
}

bool SleepUnlessStopped(const std::stop_token& stop, std::chrono::nanoseconds d) {
  // A local lock guarding nothing: the wait needs one. std::condition_variable_any rather than core::CondVar:
  // only it has the wait that a stop request interrupts (it takes core::MutexLock as any lockable).
  core::Mutex mu;
  std::condition_variable_any cv;
  core::MutexLock l(mu);
  return cv.wait_for(l, stop, d, [] { return false; }) || stop.stop_requested();
}

Manager::Manager(ManagerOptions o) : o_(std::move(o)) {}

Manager::~Manager() {
  Stop();
  StopRunnables(true);
  StopRunnables(false);
  if (elector_) elector_->Stop();
  if (elector_thread_.joinable()) elector_thread_.join();
  if (factory_) factory_->StopAll();
  if (recorder_) recorder_->Shutdown();
  if (metrics_srv_) metrics_srv_->Stop();
  if (health_srv_) health_srv_->Stop();
}

core::StatusOr<std::unique_ptr<Manager>> Manager::Create(ManagerOptions options) {
  std::unique_ptr<Manager> m(new Manager(std::move(options)));
  TEPHRA_RETURN_IF_ERROR(m->Init());
  return m;
}

core::Status Manager::Init() {
  if (o_.component.empty()) return core::InvalidArgumentError("manager: component is required");
  if (o_.init_logging) TEPHRA_RETURN_IF_ERROR(log::Init(o_.log_level, o_.log_format, o_.component));
  // Signals first: InstallStopSignals must see no other thread (it blocks the signals for all of them).
  if (o_.install_signal_handlers) InstallStopSignals({o_.graceful_shutdown, o_.component.c_str()});
  TEPHRA_RETURN_IF_ERROR(Validate(o_.metrics_serving));
  if (o_.leader_elect && o_.lock_name.empty()) return core::InvalidArgumentError("manager: leader election needs a lock name");
  if (o_.leader_elect && o_.lock_namespace.empty())
    return core::InvalidArgumentError("--lock-object-namespace: required with --leader-elect");
  if (!o_.clock) {
    owned_clock_ = std::make_unique<core::RealClock>();
    clock_ = owned_clock_.get();
  } else {
    clock_ = o_.clock;
  }
  registry_ = o_.registry ? o_.registry : &metrics::Registry::Default();
  auto rc = o_.rest_config ? o_.rest_config() : LoadConfig(o_.kubeconfig, o_.master);
  if (!rc.ok()) return rc.status().Annotate("loading the kubeconfig");
  rest_ = std::move(*rc);
  rest_.qps = o_.kube_api_qps;
  rest_.burst = o_.kube_api_burst;
  rest_.user_agent = "tephra-" + o_.component;
  auto mc = o_.client_factory ? o_.client_factory(rest_) : NewClient(rest_);
  if (!mc.ok()) return mc.status().Annotate("creating the API client");
  main_ = *mc;
  {
    core::MutexLock l(mu_);
    clients_["main"] = main_;
  }
  factory_ = std::make_unique<SharedInformerFactory>(main_);

  // Runtime counters, copied into the registry on every scrape.
  auto& r = *registry_;
  auto* lists = &r.AddCounter("tephra_informer_lists_total", "Full LISTs by informers (initial and relists)", {"resource"});
  auto* relists = &r.AddCounter("tephra_informer_relists_after_expired_total",
                                "Relists because a watch's resourceVersion expired (410 Gone)", {"resource"});
  auto* watches = &r.AddCounter("tephra_informer_watches_total", "WATCH requests started by informers", {"resource"});
  auto* watch_errors = &r.AddCounter("tephra_informer_watch_errors_total",
                                     "Watches that ended with an error other than 410", {"resource"});
  auto* events = &r.AddCounter("tephra_informer_events_total", "Watch events applied to informer caches", {"resource"});
  auto* decode = &r.AddCounter("tephra_informer_decode_errors_total", "Objects informers could not decode", {"resource"});
  auto* recorded = &r.AddCounter("tephra_events_total", "Kubernetes Events by what became of them", {"result"});
  auto* requests = &r.AddCounter("rest_client_requests_total",
                                 "API requests sent by this process, by client (user agent), method and HTTP code "
                                 "(0: no response)",
                                 {"client", "method", "code"});
  auto* limiter_wait = &r.AddCounter("tephra_rest_client_rate_limiter_wait_seconds_total",
                                     "Time requests waited for the client-side QPS/burst limiter, by client", {"client"});
  auto* level = r.AddGauge("tephra_log_level", "The current log level: 0 trace, 1 debug, 2 info, 3 warn, 4 error "
                                               "(PUT /debug/flags/v changes it)").With({});
  AddCollector([level] { level->Set(static_cast<double>(log::GetLevel())); });
  auto* caught = &r.AddCounter("tephra_caught_exceptions_total",
                               "Exceptions caught at the top of a thread or request handler, by where (the thread "
                               "or handler went on)",
                               {"where"});
  AddCollector([caught] {
    for (const auto& [where, n] : CaughtExceptions()) caught->With({where})->SetTotal(static_cast<double>(n));
  });
  AddCollector([requests, limiter_wait] {
    for (const auto& c : RestRequestCounts())
      requests->With({c.client, c.method, std::to_string(c.code)})->SetTotal(static_cast<double>(c.count));
    for (const auto& [client, secs] : RestLimiterWaitSeconds()) limiter_wait->With({client})->SetTotal(secs);
  });
  AddCollector([this, lists, relists, watches, watch_errors, events, decode, recorded] {
    // Objects the client passed over (too deep to decode) count as decode errors of their informer.
    std::map<std::string, uint64_t> skipped;
    for (const auto& [res, n] : SkippedObjects()) skipped[res] = n;
    factory_->ForEach([&](const InformerBase& inf) {
      const std::string res(inf.resource().plural);
      const auto& s = inf.stats();
      lists->With({res})->SetTotal(static_cast<double>(s.lists.load()));
      relists->With({res})->SetTotal(static_cast<double>(s.relists_after_410.load()));
      watches->With({res})->SetTotal(static_cast<double>(s.watches.load()));
      watch_errors->With({res})->SetTotal(static_cast<double>(s.watch_errors.load()));
      events->With({res})->SetTotal(static_cast<double>(s.events.load()));
      decode->With({res})->SetTotal(static_cast<double>(s.decode_errors.load() + skipped[res]));
    });
    EventRecorder* rec = nullptr;
    {
      core::MutexLock l(mu_);
      rec = recorder_.get();
    }
    if (!rec) return;
    auto st = rec->stats();
    recorded->With({"created"})->SetTotal(static_cast<double>(st.created));
    recorded->With({"aggregated"})->SetTotal(static_cast<double>(st.patched));
    recorded->With({"dropped_queue_full"})->SetTotal(static_cast<double>(st.dropped_queue_full));
    recorded->With({"dropped_rate_limited"})->SetTotal(static_cast<double>(st.dropped_rate_limited));
    recorded->With({"error"})->SetTotal(static_cast<double>(st.errors));
  });
  return core::Status::OK();
}

core::StatusOr<ClientPtr> Manager::ClientFor(const std::string& purpose, ClientLimits limits) {
  core::MutexLock l(mu_);
  if (auto it = clients_.find(purpose); it != clients_.end()) return it->second;
  RestConfig rc = rest_;
  rc.qps = limits.qps;
  rc.burst = limits.burst;
  rc.user_agent = "tephra-" + o_.component + "/" + purpose;
  auto c = o_.client_factory ? o_.client_factory(rc) : NewClient(rc);
  if (!c.ok()) return c.status().Annotate("creating the " + purpose + " API client");
  clients_[purpose] = *c;
  return *c;
}

EventRecorder& Manager::events(const std::string& component) {
  core::MutexLock l(mu_);
  if (!recorder_) {
    // Its own client at the main client's limits: a burst of Events never delays the role's own writes.
    ClientPtr c = main_;
    RestConfig rc = rest_;
    rc.user_agent = "tephra-" + o_.component + "/events";
    if (auto it = clients_.find("events"); it != clients_.end()) {
      c = it->second;
    } else if (auto made = o_.client_factory ? o_.client_factory(rc) : NewClient(rc); made.ok()) {
      c = *made;
      clients_["events"] = c;
    }
    EventRecorderOptions ro;
    ro.component = component;
    ro.clock = clock_;
    // A 1,000-pod gang's Scheduled Events arrive at once; they are cheap to hold and dropping them loses
    // what `kubectl describe` shows.
    ro.queue_capacity = 8192;
    recorder_ = std::make_unique<EventRecorder>(c, std::move(ro));
    recorder_component_ = component;
  } else if (component != recorder_component_) {
    log::Warn("one EventRecorder per process: ignoring a second component")
        .Kv("component", recorder_component_)
        .Kv("ignored", component);
  }
  return *recorder_;
}

void Manager::AddReadinessCheck(std::string name, std::function<bool()> ok) {
  core::MutexLock l(mu_);
  ready_checks_.emplace_back(std::move(name), std::move(ok));
}

void Manager::AddPostHandler(std::string path, std::function<ServerResponse(const ServerRequest&)> handler) {
  core::MutexLock l(mu_);
  post_handlers_.emplace_back(std::move(path), std::move(handler));
}

void Manager::AddGetHandler(std::string path, std::function<ServerResponse(const ServerRequest&)> handler) {
  core::MutexLock l(mu_);
  get_handlers_.emplace_back(std::move(path), std::move(handler));
}

void Manager::AddLivenessCheck(std::string name, std::function<bool()> ok) {
  core::MutexLock l(mu_);
  live_checks_.emplace_back(std::move(name), std::move(ok));
}

void Manager::AddCollector(std::function<void()> collect) {
  core::MutexLock l(mu_);
  collectors_.push_back(std::move(collect));
}

void Manager::Add(std::unique_ptr<Runnable> r) {
  core::MutexLock l(mu_);
  runnables_.push_back({std::move(r), {}});
}

void Manager::Collect() {
  std::vector<std::function<void()>> cs;
  {
    core::MutexLock l(mu_);
    cs = collectors_;
  }
  for (auto& c : cs) c();
}

std::string Manager::ScrapeMetrics() {
  Collect();
  return registry_->Expose();
}

core::Status Manager::StartServers() {
  auto checks_page = [this](bool liveness, const ServerRequest& req) {
    std::vector<std::pair<std::string, std::function<bool()>>> checks;
    {
      core::MutexLock l(mu_);
      checks = liveness ? live_checks_ : ready_checks_;
    }
    const bool verbose = req.query.find("verbose") != std::string::npos;
    bool all_ok = true;
    std::string detail;
    for (const auto& [name, ok_fn] : checks) {
      const bool ok = ok_fn && ok_fn();
      all_ok = all_ok && ok;
      if (ok && verbose) detail += "[+]" + name + " ok\n";
      if (!ok) detail += "[-]" + name + " failed\n";
    }
    const char* what = liveness ? "healthz" : "readyz";
    if (all_ok)
      return ServerResponse{200, "text/plain; charset=utf-8", verbose ? detail + what + " check passed\n" : "ok"};
    return ServerResponse{503, "text/plain; charset=utf-8", detail + what + " check failed\n"};
  };
  // Everything on the metrics address but the probes sits behind the same TLS and auth (metrics_auth.h).
  std::shared_ptr<RequestAuthorizer> authz;
  if (o_.metrics_serving.auth == "kubernetes" && AddressOn(o_.metrics_address)) {
    auto c = ClientFor("metrics-auth", {20, 40});
    if (!c.ok()) return c.status().Annotate("--metrics-auth=kubernetes");
    authz = std::make_shared<RequestAuthorizer>(*c, *clock_);
  }
  auto guard = [authz](HttpHandler h) -> HttpHandler {
    if (!authz) return h;
    return [authz, h = std::move(h)](const ServerRequest& r) {
      if (auto denied = authz->Check(r)) return *denied;
      return h(r);
    };
  };
  // What changes state or costs work (the log level, the what-if) is never open to the network without an
  // authorizer: reading /metrics tells a neighbour little, silencing the logs or loading the state thread a lot.
  const MetricsServing serving = o_.metrics_serving;
  auto action_guard = [authz, serving](HttpHandler h) -> HttpHandler {
    return [authz, serving, h = std::move(h)](const ServerRequest& r) {
      if (authz) {
        if (auto denied = authz->Check(r)) return *denied;
      } else if (auto denied = CheckActionPeer(serving, r)) {
        return *denied;
      }
      return h(r);
    };
  };
  auto probes = [&](HttpServer& s) {
    s.Handle("/healthz", [checks_page](const ServerRequest& r) { return checks_page(true, r); });
    s.Handle("/livez", [checks_page](const ServerRequest& r) { return checks_page(true, r); });
    s.Handle("/readyz", [checks_page](const ServerRequest& r) { return checks_page(false, r); });
  };
  auto install = [&](HttpServer& s) {
    s.Handle("/metrics", guard([this](const ServerRequest&) {
      return ServerResponse{200, "text/plain; version=0.0.4; charset=utf-8", ScrapeMetrics()};
    }));
    // The log level at run time, as Kubernetes components offer it: PUT a klog verbosity ("4") or a level name
    // ("debug"); GET tells the current one.
    auto level = [](const ServerRequest& r) {
      if (r.method == "PUT") {
        std::string v = r.body;
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.erase(0, 1);
        auto parsed = log::LevelFromFlag(v);
        if (!parsed.ok()) return ServerResponse{400, "text/plain; charset=utf-8", parsed.status().message() + "\n"};
        const log::Level was = log::GetLevel();
        log::SetLevel(*parsed);
        log::Info("log level changed").Kv("from", log::LevelName(was)).Kv("to", log::LevelName(*parsed));
        return ServerResponse{200, "text/plain; charset=utf-8", std::string(log::LevelName(*parsed)) + "\n"};
      }
      return ServerResponse{200, "text/plain; charset=utf-8", std::string(log::LevelName(log::GetLevel())) + "\n"};
    };
    s.Handle("/debug/flags/v", guard(level));
    s.HandlePut("/debug/flags/v", action_guard(level));
  };
  if (AddressOn(o_.metrics_address)) {
    HttpServerOptions so;
    so.tls_cert_file = o_.metrics_serving.tls_cert_file;
    so.tls_key_file = o_.metrics_serving.tls_key_file;
    so.client_ca_file = o_.metrics_serving.client_ca_file;
    metrics_srv_ = std::make_unique<HttpServer>(so);
    install(*metrics_srv_);
    probes(*metrics_srv_);
    {
      core::MutexLock l(mu_);
      for (const auto& [path, handler] : post_handlers_) metrics_srv_->HandlePost(path, action_guard(handler));
      for (const auto& [path, handler] : get_handlers_) metrics_srv_->Handle(path, guard(handler));
    }
    if (auto s = metrics_srv_->Start(o_.metrics_address); !s.ok())
      return s.Annotate("serving /metrics on " + o_.metrics_address);
    metrics_port_ = metrics_srv_->port();
  }
  if (AddressOn(o_.health_address) && o_.health_address != o_.metrics_address) {
    health_srv_ = std::make_unique<HttpServer>();
    probes(*health_srv_);
    // An unprotected metrics server's endpoints are on the health address too (older deployments scrape
    // it); a protected one's never are, or the health port would be a way around the protection.
    const MetricsServing& ms = o_.metrics_serving;
    if (ms.auth == "none" && ms.tls_cert_file.empty()) install(*health_srv_);
    if (auto s = health_srv_->Start(o_.health_address); !s.ok())
      return s.Annotate("serving /healthz on " + o_.health_address);
  }
  return core::Status::OK();
}

void Manager::StartRunnables(bool leader) {
  core::MutexLock l(mu_);
  for (auto& slot : runnables_) {
    if (slot.r->NeedsLeaderElection() != leader || slot.t.joinable()) continue;
    std::stop_token tok = leader ? leader_stop_.get_token() : all_stop_.get_token();
    Runnable* r = slot.r.get();
    slot.t = std::thread([this, r, tok] {
      core::Status s = r->Run(tok);
      if (!s.ok()) {
        log::Error("runnable failed; stopping").Kv("runnable", r->name()).Kv("error", s);
        core::MutexLock l2(mu_);
        if (failure_.ok()) failure_ = s.Annotate(std::string(r->name()));
        stop_ = true;
        cv_.NotifyAll();
      } else if (!tok.stop_requested()) {
        // A runnable that ends on its own ends the process: nothing restarts it here.
        log::Warn("runnable returned before stop; stopping").Kv("runnable", r->name());
        core::MutexLock l2(mu_);
        stop_ = true;
        cv_.NotifyAll();
      }
    });
  }
}

void Manager::StopRunnables(bool leader) {
  (leader ? leader_stop_ : all_stop_).request_stop();
  std::vector<std::thread*> ts;
  {
    core::MutexLock l(mu_);
    for (auto it = runnables_.rbegin(); it != runnables_.rend(); ++it)
      if (it->r->NeedsLeaderElection() == leader && it->t.joinable()) ts.push_back(&it->t);
  }
  for (auto* t : ts) t->join();
}

bool Manager::WaitSome(std::chrono::milliseconds d) {
  core::MutexLock l(mu_);
  const auto deadline = std::chrono::steady_clock::now() + d;
  while (!stop_ && !lost_ && cv_.WaitUntil(l, deadline) != std::cv_status::timeout) {
  }
  if (o_.install_signal_handlers && StopRequested()) stop_ = true;
  return stop_ || lost_;
}

void Manager::Stop() {
  core::MutexLock l(mu_);
  stop_ = true;
  cv_.NotifyAll();
}

bool Manager::leading() const {
  core::MutexLock l(mu_);
  return leading_;
}

bool Manager::lost_lease() const {
  core::MutexLock l(mu_);
  return lost_;
}

bool Manager::running() const {
  core::MutexLock l(mu_);
  return running_;
}

int Manager::Run() {
  if (auto s = StartServers(); !s.ok()) {
    log::Error("cannot start").Kv("error", s);
    return 2;
  }
  AddReadinessCheck("leadership", [this] {
    core::MutexLock l(mu_);
    return !lost_;
  });
  metrics::Gauge* leader_gauge = nullptr;
  if (!o_.leader_metric.empty())
    leader_gauge = registry_->AddGauge(o_.leader_metric, "1 while this replica holds the " + o_.lock_name + " lease").With({});

  StartRunnables(false);
  if (o_.leader_elect) {
    if (o_.ensure_lock_namespace && !main_->Raw("GET", "/api/v1/namespaces/" + o_.lock_namespace, nullptr).ok()) {
      // A fresh cluster may not have the namespace yet (Volcano's chart creates volcano-system). Best
      // effort: without the right, leader election reports the error.
      api::json body = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", o_.lock_namespace}}}};
      auto r = main_->Raw("POST", "/api/v1/namespaces", &body);
      if (!r.ok() && !core::IsAlreadyExists(r.status()))
        log::Warn("cannot create the leader-election namespace").Kv("namespace", o_.lock_namespace).Kv("error", r.status());
    }
    // Its own client and limiter: the role's own traffic (binds, reconciles) can never delay a renewal
    // until the lease is lost.
    auto lease_client = ClientFor("leader-election", {5, 10});
    if (!lease_client.ok()) {
      log::Error("cannot start").Kv("error", lease_client.status());
      Stop();
      StopRunnables(false);
      return 2;
    }
    LeaderElectionConfig lc;
    lc.lock_namespace = o_.lock_namespace;
    lc.lock_name = o_.lock_name;
    lc.lease_duration = o_.lease_duration;
    lc.renew_deadline = o_.renew_deadline;
    lc.retry_period = o_.retry_period;
    lc.on_started_leading = [this, leader_gauge] {
      if (leader_gauge) leader_gauge->Set(1);
      core::MutexLock l(mu_);
      leading_ = true;
      cv_.NotifyAll();
    };
    lc.on_stopped_leading = [this, leader_gauge] {
      if (leader_gauge) leader_gauge->Set(0);
      core::MutexLock l(mu_);
      if (leading_) lost_ = true;
      leading_ = false;
      cv_.NotifyAll();
    };
    auto el = LeaderElector::Create(*lease_client, lc, clock_);
    if (!el.ok()) {
      log::Error("leader election").Kv("error", el.status());
      Stop();
      StopRunnables(false);
      return 2;
    }
    elector_ = std::move(*el);
    elector_thread_ = std::thread([this] { elector_->Run(); });
    log::Info("waiting for leadership")
        .Kv("lease", o_.lock_namespace + "/" + o_.lock_name)
        .Kv("identity", elector_->identity());
    while (!leading() && !WaitSome(std::chrono::milliseconds(100))) {
    }
  } else {
    if (leader_gauge) leader_gauge->Set(1);
    core::MutexLock l(mu_);
    leading_ = true;
  }

  if (leading()) {
    StartRunnables(true);
    {
      core::MutexLock l(mu_);
      running_ = true;
    }
    log::Info("running").Kv("component", o_.component);
    while (!WaitSome(std::chrono::milliseconds(100))) {
    }
  }

  int code = 0;
  core::Status failure;
  bool lost = false;
  {
    core::MutexLock l(mu_);
    failure = failure_;
    lost = lost_;
  }
  if (lost) {
    log::Error("leadership lost; exiting so a clean replica takes over");
    code = 1;
  } else if (!failure.ok()) {
    code = failure.code() == core::StatusCode::kInvalidArgument ? 2 : 1;
  } else if (o_.install_signal_handlers && StopRequested()) {
    log::Info("stopping").Kv("signal", StopSignal());
  }
  StopRunnables(true);
  if (elector_) {
    elector_->Stop();  // releases the lease when leading
    if (elector_thread_.joinable()) elector_thread_.join();
  }
  StopRunnables(false);
  factory_->StopAll();
  EventRecorder* rec = nullptr;
  {
    core::MutexLock l(mu_);
    rec = recorder_.get();
  }
  if (rec) {
    rec->Flush(std::chrono::milliseconds(code == 0 ? 1000 : 0));
    rec->Shutdown();
  }
  if (metrics_srv_) metrics_srv_->Stop();
  if (health_srv_) health_srv_->Stop();
  return code;
}

}  // namespace tephra::kube
