// libkselect_layer.so's entry points, which the preloaded shim (preload_shim.cpp) looks up: the
// process's one Layer, made from the environment at the first call, its statistics and record
// written at exit. Nothing here lets an exception out or exits.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "layer/layer.h"

#define KSELECT_LAYER_EXPORT extern "C" __attribute__((visibility("default")))

namespace kselect::layer {
namespace {

std::once_flag g_once;
// Leaked on purpose: it outlives every thread's decision cache and is flushed by atexit, never
// destroyed while another thread may still call into it.
Layer* g_layer = nullptr;

void FlushAtExit() {
  if (g_layer == nullptr) return;
  try {
    const Status written = g_layer->Flush();
    if (!written.ok()) {
      std::fprintf(stderr, "kselect layer: %s\n", written.message().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kselect layer: writing the statistics failed: %s\n", e.what());
  }
}

Layer* Instance() {
  std::call_once(g_once, [] {
    try {
      auto settings =
          LayerSettings::FromEnvironment([](const char* name) { return std::getenv(name); });
      if (!settings.ok()) {
        std::fprintf(stderr, "kselect layer: off: %s\n", settings.status().message().c_str());
        return;
      }
      g_layer = new Layer(std::move(*settings));
      std::atexit(FlushAtExit);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kselect layer: off: %s\n", e.what());
    }
  });
  return g_layer;
}

}  // namespace
}  // namespace kselect::layer

using kselect::layer::Instance;
using kselect::layer::Layer;

// 1 when the layer runs (its settings read), 0 when it is off for good (the reason was printed).
KSELECT_LAYER_EXPORT int kselect_layer_impl_init(void) {
  return Instance() != nullptr ? 1 : 0;
}

KSELECT_LAYER_EXPORT int kselect_layer_impl_matmul(
    kselect::layer::RealMatmul real, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    const void* alpha, const void* a, cublasLtMatrixLayout_t a_desc, const void* b,
    cublasLtMatrixLayout_t b_desc, const void* beta, const void* c, cublasLtMatrixLayout_t c_desc,
    void* d, cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
    size_t workspace_bytes, cudaStream_t stream) {
  Layer* layer = Instance();
  try {
    if (layer != nullptr) {
      return layer->Matmul(real, handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                           d_desc, algo, workspace, workspace_bytes, stream);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kselect layer: passing through after an error: %s\n", e.what());
  }
  return real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo,
              workspace, workspace_bytes, stream);
}

namespace {

using kselect::layer::BlasArgs;
using kselect::layer::BlasFunctions;

struct GemmExCall {
  kselect::layer::RealGemmEx real;
  cublasHandle_t handle;
  cublasOperation_t transa, transb;
  int m, n, k;
  const void* alpha;
  const void* a;
  cudaDataType_t a_type;
  int lda;
  const void* b;
  cudaDataType_t b_type;
  int ldb;
  const void* beta;
  void* c;
  cudaDataType_t c_type;
  int ldc;
  cublasComputeType_t compute;
  cublasGemmAlgo_t algo;
  long long stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 1;
  kselect::layer::RealGemmStridedBatchedEx real_strided = nullptr;
};

cublasStatus_t PassGemmEx(const void* context) {
  const auto& c = *static_cast<const GemmExCall*>(context);
  if (c.real_strided != nullptr) {
    return c.real_strided(c.handle, c.transa, c.transb, c.m, c.n, c.k, c.alpha, c.a, c.a_type,
                          c.lda, c.stride_a, c.b, c.b_type, c.ldb, c.stride_b, c.beta, c.c,
                          c.c_type, c.ldc, c.stride_c, c.batch, c.compute, c.algo);
  }
  return c.real(c.handle, c.transa, c.transb, c.m, c.n, c.k, c.alpha, c.a, c.a_type, c.lda, c.b,
                c.b_type, c.ldb, c.beta, c.c, c.c_type, c.ldc, c.compute, c.algo);
}

cublasStatus_t RunBlas(const BlasFunctions* blas, const GemmExCall& c) {
  Layer* layer = Instance();
  try {
    if (layer != nullptr && blas != nullptr) {
      BlasArgs args;
      args.call.handle = c.handle;
      args.call.trans_a = c.transa;
      args.call.trans_b = c.transb;
      args.call.m = c.m;
      args.call.n = c.n;
      args.call.k = c.k;
      args.call.type_a = c.a_type;
      args.call.type_b = c.b_type;
      args.call.type_c = c.c_type;
      args.call.lda = c.lda;
      args.call.ldb = c.ldb;
      args.call.ldc = c.ldc;
      args.call.stride_a = c.stride_a;
      args.call.stride_b = c.stride_b;
      args.call.stride_c = c.stride_c;
      args.call.batch = c.batch;
      args.call.compute = static_cast<int32_t>(c.compute);
      args.alpha = c.alpha;
      args.a = c.a;
      args.b = c.b;
      args.beta = c.beta;
      args.c = c.c;
      args.algo = c.algo;
      return layer->Blas(*blas, args, &PassGemmEx, &c);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kselect layer: passing through after an error: %s\n", e.what());
  }
  return PassGemmEx(&c);
}

}  // namespace

KSELECT_LAYER_EXPORT cublasStatus_t kselect_layer_impl_gemm_ex(
    const BlasFunctions* blas, kselect::layer::RealGemmEx real, cublasHandle_t handle,
    cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* a, cudaDataType_t a_type, int lda, const void* b, cudaDataType_t b_type, int ldb,
    const void* beta, void* c, cudaDataType_t c_type, int ldc, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  const GemmExCall call{real, handle, transa, transb, m,    n, k,      alpha, a,       a_type,
                        lda,  b,      b_type, ldb,    beta, c, c_type, ldc,   compute, algo};
  return RunBlas(blas, call);
}

KSELECT_LAYER_EXPORT cublasStatus_t kselect_layer_impl_gemm_strided_batched_ex(
    const BlasFunctions* blas, kselect::layer::RealGemmStridedBatchedEx real, cublasHandle_t handle,
    cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, const void* alpha,
    const void* a, cudaDataType_t a_type, int lda, long long stride_a, const void* b,
    cudaDataType_t b_type, int ldb, long long stride_b, const void* beta, void* c,
    cudaDataType_t c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  GemmExCall call{nullptr, handle, transa, transb, m,    n, k,      alpha, a,       a_type,
                  lda,     b,      b_type, ldb,    beta, c, c_type, ldc,   compute, algo};
  call.stride_a = stride_a;
  call.stride_b = stride_b;
  call.stride_c = stride_c;
  call.batch = batch;
  call.real_strided = real;
  return RunBlas(blas, call);
}

KSELECT_LAYER_EXPORT int kselect_layer_impl_set_mode(const char* mode) {
  Layer* layer = Instance();
  if (layer == nullptr || mode == nullptr) return -1;
  try {
    auto parsed = kselect::layer::ParseLayerMode(mode);
    if (!parsed.ok()) {
      std::fprintf(stderr, "kselect layer: %s\n", parsed.status().message().c_str());
      return -1;
    }
    layer->SetMode(*parsed);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kselect layer: %s\n", e.what());
    return -1;
  }
}

KSELECT_LAYER_EXPORT int kselect_layer_impl_flush(void) {
  Layer* layer = Instance();
  if (layer == nullptr) return -1;
  try {
    const kselect::Status written = layer->Flush();
    if (written.ok()) return 0;
    std::fprintf(stderr, "kselect layer: %s\n", written.message().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kselect layer: %s\n", e.what());
  }
  return -1;
}
