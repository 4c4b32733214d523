// QueryHardwareProfile / QueryLibraryVersions: read the GPU and the CUDA library versions through
// the statically linked CUDA runtime. The runtime loads libcuda itself at its first call, so a
// host without a driver gets an error code back here instead of a failure to start.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "kselect/hardware.h"

namespace kselect {
namespace {

// What to do about the usual "no GPU here" errors, appended to the runtime's own text.
constexpr const char* kNoDeviceHint =
    "run on a host with an NVIDIA GPU and driver, or load a profile saved there "
    "(kselect hw --load FILE)";

std::string CudaErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form nvidia-smi prints, so a profile can be
// matched against `nvidia-smi -L` output.
std::string FormatUuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

// cuDNN is optional and never linked: a missing library just means version 0.
int32_t CudnnVersion() {
  void* library = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return 0;
  using CudnnGetVersion = size_t (*)();
  auto get_version = reinterpret_cast<CudnnGetVersion>(dlsym(library, "cudnnGetVersion"));
  const int32_t version = get_version != nullptr ? static_cast<int32_t>(get_version()) : 0;
  dlclose(library);
  return version;
}

Status DeviceAttribute(cudaDeviceAttr attribute, const char* name, int device, int* value) {
  const cudaError_t error = cudaDeviceGetAttribute(value, attribute, device);
  if (error != cudaSuccess) {
    return UnavailableError(std::string("cudaDeviceGetAttribute(") + name + ") on device " +
                            std::to_string(device) + " failed: " + CudaErrorText(error));
  }
  return Status::Ok();
}

}  // namespace

HardwareProfile QueryLibraryVersions() {
  HardwareProfile profile;
  // Both return success with 0 when the driver is absent, which is what the field means.
  int version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess) profile.driver_version = version;
  version = 0;
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) profile.runtime_version = version;
  profile.cublaslt_version = static_cast<int32_t>(cublasLtGetVersion());
  int nvrtc_major = 0, nvrtc_minor = 0;
  if (nvrtcVersion(&nvrtc_major, &nvrtc_minor) == NVRTC_SUCCESS) {
    profile.nvrtc_version = nvrtc_major * 1000 + nvrtc_minor * 10;
  }
  profile.cudnn_version = CudnnVersion();
  return profile;
}

StatusOr<HardwareProfile> QueryHardwareProfile(int device) {
  if (device < 0) {
    return InvalidArgumentError("device index must be >= 0, got " + std::to_string(device));
  }
  int device_count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&device_count);
  if (count_error != cudaSuccess) {
    // cudaErrorInsufficientDriver also means "no driver at all"; say which it is.
    int driver_version = 0, runtime_version = 0;
    cudaDriverGetVersion(&driver_version);
    cudaRuntimeGetVersion(&runtime_version);
    std::string why;
    if (driver_version == 0) {
      why = "no NVIDIA driver on this host (libcuda.so.1 not found)";
    } else if (driver_version < runtime_version) {
      why = "the NVIDIA driver supports CUDA " + std::to_string(driver_version) +
            " but this kselect was built with CUDA runtime " + std::to_string(runtime_version);
    } else {
      why = "no usable CUDA device";
    }
    return UnavailableError(why + ": cudaGetDeviceCount failed with " + CudaErrorText(count_error) +
                            "; " + kNoDeviceHint);
  }
  if (device_count == 0) {
    return UnavailableError(std::string("the CUDA driver reports no devices; ") + kNoDeviceHint);
  }
  if (device >= device_count) {
    return InvalidArgumentError("device " + std::to_string(device) +
                                " does not exist: this host has " + std::to_string(device_count) +
                                " CUDA device(s)");
  }

  cudaDeviceProp prop{};
  const cudaError_t prop_error = cudaGetDeviceProperties(&prop, device);
  if (prop_error != cudaSuccess) {
    return UnavailableError("cudaGetDeviceProperties on device " + std::to_string(device) +
                            " failed: " + CudaErrorText(prop_error));
  }
  // CUDA 13 removed cudaDeviceProp::clockRate and ::memoryClockRate; the attributes remain.
  int sm_clock_khz = 0, mem_clock_khz = 0;
  KSELECT_RETURN_IF_ERROR(
      DeviceAttribute(cudaDevAttrClockRate, "cudaDevAttrClockRate", device, &sm_clock_khz));
  KSELECT_RETURN_IF_ERROR(DeviceAttribute(cudaDevAttrMemoryClockRate, "cudaDevAttrMemoryClockRate",
                                          device, &mem_clock_khz));

  HardwareProfile profile = QueryLibraryVersions();
  profile.vendor = "nvidia";
  profile.device_name = prop.name;
  profile.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  profile.uuid = FormatUuid(prop.uuid);
  profile.cc_major = prop.major;
  profile.cc_minor = prop.minor;
  profile.sm_count = prop.multiProcessorCount;
  profile.sm_clock_mhz = sm_clock_khz / 1000;
  profile.mem_clock_mhz = mem_clock_khz / 1000;
  profile.mem_bus_width_bits = prop.memoryBusWidth;
  profile.l2_bytes = prop.l2CacheSize;
  profile.smem_per_sm_bytes = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
  profile.smem_per_block_optin_bytes = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  profile.regs_per_sm = prop.regsPerMultiprocessor;
  profile.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  profile.global_mem_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  // Double data rate: two transfers per memory clock. Computed from kHz, not the rounded MHz.
  const double mem_clock_hz = static_cast<double>(mem_clock_khz) * 1000.0;
  profile.peak_mem_bandwidth_gb_s = 2.0 * mem_clock_hz * prop.memoryBusWidth / 8.0 / 1e9;
  return profile;
}

}  // namespace kselect
