// /podgroups/mutate and /podgroups/validate (scheduling.volcano.sh/v1beta1 PodGroup).
#include "handlers.h"
#include "tephra/api/defaults.h"
#include "tephra/api/scheduling.h"

namespace tephra::webhooks {

AdmissionResponse AdmitPodGroupMutate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE"}))
    return Deny("invalid operation `" + req.operation + "`, expect operation to be `CREATE`");
  auto pg = DecodeObject<api::PodGroup>(req.object, "PodGroup");
  if (!pg.ok()) return Deny(pg.status().message());
  // The namespace of a PodGroup created in a request is the request's; the object may leave it out.
  if (pg->metadata.namespace_.empty()) pg->metadata.namespace_ = req.namespace_;
  const api::json before = api::ToJson(*pg);
  api::MutatePodGroup(&*pg, ctx.lookup, ctx.config.default_queue);
  api::json after = api::ToJson(*pg);
  // Only the queue is ours to change; the namespace filled in above is not part of the patch.
  if (auto m = before.find("metadata"); m != before.end()) after["metadata"] = *m;
  else after.erase("metadata");
  return MutationPatch(req.object, before, after);
}

AdmissionResponse AdmitPodGroupValidate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE"})) return Deny("unsupported operation " + req.operation);
  auto pg = DecodeObject<api::PodGroup>(req.object, "PodGroup");
  if (!pg.ok()) return Deny(pg.status().message());
  return FromFieldErrors(api::ValidatePodGroup(*pg, ctx.lookup));
}

}  // namespace tephra::webhooks
