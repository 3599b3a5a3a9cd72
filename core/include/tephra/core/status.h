// Status and StatusOr<T>: the error values every Tephra module returns at its boundary.
//
// Codes follow the canonical set (the same as Abseil/gRPC). Which code means which retry:
//   kUnavailable        retry the same call with backoff (429, 5xx, timeouts, connection reset);
//                       retry_after() carries a server-provided delay when there was one.
//   kAborted            restart the whole read-modify-write (409 Conflict on update).
//   kFailedPrecondition do not retry until the world changes (e.g. a queue is closed).
//   kInvalidArgument    the input is wrong; terminal (400/422, bad manifests, bad flags).
//   kNotFound / kAlreadyExists / kPermissionDenied / kUnauthenticated: as named (404/409-create/403/401).
//   kOutOfRange         with reason() "Expired": a watch resourceVersion fell out of history (410 Gone).
// No exception ever crosses a module boundary: adapters catch library exceptions and return a Status.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace tephra::core {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // A default-constructed Status is OK and costs nothing.
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Optional detail from an HTTP peer: the status code (0 if none), the Kubernetes Status `reason`
  // ("Conflict", "AlreadyExists", "Expired", ...), and a Retry-After delay.
  int http_status() const { return http_status_; }
  const std::string& reason() const { return reason_; }
  std::optional<std::chrono::milliseconds> retry_after() const { return retry_after_; }
  Status& WithHttp(int http_status, std::string reason = {}) & {
    http_status_ = http_status;
    reason_ = std::move(reason);
    return *this;
  }
  Status&& WithHttp(int http_status, std::string reason = {}) && {
    http_status_ = http_status;
    reason_ = std::move(reason);
    return std::move(*this);
  }
  Status&& WithRetryAfter(std::chrono::milliseconds d) && {
    retry_after_ = d;
    return std::move(*this);
  }
  // Prefixes the message with context ("creating pod x: ..."), keeping code and details.
  Status&& Annotate(std::string_view context) &&;
  Status Annotate(std::string_view context) const&;

  // "NOT_FOUND: pods \"x\" not found"; "OK" when ok.
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int http_status_ = 0;
  std::string reason_;
  std::optional<std::chrono::milliseconds> retry_after_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status UnauthenticatedError(std::string message);

inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kAborted; }
inline bool IsUnavailable(const Status& s) { return s.code() == StatusCode::kUnavailable; }
// 410 Gone / "Expired": the requested resourceVersion is no longer in the server's history.
inline bool IsGone(const Status& s) { return s.http_status() == 410 || s.reason() == "Expired" || s.reason() == "Gone"; }

// StatusOr<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "StatusOr<Status> is not allowed");

 public:
  // Constructing from an OK status is a programming error; it is turned into kInternal.
  StatusOr(Status status) : rep_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(rep_).ok()) rep_ = Status(StatusCode::kInternal, "StatusOr constructed from OK status");
  }
  StatusOr(const T& value) : rep_(value) {}        // NOLINT(google-explicit-constructor)
  StatusOr(T&& value) : rep_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  template <typename U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, StatusOr<T>> && !std::is_same_v<std::decay_t<U>, T>)
  StatusOr(U&& value) : rep_(T(std::forward<U>(value))) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(rep_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(rep_); }

  // Precondition: ok(). Violations abort (a bug, not an input error).
  const T& value() const& { return Checked(); }
  T& value() & { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  const T& operator*() const& { return Checked(); }
  T& operator*() & { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }
  const T* operator->() const { return &Checked(); }
  T* operator->() { return &Checked(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<T>(rep_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  [[noreturn]] static void Die(const Status& s);
  T& Checked() {
    if (!ok()) Die(std::get<Status>(rep_));
    return std::get<T>(rep_);
  }
  const T& Checked() const {
    if (!ok()) Die(std::get<Status>(rep_));
    return std::get<T>(rep_);
  }
  std::variant<Status, T> rep_;
};

[[noreturn]] void DieOnBadStatusOrAccess(const Status& s);

template <typename T>
void StatusOr<T>::Die(const Status& s) {
  DieOnBadStatusOrAccess(s);
}

}  // namespace tephra::core

#define TEPHRA_STATUS_CONCAT_INNER_(a, b) a##b
#define TEPHRA_STATUS_CONCAT_(a, b) TEPHRA_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define TEPHRA_RETURN_IF_ERROR(expr)                       \
  do {                                                     \
    ::tephra::core::Status tephra_status_ = (expr);        \
    if (!tephra_status_.ok()) return tephra_status_;       \
  } while (0)

// `TEPHRA_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a StatusOr or returns its error.
#define TEPHRA_ASSIGN_OR_RETURN(lhs, expr) \
  TEPHRA_ASSIGN_OR_RETURN_IMPL_(TEPHRA_STATUS_CONCAT_(tephra_statusor_, __LINE__), lhs, expr)
#define TEPHRA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
