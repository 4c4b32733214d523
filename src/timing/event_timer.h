// The one CUDA event timer (kselect/timing.h's method): every timed region in kselect is a pair
// of these events.
#pragma once

#include <cuda_runtime_api.h>

#include "kselect/status.h"

namespace kselect::timing {

// Times one region of a stream's work with a start and a stop event (GPU time between them).
// Move-only; the events are destroyed with it.
class EventTimer {
 public:
  static StatusOr<EventTimer> Create();
  EventTimer(EventTimer&& other) noexcept;
  EventTimer& operator=(EventTimer&& other) noexcept;
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer();

  // Record the start / stop event on `stream` (nullptr: the legacy default stream).
  Status Start(cudaStream_t stream);
  Status Stop(cudaStream_t stream);
  // Waits for the stop event and returns the milliseconds between the two events. The error of
  // the wait (a kernel in the region failed) has the runtime's text alone as its message.
  StatusOr<double> ElapsedMs() const;

 private:
  EventTimer() = default;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace kselect::timing
