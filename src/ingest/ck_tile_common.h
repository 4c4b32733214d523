// Pieces shared by the CK Tile log, CK Tile JSON and CK conv CSV parsers: typed access to JSON
// values with the JSON path in every error, the run id rule, and the conversion of one benchmark
// binary's output object ({"name", "problem", "perf_result"}) into a Measurement. Internal to
// src/ingest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kselect/ingest.h"
#include "kselect/kernel_config.h"
#include "kselect/measurement.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect::ck {

using Json = nlohmann::json;

// options.run_id when set, else the first 12 hex digits of md5 of the file name (the last path
// component of `source`), as CK's data_pipeline.py derives it.
std::string RunIdFor(std::string_view source, const IngestOptions& options);

// A RunInfo for AMD rows: vendor "amd", arch and device kind from the options.
RunInfo MakeAmdRunInfo(const std::string& run_id, std::string tool, MeasurementMethod method,
                       const IngestOptions& options);

// Typed reads of a JSON value; `path` ("results[2].benchmarks[0].m") names it in the error.
StatusOr<int64_t> JsonInt(const Json& value, std::string_view path);
// Numbers as double; JSON null reads as NaN (see ReplaceNonFiniteLiterals).
StatusOr<double> JsonNumber(const Json& value, std::string_view path);
StatusOr<std::string> JsonString(const Json& value, std::string_view path);
StatusOr<bool> JsonBool(const Json& value, std::string_view path);
// A member of an object, or nullptr when absent.
const Json* Member(const Json& object, std::string_view key);

// Python's json module writes NaN, Infinity and -Infinity, which strict JSON parsers refuse.
// Replaces those bare literals (and nan/inf, outside strings) by null so that such a row parses
// and is kept as invalid instead of losing the whole block.
std::string ReplaceNonFiniteLiterals(std::string_view json_text);

// Parses JSON text, never throwing; a syntax error names source:line:column, a number out of
// double range names the text's first line.
StatusOr<Json> ParseJsonText(std::string_view json_text, std::string_view source,
                             int64_t first_line);

// The output type CK Tile uses for a given input type: fp16 for fp8/bf8, else the input type.
DataType CkTileOutputType(DataType input);

// A streaming-log shape header ("Shape 3: M=.. N=.. K=.. dtype=fp8 layout=rcr").
struct ShapeHeader {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  std::string layout;
  int64_t line = 0;
};

// Where one benchmark object came from, for messages: `where` is "source:line" or "source",
// `path` the JSON path prefix of the object ("" or "[3]").
struct ObjectContext {
  std::string where;
  std::string path;
  const ShapeHeader* header = nullptr;  // fallback for problem fields (streaming logs only)
};

// Converts one benchmark binary's output object into a Measurement (problem, config, figures;
// is_valid set, method/run id left to the caller). Problem fields come from "problem", falling
// back to the header, then to the kernel name for dtype and layout; a dtype or layout that
// disagrees with the kernel name is an error. Notes go to `warnings`.
StatusOr<Measurement> ConvertBenchmarkObject(const Json& object, const ObjectContext& context,
                                             std::vector<std::string>& warnings);

// Bandwidth from latency and the problem's minimal traffic with real element sizes (GB/s);
// 0 when the latency is not a positive finite number.
double BandwidthGbPerS(const Problem& problem, double latency_ms);

// Sets is_valid from the figures (Measurement::Validate) when `reason` is empty, else marks the
// row invalid with `reason`.
void SetValidity(Measurement& m, std::string reason);

}  // namespace kselect::ck
