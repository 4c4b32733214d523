#include "layer/lt_call.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "providers/cublaslt/cublaslt_algo.h"

namespace kselect::layer {
namespace {

template <typename T>
StatusOr<T> DescAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                          const char* name) {
  T value{};
  size_t written = 0;
  const cublasStatus_t status =
      cublasLtMatmulDescGetAttribute(desc, attr, &value, sizeof(value), &written);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CannotImplementError(std::string("cannot read the matmul descriptor's ") + name + ": " +
                                cublaslt::CublasStatusText(status));
  }
  return value;
}

template <typename T>
StatusOr<T> LayoutAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                            const char* name) {
  T value{};
  size_t written = 0;
  const cublasStatus_t status =
      cublasLtMatrixLayoutGetAttribute(layout, attr, &value, sizeof(value), &written);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CannotImplementError(std::string("cannot read a layout's ") + name + ": " +
                                cublaslt::CublasStatusText(status));
  }
  return value;
}

struct Layout {
  cudaDataType_t type{};
  int64_t rows = 0, cols = 0, ld = 0, batch = 1, stride = 0;
};

StatusOr<Layout> ReadLayout(cublasLtMatrixLayout_t layout, const char* which) {
  if (layout == nullptr) return CannotImplementError(std::string("no layout for ") + which);
  Layout out;
  KSELECT_ASSIGN_OR_RETURN(const uint32_t type,
                           LayoutAttribute<uint32_t>(layout, CUBLASLT_MATRIX_LAYOUT_TYPE, "type"));
  out.type = static_cast<cudaDataType_t>(type);
  KSELECT_ASSIGN_OR_RETURN(const int32_t order,
                           LayoutAttribute<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, "order"));
  if (order != CUBLASLT_ORDER_COL) {
    return CannotImplementError(std::string(which) + " is not in column order (order " +
                                std::to_string(order) + ")");
  }
  KSELECT_ASSIGN_OR_RETURN(const uint64_t rows,
                           LayoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_ROWS, "rows"));
  KSELECT_ASSIGN_OR_RETURN(const uint64_t cols,
                           LayoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_COLS, "cols"));
  KSELECT_ASSIGN_OR_RETURN(const int64_t ld,
                           LayoutAttribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_LD, "ld"));
  KSELECT_ASSIGN_OR_RETURN(
      const int32_t batch,
      LayoutAttribute<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, "batch count"));
  KSELECT_ASSIGN_OR_RETURN(
      const int64_t stride,
      LayoutAttribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                               "batch stride"));
  constexpr uint64_t kMaxDim = uint64_t{1} << 40;
  if (rows == 0 || cols == 0 || rows > kMaxDim || cols > kMaxDim || batch < 1 ||
      ld < static_cast<int64_t>(rows)) {
    return CannotImplementError(std::string(which) + " has sizes kselect does not run (rows " +
                                std::to_string(rows) + ", cols " + std::to_string(cols) + ", ld " +
                                std::to_string(ld) + ", batch " + std::to_string(batch) + ")");
  }
  out.rows = static_cast<int64_t>(rows);
  out.cols = static_cast<int64_t>(cols);
  out.ld = ld;
  out.batch = batch;
  out.stride = stride;
  return out;
}

StatusOr<DataType> KselectType(cudaDataType_t type, const char* which) {
  const std::optional<DataType> t = cublaslt::DataTypeOfCuda(type);
  if (!t) {
    return CannotImplementError(std::string(which) + " has data type " +
                                std::to_string(static_cast<int>(type)) +
                                ", which kselect does not run");
  }
  return *t;
}

StatusOr<cublasOperation_t> Op(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                               const char* name) {
  KSELECT_ASSIGN_OR_RETURN(const int32_t op, DescAttribute<int32_t>(desc, attr, name));
  if (op != CUBLAS_OP_N && op != CUBLAS_OP_T) {
    return CannotImplementError(std::string(name) + " is neither N nor T (" + std::to_string(op) +
                                ")");
  }
  return static_cast<cublasOperation_t>(op);
}

// An attribute's value as one key word (0 where it cannot be read).
template <typename T>
uint64_t DescWord(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulDescGetAttribute(desc, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS) {
    return ~uint64_t{0};
  }
  if constexpr (std::is_pointer_v<T>) {
    return value != nullptr ? 1 : 0;
  } else {
    return static_cast<uint64_t>(value);
  }
}

template <typename T>
uint64_t LayoutWord(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr) {
  T value{};
  size_t written = 0;
  if (cublasLtMatrixLayoutGetAttribute(layout, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS) {
    return ~uint64_t{0};
  }
  return static_cast<uint64_t>(value);
}

}  // namespace

LtCallKey LtCallKey::Of(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                        cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d) {
  LtCallKey key;
  uint64_t* w = key.words.data();
  *w++ = reinterpret_cast<uintptr_t>(handle);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSA);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSB);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_TRANSC);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_FILL_MODE);
  *w++ = DescWord<uint32_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE);
  *w++ = DescWord<int32_t>(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
  *w++ = DescWord<int8_t>(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER);
  *w++ = DescWord<const void*>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
  static_assert(kDescWords == 16);
  const uint64_t* c_words = nullptr;
  for (cublasLtMatrixLayout_t layout : {a, b, c, d}) {
    if (layout == d && d == c && c_words != nullptr) {  // C and D are often one descriptor
      std::copy(c_words, c_words + kLayoutWords, w);
      w += kLayoutWords;
      continue;
    }
    if (layout == c) c_words = w;
    *w++ = LayoutWord<uint32_t>(layout, CUBLASLT_MATRIX_LAYOUT_TYPE);
    *w++ = LayoutWord<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_ORDER);
    *w++ = LayoutWord<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_ROWS);
    *w++ = LayoutWord<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_COLS);
    *w++ = LayoutWord<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_LD);
    *w++ = LayoutWord<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
    *w++ = LayoutWord<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
  }
  return key;
}

StatusOr<LtCall> ReadLtCall(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, const void* alpha, const void* beta) {
  if (desc == nullptr) return CannotImplementError("no matmul descriptor");
  LtCall call;
  KSELECT_ASSIGN_OR_RETURN(
      const int32_t compute,
      DescAttribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, "compute type"));
  call.compute_type = static_cast<cublasComputeType_t>(compute);
  if (call.compute_type == CUBLAS_COMPUTE_32F) {
    call.problem.compute = DataType::kF32;
  } else if (call.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32) {
    call.problem.compute = DataType::kTF32;
  } else {
    return CannotImplementError("compute type " + std::to_string(compute) +
                                " (kselect runs fp32 accumulation)");
  }
  KSELECT_ASSIGN_OR_RETURN(
      const int32_t scale,
      DescAttribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, "scale type"));
  call.scale_type = static_cast<cudaDataType_t>(scale);
  if (call.scale_type != CUDA_R_32F) {
    return CannotImplementError("scale type " + std::to_string(scale) + " (kselect reads fp32)");
  }
  KSELECT_ASSIGN_OR_RETURN(
      const int32_t pointer_mode,
      DescAttribute<int32_t>(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, "pointer mode"));
  if (pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
    return CannotImplementError("alpha and beta are not host scalars (pointer mode " +
                                std::to_string(pointer_mode) + ")");
  }
  KSELECT_ASSIGN_OR_RETURN(const cublasOperation_t op_a,
                           Op(desc, CUBLASLT_MATMUL_DESC_TRANSA, "TRANSA"));
  KSELECT_ASSIGN_OR_RETURN(const cublasOperation_t op_b,
                           Op(desc, CUBLASLT_MATMUL_DESC_TRANSB, "TRANSB"));
  KSELECT_ASSIGN_OR_RETURN(const cublasOperation_t op_c,
                           Op(desc, CUBLASLT_MATMUL_DESC_TRANSC, "TRANSC"));
  if (op_c != CUBLAS_OP_N) return CannotImplementError("C is transposed");
  KSELECT_ASSIGN_OR_RETURN(
      const uint32_t epilogue,
      DescAttribute<uint32_t>(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, "epilogue"));
  call.epilogue = static_cast<cublasLtEpilogue_t>(epilogue);

  KSELECT_ASSIGN_OR_RETURN(const Layout la, ReadLayout(a, "A"));
  KSELECT_ASSIGN_OR_RETURN(const Layout lb, ReadLayout(b, "B"));
  KSELECT_ASSIGN_OR_RETURN(const Layout lc, ReadLayout(c, "C"));
  KSELECT_ASSIGN_OR_RETURN(const Layout ld, ReadLayout(d, "D"));
  call.type_a = la.type;
  call.type_b = lb.type;
  call.type_c = lc.type;
  call.type_d = ld.type;
  GemmProblem& p = call.problem;
  KSELECT_ASSIGN_OR_RETURN(p.dtype_a, KselectType(la.type, "A"));
  KSELECT_ASSIGN_OR_RETURN(p.dtype_b, KselectType(lb.type, "B"));
  KSELECT_ASSIGN_OR_RETURN(p.dtype_c, KselectType(lc.type, "C"));
  if (ld.type != lc.type) return CannotImplementError("D's data type differs from C's");
  p.m = ld.rows;
  p.n = ld.cols;
  const bool trans_a = op_a == CUBLAS_OP_T;
  const bool trans_b = op_b == CUBLAS_OP_T;
  p.k = trans_a ? la.rows : la.cols;
  const int64_t a_m = trans_a ? la.cols : la.rows;
  const int64_t b_k = trans_b ? lb.cols : lb.rows;
  const int64_t b_n = trans_b ? lb.rows : lb.cols;
  if (a_m != p.m || b_k != p.k || b_n != p.n || lc.rows != p.m || lc.cols != p.n) {
    return CannotImplementError("the layouts' sizes do not form one GEMM (A " +
                                std::to_string(la.rows) + "x" + std::to_string(la.cols) + ", B " +
                                std::to_string(lb.rows) + "x" + std::to_string(lb.cols) + ", D " +
                                std::to_string(ld.rows) + "x" + std::to_string(ld.cols) + ")");
  }
  if (la.batch != ld.batch || lb.batch != ld.batch || lc.batch != ld.batch) {
    return CannotImplementError("the layouts' batch counts differ");
  }
  p.batch = ld.batch;
  // cuBLAS's convention: 'T' on A means A is stored m x k row-major (kselect's layout letters).
  p.layout.a = trans_a ? MatrixOrder::kRowMajor : MatrixOrder::kColMajor;
  p.layout.b = trans_b ? MatrixOrder::kRowMajor : MatrixOrder::kColMajor;
  p.layout.c = MatrixOrder::kColMajor;
  call.lda = la.ld;
  call.ldb = lb.ld;
  call.ldc = lc.ld;
  call.ldd = ld.ld;
  KSELECT_RETURN_IF_ERROR(ReadHostScalars(alpha, beta, p));
  KSELECT_RETURN_IF_ERROR(p.Validate());
  return call;
}

Status ReadHostScalars(const void* alpha, const void* beta, GemmProblem& problem) {
  if (alpha == nullptr || beta == nullptr) return CannotImplementError("alpha or beta is null");
  float alpha_value = 0, beta_value = 0;
  std::memcpy(&alpha_value, alpha, sizeof(float));
  std::memcpy(&beta_value, beta, sizeof(float));
  if (!std::isfinite(alpha_value) || !std::isfinite(beta_value)) {
    return CannotImplementError("alpha or beta is not finite");
  }
  problem.alpha = alpha_value;
  problem.beta = beta_value;
  return Status::Ok();
}

std::string EpilogueName(cublasLtEpilogue_t epilogue) {
  switch (epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return "";
    case CUBLASLT_EPILOGUE_RELU:
      return "relu";
    case CUBLASLT_EPILOGUE_BIAS:
      return "bias";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "relu_bias";
    case CUBLASLT_EPILOGUE_GELU:
      return "gelu";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "gelu_bias";
    case CUBLASLT_EPILOGUE_BGRADA:
      return "bgrada";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "bgradb";
    default:
      return "epilogue" + std::to_string(static_cast<int>(epilogue));
  }
}

}  // namespace kselect::layer
