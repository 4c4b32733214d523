// The CUDA runtime pieces kselect's device code shares: runtime errors as Status, device buffers
// owned by RAII (the event timer is the timing module's: src/timing/event_timer.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kselect/status.h"

namespace kselect::cuda {

// "cudaErrorInvalidValue (invalid argument)".
std::string RuntimeErrorText(cudaError_t error);

// Why a CUDA runtime call that needs a device failed with `error`, in words a user can act on:
// cudaErrorInsufficientDriver also means "no driver at all" (a host without a GPU), which is
// said as such rather than blaming the driver's version.
std::string NoDeviceText(cudaError_t error);

// OK for cudaSuccess; otherwise `code` with "what: cudaError... (text)".
Status RuntimeStatus(cudaError_t error, std::string_view what,
                     StatusCode code = StatusCode::kInternal);

// Returns from the enclosing function (a Status or StatusOr one) when a runtime call fails.
#define KSELECT_CUDA_RETURN_IF_ERROR(expr) \
  KSELECT_RETURN_IF_ERROR(::kselect::cuda::RuntimeStatus((expr), #expr))

// OK when a CUDA device exists and `device` can be made current (its primary context created,
// which loading driver-API modules needs); kUnavailable with the reason otherwise.
Status UseDevice(int device);

// One cudaMalloc allocation, freed when the owner goes. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Free(); }

  // Makes the buffer hold at least `bytes` (reallocating only to grow; contents are then lost).
  // Never returns a null address on success, even for 0 bytes.
  Status Reserve(int64_t bytes);
  void Free();
  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace kselect::cuda
