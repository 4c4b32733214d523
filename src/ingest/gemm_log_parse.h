// The parts the application-log readers share (gemm_log.h): fields of a line, dtype tables,
// the validated call, the builder every reader feeds and one entry point per format. One file
// per format beside it (gemm_log_<format>.cpp); detection, the format table and the summary
// are in gemm_log.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/json_codec.h"
#include "core/text.h"
#include "kselect/gemm_log.h"

namespace kselect::gemm_log {

// One call (or `calls` identical calls) as a line of the log gives it.
struct LoggedCall {
  LoggedGemm gemm;
  int64_t calls = 1;
};

// "key=value" / "key: value" pairs of one line, in order; the first of a repeated key wins.
using Fields = std::vector<std::pair<std::string_view, std::string_view>>;

inline std::optional<std::string_view> Find(const Fields& fields, std::string_view key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return std::nullopt;
}

// The first of `keys` the line has (formats spell some keys two ways: M/m, transa/transA).
inline std::optional<std::string_view> FindAny(const Fields& fields,
                                               std::initializer_list<std::string_view> keys) {
  for (const std::string_view key : keys) {
    if (auto v = Find(fields, key)) return v;
  }
  return std::nullopt;
}

inline StatusOr<int64_t> IntField(const Fields& fields,
                                  std::initializer_list<std::string_view> keys,
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

inline StatusOr<double> NumberField(const Fields& fields, std::string_view key, double fallback) {
  const auto value = Find(fields, key);
  if (!value || value->empty()) return fallback;
  auto parsed = text::ParseDouble(*value);
  if (!parsed.ok()) {
    return ParseError(std::string(key) + ": '" + text::Excerpt(*value, 40) + "' is not a number");
  }
  return *parsed;
}

inline StatusOr<std::string_view> RequiredField(const Fields& fields,
                                                std::initializer_list<std::string_view> keys) {
  const auto value = FindAny(fields, keys);
  if (!value || value->empty()) return ParseError("missing " + std::string(*keys.begin()));
  return *value;
}

// 'N'/'T' (any case; cuBLASLt's OP_N/OP_T/OP_C, conjugation being a transpose for real types).
inline StatusOr<char> BlasOp(std::string_view value) {
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
inline OperandTypes TypesOfInput(DataType input) {
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
inline void SettleTf32(OperandTypes& t) {
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

inline StatusOr<DataType> LookupType(std::span<const NamedType> table, std::string_view name,
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
inline StatusOr<LoggedCall> MakeCall(int64_t m, int64_t n, int64_t k, int64_t batch, char transa,
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
inline void ToColumnMajorC(LoggedGemm& gemm) {
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
      LoggedGemm& known = log_.gemms[index];
      known.calls += call.calls;
      if (gemm.workspace_bytes >= 0 &&
          (known.workspace_bytes < 0 || gemm.workspace_bytes < known.workspace_bytes)) {
        known.workspace_bytes = gemm.workspace_bytes;
      }
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
// The readers, one file each.

// gemm_log_cublaslt.cpp: cuBLASLt API traces (CUBLASLT_LOG_LEVEL=2 or mask 2).
Status ParseCublasLtTrace(std::string_view text, LogBuilder& builder);
// gemm_log_hipblaslt.cpp: hipBLASLt profiles (HIPBLASLT_LOG_MASK=32/64/128).
Status ParseHipBlasLtProfile(std::string_view text, LogBuilder& builder);
// gemm_log_tunableop.cpp: PyTorch TunableOp results CSVs.
Status ParseTunableOpCsv(std::string_view text, LogBuilder& builder);
// gemm_log_record.cpp: kselect record-mode files (kselect.problem_record lines).
Status ParseProblemRecords(std::string_view text, LogBuilder& builder, std::string_view source);
// gemm_log_csv.cpp: a CSV with a header naming columns, one GEMM per row.
Status ParsePlainCsv(std::string_view text, LogBuilder& builder, std::string_view source);
// Whether `line` is a CSV header naming any column the CSV reader knows (format detection).
bool LooksLikeCsvHeader(std::string_view line);

}  // namespace kselect::gemm_log
