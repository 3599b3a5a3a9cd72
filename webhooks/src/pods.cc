// /pods/mutate and /pods/validate (core/v1 Pod).
//
// Every pod creation of the cluster may pass through these, so a pod of another scheduler leaves after one
// field lookup on the raw object, before anything is decoded (the webhook configuration also filters by
// schedulerName with matchConditions where the API server has them; docs/webhook.md).
#include <algorithm>

#include "handlers.h"
#include "tephra/api/core_v1.h"

namespace tephra::webhooks {
namespace {

bool OurScheduler(const AdmissionRequest& req, const Context& ctx) {
  const api::json* name = nullptr;
  if (req.object.is_object()) {
    auto spec = req.object.find("spec");
    if (spec != req.object.end() && spec->is_object()) {
      auto it = spec->find("schedulerName");
      if (it != spec->end() && it->is_string()) name = &*it;
    }
  }
  if (!name) return false;  // default-scheduler
  const auto& names = ctx.config.scheduler_names;
  return std::find(names.begin(), names.end(), name->get_ref<const std::string&>()) != names.end();
}

}  // namespace

AdmissionResponse AdmitPodMutate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE"})) return Deny("expect operation to be 'CREATE' ");
  if (!OurScheduler(req, ctx)) return Allow();
  // Volcano mutates pods only from an admission configuration's resourceGroups (not supported yet, see
  // docs/webhook.md); without one it answers with no patch, and so does Tephra.
  return Allow();
}

AdmissionResponse AdmitPodValidate(const AdmissionRequest& req, const Context& ctx) {
  if (!OperationIs(req, {"CREATE"})) return Deny("expect operation to be 'CREATE'");
  if (!OurScheduler(req, ctx)) return Allow();
  auto pod = DecodeObject<api::Pod>(req.object, "Pod");
  if (!pod.ok()) return Deny(pod.status().message());
  return FromFieldErrors(api::ValidatePodJdb(*pod));
}

}  // namespace tephra::webhooks
