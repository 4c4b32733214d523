#include "timing/event_timer.h"

#include <utility>

#include "cuda/runtime.h"

namespace kselect::timing {

using cuda::RuntimeErrorText;
using cuda::RuntimeStatus;

StatusOr<EventTimer> EventTimer::Create() {
  EventTimer timer;
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(cudaEventCreate(&timer.start_), "cudaEventCreate"));
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(cudaEventCreate(&timer.stop_), "cudaEventCreate"));
  return timer;
}

EventTimer::EventTimer(EventTimer&& other) noexcept
    : start_(std::exchange(other.start_, nullptr)), stop_(std::exchange(other.stop_, nullptr)) {}

EventTimer& EventTimer::operator=(EventTimer&& other) noexcept {
  if (this != &other) {
    std::swap(start_, other.start_);
    std::swap(stop_, other.stop_);
  }
  return *this;
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

Status EventTimer::Start(cudaStream_t stream) {
  return RuntimeStatus(cudaEventRecord(start_, stream), "cudaEventRecord(start)");
}

Status EventTimer::Stop(cudaStream_t stream) {
  return RuntimeStatus(cudaEventRecord(stop_, stream), "cudaEventRecord(stop)");
}

StatusOr<double> EventTimer::ElapsedMs() const {
  const cudaError_t waited = cudaEventSynchronize(stop_);
  if (waited != cudaSuccess) return InternalError(RuntimeErrorText(waited));
  float elapsed = 0;
  KSELECT_RETURN_IF_ERROR(
      RuntimeStatus(cudaEventElapsedTime(&elapsed, start_, stop_), "cudaEventElapsedTime"));
  return static_cast<double>(elapsed);
}

}  // namespace kselect::timing
