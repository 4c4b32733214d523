#include "providers/cublaslt/cublaslt_provider.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuda/runtime.h"
#include "providers/cublaslt/cublaslt_algo.h"
#include "providers/cublaslt/cublaslt_ids.h"

namespace kselect::cublaslt {
namespace {

// cublasGetStatusName lives in libcublas, which kselect does not link: the names, as data.
std::string CublasText(cublasStatus_t status) {
  struct Row {
    cublasStatus_t status;
    const char* name;
  };
  static constexpr Row kNames[] = {
      {CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED"},
      {CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE"},
      {CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH"},
      {CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED"},
      {CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR"},
  };
  for (const Row& row : kNames) {
    if (row.status == status) return row.name;
  }
  return "cublasStatus " + std::to_string(static_cast<int>(status));
}

// The cuBLASLt enum of each dtype kselect runs; nullopt for those it does not.
std::optional<cudaDataType_t> CudaType(DataType type) {
  switch (type) {
    case DataType::kF32:
      return CUDA_R_32F;
    case DataType::kF16:
      return CUDA_R_16F;
    case DataType::kBF16:
      return CUDA_R_16BF;
    case DataType::kF8E4M3:
      return CUDA_R_8F_E4M3;
    case DataType::kF8E5M2:
      return CUDA_R_8F_E5M2;
    default:
      return std::nullopt;
  }
}

// Owns the descriptors of one GEMM problem: the matmul description and the four layouts.
struct GemmDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cudaDataType_t type_a{}, type_b{}, type_c{};
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;

  GemmDescriptors() = default;
  GemmDescriptors(const GemmDescriptors&) = delete;
  GemmDescriptors& operator=(const GemmDescriptors&) = delete;
  ~GemmDescriptors() {
    for (cublasLtMatrixLayout_t layout : {a, b, c, d}) {
      if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
    }
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

Status Check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string(what) + " failed: " + CublasText(status));
}

Status MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t batch,
                  cublasLtMatrixLayout_t* layout) {
  KSELECT_RETURN_IF_ERROR(
      Check(cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                       static_cast<uint64_t>(cols), rows),
            "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = rows * cols;
    KSELECT_RETURN_IF_ERROR(
        Check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof(count)),
              "set BATCH_COUNT"));
    KSELECT_RETURN_IF_ERROR(
        Check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof(stride)),
              "set STRIDED_BATCH_OFFSET"));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<GemmDescriptors>> BuildDescriptors(const GemmProblem& p) {
  auto desc = std::make_unique<GemmDescriptors>();
  desc->type_a = *CudaType(p.dtype_a);
  desc->type_b = *CudaType(p.dtype_b);
  desc->type_c = *CudaType(p.dtype_c);
  // fp32 operands with tf32 compute are what PyTorch runs with allow_tf32 set.
  desc->compute = p.compute == DataType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KSELECT_RETURN_IF_ERROR(Check(cublasLtMatmulDescCreate(&desc->op, desc->compute, CUDA_R_32F),
                                "cublasLtMatmulDescCreate"));
  // Column-major C; 'T' on A means A is stored k x m column-major (m x k row-major).
  const bool trans_a = p.layout.a == MatrixOrder::kRowMajor;
  const bool trans_b = p.layout.b == MatrixOrder::kRowMajor;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  KSELECT_RETURN_IF_ERROR(Check(
      cublasLtMatmulDescSetAttribute(desc->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
      "set TRANSA"));
  KSELECT_RETURN_IF_ERROR(Check(
      cublasLtMatmulDescSetAttribute(desc->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
      "set TRANSB"));
  KSELECT_RETURN_IF_ERROR(
      MakeLayout(desc->type_a, trans_a ? p.k : p.m, trans_a ? p.m : p.k, p.batch, &desc->a));
  KSELECT_RETURN_IF_ERROR(
      MakeLayout(desc->type_b, trans_b ? p.n : p.k, trans_b ? p.k : p.n, p.batch, &desc->b));
  KSELECT_RETURN_IF_ERROR(MakeLayout(desc->type_c, p.m, p.n, p.batch, &desc->c));
  KSELECT_RETURN_IF_ERROR(MakeLayout(desc->type_c, p.m, p.n, p.batch, &desc->d));
  return desc;
}

template <typename T>
Status SetConfigAttribute(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr,
                          T value, const char* name) {
  const cublasStatus_t status =
      cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value));
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return CannotImplementError(std::string("cuBLASLt refused ") + name + "=" +
                              std::to_string(value) + ": " + CublasText(status));
}

// Writes every typed field of `config` into an initialised algo.
Status ApplyConfig(const CublasLtConfig& c, cublasLtMatmulAlgo_t& algo) {
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                             static_cast<uint32_t>(c.tile_id), "tile_id"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                             static_cast<uint32_t>(c.stages_id), "stages_id"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             static_cast<int32_t>(c.split_k), "split_k"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                             static_cast<uint32_t>(c.reduction_scheme),
                                             "reduction_scheme"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
                                             static_cast<uint32_t>(c.swizzle), "swizzle"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION,
                                             static_cast<uint32_t>(c.custom_option),
                                             "custom_option"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID,
                                             static_cast<uint16_t>(c.inner_shape_id),
                                             "inner_shape_id"));
  KSELECT_RETURN_IF_ERROR(SetConfigAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                             static_cast<uint16_t>(c.cluster_shape_id),
                                             "cluster_shape_id"));
  return Status::Ok();
}

template <typename T>
T ReadConfigAttribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return value;
}

CublasLtConfig ReadAlgoConfig(const cublasLtMatmulAlgo_t& algo) {
  CublasLtConfig c;
  c.algo_id = ReadConfigAttribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile_id =
      static_cast<int32_t>(ReadConfigAttribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
  c.stages_id =
      static_cast<int32_t>(ReadConfigAttribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  c.split_k = ReadConfigAttribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  if (c.split_k < 1) c.split_k = 1;
  c.reduction_scheme = static_cast<int32_t>(
      ReadConfigAttribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  c.swizzle =
      static_cast<int32_t>(ReadConfigAttribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  c.custom_option =
      static_cast<int32_t>(ReadConfigAttribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  c.inner_shape_id = static_cast<int32_t>(
      ReadConfigAttribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID));
  c.cluster_shape_id = static_cast<int32_t>(
      ReadConfigAttribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
  FillDecodedFields(c);
  return c;
}

// An algo's capability arrays and flags (AlgoCapGetAttribute).
struct AlgoCaps {
  std::vector<uint32_t> tiles, stages;
  int32_t splitk_support = 0;
  uint32_t reduction_mask = 0;
  uint32_t swizzle_support = 0;
  int32_t custom_option_max = 0;
};

std::vector<uint32_t> CapArray(const cublasLtMatmulAlgo_t& algo,
                               cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  std::vector<uint32_t> values(bytes / sizeof(uint32_t));
  if (values.empty()) return {};
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, values.data(), bytes, &written);
  return values;
}

template <typename T>
T CapValue(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return value;
}

AlgoCaps ReadCaps(const cublasLtMatmulAlgo_t& algo) {
  AlgoCaps caps;
  caps.tiles = CapArray(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
  caps.stages = CapArray(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
  caps.splitk_support = CapValue<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT);
  caps.reduction_mask = CapValue<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
  caps.swizzle_support = CapValue<uint32_t>(algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT);
  caps.custom_option_max = CapValue<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
  if (caps.tiles.empty()) caps.tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
  if (caps.stages.empty()) caps.stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
  return caps;
}

// The config fields that vary inside one (algo, tile, stages, cluster, custom option) family.
constexpr std::string_view kVariantFieldNames[] = {"split_k", "reduction_scheme", "swizzle"};
constexpr std::span<const std::string_view> kVariantFields(kVariantFieldNames);

// Enumerate, CanImplement and the heuristic run with cuBLASLt's default alignment preferences
// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES = 256), so the configs they accept may assume
// 256-byte aligned operands (cudaMalloc's alignment).
constexpr int64_t kOperandAlignment = 256;

class PreparedGemm final : public PreparedKernel {
 public:
  PreparedGemm(cublasLtHandle_t handle, std::unique_ptr<GemmDescriptors> desc,
               cublasLtMatmulAlgo_t algo, int64_t workspace, float alpha, float beta,
               std::vector<OperandSpec> operands)
      : operands_(std::move(operands)),
        handle_(handle),
        desc_(std::move(desc)),
        algo_(algo),
        workspace_(workspace),
        alpha_(alpha),
        beta_(beta) {}

  int64_t WorkspaceBytes() const override { return workspace_; }

  Status Launch(const KernelOperands& o, void* stream) override {
    KSELECT_RETURN_IF_ERROR(CheckOperands(operands_, o, workspace_));
    // Operands are A, B and C (GemmOperandSpecs); C is updated in place, so it is both the
    // matmul's input C and its output D.
    void* c = o.buffers[2];
    const cublasStatus_t status =
        cublasLtMatmul(handle_, desc_->op, &alpha_, o.buffers[0], desc_->a, o.buffers[1], desc_->b,
                       &beta_, c, desc_->c, c, desc_->d, &algo_, o.workspace,
                       static_cast<size_t>(o.workspace_bytes), static_cast<cudaStream_t>(stream));
    if (status != CUBLAS_STATUS_SUCCESS)
      return InternalError("cublasLtMatmul failed: " + CublasText(status));
    return Status::Ok();
  }

 private:
  std::vector<OperandSpec> operands_;
  cublasLtHandle_t handle_;
  std::unique_ptr<GemmDescriptors> desc_;
  cublasLtMatmulAlgo_t algo_;
  int64_t workspace_;
  float alpha_, beta_;
};

class CublasLtProvider final : public KernelProvider {
 public:
  explicit CublasLtProvider(const ProviderOptions& options) : options_(options) {}
  ~CublasLtProvider() override {
    if (handle_ != nullptr) cublasLtDestroy(handle_);
  }

  Provider id() const override { return Provider::kCublasLt; }
  std::string version() const override {
    const size_t v = cublasLtGetVersion();  // 130100 = 13.1.0
    return "cublaslt " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }
  bool SupportsProblem(const Problem& problem) const override {
    return CublasLtSupportsProblem(problem);
  }

  StatusOr<std::vector<KernelConfig>> Enumerate(const Problem& problem,
                                                const ConfigFilter& keep) override {
    KSELECT_ASSIGN_OR_RETURN(const GemmProblem* p, Gemm(problem));
    KSELECT_RETURN_IF_ERROR(EnsureHandle());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<GemmDescriptors> desc, BuildDescriptors(*p));
    std::vector<int> ids(4096);
    int count = 0;
    KSELECT_RETURN_IF_ERROR(
        Check(cublasLtMatmulAlgoGetIds(handle_, desc->compute, CUDA_R_32F, desc->type_a,
                                       desc->type_b, desc->type_c, desc->type_c,
                                       static_cast<int>(ids.size()), ids.data(), &count),
              "cublasLtMatmulAlgoGetIds"));
    ids.resize(static_cast<size_t>(count));
    const std::vector<int32_t> explicit_clusters = ExplicitClusterShapeIds();
    std::vector<KernelConfig> out;
    for (const int algo_id : ids) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(handle_, desc->compute, CUDA_R_32F, desc->type_a, desc->type_b,
                                 desc->type_c, desc->type_c, algo_id,
                                 &algo) != CUBLAS_STATUS_SUCCESS) {
        continue;
      }
      const AlgoCaps caps = ReadCaps(algo);
      CublasLtConfig base;
      base.algo_id = algo_id;
      // Algos that pass with the AUTO cluster shape take no explicit one; Hopper's CUTLASS-3
      // algos (66/67) pass only with explicit shapes, so for those every shape is tried.
      bool accepts_auto = false;
      for (const uint32_t tile : caps.tiles) {
        for (const uint32_t stages : caps.stages) {
          CublasLtConfig c = base;
          c.tile_id = static_cast<int32_t>(tile);
          c.stages_id = static_cast<int32_t>(stages);
          if (Passes(*desc, algo, c)) accepts_auto = true;
          if (accepts_auto) break;
        }
        if (accepts_auto) break;
      }
      const std::vector<int32_t> clusters =
          accepts_auto ? std::vector<int32_t>{0} : explicit_clusters;
      std::vector<std::pair<int32_t, int32_t>> splits = {{1, 0}};  // (split_k, reduction scheme)
      if (caps.splitk_support != 0) {
        for (const int32_t split : kSplitKCandidates) {
          for (const uint32_t scheme :
               {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}) {
            if ((caps.reduction_mask & scheme) != 0)
              splits.emplace_back(split, static_cast<int32_t>(scheme));
          }
        }
      }
      const int32_t swizzles = caps.swizzle_support != 0 ? 2 : 1;
      for (const uint32_t tile : caps.tiles) {
        for (const uint32_t stages : caps.stages) {
          for (const int32_t cluster : clusters) {
            for (int32_t custom = 0; custom <= caps.custom_option_max; ++custom) {
              CublasLtConfig c = base;
              c.tile_id = static_cast<int32_t>(tile);
              c.stages_id = static_cast<int32_t>(stages);
              c.cluster_shape_id = cluster;
              c.custom_option = custom;
              // Drop the whole family before any device check when no split/swizzle variant
              // of it can be wanted: this keeps a small catalogue's enumeration to a few checks.
              FillDecodedFields(c);
              if (keep.may_keep && !keep.may_keep(KernelConfig(c), kVariantFields)) continue;
              // Split-K and swizzle variants are only tried on a (tile, stages, cluster, custom)
              // whose plain form passes: a kernel that cannot run unsplit is not made runnable
              // by splitting K (this keeps enumeration to seconds). The family check comes
              // before the per-variant filter: most families fail it, and asking the filter
              // about all ~56 variants of every family cost minutes on the full space.
              if (!Passes(*desc, algo, c)) continue;
              // The variants the caller wants, decoded so the filter sees every field.
              std::vector<CublasLtConfig> variants;
              for (int32_t swizzle = 0; swizzle < swizzles; ++swizzle) {
                for (const auto& [split, scheme] : splits) {
                  CublasLtConfig v = c;
                  v.swizzle = swizzle;
                  v.split_k = split;
                  v.reduction_scheme = scheme;
                  FillDecodedFields(v);
                  if (keep.empty() || keep.keep(KernelConfig(v))) variants.push_back(v);
                }
              }
              for (const CublasLtConfig& v : variants) {
                if (!(v.swizzle == 0 && v.split_k == 1) && !Passes(*desc, algo, v)) continue;
                out.emplace_back(v);
              }
            }
          }
        }
      }
    }
    return out;
  }

  Status CanImplement(const Problem& problem, const KernelConfig& config) override {
    return WorkspaceBytes(problem, config).status();
  }

  StatusOr<int64_t> WorkspaceBytes(const Problem& problem, const KernelConfig& config) override {
    KSELECT_ASSIGN_OR_RETURN(const GemmProblem* p, Gemm(problem));
    KSELECT_ASSIGN_OR_RETURN(const CublasLtConfig* c, Config(config));
    KSELECT_RETURN_IF_ERROR(EnsureHandle());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<GemmDescriptors> desc, BuildDescriptors(*p));
    KSELECT_ASSIGN_OR_RETURN(cublasLtMatmulAlgo_t algo, InitAlgo(*desc, *c));
    return CheckedWorkspace(*desc, algo);
  }

  StatusOr<std::unique_ptr<PreparedKernel>> Prepare(const Problem& problem,
                                                    const KernelConfig& config) override {
    KSELECT_ASSIGN_OR_RETURN(const GemmProblem* p, Gemm(problem));
    KSELECT_ASSIGN_OR_RETURN(const CublasLtConfig* c, Config(config));
    KSELECT_RETURN_IF_ERROR(EnsureHandle());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<GemmDescriptors> desc, BuildDescriptors(*p));
    KSELECT_ASSIGN_OR_RETURN(cublasLtMatmulAlgo_t algo, InitAlgo(*desc, *c));
    KSELECT_ASSIGN_OR_RETURN(int64_t workspace, CheckedWorkspace(*desc, algo));
    return std::unique_ptr<PreparedKernel>(std::make_unique<PreparedGemm>(
        handle_, std::move(desc), algo, workspace, static_cast<float>(p->alpha),
        static_cast<float>(p->beta), GemmOperandSpecs(*p, kOperandAlignment)));
  }

  StatusOr<std::vector<OperandSpec>> Operands(const Problem& problem) const override {
    KSELECT_ASSIGN_OR_RETURN(const GemmProblem* p, Gemm(problem));
    return GemmOperandSpecs(*p, kOperandAlignment);
  }

  StatusOr<std::vector<KernelConfig>> HeuristicPicks(const Problem& problem, int count) override {
    KSELECT_ASSIGN_OR_RETURN(const GemmProblem* p, Gemm(problem));
    KSELECT_RETURN_IF_ERROR(EnsureHandle());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<GemmDescriptors> desc, BuildDescriptors(*p));
    cublasLtMatmulPreference_t preference = nullptr;
    KSELECT_RETURN_IF_ERROR(
        Check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate"));
    const uint64_t limit = static_cast<uint64_t>(options_.max_workspace_bytes);
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &limit, sizeof(limit));
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
    int returned = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle_, desc->op, desc->a, desc->b, desc->c, desc->d,
                                       preference, count, results.data(), &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    std::vector<KernelConfig> picks;
    if (status == CUBLAS_STATUS_NOT_SUPPORTED) return picks;
    KSELECT_RETURN_IF_ERROR(Check(status, "cublasLtMatmulAlgoGetHeuristic"));
    for (int i = 0; i < returned; ++i) {
      if (results[static_cast<size_t>(i)].state != CUBLAS_STATUS_SUCCESS) continue;
      picks.emplace_back(ReadAlgoConfig(results[static_cast<size_t>(i)].algo));
    }
    return picks;
  }

 private:
  Status EnsureHandle() {
    if (handle_ != nullptr) return Status::Ok();
    if (!handle_status_.ok()) return handle_status_;
    const cudaError_t error = cudaSetDevice(options_.device);
    if (error != cudaSuccess) {
      handle_status_ = UnavailableError("cuBLASLt needs a GPU: " + cuda::NoDeviceText(error) +
                                        " (cudaSetDevice(" + std::to_string(options_.device) +
                                        "): " + cudaGetErrorName(error) + ")");
      return handle_status_;
    }
    const cublasStatus_t status = cublasLtCreate(&handle_);
    if (status != CUBLAS_STATUS_SUCCESS) {
      handle_ = nullptr;
      handle_status_ = UnavailableError("cublasLtCreate failed: " + CublasText(status));
    }
    return handle_status_;
  }

  static StatusOr<const GemmProblem*> Gemm(const Problem& problem) {
    if (!CublasLtSupportsProblem(problem)) {
      return CannotImplementError("cuBLASLt provider does not run " + ProblemToString(problem));
    }
    return &std::get<GemmProblem>(problem);
  }

  static StatusOr<const CublasLtConfig*> Config(const KernelConfig& config) {
    if (!std::holds_alternative<CublasLtConfig>(config)) {
      return InvalidArgumentError("not a cuBLASLt config: " + DescribeConfig(config));
    }
    return &std::get<CublasLtConfig>(config);
  }

  StatusOr<cublasLtMatmulAlgo_t> InitAlgo(const GemmDescriptors& desc, const CublasLtConfig& c) {
    cublasLtMatmulAlgo_t algo;
    const cublasStatus_t status =
        cublasLtMatmulAlgoInit(handle_, desc.compute, CUDA_R_32F, desc.type_a, desc.type_b,
                               desc.type_c, desc.type_c, c.algo_id, &algo);
    if (status != CUBLAS_STATUS_SUCCESS) {
      return CannotImplementError("algo " + std::to_string(c.algo_id) +
                                  " does not exist for these types: " + CublasText(status));
    }
    KSELECT_RETURN_IF_ERROR(ApplyConfig(c, algo));
    return algo;
  }

  StatusOr<int64_t> CheckedWorkspace(const GemmDescriptors& desc,
                                     const cublasLtMatmulAlgo_t& algo) {
    cublasLtMatmulHeuristicResult_t result{};
    const cublasStatus_t status =
        cublasLtMatmulAlgoCheck(handle_, desc.op, desc.a, desc.b, desc.c, desc.d, &algo, &result);
    if (status != CUBLAS_STATUS_SUCCESS) {
      return CannotImplementError("cublasLtMatmulAlgoCheck: " + CublasText(status));
    }
    if (static_cast<int64_t>(result.workspaceSize) > options_.max_workspace_bytes) {
      return CannotImplementError("needs " + std::to_string(result.workspaceSize) +
                                  " bytes of workspace, over the limit of " +
                                  std::to_string(options_.max_workspace_bytes));
    }
    return static_cast<int64_t>(result.workspaceSize);
  }

  // The fast form of CanImplement used while enumerating (algo already initialised).
  bool Passes(const GemmDescriptors& desc, cublasLtMatmulAlgo_t algo, const CublasLtConfig& c) {
    if (!ApplyConfig(c, algo).ok()) return false;
    cublasLtMatmulHeuristicResult_t result{};
    if (cublasLtMatmulAlgoCheck(handle_, desc.op, desc.a, desc.b, desc.c, desc.d, &algo, &result) !=
        CUBLAS_STATUS_SUCCESS) {
      return false;
    }
    return static_cast<int64_t>(result.workspaceSize) <= options_.max_workspace_bytes;
  }

  ProviderOptions options_;
  cublasLtHandle_t handle_ = nullptr;
  Status handle_status_;
};

}  // namespace

StatusOr<cublasLtMatmulAlgo_t> InitAlgoForConfig(cublasLtHandle_t handle,
                                                 cublasComputeType_t compute, cudaDataType_t scale,
                                                 cudaDataType_t a, cudaDataType_t b,
                                                 cudaDataType_t c, cudaDataType_t d,
                                                 const CublasLtConfig& config) {
  cublasLtMatmulAlgo_t algo;
  const cublasStatus_t status =
      cublasLtMatmulAlgoInit(handle, compute, scale, a, b, c, d, config.algo_id, &algo);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CannotImplementError("algo " + std::to_string(config.algo_id) +
                                " does not exist for these types: " + CublasText(status));
  }
  KSELECT_RETURN_IF_ERROR(ApplyConfig(config, algo));
  return algo;
}

CublasLtConfig ConfigOfAlgo(const cublasLtMatmulAlgo_t& algo) {
  return ReadAlgoConfig(algo);
}

std::optional<DataType> DataTypeOfCuda(cudaDataType_t type) {
  for (const DataType t :
       {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF8E4M3, DataType::kF8E5M2}) {
    if (CudaType(t) == type) return t;
  }
  return std::nullopt;
}

std::string CublasStatusText(cublasStatus_t status) {
  return CublasText(status);
}

bool CublasLtSupportsProblem(const Problem& problem) {
  const GemmProblem* p = std::get_if<GemmProblem>(&problem);
  if (p == nullptr || !p->Validate().ok()) return false;
  if (p->layout.c != MatrixOrder::kColMajor) return false;
  const bool tn = p->layout.a == MatrixOrder::kRowMajor && p->layout.b == MatrixOrder::kColMajor;
  if (p->dtype_a == DataType::kF32) {
    // fp32 GEMMs as applications call them (rotary tables, fp32 heads): fp32 or tf32 compute.
    return p->dtype_b == DataType::kF32 && p->dtype_c == DataType::kF32 &&
           (p->compute == DataType::kF32 || p->compute == DataType::kTF32);
  }
  if (p->compute != DataType::kF32) return false;
  if (p->dtype_a == DataType::kBF16 || p->dtype_a == DataType::kF16) {
    return p->dtype_b == p->dtype_a && p->dtype_c == p->dtype_a;
  }
  if (p->dtype_a == DataType::kF8E4M3) {
    return tn && p->dtype_b == DataType::kF8E4M3 &&
           (p->dtype_c == DataType::kBF16 || p->dtype_c == DataType::kF16);
  }
  return false;
}

std::unique_ptr<KernelProvider> CreateCublasLtProvider(const ProviderOptions& options) {
  return std::make_unique<CublasLtProvider>(options);
}

}  // namespace kselect::cublaslt
