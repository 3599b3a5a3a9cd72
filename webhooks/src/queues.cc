// /queues/mutate and /queues/validate (scheduling.volcano.sh/v1beta1 Queue).
#include "handlers.h"
#include "tephra/api/defaults.h"
#include "tephra/api/scheduling.h"

namespace tephra::webhooks {

AdmissionResponse AdmitQueueMutate(const AdmissionRequest& req, const Context&) {
  if (!OperationIs(req, {"CREATE"}))
    return Deny("invalid operation `" + req.operation + "`, expect operation to be `CREATE`");
  auto q = DecodeObject<api::Queue>(req.object, "Queue");
  if (!q.ok()) return Deny(q.status().message());
  const api::json before = api::ToJson(*q);
  api::MutateQueue(&*q);
  return MutationPatch(req.object, before, api::ToJson(*q));
}

AdmissionResponse AdmitQueueValidate(const AdmissionRequest& req, const Context& ctx) {
  if (req.operation == "DELETE") {
    // The API server sends the stored queue as oldObject (1.15+); the name alone is enough for the rules.
    api::Queue q;
    if (req.old_object.is_object()) {
      auto old = DecodeObject<api::Queue>(req.old_object, "the Queue being deleted");
      if (!old.ok()) return Deny(old.status().message());
      q = std::move(*old);
    }
    if (q.metadata.name.empty()) q.metadata.name = req.name;
    return FromFieldErrors(api::ValidateQueue(api::AdmissionOp::kDelete, nullptr, q, ctx.lookup, ctx.config.queue));
  }
  if (!OperationIs(req, {"CREATE", "UPDATE"}))
    return Deny("invalid operation `" + req.operation + "`, expect operation to be `CREATE`, `UPDATE` or `DELETE`");
  auto q = DecodeObject<api::Queue>(req.object, "Queue");
  if (!q.ok()) return Deny(q.status().message());
  if (req.operation == "CREATE")
    return FromFieldErrors(api::ValidateQueue(api::AdmissionOp::kCreate, nullptr, *q, ctx.lookup, ctx.config.queue));
  auto old = DecodeObject<api::Queue>(req.old_object, "the old Queue");
  if (!old.ok()) return Deny(old.status().message());
  return FromFieldErrors(api::ValidateQueue(api::AdmissionOp::kUpdate, &*old, *q, ctx.lookup, ctx.config.queue));
}

}  // namespace tephra::webhooks
