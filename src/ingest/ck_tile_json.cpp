// CK Tile JSON files: one benchmark binary's output (§1.6), an array of them, or the batch file
// generate_benchmark_data.py writes (§6.4). Unlike CK's convert_json_to_parquet.py, bandwidth is
// recomputed with the real element sizes (CK hard-codes 2 bytes, wrong for fp8).
#include <cmath>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_codec.h"
#include "core/text.h"
#include "ingest/ck_tile_common.h"
#include "kselect/config_schema.h"
#include "kselect/ingest.h"
#include "providers/ck/ck_kernel_name.h"

namespace kselect {
namespace {

using ck::Json;

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}
std::string Key(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
}

// Single-binary objects, alone or in a top-level array.
Status ParseBinaryOutputs(const Json& root, std::string_view source, const IngestOptions& options,
                          IngestResult& result) {
  const std::string run_id = ck::RunIdFor(source, options);
  MeasurementMethod method;
  method.name = "ck_tile.benchmark_json";
  method.timer = "unknown";
  method.statistic = "mean";  // "values are averaged over repeat runs" (§1.6)

  auto convert = [&](const Json& object, std::string path) -> Status {
    ck::ObjectContext context{std::string(source), std::move(path), nullptr};
    KSELECT_ASSIGN_OR_RETURN(Measurement m,
                             ck::ConvertBenchmarkObject(object, context, result.warnings));
    m.method = method;
    m.run_id = run_id;
    result.measurements.push_back(std::move(m));
    return Status::Ok();
  };
  if (root.is_array()) {
    for (size_t i = 0; i < root.size(); ++i)
      KSELECT_RETURN_IF_ERROR(convert(root[i], Index("", i)));
  } else {
    KSELECT_RETURN_IF_ERROR(convert(root, ""));
  }
  if (!result.measurements.empty()) {
    result.runs.push_back(ck::MakeAmdRunInfo(run_id, "ck_tile benchmark binary", method, options));
  } else {
    result.warnings.push_back(std::string(source) + ": empty array, no benchmark results");
  }
  return Status::Ok();
}

// metadata.timestamp: kept when a string; seconds since the epoch become ISO 8601 UTC.
StatusOr<std::string> TimestampText(const Json& value, std::string_view path) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) {
    const double seconds = value.get<double>();
    if (std::isfinite(seconds) && seconds >= 0 && seconds < 253402300800.0) {  // < year 10000
      const std::time_t t = static_cast<std::time_t>(seconds);
      std::tm tm{};
      if (gmtime_r(&t, &tm) != nullptr) {
        char buffer[32];
        if (std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
          return std::string(buffer);
      }
    }
  }
  return ParseError(std::string(path) + ": expected an ISO 8601 string or epoch seconds, got " +
                    std::string(value.type_name()));
}

// Reads an optional int32 metadata field (warmup, repeat, counts).
StatusOr<int64_t> OptionalInt(const Json& object, std::string_view key, std::string_view path,
                              int64_t fallback) {
  const Json* value = ck::Member(object, key);
  if (value == nullptr) return fallback;
  return ck::JsonInt(*value, Key(path, key));
}

// Checks one kernel_config field against the config parsed from the kernel name: the name is the
// source of truth, a disagreement means the file is inconsistent.
Status CheckConfigField(const Json& kernel_config, std::string_view path, std::string_view key,
                        const Json& expected, std::string_view kernel_name) {
  const Json* value = ck::Member(kernel_config, key);
  if (value == nullptr) return Status::Ok();
  const bool same = (expected.is_number() && value->is_number())
                        ? value->get<double>() == expected.get<double>()
                        : *value == expected;
  if (same) return Status::Ok();
  return ParseError(Key(path, key) + " is " + json_codec::JsonExcerpt(*value) +
                    " but kernel name '" + text::Excerpt(kernel_name) + "' says " +
                    json_codec::JsonExcerpt(expected));
}

// The kernel_config keys CK's JSON repeats from the kernel name (the provider's field names).
constexpr std::string_view kRepeatedConfigKeys[] = {
    "tile_m",      "tile_n",      "tile_k",      "warp_m",    "warp_n",    "warp_k",
    "warp_tile_m", "warp_tile_n", "warp_tile_k", "pipeline",  "scheduler", "epilogue",
    "pad_m",       "pad_n",       "pad_k",       "persistent"};

Status CheckKernelConfig(const Json& kernel_config, std::string_view path,
                         const KernelConfig& config, std::string_view kernel_name) {
  if (!kernel_config.is_object()) return Status::Ok();
  for (std::string_view key : kRepeatedConfigKeys) {
    const ConfigField* field = FindConfigField(ProviderOf(config), key);
    KSELECT_CHECK_MSG(field != nullptr, "a repeated kernel_config key is not a config field");
    Json expected;
    if (field->type == FieldType::kText) {
      expected = field->get_text(config);
    } else if (field->type == FieldType::kBool) {
      expected = field->get(config) != 0;
    } else {
      expected = field->get(config);
    }
    KSELECT_RETURN_IF_ERROR(CheckConfigField(kernel_config, path, key, expected, kernel_name));
  }
  return Status::Ok();
}

// generate_benchmark_data.py's batch file: metadata, problem_sizes, results[].benchmarks[].
Status ParseBatch(const Json& root, std::string_view source, const IngestOptions& options,
                  IngestResult& result) {
  const std::string where(source);
  auto fail = [&](const Status& status) { return ParseError(where + ": " + status.message()); };

  const Json* metadata = ck::Member(root, "metadata");
  if (metadata == nullptr) return fail(ParseError("metadata: missing"));
  if (!metadata->is_object()) return fail(ParseError("metadata: expected an object"));

  std::optional<DataType> dtype;
  std::string dtype_name;
  if (const Json* value = ck::Member(*metadata, "dtype")) {
    StatusOr<std::string> s = ck::JsonString(*value, "metadata.dtype");
    if (!s.ok()) return fail(s.status());
    StatusOr<DataType> t = ParseDataType(*s);
    if (!t.ok()) return fail(ParseError("metadata.dtype: " + t.status().message()));
    dtype = *t;
    dtype_name = *s;
  }
  std::string layout_name;
  if (const Json* value = ck::Member(*metadata, "layout")) {
    StatusOr<std::string> s = ck::JsonString(*value, "metadata.layout");
    if (!s.ok()) return fail(s.status());
    if (StatusOr<GemmLayout> l = ParseGemmLayout(*s); !l.ok()) {
      return fail(ParseError("metadata.layout: " + l.status().message()));
    }
    layout_name = *s;
  }

  MeasurementMethod method;
  method.name = "ck_tile.generate_benchmark_data";
  method.timer = "unknown";
  method.statistic = "mean";
  StatusOr<int64_t> warmup = OptionalInt(*metadata, "warmup", "metadata", 0);
  if (!warmup.ok()) return fail(warmup.status());
  StatusOr<int64_t> repeat = OptionalInt(*metadata, "repeat", "metadata", 0);
  if (!repeat.ok()) return fail(repeat.status());
  if (*warmup < 0 || *warmup > INT32_MAX || *repeat < 0 || *repeat > INT32_MAX) {
    return fail(ParseError("metadata: warmup and repeat must be non-negative 32-bit integers"));
  }
  method.warmup_iters = static_cast<int32_t>(*warmup);
  method.repeats = static_cast<int32_t>(*repeat);

  std::string timestamp;
  if (const Json* value = ck::Member(*metadata, "timestamp")) {
    StatusOr<std::string> t = TimestampText(*value, "metadata.timestamp");
    if (!t.ok()) return fail(t.status());
    timestamp = *t;
  }

  const Json* results = ck::Member(root, "results");
  if (results == nullptr || !results->is_array()) {
    return fail(ParseError("results: expected an array"));
  }
  const std::string run_id = ck::RunIdFor(source, options);

  for (size_t r = 0; r < results->size(); ++r) {
    const Json& entry = (*results)[r];
    const std::string entry_path = Index("results", r);
    if (!entry.is_object()) return fail(ParseError(entry_path + ": expected an object"));
    const Json* kernel_config = ck::Member(entry, "kernel_config");
    if (kernel_config != nullptr && !kernel_config->is_object()) {
      return fail(ParseError(Key(entry_path, "kernel_config") + ": expected an object"));
    }
    const Json* benchmarks = ck::Member(entry, "benchmarks");
    if (benchmarks == nullptr || !benchmarks->is_array()) {
      return fail(ParseError(Key(entry_path, "benchmarks") + ": expected an array"));
    }
    for (size_t b = 0; b < benchmarks->size(); ++b) {
      const Json& bench = (*benchmarks)[b];
      const std::string path = Index(Key(entry_path, "benchmarks"), b);
      if (!bench.is_object()) return fail(ParseError(path + ": expected an object"));

      // The kernel name: the benchmark's, else the kernel_config's.
      const Json* name_value = ck::Member(bench, "kernel_name");
      std::string name_path = Key(path, "kernel_name");
      if (name_value == nullptr && kernel_config != nullptr) {
        for (std::string_view key : {"kernel_name", "name"}) {
          if ((name_value = ck::Member(*kernel_config, key)) != nullptr) {
            name_path = Key(Key(entry_path, "kernel_config"), key);
            break;
          }
        }
      }
      if (name_value == nullptr) return fail(ParseError(Key(path, "kernel_name") + ": missing"));
      StatusOr<std::string> name = ck::JsonString(*name_value, name_path);
      if (!name.ok()) return fail(name.status());
      StatusOr<CkTileKernelName> parsed = ParseCkTileKernelName(*name);
      if (!parsed.ok()) return fail(ParseError(name_path + ": " + parsed.status().message()));
      if (kernel_config != nullptr) {
        Status consistent = CheckKernelConfig(*kernel_config, Key(entry_path, "kernel_config"),
                                              parsed->config, *name);
        if (!consistent.ok()) return fail(consistent);
      }

      GemmProblem problem;
      struct Dim {
        std::string_view key;
        int64_t* field;
      };
      for (const Dim& dim : {Dim{"m", &problem.m}, Dim{"n", &problem.n}, Dim{"k", &problem.k}}) {
        const Json* value = ck::Member(bench, dim.key);
        if (value == nullptr) return fail(ParseError(Key(path, dim.key) + ": missing"));
        StatusOr<int64_t> v = ck::JsonInt(*value, Key(path, dim.key));
        if (!v.ok()) return fail(v.status());
        *dim.field = *v;
      }
      StatusOr<DataType> name_dtype = ParseDataType(parsed->dtype);
      if (!name_dtype.ok()) return fail(name_dtype.status());
      if (dtype.has_value() && *dtype != *name_dtype) {
        return fail(ParseError("metadata.dtype is " + dtype_name + " but " + name_path + " '" +
                               *name + "' is " + parsed->dtype));
      }
      if (!layout_name.empty() && layout_name != parsed->layout) {
        return fail(ParseError("metadata.layout is " + layout_name + " but " + name_path + " '" +
                               *name + "' is " + parsed->layout));
      }
      problem.dtype_a = problem.dtype_b = *name_dtype;
      problem.dtype_c = ck::CkTileOutputType(*name_dtype);
      problem.compute = DataType::kF32;
      StatusOr<GemmLayout> layout = ParseGemmLayout(parsed->layout);
      if (!layout.ok()) return fail(layout.status());
      problem.layout = *layout;
      Status valid_problem = problem.Validate();
      if (!valid_problem.ok()) return fail(ParseError(path + ": " + valid_problem.message()));

      Measurement m;
      m.op_type = parsed->op;
      m.problem = problem;
      auto config = parsed->config;
      ApplyCkMemPipelinePadding(config);
      m.config = config;
      m.kernel_name = *name;
      m.method = method;
      m.samples = method.repeats;
      m.run_id = run_id;
      m.timestamp = timestamp;

      // Failures are written with zeros; a missing figure is treated the same way.
      for (const auto& [key, field] :
           {std::pair<std::string_view, double*>{"avg_time_ms", &m.latency_ms},
            std::pair<std::string_view, double*>{"tflops", &m.tflops}}) {
        const Json* value = ck::Member(bench, key);
        if (value == nullptr) continue;
        StatusOr<double> v = ck::JsonNumber(*value, Key(path, key));
        if (!v.ok()) return fail(v.status());
        *field = *v;
      }
      m.bandwidth_gb_s = ck::BandwidthGbPerS(m.problem, m.latency_ms);

      bool is_valid = true;
      if (const Json* value = ck::Member(bench, "is_valid")) {
        StatusOr<bool> v = ck::JsonBool(*value, Key(path, "is_valid"));
        if (!v.ok()) return fail(v.status());
        is_valid = *v;
      }
      std::string error_text;
      if (const Json* value = ck::Member(bench, "error"); value != nullptr && !value->is_null()) {
        StatusOr<std::string> v = ck::JsonString(*value, Key(path, "error"));
        if (!v.ok()) return fail(v.status());
        error_text = *v;
      }
      std::string reason;
      if (!is_valid) reason = error_text.empty() ? "benchmark reported is_valid=false" : error_text;
      ck::SetValidity(m, reason);
      result.measurements.push_back(std::move(m));
    }
  }

  // The counts in metadata are a cheap check that the file is complete.
  StatusOr<int64_t> num_kernels = OptionalInt(*metadata, "num_kernels", "metadata", -1);
  if (!num_kernels.ok()) return fail(num_kernels.status());
  if (*num_kernels >= 0 && *num_kernels != static_cast<int64_t>(results->size())) {
    result.warnings.push_back(where + ": metadata.num_kernels is " + std::to_string(*num_kernels) +
                              " but results holds " + std::to_string(results->size()) + " kernels");
  }
  StatusOr<int64_t> num_problems = OptionalInt(*metadata, "num_problems", "metadata", -1);
  if (!num_problems.ok()) return fail(num_problems.status());

  if (result.measurements.empty()) {
    result.warnings.push_back(where + ": no benchmark results in the batch file");
  } else {
    RunInfo run = ck::MakeAmdRunInfo(run_id, "ck_tile generate_benchmark_data.py", method, options);
    run.started_at = timestamp;
    result.runs.push_back(std::move(run));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<IngestResult> ParseCkTileJson(std::string_view text, std::string_view source,
                                       const IngestOptions& options) {
  KSELECT_RETURN_IF_ERROR(text::CheckUtf8(text, source));
  IngestResult result;
  for (char c : text) result.lines_read += c == '\n';
  if (!text.empty() && text.back() != '\n') ++result.lines_read;

  KSELECT_ASSIGN_OR_RETURN(ck::Json root,
                           ck::ParseJsonText(ck::ReplaceNonFiniteLiterals(text), source, 1));
  try {
    if (root.is_object() && ck::Member(root, "results") != nullptr) {
      KSELECT_RETURN_IF_ERROR(ParseBatch(root, source, options, result));
    } else if (root.is_array() || (root.is_object() && ck::Member(root, "name") != nullptr)) {
      KSELECT_RETURN_IF_ERROR(ParseBinaryOutputs(root, source, options, result));
    } else {
      return ParseError(std::string(source) +
                        ": not a CK Tile JSON file: expected a benchmark object with \"name\", an "
                        "array of them, or a batch file with \"metadata\" and \"results\"");
    }
  } catch (const ck::Json::exception& e) {
    // Every access above is type-checked first; this only turns a missed case into an error.
    return InternalError(std::string(source) +
                         ": unexpected JSON access error: " + text::Excerpt(e.what()));
  }
  return result;
}

}  // namespace kselect
