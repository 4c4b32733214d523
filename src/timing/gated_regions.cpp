#include "timing/gated_regions.h"

#include <chrono>
#include <utility>

#include "cuda/runtime.h"

namespace kselect::timing {

void CUDART_CB GatedRegions::Gate::Wait(void* self) {
  auto* gate = static_cast<Gate*>(self);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (!gate->open.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline) {
  }
}

StatusOr<GatedRegions> GatedRegions::Create(int count) {
  GatedRegions made;
  for (int r = 0; r < count; ++r) {
    KSELECT_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
    made.regions_.push_back(std::move(timer));
    KSELECT_ASSIGN_OR_RETURN(EventTimer reference_timer, EventTimer::Create());
    made.reference_regions_.push_back(std::move(reference_timer));
    made.gates_.push_back(std::make_unique<Gate>());
  }
  return made;
}

Status GatedRegions::Enqueue(int r, cudaStream_t stream, int iters,
                             const std::function<Status()>& launch, bool gated, int reference_iters,
                             const std::function<Status()>& launch_reference) {
  KSELECT_CHECK(r >= 0 && r < count());
  Gate& gate = *gates_[static_cast<size_t>(r)];
  if (gated) {
    gate.open.store(false, std::memory_order_relaxed);
    cudaError_t e = cudaLaunchHostFunc(stream, &Gate::Wait, &gate);
    if (e != cudaSuccess) return InternalError("cudaLaunchHostFunc: " + cuda::RuntimeErrorText(e));
  }
  EventTimer& region = regions_[static_cast<size_t>(r)];
  Status launched = region.Start(stream);
  for (int i = 0; i < iters && launched.ok(); ++i) launched = launch();
  Status stopped = region.Stop(stream);
  if (reference_iters > 0 && launched.ok() && stopped.ok()) {
    EventTimer& reference_region = reference_regions_[static_cast<size_t>(r)];
    launched = reference_region.Start(stream);
    for (int i = 0; i < reference_iters && launched.ok(); ++i) launched = launch_reference();
    stopped = reference_region.Stop(stream);
  }
  gate.open.store(true, std::memory_order_release);
  return launched.ok() ? stopped : launched;
}

Status GatedRegions::PerLaunchMs(int r, int iters, double* ms, int reference_iters,
                                 double* reference_ms) const {
  KSELECT_CHECK(r >= 0 && r < count());
  StatusOr<double> elapsed = regions_[static_cast<size_t>(r)].ElapsedMs();
  if (!elapsed.ok()) return InternalError("kernel failed: " + elapsed.status().message());
  *ms = *elapsed / iters;
  if (reference_iters > 0) {
    StatusOr<double> ref = reference_regions_[static_cast<size_t>(r)].ElapsedMs();
    if (!ref.ok()) return InternalError("drift reference kernel failed: " + ref.status().message());
    *reference_ms = *ref / reference_iters;
  }
  return Status::Ok();
}

}  // namespace kselect::timing
