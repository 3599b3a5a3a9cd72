// CronJob executor (plan in cronjob/plan.h), keys "namespace/name".
//
// Reads the CronJob and the vcjobs it controls (owner-UID index of the shared vcjob informer) from the
// caches, plans, and writes: Events, deletes (Background propagation; NotFound = done), the create (an
// AlreadyExists re-reads the job from the API server and adopts it if it is ours: a create whose response
// was lost, or a restart, never starts one time twice), then the status (PUT /status with the cached
// resourceVersion: a 409 means the cache was stale, so the key is retried and re-planned from fresh caches).
// Requeues at the next start time.
#pragma once

#include <string>

#include "cronjob/plan.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"

namespace tephra::reconcilers::cronjob {

struct CronJobReconcilerOptions {
  kube::ClientPtr client;                         // required
  kube::Informer<api::CronJob>* cronjobs = nullptr;  // required
  kube::Informer<api::Job>* jobs = nullptr;       // required; needs AddIndexers
  kube::EventRecorder* recorder = nullptr;        // optional
  const core::Clock* clock = nullptr;             // nullptr = RealClock (the wall clock decides what is due)
  ZoneLoader load_zone;                           // nullptr = tz::Load (IANA zones through cctz)
};

class CronJobReconciler final : public kube::Reconciler {
 public:
  explicit CronJobReconciler(CronJobReconcilerOptions opts);
  kube::ReconcileResult Reconcile(const std::string& key) override;
  static void AddIndexers(kube::Informer<api::Job>& jobs);
  // CronJobs by key; vcjobs by their controlling CronJob.
  void RegisterHandlers(kube::Controller& c);

 private:
  void Record(const api::CronJob& cj, const Event& e);
  CronJobReconcilerOptions opts_;
};

}  // namespace tephra::reconcilers::cronjob
