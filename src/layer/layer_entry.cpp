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
      auto settings = LayerSettings::FromEnvironment([](const char* name) {
        return std::getenv(name);
      });
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
KSELECT_LAYER_EXPORT int kselect_layer_impl_init(void) { return Instance() != nullptr ? 1 : 0; }

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
