// The fault controller's executor (plan in fault/plan.h, docs/faults.md). One key per Node (its name).
//
// Level-triggered: a Node whose conditions, taints, annotations, allocatable or cordon change is enqueued,
// and so is the Node of a batch pod that appears on a node already marked faulted; a healed node re-enqueues
// the nodes the budget held back. The plan reads only the caches. Writes are idempotent: the Node's
// annotations and cordon go in one merge patch (written first, so a fault is recorded once even if a delete
// fails), pod deletes carry the pod's uid as a precondition (a replacement with the same name is never hit;
// NotFound and a failed precondition count as done). One worker: the node budget counts the nodes marked
// recently, and two workers could each see room for one more. A held node is re-planned every 10 s, so it is
// taken up when a healed node or the end of the budget window makes room.
#pragma once

#include <map>
#include <string>

#include "fault/plan.h"
#include "tephra/core/thread_annotations.h"
#include "tephra/core/clock.h"
#include "tephra/kube/client.h"
#include "tephra/api/batch.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"
#include "tephra/kube/metrics.h"

namespace tephra::reconcilers::fault {

// Indexes of pods (registered by AddIndexers): by spec.nodeName, and by "<ns>/<PodGroup>".
inline constexpr const char* kIndexNodeName = "node-name";
inline constexpr const char* kIndexPodGroup = "fault-podgroup";

// The PodGroup condition a fault's recovery is told by: True (reason: the signal) from the first delete
// until the gang runs again, then False with reason Recovered. `kubectl describe podgroup` shows both.
inline constexpr const char* kFaultConditionType = "FaultRecovery";

struct FaultReconcilerOptions {
  kube::ClientPtr client;                      // required
  kube::Informer<api::Node>* nodes = nullptr;  // required
  kube::Informer<api::Pod>* pods = nullptr;    // required; with AddIndexers
  kube::Informer<api::Job>* jobs = nullptr;    // optional: vcjobs, for their fault-scheduling labels
  kube::Informer<api::PodGroup>* pod_groups = nullptr;  // optional: for the FaultRecovery condition
  kube::EventRecorder* recorder = nullptr;     // optional
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  const core::Clock* clock = nullptr;           // nullptr = real clock
  FaultConfig config;
};

class FaultReconciler final : public kube::Reconciler {
 public:
  explicit FaultReconciler(FaultReconcilerOptions opts);
  static void AddIndexers(kube::Informer<api::Pod>& pods);
  kube::ReconcileResult Reconcile(const std::string& key) override;
  void RegisterHandlers(kube::Controller& c);

 private:
  // A job whose pods a fault deleted, until as many of its pods run again as ran before (its MTTR).
  struct Recovery {
    core::Clock::WallTime since;  // when the fault was acted on
    int want = 0;                 // pods of the group bound and unfinished before the fault
    std::string signal;
    std::string message;  // what was done, for the condition
    EventRecord job;      // where to say it recovered
  };
  kube::ReconcileResult ReconcileGroup(const std::string& key) TEPHRA_EXCLUDES(mu_);  // "<ns>/<PodGroup>"
  core::Status PatchNode(const api::Node& node, const Actions& a);
  // Counts the group's pods bound and not finished (with_terminating) or Running and not being deleted.
  int CountGroup(const std::string& ns, const std::string& group, bool running_only) const;
  // `finished`: the pod being replaced had already failed, so the group's count lacks it. True when the
  // group was not recovering yet.
  bool StartRecovery(const PodDelete& d, const std::string& group, bool finished, const std::string& node,
                     core::Clock::WallTime now) TEPHRA_EXCLUDES(mu_);
  void CheckRecovery(const api::Pod& p) TEPHRA_EXCLUDES(mu_);
  FaultReconcilerOptions opts_;
  const core::Clock& clock_;
  kube::metrics::CounterFamily* detected_ = nullptr;
  kube::metrics::HistogramFamily* detection_seconds_ = nullptr;
  kube::metrics::CounterFamily* pods_deleted_ = nullptr;
  kube::metrics::CounterFamily* held_ = nullptr;
  kube::metrics::Gauge* nodes_faulted_ = nullptr;
  kube::metrics::HistogramFamily* recovery_seconds_ = nullptr;
  mutable core::Mutex mu_;
  std::map<std::string, Recovery> recovering_ TEPHRA_GUARDED_BY(mu_);  // by "<ns>/<PodGroup>"
  // Recovered groups whose condition still says True: the message for the False one.
  std::map<std::string, std::string> recovered_ TEPHRA_GUARDED_BY(mu_);
  kube::Controller* controller_ = nullptr;  // set by RegisterHandlers: group keys ("pg/<ns>/<name>") go there too
  // The tephra.io/fault value last written per node, and when: a plan made on a cache that has not seen
  // that write yet would record the fault a second time, so it waits for the echo instead.
  std::map<std::string, std::pair<std::optional<std::string>, core::Clock::WallTime>> written_ TEPHRA_GUARDED_BY(mu_);
};

}  // namespace tephra::reconcilers::fault
