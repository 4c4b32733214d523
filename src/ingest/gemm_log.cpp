// Application GEMM logs (gemm_log.h): the format table and its detection, then the roofline
// estimate, the ranking and the JSON summary. Each format's reader is a file of its own
// (gemm_log_<format>.cpp), all feeding the one builder of gemm_log_parse.h; reading files
// (plain or gzip) is in gemm_log_file.cpp, so the fuzz build compiles the parsers without zlib.
#include "kselect/gemm_log.h"

#include <nlohmann/json.hpp>

#include "ingest/gemm_log_parse.h"

namespace kselect {
namespace {

using nlohmann::json;
using namespace gemm_log;

// Launch and tail cost of one GEMM call that no roofline term covers (microseconds).
constexpr double kLaunchFloorUs = 2.0;

// ---------------------------------------------------------------------------------------------
// The format table.

using FormatParser = Status (*)(std::string_view text, LogBuilder& builder,
                                std::string_view source);

struct FormatEntry {
  GemmLogFormat format;
  std::string_view name;
  FormatParser parse;  // nullptr for kAuto
};

constexpr std::array<FormatEntry, 6> kFormats = {{
    {GemmLogFormat::kAuto, "auto", nullptr},
    {GemmLogFormat::kHipBlasLtProfile, "hipblaslt_profile",
     [](std::string_view t, LogBuilder& b, std::string_view) {
       return ParseHipBlasLtProfile(t, b);
     }},
    {GemmLogFormat::kCublasLtTrace, "cublaslt_trace",
     [](std::string_view t, LogBuilder& b, std::string_view) { return ParseCublasLtTrace(t, b); }},
    {GemmLogFormat::kTunableOpCsv, "tunableop_csv",
     [](std::string_view t, LogBuilder& b, std::string_view) { return ParseTunableOpCsv(t, b); }},
    {GemmLogFormat::kPlainCsv, "csv", ParsePlainCsv},
    {GemmLogFormat::kProblemRecord, "problem_record", ParseProblemRecords},
}};

// The format of a log from its first meaningful line.
StatusOr<GemmLogFormat> DetectFormat(std::string_view text, std::string_view source) {
  for (const std::string_view raw : text::SplitLines(text)) {
    const std::string_view line = text::Trim(raw);
    if (line.empty() || line.starts_with('#') || line == "---") continue;
    if (line.starts_with("- {") || line.starts_with("-{") || line.starts_with("hipblaslt-bench")) {
      return GemmLogFormat::kHipBlasLtProfile;
    }
    if (line.starts_with('[') && line.find("[cublasLt") != std::string_view::npos) {
      return GemmLogFormat::kCublasLtTrace;
    }
    const std::string_view first = line.substr(0, line.find(','));
    if (first == "Validator" || first.find("TunableOp_") != std::string_view::npos) {
      return GemmLogFormat::kTunableOpCsv;
    }
    if (line.starts_with('{')) return GemmLogFormat::kProblemRecord;
    // A comma-separated line naming any known column is read as a CSV header, so that a wrong
    // header is reported as such.
    if (LooksLikeCsvHeader(line)) return GemmLogFormat::kPlainCsv;
    return ParseError(std::string(source) +
                      ": not a GEMM log kselect knows (a hipBLASLt profile, a cuBLASLt trace, a "
                      "TunableOp CSV, a CSV with an m,n,k header or a kselect problem record); "
                      "its first line: '" +
                      text::Excerpt(line, 80) + "' (or pass --format)");
  }
  return ParseError(std::string(source) + ": empty log (no lines to read)");
}

double TensorThroughputScale(const GemmProblem& p) {
  // A tf32 accumulator on fp32 operands runs at tf32's rate, not fp32's.
  return p.compute == DataType::kTF32 ? DtypeTensorThroughputScale(DataType::kTF32)
                                      : DtypeTensorThroughputScale(p.dtype_a);
}

}  // namespace

std::string_view GemmLogFormatName(GemmLogFormat format) {
  for (const FormatEntry& e : kFormats) {
    if (e.format == format) return e.name;
  }
  return "unknown";
}

StatusOr<GemmLogFormat> ParseGemmLogFormat(std::string_view name) {
  std::string known;
  for (const FormatEntry& e : kFormats) {
    if (e.name == name) return e.format;
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  return InvalidArgumentError("unknown GEMM log format '" + std::string(name) + "' (expected " +
                              known + ")");
}

StatusOr<GemmLog> ParseGemmLog(std::string_view text, std::string_view source,
                               const GemmLogReadOptions& options) {
  KSELECT_RETURN_IF_ERROR(text::CheckUtf8(text, source));
  // Spreadsheet tools write a UTF-8 byte-order mark before a CSV's header: not part of it.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) text.remove_prefix(3);
  GemmLogFormat format = options.format;
  if (format == GemmLogFormat::kAuto) {
    KSELECT_ASSIGN_OR_RETURN(format, DetectFormat(text, source));
  }
  const auto entry = std::find_if(kFormats.begin(), kFormats.end(),
                                  [&](const FormatEntry& e) { return e.format == format; });
  if (entry == kFormats.end() || entry->parse == nullptr) {
    return InvalidArgumentError("no reader for GEMM log format " +
                                std::string(GemmLogFormatName(format)));
  }
  LogBuilder builder(source, format, options);
  KSELECT_RETURN_IF_ERROR(entry->parse(text, builder, source));
  return std::move(builder).Finish();
}

double EstimateGemmCallUs(const GemmProblem& problem, const HardwareConstants& hardware) {
  const double peak_flops = hardware.flops_per_clock_per_sm_16bit * TensorThroughputScale(problem) *
                            hardware.sm_clock_mhz * 1e6 * hardware.sm_count;
  const double bandwidth = hardware.mem_bandwidth_gb_s * 1e9;
  const double compute_s = peak_flops > 0 ? problem.Flops() / peak_flops : 0;
  const double memory_s = bandwidth > 0 ? problem.MinBytes() / bandwidth : 0;
  return std::max(compute_s, memory_s) * 1e6 + kLaunchFloorUs;
}

GemmLogSummary SummarizeGemmLog(const GemmLog& log, const HardwareConstants& hardware,
                                double threshold) {
  GemmLogSummary summary;
  summary.threshold = threshold;
  std::vector<GemmLogSummaryEntry> ranked(log.gemms.size());
  std::vector<double> weight(log.gemms.size());
  for (size_t i = 0; i < log.gemms.size(); ++i) {
    ranked[i].gemm = i;
    ranked[i].estimated_us = EstimateGemmCallUs(log.gemms[i].problem, hardware);
    weight[i] = static_cast<double>(log.gemms[i].calls) * ranked[i].estimated_us;
    summary.total_estimated_us += weight[i];
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](const GemmLogSummaryEntry& x, const GemmLogSummaryEntry& y) {
                     return weight[x.gemm] > weight[y.gemm];
                   });
  double cumulative = 0;
  for (GemmLogSummaryEntry& entry : ranked) {
    entry.share =
        summary.total_estimated_us > 0 ? weight[entry.gemm] / summary.total_estimated_us : 0;
    // Ranked by share, so the kept entries are a prefix of the ranking.
    if (entry.share < threshold) {
      ++summary.dropped;
      continue;
    }
    cumulative += entry.share;
    entry.cumulative_share = cumulative;
    summary.kept.push_back(entry);
  }
  summary.kept_share = cumulative;
  return summary;
}

std::string GemmLogSummaryToJson(const GemmLog& log, const GemmLogSummary& summary) {
  json gemms = json::array();
  for (const GemmLogSummaryEntry& entry : summary.kept) {
    const LoggedGemm& g = log.gemms[entry.gemm];
    const GemmProblem& p = g.problem;
    // Readers turn every problem into a column-major-C call, so the pair always exists.
    const std::string ops = p.layout.c == MatrixOrder::kColMajor ? p.layout.BlasOps() : "??";
    gemms.push_back(json{{"m", p.m},
                         {"n", p.n},
                         {"k", p.k},
                         {"batch", p.batch},
                         {"layout", p.layout.ToString()},
                         {"transa", ops.substr(0, 1)},
                         {"transb", ops.substr(1, 1)},
                         {"a", DataTypeName(p.dtype_a)},
                         {"b", DataTypeName(p.dtype_b)},
                         {"c", DataTypeName(p.dtype_c)},
                         {"compute", DataTypeName(p.compute)},
                         {"alpha", p.alpha},
                         {"beta", p.beta},
                         {"lda", g.lda},
                         {"ldb", g.ldb},
                         {"ldc", g.ldc},
                         {"epilogue", g.epilogue},
                         {"logged_algo", g.logged_algo},
                         {"workspace_bytes", g.workspace_bytes},
                         {"calls", g.calls},
                         {"first_line", g.first_line},
                         {"estimated_us", entry.estimated_us},
                         {"share", entry.share},
                         {"cumulative_share", entry.cumulative_share}});
  }
  json metadata = json::object();
  for (const auto& [key, value] : log.metadata) metadata[key] = value;
  const json out{{"format", "kselect.gemm_log_summary"},
                 {"format_version", 1},
                 {"source", log.source},
                 {"log_format", GemmLogFormatName(log.format)},
                 {"total_calls", log.total_calls},
                 {"distinct_gemms", log.gemms.size()},
                 {"warnings", log.warnings.size()},
                 {"metadata", metadata},
                 {"threshold", summary.threshold},
                 {"kept", summary.kept.size()},
                 {"dropped", summary.dropped},
                 {"kept_share", summary.kept_share},
                 {"total_estimated_us", summary.total_estimated_us},
                 {"gemms", gemms}};
  return out.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace kselect
