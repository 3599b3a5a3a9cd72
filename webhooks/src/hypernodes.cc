// /hypernodes/validate (topology.volcano.sh/v1alpha1 HyperNode).
#include "handlers.h"
#include "tephra/api/topology.h"

namespace tephra::webhooks {

AdmissionResponse AdmitHyperNodeValidate(const AdmissionRequest& req, const Context&) {
  if (!OperationIs(req, {"CREATE", "UPDATE"})) return Deny("expect operation to be 'CREATE' or 'UPDATE'");
  auto hn = DecodeObject<api::HyperNode>(req.object, "HyperNode");
  if (!hn.ok()) return Deny(hn.status().message());
  return FromFieldErrors(api::ValidateHyperNode(*hn));
}

}  // namespace tephra::webhooks
