// JSON forms of problems, kernel configs and measurement methods: what kselect bench writes into
// its streaming JSONL and what ingestion reads back. Readers are strict: a missing required
// field, a wrong type or an unknown key is a ParseError naming the JSON path.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "kselect/kernel_config.h"
#include "kselect/measurement.h"
#include "kselect/problem.h"

namespace kselect::json_codec {

// A JSON value as bounded text for an error message (text::Excerpt), invalid UTF-8 replaced
// rather than thrown on.
template <typename JsonType>
std::string JsonExcerpt(const JsonType& value) {
  return text::Excerpt(value.dump(-1, ' ', false, JsonType::error_handler_t::replace));
}

// Reads the fields of one JSON object, remembering the first error (with its path) and which keys
// were read, so Finish() can reject unknown keys.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& object, std::string path);

  int64_t Int(std::string_view key);
  int64_t IntOr(std::string_view key, int64_t fallback);
  // Numbers; JSON null reads as NaN so validation can mark the figure invalid.
  double Number(std::string_view key);
  double NumberOr(std::string_view key, double fallback);
  bool Bool(std::string_view key);
  bool BoolOr(std::string_view key, bool fallback);
  std::string String(std::string_view key);
  std::string StringOr(std::string_view key, std::string fallback);
  // A nested object or array, or nullptr (error recorded when required).
  const nlohmann::json* Child(std::string_view key, bool required);
  bool Has(std::string_view key) const;
  std::string PathOf(std::string_view key) const;

  // Records an error found by the caller (first error wins).
  void Fail(Status status);
  // OK, or the first error; also fails on keys nobody read.
  Status Finish();
  bool ok() const { return status_.ok(); }

 private:
  const nlohmann::json* Find(std::string_view key, bool required);

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string, std::less<>> read_keys_;
  Status status_;
};

nlohmann::json GemmProblemToJson(const GemmProblem& p);
nlohmann::json ConvProblemToJson(const ConvProblem& p);
// {"kind": "gemm", ...} or {"kind": "conv", ...}
nlohmann::json ProblemToJson(const Problem& p);
StatusOr<Problem> ProblemFromJson(const nlohmann::json& j, const std::string& path);

// {"provider": "cublaslt", ...typed fields...}
nlohmann::json KernelConfigToJson(const KernelConfig& c);
StatusOr<KernelConfig> KernelConfigFromJson(const nlohmann::json& j, const std::string& path);

nlohmann::json MethodToJson(const MeasurementMethod& m);
StatusOr<MeasurementMethod> MethodFromJson(const nlohmann::json& j, const std::string& path);

}  // namespace kselect::json_codec
