#include "timing/graph_timer.h"

#include "core/statistics.h"
#include "cuda/runtime.h"

#include <algorithm>
#include <cmath>

namespace kselect::timing {

using cuda::RuntimeStatus;

StatusOr<CapturedGraph> CapturedGraph::Capture(cudaStream_t stream,
                                               const std::function<Status(cudaStream_t)>& enqueue) {
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
  const Status enqueued = enqueue(stream);
  CapturedGraph captured;
  const cudaError_t ended = cudaStreamEndCapture(stream, &captured.graph_);
  KSELECT_RETURN_IF_ERROR(enqueued);
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(ended, "cudaStreamEndCapture"));
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(cudaGraphInstantiate(&captured.exec_, captured.graph_, 0),
                                        "cudaGraphInstantiate"));
  return captured;
}

CapturedGraph::CapturedGraph(CapturedGraph&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

CapturedGraph& CapturedGraph::operator=(CapturedGraph&& other) noexcept {
  if (this != &other) {
    this->~CapturedGraph();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

Status CapturedGraph::Launch(cudaStream_t stream) const {
  return RuntimeStatus(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
}

StatusOr<std::unique_ptr<GraphTimer>> GraphTimer::Create(int device) {
  KSELECT_RETURN_IF_ERROR(cuda::UseDevice(device));
  std::unique_ptr<GraphTimer> timer(new GraphTimer());
  timer->device_ = device;
  int l2 = 0;
  KSELECT_RETURN_IF_ERROR(
      RuntimeStatus(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 size"));
  timer->l2_bytes_ = l2;
  KSELECT_RETURN_IF_ERROR(RuntimeStatus(
      cudaStreamCreateWithFlags(&timer->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  KSELECT_ASSIGN_OR_RETURN(EventTimer events, EventTimer::Create());
  timer->timer_ = std::make_unique<EventTimer>(std::move(events));
  return timer;
}

GraphTimer::~GraphTimer() {
  timer_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

StatusOr<std::unique_ptr<verify::DeviceOperands>> GraphTimer::RotatingOperands(
    const Problem& problem, std::span<const OperandSpec> specs, int64_t workspace_bytes,
    int64_t rotate_bytes, int64_t max_sets) const {
  return verify::DeviceOperands::CreateRotating(
      specs, workspace_bytes, verify::OperandSeed(problem),
      rotate_bytes > 0 ? rotate_bytes : 2 * l2_bytes_, max_sets);
}

StatusOr<double> GraphTimer::EagerLaunchMs(PreparedKernel& kernel, const KernelOperands& operands) {
  KSELECT_RETURN_IF_ERROR(timer_->Start(stream_));
  const Status launched = kernel.Launch(operands, stream_);
  KSELECT_RETURN_IF_ERROR(timer_->Stop(stream_));
  KSELECT_RETURN_IF_ERROR(launched);
  StatusOr<double> ms = timer_->ElapsedMs();
  if (!ms.ok()) return InternalError("kernel failed: " + ms.status().message());
  return ms;
}

StatusOr<double> GraphTimer::TimeGraph(const CapturedGraph& graph) {
  KSELECT_RETURN_IF_ERROR(timer_->Start(stream_));
  const Status launched = graph.Launch(stream_);
  KSELECT_RETURN_IF_ERROR(timer_->Stop(stream_));
  KSELECT_RETURN_IF_ERROR(launched);
  StatusOr<double> ms = timer_->ElapsedMs();
  if (!ms.ok()) return InternalError("kernel failed: " + ms.status().message());
  return ms;
}

namespace {

// A graph of `iters` launches of `kernel`, the operand sets in turn.
StatusOr<CapturedGraph> CaptureLaunches(cudaStream_t stream, PreparedKernel& kernel,
                                        const verify::DeviceOperands& operands, int iters) {
  return CapturedGraph::Capture(stream, [&](cudaStream_t s) -> Status {
    for (int i = 0; i < iters; ++i) {
      KSELECT_RETURN_IF_ERROR(kernel.Launch(operands.set(static_cast<size_t>(i)), s));
    }
    return Status::Ok();
  });
}

}  // namespace

StatusOr<double> GraphTimer::Time(PreparedKernel& kernel, const verify::DeviceOperands& operands,
                                  double batch_ms, int repeats, double abort_bound_ms,
                                  double* gpu_ms) {
  KSELECT_CHECK(repeats >= 1);
  // The first launch loads the kernel's module (not allowed inside a capture, and slow): an
  // upper bound of the kernel's time. A second eager launch is a fair estimate.
  KSELECT_ASSIGN_OR_RETURN(const double first, EagerLaunchMs(kernel, operands.set(0)));
  KSELECT_ASSIGN_OR_RETURN(const double estimate, EagerLaunchMs(kernel, operands.set(1)));
  *gpu_ms += first + estimate;
  if (abort_bound_ms > 0 && estimate > abort_bound_ms) return estimate;
  const int iters = LaunchesPerBatch(batch_ms, estimate, 256);
  KSELECT_ASSIGN_OR_RETURN(const CapturedGraph graph,
                           CaptureLaunches(stream_, kernel, operands, iters));
  KSELECT_ASSIGN_OR_RETURN(const double warm, TimeGraph(graph));
  *gpu_ms += warm;
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    KSELECT_ASSIGN_OR_RETURN(const double elapsed, TimeGraph(graph));
    *gpu_ms += elapsed;
    ms.push_back(elapsed / iters);
  }
  return Median(std::move(ms));
}

StatusOr<std::vector<std::vector<double>>> GraphTimer::TimeInterleaved(
    std::span<PreparedKernel* const> kernels, const verify::DeviceOperands& operands,
    double batch_ms, int rounds, double* gpu_ms) {
  KSELECT_CHECK(!kernels.empty() && rounds >= 1);
  std::vector<CapturedGraph> graphs;
  std::vector<int> iters;
  for (PreparedKernel* kernel : kernels) {
    KSELECT_ASSIGN_OR_RETURN(const double first, EagerLaunchMs(*kernel, operands.set(0)));
    KSELECT_ASSIGN_OR_RETURN(const double estimate, EagerLaunchMs(*kernel, operands.set(1)));
    *gpu_ms += first + estimate;
    iters.push_back(LaunchesPerBatch(batch_ms, estimate, 256));
    KSELECT_ASSIGN_OR_RETURN(CapturedGraph graph,
                             CaptureLaunches(stream_, *kernel, operands, iters.back()));
    KSELECT_ASSIGN_OR_RETURN(const double warm, TimeGraph(graph));
    *gpu_ms += warm;
    graphs.push_back(std::move(graph));
  }
  const size_t n = kernels.size();
  std::vector<std::vector<double>> ms(n);
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < n; ++j) {
      const size_t i = (static_cast<size_t>(r) + j) % n;
      KSELECT_ASSIGN_OR_RETURN(const double elapsed, TimeGraph(graphs[i]));
      *gpu_ms += elapsed;
      ms[i].push_back(elapsed / iters[i]);
    }
  }
  return ms;
}

StatusOr<InterleavedRun> TimeContenders(GraphTimer& timer, const Problem& problem,
                                        std::span<const Contender> contenders,
                                        const verify::DeviceOperands& operands, double batch_ms,
                                        int rounds) {
  std::vector<std::unique_ptr<PreparedKernel>> kernels;
  std::vector<PreparedKernel*> pointers;
  for (const Contender& c : contenders) {
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> kernel,
                             c.provider->Prepare(problem, c.config));
    pointers.push_back(kernel.get());
    kernels.push_back(std::move(kernel));
  }
  InterleavedRun run;
  KSELECT_ASSIGN_OR_RETURN(
      run.rounds, timer.TimeInterleaved(pointers, operands, batch_ms, rounds, &run.gpu_ms));
  for (size_t slot = 0; slot < contenders.size(); ++slot) {
    InterleavedFigure f;
    f.config = contenders[slot].config;
    f.median_ms = Median(run.rounds[slot]);
    f.speedup = MedianRatio(run.rounds[0], run.rounds[slot]);
    run.figures.push_back(std::move(f));
  }
  return run;
}

StatusOr<double> MedianLaunchMs(PreparedKernel& kernel, const KernelOperands& operands, int repeats,
                                int warmup) {
  KSELECT_CHECK(repeats >= 1);
  for (int i = 0; i < warmup; ++i) KSELECT_RETURN_IF_ERROR(kernel.Launch(operands, nullptr));
  KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  KSELECT_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    KSELECT_RETURN_IF_ERROR(timer.Start(nullptr));
    KSELECT_RETURN_IF_ERROR(kernel.Launch(operands, nullptr));
    KSELECT_RETURN_IF_ERROR(timer.Stop(nullptr));
    KSELECT_ASSIGN_OR_RETURN(const double elapsed, timer.ElapsedMs());
    ms.push_back(elapsed);
  }
  KSELECT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace kselect::timing
