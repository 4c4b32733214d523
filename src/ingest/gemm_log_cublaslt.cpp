// cuBLASLt trace (CUBLASLT_LOG_LEVEL=2 or mask 2): "[date][cublasLt][pid][Trace][cublasLtMatmul]
// A=.. Adesc=[type=R_16BF rows=4096 cols=512 ld=4096] .. computeDesc=[..] algo=[..] beta=0 ..".
#include "ingest/gemm_log_parse.h"

namespace kselect::gemm_log {
namespace {

using nlohmann::json;

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
  if (auto workspace = Find(line, "workSpaceSizeInBytes")) {
    auto bytes = text::ParseInt64(*workspace);
    if (bytes.ok() && *bytes >= 0) call.gemm.workspace_bytes = *bytes;
  }
  return call;
}

}  // namespace

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

}  // namespace kselect::gemm_log
