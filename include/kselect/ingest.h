// Ingestion: turning benchmark output (kselect's streaming JSONL, AMD CK Tile logs and JSON, the
// CK grouped-convolution CSV) into typed Measurements, ready for the canonical dataset.
// Parsers never guess silently: malformed input is an error naming the source and line, except
// where the documented AMD behaviour is to skip and resynchronise (truncated log blocks), which
// is reported as a warning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/measurement.h"
#include "kselect/status.h"

namespace kselect {

enum class InputFormat {
  kKselectJsonl,  // kselect bench's streaming JSONL (docs/formats.md)
  kCkTileLog,     // CK Tile streaming benchmark log (shape headers + JSON blocks)
  kCkTileJson,    // CK Tile JSON: one benchmark binary's output, or generate_benchmark_data.py's
  kCkConvCsv,     // CK grouped-convolution benchmark CSV
};
// "kselect-jsonl", "ck-log", "ck-json", "ck-conv-csv".
std::string_view InputFormatName(InputFormat format);
StatusOr<InputFormat> ParseInputFormat(std::string_view name);
// Guesses the format from the file's first bytes; an error if nothing matches.
StatusOr<InputFormat> DetectInputFormat(std::string_view text, std::string_view source);

struct IngestOptions {
  std::string arch;         // AMD inputs: "gfx950" etc. (AMD logs do not say)
  std::string device_kind;  // recorded in every row's hardware columns
  std::string run_id;       // overrides the derived run id when non-empty
  // CK conv CSV has no direction column: taken from the kernel name, else from here.
  std::optional<ConvDirection> conv_direction;
  // kselect JSONL: keep only measurements of problems whose sweep finished (a "problem_done"
  // record of the same run), dropping the partial problem a time limit or a kill left behind.
  bool complete_problems_only = false;
};

struct IngestResult {
  std::vector<Measurement> measurements;
  std::vector<RunInfo> runs;          // one per run_id seen, in order of first appearance
  std::vector<std::string> warnings;  // "file:line: skipped truncated JSON block" and the like
  int64_t lines_read = 0;
  // kselect JSONL: every "problem_done" record (run id, ProblemToString), in file order.
  struct CompletedProblem {
    std::string run_id;
    std::string problem;
    bool operator==(const CompletedProblem&) const = default;
  };
  std::vector<CompletedProblem> completed_problems;
  int64_t dropped_incomplete = 0;  // measurements dropped by complete_problems_only
};

// Each parser reads the whole text of one file; `source` names it in messages and in run ids.
StatusOr<IngestResult> ParseKselectJsonl(std::string_view text, std::string_view source,
                                         const IngestOptions& options);
StatusOr<IngestResult> ParseCkTileLog(std::string_view text, std::string_view source,
                                      const IngestOptions& options);
StatusOr<IngestResult> ParseCkTileJson(std::string_view text, std::string_view source,
                                       const IngestOptions& options);
StatusOr<IngestResult> ParseCkConvCsv(std::string_view text, std::string_view source,
                                      const IngestOptions& options);

// Reads `path`, rejects empty files and non-UTF-8 bytes (naming line and column), detects the
// format when `format` is unset, and parses.
StatusOr<IngestResult> IngestFile(const std::string& path, std::optional<InputFormat> format,
                                  const IngestOptions& options);

// Merges repeated measurements: a single row whose figures are the medians of the valid repeats
// (of the aborted ones when none is valid and some aborted; the first verdict when every repeat
// is invalid), whose cv is the larger of the repeats' own and the spread between them, and whose
// duplicates_merged counts them. Across runs, a row merged from several runs names them all in
// its run id (sorted, joined by kMergedRunSeparator) and its GPUs in device_uuid. Order is kept.
std::vector<Measurement> MergeDuplicateMeasurements(std::vector<Measurement> measurements,
                                                    MergeScope scope = MergeScope::kWithinRun);

// The key MergeDuplicateMeasurements groups by: run id (within runs only), problem, config.
std::string MeasurementKey(const Measurement& m, MergeScope scope = MergeScope::kWithinRun);

}  // namespace kselect
