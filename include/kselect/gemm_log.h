// Application GEMM logs: the GEMMs an application really calls, read from the logs libraries and
// frameworks write, aggregated into distinct GEMMs with call counts and ranked by their share of
// the estimated GEMM time (the first step of the tuning workflow, seed 004; formats in
// ../docs/formats.md, "Application GEMM logs").
//
// Every format is read into kselect's orientation: a column-major-C BLAS call, m = rows of C.
// PyTorch's nn.Linear reaches cuBLAS(Lt) as a TN GEMM with m = out features and n = tokens, and
// that is what a trace of it yields.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kselect/features.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

enum class GemmLogFormat {
  kAuto,              // decided from the file's first meaningful line
  kHipBlasLtProfile,  // HIPBLASLT_LOG_MASK=64/128 YAML flow mappings ("- {function: matmul, ...}")
  kCublasLtTrace,     // CUBLASLT_LOG_LEVEL=2+ / mask: "[cublasLtMatmul] A=.. Adesc=[..] ..." lines
  kTunableOpCsv,      // PyTorch TunableOp untuned ("op,params") or results ("op,params,sol,ms")
  kPlainCsv,          // header row; m,n,k[,batch][,transa,transb|layout][,dtype..][,calls]
  kProblemRecord,     // kselect's own record mode ("kselect.problem_record" JSONL)
};
// "auto", "hipblaslt_profile", "cublaslt_trace", "tunableop_csv", "csv", "problem_record".
std::string_view GemmLogFormatName(GemmLogFormat format);
StatusOr<GemmLogFormat> ParseGemmLogFormat(std::string_view name);

// One distinct GEMM of the log: every call with the same problem, leading dimensions and
// epilogue is one entry.
struct LoggedGemm {
  GemmProblem problem;  // dims, layout, dtypes, alpha/beta as the library was called
  int64_t calls = 0;    // calls aggregated into this entry (a profile's call_count summed)
  // Leading dimensions as logged (0 where the format does not give them). The tuner times the
  // dense problem; a non-dense one is reported, not silently treated as dense.
  int64_t lda = 0, ldb = 0, ldc = 0;
  std::string epilogue;     // "" = none; else as logged ("bias", "gelu", "EPILOGUE_BIAS", ...)
  std::string logged_algo;  // the config the library chose, as logged ("" when not given)
  // The workspace the application gave the call, in bytes (the smallest over the entry's calls);
  // -1 where the format does not log it. Tuned configs must run inside it.
  int64_t workspace_bytes = -1;
  int64_t first_line = 0;  // 1-based line of the first call
};

struct GemmLog {
  std::string source;  // the file read
  GemmLogFormat format = GemmLogFormat::kAuto;
  std::vector<LoggedGemm> gemms;  // distinct GEMMs, in order of first call
  // Index into `gemms` of every call in call order, where the format keeps order (traces,
  // CSV rows, records); for aggregated formats (profiles) each GEMM's calls follow one another
  // in first-call order.
  std::vector<int32_t> sequence;
  int64_t total_calls = 0;
  // Lines skipped with the reason ("LOG:12: ..."), where the format lets a reader resynchronise.
  std::vector<std::string> warnings;
  // What the log says about where it came from, never GEMMs: a TunableOp file's Validator lines
  // ("PT_VERSION" -> "2.5.1", ...), in file order.
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct GemmLogReadOptions {
  GemmLogFormat format = GemmLogFormat::kAuto;
  // Refuse a log with more distinct GEMMs than this (a guard against a runaway log).
  int64_t max_gemms = 1'000'000;
  // GemmLog::sequence is kept while the log has at most this many calls; past it the sequence is
  // left empty and a warning says so (a profile's call_count can run to billions).
  int64_t max_sequence = 10'000'000;
};

// Reads a log file (plain or .gz). Errors name the file and line: a malformed line of a format
// that cannot resynchronise is an error; one that can is a warning and a skip.
StatusOr<GemmLog> ReadGemmLog(const std::string& path, const GemmLogReadOptions& options = {});
// The same over text already in memory; `source` names it in messages.
StatusOr<GemmLog> ParseGemmLog(std::string_view text, std::string_view source,
                               const GemmLogReadOptions& options = {});

// A GEMM's estimated time per call on `hardware` (microseconds): the roofline of its FLOPs at the
// dtype's tensor-core peak and its minimum bytes at HBM bandwidth, plus a launch floor. Ranks
// GEMMs against each other; it is not a prediction of any kernel.
double EstimateGemmCallUs(const GemmProblem& problem, const HardwareConstants& hardware);

struct GemmLogSummaryEntry {
  size_t gemm = 0;              // index into GemmLog::gemms
  double estimated_us = 0;      // per call
  double share = 0;             // calls x estimated_us over the log's total, 0..1
  double cumulative_share = 0;  // share of this entry and every entry ranked above it
};

struct GemmLogSummary {
  std::vector<GemmLogSummaryEntry> kept;  // ranked by calls x estimated time, largest first
  size_t dropped = 0;                     // GEMMs below the threshold
  double kept_share = 0;                  // estimated time share of the kept GEMMs
  double threshold = 0;                   // as given
  double total_estimated_us = 0;          // over every call in the log
};

// Ranks the log's GEMMs by calls x estimated time and keeps those whose own share is at least
// `threshold` (a fraction, 0 keeps every GEMM).
GemmLogSummary SummarizeGemmLog(const GemmLog& log, const HardwareConstants& hardware,
                                double threshold);

// The summary as JSON ("format": "kselect.gemm_log_summary", "format_version": 1): the log's
// source, its format ("log_format"), total calls, distinct GEMMs, warnings count, metadata, the
// threshold and kept/dropped counts, and under "gemms" one object per kept GEMM with m, n, k,
// batch, layout, transa, transb, a, b, c, compute, alpha, beta, lda, ldb, ldc, epilogue,
// logged_algo, workspace_bytes, calls, first_line, estimated_us, share, cumulative_share.
std::string GemmLogSummaryToJson(const GemmLog& log, const GemmLogSummary& summary);

}  // namespace kselect
