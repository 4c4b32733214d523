// CPU time the preloaded layer adds to one cublasLtMatmul call (issue target: at most 1 us on a
// repeated problem). The real function is a stand-in that returns at once, so the figures are the
// layer's own work: reading the descriptors into the decision key, the per-thread lookup and the
// counters. PyTorch makes fresh descriptors for every call; BM_FreshDescriptors* include that
// (the application's own cost) and BM_DescriptorsOnly measures it alone.
// With a GPU, BM_RepeatedCallRunsChoice decides with a real cuBLASLt handle and the shipped
// model, then measures the path that substitutes the chosen algo.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "layer/layer.h"
#include "layer/lt_call.h"

namespace kselect::layer {
namespace {

cublasStatus_t NoOpReal(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                        cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                        const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                        const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}

// nn.Linear's call for 4096 -> 4096 at 8 tokens, as PyTorch describes it (TN, bias epilogue).
struct LinearCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  LinearCall() {
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    const cublasLtEpilogue_t bias = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias, sizeof(bias));
    cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, 4096, 4096, 4096);
    cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, 4096, 8, 4096);
    cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, 4096, 8, 4096);
  }
  ~LinearCall() {
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatmulDescDestroy(op);
  }
};

const float kOne = 1, kZero = 0;
cublasLtMatmulAlgo_t g_app_algo{};
alignas(256) char g_buffer[1024];

cublasStatus_t Call(Layer& layer, const LinearCall& call, cublasLtHandle_t handle = nullptr) {
  return layer.Matmul(&NoOpReal, handle, call.op, &kOne, g_buffer, call.a, g_buffer, call.b, &kZero,
                      g_buffer, call.c, g_buffer, call.c, &g_app_algo, g_buffer, 32u << 20,
                      nullptr);
}

LayerSettings Settings(LayerMode mode) {
  LayerSettings settings;
  settings.mode = mode;
  return settings;
}

void BM_KeyOnly(benchmark::State& state) {
  LinearCall call;
  for (auto _ : state) {
    benchmark::DoNotOptimize(LtCallKey::Of(nullptr, call.op, call.a, call.b, call.c, call.c));
  }
}
BENCHMARK(BM_KeyOnly);

void BM_OffMode(benchmark::State& state) {
  Layer layer(Settings(LayerMode::kOff));
  LinearCall call;
  for (auto _ : state) benchmark::DoNotOptimize(Call(layer, call));
}
BENCHMARK(BM_OffMode);

// A repeated call that passes through (record mode: every counter and lookup, no substitution).
void BM_RepeatedCallPassesThrough(benchmark::State& state) {
  Layer layer(Settings(LayerMode::kRecord));
  LinearCall call;
  for (auto _ : state) benchmark::DoNotOptimize(Call(layer, call));
}
BENCHMARK(BM_RepeatedCallPassesThrough)->ThreadRange(1, 2);

void BM_DescriptorsOnly(benchmark::State& state) {
  for (auto _ : state) {
    LinearCall call;
    benchmark::DoNotOptimize(call.op);
  }
}
BENCHMARK(BM_DescriptorsOnly);

void BM_FreshDescriptorsPassThrough(benchmark::State& state) {
  Layer layer(Settings(LayerMode::kRecord));
  for (auto _ : state) {
    LinearCall call;
    benchmark::DoNotOptimize(Call(layer, call));
  }
}
BENCHMARK(BM_FreshDescriptorsPassThrough);

void BM_RepeatedCallRunsChoice(benchmark::State& state) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no GPU on this host");
    return;
  }
  cublasLtHandle_t handle = nullptr;
  if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasLtCreate failed");
    return;
  }
  LayerSettings settings = Settings(LayerMode::kSelect);
  settings.model = KSELECT_SOURCE_DIR "/models/h200_cublaslt_bf16_tn_rank";
  settings.time_top_k = 0;  // the stand-in real function cannot be timed
  Layer layer(settings);
  LinearCall call;
  Call(layer, call, handle);  // decides
  if (layer.Totals().overridden != 1) {
    state.SkipWithError(("no decision: " + layer.StatsJson()).c_str());
  } else {
    for (auto _ : state) benchmark::DoNotOptimize(Call(layer, call, handle));
  }
  cublasLtDestroy(handle);
}
BENCHMARK(BM_RepeatedCallRunsChoice);

}  // namespace
}  // namespace kselect::layer

BENCHMARK_MAIN();
