// kselect's own record mode: {"format": "kselect.problem_record", "problem": {...}, "model": ..}
// per line, each distinct problem once (selector.cpp).
#include "ingest/gemm_log_parse.h"

namespace kselect::gemm_log {
namespace {

using nlohmann::json;

constexpr std::string_view kProblemRecordFormat = "kselect.problem_record";

StatusOr<LoggedCall> ParseProblemRecord(std::string_view line, std::string_view source,
                                        int64_t number) {
  if (!text::CheckJsonDepth(line, source, number).ok()) {
    return ParseError("JSON nested deeper than " + std::to_string(text::kMaxJsonDepth) +
                      " levels (kselect's records nest 2 deep: the line is corrupt)");
  }
  json record;
  try {
    record = json::parse(line, nullptr, false);
  } catch (const json::exception&) {
    record = json::value_t::discarded;
  }
  if (record.is_discarded() || !record.is_object()) {
    return ParseError("not a JSON object (a torn or corrupt record)");
  }
  const auto format = record.find("format");
  if (format == record.end() || !format->is_string() || *format != kProblemRecordFormat) {
    return ParseError("not a kselect.problem_record (its \"format\" differs)");
  }
  const auto problem = record.find("problem");
  if (problem == record.end()) return ParseError("no \"problem\"");
  KSELECT_ASSIGN_OR_RETURN(const Problem parsed, json_codec::ProblemFromJson(*problem, "problem"));
  const auto* gemm = std::get_if<GemmProblem>(&parsed);
  if (gemm == nullptr) return InvalidArgumentError("a convolution problem, not a GEMM");
  LoggedCall call;
  call.gemm.problem = *gemm;
  ToColumnMajorC(call.gemm);  // a record may hold a row-major-C problem ("rcr")
  return call;
}

}  // namespace

Status ParseProblemRecords(std::string_view text, LogBuilder& builder, std::string_view source) {
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    return builder.Add(ParseProblemRecord(line, source, number), number);
  });
}

}  // namespace kselect::gemm_log
