// The CUDA driver functions kselect calls directly (loading cubins, launching kernels, encoding
// tensor maps). libcuda is never linked: each function is looked up once through the runtime's
// cudaGetDriverEntryPointByVersion, so binaries still start on hosts without a driver and only
// the code that needs a GPU fails, with a Status.
#pragma once

// Types and PFN_* typedefs only; no libcuda symbol is referenced.
#include <cudaTypedefs.h>

#include <string>

#include "kselect/status.h"

namespace kselect::cuda {

// Driver entry points, resolved at the ABI of CUDA 12.0 (kDriverApiVersion) so their signatures
// match the PFN_*_v* typedefs below. Every pointer is non-null in a table GetDriverApi returns.
struct DriverApi {
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleUnload_v2000 module_unload = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuFuncSetAttribute_v9000 func_set_attribute = nullptr;
  PFN_cuLaunchKernelEx_v11060 launch_kernel_ex = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encode_tiled = nullptr;
  PFN_cuOccupancyMaxActiveClusters_v11070 occupancy_max_active_clusters = nullptr;
  PFN_cuMemsetD32Async_v3020 memset_d32_async = nullptr;
};

// The CUDA version whose ABI the entry points are requested at (12.0: every function above
// exists there, and a 13.x driver still serves it).
inline constexpr unsigned int kDriverApiVersion = 12000;

// The process-wide table, resolved on first call (thread-safe) and cached, failure included.
// kUnavailable, with the reason, when there is no driver or a function is missing from it.
StatusOr<const DriverApi*> GetDriverApi();

// "CUDA_ERROR_INVALID_VALUE (invalid argument)"-style text for a driver result; falls back to the
// number when the driver cannot describe it.
std::string DriverErrorText(const DriverApi& api, CUresult result);

}  // namespace kselect::cuda
