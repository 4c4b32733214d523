// First-use timing (kselect/timing.h's method, batches interleaved, each batch a CUDA graph or
// eager launches): the contenders a dispatcher times on the caller's inputs at a problem's first
// use.
#include "timing/first_use.h"

#include <algorithm>
#include <memory>

#include "core/statistics.h"
#include "cuda/runtime.h"
#include "kselect/timing.h"
#include "timing/event_timer.h"
#include "timing/graph_timer.h"

namespace kselect::timing {
namespace {

// First-use timing: batches of launches at least this long (small kernels are batched so that
// the events' resolution and launch gaps do not decide), this many per config, interleaved.
constexpr double kTimedBatchMs = 0.3;
constexpr int kTimedBatches = 7;
constexpr int kMaxLaunchesPerBatch = 128;
// A contender whose warm-up launch took this many times the fastest's, and at least
// kHopelessMinMs, cannot win: it is not timed further and keeps its warm-up figure. Among the
// cuDNN model's top 5 for batch-1 depthwise 7x7 convolutions some engines take seconds a launch,
// and their eight timed batches made single decisions cost 6-68 s on the H200 (session 32).
constexpr double kHopelessFactor = 3.0;
constexpr double kHopelessMinMs = 0.5;

// The operand sets first-use timing cycles through: set 0 = `operands` (with the written ones
// already replaced by scratch copies), then copies of the read operands, laid out one set after
// another in `copies`, as many as the bench's rotation past 2 x L2 has sets (RotatingSetCount).
// Only set 0 where the copies do not fit in device memory: timing warm is better than failing the
// call.
StatusOr<std::vector<KernelOperands>> ColdL2Sets(const std::vector<OperandSpec>& specs,
                                                 const KernelOperands& operands,
                                                 cuda::DeviceBuffer& copies, cudaStream_t stream) {
  constexpr int64_t kAlignment = 256;
  std::vector<int64_t> offset(specs.size(), -1);  // within a set; -1 = not copied
  std::vector<OperandSpec> read;
  int64_t set_bytes = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].access != OperandAccess::kRead) continue;
    read.push_back(specs[i]);
    offset[i] = set_bytes;
    set_bytes += (specs[i].bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  int device = 0;
  int l2 = 0;
  KSELECT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const int64_t count = read.empty() ? 1 : RotatingSetCount(read, 2 * int64_t{l2});
  std::vector<KernelOperands> sets = {operands};
  if (count < 2 || !copies.Reserve((count - 1) * set_bytes).ok()) return sets;
  auto* base = static_cast<char*>(copies.data());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (offset[i] < 0) continue;
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + offset[i], operands.buffers[i],
                                                 static_cast<size_t>(specs[i].bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
  }
  // The other copies double from the first: log2(count) copies, not one per operand and set.
  for (int64_t made = 1; made < count - 1; made *= 2) {
    const int64_t more = std::min(made, count - 1 - made);
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + made * set_bytes, base,
                                                 static_cast<size_t>(more * set_bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
  }
  for (int64_t set = 1; set < count; ++set) {
    KernelOperands copy = operands;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (offset[i] >= 0) copy.buffers[i] = base + (set - 1) * set_bytes + offset[i];
    }
    sets.push_back(std::move(copy));
  }
  return sets;
}

}  // namespace

StatusOr<std::vector<TimedContender>> TimeContendersAtFirstUse(
    std::vector<FirstUseContender> contenders, const std::vector<OperandSpec>& specs,
    const KernelOperands& operands, bool cold_l2, bool graph_batches, void* stream_handle) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  struct Timed {
    std::string key;
    PreparedKernel* kernel = nullptr;
    int launches = 1;
    std::vector<double> ms_per_launch;
    std::unique_ptr<CapturedGraph> graph;  // the batch, in graph form
  };
  std::vector<Timed> timed;
  for (FirstUseContender& c : contenders) {
    timed.push_back({std::move(c.key), c.kernel, 1, {}, nullptr});
  }
  if (timed.size() < 2) return std::vector<TimedContender>{};
  if (specs.size() != operands.buffers.size()) {
    return InvalidArgumentError("dispatch: " + std::to_string(operands.buffers.size()) +
                                " operands given, the problem has " + std::to_string(specs.size()));
  }
  KernelOperands scratch_operands = operands;
  std::vector<cuda::DeviceBuffer> scratch(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].access == OperandAccess::kRead) continue;
    KSELECT_RETURN_IF_ERROR(scratch[i].Reserve(specs[i].bytes));
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(scratch[i].data(), operands.buffers[i],
                                                 static_cast<size_t>(specs[i].bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
    scratch_operands.buffers[i] = scratch[i].data();
  }
  cuda::DeviceBuffer read_copies;
  std::vector<KernelOperands> sets = {scratch_operands};
  if (cold_l2) {
    KSELECT_ASSIGN_OR_RETURN(sets, ColdL2Sets(specs, scratch_operands, read_copies, stream));
  }
  size_t next_set = 0;  // launches cycle through the sets across batches and contenders
  KSELECT_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  auto time_batch = [&](Timed& t) -> StatusOr<double> {
    KSELECT_RETURN_IF_ERROR(timer.Start(stream));
    for (int i = 0; i < t.launches; ++i) {
      KSELECT_RETURN_IF_ERROR(t.kernel->Launch(sets[next_set], stream));
      next_set = (next_set + 1) % sets.size();
    }
    KSELECT_RETURN_IF_ERROR(timer.Stop(stream));
    KSELECT_ASSIGN_OR_RETURN(double ms, timer.ElapsedMs());
    return ms / t.launches;
  };
  // Warm-up: two launches each; the second sizes its batches. A first launch can load the
  // kernel's module (lazy loading) or meet idle clocks: sized from it, a config got one launch
  // per batch and paid the launch gaps the others amortise, which made the timing pick
  // against it (seen on an H200 with cuDNN's runtime-compiled engines). A config that fails
  // here leaves the timing (the dispatch loop reports it if it comes to run it); a device in
  // error fails the batches below.
  std::vector<Timed> runnable;
  std::vector<double> warm_ms;
  for (Timed& t : timed) {
    if (!time_batch(t).ok()) continue;
    auto ms = time_batch(t);
    if (!ms.ok()) continue;
    t.launches =
        std::clamp(static_cast<int>(kTimedBatchMs / std::max(*ms, 1e-4)), 1, kMaxLaunchesPerBatch);
    runnable.push_back(std::move(t));
    warm_ms.push_back(*ms);
  }
  if (runnable.size() < 2) return std::vector<TimedContender>{};
  // The hopeless leave the timing; they follow the timed ones, slowest last.
  std::vector<TimedContender> hopeless;
  {
    const double fastest = *std::min_element(warm_ms.begin(), warm_ms.end());
    std::vector<Timed> kept;
    std::vector<double> kept_warm_ms;
    for (size_t i = 0; i < runnable.size(); ++i) {
      if (warm_ms[i] > kHopelessFactor * fastest && warm_ms[i] > kHopelessMinMs) {
        hopeless.push_back({std::move(runnable[i].key), warm_ms[i]});
      } else {
        kept.push_back(std::move(runnable[i]));
        kept_warm_ms.push_back(warm_ms[i]);
      }
    }
    runnable = std::move(kept);
    warm_ms = std::move(kept_warm_ms);
    std::stable_sort(hopeless.begin(), hopeless.end(),
                     [](const auto& a, const auto& b) { return a.median_ms < b.median_ms; });
  }
  if (runnable.size() == 1) {
    // One left: nothing to time it against; its warm-up figure stands.
    std::vector<TimedContender> order = {{runnable.front().key, warm_ms.front()}};
    order.insert(order.end(), hopeless.begin(), hopeless.end());
    return order;  // the warm-up's ElapsedMs waited for its launches: the scratch may go
  }
  // Graph form: each contender's batch captured once on a stream of its own, its launches cycling
  // through every operand set (a whole number of passes), and replayed for each timed batch, as
  // an application's CUDA graph runs kernels. Eager batches add the launch gaps of kernels of a
  // few microseconds, and on decode GEMMs they ranked configs 2-3 % apart from how graphs run
  // them (docs/lab/selector.md, the vendor guard). Where a contender cannot be captured, every
  // contender is timed eager.
  cudaStream_t graph_stream = nullptr;
  cudaEvent_t inputs_ready = nullptr;
  struct StreamAndEvent {
    cudaStream_t& stream;
    cudaEvent_t& event;
    ~StreamAndEvent() {
      if (event != nullptr) cudaEventDestroy(event);
      if (stream != nullptr) cudaStreamDestroy(stream);
    }
  } graph_resources{graph_stream, inputs_ready};
  if (graph_batches) {
    bool captured =
        cudaStreamCreateWithFlags(&graph_stream, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming) == cudaSuccess;
    // The graphs read what the caller's stream wrote (the scratch and rotated copies).
    captured = captured && cudaEventRecord(inputs_ready, stream) == cudaSuccess &&
               cudaStreamWaitEvent(graph_stream, inputs_ready, 0) == cudaSuccess;
    for (Timed& t : runnable) {
      if (!captured) break;
      const int sets_count = static_cast<int>(sets.size());
      t.launches = (t.launches + sets_count - 1) / sets_count * sets_count;
      auto graph = CapturedGraph::Capture(graph_stream, [&](cudaStream_t s) -> Status {
        for (int i = 0; i < t.launches; ++i) {
          KSELECT_RETURN_IF_ERROR(t.kernel->Launch(sets[static_cast<size_t>(i) % sets.size()], s));
        }
        return Status::Ok();
      });
      if (!graph.ok()) {
        cudaGetLastError();  // a refused capture leaves no error behind for the eager batches
        captured = false;
        break;
      }
      t.graph = std::make_unique<CapturedGraph>(std::move(*graph));
    }
    if (!captured) {
      for (Timed& t : runnable) t.graph.reset();
    }
  }
  auto time_graph = [&](Timed& t) -> StatusOr<double> {
    KSELECT_RETURN_IF_ERROR(timer.Start(graph_stream));
    KSELECT_RETURN_IF_ERROR(t.graph->Launch(graph_stream));
    KSELECT_RETURN_IF_ERROR(timer.Stop(graph_stream));
    KSELECT_ASSIGN_OR_RETURN(double ms, timer.ElapsedMs());
    return ms / t.launches;
  };
  auto time_timed_batch = [&](Timed& t) { return t.graph ? time_graph(t) : time_batch(t); };
  // One untimed round of whole batches, so that the timed ones start at working clocks.
  for (Timed& t : runnable) KSELECT_RETURN_IF_ERROR(time_timed_batch(t).status());
  for (int batch = 0; batch < kTimedBatches; ++batch) {
    // A rotated order each batch, so that no config always follows the same one.
    for (size_t i = 0; i < runnable.size(); ++i) {
      Timed& t = runnable[(i + static_cast<size_t>(batch)) % runnable.size()];
      KSELECT_ASSIGN_OR_RETURN(double ms, time_timed_batch(t));
      t.ms_per_launch.push_back(ms);
    }
  }
  std::vector<TimedContender> order;
  for (Timed& t : runnable) order.push_back({t.key, Median(std::move(t.ms_per_launch))});
  // Stable: between equal medians the model's order decides.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.median_ms < b.median_ms; });
  order.insert(order.end(), hopeless.begin(), hopeless.end());
  // ElapsedMs waited for the last batch (on either stream): the scratch and copies are free to go.
  return order;
}

}  // namespace kselect::timing
