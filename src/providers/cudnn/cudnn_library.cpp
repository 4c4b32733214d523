#include "providers/cudnn/cudnn_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <cudnn_frontend.h>

// cudnn-frontend's dynamic loader resolves every backend symbol through this handle.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace kselect::cudnn {

std::string CudnnLibrary::VersionText() const {
  // cuDNN 9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

namespace {

StatusOr<CudnnLibrary> Load() {
  const char* override_path = std::getenv("KSELECT_CUDNN_LIBRARY");
  CudnnLibrary library;
  library.path =
      override_path != nullptr && *override_path != '\0' ? override_path : "libcudnn.so.9";
  dlerror();
  void* handle = dlopen(library.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return UnavailableError("cuDNN 9 is not available: dlopen(" + library.path +
                            ") failed: " + (why != nullptr ? why : "unknown error") +
                            " (install cuDNN 9, e.g. the nvidia-cudnn-cu13 wheel, and put its lib "
                            "folder on LD_LIBRARY_PATH, or set KSELECT_CUDNN_LIBRARY)");
  }
  using GetVersion = size_t (*)();
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudnnGetVersion"));
  if (get_version == nullptr) {
    dlclose(handle);
    return UnavailableError(library.path + " has no cudnnGetVersion: not a cuDNN library");
  }
  library.version = static_cast<long>(get_version());
  if (library.version < 90000) {
    dlclose(handle);
    return UnavailableError(library.path + " is cuDNN " + library.VersionText() +
                            "; the graph API kselect uses needs cuDNN 9");
  }
  cudnn_frontend::cudnn_dlhandle = handle;
  return library;
}

}  // namespace

StatusOr<const CudnnLibrary*> LoadCudnn() {
  static std::once_flag once;
  static StatusOr<CudnnLibrary>* loaded = nullptr;
  std::call_once(once, [] { loaded = new StatusOr<CudnnLibrary>(Load()); });
  if (!loaded->ok()) return loaded->status();
  return &loaded->value();
}

}  // namespace kselect::cudnn
