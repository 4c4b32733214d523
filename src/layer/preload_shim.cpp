// libkselect_preload.so: what an application preloads (include/kselect/layer.h). It defines
// cublasLtMatmul, cuBLAS's cublasGemmEx and cublasGemmStridedBatchedEx (PyTorch's default
// backend sends plain matmuls there) and cublasSetWorkspace_v2 (to learn the workspace a handle
// runs with), and links nothing of kselect or CUDA: at the first call it finds the real
// functions (the next definitions, else in the libraries the application already loaded, which
// PyTorch loads with local scope) and loads the implementation, libkselect_layer.so, which then
// binds to that same cuBLASLt. Calls made from inside the implementation (kselect's own
// launches) go straight to the real functions.
//
// It uses the C library only (no libstdc++), so preloading it brings nothing else into the
// application.
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "layer/entry_points.h"

#define KSELECT_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace kselect::layer;

struct Real {
  RealMatmul lt_matmul = nullptr;
  RealGemmEx gemm_ex = nullptr;
  RealGemmStridedBatchedEx gemm_strided = nullptr;
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t) = nullptr;
  cublasStatus_t (*get_stream)(cublasHandle_t, cudaStream_t*) = nullptr;
  cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t*) = nullptr;
};

struct Impl {
  ImplMatmul matmul = nullptr;
  ImplGemmEx gemm_ex = nullptr;
  ImplGemmStridedBatchedEx gemm_strided = nullptr;
  ImplSetMode set_mode = nullptr;
  ImplFlush flush = nullptr;
};

Real g_real;
Impl g_impl;
pthread_once_t g_real_once = PTHREAD_ONCE_INIT, g_impl_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_impl_ready{false};
// Off unless a mode or an input is set: a preloaded layer with nothing to do loads nothing.
std::atomic<bool> g_wanted{false};
thread_local bool t_inside = false;
// The workspace this thread last gave a cuBLAS handle (PyTorch sets it before every call).
thread_local cublasHandle_t t_workspace_handle = nullptr;
thread_local void* t_workspace = nullptr;
thread_local size_t t_workspace_bytes = 0;

void* RealSymbol(const char* const* libraries, const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  for (const char* const* library = libraries; *library != nullptr; ++library) {
    void* handle = dlopen(*library, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    if (void* f = dlsym(handle, name)) return f;
  }
  return nullptr;
}

void FindReal() {
  static const char* const kLt[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                                    nullptr};
  static const char* const kBlas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                      nullptr};
  Real real;
  real.lt_matmul = reinterpret_cast<RealMatmul>(RealSymbol(kLt, "cublasLtMatmul"));
  real.gemm_ex = reinterpret_cast<RealGemmEx>(RealSymbol(kBlas, "cublasGemmEx"));
  real.gemm_strided =
      reinterpret_cast<RealGemmStridedBatchedEx>(RealSymbol(kBlas, "cublasGemmStridedBatchedEx"));
  real.set_workspace =
      reinterpret_cast<decltype(real.set_workspace)>(RealSymbol(kBlas, "cublasSetWorkspace_v2"));
  real.get_stream =
      reinterpret_cast<decltype(real.get_stream)>(RealSymbol(kBlas, "cublasGetStream_v2"));
  real.get_pointer_mode = reinterpret_cast<decltype(real.get_pointer_mode)>(
      RealSymbol(kBlas, "cublasGetPointerMode_v2"));
  g_real = real;
}

// The real functions. A wrapper whose own function is missing looks again (a program may load
// cuBLAS after its first cuBLASLt call); the others never pay for that.
const Real& RealFunctions() {
  pthread_once(&g_real_once, FindReal);
  return g_real;
}

const Real& RealFunctionsWith(bool (*has)(const Real&)) {
  const Real& real = RealFunctions();
  if (!has(real)) FindReal();
  return g_real;
}

// KSELECT_LAYER_IMPL, else libkselect_layer.so in this file's folder.
void ImplPath(char* path, size_t size) {
  if (const char* given = std::getenv("KSELECT_LAYER_IMPL"); given != nullptr && *given != '\0') {
    std::snprintf(path, size, "%s", given);
    return;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&FindReal), &info) != 0 && info.dli_fname != nullptr) {
    const char* slash = std::strrchr(info.dli_fname, '/');
    const int folder = slash == nullptr ? 0 : static_cast<int>(slash - info.dli_fname + 1);
    std::snprintf(path, size, "%.*slibkselect_layer.so", folder, info.dli_fname);
    return;
  }
  std::snprintf(path, size, "libkselect_layer.so");
}

void LoadImplOnce() {
  char path[4096];
  ImplPath(path, sizeof(path));
  t_inside = true;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  t_inside = false;
  if (handle == nullptr) {
    std::fprintf(stderr, "kselect layer: off: cannot load %s: %s\n", path, dlerror());
    return;
  }
  auto init = reinterpret_cast<ImplInit>(dlsym(handle, "kselect_layer_impl_init"));
  Impl impl;
  impl.matmul = reinterpret_cast<ImplMatmul>(dlsym(handle, "kselect_layer_impl_matmul"));
  impl.gemm_ex = reinterpret_cast<ImplGemmEx>(dlsym(handle, "kselect_layer_impl_gemm_ex"));
  impl.gemm_strided = reinterpret_cast<ImplGemmStridedBatchedEx>(
      dlsym(handle, "kselect_layer_impl_gemm_strided_batched_ex"));
  impl.set_mode = reinterpret_cast<ImplSetMode>(dlsym(handle, "kselect_layer_impl_set_mode"));
  impl.flush = reinterpret_cast<ImplFlush>(dlsym(handle, "kselect_layer_impl_flush"));
  if (init == nullptr || impl.matmul == nullptr || impl.gemm_ex == nullptr ||
      impl.gemm_strided == nullptr || impl.set_mode == nullptr || impl.flush == nullptr) {
    std::fprintf(stderr, "kselect layer: off: %s lacks the layer's entry points\n", path);
    return;
  }
  t_inside = true;
  const int ready = init();
  t_inside = false;
  if (ready == 0) return;
  g_impl = impl;
  g_impl_ready.store(true, std::memory_order_release);
}

// True when calls go to the implementation (wanted, loaded, not from inside it).
bool UseImpl() {
  if (t_inside || !g_wanted.load(std::memory_order_relaxed)) return false;
  if (!g_impl_ready.load(std::memory_order_acquire)) pthread_once(&g_impl_once, LoadImplOnce);
  return g_impl_ready.load(std::memory_order_acquire);
}

// Marks the implementation's work so that its own cuBLAS(Lt) calls skip the layer.
struct Inside {
  Inside() { t_inside = true; }
  ~Inside() { t_inside = false; }
};

__attribute__((constructor)) void ReadSwitch() {
  for (const char* name :
       {"KSELECT_MODE", "KSELECT_SOLUTIONS", "KSELECT_MODEL", "KSELECT_RECORD"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') g_wanted = true;
  }
  const char* mode = std::getenv("KSELECT_MODE");
  if (mode != nullptr && std::strcmp(mode, "off") == 0) g_wanted = false;
}

constexpr cublasStatus_t kNotInitialized = CUBLAS_STATUS_NOT_INITIALIZED;

}  // namespace

KSELECT_SHIM_EXPORT cublasStatus_t
cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
               cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
               const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
               cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
               size_t workspace_bytes, cudaStream_t stream) {
  const Real& real = RealFunctionsWith([](const Real& r) { return r.lt_matmul != nullptr; });
  if (real.lt_matmul == nullptr) {
    std::fprintf(stderr, "kselect layer: the real cublasLtMatmul was not found\n");
    return kNotInitialized;
  }
  if (!UseImpl()) {
    return real.lt_matmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc,
                          algo, workspace, workspace_bytes, stream);
  }
  Inside inside;
  return g_impl.matmul(real.lt_matmul, handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc,
                       d, d_desc, algo, workspace, workspace_bytes, stream);
}

KSELECT_SHIM_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                         size_t workspace_bytes) {
  const Real& real = RealFunctionsWith([](const Real& r) { return r.set_workspace != nullptr; });
  if (real.set_workspace == nullptr) return kNotInitialized;
  const cublasStatus_t status = real.set_workspace(handle, workspace, workspace_bytes);
  if (!t_inside) {
    t_workspace_handle = status == CUBLAS_STATUS_SUCCESS ? handle : nullptr;
    t_workspace = workspace;
    t_workspace_bytes = workspace_bytes;
  }
  return status;
}

namespace {

// The cuBLAS calls go to the implementation only with everything it needs at hand.
bool BlasReady(const Real& real, BlasFunctions& blas, cublasHandle_t handle) {
  if (real.lt_matmul == nullptr || real.get_stream == nullptr || real.get_pointer_mode == nullptr ||
      !UseImpl()) {
    return false;
  }
  blas.lt_matmul = real.lt_matmul;
  blas.gemm_ex = real.gemm_ex;
  blas.gemm_strided = real.gemm_strided;
  blas.get_stream = real.get_stream;
  blas.get_pointer_mode = real.get_pointer_mode;
  if (t_workspace_handle == handle) {
    blas.workspace = t_workspace;
    blas.workspace_bytes = t_workspace_bytes;
  }
  return true;
}

}  // namespace

KSELECT_SHIM_EXPORT cublasStatus_t
cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
             int n, int k, const void* alpha, const void* a, cudaDataType_t a_type, int lda,
             const void* b, cudaDataType_t b_type, int ldb, const void* beta, void* c,
             cudaDataType_t c_type, int ldc, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  const Real& real = RealFunctionsWith(
      [](const Real& r) { return r.gemm_ex != nullptr && r.lt_matmul != nullptr; });
  if (real.gemm_ex == nullptr) {
    std::fprintf(stderr, "kselect layer: the real cublasGemmEx was not found\n");
    return kNotInitialized;
  }
  BlasFunctions blas;
  if (!BlasReady(real, blas, handle)) {
    return real.gemm_ex(handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb,
                        beta, c, c_type, ldc, compute, algo);
  }
  Inside inside;
  return g_impl.gemm_ex(&blas, real.gemm_ex, handle, transa, transb, m, n, k, alpha, a, a_type, lda,
                        b, b_type, ldb, beta, c, c_type, ldc, compute, algo);
}

KSELECT_SHIM_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* a, cudaDataType_t a_type, int lda, long long stride_a,
    const void* b, cudaDataType_t b_type, int ldb, long long stride_b, const void* beta, void* c,
    cudaDataType_t c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t algo) {
  const Real& real = RealFunctionsWith(
      [](const Real& r) { return r.gemm_strided != nullptr && r.lt_matmul != nullptr; });
  if (real.gemm_strided == nullptr) {
    std::fprintf(stderr, "kselect layer: the real cublasGemmStridedBatchedEx was not found\n");
    return kNotInitialized;
  }
  BlasFunctions blas;
  if (!BlasReady(real, blas, handle)) {
    return real.gemm_strided(handle, transa, transb, m, n, k, alpha, a, a_type, lda, stride_a, b,
                             b_type, ldb, stride_b, beta, c, c_type, ldc, stride_c, batch, compute,
                             algo);
  }
  Inside inside;
  return g_impl.gemm_strided(&blas, real.gemm_strided, handle, transa, transb, m, n, k, alpha, a,
                             a_type, lda, stride_a, b, b_type, ldb, stride_b, beta, c, c_type, ldc,
                             stride_c, batch, compute, algo);
}

KSELECT_SHIM_EXPORT int kselect_layer_set_mode(const char* mode) {
  if (mode == nullptr) return -1;
  g_wanted = std::strcmp(mode, "off") != 0 || g_impl_ready.load();
  if (!g_wanted) return 0;
  if (!UseImpl()) return -1;
  Inside inside;
  return g_impl.set_mode(mode);
}

KSELECT_SHIM_EXPORT int kselect_layer_flush(void) {
  if (!g_impl_ready.load(std::memory_order_acquire)) return g_wanted ? -1 : 0;
  Inside inside;
  return g_impl.flush();
}
