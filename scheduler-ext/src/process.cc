#include "tephra/scheduler/process.h"

#include <deque>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "tephra/api/apps.h"
#include "tephra/api/batch.h"
#include "tephra/api/defaults.h"
#include "tephra/api/duration.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/api/resources.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"
#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/config.h"
#include "tephra/kube/http_server.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/log.h"
#include "tephra/kube/metrics.h"
#include "tephra/kube/manager.h"
#include "tephra/sched/scheduler.h"
#include "tephra/scheduler/binder.h"
#include "tephra/scheduler/conf.h"
#include "tephra/scheduler/evictor.h"
#include "tephra/scheduler/convert.h"
#include "tephra/scheduler/extender.h"
#include "tephra/scheduler/state_metrics.h"
#include "tephra/scheduler/status_writer.h"
#include "tephra/scheduler/webview.h"

namespace tephra::scheduler {

using api::json;
namespace log = kube::log;
namespace metrics = kube::metrics;

namespace {

// kube-system ConfigMaps are read for the Ascend device plugins' card reports only: every other one is cut to
// its key, and a report keeps nothing but its DeviceInfoCfg.
void CompactDeviceInfo(json* j) {
  if (!j->is_object()) return;
  json keep = json::object();
  if (auto m = j->find("metadata"); m != j->end() && m->is_object()) {
    json meta = json::object();
    for (const char* k : {"name", "namespace", "uid", "resourceVersion"})
      if (m->contains(k)) meta[k] = (*m)[k];
    keep["metadata"] = std::move(meta);
  }
  const std::string name = keep.contains("metadata") ? keep["metadata"].value("name", "") : "";
  if (name.starts_with(api::kAscendDeviceInfoPrefix))
    if (auto d = j->find("data"); d != j->end() && d->is_object())
      if (auto cfg = d->find(std::string(api::kAscendDeviceInfoKey)); cfg != d->end())
        keep["data"] = {{std::string(api::kAscendDeviceInfoKey), *cfg}};
  *j = std::move(keep);
}

// Services and workload controllers are read for their selectors only (system-default topology spread):
// metadata is cut to the key, and everything but the selector goes.
void CompactSelectorSource(json* j) {
  api::StripForCache(j);
  if (!j->is_object()) return;
  if (auto m = j->find("metadata"); m != j->end() && m->is_object()) {
    json keep = json::object();
    for (const char* k : {"name", "namespace", "uid", "resourceVersion"})
      if (auto it = m->find(k); it != m->end()) keep[k] = std::move(*it);
    *m = std::move(keep);
  }
  if (auto s = j->find("spec"); s != j->end() && s->is_object()) {
    json keep = json::object();
    if (auto it = s->find("selector"); it != s->end()) keep["selector"] = std::move(*it);
    *s = std::move(keep);
  }
  j->erase("status");
}

struct Metrics {
  metrics::Histogram* e2e;
  metrics::HistogramFamily* action;
  metrics::HistogramFamily* plugin;
  metrics::CounterFamily* attempts;
  metrics::Histogram* open_session;
  metrics::Histogram* bind_stage;
  metrics::Histogram* prebind_stage;
  metrics::Histogram* assumed_latency;  // volcano_task_scheduling_latency_milliseconds{stage="Assumed"}
  metrics::Histogram* bound_latency;    // {stage="Bound"}
  metrics::Histogram* job_latency;
  metrics::GaugeFamily* job_duration;
  metrics::GaugeFamily* job_start;
  metrics::GaugeFamily* job_last;
  metrics::CounterFamily* job_retries;
  metrics::Gauge* preempt_victims;
  metrics::Counter* preempt_attempts;
  metrics::CounterFamily* eviction_tx;
  metrics::GaugeFamily* goroutines;
  metrics::Gauge* unschedule_jobs;
  metrics::Counter* bound;
  metrics::CounterFamily* bind_errors;
  metrics::CounterFamily* bind_refused;
  metrics::Gauge* bound_rate;
  metrics::Counter* cycles;
  metrics::CounterFamily* conf_reloads;
  metrics::Gauge* conf_ok;
  metrics::Gauge* pending_binds;
  metrics::Counter* early_cycles;
  metrics::Counter* yielded_cycles;
  metrics::Counter* cycle_errors;
  metrics::Histogram* event_apply;
  metrics::Gauge* inbox_depth;
  metrics::CounterFamily* status_writes;
  metrics::CounterFamily* evictions;
  metrics::GaugeFamily* estimated_start;
  metrics::Gauge* reservations;
  metrics::Counter* resource_names_dropped;

  explicit Metrics(metrics::Registry& r) {
    // Volcano's bucket ranges, per metric (docs/metrics.md).
    using metrics::ExponentialBucketsRange;
    e2e = r.AddHistogram("volcano_e2e_scheduling_latency_milliseconds",
                         "Duration of one scheduling cycle in milliseconds, session open to close", {},
                         ExponentialBucketsRange(1, 5000, 20)).With({});
    open_session = r.AddHistogram("volcano_open_session_duration_milliseconds",
                                  "Duration of opening a scheduling session in milliseconds (the plugins' OnSessionOpen)",
                                  {}, ExponentialBucketsRange(1, 5000, 20)).With({});
    action = &r.AddHistogram("volcano_action_scheduling_latency_milliseconds", "Action scheduling latency in milliseconds",
                             {"action"}, ExponentialBucketsRange(1, 2000, 20));
    plugin = &r.AddHistogram("volcano_plugin_scheduling_latency_milliseconds", "Plugin scheduling latency in milliseconds",
                             {"plugin", "OnSession"}, ExponentialBucketsRange(0.1, 100, 15));
    attempts = &r.AddCounter("volcano_schedule_attempts_total",
                             "Number of attempts to schedule jobs, by result (scheduled, unschedulable, error)", {"result"});
    auto& stage = r.AddHistogram("volcano_scheduling_stage_duration_milliseconds",
                                 "Duration of per-pod scheduling stages (PreBind, Bind) in milliseconds", {"stage"},
                                 ExponentialBucketsRange(0.1, 500, 20));
    bind_stage = stage.With({"Bind"});
    prebind_stage = stage.With({"PreBind"});
    auto& task = r.AddHistogram("volcano_task_scheduling_latency_milliseconds",
                                "Pod scheduling latency from its creation to a stage (Assumed: decided, Bound) in milliseconds",
                                {"stage"}, ExponentialBucketsRange(50, 60000, 30));
    assumed_latency = task.With({"Assumed"});
    bound_latency = task.With({"Bound"});
    job_latency = r.AddHistogram("volcano_e2e_job_scheduling_latency_milliseconds",
                                 "End-to-end job scheduling latency in milliseconds: creation to the cycle that placed its minimum",
                                 {}, ExponentialBucketsRange(100, 120000, 30)).With({});
    job_duration = &r.AddGauge("volcano_e2e_job_scheduling_duration",
                               "Per-job duration from creation to the cycle that placed its minimum, in milliseconds",
                               {"job_name", "queue", "job_namespace"});
    job_start = &r.AddGauge("volcano_e2e_job_scheduling_start_time", "E2E job scheduling start time (unix seconds)",
                            {"job_name", "queue", "job_namespace"});
    job_last = &r.AddGauge("volcano_e2e_job_scheduling_last_time", "E2E job scheduling last time (unix seconds)",
                           {"job_name", "queue", "job_namespace"});
    job_retries = &r.AddCounter("volcano_job_retry_counts", "Cycles that tried a job and left it short of its minimum",
                                {"job_id"});
    preempt_victims = r.AddGauge("volcano_pod_preemption_victims", "Number of selected preemption victims").With({});
    preempt_attempts = r.AddCounter("volcano_total_preemption_attempts", "Total preemption attempts in the cluster till now").With({});
    eviction_tx = &r.AddCounter("volcano_eviction_transactions_total",
                                "Total number of committed eviction transactions, by action", {"action"});
    goroutines = &r.AddGauge("volcano_goroutines", "Worker threads by the work they do (binding, eviction, status)",
                             {"operation"});
    unschedule_jobs = r.AddGauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled").With({});
    bound = r.AddCounter("tephra_scheduler_pods_bound_total", "Pods bound by this scheduler (201 or 409 already assigned)").With({});
    bind_errors = &r.AddCounter("tephra_scheduler_bind_errors_total", "Failed pods/binding calls", {"result"});
    bind_refused = &r.AddCounter("tephra_scheduler_bind_refused_total",
                                 "Bind decisions the bind guard refused: they broke a hard constraint of the pod (a scheduler bug)",
                                 {"reason"});
    bound_rate = r.AddGauge("tephra_scheduler_pods_bound_per_second", "Pods bound per second over the last 10 s").With({});
    cycles = r.AddCounter("tephra_scheduler_cycles_total", "Scheduling cycles run").With({});
    conf_reloads = &r.AddCounter("tephra_scheduler_conf_reloads_total", "Scheduler configuration reloads", {"result"});
    conf_ok = r.AddGauge("tephra_scheduler_conf_last_reload_successful", "1 when the last reload of --scheduler-conf was accepted").With({});
    early_cycles = r.AddCounter("tephra_scheduler_early_cycles_total",
                                "Cycles started before --schedule-period by a relevant change").With({});
    pending_binds = r.AddGauge("tephra_scheduler_binds_in_flight", "Binds queued or in flight").With({});
    yielded_cycles = r.AddCounter("tephra_scheduler_yielded_cycles_total",
                                  "Cycles whose allocate ran out of --allocate-slice; the next cycle resumed the round").With({});
    cycle_errors = r.AddCounter("tephra_scheduler_cycle_errors_total",
                                "Cycles that decided nothing because a plugin could not open its session").With({});
    event_apply = r.AddHistogram("tephra_scheduler_event_apply_latency_milliseconds",
                                 "From a watch event reaching the scheduler to its change applied to the scheduling state",
                                 {}, metrics::ExponentialBuckets(0.25, 2, 14)).With({});
    inbox_depth = r.AddGauge("tephra_scheduler_inbox_depth", "Changes waiting for the state thread").With({});
    status_writes = &r.AddCounter("tephra_scheduler_status_writes_total",
                                  "Status writes by the scheduler, by kind and result", {"kind", "result"});
    evictions = &r.AddCounter("tephra_scheduler_evictions_total", "Victim deletions, by result", {"result"});
    estimated_start = &r.AddGauge("tephra_job_estimated_start_time_seconds",
                                  "Expected start (unix seconds) of a waiting gang: from its reservation (kind "
                                  "reservation) or from the plan behind the gangs ahead of it (kind planned); docs/reservations.md",
                                  {"namespace", "podgroup", "queue", "kind"});
    reservations = r.AddGauge("tephra_scheduler_reservations", "Blocked gangs holding a reservation").With({});
    resource_names_dropped = r.AddCounter("tephra_scheduler_resource_names_dropped_total",
                                          "Extended resource names offered by nodes that got no dimension in the "
                                          "scheduler's resource table (once per name); pods requesting them stay pending").With({});
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

// Flags that override the configuration file's core options (also on every reload).
void ApplyCoreFlags(const SchedulerOptions& o, sched::SchedulerConf* c) {
  if (!o.topology_label_keys.empty()) c->core.topology_label_keys = o.topology_label_keys;
  c->core.retry_unchanged_every_cycles = o.retry_unchanged_every_cycles;
  c->core.gang_timeout_seconds = o.gang_timeout_seconds;
  c->core.allocate_slice_us = std::chrono::duration_cast<std::chrono::microseconds>(o.allocate_slice).count();
  c->core.queue_position_interval_ms = o.queue_position_interval.count();
  c->core.position_writes_per_second = o.position_writes_per_second;
  // A burst of five seconds' worth, at least one write: the front of a line catches up at once after a
  // quiet spell.
  c->core.position_write_burst = std::max(1, static_cast<int>(o.position_writes_per_second * 5));
  c->core.reservation_depth = o.reservation_depth;
  c->core.estimate_depth = o.estimate_depth;
  c->core.estimate_resolution_seconds = o.estimate_resolution.count();
}

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

// ------------------------------------------------------------------------------------------ SchedulerProcess

class SchedulerProcess::Impl {
 public:
  // The file given at start-up was rejected and the built-in default runs: the metrics say so.
  void ConfRejectedAtStart() {
    m_.conf_reloads->With({"rejected"})->Inc();
    m_.conf_ok->Set(0);
  }
  Impl(const SchedulerOptions& o, SchedulerDeps d, sched::SchedulerConf conf, std::unique_ptr<sched::Scheduler> core)
      : o_(o),
        deps_(std::move(d)),
        clock_(deps_.clock ? deps_.clock : &real_clock_),
        reg_(deps_.registry ? *deps_.registry : metrics::Registry::Default()),
        m_(reg_),
        conf_(std::move(conf)),
        core_(std::move(core)),
        names_(o.scheduler_names.begin(), o.scheduler_names.end()),
        state_metrics_(reg_) {
    m_.conf_ok->Set(1);
    m_.goroutines->With({"binding"})->Set(o.bind_workers);
    m_.goroutines->With({"eviction"})->Set(deps_.evict_workers);
    m_.goroutines->With({"status"})->Set(o.status_workers);
    if (!deps_.informers) {
      own_factory_ = std::make_unique<kube::SharedInformerFactory>(deps_.client);
      deps_.informers = own_factory_.get();
    }
  }

  ~Impl() { Stop(); }

  core::Status Start();
  bool WaitForSync(std::chrono::steady_clock::time_point deadline) const;
  void SetLeading(bool leading) {
    {
      core::MutexLock l(inbox_mu_);
      leading_ = leading;
      wake_ = true;  // a new leader cycles at once
    }
    inbox_cv_.NotifyOne();
  }
  void Drain(std::chrono::milliseconds d) {
    const auto deadline = std::chrono::steady_clock::now() + d;
    if (binder_) binder_->WaitIdle(deadline);
    evictor_->WaitIdle(deadline);
    writer_->WaitIdle(deadline);
  }
  void Stop();
  void WithState(const std::function<void(sched::ClusterState&)>& fn);
  core::Status ServeExtender(kube::HttpServer& server);
  core::StatusOr<std::string> TestOnly(const std::string& body);
  std::pair<int, std::string> WebSnapshot();
  void CollectMetrics() {
    if (!writer_) return;
    // The state's gauges, on the state thread between cycles (docs/metrics.md says why at scrape time).
    if (synced.load()) WithState([this](sched::ClusterState&) { state_metrics_.Export(*core_); });
    const auto& st = writer_->stats();
    auto set = [&](const char* kind, const char* result, const std::atomic<int64_t>& v) {
      m_.status_writes->With({kind, result})->SetTotal(static_cast<double>(v.load()));
    };
    set("podgroup", "written", st.podgroup_writes);
    set("podgroup", "conflict", st.podgroup_conflicts);
    set("podgroup", "error", st.podgroup_errors);
    set("podgroup", "unchanged", st.podgroup_unchanged);
    set("podgroup", "superseded", st.podgroup_superseded);
    set("podgroup", "held", st.podgroup_held);
    set("queue", "written", st.queue_writes);
    set("queue", "held", st.queue_held);
    set("queue", "error", st.queue_errors);
    set("pod_condition", "written", st.pod_condition_writes);
    set("pod_condition", "error", st.pod_condition_errors);
  }

  std::atomic<bool> synced{false};
  std::atomic<uint64_t> cycles{0};
  std::atomic<int64_t> last_cycle_ms{0};
  EventLatency Latency() const {
    core::MutexLock l(lat_mu_);
    return lat_;
  }

 private:
  // One change for the state thread. `apply` runs there; `watch` marks informer events (their latency is
  // the event-to-state metric); `poke` asks for an early cycle.
  struct Delta {
    std::chrono::steady_clock::time_point at;
    bool watch = false;
    bool poke = false;
    std::function<void()> apply;
  };

  void Push(Delta d) {
    {
      core::MutexLock l(inbox_mu_);
      inbox_.push_back(std::move(d));
    }
    inbox_cv_.NotifyOne();
  }
  void PushWatch(bool poke, std::function<void()> apply) {
    Push({std::chrono::steady_clock::now(), true, poke, std::move(apply)});
  }
  // Conversions run on the watch threads against `conv_reg_` (only node conversions intern names); the state
  // thread copies newly interned resource names into the core's registry before applying anything, so both
  // agree on every index.
  void SyncResourcesLocked() TEPHRA_REQUIRES(conv_mu_) {
    auto& r = core_->state().resources();
    while (r.size() < conv_reg_.size()) r.Intern(conv_reg_.Name(r.size()));
  }
  void RegisterHandlers();
  void PushPodLocked(bool poke, const api::Pod& p) TEPHRA_REQUIRES(conv_mu_);
  void PushNodeLocked(bool poke, const api::Node& n) TEPHRA_REQUIRES(conv_mu_);
  void PushJobLocked(bool poke, const api::PodGroup& pg) TEPHRA_REQUIRES(conv_mu_);
  void PushQueueLocked(bool poke, const api::Queue& q) TEPHRA_REQUIRES(conv_mu_);
  void ReconvertLocked(const std::vector<std::string>& added) TEPHRA_REQUIRES(conv_mu_);
  void ExportEstimates();
  void GuardAndReport(std::vector<sched::BindDecision>* binds);
  std::vector<kube::InformerBase*> Informers() const;  // every informer Start() created, started and synced alike
  void RunWithStateLocked(const std::function<void(sched::ClusterState&)>& fn) TEPHRA_REQUIRES(conv_mu_);
  void Loop();
  void RunOneCycle();
  void ReloadConfIfChanged();

  SchedulerOptions o_;
  SchedulerDeps deps_;
  core::RealClock real_clock_;
  const core::Clock* clock_;
  metrics::Registry& reg_;
  Metrics m_;
  sched::SchedulerConf conf_;
  std::unique_ptr<sched::Scheduler> core_;  // state thread only
  const std::set<std::string> names_;
  std::unique_ptr<kube::SharedInformerFactory> own_factory_;

  core::Mutex conv_mu_;
  sched::ResourceRegistry conv_reg_ TEPHRA_GUARDED_BY(conv_mu_);
  // Card health per node from the Ascend device plugins' `mindx-dl-deviceinfo-<node>` ConfigMaps.
  std::map<std::string, api::AscendDeviceInfo> ascend_info_ TEPHRA_GUARDED_BY(conv_mu_);
  // Resource names nodes offer that got no dimension (logged and counted once each; bounded by what nodes offer).
  std::set<std::string> dropped_resources_ TEPHRA_GUARDED_BY(conv_mu_);

  core::Mutex inbox_mu_;
  core::CondVar inbox_cv_;
  std::deque<Delta> inbox_ TEPHRA_GUARDED_BY(inbox_mu_);
  bool leading_ TEPHRA_GUARDED_BY(inbox_mu_) = false;
  bool wake_ TEPHRA_GUARDED_BY(inbox_mu_) = false;
  bool stopping_ TEPHRA_GUARDED_BY(inbox_mu_) = false;
  core::Mutex stopped_mu_;  // after Stop: serialises what still runs against the state

  mutable core::Mutex lat_mu_;
  EventLatency lat_ TEPHRA_GUARDED_BY(lat_mu_);
  size_t lat_next_ TEPHRA_GUARDED_BY(lat_mu_) = 0;
  size_t cycle_next_ TEPHRA_GUARDED_BY(lat_mu_) = 0;

  // State-thread only.
  // Stand-in jobs of plain pods (IsImplicitGangOfOne) by job key, whether or not the real PodGroup has
  // replaced them in the state: one per live pod, forgotten with the pod.
  std::unordered_map<std::string, sched::JobInfo> implicit_jobs_;
  void DropImplicitIfEmpty(const std::string& key) {
    if (key.empty()) return;
    auto it = implicit_jobs_.find(key);
    if (it == implicit_jobs_.end()) return;
    auto& st = core_->state();
    bool empty = true;
    st.ForEachTaskOfJob(key, [&](const sched::TaskInfo&) { empty = false; });
    if (!empty) return;
    implicit_jobs_.erase(it);
    if (const sched::JobInfo* j = st.FindJob(key); j && j->implicit) st.RemoveJob(key);
  }
  std::unordered_map<std::string, uint64_t> creation_index_;
  uint64_t arrival_ = 0;
  std::unique_ptr<Extender> extender_;
  FileChangePoller poller_{""};
  std::chrono::steady_clock::time_point next_conf_check_{}, next_status_resync_{};
  std::chrono::steady_clock::time_point last_start_{}, last_end_{};
  bool yielded_ = false;
  std::deque<std::pair<int64_t, double>> bound_window_;
  // Per job seen waiting, for Volcano's e2e job scheduling metrics (state thread only).
  struct JobTrack {
    std::vector<std::string> labels;      // job_name, queue, job_namespace
    bool done = false;                    // its minimum was placed (measured)
    metrics::Gauge* last = nullptr;       // its volcano_e2e_job_scheduling_last_time child
    metrics::Counter* retries = nullptr;  // its volcano_job_retry_counts child, once it has one
  };
  std::unordered_map<std::string, JobTrack> job_track_;
  size_t prune_at_ = 64;  // job_track_ size that triggers an early prune
  std::set<std::string> reserved_announced_;  // gangs whose current reservation got its Reserved Event
  StateMetrics state_metrics_;

  std::shared_ptr<kube::Informer<api::Pod>> pods_;
  std::shared_ptr<kube::Informer<api::Node>> nodes_;
  std::shared_ptr<kube::Informer<api::PodGroup>> pgs_;
  std::shared_ptr<kube::Informer<api::Queue>> queues_;
  std::shared_ptr<kube::Informer<api::PriorityClass>> pcs_;
  std::shared_ptr<kube::Informer<api::HyperNode>> hypernodes_;
  std::shared_ptr<kube::Informer<api::PersistentVolumeClaim>> claims_;
  std::shared_ptr<kube::Informer<api::PersistentVolume>> volumes_;
  std::shared_ptr<kube::Informer<api::StorageClass>> storage_classes_;
  std::shared_ptr<kube::Informer<api::CSINode>> csi_nodes_;
  std::shared_ptr<kube::Informer<api::ConfigMap>> device_infos_;  // kube-system, cut to DeviceInfoCfg
  std::shared_ptr<kube::Informer<api::Service>> services_;
  std::shared_ptr<kube::Informer<api::ReplicaSet>> replica_sets_;
  std::shared_ptr<kube::Informer<api::StatefulSet>> stateful_sets_;
  std::shared_ptr<kube::Informer<api::ReplicationController>> replication_controllers_;
  std::unique_ptr<StatusWriter> writer_;
  std::unique_ptr<Evictor> evictor_;
  std::unique_ptr<Binder> binder_;
  std::unique_ptr<WebViewRecorder> web_;  // --enable-web-view only
  std::thread loop_;
  bool stopped_ = false;
};

core::Status SchedulerProcess::Impl::Start() {
  // Built even without --extender-address: cheap, and WithState callers (tests) may use it.
  auto e = Extender::Create(conf_, sched::PluginRegistry::Builtin());
  if (!e.ok()) return e.status().Annotate("extender configuration");
  extender_ = std::move(*e);
  auto& f = *deps_.informers;
  kube::InformerOptions pod_opts;
  pod_opts.transform = CompactPodForCache;
  pod_opts.drop_unknown_fields = true;
  pods_ = f.For<api::Pod>(&pod_opts);
  kube::InformerOptions slim;
  slim.drop_unknown_fields = true;
  nodes_ = f.For<api::Node>(&slim);
  pgs_ = f.For<api::PodGroup>();  // kept whole: status writes PUT it back
  queues_ = f.For<api::Queue>();
  pcs_ = f.For<api::PriorityClass>();
  claims_ = f.For<api::PersistentVolumeClaim>(&slim);
  volumes_ = f.For<api::PersistentVolume>(&slim);
  storage_classes_ = f.For<api::StorageClass>(&slim);
  csi_nodes_ = f.For<api::CSINode>(&slim);
  kube::InformerOptions selector_only;
  selector_only.transform = CompactSelectorSource;
  selector_only.drop_unknown_fields = true;
  services_ = f.For<api::Service>(&selector_only);
  replica_sets_ = f.For<api::ReplicaSet>(&selector_only);
  stateful_sets_ = f.For<api::StatefulSet>(&selector_only);
  replication_controllers_ = f.For<api::ReplicationController>(&selector_only);
  kube::InformerOptions device_info;
  device_info.namespace_ = "kube-system";
  device_info.transform = CompactDeviceInfo;
  device_info.drop_unknown_fields = true;
  device_infos_ = f.For<api::ConfigMap>(&device_info);
  if (deps_.client->Raw("GET", "/apis/topology.volcano.sh/v1alpha1", nullptr).ok()) {
    hypernodes_ = f.For<api::HyperNode>();
  } else {
    log::Warn("HyperNode API (topology.volcano.sh/v1alpha1) not served; network topology comes from node labels only");
  }

  writer_ = std::make_unique<StatusWriter>(
      deps_.status_client, [this](const std::string& ns, const std::string& n) { return pgs_->Get(ns, n); }, clock_,
      o_.scheduler_names.front(), deps_.events, o_.status_workers);
  evictor_ = std::make_unique<Evictor>(deps_.status_client, [this](EventSpec e) { writer_->Event(std::move(e)); });
  evictor_->Start(deps_.evict_workers, [this](const EvictOutcome& eo) {
    if (eo.deleted) m_.evictions->With({"deleted"})->Inc(eo.deleted);
    if (eo.duplicates) m_.evictions->With({"duplicate"})->Inc(eo.duplicates);
    if (eo.failed_uids.empty()) return;
    m_.evictions->With({"failed"})->Inc(static_cast<double>(eo.failed_uids.size()));
    // The victim goes back to the core: it is not releasing anything after all.
    Push({std::chrono::steady_clock::now(), false, true, [this, uids = eo.failed_uids] {
            for (const auto& uid : uids) core_->state().EvictFailed(uid);
          }});
  });
  binder_ = std::make_unique<Binder>(deps_.client, o_.bind_workers, [this](const BindOutcome& out) {
    // On a bind worker: never waits for the state thread; the outcome is applied there, in order.
    if (out.result == BindResult::kFailed) {
      if (out.bind_ms >= 0) m_.bind_stage->Observe(out.bind_ms);
      m_.bind_errors->With({core::IsNotFound(out.status) ? "not_found" : "error"})->Inc();
      Push({std::chrono::steady_clock::now(), false, true, [this, out] {
              std::vector<std::string> rolled = ApplyBindOutcome(core_->state(), out);
              if (!rolled.empty()) binder_->Drop(rolled);
              log::Warn("bind failed; gang rolled back")
                  .Kv("pod", PodKeyEvent(out.decision.ns, out.decision.name))
                  .Kv("node", out.decision.node)
                  .Kv("rolled_back", rolled.size())
                  .Kv("error", out.status);
            }});
      return;
    }
    if (out.prebind_ms > 0) m_.prebind_stage->Observe(out.prebind_ms);
    if (out.bind_ms >= 0) m_.bind_stage->Observe(out.bind_ms);
    Push({std::chrono::steady_clock::now(), false, false, [this, uid = out.decision.task_uid] {
            core_->state().BindSucceeded(uid);
            if (const sched::TaskInfo* t = core_->state().FindTask(uid); t && t->creation_time != sched::WallTime{})
              m_.bound_latency->Observe(std::max(
                  0.0, std::chrono::duration<double, std::milli>(clock_->WallNow() - t->creation_time).count()));
          }});
    m_.bound->Inc();
    if (out.result == BindResult::kAlreadyAssigned) {
      m_.bind_errors->With({"already_assigned"})->Inc();
      return;
    }
    writer_->Event({"Pod", out.decision.ns, out.decision.name, out.decision.task_uid, "Normal", "Scheduled",
                    "Successfully assigned " + out.decision.ns + "/" + out.decision.name + " to " + out.decision.node});
  });
  // Events wait (up to 2 s) for the binder to drain, so a gang's binds are not slowed by its own Scheduled
  // events on a CPU-bound API server; they are written right after.
  if (deps_.events)
    deps_.events->SetBeforeBatch([this] { binder_->WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(2)); });

  RegisterHandlers();
  if (o_.enable_web_view) {
    // The view's fault list: node health transitions, judged from the API object on the watch thread.
    web_ = std::make_unique<WebViewRecorder>();
    auto observe = [this](const std::shared_ptr<const api::Node>& n) {
      web_->ObserveNode(n->metadata.name, n.get(), clock_->WallNow());
    };
    nodes_->AddEventHandler({
        .on_add = observe,
        .on_update = [observe](const auto&, const auto& n) { observe(n); },
        .on_delete = [this](const auto& n) { web_->ObserveNode(n->metadata.name, nullptr, clock_->WallNow()); },
    });
  }
  if (!o_.scheduler_conf.empty()) {
    poller_ = FileChangePoller(o_.scheduler_conf);
    poller_.Changed();  // the start-up read counts as seen
  }
  next_conf_check_ = std::chrono::steady_clock::now() + o_.conf_poll;
  next_status_resync_ = std::chrono::steady_clock::now() + o_.status_resync_period;
  loop_ = std::thread([this] { Loop(); });
  for (kube::InformerBase* inf : Informers()) inf->Start();
  return core::Status::OK();
}

std::vector<kube::InformerBase*> SchedulerProcess::Impl::Informers() const {
  std::vector<kube::InformerBase*> all;
  for (kube::InformerBase* inf : std::initializer_list<kube::InformerBase*>{
           pods_.get(), nodes_.get(), pgs_.get(), queues_.get(), pcs_.get(), hypernodes_.get(), claims_.get(),
           volumes_.get(), storage_classes_.get(), csi_nodes_.get(), services_.get(), replica_sets_.get(),
           stateful_sets_.get(), replication_controllers_.get(), device_infos_.get()})
    if (inf) all.push_back(inf);  // hypernodes_ only when the API serves HyperNodes
  return all;
}

bool SchedulerProcess::Impl::WaitForSync(std::chrono::steady_clock::time_point deadline) const {
  for (const kube::InformerBase* inf : Informers())
    if (!inf->WaitForSync(deadline)) return false;
  return true;
}

// Conversions and their pushes happen in one hold of conv_mu_, so the inbox holds every object's conversions in
// the order of the registry they were made with: a conversion made before the registry grew is queued before
// ReconvertLocked's, and one made after sees the new names. Deletions are queued under the lock too, so a
// re-conversion read from an informer cache cannot overtake an object's deletion.
void SchedulerProcess::Impl::PushPodLocked(bool poke, const api::Pod& p) {
  sched::TaskInfo t = ToTaskInfo(p, &conv_reg_, names_);
  // creationTimestamp (seconds) first, then arrival order: pods of one job created in the same second keep
  // the order the controller created them in (assigned on the state thread, in arrival order).
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                        ParseTime(p.metadata.creation_timestamp).time_since_epoch()).count();
  std::optional<sched::JobInfo> implicit;
  if (IsImplicitGangOfOne(p, names_)) implicit = ImplicitJobInfo(p, &conv_reg_, o_.default_queue);
  PushWatch(poke, [this, t = std::move(t), secs, implicit = std::move(implicit)]() mutable {
    auto& st = core_->state();
    auto [it, fresh] = creation_index_.try_emplace(t.uid, 0);
    if (fresh) it->second = (static_cast<uint64_t>(secs) << 24) | (++arrival_ & 0xFFFFFF);
    t.creation_index = it->second;
    const sched::TaskInfo* before = st.FindTask(t.uid);
    const std::string old_job = before ? before->job : std::string();
    if (implicit) {
      st.UpsertJob(*implicit);  // ignored once the real PodGroup is known
      implicit_jobs_[implicit->key] = std::move(*implicit);
    }
    st.UpsertPod(t);
    if (old_job != t.job) DropImplicitIfEmpty(old_job);
  });
}

void SchedulerProcess::Impl::PushNodeLocked(bool poke, const api::Node& n) {
  const int before = conv_reg_.size();
  std::set<std::string> dropped;
  auto info = ascend_info_.find(n.metadata.name);
  sched::NodeInfo ni = ToNodeInfo(n, &conv_reg_, info == ascend_info_.end() ? nullptr : &info->second, &dropped);
  // Names past the table come from nodes (the cluster admin's), so remembering each once is bounded. Pods that
  // request one are unschedulable (they fit no node, and their reason names it) rather than placed as if they
  // had not asked for it.
  for (const auto& name : dropped) {
    if (!dropped_resources_.insert(name).second) continue;
    m_.resource_names_dropped->Inc();
    log::Error("resource name dropped: the scheduler's resource table is full; pods requesting it stay pending")
        .Kv("resource", name)
        .Kv("node", n.metadata.name)
        .Kv("extended_resources_max", sched::kUnoffered - sched::kFirstScalar);
  }
  PushWatch(poke, [this, ni = std::move(ni)] { core_->state().UpsertNode(ni); });
  if (conv_reg_.size() > before) {
    std::vector<std::string> added;
    for (int i = before; i < conv_reg_.size(); ++i) added.push_back(conv_reg_.Name(i));
    ReconvertLocked(added);
  }
}

void SchedulerProcess::Impl::PushJobLocked(bool poke, const api::PodGroup& pg) {
  PushWatch(poke, [this, j = ToJobInfo(pg, &conv_reg_, o_.default_queue)] { core_->state().UpsertJob(j); });
}

void SchedulerProcess::Impl::PushQueueLocked(bool poke, const api::Queue& q) {
  PushWatch(poke, [this, qi = ToQueueInfo(q, &conv_reg_)] { core_->state().UpsertQueue(qi); });
}

// Level-triggered: the objects that name a resource that just got a dimension were converted without it (a pod
// fitting no node, a queue capability left out); they are read again from the informer caches. The registry
// grows at most kUnoffered - kFirstScalar times in a process's life, so a pass over the caches then is cheap
// enough, and nothing is remembered per tenant-chosen name.
void SchedulerProcess::Impl::ReconvertLocked(const std::vector<std::string>& added) {
  auto names_any = [&](const api::ResourceList& l) {
    for (const auto& name : added)
      if (l.contains(name)) return true;
    return false;
  };
  size_t pods = 0, groups = 0, queues = 0;
  for (const auto& p : pods_->List()) {
    if (!ShouldTrack(*p, names_) || !names_any(api::PodRequests(p->spec))) continue;
    PushPodLocked(true, *p);
    ++pods;
  }
  for (const auto& pg : pgs_->List()) {
    if (!pg->spec.min_resources || !names_any(NormalizeQuotaKeys(*pg->spec.min_resources))) continue;
    PushJobLocked(true, *pg);
    ++groups;
  }
  for (const auto& q : queues_->List()) {
    if (!names_any(q->spec.capability) && !names_any(q->spec.guarantee.resource) && !names_any(q->spec.deserved)) continue;
    PushQueueLocked(true, *q);
    ++queues;
  }
  std::string joined;
  for (const auto& name : added) joined += (joined.empty() ? "" : ",") + name;
  log::Info("new resource names from nodes; objects naming them converted again")
      .Kv("resources", joined)
      .Kv("pods", pods)
      .Kv("podgroups", groups)
      .Kv("queues", queues);
}

void SchedulerProcess::Impl::RegisterHandlers() {
  auto remove_pod = [this](std::string uid) {
    return [this, uid = std::move(uid)] {
      auto& st = core_->state();
      const sched::TaskInfo* t = st.FindTask(uid);
      const std::string job = t ? t->job : std::string();
      st.RemovePod(uid);
      creation_index_.erase(uid);
      DropImplicitIfEmpty(job);
    };
  };
  pods_->AddEventHandler({
      .on_add = [this](const auto& p) {
        if (!ShouldTrack(*p, names_)) return;
        core::MutexLock l(conv_mu_);
        PushPodLocked(true, *p);  // a new pod: pending ones want placing, bound ones change capacity
      },
      .on_update = [=, this](const auto& old, const auto& p) {
        // Capacity is freed when a pod finishes or starts terminating; a plain status update of a running
        // pod (the common case under load) changes nothing the next cycle could use.
        const bool poke = old->status.phase != p->status.phase ||
                          old->metadata.deletion_timestamp != p->metadata.deletion_timestamp;
        if (ShouldTrack(*p, names_)) {
          core::MutexLock l(conv_mu_);
          PushPodLocked(poke, *p);
        } else if (ShouldTrack(*old, names_)) {
          core::MutexLock l(conv_mu_);
          PushWatch(true, remove_pod(p->metadata.uid));
        }
      },
      .on_delete = [=, this](const auto& p) {
        core::MutexLock l(conv_mu_);
        PushWatch(true, remove_pod(p->metadata.uid));
      },
  });
  nodes_->AddEventHandler({
      .on_add = [this](const auto& n) {
        core::MutexLock l(conv_mu_);
        PushNodeLocked(true, *n);
      },
      .on_update = [this](const auto&, const auto& n) {
        core::MutexLock l(conv_mu_);
        PushNodeLocked(false, *n);
      },
      .on_delete = [this](const auto& n) {
        PushWatch(true, [this, name = n->metadata.name] { core_->state().RemoveNode(name); });
      },
  });
  pgs_->AddEventHandler({
      .on_add = [this](const auto& pg) {
        core::MutexLock l(conv_mu_);
        PushJobLocked(true, *pg);
      },
      // Our own status writes come back as updates; only a spec change is new input.
      .on_update = [this](const auto& old, const auto& pg) {
        core::MutexLock l(conv_mu_);
        PushJobLocked(SpecChanged(old->spec, pg->spec), *pg);
      },
      .on_delete = [this](const auto& pg) {
        core::MutexLock l(conv_mu_);
        PushWatch(false, [this, key = pg->metadata.namespace_ + "/" + pg->metadata.name] {
          core_->state().RemoveJob(key);
          // A plain pod whose PodGroup was deleted under it goes on as a gang of one (the controller
          // re-creates the group).
          if (auto it = implicit_jobs_.find(key); it != implicit_jobs_.end()) core_->state().UpsertJob(it->second);
        });
      },
  });
  queues_->AddEventHandler({
      .on_add = [this](const auto& q) {
        core::MutexLock l(conv_mu_);
        PushQueueLocked(true, *q);
      },
      .on_update = [this](const auto& old, const auto& q) {
        // Not our own status.allocated writes: a spec or state change.
        core::MutexLock l(conv_mu_);
        PushQueueLocked(SpecChanged(old->spec, q->spec) || old->status.state != q->status.state, *q);
      },
      .on_delete = [this](const auto& q) {
        core::MutexLock l(conv_mu_);
        PushWatch(false, [this, name = q->metadata.name] { core_->state().RemoveQueue(name); });
      },
  });
  auto set_pc = [this](std::string name, int32_t value, bool global_default) {
    PushWatch(false, [this, name = std::move(name), value, global_default] {
      core_->state().SetPriorityClass(name, value, global_default);
    });
  };
  pcs_->AddEventHandler({
      .on_add = [=](const auto& pc) { set_pc(pc->metadata.name, pc->value, pc->global_default); },
      .on_update = [=](const auto&, const auto& pc) { set_pc(pc->metadata.name, pc->value, pc->global_default); },
      .on_delete = [this](const auto& pc) {
        PushWatch(false, [this, name = pc->metadata.name] { core_->state().RemovePriorityClass(name); });
      },
  });
  // Volumes: a claim binding, a volume appearing or a class changing can make a waiting pod placeable.
  claims_->AddEventHandler({
      .on_add = [this](const auto& c) {
        PushWatch(true, [this, key = c->metadata.namespace_ + "/" + c->metadata.name, ci = ToClaimInfo(*c)] {
          core_->state().UpsertClaim(key, ci);
        });
      },
      .on_update = [this](const auto&, const auto& c) {
        PushWatch(true, [this, key = c->metadata.namespace_ + "/" + c->metadata.name, ci = ToClaimInfo(*c)] {
          core_->state().UpsertClaim(key, ci);
        });
      },
      .on_delete = [this](const auto& c) {
        PushWatch(false, [this, key = c->metadata.namespace_ + "/" + c->metadata.name] { core_->state().RemoveClaim(key); });
      },
  });
  volumes_->AddEventHandler({
      .on_add = [this](const auto& v) {
        PushWatch(true, [this, name = v->metadata.name, vi = ToVolumeInfo(*v)] { core_->state().UpsertVolume(name, vi); });
      },
      .on_update = [this](const auto&, const auto& v) {
        PushWatch(true, [this, name = v->metadata.name, vi = ToVolumeInfo(*v)] { core_->state().UpsertVolume(name, vi); });
      },
      .on_delete = [this](const auto& v) {
        PushWatch(false, [this, name = v->metadata.name] { core_->state().RemoveVolume(name); });
      },
  });
  auto set_class = [this](const api::StorageClass& sc) {
    PushWatch(true, [this, name = sc.metadata.name, si = ToStorageClassInfo(sc)] {
      core_->state().UpsertStorageClass(name, si);
    });
  };
  storage_classes_->AddEventHandler({
      .on_add = [=](const auto& sc) { set_class(*sc); },
      .on_update = [=](const auto&, const auto& sc) { set_class(*sc); },
      .on_delete = [this](const auto& sc) {
        PushWatch(false, [this, name = sc->metadata.name] { core_->state().RemoveStorageClass(name); });
      },
  });
  // CSI attach limits (NodeVolumeLimits): a raised limit can let a waiting pod in.
  auto set_csi = [this](const api::CSINode& cn) {
    PushWatch(true, [this, name = cn.metadata.name, limits = ToCsiLimits(cn)] { core_->state().UpsertCsiNode(name, limits); });
  };
  csi_nodes_->AddEventHandler({
      .on_add = [=](const auto& cn) { set_csi(*cn); },
      .on_update = [=](const auto&, const auto& cn) { set_csi(*cn); },
      .on_delete = [this](const auto& cn) {
        PushWatch(false, [this, name = cn->metadata.name] { core_->state().RemoveCsiNode(name); });
      },
  });
  // Ascend card health (docs/devices.md): the device plugin's report for a node re-converts that node.
  auto device_info = [=, this](const api::ConfigMap& cm, bool deleted) {
    const std::string& name = cm.metadata.name;
    if (!name.starts_with(api::kAscendDeviceInfoPrefix)) return;
    const std::string node = name.substr(api::kAscendDeviceInfoPrefix.size());
    core::MutexLock l(conv_mu_);
    auto data = cm.data.find(std::string(api::kAscendDeviceInfoKey));
    std::optional<api::AscendDeviceInfo> info;
    if (!deleted && data != cm.data.end()) info = api::ParseAscendDeviceInfo(data->second);
    if (info) ascend_info_[node] = std::move(*info);
    else ascend_info_.erase(node);  // gone or unreadable: the node's own annotations apply again
    if (auto n = nodes_->Get(node)) PushNodeLocked(true, *n);
  };
  device_infos_->AddEventHandler({
      .on_add = [=](const auto& cm) { device_info(*cm, false); },
      .on_update = [=](const auto&, const auto& cm) { device_info(*cm, false); },
      .on_delete = [=](const auto& cm) { device_info(*cm, true); },
  });
  // System-default topology spread: selectors only move scores, so no change wakes a cycle.
  auto set_service = [this](const api::Service& svc) {
    PushWatch(false, [this, ns = svc.metadata.namespace_, name = svc.metadata.name, sel = svc.spec.selector] {
      core_->state().UpsertService(ns, name, sel);
    });
  };
  services_->AddEventHandler({
      .on_add = [=](const auto& svc) { set_service(*svc); },
      .on_update = [=](const auto&, const auto& svc) { set_service(*svc); },
      .on_delete = [this](const auto& svc) {
        PushWatch(false, [this, ns = svc->metadata.namespace_, name = svc->metadata.name] {
          core_->state().RemoveService(ns, name);
        });
      },
  });
  auto watch_controllers = [this](auto& informer) {
    using Ptr = typename std::remove_reference_t<decltype(*informer)>::Ptr;
    auto set = [this](const Ptr& w) {
      PushWatch(false, [this, ns = w->metadata.namespace_, key = std::string(w->Resource().kind) + "/" + w->metadata.name,
                        sel = ToSpreadSelector(*w)] { core_->state().UpsertController(ns, key, sel); });
    };
    informer->AddEventHandler({
        .on_add = set,
        .on_update = [set](const Ptr&, const Ptr& w) { set(w); },
        .on_delete = [this](const Ptr& w) {
          PushWatch(false, [this, ns = w->metadata.namespace_,
                            key = std::string(w->Resource().kind) + "/" + w->metadata.name] {
            core_->state().RemoveController(ns, key);
          });
        },
    });
  };
  watch_controllers(replica_sets_);
  watch_controllers(stateful_sets_);
  watch_controllers(replication_controllers_);
  if (hypernodes_) {
    auto hn_delta = [this](const api::HyperNode& h) {
      return [this, hi = ToHyperNodeInfo(h)] { core_->state().UpsertHyperNode(hi); };
    };
    hypernodes_->AddEventHandler({
        .on_add = [=, this](const auto& h) { PushWatch(false, hn_delta(*h)); },
        .on_update = [=, this](const auto&, const auto& h) { PushWatch(false, hn_delta(*h)); },
        .on_delete = [this](const auto& h) {
          PushWatch(false, [this, name = h->metadata.name] { core_->state().RemoveHyperNode(name); });
        },
    });
  }
}

void SchedulerProcess::Impl::Loop() {
  using SteadyClock = std::chrono::steady_clock;
  std::deque<Delta> batch;
  while (true) {
    bool run_cycle = false;
    {
      core::MutexLock l(inbox_mu_);
      while (!stopping_ && inbox_.empty()) {
        const auto now = SteadyClock::now();
        if (leading_) {
          const auto latest = last_start_ + o_.schedule_period;
          const auto earliest =
              last_end_ + std::max<std::chrono::nanoseconds>(o_.min_schedule_interval, last_end_ - last_start_);
          if (yielded_ || now >= latest || (wake_ && now >= earliest)) {
            run_cycle = true;
            if (!yielded_ && wake_ && now < latest) m_.early_cycles->Inc();
            wake_ = false;
            break;
          }
          inbox_cv_.WaitUntil(l, wake_ ? std::min(latest, earliest) : latest);
        } else {
          inbox_cv_.Wait(l);
        }
      }
      if (stopping_) return;
      batch.swap(inbox_);
      m_.inbox_depth->Set(0);
    }
    if (!batch.empty()) {
      {
        core::MutexLock l(conv_mu_);
        SyncResourcesLocked();
      }
      bool poke = false;
      const auto now = SteadyClock::now();
      std::vector<double> samples;
      for (auto& d : batch) {
        d.apply();
        poke = poke || d.poke;
        if (d.watch) samples.push_back(std::chrono::duration<double, std::milli>(now - d.at).count());
      }
      batch.clear();
      // Latency is measured to the end of the batch: a change counts as applied once every change queued
      // with it is (the next cycle sees them all).
      const double done_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - now).count();
      if (!samples.empty()) {
        core::MutexLock l(lat_mu_);
        for (double s : samples) {
          const double v = s + done_ms;
          m_.event_apply->Observe(v);
          ++lat_.applied;
          if (lat_.recent_ms.size() < 65536) {
            lat_.recent_ms.push_back(v);
          } else {
            lat_.recent_ms[lat_next_] = v;
            lat_next_ = (lat_next_ + 1) % lat_.recent_ms.size();
          }
        }
      }
      if (poke) {
        core::MutexLock l(inbox_mu_);
        wake_ = true;
      }
      continue;  // re-check the inbox and the cycle timer
    }
    if (run_cycle) RunOneCycle();
  }
}

void SchedulerProcess::Impl::ReloadConfIfChanged() {
  const auto now = std::chrono::steady_clock::now();
  if (o_.scheduler_conf.empty() || now < next_conf_check_) return;
  next_conf_check_ = now + o_.conf_poll;
  if (!poller_.Changed()) return;
  std::vector<std::string> w;
  auto c = LoadSchedulerConfFile(o_.scheduler_conf, &w);
  core::Status s = c.ok() ? core::Status::OK() : c.status();
  if (c.ok()) {
    ApplyCoreFlags(o_, &*c);
    s = core_->UpdateConf(*c, &w);
    if (s.ok()) s = extender_->UpdateConf(*c);
    if (s.ok()) core_->state().set_options(c->core);
  }
  if (s.ok()) {
    m_.conf_reloads->With({"success"})->Inc();
    m_.conf_ok->Set(1);
    log::Info("scheduler configuration reloaded").Kv("file", o_.scheduler_conf);
    for (const auto& x : w) log::Warn("scheduler configuration").Kv("warning", x);
  } else {
    m_.conf_reloads->With({"rejected"})->Inc();
    m_.conf_ok->Set(0);
    log::Error("scheduler configuration rejected; keeping the last good one").Kv("file", o_.scheduler_conf).Kv("error", s);
  }
}

// The bind guard (docs/scheduler.md, "Bind guard"): decisions that break a hard constraint of their pod on
// the node as the cache holds it now are not posted. Each refusal is a scheduler bug: it is counted by
// reason, logged with the whole decision (pod, node, the pod's constraints, the node's spec), and told on the
// pod and its PodGroup; the gang goes back to pending (GuardBinds) and its PodGroup shows BindFailed.
void SchedulerProcess::Impl::GuardAndReport(std::vector<sched::BindDecision>* binds) {
  const sched::ClusterState& st = core_->state();
  for (auto& r : GuardBinds(core_->state(), binds)) {
    m_.bind_refused->With({r.check.reason})->Inc();
    if (!r.rolled_back.empty()) binder_->Drop(r.rolled_back);
    const auto& d = r.decision;
    std::string selector, taints, labels;
    if (const sched::TaskInfo* t = st.FindTask(d.task_uid)) {
      for (const auto& [k, v] : t->node_selector) selector += (selector.empty() ? "" : ",") + k + "=" + v;
      for (const auto& tol : t->tolerations) taints += (taints.empty() ? "" : ",") + tol.key + (tol.op_exists ? "" : "=" + tol.value);
    }
    if (const sched::NodeInfo* n = st.FindNode(d.node)) {
      for (const auto& [k, v] : n->labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
      labels += n->unschedulable ? " (unschedulable)" : "";
      for (const auto& t : n->taints) labels += " taint " + t.key + "=" + t.value;
    }
    log::Error("bind refused: the decision breaks a hard constraint of the pod")
        .Kv("pod", PodKeyEvent(d.ns, d.name))
        .Kv("uid", d.task_uid)
        .Kv("job", d.job)
        .Kv("node", d.node)
        .Kv("reason", r.check.reason)
        .Kv("detail", r.check.detail)
        .Kv("node_selector", selector)
        .Kv("tolerations", taints)
        .Kv("node_spec", labels)
        .Kv("cards", d.cards.size())
        .Kv("rolled_back", r.rolled_back.size());
    const std::string msg = "bind of " + d.ns + "/" + d.name + " to " + d.node + " refused (" + r.check.reason +
                            "): " + r.check.detail + "; the pod goes back to pending";
    writer_->Event({"Pod", d.ns, d.name, d.task_uid, "Warning", "BindRefused", msg});
    if (const sched::JobInfo* j = st.FindJob(d.job); j && !j->implicit)
      writer_->Event({"PodGroup", j->ns, j->name, "", "Warning", "BindRefused", msg});
  }
}

// The start estimates as gauges: every waiting gang with a time, and nothing for gangs that started or left.
void SchedulerProcess::Impl::ExportEstimates() {
  std::set<std::vector<std::string>> live;
  int reserved = 0;
  for (const auto& [key, e] : core_->estimates()) {
    if (e.kind == sched::StartEstimate::Kind::kUnknown) continue;
    const sched::JobInfo* j = core_->state().FindJob(key);
    if (!j || j->implicit) continue;
    if (e.kind == sched::StartEstimate::Kind::kReserved) {
      ++reserved;
      // Once per reservation: a held-back node is a decision users ask about ("why is my node idle?").
      if (reserved_announced_.insert(key).second)
        writer_->Event({"PodGroup", j->ns, j->name, "", "Normal", "Reserved",
                        "reserved capacity on " + std::to_string(e.nodes.size()) + " node(s); expected to start at " +
                            core::FormatRfc3339(e.at) + " (" + e.why + ")"});
    }
    std::vector<std::string> labels = {j->ns, j->name, e.queue, sched::StartEstimateKindName(e.kind)};
    m_.estimated_start->With(labels)->Set(
        static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(e.at.time_since_epoch()).count()));
    live.insert(std::move(labels));
  }
  m_.estimated_start->RemoveIf([&](const std::vector<std::string>& labels) { return !live.count(labels); });
  m_.reservations->Set(reserved);
  for (auto it = reserved_announced_.begin(); it != reserved_announced_.end();) {
    auto e = core_->estimates().find(*it);
    if (e == core_->estimates().end() || e->second.kind != sched::StartEstimate::Kind::kReserved) it = reserved_announced_.erase(it);
    else ++it;
  }
}

void SchedulerProcess::Impl::RunOneCycle() {
  const auto start = std::chrono::steady_clock::now();
  last_start_ = start;
  ReloadConfIfChanged();
  if (o_.status_resync_period.count() > 0 && start >= next_status_resync_) {
    next_status_resync_ = start + o_.status_resync_period;
    core_->ResyncStatus();
  }
  auto& st = core_->state();
  sched::CycleResult res = core_->RunCycle(clock_->WallNow());
  if (!res.status.ok()) {
    // A plugin could not open its session: the cycle decided nothing (the core's rule); say why, once per
    // cycle, and let the next one retry.
    m_.cycle_errors->Inc();
    log::Error("scheduling cycle skipped").Kv("error", res.status);
  }
  // The allocate slice ran out: the round goes on right after the inbox is applied (no minimum gap).
  yielded_ = res.yielded;
  if (res.yielded) m_.yielded_cycles->Inc();
  if (web_) web_->ObserveCycle(res, st);  // the reasons the view shows: before the statuses are handed off
  // FailedScheduling on the pending pods of gangs that just became unschedulable (the core emits the
  // PodGroup event only when the condition changes, so this does not repeat every cycle).
  for (const auto& e : res.events) {
    if (e.kind != "PodGroup" || e.type != "Warning") continue;
    int n = 0;
    for (const sched::TaskInfo* t : st.TasksOfJob(e.ns + "/" + e.name)) {
      if (t->status != sched::TaskStatus::kPending) continue;
      // Every waiting pod gets the condition (tools read it per pod); events stop at 50: a 1,000-pod gang
      // does not need 1,000 identical ones.
      writer_->PodUnschedulable({t->ns, t->name, t->uid, "Unschedulable", e.message});
      if (++n <= 50) writer_->Event({"Pod", t->ns, t->name, t->uid, "Warning", "FailedScheduling", e.message});
    }
  }
  int64_t unschedulable_jobs = 0;
  const uint64_t cycle = core_->cycle();
  const sched::WallTime now = clock_->WallNow();
  const double now_s = static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count());
  // Volcano's per-job scheduling metrics. Only waiting gangs are looked up here, once per cycle; their placement
  // is read from the cycle's PodGroup status changes below, so a cluster of running jobs costs nothing.
  st.ForEachJob([&](const sched::JobInfo& j) {
    if (j.Count(sched::TaskStatus::kPending) == 0 || j.ReadyCount() >= j.min_member) return;
    ++unschedulable_jobs;
    if (j.implicit) return;
    JobTrack& tr = job_track_[j.key];
    // Volcano's gang plugin counts a retry for every session that closes with the job's pods pending and its
    // minimum not placed.
    if (!tr.retries) tr.retries = m_.job_retries->With({j.name});
    tr.retries->Inc();
    if (tr.done) return;  // a placed gang short again (a pod lost) is not a new scheduling attempt
    if (!tr.last) {
      const std::vector<std::string> labels = {j.name, j.queue, j.ns};
      m_.job_start->With(labels)->Set(now_s);
      tr.last = m_.job_last->With(labels);
      tr.labels = labels;
    }
    tr.last->Set(now_s);
  });
  for (const auto& u : res.pod_groups) {
    if (u.phase != sched::PodGroupPhase::kRunning && u.phase != sched::PodGroupPhase::kCompleted) continue;
    auto it = job_track_.find(u.job);
    if (it == job_track_.end() || it->second.done) continue;  // never seen waiting: running before we started
    it->second.done = true;
    const sched::JobInfo* j = st.FindJob(u.job);
    if (!j || j->creation_time == sched::WallTime{}) continue;
    const double ms = std::chrono::duration<double, std::milli>(now - j->creation_time).count();
    if (ms < 0) continue;
    m_.job_latency->Observe(ms);
    m_.job_duration->With(it->second.labels)->Set(ms);
  }
  // Jobs that left the state take their series with them: checked every 64 cycles, or at once when the map
  // has clearly outgrown what was alive at the last check.
  if (cycle % 64 == 0 || job_track_.size() > prune_at_) {
    std::set<std::vector<std::string>> gone;
    for (auto it = job_track_.begin(); it != job_track_.end();) {
      if (st.FindJob(it->first)) {
        ++it;
        continue;
      }
      if (!it->second.labels.empty()) gone.insert(it->second.labels);
      it = job_track_.erase(it);
    }
    prune_at_ = 2 * job_track_.size() + 64;
    if (!gone.empty()) {
      auto dead = [&](const std::vector<std::string>& l) { return gone.count(l) > 0; };
      m_.job_duration->RemoveIf(dead);
      m_.job_start->RemoveIf(dead);
      m_.job_last->RemoveIf(dead);
      std::set<std::string> names;
      for (const auto& l : gone) names.insert(l[0]);
      m_.job_retries->RemoveIf([&](const std::vector<std::string>& l) { return names.count(l[0]) > 0; });
      // job_id is the bare name (Volcano's label): a job of the same name in another namespace shared the
      // child just removed, so it must look it up again.
      for (auto& [key, tr] : job_track_)
        if (tr.retries && !tr.labels.empty() && names.count(tr.labels[0])) tr.retries = nullptr;
    }
  }
  for (const auto& b : res.binds)
    if (const sched::TaskInfo* t = st.FindTask(b.task_uid); t && t->creation_time != sched::WallTime{})
      m_.assumed_latency->Observe(std::max(0.0, std::chrono::duration<double, std::milli>(now - t->creation_time).count()));
  // Evictions: one transaction per action that evicted this cycle (Volcano commits one per statement).
  if (!res.evictions.empty()) {
    std::set<std::string> actions;
    int victims = 0;
    for (const auto& e : res.evictions) {
      if (e.reason != "preempt" && e.reason != "reclaim") continue;
      actions.insert(e.reason);
      ++victims;
    }
    for (const auto& a : actions) m_.eviction_tx->With({a})->Inc();
    if (victims > 0) m_.preempt_victims->Set(victims);
  }
  m_.preempt_attempts->Inc(static_cast<double>(res.metrics.victim_searches));
  if (o_.bind_guard) GuardAndReport(&res.binds);
  const size_t nbinds = res.binds.size();
  binder_->Submit(std::move(res.binds));
  // Volcano evicts by deleting the victim (Evict events on the pod and its PodGroup); the pool deletes them
  // in parallel and a failed delete comes back through the inbox.
  if (!res.evictions.empty()) evictor_->Submit(std::move(res.evictions));
  for (auto& u : res.pod_groups) writer_->PodGroup(std::move(u));
  const auto& rr = st.resources();
  for (const auto& q : res.queues) {
    api::ResourceList alloc = FromResource(q.allocated, rr);
    std::vector<std::string> cleared;
    for (int i = 0; i < rr.size(); ++i)
      if (i != sched::kPods && !alloc.count(rr.Name(i))) cleared.push_back(rr.Name(i));
    writer_->Queue(q.queue, std::move(alloc), std::move(cleared));
  }
  for (const auto& e : res.events) {
    // A plain pod's stand-in job has no PodGroup to attach an Event to (its pods got theirs above).
    if (e.kind == "PodGroup")
      if (const sched::JobInfo* j = st.FindJob(e.ns + "/" + e.name); j && j->implicit) continue;
    writer_->Event({e.kind, e.ns, e.name, "", e.type, e.reason, e.message});
  }

  m_.cycles->Inc();
  m_.e2e->Observe(static_cast<double>(res.metrics.e2e_us) / 1000.0);
  if (res.status.ok()) m_.open_session->Observe(static_cast<double>(res.metrics.open_session_us) / 1000.0);
  for (const auto& [a, us] : res.metrics.action_us) m_.action->With({a})->Observe(static_cast<double>(us) / 1000.0);
  for (const auto& [p, us] : res.metrics.plugin_us) m_.plugin->With({p, "OnSession"})->Observe(static_cast<double>(us) / 1000.0);
  for (const auto& [r, n] : res.metrics.schedule_attempts) m_.attempts->With({r})->Inc(static_cast<double>(n));
  m_.unschedule_jobs->Set(static_cast<double>(unschedulable_jobs));
  ExportEstimates();
  m_.pending_binds->Set(static_cast<double>(binder_->Pending()));
  const auto end = std::chrono::steady_clock::now();
  const int64_t t = std::chrono::duration_cast<std::chrono::milliseconds>(end.time_since_epoch()).count();
  bound_window_.emplace_back(t, m_.bound->Value());
  while (bound_window_.size() > 1 && t - bound_window_.front().first > 10000) bound_window_.pop_front();
  if (bound_window_.size() > 1 && t > bound_window_.front().first)
    m_.bound_rate->Set((bound_window_.back().second - bound_window_.front().second) * 1000.0 /
                       static_cast<double>(t - bound_window_.front().first));
  if (nbinds > 0 || !res.pod_groups.empty())
    log::Debug("cycle").Kv("binds", nbinds).Kv("podgroups", res.pod_groups.size()).Kv("us", res.metrics.e2e_us);
  last_end_ = end;
  last_cycle_ms = t;
  {
    core::MutexLock l(lat_mu_);
    const double ms = std::chrono::duration<double, std::milli>(end - start).count();
    if (lat_.recent_cycle_ms.size() < 4096) {
      lat_.recent_cycle_ms.push_back(ms);
    } else {
      lat_.recent_cycle_ms[cycle_next_] = ms;
      cycle_next_ = (cycle_next_ + 1) % lat_.recent_cycle_ms.size();
    }
  }
  cycles.fetch_add(1);
}

namespace {
// A vcjob is a few levels deep (job, spec, tasks, template, pod spec, containers, ...); 128 is the
// AdmissionReview's bound too.
constexpr int kMaxWhatIfDepth = 128;
// Enough for the largest gangs seen on real clusters; a larger what-if is refused rather than left to hold the
// state thread.
constexpr int64_t kMaxWhatIfPods = 10000;
}  // namespace

core::StatusOr<std::string> SchedulerProcess::Impl::TestOnly(const std::string& body) {
  // Bounded like an AdmissionReview: a body nested without end is refused before a DOM exists (copies and
  // dumps of a DOM recurse per level, and a few hundred thousand levels end the process).
  auto parsed = api::ParseJson(body, kMaxWhatIfDepth);
  if (!parsed.ok()) return core::InvalidArgumentError("the body is not acceptable JSON: " + parsed.status().message());
  json in = std::move(parsed).value();
  if (!in.is_object()) return core::InvalidArgumentError("the body is not a JSON object");
  if (in.value("kind", "") != "Job" || in.value("apiVersion", "").rfind("batch.volcano.sh/", 0) != 0)
    return core::InvalidArgumentError("the body is not a batch.volcano.sh Job");
  auto decoded = api::FromJson<api::Job>(in);
  if (!decoded.ok()) return decoded.status();
  api::Job job = std::move(*decoded);
  api::JobDefaultsConfig defaults;
  defaults.scheduler_names = o_.scheduler_names;
  defaults.default_queue = o_.default_queue;
  api::MutateJob(&job, defaults);
  if (job.metadata.namespace_.empty()) job.metadata.namespace_ = "default";
  // Every pod of a what-if is built and evaluated on the state thread, which no cycle can use meanwhile.
  int64_t total = 0;
  for (const auto& task : job.spec.tasks) {
    if (task.replicas < 0)
      return core::InvalidArgumentError("spec.tasks[" + task.name + "].replicas: must not be negative, got " +
                                        std::to_string(task.replicas));
    total += task.replicas;
  }
  if (total > kMaxWhatIfPods)
    return core::InvalidArgumentError("spec.tasks[*].replicas: a what-if evaluates at most " +
                                      std::to_string(kMaxWhatIfPods) + " pods, this job has " +
                                      std::to_string(total));
  if (!job.spec.running_estimate.empty()) {
    auto d = api::ParseGoDuration(job.spec.running_estimate);
    if (!d.ok() || d->count() < 0)
      return core::InvalidArgumentError("spec.runningEstimate: \"" + job.spec.running_estimate + "\" is not a duration");
  }
  // The PodGroup the job controller would make for it, read as the scheduler reads PodGroups.
  api::PodGroup pg;
  pg.metadata.name = job.metadata.name;
  pg.metadata.namespace_ = job.metadata.namespace_;
  pg.metadata.annotations = job.metadata.annotations;
  if (!job.spec.running_estimate.empty())
    pg.metadata.annotations[std::string(api::kRunningEstimateAnnotation)] = job.spec.running_estimate;
  pg.spec.min_member = job.spec.min_available;
  pg.spec.queue = job.spec.queue;
  pg.spec.network_topology = job.spec.network_topology;
  core::StatusOr<sched::StartEstimate> answer = core::InternalError("the scheduler did not answer");
  int pods = 0;
  sched::JobInfo j;
  WithState([&](sched::ClusterState& st) {
    j = ToJobInfo(pg, &st.resources(), o_.default_queue);
    std::vector<sched::TaskInfo> tasks;
    for (const auto& task : job.spec.tasks) {
      for (int32_t i = 0; i < task.replicas; ++i) {
        api::Pod pod;
        pod.metadata = task.template_.metadata;
        pod.metadata.namespace_ = j.ns;
        pod.metadata.name = j.name + "-" + task.name + "-" + std::to_string(i);
        pod.metadata.uid = "what-if-" + pod.metadata.name;
        pod.spec = task.template_.spec;
        if (pod.spec.scheduler_name.empty()) pod.spec.scheduler_name = job.spec.scheduler_name;
        sched::TaskInfo t = ToTaskInfo(pod, &st.resources(), names_);
        t.request.Set(sched::kPods, 1);  // as ClusterState adds on UpsertPod
        t.job = j.key;
        t.role = task.name;
        t.status = sched::TaskStatus::kPending;
        tasks.push_back(std::move(t));
      }
    }
    pods = static_cast<int>(tasks.size());
    answer = core_->WhatIf(j, std::move(tasks), clock_->WallNow());
  });
  if (!answer.ok()) return answer.status();
  json out = {{"job", j.key}, {"queue", j.queue}, {"kind", sched::StartEstimateKindName(answer->kind)},
              {"pods", pods}, {"why", answer->why}};
  if (answer->kind != sched::StartEstimate::Kind::kUnknown) {
    out["startTime"] = core::FormatRfc3339(answer->at);
    out["nodes"] = answer->nodes;
  }
  return out.dump();
}

std::pair<int, std::string> SchedulerProcess::Impl::WebSnapshot() {
  if (!web_) return {404, R"j({"error":"the web view is off (--enable-web-view)"})j"};
  if (!synced.load()) return {503, R"j({"error":"the scheduler's caches are not synced yet"})j"};
  WebExtras x;
  {
    core::MutexLock l(inbox_mu_);
    x.leading = leading_;
  }
  x.cycles = cycles.load();
  x.faults = web_->Faults();
  x.node_signals = web_->NodeSignals();
  json snap;
  // Built where the state lives, between cycles; serialised here, off the state thread.
  WithState([&](sched::ClusterState&) {
    x.now = clock_->WallNow();
    x.conditions = &web_->conditions();
    snap = BuildWebSnapshot(*core_, x);
  });
  return {200, snap.dump()};
}

void SchedulerProcess::Impl::RunWithStateLocked(const std::function<void(sched::ClusterState&)>& fn) {
  // The function may intern resource names into the core's registry (the extender converts its pod there):
  // the converters are held off and any new name is copied back, so both registries keep agreeing.
  SyncResourcesLocked();
  fn(core_->state());
  auto& r = core_->state().resources();
  while (conv_reg_.size() < r.size()) conv_reg_.Intern(r.Name(conv_reg_.size()));
}

void SchedulerProcess::Impl::WithState(const std::function<void(sched::ClusterState&)>& fn) {
  // A local `done` cannot carry TEPHRA_GUARDED_BY (the attribute is for members and globals); it is only
  // touched under done_mu.
  core::Mutex done_mu;
  core::CondVar done_cv;
  bool done = false;
  {
    core::MutexLock l(inbox_mu_);
    if (stopping_) {
      // No owner thread any more: run here, one caller at a time.
      l.Unlock();
      core::MutexLock sl(stopped_mu_);
      core::MutexLock cl(conv_mu_);
      RunWithStateLocked(fn);
      return;
    }
    inbox_.push_back({std::chrono::steady_clock::now(), false, false, [&] {
                        {
                          core::MutexLock cl(conv_mu_);
                          RunWithStateLocked(fn);
                        }
                        core::MutexLock dl(done_mu);
                        done = true;
                        done_cv.NotifyOne();
                      }});
  }
  inbox_cv_.NotifyOne();
  core::MutexLock l(done_mu);
  // Stop() runs the inbox's leftovers, so this never waits forever.
  while (!done) done_cv.Wait(l);
}

core::Status SchedulerProcess::Impl::ServeExtender(kube::HttpServer& server) {
  InstallExtenderEndpoints(
      server, o_.extender_prefix, extender_.get(),
      [this](const std::function<void(sched::ClusterState&)>& fn) { WithState(fn); }, deps_.client,
      o_.extender_bind_from_any);
  return core::Status::OK();
}

void SchedulerProcess::Impl::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    core::MutexLock l(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.NotifyAll();
  // The state thread first (no cycle hands out work after this), then the workers, then the watches.
  if (loop_.joinable()) loop_.join();
  if (binder_) binder_->Stop();
  if (evictor_) evictor_->Stop();
  if (writer_) writer_->Stop();
  for (kube::InformerBase* inf : Informers()) inf->Stop();
  // Whoever still waits in WithState gets its function run here (the owner being gone).
  std::deque<Delta> rest;
  {
    core::MutexLock l(inbox_mu_);
    rest.swap(inbox_);
  }
  core::MutexLock sl(stopped_mu_);
  for (auto& d : rest) d.apply();
}

core::StatusOr<std::unique_ptr<SchedulerProcess>> SchedulerProcess::Create(const SchedulerOptions& o, SchedulerDeps deps) {
  if (!deps.client || !deps.status_client) return core::InvalidArgumentError("scheduler process: clients are required");
  if (o.scheduler_names.empty()) return core::InvalidArgumentError("--scheduler-name: at least one name is required");
  std::vector<std::string> warnings;
  sched::SchedulerConf conf = sched::SchedulerConf::Default();
  bool conf_rejected = false;
  if (!o.scheduler_conf.empty()) {
    auto c = LoadSchedulerConfFile(o.scheduler_conf, &warnings);
    if (c.ok()) {
      conf = std::move(*c);
    } else if (o.disable_default_conf) {
      return c.status().Annotate("--scheduler-conf (and --disable-default-scheduler-config forbids the default)");
    } else {
      // Volcano's choice: a scheduler that schedules with its defaults beats one that crash-loops on a typo
      // in a ConfigMap; the file is re-read when it changes.
      log::Error("scheduler configuration rejected; scheduling with the built-in default until the file is fixed")
          .Kv("file", o.scheduler_conf)
          .Kv("error", c.status());
      warnings.clear();
      conf_rejected = true;
    }
  }
  ApplyCoreFlags(o, &conf);
  const core::Clock* clock = deps.clock;
  static core::RealClock real;
  auto created = sched::Scheduler::Create(conf, sched::PluginRegistry::Builtin(), clock ? clock : &real, &warnings);
  if (!created.ok()) return created.status().Annotate("--scheduler-conf");
  for (const auto& w : warnings) log::Warn("scheduler configuration").Kv("warning", w);
  (*created)->state().set_options(conf.core);
  auto impl = std::make_unique<Impl>(o, std::move(deps), std::move(conf), std::move(*created));
  if (conf_rejected) impl->ConfRejectedAtStart();
  return std::unique_ptr<SchedulerProcess>(new SchedulerProcess(std::move(impl)));
}

SchedulerProcess::SchedulerProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchedulerProcess::~SchedulerProcess() { Stop(); }
core::Status SchedulerProcess::Start() { return impl_->Start(); }
bool SchedulerProcess::WaitForSync(std::chrono::steady_clock::time_point d) const {
  if (!impl_->WaitForSync(d)) return false;
  impl_->synced = true;
  return true;
}
bool SchedulerProcess::synced() const { return impl_->synced.load(); }
void SchedulerProcess::SetLeading(bool leading) { impl_->SetLeading(leading); }
void SchedulerProcess::Drain(std::chrono::milliseconds d) { impl_->Drain(d); }
void SchedulerProcess::Stop() { impl_->Stop(); }
void SchedulerProcess::CollectMetrics() { impl_->CollectMetrics(); }
void SchedulerProcess::WithState(const std::function<void(sched::ClusterState&)>& fn) { impl_->WithState(fn); }
core::Status SchedulerProcess::ServeExtender(kube::HttpServer& server) { return impl_->ServeExtender(server); }
core::StatusOr<std::string> SchedulerProcess::TestOnly(const std::string& body) { return impl_->TestOnly(body); }
std::pair<int, std::string> SchedulerProcess::WebSnapshot() { return impl_->WebSnapshot(); }
uint64_t SchedulerProcess::cycles() const { return impl_->cycles.load(); }
int64_t SchedulerProcess::last_cycle_ms() const { return impl_->last_cycle_ms.load(); }
SchedulerProcess::EventLatency SchedulerProcess::event_latency() const { return impl_->Latency(); }

// ------------------------------------------------------------------------------------------------- the role

int RunScheduler(const SchedulerOptions& o) {
  kube::ManagerOptions mo = kube::ManagerOptionsFor("scheduler", o, o.listen_address, o.health_address);
  mo.leader_elect = o.leader_elect;
  mo.lock_namespace = o.lock_object_namespace;
  mo.lock_name = "vc-scheduler";  // Volcano's: a Tephra and a Volcano scheduler never lead together
  mo.leader_metric = "tephra_scheduler_is_leader";
  auto created = kube::Manager::Create(std::move(mo));
  if (!created.ok()) {
    std::fprintf(stderr, "tephra scheduler: %s\n", created.status().ToString().c_str());
    return 2;
  }
  kube::Manager& mgr = **created;

  // Binds use the main client (its QPS/burst is the bind throttle); status, conditions, evictions and
  // Events use their own, so a burst of them never delays binds.
  auto status_client = mgr.ClientFor("status", {o.kube_api_qps, o.kube_api_burst});
  if (!status_client.ok()) {
    log::Error("cannot create API client").Kv("error", status_client.status());
    return 2;
  }
  SchedulerDeps deps;
  deps.client = mgr.client();
  deps.status_client = *status_client;
  deps.clock = &mgr.clock();
  deps.registry = &mgr.registry();
  deps.informers = &mgr.informers();
  deps.events = &mgr.events(o.scheduler_names.front());
  auto proc_or = SchedulerProcess::Create(o, deps);
  if (!proc_or.ok()) {
    log::Error("invalid scheduler configuration").Kv("error", proc_or.status());
    return 2;
  }
  SchedulerProcess& proc = **proc_or;

  mgr.AddReadinessCheck("informers-synced", [&] { return proc.synced(); });
  // What-if for `tephra ctl job run --test-only` (docs/reservations.md), beside /metrics.
  mgr.AddPostHandler("/v1/test-only", [&](const kube::ServerRequest& req) {
    if (!proc.synced()) return kube::ServerResponse{503, "text/plain; charset=utf-8", "the scheduler's caches are not synced yet\n"};
    auto r = proc.TestOnly(req.body);
    if (!r.ok()) {
      const int code = r.status().code() == core::StatusCode::kInvalidArgument ? 400 : 500;
      return kube::ServerResponse{code, "text/plain; charset=utf-8", r.status().message() + "\n"};
    }
    return kube::ServerResponse{200, "application/json", *r};
  });
  // The read-only web view (docs/web-view.md), beside /metrics: same address, TLS and authentication.
  if (o.enable_web_view)
    for (auto& [path, handler] : WebViewRoutes([&] { return proc.WebSnapshot(); })) mgr.AddGetHandler(path, handler);
  mgr.AddCollector([&] { proc.CollectMetrics(); });
  // Unhealthy when the leader's loop stopped cycling (stuck), so a liveness probe restarts it.
  mgr.AddLivenessCheck("scheduling-loop", [&] {
    const int64_t stale = std::max<int64_t>(30000, 10 * o.schedule_period.count());
    const int64_t last = proc.last_cycle_ms();
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
    return !mgr.leading() || last == 0 || now - last <= stale;
  });

  std::unique_ptr<kube::HttpServer> extender_srv;
  // Every replica: informers and the state thread (a standby's state is as current as the leader's), and
  // the extender API once the caches are synced.
  mgr.Add(kube::MakeRunnable("scheduler-state", /*needs_leader_election=*/false, [&](std::stop_token stop) {
    TEPHRA_RETURN_IF_ERROR(proc.Start());
    log::Info("waiting for informer caches").Kv("scheduler_names", o.scheduler_names.size());
    while (!stop.stop_requested() && !proc.WaitForSync(std::chrono::steady_clock::now() + std::chrono::milliseconds(500))) {
    }
    if (!stop.stop_requested()) {
      proc.WithState([](sched::ClusterState& st) {
        log::Info("caches synced").Kv("nodes", st.node_count()).Kv("tasks", st.task_count());
      });
      if (!o.extender_address.empty()) {
        extender_srv = std::make_unique<kube::HttpServer>();
        TEPHRA_RETURN_IF_ERROR(proc.ServeExtender(*extender_srv));
        if (auto s = extender_srv->Start(o.extender_address); !s.ok())
          return core::InvalidArgumentError("cannot serve the extender API on " + o.extender_address + ": " + s.ToString());
        log::Info("serving the kube-scheduler extender API").Kv("address", o.extender_address).Kv("prefix", o.extender_prefix);
      }
    }
    while (!kube::SleepUnlessStopped(stop, std::chrono::seconds(1))) {
    }
    if (extender_srv) extender_srv->Stop();
    proc.Stop();
    return core::Status::OK();
  }));
  // The leader: cycles.
  mgr.Add(kube::MakeRunnable("scheduling", /*needs_leader_election=*/true, [&](std::stop_token stop) {
    while (!proc.synced() && !kube::SleepUnlessStopped(stop, std::chrono::milliseconds(100))) {
    }
    if (stop.stop_requested()) return core::Status::OK();
    if (o.create_default_queues) {
      // The Queue CRD may be installed after us; retry a while rather than fail the process.
      for (int i = 0; i < 30 && !stop.stop_requested(); ++i) {
        auto s = EnsureDefaultQueues(*deps.client, o.default_queue);
        if (s.ok()) break;
        log::Warn("cannot create default queues yet").Kv("error", s);
        kube::SleepUnlessStopped(stop, std::chrono::seconds(1));
      }
    }
    proc.SetLeading(true);
    log::Info("scheduler started").Kv("period_ms", static_cast<int64_t>(o.schedule_period.count()));
    while (!kube::SleepUnlessStopped(stop, std::chrono::seconds(1))) {
    }
    // Binds in flight first (a standby must not start deciding while ours still land), then statuses; the
    // Manager releases the lease after this returns. A replica that lost the lease does not wait.
    proc.SetLeading(false);
    proc.Drain(mgr.lost_lease() ? std::chrono::milliseconds(0) : std::chrono::milliseconds(2000));
    return core::Status::OK();
  }));
  return mgr.Run();
}

}  // namespace tephra::scheduler
