// PyTorch TunableOp: "GemmTunableOp_BFloat16_TN,tn_4096_512_8192_ld_8192_8192_4096[,sol[,ms]]",
// params being the BLAS call's (GemmCommon.h Signature()), and "Validator,KEY,VALUE" lines.
#include "ingest/gemm_log_parse.h"

namespace kselect::gemm_log {
namespace {

using nlohmann::json;

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

}  // namespace

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

}  // namespace kselect::gemm_log
