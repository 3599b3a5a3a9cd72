#include "manager/manager.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "command/reconciler.h"
#include "cronjob/reconciler.h"
#include "fault/reconciler.h"
#include "fault/training_time.h"
#include "hypernode/reconciler.h"
#include "job/reconciler.h"
#include "jobflow/reconciler.h"
#include "podgroup/reconciler.h"
#include "queue/reconciler.h"
#include "tephra/api/bus.h"
#include "tephra/api/flow.h"
#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/api/topology.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/keygen.h"
#include "tephra/kube/log.h"
#include "tephra/kube/manager.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::manager {

namespace {

namespace log = kube::log;
using Clock = std::chrono::steady_clock;


// Volcano's Lease name for the controller-manager.
constexpr const char* kLockName = "vc-controller-manager";
// source.component of our Events, as Volcano's controllers report it.
constexpr const char* kEventComponent = "vc-controller-manager";

// Everything that runs while leading (the "controllers" runnable). The informers live in the process's
// shared factory; Stop() stops them before the controllers their handlers enqueue into are destroyed.
class Controllers {
 public:
  Controllers(const ManagerOptions& o, kube::ClientPtr client, std::set<std::string> enabled,
              kube::SharedInformerFactory& factory, kube::EventRecorder& recorder)
      : o_(o), client_(std::move(client)), enabled_(std::move(enabled)), factory_(factory), recorder_(&recorder) {}

  ~Controllers() { Stop(); }

  core::Status Build() {
    if (enabled_.count(kJobController)) BuildJob();
    if (enabled_.count(kQueueController)) BuildQueue();
    if (enabled_.count(kPodGroupController)) BuildPodGroup();
    if (enabled_.count(kJobFlowController)) BuildJobFlow();
    if (enabled_.count(kJobTemplateController)) BuildJobTemplate();
    if (enabled_.count(kCronJobController)) BuildCronJob();
    if (enabled_.count(kHyperNodeController)) BuildHyperNode();
    if (enabled_.count(kFaultController)) BuildFault();
    if (job_ || queue_) BuildCommand();
    if (controllers_.empty()) return core::InvalidArgumentError("--controllers: no controller enabled");
    return core::Status::OK();
  }

  // Starts informers; returns once synced (true) or when stopping (false).
  bool StartAndSync(const std::stop_token& stop) {
    factory_.StartAll();
    auto last_log = Clock::now();
    while (!stop.stop_requested()) {
      if (factory_.WaitForSync(Clock::now() + std::chrono::milliseconds(500))) return true;
      if (Clock::now() - last_log > std::chrono::seconds(10)) {
        log::Warn("informer caches not synced yet (are the Volcano CRDs installed?)");
        last_log = Clock::now();
      }
    }
    return false;
  }

  core::Status StartControllers() {
    for (auto& c : controllers_) {
      TEPHRA_RETURN_IF_ERROR(c->Start());
      log::Info("controller started").Kv("controller", c->name());
    }
    return core::Status::OK();
  }

  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    for (auto& c : controllers_) c->Stop();  // drains in-flight reconciles
    factory_.StopAll();
  }

 private:
  void BuildJob() {
    auto jobs = factory_.For<api::Job>();
    auto pods = factory_.For<api::Pod>();
    auto pgs = factory_.For<api::PodGroup>();
    auto queues = factory_.For<api::Queue>();
    auto pcs = factory_.For<api::PriorityClass>();
    job::JobReconciler::AddIndexers(*pods);
    job::JobReconcilerOptions jo;
    jo.client = client_;
    jo.jobs = jobs.get();
    jo.pods = pods.get();
    jo.pod_groups = pgs.get();
    jo.queues = queues.get();
    jo.priority_classes = pcs.get();
    jo.recorder = recorder_;
    jo.key_generator = kube::NewOpenSslKeyGenerator();
    // Jobs stored without the mutating webhook's defaults get them from the controller; the first
    // --scheduler-name is the default schedulerName, as the webhook's own flag is.
    jo.defaults.scheduler_names = o_.scheduler_names;
    job_ = std::make_unique<job::JobReconciler>(std::move(jo));
    kube::ControllerOptions co;
    co.name = kJobController;
    co.workers = o_.worker_threads;
    co.max_requeues = o_.max_requeue_num;
    job::JobReconciler* rec = job_.get();
    co.on_max_requeues = [rec](const std::string& key, const core::Status& s) { rec->OnMaxRequeues(key, s); };
    auto c = std::make_unique<kube::Controller>(std::move(co), job_.get());
    job_->RegisterHandlers(*c);
    job_controller_ = c.get();
    controllers_.push_back(std::move(c));
  }

  void BuildQueue() {
    auto queues = factory_.For<api::Queue>();
    auto pgs = factory_.For<api::PodGroup>();
    queue::QueueReconciler::AddIndexers(*queues, *pgs);
    queue::QueueReconcilerOptions qo;
    qo.client = client_;
    qo.queues = queues.get();
    qo.pod_groups = pgs.get();
    qo.recorder = recorder_;
    queue_ = std::make_unique<queue::QueueReconciler>(std::move(qo));
    kube::ControllerOptions co;
    co.name = kQueueController;
    co.workers = o_.worker_threads_for_queue;
    auto c = std::make_unique<kube::Controller>(std::move(co), queue_.get());
    queue_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  void BuildPodGroup() {
    podgroup::PodGroupReconcilerOptions po;
    po.client = client_;
    po.pods = factory_.For<api::Pod>().get();
    po.pod_groups = factory_.For<api::PodGroup>().get();
    po.scheduler_names = std::set<std::string>(o_.scheduler_names.begin(), o_.scheduler_names.end());
    po.inherit_owner_annotations = o_.inherit_owner_annotations;
    // Scale-to-0 cleanup (docs/controllers.md, "PodGroups for plain pods"); needs list/watch on apps
    // replicasets and statefulsets, which Volcano's controller role grants too.
    po.replica_sets = factory_.For<podgroup::ReplicaSet>().get();
    po.stateful_sets = factory_.For<podgroup::StatefulSet>().get();
    podgroup_ = std::make_unique<podgroup::PodGroupReconciler>(std::move(po));
    kube::ControllerOptions co;
    co.name = kPodGroupController;
    co.workers = o_.worker_threads_for_podgroup;
    auto c = std::make_unique<kube::Controller>(std::move(co), podgroup_.get());
    podgroup_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  void BuildJobFlow() {
    auto jobs = factory_.For<api::Job>();
    jobflow::JobFlowReconciler::AddIndexers(*jobs);
    jobflow::JobFlowReconcilerOptions fo;
    fo.client = client_;
    fo.flows = factory_.For<api::JobFlow>().get();
    fo.templates = factory_.For<api::JobTemplate>().get();
    fo.jobs = jobs.get();
    fo.recorder = recorder_;
    jobflow_ = std::make_unique<jobflow::JobFlowReconciler>(std::move(fo));
    kube::ControllerOptions co;
    co.name = kJobFlowController;
    co.workers = o_.worker_threads_for_jobflow;
    auto c = std::make_unique<kube::Controller>(std::move(co), jobflow_.get());
    jobflow_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  void BuildJobTemplate() {
    auto jobs = factory_.For<api::Job>();
    jobflow::JobFlowReconciler::AddIndexers(*jobs);
    jobtemplate_ = std::make_unique<jobflow::JobTemplateReconciler>(client_, factory_.For<api::JobTemplate>().get(),
                                                                     jobs.get());
    kube::ControllerOptions co;
    co.name = kJobTemplateController;
    co.workers = o_.worker_threads_for_jobflow;
    auto c = std::make_unique<kube::Controller>(std::move(co), jobtemplate_.get());
    jobtemplate_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  // The vcjob informer is the one the job and jobflow controllers share (one watch per kind per process).
  void BuildCronJob() {
    auto jobs = factory_.For<api::Job>();
    cronjob::CronJobReconciler::AddIndexers(*jobs);
    cronjob::CronJobReconcilerOptions co;
    co.client = client_;
    co.cronjobs = factory_.For<api::CronJob>().get();
    co.jobs = jobs.get();
    co.recorder = recorder_;
    cronjob_ = std::make_unique<cronjob::CronJobReconciler>(std::move(co));
    kube::ControllerOptions ko;
    ko.name = kCronJobController;
    ko.workers = o_.worker_threads_for_cronjob;
    auto c = std::make_unique<kube::Controller>(std::move(ko), cronjob_.get());
    cronjob_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  // One worker: the whole topology is one key. The ConfigMap informer lists and watches only the config
  // ConfigMap (field selector on its name, in its namespace), as Volcano's filtered informer does.
  void BuildHyperNode() {
    kube::InformerOptions cmo;
    cmo.namespace_ = o_.network_topology_config_namespace;
    cmo.field_selector = "metadata.name=" + o_.network_topology_config_name;
    hypernode::HyperNodeReconcilerOptions ho;
    ho.client = client_;
    ho.nodes = factory_.For<api::Node>().get();
    ho.hypernodes = factory_.For<api::HyperNode>().get();
    ho.configmaps = factory_.For<api::ConfigMap>(&cmo).get();
    ho.config_namespace = o_.network_topology_config_namespace;
    ho.config_name = o_.network_topology_config_name;
    ho.recorder = recorder_;
    hypernode_ = std::make_unique<hypernode::HyperNodeReconciler>(std::move(ho));
    kube::ControllerOptions ko;
    ko.name = kHyperNodeController;
    ko.workers = 1;
    auto c = std::make_unique<kube::Controller>(std::move(ko), hypernode_.get());
    hypernode_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  // One worker: the node budget (--fault-max-node-fraction) counts the nodes already marked, and two workers
  // could each see room for one more.
  void BuildFault() {
    auto pods = factory_.For<api::Pod>();
    fault::FaultReconciler::AddIndexers(*pods);
    fault::FaultReconcilerOptions fo;
    fo.client = client_;
    fo.nodes = factory_.For<api::Node>().get();
    fo.pods = pods.get();
    fo.jobs = factory_.For<api::Job>().get();
    fo.pod_groups = factory_.For<api::PodGroup>().get();
    fo.recorder = recorder_;
    fo.config = o_.fault;
    fault_ = std::make_unique<fault::FaultReconciler>(std::move(fo));
    kube::ControllerOptions ko;
    ko.name = kFaultController;
    ko.workers = 1;
    auto c = std::make_unique<kube::Controller>(std::move(ko), fault_.get());
    fault_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
    // Effective training time per job: its own queue, so pod churn never delays the fault worker.
    fault::TrainingTimeOptions to;
    to.client = client_;
    to.pod_groups = factory_.For<api::PodGroup>().get();
    to.pods = pods.get();
    training_ = std::make_unique<fault::TrainingTimeReconciler>(std::move(to));
    kube::ControllerOptions tko;
    tko.name = std::string(kFaultController) + "-training-time";
    tko.workers = 2;
    auto t = std::make_unique<kube::Controller>(std::move(tko), training_.get());
    training_->RegisterHandlers(*t);
    controllers_.push_back(std::move(t));
  }

  // Commands are consumed by whichever of the job and queue controllers runs (Volcano splits them the same
  // way); one controller for both, since the consume step (delete first) is the same.
  void BuildCommand() {
    auto commands = factory_.For<api::Command>();
    command::CommandReconcilerOptions co;
    co.client = client_;
    co.commands = commands.get();
    if (job_) {
      job::JobReconciler* rec = job_.get();
      kube::Controller* jc = job_controller_;
      kube::EventRecorder* recorder = recorder_;
      auto jobs = factory_.For<api::Job>();
      co.to_job = [rec, jc, recorder, jobs](const std::string& key, const api::Command& cmd) {
        job::Request r;
        r.action = cmd.action;
        r.event = std::string(api::kEventCommandIssued);
        r.reason = cmd.reason;
        r.message = cmd.message;
        rec->Submit(key, std::move(r));
        jc->Enqueue(key);
        if (auto j = jobs->Get(key))
          recorder->Event(kube::ReferenceTo(*j), kube::EventType::kNormal, std::string(api::kEventCommandIssued),
                          "Start to execute command " + cmd.action +
                              ", and clean it up to make sure executed not more than once.");
      };
    }
    if (queue_) {
      queue::QueueReconciler* rec = queue_.get();
      co.to_queue = [rec](const std::string& name, const api::Command& cmd) { rec->Submit(name, cmd.action); };
    }
    command_ = std::make_unique<command::CommandReconciler>(std::move(co));
    kube::ControllerOptions cc;
    cc.name = "command-controller";
    cc.workers = 1;
    auto c = std::make_unique<kube::Controller>(std::move(cc), command_.get());
    command_->RegisterHandlers(*c);
    controllers_.push_back(std::move(c));
  }

  const ManagerOptions& o_;
  kube::ClientPtr client_;
  std::set<std::string> enabled_;
  kube::SharedInformerFactory& factory_;
  kube::EventRecorder* recorder_;
  std::unique_ptr<job::JobReconciler> job_;
  std::unique_ptr<queue::QueueReconciler> queue_;
  std::unique_ptr<command::CommandReconciler> command_;
  std::unique_ptr<podgroup::PodGroupReconciler> podgroup_;
  std::unique_ptr<jobflow::JobFlowReconciler> jobflow_;
  std::unique_ptr<jobflow::JobTemplateReconciler> jobtemplate_;
  std::unique_ptr<cronjob::CronJobReconciler> cronjob_;
  std::unique_ptr<hypernode::HyperNodeReconciler> hypernode_;
  std::unique_ptr<fault::FaultReconciler> fault_;
  std::unique_ptr<fault::TrainingTimeReconciler> training_;
  kube::Controller* job_controller_ = nullptr;
  std::vector<std::unique_ptr<kube::Controller>> controllers_;
  bool stopped_ = false;
};

}  // namespace

const std::vector<std::string>& KnownControllers() {
  static const std::vector<std::string> k = {kJobController, kPodGroupController, kQueueController,
                                                kJobFlowController, kJobTemplateController, kCronJobController,
                                                kHyperNodeController, kFaultController};
  return k;
}

core::StatusOr<std::set<std::string>> ResolveControllers(const std::vector<std::string>& spec,
                                                         std::vector<std::string>* warnings) {
  // Volcano's controllers that Tephra does not run as separate controllers (TTL clean-up is part of the job
  // controller here).
  static const std::set<std::string> kVolcanoOnly = {"gc-controller", "sharding-controller",
                                                     "colocation-config-controller"};
  const auto& known = KnownControllers();
  std::vector<std::string> entries;
  for (const std::string& item : spec) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t comma = item.find(',', start);
      std::string n = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? item.size() + 1 : comma + 1;
      while (!n.empty() && n.front() == ' ') n.erase(n.begin());
      while (!n.empty() && n.back() == ' ') n.pop_back();
      if (!n.empty()) entries.push_back(std::move(n));
    }
  }
  std::set<std::string> named;
  bool star = entries.empty();
  for (const auto& e : entries) {
    if (e == "*") {
      star = true;
      continue;
    }
    std::string name = (e.front() == '-' || e.front() == '+') ? e.substr(1) : e;
    if (!named.insert(name).second)
      return core::InvalidArgumentError("--controllers: " + name + " is given twice (enable and disable are exclusive)");
    if (std::find(known.begin(), known.end(), name) == known.end() && !kVolcanoOnly.count(name) && warnings) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      warnings->push_back("--controllers: unknown controller \"" + name + "\" ignored (known: " + list + ")");
    }
  }
  std::set<std::string> out;
  for (const auto& k : known) {
    std::optional<bool> decided;
    for (const auto& e : entries) {
      if (e == k || e == "+" + k) decided = true;
      else if (e == "-" + k) decided = false;
      if (decided) break;
    }
    if (decided.value_or(star)) out.insert(k);
  }
  return out;
}

void NetworkTopologyConfigFromEnv(ManagerOptions* o, const char* (*getenv)(const char*)) {
  if (!getenv) getenv = [](const char* k) -> const char* { return std::getenv(k); };
  const char* ns = getenv("KUBE_POD_NAMESPACE");
  const char* release = getenv("HELM_RELEASE_NAME");
  o->network_topology_config_namespace = (ns && *ns) ? ns : "volcano-system";
  o->network_topology_config_name = std::string((release && *release) ? release : "volcano") + "-controller-configmap";
}

core::Status ValidateOptions(const ManagerOptions& o) {
  if (o.scheduler_names.empty()) return core::InvalidArgumentError("--scheduler-name: at least one name is required");
  for (const auto& n : o.scheduler_names)
    if (n.empty()) return core::InvalidArgumentError("--scheduler-name: empty name");
  if (o.max_requeue_num < -1) return core::InvalidArgumentError("--max-requeue-num: must be >= -1 (-1: for ever)");
  if (o.worker_threads < 1) return core::InvalidArgumentError("--worker-threads: must be >= 1");
  if (o.worker_threads_for_podgroup < 1) return core::InvalidArgumentError("--worker-threads-for-podgroup: must be >= 1");
  if (o.worker_threads_for_queue < 1) return core::InvalidArgumentError("--worker-threads-for-queue: must be >= 1");
  if (o.worker_threads_for_jobflow < 1) return core::InvalidArgumentError("--worker-threads-for-jobflow: must be >= 1");
  if (o.worker_threads_for_cronjob < 1) return core::InvalidArgumentError("--worker-threads-for-cronjob: must be >= 1");
  if (o.leader_elect && o.lock_object_namespace.empty())
    return core::InvalidArgumentError("--lock-object-namespace: required with --leader-elect");
  auto c = ResolveControllers(o.controllers);
  if (!c.ok()) return c.status();
  return core::Status::OK();
}

int RunControllerManager(const ManagerOptions& o) {
  if (auto s = ValidateOptions(o); !s.ok()) {
    std::fprintf(stderr, "tephra controller: %s\n", s.ToString().c_str());
    return 2;
  }
  std::vector<std::string> warnings;
  auto enabled = *ResolveControllers(o.controllers, &warnings);
  for (const auto& w : warnings) log::Warn("controller flags").Kv("warning", w);
  // Volcano runs a controller-manager with nothing enabled (a deployment of only controllers Tephra lacks);
  // so does Tephra, and says so.
  if (enabled.empty()) log::Warn("--controllers enables none of Tephra's controllers; running idle");

  kube::ManagerOptions mo = kube::ManagerOptionsFor("controller", o, o.metrics_address, o.health_address);
  mo.leader_elect = o.leader_elect;
  mo.lock_namespace = o.lock_object_namespace;
  mo.lock_name = kLockName;
  mo.leader_metric = "tephra_controller_is_leader";
  mo.ensure_lock_namespace = true;
  auto created = kube::Manager::Create(std::move(mo));
  if (!created.ok()) {
    std::fprintf(stderr, "tephra controller: %s\n", created.status().ToString().c_str());
    return 2;
  }
  kube::Manager& mgr = **created;

  std::atomic<bool> synced{false};
  // A standby (leader election on, lease held elsewhere) starts its informers only when it leads, and has
  // nothing to serve until then: it is ready, so a rolling update can surge and a PodDisruptionBudget counts
  // it. The leader is ready once its caches synced.
  const bool elect = o.leader_elect;
  mgr.AddReadinessCheck("informers-synced", [&, elect] { return synced.load() || (elect && !mgr.leading()); });
  mgr.Add(kube::MakeRunnable("controllers", /*needs_leader_election=*/true, [&](std::stop_token stop) {
    Controllers c(o, mgr.client(), enabled, mgr.informers(), mgr.events(kEventComponent));
    TEPHRA_RETURN_IF_ERROR(c.Build().Annotate("building controllers"));
    std::string names;
    for (const auto& n : enabled) names += (names.empty() ? "" : ",") + n;
    log::Info("waiting for informer caches").Kv("controllers", names);
    if (c.StartAndSync(stop)) {
      synced = true;
      TEPHRA_RETURN_IF_ERROR(c.StartControllers().Annotate("starting controllers"));
      log::Info("controller-manager running").Kv("controllers", names);
      while (!kube::SleepUnlessStopped(stop, std::chrono::seconds(1))) {
      }
    }
    // In-flight reconciles finish, no new key is taken; then the informers stop.
    c.Stop();
    return core::Status::OK();
  }));
  return mgr.Run();
}

}  // namespace tephra::reconcilers::manager
