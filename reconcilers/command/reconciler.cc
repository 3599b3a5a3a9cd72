#include "command/reconciler.h"

#include "tephra/kube/log.h"

namespace tephra::reconcilers::command {

kube::ReconcileResult CommandReconciler::Reconcile(const std::string& key) {
  auto cmd = opts_.commands->Get(key);
  if (!cmd) return kube::ReconcileResult::Success();
  Decision d = Plan(*cmd, Enabled{.jobs = static_cast<bool>(opts_.to_job), .queues = static_cast<bool>(opts_.to_queue)});
  if (d.route == Route::kIgnore) {
    kube::log::Debug("command ignored").Kv("command", key).Kv("why", d.why);
    return kube::ReconcileResult::Success();
  }
  kube::DeleteOptions del;
  del.precondition_uid = cmd->metadata.uid;
  auto s = opts_.client->Delete(api::Command::Resource(), cmd->metadata.namespace_, cmd->metadata.name, del);
  if (core::IsNotFound(s) || core::IsConflict(s)) {
    kube::log::Info("command already consumed").Kv("command", key);
    return kube::ReconcileResult::Success();
  }
  if (!s.ok()) return kube::ReconcileResult::Error(s.Annotate("deleting command " + key));
  switch (d.route) {
    case Route::kJob:
      kube::log::Info("command consumed").Kv("command", key).Kv("action", cmd->action).Kv("job", d.target_key);
      opts_.to_job(d.target_key, *cmd);
      break;
    case Route::kQueue:
      kube::log::Info("command consumed").Kv("command", key).Kv("action", cmd->action).Kv("queue", d.target_key);
      opts_.to_queue(d.target_key, *cmd);
      break;
    default:
      kube::log::Warn("command rejected").Kv("command", key).Kv("why", d.why);
      break;
  }
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::command
