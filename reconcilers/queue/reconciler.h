// The Queue executor: kube::Reconciler for keys "<queue name>" (cluster scoped).
//
// Reconcile(name): read the queue, its parent and the PodGroups naming it from the caches, run Plan(), then
// merge-patch spec.parent / the closed-by-parent annotation and status.state (status subresource, only the
// `state` field: `allocated` belongs to the scheduler). Exports volcano_queue_pod_group_<phase>_count.
// A command handed over by Submit() is consumed by the first reconcile whose writes all succeed.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "queue/plan.h"
#include "tephra/api/scheduling.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::queue {

// PodGroup index: the queue a PodGroup names ("" -> "default", as the scheduler reads it).
inline constexpr const char* kIndexPodGroupQueue = "queue";
// Queue index: spec.parent ("" -> "root" except for root itself).
inline constexpr const char* kIndexQueueParent = "parent";
// How long a PodGroup change waits before its queue is counted again (QueueReconciler::RegisterHandlers).
inline constexpr std::chrono::milliseconds kPodGroupCountDelay{1000};

struct QueueReconcilerOptions {
  kube::ClientPtr client;                            // required
  kube::Informer<api::Queue>* queues = nullptr;      // required
  kube::Informer<api::PodGroup>* pod_groups = nullptr;  // required
  kube::EventRecorder* recorder = nullptr;           // optional
  kube::metrics::Registry* registry = nullptr;       // nullptr = Registry::Default()
};

class QueueReconciler final : public kube::Reconciler {
 public:
  explicit QueueReconciler(QueueReconcilerOptions opts);

  kube::ReconcileResult Reconcile(const std::string& key) override;

  // Hands over a Command's action (OpenQueue/CloseQueue/SyncQueue) for queue `name`; also enqueues it when
  // RegisterHandlers was called. A later command replaces a pending one.
  void Submit(const std::string& name, const std::string& action) TEPHRA_EXCLUDES(mu_);

  static void AddIndexers(kube::Informer<api::Queue>& queues, kube::Informer<api::PodGroup>& pod_groups);
  // Queue changes enqueue the queue and its children; PodGroup changes enqueue the queue they name.
  void RegisterHandlers(kube::Controller& controller);

 private:
  QueueReconcilerOptions opts_;
  core::Mutex mu_;
  std::map<std::string, std::string> pending_ TEPHRA_GUARDED_BY(mu_);  // queue -> command action
  kube::Controller* controller_ = nullptr;
  // Filled by the constructor, read-only afterwards (the gauges are thread-safe themselves).
  std::map<std::string, kube::metrics::GaugeFamily*> phase_gauges_;  // by PodGroup phase
};

}  // namespace tephra::reconcilers::queue
