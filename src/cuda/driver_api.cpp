// Resolves the driver table through the CUDA runtime (linked statically), which itself dlopens
// libcuda.so.1; on a host without it every lookup fails and we report why instead.
#include "cuda/driver_api.h"

#include <cuda_runtime_api.h>

#include <string>

namespace kselect::cuda {
namespace {

std::string RuntimeErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

template <typename Function>
Status Resolve(const char* symbol, Function* out) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &function, kDriverApiVersion,
                                                             cudaEnableDefault, &query);
  if (error != cudaSuccess) {
    return UnavailableError(std::string("cannot look up CUDA driver function ") + symbol + ": " +
                            RuntimeErrorText(error));
  }
  if (query != cudaDriverEntryPointSuccess || function == nullptr) {
    const char* why = query == cudaDriverEntryPointVersionNotSufficent
                          ? "the driver is older than the version it is requested at"
                          : "the driver does not export it";
    return UnavailableError(std::string("CUDA driver function ") + symbol + " (at CUDA " +
                            std::to_string(kDriverApiVersion) + ") is unavailable: " + why);
  }
  *out = reinterpret_cast<Function>(function);
  return Status::Ok();
}

StatusOr<DriverApi> ResolveDriverApi() {
  // cudaDriverGetVersion succeeds with 0 when libcuda is absent: the clearest message to give.
  int driver_version = 0;
  const cudaError_t error = cudaDriverGetVersion(&driver_version);
  if (error != cudaSuccess) {
    return UnavailableError("cannot query the CUDA driver: " + RuntimeErrorText(error));
  }
  if (driver_version == 0) {
    return UnavailableError(
        "no CUDA driver on this host (libcuda.so.1 not found); GPU work needs a host with an "
        "NVIDIA driver");
  }
  DriverApi api;
  KSELECT_RETURN_IF_ERROR(Resolve("cuGetErrorName", &api.get_error_name));
  KSELECT_RETURN_IF_ERROR(Resolve("cuGetErrorString", &api.get_error_string));
  KSELECT_RETURN_IF_ERROR(Resolve("cuCtxGetCurrent", &api.ctx_get_current));
  KSELECT_RETURN_IF_ERROR(Resolve("cuModuleLoadData", &api.module_load_data));
  KSELECT_RETURN_IF_ERROR(Resolve("cuModuleUnload", &api.module_unload));
  KSELECT_RETURN_IF_ERROR(Resolve("cuModuleGetFunction", &api.module_get_function));
  KSELECT_RETURN_IF_ERROR(Resolve("cuFuncSetAttribute", &api.func_set_attribute));
  KSELECT_RETURN_IF_ERROR(Resolve("cuLaunchKernelEx", &api.launch_kernel_ex));
  KSELECT_RETURN_IF_ERROR(Resolve("cuTensorMapEncodeTiled", &api.tensor_map_encode_tiled));
  KSELECT_RETURN_IF_ERROR(
      Resolve("cuOccupancyMaxActiveClusters", &api.occupancy_max_active_clusters));
  KSELECT_RETURN_IF_ERROR(Resolve("cuMemsetD32Async", &api.memset_d32_async));
  return api;
}

}  // namespace

StatusOr<const DriverApi*> GetDriverApi() {
  // A function-local static: resolved once, thread-safe, and a failure is cached too, since the
  // driver cannot appear during the life of the process.
  static const StatusOr<DriverApi> api = ResolveDriverApi();
  if (!api.ok()) return api.status();
  return &api.value();
}

std::string DriverErrorText(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (api.get_error_name != nullptr) api.get_error_name(result, &name);
  if (api.get_error_string != nullptr) api.get_error_string(result, &description);
  std::string text =
      name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(result));
  if (description != nullptr) text += std::string(" (") + description + ")";
  return text;
}

}  // namespace kselect::cuda
