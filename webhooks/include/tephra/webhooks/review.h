// The AdmissionReview envelope (admission.k8s.io/v1, and v1beta1 which API servers before 1.16 send and a
// webhook configuration may still ask for): decoding a request, encoding the answer.
//
// The decoder is the webhook's first contact with bytes from the network, so it is written for hostile
// input: the body size is bounded by the server (413 beyond kMaxReviewBytes), nesting is bounded before a
// DOM is built (api::ParseJson), every field is type-checked, and an error says which field is wrong. It is
// the target of the libFuzzer harness in tests/fuzz/.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/core/status.h"

namespace tephra::webhooks {

// The API server sends at most its own request limit (3 MiB by default) for the object, and an UPDATE carries
// the object twice; 7 MiB leaves room for both and refuses anything larger with 413.
inline constexpr size_t kMaxReviewBytes = 7u << 20;
// Kubernetes objects nest about 20 levels deep (a pod template's affinity terms); 128 is generous for any
// real object and keeps a hostile document from costing more than a linear scan.
inline constexpr int kMaxReviewDepth = 128;

inline constexpr std::string_view kReviewV1 = "admission.k8s.io/v1";
inline constexpr std::string_view kReviewV1beta1 = "admission.k8s.io/v1beta1";

struct GroupVersionKind {
  std::string group, version, kind;
};

struct AdmissionRequest {
  std::string review_api_version;  // kReviewV1 or kReviewV1beta1: the answer uses the same
  std::string uid;                 // echoed in the answer; required
  GroupVersionKind kind;           // of `object`
  std::string resource;            // plural, e.g. "jobs"
  std::string sub_resource;
  std::string name, namespace_;
  std::string operation;           // CREATE, UPDATE, DELETE or CONNECT, as sent
  api::json object;                // null when absent (DELETE)
  api::json old_object;            // null when absent (CREATE)
  bool dry_run = false;
};

struct AdmissionResponse {
  bool allowed = true;
  std::string message;             // why it was denied; shown to the user by kubectl
  api::json patch;                 // RFC 6902 operations (an array); null or empty: no patch
  std::vector<std::string> warnings;
};

AdmissionResponse Allow();
AdmissionResponse Deny(std::string message);

// Parses a whole request body. kInvalidArgument naming the problem: not JSON, nested too deep, not an
// AdmissionReview, an unsupported apiVersion, no `request`, no `request.uid`, a field of the wrong type.
core::StatusOr<AdmissionRequest> DecodeAdmissionReview(std::string_view body);

// The answer to `req`: an AdmissionReview of the same apiVersion with `response.uid` = req.uid; a patch is
// base64-encoded with patchType JSONPatch.
std::string EncodeAdmissionReview(const AdmissionRequest& req, const AdmissionResponse& resp);

}  // namespace tephra::webhooks
