// HardwareProfile: what a measurement or a model needs to know about the GPU and software stack.
// Captured on the GPU host (QueryHardwareProfile) and saved as JSON, so GPU-less hosts can use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kselect/status.h"

namespace kselect {

struct HardwareProfile {
  std::string vendor = "nvidia";
  std::string device_name;  // "NVIDIA H200"
  std::string device_kind;  // the lender's kind name when known ("nvidia-h200"), else ""
  std::string arch;         // "sm_90" (or "gfx950" for AMD rows)
  std::string uuid;
  int32_t cc_major = 0, cc_minor = 0;
  int32_t sm_count = 0;
  int32_t sm_clock_mhz = 0;   // maximum SM clock
  int32_t mem_clock_mhz = 0;  // maximum memory clock
  int32_t mem_bus_width_bits = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t smem_per_block_optin_bytes = 0;
  int32_t regs_per_sm = 0;
  int32_t max_threads_per_sm = 0;
  int64_t global_mem_bytes = 0;
  double peak_mem_bandwidth_gb_s = 0;  // 2 * mem clock * bus width (DDR), GB/s
  // Versions as the libraries report them (e.g. CUDA 13000 = 13.0); 0 when unknown.
  int32_t driver_version = 0;
  int32_t runtime_version = 0;
  int32_t cublaslt_version = 0;
  int32_t cudnn_version = 0;
  int32_t nvrtc_version = 0;  // major * 1000 + minor * 10, as CUDA versions

  bool operator==(const HardwareProfile&) const = default;
};

// Reads device `device` through the CUDA runtime. Fails with kUnavailable, and a message saying
// why, on hosts without a driver or GPU; never aborts.
StatusOr<HardwareProfile> QueryHardwareProfile(int device = 0);

// Versions of the CUDA libraries this host has, without touching a GPU (device fields stay 0).
HardwareProfile QueryLibraryVersions();

std::string HardwareProfileToJson(const HardwareProfile& profile, int indent = 2);
// `source` names the text's origin (a file name) for error messages.
StatusOr<HardwareProfile> HardwareProfileFromJson(std::string_view text, std::string_view source);
Status SaveHardwareProfile(const HardwareProfile& profile, const std::string& path);
StatusOr<HardwareProfile> LoadHardwareProfile(const std::string& path);

}  // namespace kselect
