// The one HTTP -> Status table of the client runtime (documented in client.h).
#include <cstdlib>

#include "rest_internal.h"

namespace tephra::kube::rest {

core::Status StatusFromResponse(int code, const std::string& body, const std::string& retry_after,
                                const std::string& verb, const std::string& what) {
  std::string message, reason;
  std::optional<int64_t> retry_secs;
  if (!body.empty()) {
    auto j = api::ParseJson(body, 64);
    if (j.ok() && j->is_object()) {
      if (auto m = j->find("message"); m != j->end() && m->is_string()) message = m->get<std::string>();
      if (auto r = j->find("reason"); r != j->end() && r->is_string()) reason = r->get<std::string>();
      if (auto d = j->find("details"); d != j->end() && d->is_object())
        if (auto ra = d->find("retryAfterSeconds"); ra != d->end() && ra->is_number_integer())
          retry_secs = ra->get<int64_t>();
    }
  }
  if (!retry_after.empty()) {
    char* end = nullptr;
    long v = std::strtol(retry_after.c_str(), &end, 10);
    if (end && *end == '\0' && v >= 0) retry_secs = v;
  }
  if (message.empty()) message = body.size() > 256 ? body.substr(0, 256) : body;
  if (message.empty()) message = "HTTP " + std::to_string(code);
  message = what + ": " + message;
  core::Status s;
  switch (code) {
    case 400:
    case 422:
      s = core::InvalidArgumentError(message);
      break;
    case 401:
      s = core::UnauthenticatedError(message);
      break;
    case 403:
      s = core::PermissionDeniedError(message);
      break;
    case 404:
      s = core::NotFoundError(message);
      break;
    case 409:
      if (reason == "AlreadyExists" || (verb == "create" && reason != "Conflict"))
        s = core::AlreadyExistsError(message);
      else
        s = core::AbortedError(message);
      break;
    case 410:
      s = core::OutOfRangeError(message);
      if (reason.empty()) reason = "Expired";
      break;
    case 429:
      s = core::UnavailableError(message);
      break;
    default:
      if (code >= 500) s = core::UnavailableError(message);
      else s = core::UnknownError(message);
  }
  s.WithHttp(code, reason);
  if (retry_secs && !s.ok()) s = std::move(s).WithRetryAfter(std::chrono::seconds(*retry_secs));
  return s;
}

}  // namespace tephra::kube::rest
