#include "tephra/webhooks/admission.h"

#include <exception>
#include <utility>

#include "handlers.h"
#include "tephra/api/defaults.h"

namespace tephra::webhooks {

const std::vector<Endpoint>& Endpoints() {
  // enabled_by_default: the `tephra webhook` binary's default set, which is Volcano's binary default
  // (the Helm chart passes its own list with --enabled-admission).
  static const std::vector<Endpoint> kEndpoints = {
      {"/jobs/mutate", "mutatejob.volcano.sh", true, "batch.volcano.sh", "v1alpha1", "jobs", {"CREATE"}, "Job", true,
       &AdmitJobMutate},
      {"/jobs/validate", "validatejob.volcano.sh", false, "batch.volcano.sh", "v1alpha1", "jobs",
       {"CREATE", "UPDATE"}, "Job", true, &AdmitJobValidate},
      {"/queues/mutate", "mutatequeue.volcano.sh", true, "scheduling.volcano.sh", "v1beta1", "queues", {"CREATE"},
       "Queue", true, &AdmitQueueMutate},
      {"/queues/validate", "validatequeue.volcano.sh", false, "scheduling.volcano.sh", "v1beta1", "queues",
       {"CREATE", "UPDATE", "DELETE"}, "Queue", true, &AdmitQueueValidate},
      {"/podgroups/mutate", "mutatepodgroup.volcano.sh", true, "scheduling.volcano.sh", "v1beta1", "podgroups",
       {"CREATE"}, "PodGroup", true, &AdmitPodGroupMutate},
      {"/podgroups/validate", "validatepodgroup.volcano.sh", false, "scheduling.volcano.sh", "v1beta1", "podgroups",
       {"CREATE"}, "PodGroup", false, &AdmitPodGroupValidate},
      {"/pods/mutate", "mutatepod.volcano.sh", true, "", "v1", "pods", {"CREATE"}, "Pod", true, &AdmitPodMutate},
      {"/pods/validate", "validatepod.volcano.sh", false, "", "v1", "pods", {"CREATE"}, "Pod", true,
       &AdmitPodValidate},
      {"/jobflows/validate", "validatejobflow.volcano.sh", false, "flow.volcano.sh", "v1alpha1", "jobflows",
       {"CREATE", "UPDATE"}, "JobFlow", false, &AdmitJobFlowValidate},
      {"/hypernodes/validate", "validatehypernode.volcano.sh", false, "topology.volcano.sh", "v1alpha1",
       "hypernodes", {"CREATE", "UPDATE"}, "HyperNode", false, &AdmitHyperNodeValidate},
      {"/cronjobs/validate", "validatecronjob.volcano.sh", false, "batch.volcano.sh", "v1alpha1", "cronjobs",
       {"CREATE", "UPDATE"}, "CronJob", false, &AdmitCronJobValidate},
  };
  return kEndpoints;
}

const Endpoint* FindEndpoint(std::string_view path) {
  for (const auto& e : Endpoints())
    if (e.path == path) return &e;
  return nullptr;
}

core::StatusOr<std::set<std::string>> ParseEnabledAdmission(const std::string& flag) {
  std::set<std::string> out;
  if (flag.empty()) {
    for (const auto& e : Endpoints())
      if (e.enabled_by_default) out.emplace(e.path);
    return out;
  }
  size_t start = 0;
  while (start <= flag.size()) {
    size_t end = flag.find(',', start);
    if (end == std::string::npos) end = flag.size();
    std::string p = flag.substr(start, end - start);
    while (!p.empty() && p.front() == ' ') p.erase(p.begin());
    while (!p.empty() && p.back() == ' ') p.pop_back();
    if (!p.empty()) {
      if (!FindEndpoint(p)) {
        std::string known;
        for (const auto& e : Endpoints()) known += (known.empty() ? "" : ", ") + std::string(e.path);
        return core::InvalidArgumentError("--enabled-admission: unknown path \"" + p + "\" (known: " + known + ")");
      }
      out.insert(p);
    }
    start = end + 1;
  }
  return out;
}

bool OperationIs(const AdmissionRequest& req, std::initializer_list<std::string_view> ops) {
  for (auto op : ops)
    if (req.operation == op) return true;
  return false;
}

namespace {

// Whether the API server can apply `ops` to `raw`, checked without applying them (a copy of a 100-task job is
// a third of a mutation's cost): every "add" sets a member of an object that exists, every "replace" and
// "remove" names something that exists. The element-wise diff emits no other kind of operation.
bool AppliesTo(const api::json& raw, const api::json& ops) {
  using Pointer = api::json::json_pointer;
  for (const auto& op : ops) {
    const std::string& path = op["path"].get_ref<const std::string&>();
    const std::string& kind = op["op"].get_ref<const std::string&>();
    if (kind == "add") {
      if (path.empty()) continue;
      const Pointer parent(path.substr(0, path.rfind('/')));
      if (!raw.contains(parent) || !raw[parent].is_object()) return false;
    } else if (!raw.contains(Pointer(path))) {
      return false;
    }
  }
  return true;
}

}  // namespace

AdmissionResponse MutationPatch(const api::json& raw, const api::json& typed_before, const api::json& typed_after) {
  // Element by element: defaulting one field of a task patches that field and leaves the rest of the task as
  // the user wrote it (Volcano replaces the whole task list, rewriting quantities such as "1000m" to "1").
  api::json ops = api::JsonPatchDiffElementwise(typed_before, typed_after);
  if (ops.empty()) return Allow();
  // The API server applies the patch to the raw object: prove it applies. One that does not (a parent or an
  // array length the raw object does not have) is replaced by a diff against the raw object itself, which
  // always applies.
  if (!AppliesTo(raw, ops)) ops = api::JsonPatchDiffElementwise(raw, typed_after);
  AdmissionResponse r = Allow();
  r.patch = std::move(ops);
  return r;
}

AdmissionResponse FromFieldErrors(const api::FieldErrors& errors) {
  if (errors.empty()) return Allow();
  return Deny(api::JoinFieldErrors(errors));
}

Admitter::Admitter(WebhookConfig config, const api::ClusterLookup* lookup, std::set<std::string> enabled_paths)
    : config_(std::move(config)), lookup_(lookup), enabled_(std::move(enabled_paths)) {
  if (config_.scheduler_names.empty()) config_.scheduler_names = {"volcano"};
}

AdmissionResponse Admitter::Admit(const Endpoint& ep, const AdmissionRequest& req) const {
  // A webhook configuration that sends another kind here is misconfigured; saying so beats decoding a Pod as a
  // Job and reporting nonsense field errors.
  if (!req.kind.kind.empty() && req.kind.kind != ep.kind)
    return Deny(std::string(ep.path) + " admits " + std::string(ep.kind) + " objects, got kind " + req.kind.kind);
  Context ctx{config_, *lookup_};
  try {
    return ep.admit(req, ctx);
  } catch (const std::exception& e) {
    // No rule may crash the server; a bug is a denial that says so, and the next request is served.
    return Deny(std::string("internal error in ") + std::string(ep.webhook_name) + ": " + e.what());
  }
}

HttpReply Admitter::Serve(std::string_view path, std::string_view content_type, std::string_view body,
                          Outcome* outcome) const {
  Outcome local;
  Outcome& out = outcome ? *outcome : local;
  const Endpoint* ep = FindEndpoint(path);
  if (!ep || !enabled_.count(std::string(path)))
    return {404, "text/plain; charset=utf-8", "no admission webhook is enabled at " + std::string(path) + "\n"};
  out.endpoint = ep;
  // The API server always sends application/json; anything else is not an AdmissionReview.
  std::string_view ct = content_type.substr(0, content_type.find(';'));
  while (!ct.empty() && ct.back() == ' ') ct.remove_suffix(1);
  if (ct != "application/json")
    return {400, "text/plain; charset=utf-8",
            "Content-Type must be application/json, got \"" + std::string(content_type) + "\"\n"};
  auto req = DecodeAdmissionReview(body);
  if (!req.ok()) return {400, "text/plain; charset=utf-8", req.status().message() + "\n"};
  out.decoded = true;
  AdmissionResponse resp = Admit(*ep, *req);
  out.allowed = resp.allowed;
  out.patched = resp.allowed && resp.patch.is_array() && !resp.patch.empty();
  return {200, "application/json", EncodeAdmissionReview(*req, resp)};
}

}  // namespace tephra::webhooks
