// The Command executor: kube::Reconciler for keys "namespace/name" of bus.volcano.sh Commands.
//
// Reconcile(key): read the Command from the cache, Plan() its route; for a Job or Queue target delete the
// Command (UID precondition, so a re-created Command of the same name is not deleted by mistake), then call
// the route's handler. A NotFound delete means another consumer (an old replica during a lease handover)
// took it: the action is not applied twice. Handlers are plain functions so this library does not depend on
// the job and queue reconcilers (the manager wires JobReconciler::Submit and QueueReconciler::Submit).
#pragma once

#include <functional>
#include <string>

#include "command/plan.h"
#include "tephra/kube/client.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/events.h"
#include "tephra/kube/informer.h"

namespace tephra::reconcilers::command {

using Handler = std::function<void(const std::string& target_key, const api::Command& cmd)>;

struct CommandReconcilerOptions {
  kube::ClientPtr client;                          // required
  kube::Informer<api::Command>* commands = nullptr;  // required
  Handler to_job;    // null: Job targets are ignored (job-controller disabled)
  Handler to_queue;  // null: Queue targets are ignored (queue-controller disabled)
};

class CommandReconciler final : public kube::Reconciler {
 public:
  explicit CommandReconciler(CommandReconcilerOptions opts) : opts_(std::move(opts)) {}
  kube::ReconcileResult Reconcile(const std::string& key) override;
  void RegisterHandlers(kube::Controller& c) { kube::EnqueueOwnKind(c, *opts_.commands); }

 private:
  CommandReconcilerOptions opts_;
};

}  // namespace tephra::reconcilers::command
