#include "tephra/core/status.h"

#include <cstdio>
#include <cstdlib>

namespace tephra::core {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
  }
  return "UNKNOWN_CODE";
}

Status&& Status::Annotate(std::string_view context) && {
  if (!ok()) message_ = std::string(context) + ": " + message_;
  return std::move(*this);
}

Status Status::Annotate(std::string_view context) const& {
  Status copy = *this;
  return std::move(copy).Annotate(context);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

#define TEPHRA_DEFINE_ERROR_(Name, Code) \
  Status Name(std::string message) { return Status(StatusCode::Code, std::move(message)); }
TEPHRA_DEFINE_ERROR_(CancelledError, kCancelled)
TEPHRA_DEFINE_ERROR_(UnknownError, kUnknown)
TEPHRA_DEFINE_ERROR_(InvalidArgumentError, kInvalidArgument)
TEPHRA_DEFINE_ERROR_(DeadlineExceededError, kDeadlineExceeded)
TEPHRA_DEFINE_ERROR_(NotFoundError, kNotFound)
TEPHRA_DEFINE_ERROR_(AlreadyExistsError, kAlreadyExists)
TEPHRA_DEFINE_ERROR_(PermissionDeniedError, kPermissionDenied)
TEPHRA_DEFINE_ERROR_(ResourceExhaustedError, kResourceExhausted)
TEPHRA_DEFINE_ERROR_(FailedPreconditionError, kFailedPrecondition)
TEPHRA_DEFINE_ERROR_(AbortedError, kAborted)
TEPHRA_DEFINE_ERROR_(OutOfRangeError, kOutOfRange)
TEPHRA_DEFINE_ERROR_(UnimplementedError, kUnimplemented)
TEPHRA_DEFINE_ERROR_(InternalError, kInternal)
TEPHRA_DEFINE_ERROR_(UnavailableError, kUnavailable)
TEPHRA_DEFINE_ERROR_(DataLossError, kDataLoss)
TEPHRA_DEFINE_ERROR_(UnauthenticatedError, kUnauthenticated)
#undef TEPHRA_DEFINE_ERROR_

void DieOnBadStatusOrAccess(const Status& s) {
  std::fprintf(stderr, "FATAL: StatusOr::value() on error status: %s\n", s.ToString().c_str());
  std::abort();
}

}  // namespace tephra::core
