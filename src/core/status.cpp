#include "kselect/status.h"

#include <string>

namespace kselect {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kParseError:
      return "parse_error";
    case StatusCode::kSchemaMismatch:
      return "schema_mismatch";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kCannotImplement:
      return "cannot_implement";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kUnimplemented:
      return "unimplemented";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

void ThrowCheckFailure(const char* file, int line, const char* condition, std::string_view detail) {
  std::string what =
      std::string(file) + ":" + std::to_string(line) + ": check failed: " + condition;
  if (!detail.empty()) what += " (" + std::string(detail) + ")";
  throw CheckFailure(what);
}

}  // namespace kselect
