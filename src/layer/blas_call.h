// One cuBLAS GEMM call (cublasGemmEx, cublasGemmStridedBatchedEx), which PyTorch's default BLAS
// backend makes for plain matmuls, read into kselect's terms, and the cuBLASLt descriptors that
// run the same product: the layer runs a chosen cuBLASLt config for it on the application's
// stream.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

#include <array>
#include <cstdint>
#include <memory>

#include "kselect/problem.h"
#include "kselect/status.h"
#include "layer/lt_call.h"

namespace kselect::layer {

// The call's arguments that decide what runs (pointers and scalars aside).
struct BlasCall {
  cublasHandle_t handle = nullptr;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  cudaDataType_t type_a{}, type_b{}, type_c{};
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t batch = 1;
  int32_t compute = 0;       // cublasComputeType_t (or a legacy cudaDataType_t)
  int32_t pointer_mode = 0;  // the handle's cublasPointerMode_t

  // As a key: every field, by value.
  std::array<uint64_t, 18> Words() const;
};

struct BlasCallHash {
  size_t operator()(const BlasCall& call) const;
};
bool operator==(const BlasCall& a, const BlasCall& b);

// The call as the layer reads it (an LtCall with the same problem, leading dimensions and types),
// or kCannotImplement with why it passes through (types or compute kselect does not run,
// device-memory scalars, sizes that do not form a GEMM, alpha or beta not finite).
StatusOr<LtCall> ReadBlasCall(const BlasCall& call, const void* alpha, const void* beta);

// cuBLASLt descriptors for the call (owned).
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors();
};
StatusOr<std::shared_ptr<LtDescriptors>> MakeLtDescriptors(const BlasCall& call,
                                                           const LtCall& read);

}  // namespace kselect::layer
