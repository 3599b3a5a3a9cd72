// The admit functions behind Endpoints(), one file per kind (jobs.cc, queues.cc, podgroups.cc, pods.cc,
// jobflows.cc, hypernodes.cc, cronjobs.cc). Internal to tephra_webhooks.
#pragma once

#include "tephra/webhooks/admission.h"

namespace tephra::webhooks {

AdmissionResponse AdmitJobMutate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitJobValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitQueueMutate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitQueueValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitPodGroupMutate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitPodGroupValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitPodMutate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitPodValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitJobFlowValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitHyperNodeValidate(const AdmissionRequest& req, const Context& ctx);
AdmissionResponse AdmitCronJobValidate(const AdmissionRequest& req, const Context& ctx);

// The patch that turns the request's object (`raw`, as the API server will apply it) into the mutated typed
// object. `typed_before`/`typed_after` are the encodings of the decoded object before and after the mutation,
// so the patch touches only what the mutation changed, never how the user wrote the rest.
// Rule helpers of cronjobs.cc, exposed for tests: "" when valid, else what is wrong.
std::string CronScheduleError(const std::string& spec);
std::string TimeZoneError(const std::string& tz);

AdmissionResponse MutationPatch(const api::json& raw, const api::json& typed_before, const api::json& typed_after);

}  // namespace tephra::webhooks
