// The PodGroup executor for plain pods: kube::Reconciler for pod keys "namespace/name".
//
// Reconcile(pod): skip unless NeedsPodGroup; read the controlling owner's annotations with one GET (only
// when the PodGroup does not exist yet: owners are ReplicaSets, StatefulSets, Jobs... of any API group, so
// no informer is kept for them), run Plan(), create the PodGroup (AlreadyExists = fine: deterministic name)
// and merge-patch the pod's `scheduling.k8s.io/group-name`.
// With ReplicaSet/StatefulSet informers, Reconcile("ReplicaSet:ns/name") / ("StatefulSet:ns/name") deletes the
// workload's PodGroup once it is scaled to 0 (PlanScaledToZero). Pod keys never contain ':' (DNS names).
#pragma once

#include <set>
#include <string>

#include "podgroup/plan.h"
#include "podgroup/workload.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/informer.h"

namespace tephra::reconcilers::podgroup {

struct PodGroupReconcilerOptions {
  kube::ClientPtr client;                              // required
  kube::Informer<api::Pod>* pods = nullptr;            // required
  kube::Informer<api::PodGroup>* pod_groups = nullptr;  // required
  std::set<std::string> scheduler_names = {"volcano"};
  bool inherit_owner_annotations = true;
  kube::Informer<ReplicaSet>* replica_sets = nullptr;    // optional: scale-to-0 cleanup
  kube::Informer<StatefulSet>* stateful_sets = nullptr;  // optional: scale-to-0 cleanup
};

inline constexpr std::string_view kReplicaSetKeyPrefix = "ReplicaSet:";
inline constexpr std::string_view kStatefulSetKeyPrefix = "StatefulSet:";

class PodGroupReconciler final : public kube::Reconciler {
 public:
  explicit PodGroupReconciler(PodGroupReconcilerOptions opts) : opts_(std::move(opts)) {}
  kube::ReconcileResult Reconcile(const std::string& key) override;
  // Pod adds/updates enqueue pods that need a group (the filter keeps the queue to pods that matter);
  // ReplicaSet/StatefulSet adds/updates at 0 replicas enqueue the workload (the add covers a scale-down
  // that happened while the controller was down).
  void RegisterHandlers(kube::Controller& c);

 private:
  core::StatusOr<std::optional<std::map<std::string, std::string>>> OwnerAnnotations(const api::Pod& pod);
  kube::ReconcileResult ReconcileWorkload(const ScalableWorkload* w, const std::string& key);
  PodGroupReconcilerOptions opts_;
};

}  // namespace tephra::reconcilers::podgroup
