// libkselect_preload.so: what an application preloads (include/kselect/layer.h). It defines
// cublasLtMatmul and links nothing of kselect or CUDA: at the first call it finds the real
// cublasLtMatmul (the next definition, else the libcublasLt the application already loaded, which
// PyTorch loads with local scope) and loads the implementation, libkselect_layer.so, which then
// binds to that same cuBLASLt. Calls made from inside the implementation (kselect's own
// launches) go straight to the real function.
//
// It uses the C library only (no libstdc++), so preloading it brings nothing else into the
// application.
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define KSELECT_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using Status = int;
using RealMatmul = Status (*)(void*, void*, const void*, const void*, void*, const void*, void*,
                              const void*, const void*, void*, void*, void*, const void*, void*,
                              size_t, void*);
using ImplMatmul = Status (*)(RealMatmul, void*, void*, const void*, const void*, void*,
                              const void*, void*, const void*, const void*, void*, void*, void*,
                              const void*, void*, size_t, void*);
using ImplInit = int (*)();
using ImplSetMode = int (*)(const char*);
using ImplFlush = int (*)();

constexpr Status kNotInitialized = 1;  // CUBLAS_STATUS_NOT_INITIALIZED

struct Shim {
  RealMatmul real = nullptr;
  ImplMatmul matmul = nullptr;
  ImplSetMode set_mode = nullptr;
  ImplFlush flush = nullptr;
};

Shim g_shim;
pthread_once_t g_real_once = PTHREAD_ONCE_INIT, g_impl_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_impl_ready{false};
// Off unless a mode or an input is set: a preloaded layer with nothing to do loads nothing.
std::atomic<bool> g_wanted{false};
thread_local bool t_inside = false;

void* RealSymbol(const char* name) {
  if (void* f = dlsym(RTLD_NEXT, name)) return f;
  for (const char* library : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
    void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    if (void* f = dlsym(handle, name)) return f;
  }
  return nullptr;
}

// KSELECT_LAYER_IMPL, else libkselect_layer.so in this file's folder.
void ImplPath(char* path, size_t size) {
  if (const char* given = std::getenv("KSELECT_LAYER_IMPL"); given != nullptr && *given != '\0') {
    std::snprintf(path, size, "%s", given);
    return;
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&RealSymbol), &info) != 0 && info.dli_fname != nullptr) {
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
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "kselect layer: off: cannot load %s: %s\n", path, dlerror());
      return;
    }
    auto init = reinterpret_cast<ImplInit>(dlsym(handle, "kselect_layer_impl_init"));
    Shim shim = g_shim;
    shim.matmul = reinterpret_cast<ImplMatmul>(dlsym(handle, "kselect_layer_impl_matmul"));
    shim.set_mode = reinterpret_cast<ImplSetMode>(dlsym(handle, "kselect_layer_impl_set_mode"));
    shim.flush = reinterpret_cast<ImplFlush>(dlsym(handle, "kselect_layer_impl_flush"));
    if (init == nullptr || shim.matmul == nullptr || shim.set_mode == nullptr ||
        shim.flush == nullptr) {
      std::fprintf(stderr, "kselect layer: off: %s lacks the layer's entry points\n", path);
      return;
    }
    t_inside = true;
    const int ready = init();
    t_inside = false;
    if (ready == 0) return;
    g_shim.matmul = shim.matmul;
    g_shim.set_mode = shim.set_mode;
    g_shim.flush = shim.flush;
    g_impl_ready.store(true, std::memory_order_release);
}

void LoadImpl() { pthread_once(&g_impl_once, LoadImplOnce); }

void FindReal() {
  g_shim.real = reinterpret_cast<RealMatmul>(RealSymbol("cublasLtMatmul"));
  if (g_shim.real == nullptr) {
    std::fprintf(stderr, "kselect layer: the real cublasLtMatmul was not found\n");
  }
}

__attribute__((constructor)) void ReadSwitch() {
  for (const char* name : {"KSELECT_MODE", "KSELECT_SOLUTIONS", "KSELECT_MODEL", "KSELECT_RECORD"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') g_wanted = true;
  }
  const char* mode = std::getenv("KSELECT_MODE");
  if (mode != nullptr && std::strcmp(mode, "off") == 0) g_wanted = false;
}

}  // namespace

KSELECT_SHIM_EXPORT Status cublasLtMatmul(void* handle, void* desc, const void* alpha,
                                          const void* a, void* a_desc, const void* b,
                                          void* b_desc, const void* beta, const void* c,
                                          void* c_desc, void* d, void* d_desc, const void* algo,
                                          void* workspace, size_t workspace_bytes, void* stream) {
  pthread_once(&g_real_once, FindReal);
  if (g_shim.real == nullptr) return kNotInitialized;
  if (t_inside || !g_wanted.load(std::memory_order_relaxed)) {
    return g_shim.real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc,
                       algo, workspace, workspace_bytes, stream);
  }
  if (!g_impl_ready.load(std::memory_order_acquire)) LoadImpl();
  if (!g_impl_ready.load(std::memory_order_acquire)) {
    return g_shim.real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc,
                       algo, workspace, workspace_bytes, stream);
  }
  t_inside = true;
  const Status status =
      g_shim.matmul(g_shim.real, handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                    d_desc, algo, workspace, workspace_bytes, stream);
  t_inside = false;
  return status;
}

KSELECT_SHIM_EXPORT int kselect_layer_set_mode(const char* mode) {
  if (mode == nullptr) return -1;
  g_wanted = std::strcmp(mode, "off") != 0 || g_impl_ready.load();
  if (!g_wanted) return 0;
  LoadImpl();
  if (!g_impl_ready.load(std::memory_order_acquire)) return -1;
  return g_shim.set_mode(mode);
}

KSELECT_SHIM_EXPORT int kselect_layer_flush(void) {
  if (!g_impl_ready.load(std::memory_order_acquire)) return g_wanted ? -1 : 0;
  return g_shim.flush();
}
