#include "tephra/scheduler/process.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"
#include "tephra/core/clock.h"
#include "tephra/kube/config.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/leader_election.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/log.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/signals.h"
#include "tephra/kube/transport.h"
#include "tephra/sched/scheduler.h"
#include "tephra/scheduler/binder.h"
#include "tephra/scheduler/conf.h"
#include "tephra/scheduler/evictor.h"
#include "tephra/scheduler/convert.h"
#include "tephra/scheduler/extender.h"
#include "tephra/scheduler/status_writer.h"

namespace tephra::scheduler {

using api::json;
namespace log = kube::log;
namespace metrics = kube::metrics;

namespace {

// Keeps only what scheduling reads from a pod before it is decoded into the cache: at 100k pods the
// informer's memory is dominated by env, volumes, probes and container statuses, none of which matter here.
void CompactPod(json* j) {
  api::StripForCache(j);
  if (!j->is_object()) return;
  if (auto m = j->find("metadata"); m != j->end() && m->is_object()) {
    // Annotations can be large (kubectl last-applied); keep only the ones the scheduler reads.
    if (auto a = m->find("annotations"); a != m->end() && a->is_object()) {
      json keep = json::object();
      for (std::string_view k : {api::kPodGroupAnnotation, api::kTaskSpecKey})
        if (auto it = a->find(std::string(k)); it != a->end()) keep[std::string(k)] = *it;
      *a = std::move(keep);
    }
    m->erase("ownerReferences");
  }
  if (auto s = j->find("spec"); s != j->end() && s->is_object()) {
    for (const char* k : {"volumes", "securityContext", "imagePullSecrets", "hostAliases", "readinessGates", "dnsConfig"})
      s->erase(k);
    for (const char* list : {"containers", "initContainers"}) {
      auto cs = s->find(list);
      if (cs == s->end() || !cs->is_array()) continue;
      for (auto& c : *cs) {
        if (!c.is_object()) continue;
        json slim = json::object();
        if (c.contains("name")) slim["name"] = c["name"];
        if (c.contains("image")) slim["image"] = c["image"];
        if (c.contains("resources")) slim["resources"] = c["resources"];
        c = std::move(slim);
      }
    }
    s->erase("ephemeralContainers");
  }
  if (auto st = j->find("status"); st != j->end() && st->is_object()) {
    json slim = json::object();
    for (const char* k : {"phase", "nominatedNodeName"})
      if (st->contains(k)) slim[k] = (*st)[k];
    *st = std::move(slim);
  }
}

struct Metrics {
  metrics::Histogram* e2e;
  metrics::HistogramFamily* action;
  metrics::HistogramFamily* plugin;
  metrics::CounterFamily* attempts;
  metrics::Histogram* bind_stage;
  metrics::Gauge* unschedule_jobs;
  metrics::GaugeFamily* queue_cpu;
  metrics::GaugeFamily* queue_mem;
  metrics::GaugeFamily* queue_scalar;
  metrics::Counter* bound;
  metrics::CounterFamily* bind_errors;
  metrics::Gauge* bound_rate;
  metrics::Counter* cycles;
  metrics::CounterFamily* conf_reloads;
  metrics::Gauge* conf_ok;
  metrics::Gauge* leader;
  metrics::Gauge* pending_binds;
  metrics::Counter* early_cycles;

  explicit Metrics(metrics::Registry& r) {
    const auto ms = metrics::ExponentialBuckets(1, 2, 13);  // 1 ms .. 4 s, like Volcano's 1-5000 ms
    e2e = r.AddHistogram("volcano_e2e_scheduling_latency_milliseconds", "E2e scheduling latency (scheduling cycle)", {}, ms).With({});
    action = &r.AddHistogram("volcano_action_scheduling_latency_milliseconds", "Action scheduling latency", {"action"}, ms);
    plugin = &r.AddHistogram("volcano_plugin_scheduling_latency_milliseconds", "Plugin scheduling latency",
                             {"plugin", "OnSession"}, ms);
    attempts = &r.AddCounter("volcano_schedule_attempts_total",
                             "Number of attempts to schedule jobs, by result (scheduled, unschedulable, error)", {"result"});
    bind_stage = r.AddHistogram("volcano_scheduling_stage_duration_milliseconds", "Scheduling stage duration",
                                {"stage"}, ms).With({"Bind"});
    unschedule_jobs = r.AddGauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled").With({});
    queue_cpu = &r.AddGauge("volcano_queue_allocated_milli_cpu", "Allocated CPU count for one queue", {"queue_name"});
    queue_mem = &r.AddGauge("volcano_queue_allocated_memory_bytes", "Allocated memory for one queue", {"queue_name"});
    queue_scalar = &r.AddGauge("volcano_queue_allocated_scalar_resources", "Allocated scalar resources for one queue",
                               {"queue_name", "resource"});
    bound = r.AddCounter("tephra_scheduler_pods_bound_total", "Pods bound by this scheduler (201 or 409 already assigned)").With({});
    bind_errors = &r.AddCounter("tephra_scheduler_bind_errors_total", "Failed pods/binding calls", {"result"});
    bound_rate = r.AddGauge("tephra_scheduler_pods_bound_per_second", "Pods bound per second over the last 10 s").With({});
    cycles = r.AddCounter("tephra_scheduler_cycles_total", "Scheduling cycles run").With({});
    conf_reloads = &r.AddCounter("tephra_scheduler_conf_reloads_total", "Scheduler configuration reloads", {"result"});
    conf_ok = r.AddGauge("tephra_scheduler_conf_last_reload_successful", "1 when the last reload of --scheduler-conf was accepted").With({});
    early_cycles = r.AddCounter("tephra_scheduler_early_cycles_total",
                                "Cycles started before --schedule-period by a relevant change").With({});
    leader = r.AddGauge("tephra_scheduler_is_leader", "1 while this replica holds the scheduler lease").With({});
    pending_binds = r.AddGauge("tephra_scheduler_binds_in_flight", "Binds queued or in flight").With({});
  }
};

// Whether two decoded specs differ, compared through their encoding (the API structs have no operator==;
// PodGroup and Queue updates are rare enough for this to cost nothing).
template <typename Spec>
bool SpecChanged(const Spec& a, const Spec& b) {
  json ja, jb;
  api::Encode(a, &ja);
  api::Encode(b, &jb);
  return ja != jb;
}

std::string PodKeyEvent(const std::string& ns, const std::string& name) { return ns + "/" + name; }

}  // namespace

core::Status EnsureDefaultQueues(kube::Client& client, const std::string& default_queue) {
  // root: not reclaimable; default: reclaimable, weight 1, as Volcano's scheduler creates them. Only created
  // when missing.
  struct Q {
    std::string name;
    bool reclaimable;
  };
  std::vector<Q> qs = {{std::string(api::kRootQueue), false}, {default_queue, true}};
  for (const auto& q : qs) {
    json obj = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                {"kind", "Queue"},
                {"metadata", {{"name", q.name}}},
                {"spec", {{"weight", 1}, {"reclaimable", q.reclaimable}}}};
    if (q.name != api::kRootQueue) obj["spec"]["parent"] = std::string(api::kRootQueue);
    auto r = client.Create(api::Queue::Resource(), "", obj);
    if (!r.ok() && !core::IsAlreadyExists(r.status()))
      return r.status().Annotate("creating queue " + q.name);
  }
  return core::Status::OK();
}

int RunScheduler(const SchedulerOptions& o) {
  if (auto s = log::Init(o.log_level, log::Format::kLogfmt, "scheduler"); !s.ok()) {
    std::fprintf(stderr, "tephra scheduler: %s\n", s.ToString().c_str());
    return 2;
  }
  kube::InstallStopSignals({o.graceful_shutdown, "scheduler"});
  core::RealClock clock;

  // ---- configuration
  std::vector<std::string> warnings;
  sched::SchedulerConf conf = sched::SchedulerConf::Default();
  if (!o.scheduler_conf.empty()) {
    auto c = LoadSchedulerConfFile(o.scheduler_conf, &warnings);
    if (!c.ok()) {
      log::Error("invalid scheduler configuration").Kv("error", c.status());
      return 2;
    }
    conf = std::move(*c);
  }
  auto apply_core_flags = [&](sched::SchedulerConf* c) {
    if (!o.topology_label_keys.empty()) c->core.topology_label_keys = o.topology_label_keys;
    c->core.retry_unchanged_every_cycles = o.retry_unchanged_every_cycles;
  };
  apply_core_flags(&conf);
  auto created = sched::Scheduler::Create(conf, sched::PluginRegistry::Builtin(), &clock, &warnings);
  if (!created.ok()) {
    log::Error("invalid scheduler configuration").Kv("error", created.status());
    return 2;
  }
  std::unique_ptr<sched::Scheduler> core_sched = std::move(*created);
  for (const auto& w : warnings) log::Warn("scheduler configuration").Kv("warning", w);
  core_sched->state().set_options(conf.core);

  // ---- clients: one for binds (its QPS/burst is the bind throttle), one for status and events, so a burst
  // of events never delays binds.
  auto rc = kube::LoadConfig(o.kubeconfig, o.master);
  if (!rc.ok()) {
    log::Error("cannot load kubeconfig").Kv("error", rc.status());
    return 2;
  }
  rc->qps = o.kube_api_qps;
  rc->burst = o.kube_api_burst;
  rc->user_agent = "tephra-scheduler";
  auto client_or = kube::NewClient(*rc);
  auto status_client_or = kube::NewClient(*rc);
  if (!client_or.ok() || !status_client_or.ok()) {
    log::Error("cannot create API client").Kv("error", client_or.ok() ? status_client_or.status() : client_or.status());
    return 2;
  }
  kube::ClientPtr client = *client_or;
  kube::ClientPtr status_client = *status_client_or;
  // Leader election gets a client of its own (own limiter, own connections), as kube-scheduler does: 64 bind
  // workers saturating the bind client's QPS must never delay a lease renewal until the lease is lost.
  kube::RestConfig lrc = *rc;
  lrc.qps = 5;
  lrc.burst = 10;
  lrc.user_agent = "tephra-scheduler/leader-election";
  auto lease_client_or = kube::NewClient(lrc);
  if (!lease_client_or.ok()) {
    log::Error("cannot create API client").Kv("error", lease_client_or.status());
    return 2;
  }

  auto& reg = metrics::Registry::Default();
  Metrics m(reg);
  m.conf_ok->Set(1);

  std::mutex mu;  // guards core_sched (state + cycle) and creation_index

  // Early-cycle trigger: informer callbacks that may make something placeable set `wake`; the loop starts
  // the next cycle as soon as min_schedule_interval allows instead of waiting out the period.
  std::mutex wake_mu;
  std::condition_variable wake_cv;
  bool wake = false;
  auto poke = [&] {
    {
      std::lock_guard wl(wake_mu);
      wake = true;
    }
    wake_cv.notify_one();
  };
  const std::set<std::string> names(o.scheduler_names.begin(), o.scheduler_names.end());

  // ---- informers
  kube::InformerOptions pod_opts;
  pod_opts.transform = CompactPod;
  pod_opts.drop_unknown_fields = true;
  auto pods = std::make_shared<kube::Informer<api::Pod>>(client, pod_opts);
  kube::InformerOptions slim;
  slim.drop_unknown_fields = true;
  auto nodes = std::make_shared<kube::Informer<api::Node>>(client, slim);
  auto pgs = std::make_shared<kube::Informer<api::PodGroup>>(client);  // kept whole: status writes PUT it back
  auto queues = std::make_shared<kube::Informer<api::Queue>>(client);
  auto pcs = std::make_shared<kube::Informer<api::PriorityClass>>(client);
  std::shared_ptr<kube::Informer<api::HyperNode>> hypernodes;
  if (client->Raw("GET", "/apis/topology.volcano.sh/v1alpha1", nullptr).ok()) {
    hypernodes = std::make_shared<kube::Informer<api::HyperNode>>(client);
  } else {
    log::Warn("HyperNode API (topology.volcano.sh/v1alpha1) not served; network topology comes from node labels only");
  }

  std::unordered_map<std::string, uint64_t> creation_index;
  uint64_t arrival = 0;
  auto task_of = [&](const api::Pod& p) {
    sched::TaskInfo t = ToTaskInfo(p, &core_sched->state().resources(), names);
    auto [it, fresh] = creation_index.try_emplace(t.uid, 0);
    if (fresh) {
      // creationTimestamp (seconds) first, then arrival order: pods of one job created in the same second
      // keep the order the controller created them in.
      auto secs = std::chrono::duration_cast<std::chrono::seconds>(ParseTime(p.metadata.creation_timestamp).time_since_epoch()).count();
      it->second = (static_cast<uint64_t>(secs) << 24) | (++arrival & 0xFFFFFF);
    }
    t.creation_index = it->second;
    return t;
  };
  pods->AddEventHandler({
      .on_add = [&](const auto& p) {
        if (!ShouldTrack(*p, names)) return;
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertPod(task_of(*p));
        }
        poke();  // a new pod: pending ones want placing, bound ones change capacity
      },
      .on_update = [&](const auto& old, const auto& p) {
        {
          std::lock_guard l(mu);
          if (ShouldTrack(*p, names)) {
            core_sched->state().UpsertPod(task_of(*p));
          } else if (ShouldTrack(*old, names)) {
            core_sched->state().RemovePod(p->metadata.uid);
            creation_index.erase(p->metadata.uid);
          }
        }
        // Capacity is freed when a pod finishes or starts terminating; a plain status update of a running
        // pod (the common case under load) changes nothing the next cycle could use.
        if (old->status.phase != p->status.phase || old->metadata.deletion_timestamp != p->metadata.deletion_timestamp)
          poke();
      },
      .on_delete = [&](const auto& p) {
        {
          std::lock_guard l(mu);
          core_sched->state().RemovePod(p->metadata.uid);
          creation_index.erase(p->metadata.uid);
        }
        poke();
      },
  });
  nodes->AddEventHandler({
      .on_add = [&](const auto& n) {
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertNode(ToNodeInfo(*n, &core_sched->state().resources()));
        }
        poke();
      },
      .on_update = [&](const auto&, const auto& n) {
        std::lock_guard l(mu);
        core_sched->state().UpsertNode(ToNodeInfo(*n, &core_sched->state().resources()));
      },
      .on_delete = [&](const auto& n) {
        {
          std::lock_guard l(mu);
          core_sched->state().RemoveNode(n->metadata.name);
        }
        poke();
      },
  });
  pgs->AddEventHandler({
      .on_add = [&](const auto& pg) {
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertJob(ToJobInfo(*pg, &core_sched->state().resources(), o.default_queue));
        }
        poke();
      },
      .on_update = [&](const auto& old, const auto& pg) {
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertJob(ToJobInfo(*pg, &core_sched->state().resources(), o.default_queue));
        }
        // Our own status writes come back as updates; only a spec change is new input.
        if (SpecChanged(old->spec, pg->spec)) poke();
      },
      .on_delete = [&](const auto& pg) {
        std::lock_guard l(mu);
        core_sched->state().RemoveJob(pg->metadata.namespace_ + "/" + pg->metadata.name);
      },
  });
  queues->AddEventHandler({
      .on_add = [&](const auto& q) {
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertQueue(ToQueueInfo(*q, &core_sched->state().resources()));
        }
        poke();
      },
      .on_update = [&](const auto& old, const auto& q) {
        {
          std::lock_guard l(mu);
          core_sched->state().UpsertQueue(ToQueueInfo(*q, &core_sched->state().resources()));
        }
        if (SpecChanged(old->spec, q->spec) || old->status.state != q->status.state) poke();  // not our allocated writes
      },
      .on_delete = [&](const auto& q) {
        std::lock_guard l(mu);
        core_sched->state().RemoveQueue(q->metadata.name);
      },
  });
  pcs->AddEventHandler({
      .on_add = [&](const auto& pc) {
        std::lock_guard l(mu);
        core_sched->state().SetPriorityClass(pc->metadata.name, pc->value);
      },
      .on_update = [&](const auto&, const auto& pc) {
        std::lock_guard l(mu);
        core_sched->state().SetPriorityClass(pc->metadata.name, pc->value);
      },
      .on_delete = [&](const auto& pc) {
        std::lock_guard l(mu);
        core_sched->state().SetPriorityClass(pc->metadata.name, 0);
      },
  });
  if (hypernodes) {
    hypernodes->AddEventHandler({
        .on_add = [&](const auto& h) {
          std::lock_guard l(mu);
          core_sched->state().UpsertHyperNode(ToHyperNodeInfo(*h));
        },
        .on_update = [&](const auto&, const auto& h) {
          std::lock_guard l(mu);
          core_sched->state().UpsertHyperNode(ToHyperNodeInfo(*h));
        },
        .on_delete = [&](const auto& h) {
          std::lock_guard l(mu);
          core_sched->state().RemoveHyperNode(h->metadata.name);
        },
    });
  }

  // ---- health and metrics
  std::atomic<bool> synced{false}, leading{false}, lost{false};
  std::atomic<int64_t> last_cycle_ms{0};
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch()).count();
  };
  kube::HttpServer metrics_srv, health_srv;
  auto healthz_h = [&](const kube::ServerRequest&) {
    // Unhealthy when the leader's loop stopped cycling (stuck), so a liveness probe restarts it.
    const int64_t stale = std::max<int64_t>(30000, 10 * o.schedule_period.count());
    if (leading && last_cycle_ms > 0 && now_ms() - last_cycle_ms > stale)
      return kube::ServerResponse{503, "text/plain", "scheduling loop stalled\n"};
    return kube::ServerResponse{200, "text/plain", "ok\n"};
  };
  std::vector<kube::ReadinessCheck> checks = {{"informers-synced", [&] { return synced.load(); }},
                                              {"leadership", [&] { return !lost.load(); }}};
  const bool metrics_on = !o.listen_address.empty() && o.listen_address != "0";
  const bool health_on = !o.health_address.empty() && o.health_address != "0" && o.health_address != o.listen_address;
  if (metrics_on) {
    kube::InstallStandardEndpoints(metrics_srv, reg, checks);
    metrics_srv.Handle("/healthz", healthz_h);
    if (auto s = metrics_srv.Start(o.listen_address); !s.ok()) {
      log::Error("cannot serve metrics").Kv("address", o.listen_address).Kv("error", s);
      return 2;
    }
  }
  if (health_on) {
    kube::InstallStandardEndpoints(health_srv, reg, checks);
    health_srv.Handle("/healthz", healthz_h);
    if (auto s = health_srv.Start(o.health_address); !s.ok()) {
      log::Error("cannot serve health").Kv("address", o.health_address).Kv("error", s);
      return 2;
    }
  }

  // ---- writers
  StatusWriter writer(status_client, [&](const std::string& ns, const std::string& n) { return pgs->Get(ns, n); },
                      &clock, o.scheduler_names.front());
  Evictor evictor(status_client, [&](EventSpec e) { writer.Event(std::move(e)); });
  // Successful binds are recorded here and applied to the core under `mu` at the start of the next cycle
  // (or before a failure is applied): a bind worker must never wait for a running cycle to release `mu`,
  // or the cycle's length would throttle the binder. Until applied, the task stays kBinding, which
  // already counts its node capacity as taken, so nothing is double-booked.
  std::mutex settled_mu;
  std::vector<std::string> settled;
  auto apply_settled = [&] {  // caller holds mu
    std::vector<std::string> v;
    {
      std::lock_guard sl(settled_mu);
      v.swap(settled);
    }
    for (const auto& uid : v) core_sched->state().BindSucceeded(uid);
  };
  std::unique_ptr<Binder> binder;
  binder = std::make_unique<Binder>(client, o.bind_workers, [&](const BindOutcome& out) {
    std::vector<std::string> rolled;
    if (out.result == BindResult::kFailed) {
      std::lock_guard l(mu);
      apply_settled();  // gang members already bound must not be rolled back with the failed one
      rolled = ApplyBindOutcome(core_sched->state(), out);
    } else {
      std::lock_guard sl(settled_mu);
      settled.push_back(out.decision.task_uid);
    }
    if (!rolled.empty()) binder->Drop(rolled);
    if (out.result == BindResult::kFailed) {
      m.bind_errors->With({core::IsNotFound(out.status) ? "not_found" : "error"})->Inc();
      log::Warn("bind failed; gang rolled back")
          .Kv("pod", PodKeyEvent(out.decision.ns, out.decision.name))
          .Kv("node", out.decision.node)
          .Kv("rolled_back", rolled.size())
          .Kv("error", out.status);
      return;
    }
    m.bound->Inc();
    if (out.result == BindResult::kAlreadyAssigned) {
      m.bind_errors->With({"already_assigned"})->Inc();
      return;
    }
    writer.Event({"Pod", out.decision.ns, out.decision.name, out.decision.task_uid, "Normal", "Scheduled",
                  "Successfully assigned " + out.decision.ns + "/" + out.decision.name + " to " + out.decision.node});
  });

  // Scheduled events wait (up to 2 s) for the binder to drain, so a gang's binds are not slowed by its own
  // events on a CPU-bound API server; they are written right after.
  writer.SetEventGate([&] { binder->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(2)); });

  // ---- start
  pods->Start();
  nodes->Start();
  pgs->Start();
  queues->Start();
  pcs->Start();
  if (hypernodes) hypernodes->Start();
  log::Info("waiting for informer caches").Kv("scheduler_names", o.scheduler_names.size());
  while (!kube::StopRequested()) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    bool ok = pods->WaitForSync(deadline) && nodes->WaitForSync(deadline) && pgs->WaitForSync(deadline) &&
              queues->WaitForSync(deadline) && pcs->WaitForSync(deadline) &&
              (!hypernodes || hypernodes->WaitForSync(deadline));
    if (ok) break;
  }
  if (kube::StopRequested()) return 0;
  synced = true;

  // ---- kube-scheduler extender API (docs/extender.md). Served by every replica once the caches are
  // synced: the informers keep a standby's state as current as the leader's, so no leadership is needed.
  kube::HttpServer extender_srv;
  std::unique_ptr<Extender> extender;
  if (!o.extender_address.empty()) {
    auto e = Extender::Create(conf, sched::PluginRegistry::Builtin());
    if (!e.ok()) {
      log::Error("extender configuration").Kv("error", e.status());
      return 2;
    }
    extender = std::move(*e);
    InstallExtenderEndpoints(
        extender_srv, o.extender_prefix, extender.get(),
        [&](const std::function<void(sched::ClusterState&)>& fn) {
          std::lock_guard l(mu);
          fn(core_sched->state());
        },
        client);
    if (auto s = extender_srv.Start(o.extender_address); !s.ok()) {
      log::Error("cannot serve the extender API").Kv("address", o.extender_address).Kv("error", s);
      return 2;
    }
    log::Info("serving the kube-scheduler extender API").Kv("address", o.extender_address).Kv("prefix", o.extender_prefix);
  }
  {
    std::lock_guard l(mu);
    log::Info("caches synced").Kv("nodes", core_sched->state().node_count()).Kv("tasks", core_sched->state().task_count());
  }

  std::unique_ptr<kube::LeaderElector> elector;
  std::thread elector_thread;
  if (o.leader_elect) {
    // Volcano's lock name: a Tephra and a Volcano scheduler pointed at one cluster never lead together.
    kube::LeaderElectionConfig lc;
    lc.lock_namespace = o.lock_object_namespace;
    lc.lock_name = "vc-scheduler";
    lc.on_started_leading = [&] {
      leading = true;
      m.leader->Set(1);
    };
    lc.on_stopped_leading = [&] {
      if (leading) lost = true;
      m.leader->Set(0);
    };
    auto el = kube::LeaderElector::Create(*lease_client_or, lc, &clock);
    if (!el.ok()) {
      log::Error("leader election").Kv("error", el.status());
      return 2;
    }
    elector = std::move(*el);
    elector_thread = std::thread([&] { elector->Run(); });
    log::Info("waiting for leadership").Kv("lease", lc.lock_namespace + "/" + lc.lock_name).Kv("identity", elector->identity());
    while (!leading && !kube::StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (kube::StopRequested()) {
      elector->Stop();
      elector_thread.join();
      return 0;
    }
  } else {
    leading = true;
    m.leader->Set(1);
  }

  if (o.create_default_queues) {
    // The Queue CRD may be installed after us; retry a few times rather than fail the process.
    for (int i = 0; i < 30 && !kube::StopRequested(); ++i) {
      auto s = EnsureDefaultQueues(*client, o.default_queue);
      if (s.ok()) break;
      log::Warn("cannot create default queues yet").Kv("error", s);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }

  // ---- loop
  FileChangePoller poller(o.scheduler_conf);
  if (!o.scheduler_conf.empty()) poller.Changed();  // the start-up read counts as seen
  auto next_conf_check = clock.Now() + o.conf_poll;
  auto next_status_resync = clock.Now() + o.status_resync_period;
  std::deque<std::pair<int64_t, double>> bound_window;
  log::Info("scheduler started").Kv("period_ms", static_cast<int64_t>(o.schedule_period.count())).Kv("actions", conf.actions.size());
  int exit_code = 0;
  while (!kube::StopRequested()) {
    if (lost) {
      log::Error("leadership lost; exiting so a clean replica takes over");
      exit_code = 1;
      break;
    }
    const auto cycle_start = clock.Now();
    if (!o.scheduler_conf.empty() && cycle_start >= next_conf_check) {
      next_conf_check = cycle_start + o.conf_poll;
      if (poller.Changed()) {
        std::vector<std::string> w;
        auto c = LoadSchedulerConfFile(o.scheduler_conf, &w);
        core::Status s = c.ok() ? core::Status::OK() : c.status();
        if (c.ok()) {
          apply_core_flags(&*c);
          std::lock_guard l(mu);
          s = core_sched->UpdateConf(*c, &w);
          if (s.ok() && extender) s = extender->UpdateConf(*c);
          if (s.ok()) core_sched->state().set_options(c->core);
        }
        if (s.ok()) {
          m.conf_reloads->With({"success"})->Inc();
          m.conf_ok->Set(1);
          log::Info("scheduler configuration reloaded").Kv("file", o.scheduler_conf);
          for (const auto& x : w) log::Warn("scheduler configuration").Kv("warning", x);
        } else {
          m.conf_reloads->With({"rejected"})->Inc();
          m.conf_ok->Set(0);
          log::Error("scheduler configuration rejected; keeping the last good one").Kv("file", o.scheduler_conf).Kv("error", s);
        }
      }
    }

    sched::CycleResult res;
    std::vector<EventSpec> pod_events;
    std::vector<PodConditionSpec> pod_conditions;
    int64_t unschedulable_jobs = 0;
    {
      std::lock_guard l(mu);
      apply_settled();
      if (o.status_resync_period.count() > 0 && cycle_start >= next_status_resync) {
        next_status_resync = cycle_start + o.status_resync_period;
        core_sched->ResyncStatus();
      }
      res = core_sched->RunCycle(clock.WallNow());
      // FailedScheduling on the pending pods of gangs that just became unschedulable (the core emits the
      // PodGroup event only when the condition changes, so this does not repeat every cycle).
      for (const auto& e : res.events) {
        if (e.kind != "PodGroup" || e.type != "Warning") continue;
        int n = 0;
        for (const sched::TaskInfo* t : core_sched->state().TasksOfJob(e.ns + "/" + e.name)) {
          if (t->status != sched::TaskStatus::kPending) continue;
          // Every waiting pod gets the condition (tools read it per pod); events stop at 50: a 1,000-pod
          // gang does not need 1,000 identical ones.
          pod_conditions.push_back({t->ns, t->name, t->uid, "Unschedulable", e.message});
          if (++n <= 50) pod_events.push_back({"Pod", t->ns, t->name, t->uid, "Warning", "FailedScheduling", e.message});
        }
      }
      core_sched->state().ForEachJob([&](const sched::JobInfo& j) {
        if (j.Count(sched::TaskStatus::kPending) > 0 && j.ReadyCount() < j.min_member) ++unschedulable_jobs;
      });
    }
    const size_t nbinds = res.binds.size();
    binder->Submit(std::move(res.binds));
    if (!res.evictions.empty()) {
      // Volcano evicts by deleting the victim (Evict events on the pod and its PodGroup); a failed delete
      // gives the victim back to the core so it is not counted as releasing.
      EvictOutcome eo = evictor.Execute(res.evictions);
      if (!eo.failed_uids.empty()) {
        std::lock_guard l(mu);
        for (const auto& uid : eo.failed_uids) core_sched->state().EvictFailed(uid);
      }
      log::Info("evictions").Kv("deleted", eo.deleted).Kv("duplicates", eo.duplicates).Kv("failed", eo.failed_uids.size());
    }
    for (auto& u : res.pod_groups) writer.PodGroup(std::move(u));
    for (const auto& q : res.queues) {
      api::ResourceList alloc;
      std::vector<std::string> cleared;
      {
        std::lock_guard l(mu);
        alloc = FromResource(q.allocated, core_sched->state().resources());
        const auto& rr = core_sched->state().resources();
        for (int i = 0; i < rr.size(); ++i)
          if (i != sched::kPods && !alloc.count(rr.Name(i))) cleared.push_back(rr.Name(i));
        m.queue_cpu->With({q.queue})->Set(static_cast<double>(q.allocated.Get(sched::kCpu)));
        m.queue_mem->With({q.queue})->Set(static_cast<double>(q.allocated.Get(sched::kMemory)));
        for (int i = sched::kFirstScalar; i < rr.size(); ++i)
          m.queue_scalar->With({q.queue, rr.Name(i)})->Set(static_cast<double>(q.allocated.Get(i)));
      }
      writer.Queue(q.queue, std::move(alloc), std::move(cleared));
    }
    for (const auto& e : res.events) writer.Event({e.kind, e.ns, e.name, "", e.type, e.reason, e.message});
    for (auto& e : pod_events) writer.Event(std::move(e));
    for (auto& c : pod_conditions) writer.PodUnschedulable(std::move(c));

    // metrics
    m.cycles->Inc();
    m.e2e->Observe(static_cast<double>(res.metrics.e2e_us) / 1000.0);
    for (const auto& [a, us] : res.metrics.action_us) m.action->With({a})->Observe(static_cast<double>(us) / 1000.0);
    for (const auto& [p, us] : res.metrics.plugin_us) m.plugin->With({p, "OnSession"})->Observe(static_cast<double>(us) / 1000.0);
    for (const auto& [r, n] : res.metrics.schedule_attempts) m.attempts->With({r})->Inc(static_cast<double>(n));
    m.unschedule_jobs->Set(static_cast<double>(unschedulable_jobs));
    m.pending_binds->Set(static_cast<double>(binder->Pending()));
    const int64_t t = now_ms();
    bound_window.emplace_back(t, m.bound->Value());
    while (bound_window.size() > 1 && t - bound_window.front().first > 10000) bound_window.pop_front();
    if (bound_window.size() > 1 && t > bound_window.front().first)
      m.bound_rate->Set((bound_window.back().second - bound_window.front().second) * 1000.0 /
                        static_cast<double>(t - bound_window.front().first));
    last_cycle_ms = t;
    if (nbinds > 0 || !res.pod_groups.empty())
      log::Debug("cycle").Kv("binds", nbinds).Kv("podgroups", res.pod_groups.size()).Kv("us", res.metrics.e2e_us);

    // Wait for the period to end, or for a poke once the minimum gap has passed; in slices of at most 50 ms
    // so signals and leadership loss are noticed promptly.
    const auto cycle_end = clock.Now();
    const auto latest = cycle_start + o.schedule_period;
    const auto earliest = cycle_end + std::max<std::chrono::nanoseconds>(o.min_schedule_interval, cycle_end - cycle_start);
    {
      std::unique_lock wl(wake_mu);
      while (!kube::StopRequested() && !lost) {
        const auto now = clock.Now();
        if (now >= latest || (wake && now >= earliest)) break;
        const auto until = std::min(latest, wake ? earliest : now + std::chrono::milliseconds(50));
        wake_cv.wait_for(wl, std::min<std::chrono::nanoseconds>(until - now, std::chrono::milliseconds(50)));
      }
      if (wake && clock.Now() >= earliest) m.early_cycles->Inc();
      wake = false;
    }
  }
  log::Info("scheduler stopping").Kv("signal", kube::StopSignal());
  // Within --graceful-shutdown-seconds (the stop-signal thread exits the process when it passes): binds in
  // flight first (a standby must not start deciding while ours still land), then the status writer, then
  // the lease (released on a clean stop, so a standby takes over at its next poll instead of waiting for
  // the lease to expire).
  binder->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(exit_code ? 0 : 2));
  binder->Stop();
  writer.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(exit_code ? 0 : 1));
  writer.Stop();
  if (elector) {
    elector->Stop();
    if (elector_thread.joinable()) elector_thread.join();
  }
  pods->Stop();
  nodes->Stop();
  pgs->Stop();
  queues->Stop();
  pcs->Stop();
  if (hypernodes) hypernodes->Stop();
  extender_srv.Stop();
  metrics_srv.Stop();
  health_srv.Stop();
  return exit_code;
}

}  // namespace tephra::scheduler
