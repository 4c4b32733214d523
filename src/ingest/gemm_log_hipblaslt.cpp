// hipBLASLt profile (HIPBLASLT_LOG_MASK=64/128): "- {function: matmul, M: 4096, ...}", and bench
// lines (mask 32): "hipblaslt-bench --api_method c -m 4096 -n 512 ...".
#include "ingest/gemm_log_parse.h"

namespace kselect::gemm_log {
namespace {

using nlohmann::json;

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

}  // namespace

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

}  // namespace kselect::gemm_log
