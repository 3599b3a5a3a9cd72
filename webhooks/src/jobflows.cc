// /jobflows/validate (flow.volcano.sh/v1alpha1 JobFlow).
#include "handlers.h"
#include "tephra/api/flow.h"

namespace tephra::webhooks {

AdmissionResponse AdmitJobFlowValidate(const AdmissionRequest& req, const Context&) {
  if (!OperationIs(req, {"CREATE", "UPDATE"})) return Deny("expect operation to be 'CREATE' or 'UPDATE'");
  auto flow = DecodeObject<api::JobFlow>(req.object, "JobFlow");
  if (!flow.ok()) return Deny(flow.status().message());
  return FromFieldErrors(api::ValidateJobFlow(*flow));
}

}  // namespace tephra::webhooks
