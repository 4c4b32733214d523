// Status and StatusOr: how every expected failure (bad input, missing file, schema mismatch,
// a config that cannot run a problem) travels back to the caller. Library code never exits or
// aborts; programmer errors (broken invariants) throw CheckFailure through KSELECT_CHECK.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kselect {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something impossible (a negative dim, an unknown name)
  kParseError,          // malformed input text: the message names the file and line or column
  kSchemaMismatch,      // a file of another schema or feature-spec version
  kNotFound,            // a file or key that does not exist
  kIoError,             // reading or writing failed
  kUnavailable,         // the resource is absent here (no GPU, no driver, library built without it)
  kCannotImplement,     // a kernel config cannot run this problem
  kFailedPrecondition,  // the operation is refused in the current state (mixed devices, ...)
  kTimeout,
  kInternal,
  kUnimplemented,  // a capability kselect does not have yet (a convolution reference)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "parse_error: file.log:12: unexpected token" style, for logs and the CLI.
  std::string ToString() const;
  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status ParseError(std::string m) {
  return {StatusCode::kParseError, std::move(m)};
}
inline Status SchemaMismatchError(std::string m) {
  return {StatusCode::kSchemaMismatch, std::move(m)};
}
inline Status NotFoundError(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status IoError(std::string m) {
  return {StatusCode::kIoError, std::move(m)};
}
inline Status UnavailableError(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status CannotImplementError(std::string m) {
  return {StatusCode::kCannotImplement, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status TimeoutError(std::string m) {
  return {StatusCode::kTimeout, std::move(m)};
}
inline Status InternalError(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}

// Thrown by KSELECT_CHECK: a bug in kselect or in a caller, never an input problem.
class CheckFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void ThrowCheckFailure(const char* file, int line, const char* condition,
                                    std::string_view detail);

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).ok()) {
      ThrowCheckFailure(__FILE__, __LINE__, "!status.ok()", "StatusOr built from an OK status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  const T& value() const& {
    CheckHasValue();
    return std::get<T>(state_);
  }
  T& value() & {
    CheckHasValue();
    return std::get<T>(state_);
  }
  T&& value() && {
    CheckHasValue();
    return std::get<T>(std::move(state_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void CheckHasValue() const {
    if (!ok()) {
      ThrowCheckFailure(__FILE__, __LINE__, "ok()",
                        "value() on an error StatusOr: " + std::get<Status>(state_).ToString());
    }
  }
  std::variant<Status, T> state_;
};

}  // namespace kselect

#define KSELECT_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond)) ::kselect::ThrowCheckFailure(__FILE__, __LINE__, #cond, ""); \
  } while (0)

#define KSELECT_CHECK_MSG(cond, detail)                                             \
  do {                                                                              \
    if (!(cond)) ::kselect::ThrowCheckFailure(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)

#define KSELECT_RETURN_IF_ERROR(expr)                          \
  do {                                                         \
    ::kselect::Status kselect_status_tmp_ = (expr);            \
    if (!kselect_status_tmp_.ok()) return kselect_status_tmp_; \
  } while (0)

#define KSELECT_CONCAT_INNER(a, b) a##b
#define KSELECT_CONCAT(a, b) KSELECT_CONCAT_INNER(a, b)
#define KSELECT_ASSIGN_OR_RETURN(lhs, expr) \
  KSELECT_ASSIGN_OR_RETURN_IMPL(KSELECT_CONCAT(kselect_statusor_, __LINE__), lhs, expr)
#define KSELECT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
