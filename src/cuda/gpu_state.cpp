#include "cuda/gpu_state.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <string>

#include "cuda/runtime.h"

namespace kselect::cuda {

namespace {
// The few NVML entry points used, declared here (the toolkit ships no nvml.h); their C ABI has
// been stable since NVML 2.
using NvmlReturn = int;  // nvmlReturn_t: 0 = NVML_SUCCESS
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
}  // namespace

struct GpuStateSampler::Api {
  void* library = nullptr;
  NvmlDevice device = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock_info)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power_usage)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;

  ~Api() {
    if (device != nullptr && shutdown != nullptr) shutdown();
    if (library != nullptr) dlclose(library);
  }
};

void GpuStateSpan::Add(const GpuState& s) {
  if (s.sm_clock_mhz > 0) {
    sm_clock_min_mhz =
        sm_clock_min_mhz == 0 ? s.sm_clock_mhz : std::min(sm_clock_min_mhz, s.sm_clock_mhz);
    sm_clock_max_mhz = std::max(sm_clock_max_mhz, s.sm_clock_mhz);
  }
  if (s.power_mw > 0) {
    power_w_sum += s.power_mw / 1000.0;
    ++power_samples;
  }
  temperature_max_c = std::max(temperature_max_c, s.temperature_c);
}

GpuStateSampler::GpuStateSampler(std::unique_ptr<Api> api) : api_(std::move(api)) {}
GpuStateSampler::~GpuStateSampler() = default;

StatusOr<std::unique_ptr<GpuStateSampler>> GpuStateSampler::Open(int device) {
  auto api = std::make_unique<Api>();
  dlerror();
  api->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    return UnavailableError(std::string("NVML is not available: ") +
                            (why != nullptr ? why : "dlopen(libnvidia-ml.so.1) failed"));
  }
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api->library, name));
    return fn != nullptr;
  };
  if (!resolve(api->init, "nvmlInit_v2") || !resolve(api->shutdown, "nvmlShutdown") ||
      !resolve(api->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !resolve(api->clock_info, "nvmlDeviceGetClockInfo") ||
      !resolve(api->power_usage, "nvmlDeviceGetPowerUsage") ||
      !resolve(api->temperature, "nvmlDeviceGetTemperature")) {
    return UnavailableError("libnvidia-ml.so.1 lacks an NVML entry point kselect reads");
  }
  char bus_id[32] = {};
  KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
  if (const NvmlReturn r = api->init(); r != kNvmlSuccess)
    return UnavailableError("nvmlInit failed (NVML error " + std::to_string(r) + ")");
  NvmlDevice handle = nullptr;
  if (const NvmlReturn r = api->by_pci_bus_id(bus_id, &handle); r != kNvmlSuccess) {
    api->shutdown();
    return UnavailableError(std::string("NVML has no device at PCI bus id ") + bus_id +
                            " (NVML error " + std::to_string(r) + ")");
  }
  api->device = handle;
  return std::unique_ptr<GpuStateSampler>(new GpuStateSampler(std::move(api)));
}

GpuState GpuStateSampler::Sample() const {
  GpuState s;
  unsigned value = 0;
  if (api_->clock_info(api_->device, kNvmlClockSm, &value) == kNvmlSuccess)
    s.sm_clock_mhz = static_cast<int32_t>(value);
  if (api_->power_usage(api_->device, &value) == kNvmlSuccess)
    s.power_mw = static_cast<int32_t>(value);
  if (api_->temperature(api_->device, kNvmlTemperatureGpu, &value) == kNvmlSuccess)
    s.temperature_c = static_cast<int32_t>(value);
  return s;
}

}  // namespace kselect::cuda
