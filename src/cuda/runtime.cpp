#include "cuda/runtime.h"

#include <algorithm>
#include <utility>

namespace kselect::cuda {

std::string RuntimeErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

std::string NoDeviceText(cudaError_t error) {
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    int driver_version = 0, runtime_version = 0;
    cudaDriverGetVersion(&driver_version);
    cudaRuntimeGetVersion(&runtime_version);
    if (driver_version == 0) return "this host has no NVIDIA GPU driver (no GPU to run on)";
    if (error == cudaErrorNoDevice) return "the NVIDIA driver reports no CUDA device";
    if (driver_version < runtime_version) {
      return "the NVIDIA driver supports CUDA " + std::to_string(driver_version) +
             " but kselect was built with CUDA runtime " + std::to_string(runtime_version);
    }
  }
  return RuntimeErrorText(error);
}

Status RuntimeStatus(cudaError_t error, std::string_view what, StatusCode code) {
  if (error == cudaSuccess) return Status::Ok();
  return Status(code, std::string(what) + ": " + RuntimeErrorText(error));
}

Status UseDevice(int device) {
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess || count == 0) {
    return UnavailableError("no CUDA device on this host" +
                            (counted != cudaSuccess ? ": " + RuntimeErrorText(counted) : ""));
  }
  KSELECT_RETURN_IF_ERROR(
      RuntimeStatus(cudaSetDevice(device), "cudaSetDevice", StatusCode::kUnavailable));
  return RuntimeStatus(cudaFree(nullptr), "cudaFree(nullptr)", StatusCode::kUnavailable);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Status DeviceBuffer::Reserve(int64_t bytes) {
  if (data_ != nullptr && bytes <= bytes_) return Status::Ok();
  Free();
  // cudaMalloc(0) may return null; callers pass the address on, so allocate a little instead.
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 256));
  void* data = nullptr;
  KSELECT_RETURN_IF_ERROR(
      RuntimeStatus(cudaMalloc(&data, size), "cudaMalloc(" + std::to_string(size) + ")"));
  data_ = data;
  bytes_ = bytes;
  return Status::Ok();
}

void DeviceBuffer::Free() {
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace kselect::cuda
