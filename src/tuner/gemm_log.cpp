// Application GEMM logs (gemm_log.h): one line reader per format, all feeding one builder that
// validates each call and aggregates identical ones; then the roofline estimate, the ranking and
// the JSON summary. Reading files (plain or gzip) is in gemm_log_file.cpp, so the fuzz build
// compiles this file without zlib.
#include "kselect/gemm_log.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/text.h"

namespace kselect {
namespace {

using nlohmann::json;

// Launch and tail cost of one GEMM call that no roofline term covers (microseconds).
constexpr double kLaunchFloorUs = 2.0;

// One call (or `calls` identical calls) as a line of the log gives it.
struct LoggedCall {
  LoggedGemm gemm;
  int64_t calls = 1;
};

// "key=value" / "key: value" pairs of one line, in order; the first of a repeated key wins.
using Fields = std::vector<std::pair<std::string_view, std::string_view>>;

std::optional<std::string_view> Find(const Fields& fields, std::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// The first of `keys` the line has (formats spell some keys two ways: M/m, transa/transA).
std::optional<std::string_view> FindAny(const Fields& fields,
                                        std::initializer_list<std::string_view> keys) {
  for (const std::string_view key : keys) {
    if (auto v = Find(fields, key)) return v;
  }
  return std::nullopt;
}

StatusOr<int64_t> IntField(const Fields& fields, std::initializer_list<std::string_view> keys,
                           std::optional<int64_t> fallback = std::nullopt) {
  const auto value = FindAny(fields, keys);
  if (!value || value->empty()) {
    if (fallback) return *fallback;
    return ParseError("missing " + std::string(*keys.begin()));
  }
  auto parsed = text::ParseInt64(*value);
  if (!parsed.ok()) {
    return ParseError(std::string(*keys.begin()) + ": '" + text::Excerpt(*value, 40) +
                      "' is not an integer");
  }
  return *parsed;
}

StatusOr<double> NumberField(const Fields& fields, std::string_view key, double fallback) {
  const auto value = Find(fields, key);
  if (!value || value->empty()) return fallback;
  auto parsed = text::ParseDouble(*value);
  if (!parsed.ok()) {
    return ParseError(std::string(key) + ": '" + text::Excerpt(*value, 40) + "' is not a number");
  }
  return *parsed;
}

StatusOr<std::string_view> RequiredField(const Fields& fields,
                                         std::initializer_list<std::string_view> keys) {
  const auto value = FindAny(fields, keys);
  if (!value || value->empty()) return ParseError("missing " + std::string(*keys.begin()));
  return *value;
}

// 'N'/'T' (any case; cuBLASLt's OP_N/OP_T/OP_C, conjugation being a transpose for real types).
StatusOr<char> BlasOp(std::string_view value) {
  if (value.starts_with("OP_")) value.remove_prefix(3);
  if (value.size() == 1) {
    const char op = static_cast<char>(std::toupper(static_cast<unsigned char>(value[0])));
    if (op == 'N') return 'N';
    if (op == 'T' || op == 'C') return 'T';
  }
  return ParseError("transpose '" + text::Excerpt(value, 20) + "' is not N or T");
}

// The operand and accumulator types of a GEMM.
struct OperandTypes {
  DataType a = DataType::kBF16, b = DataType::kBF16, c = DataType::kBF16;
  DataType compute = DataType::kF32;
};

// Types of a GEMM named by one input dtype, as frameworks do: tf32 is fp32 storage with a tf32
// accumulator, 8-bit floats write bf16, int8 accumulates and writes int32.
OperandTypes TypesOfInput(DataType input) {
  OperandTypes t{input, input, input, DataType::kF32};
  switch (input) {
    case DataType::kTF32:
      t = {DataType::kF32, DataType::kF32, DataType::kF32, DataType::kTF32};
      break;
    case DataType::kF8E4M3:
    case DataType::kF8E5M2:
      t.c = DataType::kBF16;
      break;
    case DataType::kI8:
    case DataType::kI32:
      t.c = DataType::kI32;
      t.compute = DataType::kI32;
      break;
    default:
      break;
  }
  return t;
}

// A tf32 operand is fp32 storage; it makes the accumulator tf32.
void SettleTf32(OperandTypes& t) {
  for (DataType* operand : {&t.a, &t.b, &t.c}) {
    if (*operand == DataType::kTF32) {
      *operand = DataType::kF32;
      t.compute = DataType::kTF32;
    }
  }
}

struct NamedType {
  std::string_view name;
  std::optional<DataType> type;  // nullopt: known, but kselect cannot time it
};

StatusOr<DataType> LookupType(std::span<const NamedType> table, std::string_view name,
                              std::string_view what) {
  for (const NamedType& entry : table) {
    if (entry.name != name) continue;
    if (entry.type) return *entry.type;
    if (name.find("fnuz") != std::string_view::npos) {
      return InvalidArgumentError(std::string(what) + " '" + std::string(name) +
                                  "' is AMD's FNUZ FP8 (gfx942), which NVIDIA GPUs lack");
    }
    return InvalidArgumentError(std::string(what) + " '" + std::string(name) +
                                "' has no kselect equivalent (fp32, tf32, fp16, bf16, fp8, bf8, "
                                "int8 GEMMs only)");
  }
  return ParseError("unknown " + std::string(what) + " '" + text::Excerpt(name, 40) + "'");
}

// A validated GEMM in kselect's orientation: a column-major-C BLAS call.
StatusOr<LoggedCall> MakeCall(int64_t m, int64_t n, int64_t k, int64_t batch, char transa,
                              char transb, const OperandTypes& types) {
  LoggedCall call;
  GemmProblem& p = call.gemm.problem;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  KSELECT_ASSIGN_OR_RETURN(p.layout, GemmLayoutFromBlasOps(std::string{transa, transb}));
  p.dtype_a = types.a;
  p.dtype_b = types.b;
  p.dtype_c = types.c;
  p.compute = types.compute;
  return call;
}

// A layout with row-major C is the transposed product: C^T = B^T A^T, column-major, with m and
// n, the operands and their orders swapped.
void ToColumnMajorC(LoggedGemm& gemm) {
  GemmProblem& p = gemm.problem;
  if (p.layout.c == MatrixOrder::kColMajor) return;
  auto flip = [](MatrixOrder o) {
    return o == MatrixOrder::kRowMajor ? MatrixOrder::kColMajor : MatrixOrder::kRowMajor;
  };
  std::swap(p.m, p.n);
  p.layout = GemmLayout{flip(p.layout.b), flip(p.layout.a), MatrixOrder::kColMajor};
  std::swap(p.dtype_a, p.dtype_b);
  std::swap(gemm.lda, gemm.ldb);
}

// ---------------------------------------------------------------------------------------------
// The builder every reader feeds.

class LogBuilder {
 public:
  LogBuilder(std::string_view source, GemmLogFormat format, const GemmLogReadOptions& options)
      : source_(source), options_(options) {
    log_.source = std::string(source);
    log_.format = format;
  }

  void Warn(int64_t line, std::string_view message) {
    log_.warnings.push_back(text::Where(source_, line) + ": " + std::string(message));
  }

  // Adds a line's calls; an impossible GEMM is a warning and a skip. Fails only past max_gemms.
  Status Add(StatusOr<LoggedCall> parsed, int64_t line) {
    if (!parsed.ok()) {
      Warn(line, parsed.status().message());
      return Status::Ok();
    }
    LoggedCall& call = *parsed;
    LoggedGemm& gemm = call.gemm;
    if (Status valid = Check(call); !valid.ok()) {
      Warn(line, valid.message());
      return Status::Ok();
    }
    const std::string key = Key(gemm);
    auto it = index_.find(key);
    int32_t index = 0;
    if (it != index_.end()) {
      index = it->second;
      log_.gemms[index].calls += call.calls;
    } else {
      if (static_cast<int64_t>(log_.gemms.size()) >= options_.max_gemms) {
        return ParseError(text::Where(source_, line) + ": more than " +
                          std::to_string(options_.max_gemms) +
                          " distinct GEMMs (GemmLogReadOptions::max_gemms): is this a GEMM log?");
      }
      index = static_cast<int32_t>(log_.gemms.size());
      gemm.calls = call.calls;
      gemm.first_line = line;
      log_.gemms.push_back(std::move(gemm));
      index_.emplace(key, index);
    }
    log_.total_calls += call.calls;
    Sequence(index, call.calls, line);
    return Status::Ok();
  }

  void AddMetadata(std::string key, std::string value) {
    log_.metadata.emplace_back(std::move(key), std::move(value));
  }

  StatusOr<GemmLog> Finish() && {
    if (log_.gemms.empty()) {
      std::string message = source_ + ": no GEMM calls found (read as " +
                            std::string(GemmLogFormatName(log_.format)) + ")";
      if (!log_.warnings.empty()) {
        message += "; " + std::to_string(log_.warnings.size()) +
                   " lines skipped, the first: " + log_.warnings.front();
      }
      return ParseError(message);
    }
    return std::move(log_);
  }

 private:
  Status Check(const LoggedCall& call) const {
    const LoggedGemm& gemm = call.gemm;
    KSELECT_RETURN_IF_ERROR(gemm.problem.Validate());
    if (call.calls <= 0) {
      return InvalidArgumentError("call count " + std::to_string(call.calls) + " must be positive");
    }
    if (gemm.lda < 0 || gemm.ldb < 0 || gemm.ldc < 0) {
      return InvalidArgumentError("negative leading dimension");
    }
    if (!std::isfinite(gemm.problem.alpha) || !std::isfinite(gemm.problem.beta)) {
      return InvalidArgumentError("alpha and beta must be finite");
    }
    if (call.calls > std::numeric_limits<int64_t>::max() - log_.total_calls) {
      return InvalidArgumentError("call counts overflow 64 bits");
    }
    return Status::Ok();
  }

  // Identical GEMMs: the same problem (dtypes, alpha and beta included), leading dimensions and
  // epilogue. The chosen algorithm is not part of it: the first call's is kept.
  static std::string Key(const LoggedGemm& gemm) {
    char scalars[96];
    std::snprintf(scalars, sizeof(scalars), " alpha=%.17g beta=%.17g", gemm.problem.alpha,
                  gemm.problem.beta);
    return gemm.problem.ToString() + scalars + " ld=" + std::to_string(gemm.lda) + "," +
           std::to_string(gemm.ldb) + "," + std::to_string(gemm.ldc) + " epilogue=" + gemm.epilogue;
  }

  void Sequence(int32_t index, int64_t calls, int64_t line) {
    if (sequence_dropped_) return;
    if (calls > options_.max_sequence - static_cast<int64_t>(log_.sequence.size())) {
      sequence_dropped_ = true;
      log_.sequence.clear();
      log_.sequence.shrink_to_fit();
      Warn(line, "call order not kept: more than " + std::to_string(options_.max_sequence) +
                     " calls (GemmLogReadOptions::max_sequence)");
      return;
    }
    log_.sequence.insert(log_.sequence.end(), static_cast<size_t>(calls), index);
  }

  std::string source_;
  GemmLogReadOptions options_;
  GemmLog log_;
  std::unordered_map<std::string, int32_t> index_;
  bool sequence_dropped_ = false;
};

// Lines of a line-based log with their 1-based numbers, blank lines left out.
template <typename Visit>
Status ForEachLine(std::string_view text, Visit visit) {
  const std::vector<std::string_view> lines = text::SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = text::Trim(lines[i]);
    if (line.empty()) continue;
    KSELECT_RETURN_IF_ERROR(visit(line, static_cast<int64_t>(i + 1)));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// cuBLASLt trace (CUBLASLT_LOG_LEVEL=2 or mask 2): "[date][cublasLt][pid][Trace][cublasLtMatmul]
// A=.. Adesc=[type=R_16BF rows=4096 cols=512 ld=4096] .. computeDesc=[..] algo=[..] beta=0 ..".

constexpr std::array<NamedType, 10> kCudaTypes = {{
    {"R_32F", DataType::kF32},
    {"R_16F", DataType::kF16},
    {"R_16BF", DataType::kBF16},
    {"R_8F_E4M3", DataType::kF8E4M3},
    {"R_8F_E5M2", DataType::kF8E5M2},
    {"R_8I", DataType::kI8},
    {"R_32I", DataType::kI32},
    {"R_64F", std::nullopt},
    {"R_4F_E2M1", std::nullopt},
    {"R_8U", std::nullopt},
}};

constexpr std::array<NamedType, 10> kCublasComputeTypes = {{
    {"COMPUTE_32F", DataType::kF32},
    {"COMPUTE_32F_PEDANTIC", DataType::kF32},
    {"COMPUTE_32F_FAST_16F", DataType::kF32},
    {"COMPUTE_32F_FAST_16BF", DataType::kF32},
    {"COMPUTE_32F_FAST_TF32", DataType::kTF32},
    {"COMPUTE_16F", DataType::kF16},
    {"COMPUTE_16F_PEDANTIC", DataType::kF16},
    {"COMPUTE_32I", DataType::kI32},
    {"COMPUTE_32I_PEDANTIC", DataType::kI32},
    {"COMPUTE_64F", std::nullopt},
}};

// "key=value key=[inside ...] word" into pairs (a bracketed value keeps its inside; words without
// '=' are passed over). Fails when a bracket never closes: a torn line.
StatusOr<Fields> SplitAssignments(std::string_view body) {
  Fields fields;
  size_t i = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (i < body.size()) {
    while (i < body.size() && is_space(body[i])) ++i;
    const size_t key_start = i;
    while (i < body.size() && !is_space(body[i]) && body[i] != '=') ++i;
    if (i >= body.size() || body[i] != '=') continue;  // a bare word
    const std::string_view key = body.substr(key_start, i - key_start);
    ++i;
    if (i < body.size() && body[i] == '[') {
      int depth = 0;
      const size_t open = i;
      for (; i < body.size(); ++i) {
        if (body[i] == '[') ++depth;
        if (body[i] == ']' && --depth == 0) break;
      }
      if (i >= body.size()) return ParseError(std::string(key) + "=[ is never closed");
      fields.emplace_back(key, body.substr(open + 1, i - open - 1));
      ++i;
    } else {
      const size_t value_start = i;
      while (i < body.size() && !is_space(body[i])) ++i;
      fields.emplace_back(key, body.substr(value_start, i - value_start));
    }
  }
  return fields;
}

// A matrix layout descriptor: the stored (column-major) matrix.
struct MatrixDesc {
  DataType type = DataType::kBF16;
  int64_t rows = 0, cols = 0, ld = 0, batch = 1;
};

StatusOr<MatrixDesc> ReadMatrixDesc(const Fields& line, std::string_view name) {
  const auto inside = Find(line, name);
  if (!inside) return ParseError("missing " + std::string(name));
  KSELECT_ASSIGN_OR_RETURN(const Fields fields, SplitAssignments(*inside));
  MatrixDesc desc;
  const Status read = [&]() -> Status {
    KSELECT_ASSIGN_OR_RETURN(const std::string_view type, RequiredField(fields, {"type"}));
    KSELECT_ASSIGN_OR_RETURN(desc.type, LookupType(kCudaTypes, type, "type"));
    KSELECT_ASSIGN_OR_RETURN(desc.rows, IntField(fields, {"rows"}));
    KSELECT_ASSIGN_OR_RETURN(desc.cols, IntField(fields, {"cols"}));
    KSELECT_ASSIGN_OR_RETURN(desc.ld, IntField(fields, {"ld"}, 0));
    KSELECT_ASSIGN_OR_RETURN(desc.batch, IntField(fields, {"batchCount"}, 1));
    if (auto order = Find(fields, "order"); order && *order != "ORDER_COL") {
      return InvalidArgumentError("order=" + text::Excerpt(*order, 30) +
                                  " (only column-major layouts are read)");
    }
    return Status::Ok();
  }();
  if (!read.ok()) return read.WithContext(name);
  return desc;
}

StatusOr<LoggedCall> ParseTraceMatmul(std::string_view body) {
  KSELECT_ASSIGN_OR_RETURN(const Fields line, SplitAssignments(body));
  KSELECT_ASSIGN_OR_RETURN(const MatrixDesc a, ReadMatrixDesc(line, "Adesc"));
  KSELECT_ASSIGN_OR_RETURN(const MatrixDesc b, ReadMatrixDesc(line, "Bdesc"));
  KSELECT_ASSIGN_OR_RETURN(const MatrixDesc d, ReadMatrixDesc(line, "Ddesc"));
  Fields compute;
  if (auto inside = Find(line, "computeDesc")) {
    KSELECT_ASSIGN_OR_RETURN(compute, SplitAssignments(*inside));
  }
  char transa = 'N', transb = 'N';
  if (auto op = FindAny(compute, {"transa", "transA"})) {
    KSELECT_ASSIGN_OR_RETURN(transa, BlasOp(*op));
  }
  if (auto op = FindAny(compute, {"transb", "transB"})) {
    KSELECT_ASSIGN_OR_RETURN(transb, BlasOp(*op));
  }
  OperandTypes types{a.type, b.type, d.type, DataType::kF32};
  if (auto type = Find(compute, "computeType")) {
    KSELECT_ASSIGN_OR_RETURN(types.compute, LookupType(kCublasComputeTypes, *type, "computeType"));
  }
  // Stored A is m x k (N) or k x m (T); stored B is k x n (N) or n x k (T); D is m x n.
  const int64_t m = d.rows, n = d.cols;
  const int64_t k = transa == 'N' ? a.cols : a.rows;
  const int64_t a_m = transa == 'N' ? a.rows : a.cols;
  const int64_t b_k = transb == 'N' ? b.rows : b.cols;
  const int64_t b_n = transb == 'N' ? b.cols : b.rows;
  if (a_m != m || b_k != k || b_n != n) {
    return InvalidArgumentError("descriptors disagree: D is " + std::to_string(m) + "x" +
                                std::to_string(n) + ", op(A) " + std::to_string(a_m) + "x" +
                                std::to_string(k) + ", op(B) " + std::to_string(b_k) + "x" +
                                std::to_string(b_n));
  }
  KSELECT_ASSIGN_OR_RETURN(
      LoggedCall call, MakeCall(m, n, k, d.batch > 1 ? d.batch : a.batch, transa, transb, types));
  // alpha/beta are logged as values in host pointer mode; anything else (a device pointer)
  // leaves the BLAS defaults.
  auto scalar = [&](std::string_view key, double fallback) {
    const auto value = Find(line, key);
    if (!value) return fallback;
    auto parsed = text::ParseDouble(*value);
    return parsed.ok() ? *parsed : fallback;
  };
  call.gemm.problem.alpha = scalar("alpha", 1.0);
  call.gemm.problem.beta = scalar("beta", 0.0);
  call.gemm.lda = a.ld;
  call.gemm.ldb = b.ld;
  call.gemm.ldc = d.ld;
  if (auto epilogue = Find(compute, "epilogue"); epilogue && *epilogue != "EPILOGUE_DEFAULT") {
    call.gemm.epilogue = std::string(*epilogue);
  }
  if (auto algo = Find(line, "algo")) call.gemm.logged_algo = std::string(*algo);
  return call;
}

Status ParseCublasLtTrace(std::string_view text, LogBuilder& builder) {
  int64_t foreign_lines = 0, first_foreign = 0;
  KSELECT_RETURN_IF_ERROR(ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    // Leading "[...]" groups: date, library, pid, level, function.
    bool matmul = false, tagged = false;
    while (line.starts_with('[')) {
      const size_t close = line.find(']');
      if (close == std::string_view::npos) break;
      const std::string_view tag = line.substr(1, close - 1);
      if (tag.starts_with("cublasLt")) {
        tagged = true;
        matmul = matmul || tag.ends_with("Matmul");
      }
      line.remove_prefix(close + 1);
    }
    if (!tagged) {
      // Logging to stdout interleaves the application's own output.
      if (foreign_lines++ == 0) first_foreign = number;
      return Status::Ok();
    }
    if (!matmul) return Status::Ok();  // descriptor creation, heuristics queries, ...
    return builder.Add(ParseTraceMatmul(line), number);
  }));
  if (foreign_lines > 0) {
    builder.Warn(first_foreign, "passed over " + std::to_string(foreign_lines) +
                                    " line(s) without a cuBLASLt tag (application output?), "
                                    "the first here");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// hipBLASLt profile (HIPBLASLT_LOG_MASK=64/128): "- {function: matmul, M: 4096, ...}", and bench
// lines (mask 32): "hipblaslt-bench --api_method c -m 4096 -n 512 ...".

constexpr std::array<NamedType, 13> kHipTypes = {{
    {"f32_r", DataType::kF32},
    {"xf32_r", DataType::kTF32},
    {"f16_r", DataType::kF16},
    {"bf16_r", DataType::kBF16},
    {"f8_r", DataType::kF8E4M3},
    {"bf8_r", DataType::kF8E5M2},
    {"i8_r", DataType::kI8},
    {"i32_r", DataType::kI32},
    {"f8_fnuz_r", std::nullopt},
    {"bf8_fnuz_r", std::nullopt},
    {"f64_r", std::nullopt},
    {"f4_r", std::nullopt},
    {"f6_r", std::nullopt},
}};

// compute_type without its optional "c_" prefix.
constexpr std::array<NamedType, 11> kHipComputeTypes = {{
    {"f32_r", DataType::kF32},
    {"xf32_r", DataType::kTF32},
    {"f32_fast_bf16_r", DataType::kF32},
    {"f32_bf16_r", DataType::kF32},
    {"f32_fast_f16_r", DataType::kF32},
    {"f32_f16_r", DataType::kF32},
    {"f32_fast_xf32_r", DataType::kTF32},
    {"f16_r", DataType::kF16},
    {"i32_r", DataType::kI32},
    {"f64_r", std::nullopt},
    {"f32_c", std::nullopt},
}};

bool TrueValue(std::optional<std::string_view> v) {
  return v && (*v == "true" || *v == "True" || *v == "1");
}

StatusOr<LoggedCall> InterpretHipBlasLt(const Fields& f) {
  if (auto function = Find(f, "function"); function && *function != "matmul") {
    return InvalidArgumentError("function '" + text::Excerpt(*function, 40) + "' is not a matmul");
  }
  if (Find(f, "grouped_gemm")) {
    return InvalidArgumentError("grouped GEMM entries are not read");
  }
  KSELECT_ASSIGN_OR_RETURN(const int64_t m, IntField(f, {"M", "m"}));
  KSELECT_ASSIGN_OR_RETURN(const int64_t n, IntField(f, {"N", "n"}));
  KSELECT_ASSIGN_OR_RETURN(const int64_t k, IntField(f, {"K", "k"}));
  KSELECT_ASSIGN_OR_RETURN(const int64_t batch, IntField(f, {"batch_count"}, 1));
  KSELECT_ASSIGN_OR_RETURN(const std::string_view ta, RequiredField(f, {"transA", "transa"}));
  KSELECT_ASSIGN_OR_RETURN(const std::string_view tb, RequiredField(f, {"transB", "transb"}));
  KSELECT_ASSIGN_OR_RETURN(const char transa, BlasOp(ta));
  KSELECT_ASSIGN_OR_RETURN(const char transb, BlasOp(tb));
  OperandTypes types;
  KSELECT_ASSIGN_OR_RETURN(const std::string_view a, RequiredField(f, {"a_type"}));
  KSELECT_ASSIGN_OR_RETURN(const std::string_view b, RequiredField(f, {"b_type"}));
  KSELECT_ASSIGN_OR_RETURN(const std::string_view c, RequiredField(f, {"d_type", "c_type"}));
  KSELECT_ASSIGN_OR_RETURN(std::string_view compute, RequiredField(f, {"compute_type"}));
  KSELECT_ASSIGN_OR_RETURN(types.a, LookupType(kHipTypes, a, "a_type"));
  KSELECT_ASSIGN_OR_RETURN(types.b, LookupType(kHipTypes, b, "b_type"));
  KSELECT_ASSIGN_OR_RETURN(types.c, LookupType(kHipTypes, c, "d_type"));
  if (compute.starts_with("c_")) compute.remove_prefix(2);
  KSELECT_ASSIGN_OR_RETURN(types.compute, LookupType(kHipComputeTypes, compute, "compute_type"));
  SettleTf32(types);
  KSELECT_ASSIGN_OR_RETURN(LoggedCall call, MakeCall(m, n, k, batch, transa, transb, types));
  KSELECT_ASSIGN_OR_RETURN(call.gemm.problem.alpha, NumberField(f, "alpha", 1.0));
  KSELECT_ASSIGN_OR_RETURN(call.gemm.problem.beta, NumberField(f, "beta", 0.0));
  KSELECT_ASSIGN_OR_RETURN(call.calls, IntField(f, {"call_count"}, 1));
  KSELECT_ASSIGN_OR_RETURN(call.gemm.lda, IntField(f, {"lda"}, 0));
  KSELECT_ASSIGN_OR_RETURN(call.gemm.ldb, IntField(f, {"ldb"}, 0));
  KSELECT_ASSIGN_OR_RETURN(call.gemm.ldc, IntField(f, {"ldc", "ldd"}, 0));
  std::string epilogue;
  auto append = [&](std::string_view part) {
    epilogue += (epilogue.empty() ? "" : "+") + std::string(part);
  };
  if (TrueValue(Find(f, "bias_vector"))) append("bias");
  if (auto act = Find(f, "activation_type"); act && !act->empty() && *act != "none") append(*act);
  if (TrueValue(Find(f, "gradient"))) append("gradient");
  call.gemm.epilogue = epilogue;
  if (auto algo = FindAny(f, {"solution_Name", "kernel_name", "solution_index"})) {
    call.gemm.logged_algo = std::string(*algo);
  }
  return call;
}

// A YAML flow mapping "- {key: value, ...}" (values never hold commas in these logs; quotes are
// stripped; GEKO's repairs of empty values are not needed: an empty value reads as absent).
StatusOr<Fields> SplitFlowMapping(std::string_view line) {
  line.remove_prefix(1);  // '-'
  line = text::Trim(line);
  if (!line.starts_with('{') || !line.ends_with('}')) {
    return ParseError("expected a YAML flow mapping '- {key: value, ...}'");
  }
  Fields fields;
  for (std::string_view item : text::Split(line.substr(1, line.size() - 2), ',')) {
    item = text::Trim(item);
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return ParseError("'" + text::Excerpt(item, 40) + "' is not 'key: value'");
    }
    std::string_view value = text::Trim(item.substr(colon + 1));
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    fields.emplace_back(text::Trim(item.substr(0, colon)), value);
  }
  return fields;
}

// hipblaslt-bench options that take no value.
constexpr std::array<std::string_view, 9> kBenchFlags = {"scaleAlpha_vector",
                                                         "gradient",
                                                         "use_e",
                                                         "bias_vector",
                                                         "flush",
                                                         "grouped_gemm",
                                                         "use_gpu_timer",
                                                         "print_kernel_info",
                                                         "use_user_args"};

StatusOr<Fields> SplitBenchLine(std::string_view line) {
  std::vector<std::string_view> tokens;
  for (std::string_view token : text::Split(line, ' ')) {
    token = text::Trim(token);
    if (!token.empty()) tokens.push_back(token);
  }
  Fields fields;
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view key = tokens[i];
    if (!key.starts_with('-')) {
      return ParseError("unexpected value '" + text::Excerpt(key, 40) + "'");
    }
    key.remove_prefix(key.starts_with("--") ? 2 : 1);
    const bool flag = std::find(kBenchFlags.begin(), kBenchFlags.end(), key) != kBenchFlags.end();
    if (flag || i + 1 >= tokens.size() || tokens[i + 1].starts_with("--")) {
      fields.emplace_back(key, "true");
    } else {
      fields.emplace_back(key, tokens[++i]);
    }
  }
  return fields;
}

Status ParseHipBlasLtProfile(std::string_view text, LogBuilder& builder) {
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    if (line.starts_with('#') || line == "---" || line == "...") return Status::Ok();
    StatusOr<Fields> fields =
        ParseError("not a profile entry ('- {...}') or a hipblaslt-bench line");
    if (line.starts_with('-')) {
      fields = SplitFlowMapping(line);
    } else if (line.starts_with("hipblaslt-bench") ||
               line.find("/hipblaslt-bench ") != std::string_view::npos) {
      fields = SplitBenchLine(line);
    }
    if (!fields.ok()) return builder.Add(fields.status(), number);
    return builder.Add(InterpretHipBlasLt(*fields), number);
  });
}

// ---------------------------------------------------------------------------------------------
// PyTorch TunableOp: "GemmTunableOp_BFloat16_TN,tn_4096_512_8192_ld_8192_8192_4096[,sol[,ms]]",
// params being the BLAS call's (GemmCommon.h Signature()), and "Validator,KEY,VALUE" lines.

// Longest names first: a name that is a prefix of another must come after it.
constexpr std::array<NamedType, 11> kTorchTypes = {{
    {"Float8_e4m3fnuz", std::nullopt},
    {"Float8_e5m2fnuz", std::nullopt},
    {"Float8_e4m3fn", DataType::kF8E4M3},
    {"Float8_e5m2", DataType::kF8E5M2},
    {"BFloat16", DataType::kBF16},
    {"Half", DataType::kF16},
    {"float", DataType::kF32},
    {"tf32", DataType::kTF32},
    {"double", std::nullopt},
    {"c10::complex<float>", std::nullopt},
    {"c10::complex<double>", std::nullopt},
}};

// The torch dtype name `text` starts with, or "".
std::string_view TorchTypePrefix(std::string_view text) {
  for (const NamedType& entry : kTorchTypes) {
    if (text.starts_with(entry.name)) return entry.name;
  }
  return {};
}

struct TunableOpKind {
  std::string_view prefix;  // before "TunableOp_"
  std::string_view epilogue;
};
constexpr std::array<TunableOpKind, 4> kTunableOps = {{
    {"Gemm", ""},
    {"GemmStridedBatched", ""},
    {"GemmAndBias", "bias"},
    {"ScaledGemm", ""},
}};

// The op name: kind, dtypes (1 = a, b and c; 2 = a/b and c; 3 = a, b, c) and the op letters.
StatusOr<LoggedCall> ParseTunableOpName(std::string_view op, std::string* ops_out) {
  const size_t at = op.find("TunableOp_");
  if (at == std::string_view::npos) return ParseError("not a TunableOp name");
  const auto kind =
      std::find_if(kTunableOps.begin(), kTunableOps.end(),
                   [&](const TunableOpKind& k) { return k.prefix == op.substr(0, at); });
  if (kind == kTunableOps.end()) {
    return InvalidArgumentError("op '" + text::Excerpt(op.substr(0, at), 40) +
                                "TunableOp' is not a GEMM kselect reads");
  }
  std::string_view rest = op.substr(at + 10);
  std::vector<DataType> dtypes;
  while (true) {
    const std::string_view name = TorchTypePrefix(rest);
    if (name.empty()) break;
    KSELECT_ASSIGN_OR_RETURN(const DataType type, LookupType(kTorchTypes, name, "dtype"));
    dtypes.push_back(type);
    rest.remove_prefix(name.size());
    if (!rest.starts_with('_'))
      return ParseError("op '" + text::Excerpt(op, 60) + "' has no layout");
    rest.remove_prefix(1);
  }
  if (dtypes.empty() || dtypes.size() > 3 || rest.size() != 2) {
    return ParseError("op '" + text::Excerpt(op, 60) + "' is not <Op>TunableOp_<dtype..>_<layout>");
  }
  OperandTypes types = TypesOfInput(dtypes[0]);
  if (dtypes.size() == 2) types.c = dtypes[1];
  if (dtypes.size() == 3) {
    types.b = dtypes[1];
    types.c = dtypes[2];
  }
  SettleTf32(types);
  *ops_out = std::string(rest);
  LoggedCall call;
  call.gemm.problem.dtype_a = types.a;
  call.gemm.problem.dtype_b = types.b;
  call.gemm.problem.dtype_c = types.c;
  call.gemm.problem.compute = types.compute;
  call.gemm.epilogue = std::string(kind->epilogue);
  return call;
}

// Params: "<ta><tb>_<m>_<n>_<k>[_B_<batch>]_ld_<lda>_<ldb>_<ldc>[_rw_<0|1>_bias_<dtype|None>]".
Status ParseTunableOpParams(std::string_view params, std::string_view op_letters,
                            LoggedCall& call) {
  const std::vector<std::string_view> t = text::Split(params, '_');
  auto bad = [&](std::string_view why) {
    return ParseError("params '" + text::Excerpt(params, 80) + "': " + std::string(why));
  };
  if (t.size() < 8 || t[0].size() != 2)
    return bad("expected <ops>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>");
  KSELECT_ASSIGN_OR_RETURN(const char transa, BlasOp(t[0].substr(0, 1)));
  KSELECT_ASSIGN_OR_RETURN(const char transb, BlasOp(t[0].substr(1, 1)));
  if (transa != std::toupper(static_cast<unsigned char>(op_letters[0])) ||
      transb != std::toupper(static_cast<unsigned char>(op_letters[1]))) {
    return bad("its ops disagree with the op name's " + std::string(op_letters));
  }
  std::vector<int64_t> sizes;
  size_t i = 1;
  int64_t batch = 1;
  for (; i < t.size() && t[i] != "ld"; ++i) {
    if (t[i] == "B" && i + 1 < t.size()) {
      KSELECT_ASSIGN_OR_RETURN(batch, text::ParseInt64(t[++i]));
      continue;
    }
    KSELECT_ASSIGN_OR_RETURN(const int64_t size, text::ParseInt64(t[i]));
    sizes.push_back(size);
  }
  if (sizes.size() == 4) batch = sizes[3];  // older strided-batched signatures
  if (sizes.size() != 3 && sizes.size() != 4) return bad("expected m, n, k before 'ld'");
  if (i + 3 >= t.size()) return bad("expected ld_<lda>_<ldb>_<ldc>");
  int64_t lds[3];
  for (int j = 0; j < 3; ++j) {
    KSELECT_ASSIGN_OR_RETURN(lds[j], text::ParseInt64(t[i + 1 + j]));
  }
  i += 4;
  if (i < t.size()) {
    // ScaledGemm: "rw_<0|1>_bias_<dtype|None>" (the dtype may hold '_').
    if (t.size() < i + 4 || t[i] != "rw" || t[i + 2] != "bias") return bad("unexpected tail");
    if (t[i + 3] != "None") call.gemm.epilogue = "bias";
  }
  KSELECT_ASSIGN_OR_RETURN(LoggedCall made,
                           MakeCall(sizes[0], sizes[1], sizes[2], batch, transa, transb,
                                    {call.gemm.problem.dtype_a, call.gemm.problem.dtype_b,
                                     call.gemm.problem.dtype_c, call.gemm.problem.compute}));
  call.gemm.problem = made.gemm.problem;
  call.gemm.lda = lds[0];
  call.gemm.ldb = lds[1];
  call.gemm.ldc = lds[2];
  return Status::Ok();
}

StatusOr<LoggedCall> ParseTunableOpLine(const std::vector<std::string_view>& fields) {
  if (fields.size() < 2) return ParseError("expected 'op,params[,solution[,ms]]'");
  std::string op_letters;
  KSELECT_ASSIGN_OR_RETURN(LoggedCall call, ParseTunableOpName(text::Trim(fields[0]), &op_letters));
  KSELECT_RETURN_IF_ERROR(ParseTunableOpParams(text::Trim(fields[1]), op_letters, call));
  // Results files name the chosen solution; untuned files may carry "BLAS_PARAMS: ..." instead.
  if (fields.size() >= 3 && !text::Trim(fields[2]).starts_with("BLAS_PARAMS")) {
    call.gemm.logged_algo = std::string(text::Trim(fields[2]));
  }
  return call;
}

Status ParseTunableOpCsv(std::string_view text, LogBuilder& builder) {
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    const std::vector<std::string_view> fields = text::Split(line, ',');
    if (fields[0] == "Validator") {
      // Software versions the file was tuned with: metadata, never GEMMs.
      if (fields.size() >= 3) {
        const size_t value_at = fields[0].size() + fields[1].size() + 2;
        builder.AddMetadata(std::string(fields[1]), std::string(line.substr(value_at)));
      }
      return Status::Ok();
    }
    return builder.Add(ParseTunableOpLine(fields), number);
  });
}

// ---------------------------------------------------------------------------------------------
// kselect's own record mode: {"format": "kselect.problem_record", "problem": {...}, "model": ..}
// per line, each distinct problem once (selector.cpp).

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

Status ParseProblemRecords(std::string_view text, LogBuilder& builder, std::string_view source) {
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    return builder.Add(ParseProblemRecord(line, source, number), number);
  });
}

// ---------------------------------------------------------------------------------------------
// Plain CSV: a header row naming columns, one GEMM per row.

enum class CsvColumn {
  kM,
  kN,
  kK,
  kBatch,
  kTransA,
  kTransB,
  kLayout,
  kDtype,
  kA,
  kB,
  kC,
  kCompute,
  kAlpha,
  kBeta,
  kCalls,
  kLda,
  kLdb,
  kLdc,
  kEpilogue,
  kIgnored
};

struct CsvColumnName {
  std::string_view name;
  CsvColumn column;
};
constexpr std::array<CsvColumnName, 21> kCsvColumns = {{
    {"m", CsvColumn::kM},
    {"n", CsvColumn::kN},
    {"k", CsvColumn::kK},
    {"batch", CsvColumn::kBatch},
    {"transa", CsvColumn::kTransA},
    {"transb", CsvColumn::kTransB},
    {"layout", CsvColumn::kLayout},
    {"dtype", CsvColumn::kDtype},
    {"a", CsvColumn::kA},
    {"b", CsvColumn::kB},
    {"c", CsvColumn::kC},
    {"compute", CsvColumn::kCompute},
    {"alpha", CsvColumn::kAlpha},
    {"beta", CsvColumn::kBeta},
    {"calls", CsvColumn::kCalls},
    {"lda", CsvColumn::kLda},
    {"ldb", CsvColumn::kLdb},
    {"ldc", CsvColumn::kLdc},
    {"epilogue", CsvColumn::kEpilogue},
    // kselect's shape files (shapes/*.csv) read as logs of one call per shape.
    {"regime", CsvColumn::kIgnored},
    {"family", CsvColumn::kIgnored},
}};

std::string CsvColumnList() {
  std::string list;
  for (const CsvColumnName& c : kCsvColumns)
    list += (list.empty() ? "" : ",") + std::string(c.name);
  return list;
}

std::string_view Unquote(std::string_view field) {
  field = text::Trim(field);
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
    field = field.substr(1, field.size() - 2);
  }
  return field;
}

StatusOr<std::vector<CsvColumn>> ReadCsvHeader(std::string_view line) {
  std::vector<CsvColumn> columns;
  for (const std::string_view raw : text::Split(line, ',')) {
    const std::string name = text::ToLower(Unquote(raw));
    const auto it = std::find_if(kCsvColumns.begin(), kCsvColumns.end(),
                                 [&](const CsvColumnName& c) { return c.name == name; });
    if (it == kCsvColumns.end()) {
      return ParseError("unknown column '" + text::Excerpt(name, 40) +
                        "' (known: " + CsvColumnList() + ")");
    }
    if (it->column != CsvColumn::kIgnored &&
        std::find(columns.begin(), columns.end(), it->column) != columns.end()) {
      return ParseError("column '" + name + "' given twice");
    }
    columns.push_back(it->column);
  }
  auto has = [&](CsvColumn c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  if (!has(CsvColumn::kM) || !has(CsvColumn::kN) || !has(CsvColumn::kK)) {
    return ParseError("the header must name columns m, n and k (known: " + CsvColumnList() + ")");
  }
  if (has(CsvColumn::kTransA) != has(CsvColumn::kTransB)) {
    return ParseError("transa and transb go together");
  }
  if (has(CsvColumn::kTransA) && has(CsvColumn::kLayout)) {
    return ParseError("give either transa/transb or layout, not both");
  }
  return columns;
}

StatusOr<LoggedCall> ParseCsvRow(std::string_view line, const std::vector<CsvColumn>& columns) {
  const std::vector<std::string_view> fields = text::Split(line, ',');
  if (fields.size() != columns.size()) {
    return ParseError("expected " + std::to_string(columns.size()) + " fields, got " +
                      std::to_string(fields.size()));
  }
  LoggedCall call;
  GemmProblem& p = call.gemm.problem;
  p.layout = GemmLayout{MatrixOrder::kRowMajor, MatrixOrder::kColMajor, MatrixOrder::kColMajor};
  std::string ops;
  std::optional<OperandTypes> types;
  std::optional<DataType> a, b, c, compute;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string_view value = Unquote(fields[i]);
    const CsvColumn column = columns[i];
    const std::string_view name =
        std::find_if(kCsvColumns.begin(), kCsvColumns.end(), [&](const CsvColumnName& n) {
          return n.column == column;
        })->name;
    auto integer = [&](int64_t& out) -> Status {
      auto parsed = text::ParseInt64(value);
      if (!parsed.ok())
        return ParseError(std::string(name) + ": '" + text::Excerpt(value, 40) +
                          "' is not an integer");
      out = *parsed;
      return Status::Ok();
    };
    auto number = [&](double& out) -> Status {
      auto parsed = text::ParseDouble(value);
      if (!parsed.ok())
        return ParseError(std::string(name) + ": '" + text::Excerpt(value, 40) +
                          "' is not a number");
      out = *parsed;
      return Status::Ok();
    };
    auto dtype = [&](std::optional<DataType>& out) -> Status {
      auto parsed = ParseDataType(text::ToLower(value));
      if (!parsed.ok()) return parsed.status().WithContext(name);
      out = *parsed;
      return Status::Ok();
    };
    switch (column) {
      case CsvColumn::kM:
        KSELECT_RETURN_IF_ERROR(integer(p.m));
        break;
      case CsvColumn::kN:
        KSELECT_RETURN_IF_ERROR(integer(p.n));
        break;
      case CsvColumn::kK:
        KSELECT_RETURN_IF_ERROR(integer(p.k));
        break;
      case CsvColumn::kBatch:
        KSELECT_RETURN_IF_ERROR(integer(p.batch));
        break;
      case CsvColumn::kTransA:
      case CsvColumn::kTransB: {
        KSELECT_ASSIGN_OR_RETURN(const char op, BlasOp(value));
        // Columns may come in any order: A's letter first.
        if (column == CsvColumn::kTransA)
          ops.insert(ops.begin(), op);
        else
          ops.push_back(op);
        break;
      }
      case CsvColumn::kLayout: {
        KSELECT_ASSIGN_OR_RETURN(p.layout, ParseGemmLayout(text::ToLower(value)));
        break;
      }
      case CsvColumn::kDtype: {
        std::optional<DataType> input;
        KSELECT_RETURN_IF_ERROR(dtype(input));
        types = TypesOfInput(*input);
        break;
      }
      case CsvColumn::kA:
        KSELECT_RETURN_IF_ERROR(dtype(a));
        break;
      case CsvColumn::kB:
        KSELECT_RETURN_IF_ERROR(dtype(b));
        break;
      case CsvColumn::kC:
        KSELECT_RETURN_IF_ERROR(dtype(c));
        break;
      case CsvColumn::kCompute:
        KSELECT_RETURN_IF_ERROR(dtype(compute));
        break;
      case CsvColumn::kAlpha:
        KSELECT_RETURN_IF_ERROR(number(p.alpha));
        break;
      case CsvColumn::kBeta:
        KSELECT_RETURN_IF_ERROR(number(p.beta));
        break;
      case CsvColumn::kCalls:
        KSELECT_RETURN_IF_ERROR(integer(call.calls));
        break;
      case CsvColumn::kLda:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.lda));
        break;
      case CsvColumn::kLdb:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.ldb));
        break;
      case CsvColumn::kLdc:
        KSELECT_RETURN_IF_ERROR(integer(call.gemm.ldc));
        break;
      case CsvColumn::kEpilogue:
        if (value != "none") call.gemm.epilogue = std::string(value);
        break;
      case CsvColumn::kIgnored:
        break;
    }
  }
  if (!ops.empty()) {
    KSELECT_ASSIGN_OR_RETURN(p.layout, GemmLayoutFromBlasOps(ops));
  }
  OperandTypes t = types.value_or(OperandTypes{});
  if (a) t.a = *a;
  if (b) t.b = *b;
  if (c) t.c = *c;
  if (compute) t.compute = *compute;
  SettleTf32(t);
  p.dtype_a = t.a;
  p.dtype_b = t.b;
  p.dtype_c = t.c;
  p.compute = t.compute;
  ToColumnMajorC(call.gemm);
  return call;
}

Status ParsePlainCsv(std::string_view text, LogBuilder& builder, std::string_view source) {
  std::optional<std::vector<CsvColumn>> columns;
  return ForEachLine(text, [&](std::string_view line, int64_t number) -> Status {
    if (line.starts_with('#')) return Status::Ok();
    if (!columns) {
      auto header = ReadCsvHeader(line);
      if (!header.ok()) {
        return header.status().WithContext(text::Where(source, number) + ": CSV header");
      }
      columns = std::move(*header);
      return Status::Ok();
    }
    return builder.Add(ParseCsvRow(line, *columns), number);
  });
}

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

bool LooksLikeCsvHeader(std::string_view line) {
  if (line.find(',') == std::string_view::npos) return false;
  for (const std::string_view field : text::Split(line, ',')) {
    const std::string name = text::ToLower(Unquote(field));
    for (const CsvColumnName& c : kCsvColumns) {
      if (c.name == name) return true;
    }
  }
  return false;
}

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
