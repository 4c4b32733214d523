// Eager batches behind gates (kselect/timing.h, step 2): what the bench worker times a config
// with. A region is a gate (a host function holding the stream until the host has enqueued the
// region's launches, so back-to-back launches of a short kernel are timed as GPU time, not as the
// host's launch rate), a start event, N launches and a stop event; with drift control a batch of
// the reference follows in a region of its own.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "kselect/status.h"
#include "timing/event_timer.h"

namespace kselect::timing {

class GatedRegions {
 public:
  // `count` regions (region r of a config's timing: 0 = the estimate, 1.. = the timed batches).
  static StatusOr<GatedRegions> Create(int count);
  int count() const { return static_cast<int>(regions_.size()); }

  // Enqueues region `r` on `stream`: (gate,) start event, `iters` launches of `launch`, stop
  // event; with `reference_iters` > 0 the reference's batch (`launch_reference`) follows in its
  // own region. Then opens the gate. A failed launch still opens the gate, so the stream never
  // waits on it for long.
  Status Enqueue(int r, cudaStream_t stream, int iters, const std::function<Status()>& launch,
                 bool gated = true, int reference_iters = 0,
                 const std::function<Status()>& launch_reference = {});

  // Waits for region `r`: `*ms` = its ms per launch over `iters` launches, and with
  // `reference_iters` > 0 `*reference_ms` = the reference batch's ms per launch.
  Status PerLaunchMs(int r, int iters, double* ms, int reference_iters = 0,
                     double* reference_ms = nullptr) const;

 private:
  // Holds the stream (from a CUDA host-function thread) until the host opens it. Bounded: a
  // gate left shut (a launch that blocked on a full queue) opens itself after 100 ms, which
  // only spoils that one timing.
  struct Gate {
    std::atomic<bool> open{true};
    static void CUDART_CB Wait(void* self);
  };
  GatedRegions() = default;
  std::vector<EventTimer> regions_;
  std::vector<EventTimer> reference_regions_;  // the drift reference's batch of region r
  std::vector<std::unique_ptr<Gate>> gates_;
};

}  // namespace kselect::timing
