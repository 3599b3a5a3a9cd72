// JobFlow and JobTemplate executors (plans in jobflow/plan.h).
//
// JobFlowReconciler, keys "namespace/name": reads the JobFlow, the templates and its jobs (owner-UID
// index) from the caches, creates jobs (AlreadyExists = created by an earlier pass), writes status
// (PUT /status with resourceVersion; 409 -> retried from fresh caches), deletes jobs for
// jobRetainPolicy=delete, counts volcano_jobflow_{succeed,failed}_phase_count{jobflow_namespace}.
// JobTemplateReconciler, keys "namespace/name": writes status.jobDependsOnList.
#pragma once

#include <map>
#include <set>
#include <string>

#include "jobflow/plan.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::jobflow {

// Job index: value of volcano.sh/createdByJobTemplate ("<ns>.<template>").
inline constexpr const char* kIndexJobTemplate = "created-by-job-template";

struct JobFlowReconcilerOptions {
  kube::ClientPtr client;                                 // required
  kube::Informer<api::JobFlow>* flows = nullptr;          // required
  kube::Informer<api::JobTemplate>* templates = nullptr;  // required
  kube::Informer<api::Job>* jobs = nullptr;               // required; needs AddIndexers
  kube::EventRecorder* recorder = nullptr;                // optional
  kube::metrics::Registry* registry = nullptr;            // nullptr = Registry::Default()
  const core::Clock* clock = nullptr;                     // nullptr = RealClock (runningHistories fallback)
};

class JobFlowReconciler final : public kube::Reconciler {
 public:
  explicit JobFlowReconciler(JobFlowReconcilerOptions opts);
  kube::ReconcileResult Reconcile(const std::string& key) override;
  static void AddIndexers(kube::Informer<api::Job>& jobs);
  // JobFlows by key; jobs by their controlling JobFlow; a template change enqueues the JobFlows of its
  // namespace (a flow may be waiting for that template to exist).
  void RegisterHandlers(kube::Controller& c);

 private:
  JobFlowReconcilerOptions opts_;
  kube::metrics::CounterFamily* succeed_ = nullptr;
  kube::metrics::CounterFamily* failed_ = nullptr;
  core::Mutex mu_;
  std::set<std::string> missing_reported_ TEPHRA_GUARDED_BY(mu_);  // "<flow key>/<template>" already evented
};

class JobTemplateReconciler final : public kube::Reconciler {
 public:
  JobTemplateReconciler(kube::ClientPtr client, kube::Informer<api::JobTemplate>* templates,
                        kube::Informer<api::Job>* jobs)
      : client_(std::move(client)), templates_(templates), jobs_(jobs) {}
  kube::ReconcileResult Reconcile(const std::string& key) override;
  // Templates by key; jobs by their createdByJobTemplate label.
  void RegisterHandlers(kube::Controller& c);

 private:
  kube::ClientPtr client_;
  kube::Informer<api::JobTemplate>* templates_;
  kube::Informer<api::Job>* jobs_;
};

}  // namespace tephra::reconcilers::jobflow
