// kselect bench's streaming JSONL (docs/formats.md): a "run" record carrying the hardware
// profile and method, then one "measurement" record per timed (problem, config) pair.
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/ingest.h"

namespace kselect {

namespace {

constexpr std::string_view kFormat = "kselect.bench.jsonl";
constexpr int64_t kFormatMajor = 1;

using json_codec::ObjectReader;
using nlohmann::json;

StatusOr<RunInfo> ParseRunRecord(const json& record, const std::string& where,
                                 const IngestOptions& options) {
  ObjectReader r(record, where);
  r.String("type");
  const std::string format = r.String("format");
  const int64_t version = r.Int("format_version");
  if (r.ok() && format != kFormat) {
    return SchemaMismatchError(where + ": format '" + format + "' is not " + std::string(kFormat));
  }
  if (r.ok() && version != kFormatMajor) {
    return SchemaMismatchError(where + ": format_version " + std::to_string(version) +
                               " is not supported (this kselect reads version " +
                               std::to_string(kFormatMajor) + ")");
  }
  RunInfo run;
  run.run_id = r.String("run_id");
  run.tool = r.StringOr("tool", "");
  run.started_at = r.StringOr("started_at", "");
  if (const json* hw = r.Child("hardware", true)) {
    auto profile = HardwareProfileFromJson(hw->dump(), where + ".hardware");
    if (!profile.ok()) {
      r.Fail(profile.status());
    } else {
      run.hardware = *profile;
    }
  }
  if (const json* method = r.Child("method", false)) {
    auto parsed = json_codec::MethodFromJson(*method, where + ".method");
    if (!parsed.ok()) {
      r.Fail(parsed.status());
    } else {
      run.method = *parsed;
    }
  }
  KSELECT_RETURN_IF_ERROR(r.Finish());
  if (run.run_id.empty()) return ParseError(where + ".run_id: must not be empty");
  if (!options.run_id.empty()) run.run_id = options.run_id;
  if (run.hardware.device_kind.empty()) run.hardware.device_kind = options.device_kind;
  return run;
}

StatusOr<Measurement> ParseMeasurementRecord(const json& record, const std::string& where,
                                             const std::map<std::string, RunInfo>& runs,
                                             const IngestOptions& options) {
  ObjectReader r(record, where);
  r.String("type");
  Measurement m;
  m.run_id = r.String("run_id");
  m.op_type = r.StringOr("op_type", "gemm");
  if (const json* problem = r.Child("problem", true)) {
    auto parsed = json_codec::ProblemFromJson(*problem, where + ".problem");
    if (!parsed.ok()) return parsed.status();
    m.problem = *parsed;
  }
  if (const json* config = r.Child("config", true)) {
    auto parsed = json_codec::KernelConfigFromJson(*config, where + ".config");
    if (!parsed.ok()) return parsed.status();
    m.config = *parsed;
  }
  m.kernel_name = r.StringOr("kernel_name", "");
  m.latency_ms = r.Number("latency_ms");
  m.tflops = r.NumberOr("tflops", 0);
  m.bandwidth_gb_s = r.NumberOr("bandwidth_gb_s", 0);
  m.cv = r.NumberOr("cv", 0);
  m.samples = static_cast<int32_t>(r.IntOr("samples", 0));
  const bool declared_valid = r.BoolOr("is_valid", true);
  m.invalid_reason = r.StringOr("invalid_reason", "");
  m.aborted = r.BoolOr("aborted", false);
  m.abort_bound_ms = r.NumberOr("abort_bound_ms", 0);
  if (r.Has("peer_rank")) {
    const json* rank = r.Child("peer_rank", false);
    if (rank && !rank->is_null()) m.peer_rank = static_cast<int32_t>(r.Int("peer_rank"));
  }
  // The second heuristic's rank (cuDNN's mode B): absent or null when the provider has none.
  if (r.Has("peer_rank_b")) {
    const json* rank = r.Child("peer_rank_b", false);
    if (rank && !rank->is_null()) {
      const int64_t value = r.Int("peer_rank_b");
      if (r.ok() && (value < 1 || value > std::numeric_limits<int32_t>::max())) {
        r.Fail(ParseError(r.PathOf("peer_rank_b") + ": rank " + std::to_string(value) +
                          " is not between 1 and 2^31-1"));
      }
      m.peer_rank_b = static_cast<int32_t>(value);
    }
  }
  m.timestamp = r.StringOr("timestamp", "");
  m.device_uuid = r.StringOr("device_uuid", "");
  m.reference_latency_ms = r.NumberOr("reference_latency_ms", 0);
  if (!(m.reference_latency_ms >= 0) || !std::isfinite(m.reference_latency_ms)) {
    r.Fail(ParseError(r.PathOf("reference_latency_ms") + ": must be a finite latency >= 0"));
  }
  m.is_drift_reference = r.BoolOr("is_drift_reference", false);
  const json* method = r.Child("method", false);
  KSELECT_RETURN_IF_ERROR(r.Finish());

  const auto run = runs.find(options.run_id.empty() ? m.run_id : options.run_id);
  if (run == runs.end()) {
    return ParseError(where + ".run_id: run '" + m.run_id +
                      "' has no run record before this measurement");
  }
  if (!options.run_id.empty()) m.run_id = options.run_id;
  m.method = run->second.method;
  if (method) {
    auto parsed = json_codec::MethodFromJson(*method, where + ".method");
    if (!parsed.ok()) return parsed.status();
    m.method = *parsed;
  }
  if (auto status = ValidateProblem(m.problem); !status.ok()) {
    return ParseError(where + ".problem: " + status.message());
  }
  if (m.kernel_name.empty()) m.kernel_name = DescribeConfig(m.config);
  if (!declared_valid) {
    m.is_valid = false;
    if (m.invalid_reason.empty()) m.invalid_reason = "marked invalid by the benchmark";
  } else if (m.aborted) {
    m.is_valid = false;
    if (m.invalid_reason.empty()) m.invalid_reason = "aborted: slower than the best so far";
  } else {
    DeriveRates(m);
    m.Validate();
  }
  return m;
}

// {"type":"problem_done","run_id":..,"problem":{..},"configs":N,...}: the sweep of one problem
// finished. Only run_id and problem matter to ingestion; the figures are for people.
StatusOr<IngestResult::CompletedProblem> ParseProblemDoneRecord(
    const json& record, const std::string& where, const std::map<std::string, RunInfo>& runs,
    const IngestOptions& options) {
  ObjectReader r(record, where);
  r.String("type");
  std::string run_id = r.String("run_id");
  Problem problem;
  if (const json* p = r.Child("problem", true)) {
    auto parsed = json_codec::ProblemFromJson(*p, where + ".problem");
    if (!parsed.ok()) return parsed.status();
    problem = *parsed;
  }
  r.IntOr("configs", 0);
  r.IntOr("rows", 0);
  r.IntOr("skipped", 0);
  r.IntOr("enumerated", 0);
  r.IntOr("confirmed", 0);
  r.IntOr("confirm_rounds", 0);
  r.NumberOr("plan_seconds", 0);
  r.NumberOr("seconds", 0);
  r.StringOr("timestamp", "");
  KSELECT_RETURN_IF_ERROR(r.Finish());
  if (!options.run_id.empty()) run_id = options.run_id;
  if (runs.find(run_id) == runs.end()) {
    return ParseError(where + ".run_id: run '" + run_id + "' has no run record before this record");
  }
  return IngestResult::CompletedProblem{run_id, ProblemToString(problem)};
}

}  // namespace

StatusOr<IngestResult> ParseKselectJsonl(std::string_view text, std::string_view source,
                                         const IngestOptions& options) {
  IngestResult result;
  std::map<std::string, RunInfo> runs;
  const auto lines = text::SplitLines(text);
  const bool ends_with_newline = !text.empty() && text.back() == '\n';
  for (size_t i = 0; i < lines.size(); ++i) {
    const int64_t line_number = static_cast<int64_t>(i) + 1;
    ++result.lines_read;
    const std::string_view line = text::Trim(lines[i]);
    if (line.empty()) continue;
    const std::string where = text::Where(source, line_number);
    KSELECT_RETURN_IF_ERROR(text::CheckJsonDepth(line, source, line_number));
    json record;
    try {
      record = json::parse(line);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 2e99999
      const bool torn_tail = i + 1 == lines.size() && !ends_with_newline;
      return ParseError(where + ": " +
                        (torn_tail ? "truncated final record (the run was interrupted while "
                                     "writing it; `kselect bench --resume` repairs the file): "
                                   : "malformed JSON: ") +
                        text::Excerpt(e.what()));
    }
    if (!record.is_object()) return ParseError(where + ": a record must be a JSON object");
    const auto type = record.find("type");
    if (type == record.end() || !type->is_string()) {
      return ParseError(where +
                        ": record has no \"type\" string (expected run, measurement or "
                        "problem_done)");
    }
    if (*type == "run") {
      KSELECT_ASSIGN_OR_RETURN(RunInfo run, ParseRunRecord(record, where, options));
      const auto existing = runs.find(run.run_id);
      if (existing == runs.end()) {
        runs.emplace(run.run_id, run);
        result.runs.push_back(run);
      } else if (!(existing->second.hardware == run.hardware)) {
        // A resumed run repeats its header; a different device under one run id is a mix-up.
        return FailedPreconditionError(where + ": run '" + run.run_id +
                                       "' reappears with a different hardware profile");
      }
    } else if (*type == "measurement") {
      KSELECT_ASSIGN_OR_RETURN(Measurement m, ParseMeasurementRecord(record, where, runs, options));
      result.measurements.push_back(std::move(m));
    } else if (*type == "problem_done") {
      KSELECT_ASSIGN_OR_RETURN(IngestResult::CompletedProblem done,
                               ParseProblemDoneRecord(record, where, runs, options));
      result.completed_problems.push_back(std::move(done));
    } else {
      return ParseError(where + ": unknown record type '" + type->get<std::string>() + "'");
    }
  }
  if (result.runs.empty()) return ParseError(std::string(source) + ": no run record found");
  if (options.complete_problems_only) {
    std::set<std::pair<std::string, std::string>> complete;
    for (const auto& done : result.completed_problems) complete.emplace(done.run_id, done.problem);
    std::vector<Measurement> kept;
    kept.reserve(result.measurements.size());
    for (Measurement& m : result.measurements) {
      if (complete.count({m.run_id, ProblemToString(m.problem)}) != 0) {
        kept.push_back(std::move(m));
      } else {
        ++result.dropped_incomplete;
      }
    }
    result.measurements = std::move(kept);
  }
  return result;
}

}  // namespace kselect
