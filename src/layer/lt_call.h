// One cublasLtMatmul call as the preloaded layer reads it from the application's own descriptors:
// the problem in kselect's terms (column-major C, m = rows of D), the leading dimensions and the
// epilogue, or why the layer leaves the call alone.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <string>

#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect::layer {

struct LtCall {
  GemmProblem problem;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // What an algo for the call is initialised with (cublasLtMatmulAlgoInit).
  cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;
  cudaDataType_t type_a = CUDA_R_16BF, type_b = CUDA_R_16BF, type_c = CUDA_R_16BF,
                 type_d = CUDA_R_16BF;
};

// Reads the call. kCannotImplement with the reason where the layer does not fully understand it
// (a compute, scale or data type kselect does not run, device pointer mode, a non-column order,
// inconsistent sizes, alpha or beta not finite): such calls pass through untouched.
// `alpha` and `beta` are the application's host pointers (read as the scale type).
StatusOr<LtCall> ReadLtCall(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, const void* alpha, const void* beta);

// Reads alpha and beta from host pointers as the fp32 scale type into `problem`; an error where
// either is null or not finite (such a problem never equals itself as a key).
Status ReadHostScalars(const void* alpha, const void* beta, GemmProblem& problem);

// "", "bias", "relu_bias", "gelu_bias", ... (kselect's log spelling; "epilogue<N>" otherwise).
std::string EpilogueName(cublasLtEpilogue_t epilogue);

// What identifies a call for the layer's decision: the handle and every descriptor attribute
// the decision depends on, read through cuBLASLt's getters (an application may make fresh
// descriptors for every call, as PyTorch does, and their memory past the attributes is not
// defined). Pointers the descriptors hold (bias, scales) count only as set or unset.
struct LtCallKey {
  static constexpr size_t kDescWords = 16;
  static constexpr size_t kLayoutWords = 7;
  static constexpr size_t kWords = 1 + kDescWords + 4 * kLayoutWords;
  std::array<uint64_t, kWords> words{};

  static LtCallKey Of(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d);
  bool operator==(const LtCallKey& other) const { return words == other.words; }
  size_t Hash() const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (const uint64_t w : words) h = (h ^ w) * 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct LtCallKeyHash {
  size_t operator()(const LtCallKey& key) const { return key.Hash(); }
};

}  // namespace kselect::layer
