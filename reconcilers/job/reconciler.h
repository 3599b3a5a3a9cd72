// The vcjob executor: implements kube::Reconciler for keys "namespace/name" of batch.volcano.sh Jobs.
//
// Reconcile(key): read the job, its pods (owner-UID index), its PodGroup and plugin objects from the
// informer caches (plugin objects, PVCs, queue and priority classes by GET when no informer is given, so the
// controller needs no cluster-wide watch on Secrets), run Plan(), execute the Actions with kube::Client:
//   0. a job stored without the admission defaults (no mutating webhook ran) is first written back with
//      them (api::MutateJob; a `Defaulted` Event), and planned again on the object as written;
//   1. job spec/metadata update, then the status PUT (resourceVersion precondition; 409 -> re-read the job
//      from the API server and plan again, up to 5 times);
//   2. victims: JSON-patch `volcano.sh/controller-out-of-sync: "true"` (a failed patch keeps the pod), then
//      delete; PodGroup and plugin-object deletes;
//   3. PVCs, PodGroup, plugin objects; pods created in parallel (AlreadyExists with our owner UID = success);
//   4. job delete (TTL, Foreground), Events, requeue-after.
// Errors are retriable (rate-limited requeue by the Controller); when the Controller reports that a key
// reached --max-requeue-num, OnMaxRequeues() turns the next reconcile into TerminateJob. A job whose pods
// the API server rejects gets a `FailedCreate` Event and status.state reason/message saying why, and only
// its own key backs off.
//
// Thread-safety: Reconcile may run on several workers for different keys (the work queue never hands one
// key to two workers); the per-job memory is guarded by a mutex.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "plan.h"
#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/core/clock.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/keygen.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::job {

struct JobReconcilerOptions {
  kube::ClientPtr client;  // required
  // Required informers. The pod informer needs kube::kIndexOwnerUid (AddIndexers()).
  kube::Informer<api::Job>* jobs = nullptr;
  kube::Informer<api::Pod>* pods = nullptr;
  kube::Informer<api::PodGroup>* pod_groups = nullptr;
  // Optional informers; when null the executor GETs the few objects it needs.
  kube::Informer<api::Queue>* queues = nullptr;
  kube::Informer<api::PriorityClass>* priority_classes = nullptr;
  kube::Informer<api::ConfigMap>* config_maps = nullptr;
  kube::Informer<api::Service>* services = nullptr;
  kube::Informer<api::PersistentVolumeClaim>* pvcs = nullptr;
  kube::EventRecorder* recorder = nullptr;       // optional
  kube::KeyGeneratorPtr key_generator;           // required when jobs use the ssh plugin
  const core::Clock* clock = nullptr;            // nullptr = RealClock
  kube::metrics::Registry* registry = nullptr;   // nullptr = Registry::Default()
  // Admission defaults for jobs stored without them; scheduler_names = --scheduler-name (first = default).
  api::JobDefaultsConfig defaults;
  int pod_create_parallelism = 8;
  int conflict_retries = 5;
};

class JobReconciler final : public kube::Reconciler {
 public:
  explicit JobReconciler(JobReconcilerOptions opts);

  kube::ReconcileResult Reconcile(const std::string& key) override;

  // Queues a one-shot request (from a Command) for the job `key`; the caller enqueues the key. Requests are
  // consumed in order, each by the reconcile whose status write succeeds (at most once, like Volcano, which
  // deletes the Command before acting on it); two sent back to back both run.
  void Submit(const std::string& key, Request request) TEPHRA_EXCLUDES(mu_);

  // For ControllerOptions::on_max_requeues: the job is terminated on its next reconcile.
  void OnMaxRequeues(const std::string& key, const core::Status& last_error) TEPHRA_EXCLUDES(mu_);

  // Adds the indexes Reconcile relies on. Call before the informers start.
  static void AddIndexers(kube::Informer<api::Pod>& pods);
  // Wires informer events to the controller: jobs by key; pods and PodGroups by their controlling Job.
  void RegisterHandlers(kube::Controller& controller);

  // Test hooks.
  size_t HandledPodsForTest(const std::string& key) const TEPHRA_EXCLUDES(mu_);

 private:
  struct Memory {
    std::string job_uid;
    std::set<std::string> handled_pod_uids;  // patched or deleted by us, not yet gone from the cache
    std::deque<Request> requests;  // oldest first; the front is planned, and popped once consumed
    bool fresh_read = false;       // the next reconcile reads the job from the API server, not the cache
  };
  bool TakeFreshRead(const std::string& key) TEPHRA_EXCLUDES(mu_);

  core::StatusOr<Observed> Observe(const api::Job& job, const std::string& key) TEPHRA_EXCLUDES(mu_);
  // Executes everything; returns the first error (others are logged/evented).
  // `written` receives the job as the API server stored a successful update_job (when it can be decoded).
  core::Status Execute(const std::string& key, const Observed& obs, const Actions& a, bool* status_conflict,
                       std::optional<api::Job>* written) TEPHRA_EXCLUDES(mu_);
  core::Status CreatePods(const api::Job& job, const std::vector<api::Pod>& pods);
  void RecordEvent(const api::Job& job, const std::string& type, const std::string& reason,
                   const std::string& message);
  template <typename T>
  core::StatusOr<std::optional<T>> Lookup(kube::Informer<T>* informer, const std::string& ns,
                                          const std::string& name);

  JobReconcilerOptions opts_;
  const core::Clock& clock_;
  mutable core::Mutex mu_;
  std::map<std::string, Memory> memory_ TEPHRA_GUARDED_BY(mu_);
  kube::Controller* controller_ = nullptr;  // set by RegisterHandlers; not owned
  kube::metrics::CounterFamily* defaults_applied_ = nullptr;  // {job_namespace}
  // Volcano's job metrics (docs/metrics.md): phase counts, creation-to-pods latency; Tephra's restarts.
  kube::metrics::CounterFamily* completed_ = nullptr;  // {job_name, queue_name}
  kube::metrics::CounterFamily* failed_ = nullptr;     // {job_name, queue_name}
  kube::metrics::CounterFamily* restarts_ = nullptr;   // {queue_name, action}
  kube::metrics::Histogram* pod_creation_ms_ = nullptr;
};

}  // namespace tephra::reconcilers::job
