// HyperNode discovery executor (plan in hypernode/plan.h). One key, kKey: the whole topology is planned at once,
// because a tree can only be checked (one parent per domain) as a whole.
//
// Level-triggered: a Node added, deleted or relabelled, any HyperNode event (a generated one deleted by hand is
// put back) and any event of the config ConfigMap enqueue the key; the label source's `interval` requeues it.
// The plan reads only the caches; the writes are idempotent: a create that meets AlreadyExists re-reads the
// object and updates it if it carries the source label (else the pass fails: a user's object is never touched),
// an update that meets 409 re-reads and merges once more, a delete that meets NotFound is done.
// Invalid config or a topology that is not a tree: a log line and a Warning Event on the ConfigMap, nothing
// written, the previous HyperNodes stay; the next change of the ConfigMap or of a Node plans again.
#pragma once

#include <string>

#include "hypernode/plan.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"

namespace tephra::reconcilers::hypernode {

inline constexpr const char* kKey = "network-topology/label";

struct HyperNodeReconcilerOptions {
  kube::ClientPtr client;                                // required
  kube::Informer<api::Node>* nodes = nullptr;            // required
  kube::Informer<api::HyperNode>* hypernodes = nullptr;  // required
  kube::Informer<api::ConfigMap>* configmaps = nullptr;  // required; holds (at least) the config ConfigMap
  std::string config_namespace = "volcano-system";
  std::string config_name = "volcano-controller-configmap";
  kube::EventRecorder* recorder = nullptr;  // optional
};

class HyperNodeReconciler final : public kube::Reconciler {
 public:
  explicit HyperNodeReconciler(HyperNodeReconcilerOptions opts);
  kube::ReconcileResult Reconcile(const std::string& key) override;
  void RegisterHandlers(kube::Controller& c);

 private:
  core::Status Apply(const Actions& a);
  core::Status Put(api::HyperNode want);  // update a generated HyperNode, re-reading on 409 once
  void Warn(const api::ConfigMap* cm, const std::string& reason, const std::string& message) TEPHRA_EXCLUDES(mu_);
  HyperNodeReconcilerOptions opts_;
  core::Mutex mu_;
  std::string last_warned_ TEPHRA_GUARDED_BY(mu_);           // the last failure logged, so a resync does not repeat it
  std::string last_source_warnings_ TEPHRA_GUARDED_BY(mu_);  // the config warnings (ufm/roce enabled) last logged
};

}  // namespace tephra::reconcilers::hypernode
