// /jobs/mutate and /jobs/validate (batch.volcano.sh/v1alpha1 Job).
#include "handlers.h"
#include "tephra/api/batch.h"
#include "tephra/api/defaults.h"

namespace tephra::webhooks {

AdmissionResponse AdmitJobMutate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE"})) return Deny("expect operation to be 'CREATE' ");
  auto job = DecodeObject<api::Job>(req.object, "Job");
  if (!job.ok()) return Deny(job.status().message());
  const api::json before = api::ToJson(*job);
  api::JobDefaultsConfig defaults;
  defaults.scheduler_names = ctx.config.scheduler_names;
  defaults.default_queue = ctx.config.default_queue;
  api::MutateJob(&*job, defaults);
  return MutationPatch(req.object, before, api::ToJson(*job));
}

AdmissionResponse AdmitJobValidate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE", "UPDATE"})) return Deny("expect operation to be 'CREATE' or 'UPDATE'");
  auto job = DecodeObject<api::Job>(req.object, "Job");
  if (!job.ok()) return Deny(job.status().message());
  if (req.operation == "CREATE") return FromFieldErrors(api::ValidateJobCreate(*job, ctx.lookup));
  auto old_job = DecodeObject<api::Job>(req.old_object, "the old Job");
  if (!old_job.ok()) return Deny(old_job.status().message());
  return FromFieldErrors(api::ValidateJobUpdate(*old_job, *job));
}

}  // namespace tephra::webhooks
