// The GPU's clock, power and temperature as NVML reports them, read while the bench times a
// config: the state behind a measurement, recorded per row because the same config timed in two
// runs can differ by up to 18 % when the duty cycle moves clocks and power (docs/lab/drift.md).
// NVML is dlopen'ed (libnvidia-ml.so.1 ships with the driver): without it the sampler is absent
// and rows record 0 (not sampled), never a failure.
#pragma once

#include <cstdint>
#include <memory>

#include "kselect/status.h"

namespace kselect::cuda {

struct GpuState {
  int32_t sm_clock_mhz = 0;
  int32_t power_mw = 0;  // board power draw as NVML averages it
  int32_t temperature_c = 0;
};

// Running extremes and mean of the samples taken while one config was timed.
struct GpuStateSpan {
  int32_t sm_clock_min_mhz = 0, sm_clock_max_mhz = 0;
  double power_w_sum = 0;
  int32_t power_samples = 0;
  int32_t temperature_max_c = 0;

  void Add(const GpuState& s);
  double mean_power_w() const { return power_samples > 0 ? power_w_sum / power_samples : 0; }
};

class GpuStateSampler {
 public:
  // The sampler of CUDA device `device` (matched to NVML by PCI bus id, since NVML's and CUDA's
  // device orders can differ); kUnavailable when NVML or the device is not there.
  static StatusOr<std::unique_ptr<GpuStateSampler>> Open(int device);
  ~GpuStateSampler();
  GpuStateSampler(const GpuStateSampler&) = delete;
  GpuStateSampler& operator=(const GpuStateSampler&) = delete;

  // Fields NVML could not read stay 0.
  GpuState Sample() const;

 private:
  struct Api;
  explicit GpuStateSampler(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace kselect::cuda
