// What the preloaded shim (preload_shim.cpp) and the implementation (layer_entry.cpp) pass each
// other: the real functions' types and the entry points the shim looks up in libkselect_layer.so.
// Plain C types only: the shim links nothing but the C library.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>

namespace kselect::layer {

// cublasLtMatmul's signature: the real one, which the layer calls.
using RealMatmul = cublasStatus_t (*)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*,
                                      const void*, cublasLtMatrixLayout_t, const void*,
                                      cublasLtMatrixLayout_t, const void*, const void*,
                                      cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
using RealGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void*, const void*, cudaDataType_t, int,
                                      const void*, cudaDataType_t, int, const void*, void*,
                                      cudaDataType_t, int, cublasComputeType_t, cublasGemmAlgo_t);
using RealGemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType_t, int, long long, const void*, cudaDataType_t, int, long long, const void*, void*,
    cudaDataType_t, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// What the layer needs of cuBLAS and cuBLASLt for a cuBLAS call (cublasGemmEx,
// cublasGemmStridedBatchedEx): the handle's stream and pointer mode, the workspace the
// application last gave the handle on this thread (cublasSetWorkspace, as PyTorch does before
// each call; null when unknown), and the real cublasLtMatmul the choice runs through.
struct BlasFunctions {
  RealMatmul lt_matmul = nullptr;
  RealGemmEx gemm_ex = nullptr;  // the application's own calls, timed as the vendor's pick
  RealGemmStridedBatchedEx gemm_strided = nullptr;
  cublasStatus_t (*get_stream)(cublasHandle_t, cudaStream_t*) = nullptr;
  cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t*) = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The implementation's entry points (exported by libkselect_layer.so).
using ImplInit = int (*)();
using ImplMatmul = cublasStatus_t (*)(RealMatmul, cublasLtHandle_t, cublasLtMatmulDesc_t,
                                      const void*, const void*, cublasLtMatrixLayout_t, const void*,
                                      cublasLtMatrixLayout_t, const void*, const void*,
                                      cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                      const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
using ImplGemmEx = cublasStatus_t (*)(const BlasFunctions*, RealGemmEx, cublasHandle_t,
                                      cublasOperation_t, cublasOperation_t, int, int, int,
                                      const void*, const void*, cudaDataType_t, int, const void*,
                                      cudaDataType_t, int, const void*, void*, cudaDataType_t, int,
                                      cublasComputeType_t, cublasGemmAlgo_t);
using ImplGemmStridedBatchedEx = cublasStatus_t (*)(
    const BlasFunctions*, RealGemmStridedBatchedEx, cublasHandle_t, cublasOperation_t,
    cublasOperation_t, int, int, int, const void*, const void*, cudaDataType_t, int, long long,
    const void*, cudaDataType_t, int, long long, const void*, void*, cudaDataType_t, int, long long,
    int, cublasComputeType_t, cublasGemmAlgo_t);
using ImplSetMode = int (*)(const char*);
using ImplFlush = int (*)();

}  // namespace kselect::layer
