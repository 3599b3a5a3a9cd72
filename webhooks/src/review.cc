#include "tephra/webhooks/review.h"

#include <utility>

#include "tephra/api/core_v1.h"

namespace tephra::webhooks {
namespace {

using api::json;

core::Status Bad(const std::string& msg) { return core::InvalidArgumentError(msg); }

// Reads an optional string member; absent or null is "", anything else but a string is an error.
core::Status GetString(const json& obj, const char* key, const char* path, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return core::Status::OK();
  if (!it->is_string()) return Bad(std::string(path) + " must be a string, got " + it->type_name());
  *out = it->get<std::string>();
  return core::Status::OK();
}

// Moves the member out of `obj` (the parsed body is not used again): the object of a 100-task job is a tree
// of ~30 KB that a copy would allocate twice.
core::Status TakeObject(json& obj, const char* key, const char* path, json* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return core::Status::OK();
  if (!it->is_object()) return Bad(std::string(path) + " must be an object, got " + it->type_name());
  *out = std::move(*it);
  return core::Status::OK();
}

}  // namespace

AdmissionResponse Allow() { return AdmissionResponse{}; }

AdmissionResponse Deny(std::string message) {
  AdmissionResponse r;
  r.allowed = false;
  r.message = std::move(message);
  return r;
}

core::StatusOr<AdmissionRequest> DecodeAdmissionReview(std::string_view body) {
  auto parsed = api::ParseJson(body, kMaxReviewDepth);
  if (!parsed.ok()) return Bad("request body is not an AdmissionReview: " + parsed.status().message());
  json& doc = *parsed;
  if (!doc.is_object()) return Bad(std::string("request body must be a JSON object, got ") + doc.type_name());
  AdmissionRequest out;
  std::string kind;
  TEPHRA_RETURN_IF_ERROR(GetString(doc, "kind", "kind", &kind));
  if (kind != "AdmissionReview") return Bad("kind must be AdmissionReview, got \"" + kind + "\"");
  TEPHRA_RETURN_IF_ERROR(GetString(doc, "apiVersion", "apiVersion", &out.review_api_version));
  if (out.review_api_version != kReviewV1 && out.review_api_version != kReviewV1beta1)
    return Bad("apiVersion must be admission.k8s.io/v1 or admission.k8s.io/v1beta1, got \"" +
               out.review_api_version + "\"");
  auto rq = doc.find("request");
  if (rq == doc.end() || rq->is_null()) return Bad("request is missing");
  if (!rq->is_object()) return Bad(std::string("request must be an object, got ") + rq->type_name());
  json& r = *rq;
  TEPHRA_RETURN_IF_ERROR(GetString(r, "uid", "request.uid", &out.uid));
  if (out.uid.empty()) return Bad("request.uid is missing");
  json kind_obj;
  TEPHRA_RETURN_IF_ERROR(TakeObject(r, "kind", "request.kind", &kind_obj));
  TEPHRA_RETURN_IF_ERROR(GetString(kind_obj, "group", "request.kind.group", &out.kind.group));
  TEPHRA_RETURN_IF_ERROR(GetString(kind_obj, "version", "request.kind.version", &out.kind.version));
  TEPHRA_RETURN_IF_ERROR(GetString(kind_obj, "kind", "request.kind.kind", &out.kind.kind));
  json resource_obj;
  TEPHRA_RETURN_IF_ERROR(TakeObject(r, "resource", "request.resource", &resource_obj));
  TEPHRA_RETURN_IF_ERROR(GetString(resource_obj, "resource", "request.resource.resource", &out.resource));
  TEPHRA_RETURN_IF_ERROR(GetString(r, "subResource", "request.subResource", &out.sub_resource));
  TEPHRA_RETURN_IF_ERROR(GetString(r, "name", "request.name", &out.name));
  TEPHRA_RETURN_IF_ERROR(GetString(r, "namespace", "request.namespace", &out.namespace_));
  TEPHRA_RETURN_IF_ERROR(GetString(r, "operation", "request.operation", &out.operation));
  if (out.operation.empty()) return Bad("request.operation is missing");
  TEPHRA_RETURN_IF_ERROR(TakeObject(r, "object", "request.object", &out.object));
  TEPHRA_RETURN_IF_ERROR(TakeObject(r, "oldObject", "request.oldObject", &out.old_object));
  if (auto it = r.find("dryRun"); it != r.end() && !it->is_null()) {
    if (!it->is_boolean()) return Bad(std::string("request.dryRun must be a boolean, got ") + it->type_name());
    out.dry_run = it->get<bool>();
  }
  return out;
}

std::string EncodeAdmissionReview(const AdmissionRequest& req, const AdmissionResponse& resp) {
  json r = {{"uid", req.uid}, {"allowed", resp.allowed}};
  if (!resp.allowed) {
    // metav1.Status: kubectl prints `admission webhook "<name>" denied the request: <message>`.
    r["status"] = {{"message", resp.message}};
  }
  if (resp.allowed && resp.patch.is_array() && !resp.patch.empty()) {
    r["patchType"] = "JSONPatch";
    r["patch"] = api::Base64Encode(resp.patch.dump());
  }
  if (!resp.warnings.empty()) r["warnings"] = resp.warnings;
  json out = {{"apiVersion", req.review_api_version.empty() ? std::string(kReviewV1) : req.review_api_version},
              {"kind", "AdmissionReview"},
              {"response", std::move(r)}};
  // Invalid UTF-8 from a hostile request (echoed in a message) must not make dump() throw.
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tephra::webhooks
