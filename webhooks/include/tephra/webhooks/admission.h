// Volcano's admission endpoints as pure functions (docs/webhook.md).
//
// Each endpoint (one file per kind in webhooks/src/) turns an AdmissionRequest into an AdmissionResponse using
// only the request, the WebhookConfig and a read-only api::ClusterLookup (informer caches in the role, maps
// in tests). Validation and defaulting rules themselves are the shared pure functions of core/api
// (validation.h, defaults.h), which the job controller also applies; this layer decodes, picks the rule
// set for the operation, turns mutations into JSON patches and words the answer.
//
// Admitter::Serve is the whole HTTP exchange for one POST, so the fuzz target, the unit tests and the server
// run the same code.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/lookup.h"
#include "tephra/api/validation.h"
#include "tephra/webhooks/review.h"

namespace tephra::webhooks {

struct WebhookConfig {
  // --scheduler-name (repeatable): the first is the default schedulerName of jobs; pods are validated and
  // mutated only when their spec.schedulerName is one of these.
  std::vector<std::string> scheduler_names = {"volcano"};
  std::string default_queue = "default";
  api::QueueValidationConfig queue;  // --max-queue-depth, --enable-root-queue-protection, ...
};

struct Endpoint;
struct Context {
  const WebhookConfig& config;
  const api::ClusterLookup& lookup;
};
using AdmitFn = AdmissionResponse (*)(const AdmissionRequest&, const Context&);

// One of Volcano's eleven admission paths.
struct Endpoint {
  std::string_view path;          // "/jobs/validate"
  std::string_view webhook_name;  // "validatejob.volcano.sh" (the name in the webhook configuration)
  bool mutating = false;
  // What the webhook configuration's rule matches.
  std::string_view api_group, api_version, resource;
  std::vector<std::string_view> operations;
  std::string_view kind;          // the request.kind.kind this endpoint decodes
  bool enabled_by_default = true; // Volcano chart's defaults (docs/webhook.md)
  AdmitFn admit = nullptr;
};

// The eleven endpoints, in Volcano's order.
const std::vector<Endpoint>& Endpoints();
// The endpoint serving `path`, or nullptr.
const Endpoint* FindEndpoint(std::string_view path);

// Parses --enabled-admission ("/jobs/mutate,/jobs/validate,..."; empty = the defaults): the set of enabled
// paths, or kInvalidArgument naming an unknown path.
core::StatusOr<std::set<std::string>> ParseEnabledAdmission(const std::string& flag);

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// What one request was, for metrics and logs.
struct Outcome {
  const Endpoint* endpoint = nullptr;
  bool decoded = false;   // the body was a valid AdmissionReview
  bool allowed = false;
  bool patched = false;
};

class Admitter {
 public:
  Admitter(WebhookConfig config, const api::ClusterLookup* lookup, std::set<std::string> enabled_paths);

  // One POST: 404 for a path that is not enabled; 400 for a Content-Type other than JSON or a body that is
  // not an AdmissionReview (the text says what is wrong); otherwise 200 with the AdmissionReview answer.
  // A handler never throws out of here: an unexpected exception becomes a denial that says so.
  HttpReply Serve(std::string_view path, std::string_view content_type, std::string_view body,
                  Outcome* outcome = nullptr) const;

  // The decision alone (tests).
  AdmissionResponse Admit(const Endpoint& ep, const AdmissionRequest& req) const;

  const WebhookConfig& config() const { return config_; }
  const std::set<std::string>& enabled_paths() const { return enabled_; }

 private:
  WebhookConfig config_;
  const api::ClusterLookup* lookup_;
  std::set<std::string> enabled_;
};

// Shared by the per-kind files.
// "expect operation to be 'CREATE' or 'UPDATE'" style refusal unless `req.operation` is one of `ops`.
bool OperationIs(const AdmissionRequest& req, std::initializer_list<std::string_view> ops);
// The decoded object, or a denial naming the kind and the field that failed to decode.
template <typename T>
core::StatusOr<T> DecodeObject(const api::json& obj, std::string_view what) {
  if (!obj.is_object()) return core::InvalidArgumentError(std::string(what) + " is missing from the request");
  T out{};
  core::Status s = Decode(obj, &out);
  if (!s.ok()) return core::InvalidArgumentError("cannot decode " + std::string(what) + ": " + s.message());
  return out;
}
// Allowed when `errors` is empty, else denied with api::JoinFieldErrors(errors).
AdmissionResponse FromFieldErrors(const api::FieldErrors& errors);

}  // namespace tephra::webhooks
