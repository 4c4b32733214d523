#include "layer/blas_call.h"

#include <cmath>
#include <cstring>

#include "providers/cublaslt/cublaslt_algo.h"

namespace kselect::layer {

std::array<uint64_t, 18> BlasCall::Words() const {
  return {reinterpret_cast<uintptr_t>(handle),
          static_cast<uint64_t>(trans_a),
          static_cast<uint64_t>(trans_b),
          static_cast<uint64_t>(m),
          static_cast<uint64_t>(n),
          static_cast<uint64_t>(k),
          static_cast<uint64_t>(type_a),
          static_cast<uint64_t>(type_b),
          static_cast<uint64_t>(type_c),
          static_cast<uint64_t>(lda),
          static_cast<uint64_t>(ldb),
          static_cast<uint64_t>(ldc),
          static_cast<uint64_t>(stride_a),
          static_cast<uint64_t>(stride_b),
          static_cast<uint64_t>(stride_c),
          static_cast<uint64_t>(batch),
          static_cast<uint64_t>(compute),
          static_cast<uint64_t>(pointer_mode)};
}

size_t BlasCallHash::operator()(const BlasCall& call) const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const uint64_t w : call.Words()) h = (h ^ w) * 0xff51afd7ed558ccdull;
  return static_cast<size_t>(h ^ (h >> 29));
}

bool operator==(const BlasCall& a, const BlasCall& b) {
  return a.Words() == b.Words();
}

StatusOr<LtCall> ReadBlasCall(const BlasCall& call, const void* alpha, const void* beta) {
  LtCall out;
  GemmProblem& p = out.problem;
  // cublasGemmEx also takes a cudaDataType_t as the compute type (the legacy form): CUDA_R_32F
  // means fp32 accumulation there.
  if (call.compute == CUBLAS_COMPUTE_32F || call.compute == CUDA_R_32F) {
    out.compute_type = CUBLAS_COMPUTE_32F;
    p.compute = DataType::kF32;
  } else if (call.compute == CUBLAS_COMPUTE_32F_FAST_TF32) {
    out.compute_type = CUBLAS_COMPUTE_32F_FAST_TF32;
    p.compute = DataType::kTF32;
  } else {
    return CannotImplementError("compute type " + std::to_string(call.compute) +
                                " (kselect runs fp32 accumulation)");
  }
  if (call.pointer_mode != CUBLAS_POINTER_MODE_HOST) {
    return CannotImplementError("alpha and beta are not host scalars (pointer mode " +
                                std::to_string(call.pointer_mode) + ")");
  }
  for (const auto& [type, slot, name] :
       {std::tuple{call.type_a, &p.dtype_a, "A"}, std::tuple{call.type_b, &p.dtype_b, "B"},
        std::tuple{call.type_c, &p.dtype_c, "C"}}) {
    const auto t = cublaslt::DataTypeOfCuda(type);
    if (!t) {
      return CannotImplementError(std::string(name) + " has data type " +
                                  std::to_string(static_cast<int>(type)) +
                                  ", which kselect does not run");
    }
    *slot = *t;
  }
  if ((call.trans_a != CUBLAS_OP_N && call.trans_a != CUBLAS_OP_T) ||
      (call.trans_b != CUBLAS_OP_N && call.trans_b != CUBLAS_OP_T)) {
    return CannotImplementError("an operand is neither N nor T");
  }
  const bool ta = call.trans_a == CUBLAS_OP_T, tb = call.trans_b == CUBLAS_OP_T;
  p.m = call.m;
  p.n = call.n;
  p.k = call.k;
  p.batch = call.batch;
  if (call.m <= 0 || call.n <= 0 || call.k <= 0 || call.batch < 1 ||
      call.lda < (ta ? call.k : call.m) || call.ldb < (tb ? call.n : call.k) || call.ldc < call.m) {
    return CannotImplementError("sizes kselect does not run (m " + std::to_string(call.m) + ", n " +
                                std::to_string(call.n) + ", k " + std::to_string(call.k) +
                                ", lda " + std::to_string(call.lda) + ", ldb " +
                                std::to_string(call.ldb) + ", ldc " + std::to_string(call.ldc) +
                                ")");
  }
  p.layout.a = ta ? MatrixOrder::kRowMajor : MatrixOrder::kColMajor;
  p.layout.b = tb ? MatrixOrder::kRowMajor : MatrixOrder::kColMajor;
  p.layout.c = MatrixOrder::kColMajor;
  // The scalars have the scale type: fp32 for fp32 accumulation (cuBLAS's rule for GemmEx).
  KSELECT_RETURN_IF_ERROR(ReadHostScalars(alpha, beta, p));
  KSELECT_RETURN_IF_ERROR(p.Validate());
  out.lda = call.lda;
  out.ldb = call.ldb;
  out.ldc = out.ldd = call.ldc;
  out.scale_type = CUDA_R_32F;
  out.type_a = call.type_a;
  out.type_b = call.type_b;
  out.type_c = out.type_d = call.type_c;
  return out;
}

LtDescriptors::~LtDescriptors() {
  for (cublasLtMatrixLayout_t layout : {a, b, c}) {
    if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
  }
  if (op != nullptr) cublasLtMatmulDescDestroy(op);
}

namespace {

Status Lt(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return CannotImplementError(std::string(what) + ": " + cublaslt::CublasStatusText(status));
}

Status MakeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                  int64_t stride, cublasLtMatrixLayout_t* layout) {
  KSELECT_RETURN_IF_ERROR(Lt(cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                                        static_cast<uint64_t>(cols), ld),
                             "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    KSELECT_RETURN_IF_ERROR(
        Lt(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count)),
           "set BATCH_COUNT"));
    KSELECT_RETURN_IF_ERROR(
        Lt(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                            &stride, sizeof(stride)),
           "set STRIDED_BATCH_OFFSET"));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<LtDescriptors>> MakeLtDescriptors(const BlasCall& call,
                                                           const LtCall& read) {
  auto desc = std::make_shared<LtDescriptors>();
  KSELECT_RETURN_IF_ERROR(Lt(cublasLtMatmulDescCreate(&desc->op, read.compute_type, CUDA_R_32F),
                             "cublasLtMatmulDescCreate"));
  KSELECT_RETURN_IF_ERROR(Lt(cublasLtMatmulDescSetAttribute(desc->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                            &call.trans_a, sizeof(call.trans_a)),
                             "set TRANSA"));
  KSELECT_RETURN_IF_ERROR(Lt(cublasLtMatmulDescSetAttribute(desc->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                            &call.trans_b, sizeof(call.trans_b)),
                             "set TRANSB"));
  const bool ta = call.trans_a == CUBLAS_OP_T, tb = call.trans_b == CUBLAS_OP_T;
  KSELECT_RETURN_IF_ERROR(MakeLayout(call.type_a, ta ? call.k : call.m, ta ? call.m : call.k,
                                     call.lda, call.batch, call.stride_a, &desc->a));
  KSELECT_RETURN_IF_ERROR(MakeLayout(call.type_b, tb ? call.n : call.k, tb ? call.k : call.n,
                                     call.ldb, call.batch, call.stride_b, &desc->b));
  KSELECT_RETURN_IF_ERROR(
      MakeLayout(call.type_c, call.m, call.n, call.ldc, call.batch, call.stride_c, &desc->c));
  return desc;
}

}  // namespace kselect::layer
