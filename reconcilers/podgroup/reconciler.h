// The PodGroup executor for plain pods: kube::Reconciler for pod keys "namespace/name".
//
// Reconcile(pod): skip unless NeedsPodGroup; read the controlling owner's annotations with one GET (only
// when the PodGroup does not exist yet: owners are ReplicaSets, StatefulSets, Jobs... of any API group, so
// no informer is kept for them), run Plan(), create the PodGroup (AlreadyExists = fine: deterministic name)
// and merge-patch the pod's `scheduling.k8s.io/group-name`.
#pragma once

#include <set>
#include <string>

#include "podgroup/plan.h"
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
};

class PodGroupReconciler final : public kube::Reconciler {
 public:
  explicit PodGroupReconciler(PodGroupReconcilerOptions opts) : opts_(std::move(opts)) {}
  kube::ReconcileResult Reconcile(const std::string& key) override;
  // Pod adds/updates enqueue pods that need a group (the filter keeps the queue to pods that matter).
  void RegisterHandlers(kube::Controller& c);

 private:
  core::StatusOr<std::optional<std::map<std::string, std::string>>> OwnerAnnotations(const api::Pod& pod);
  PodGroupReconcilerOptions opts_;
};

}  // namespace tephra::reconcilers::podgroup
