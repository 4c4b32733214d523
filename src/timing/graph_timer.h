// CUDA-graph timing (kselect/timing.h's method, batches as graphs): launches captured into CUDA
// graphs and timed with events, so a 5 us decode GEMM is timed as GPU time, not as the host's
// launch rate, and the interleaved comparison runs each config exactly as an application's CUDA
// graph would. Used by the tuner, replay, the head-to-head and the search; MedianLaunchMs is the
// plain eager timing of verify and the GPU tests.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kselect/provider.h"
#include "kselect/status.h"
#include "kselect/timing.h"
#include "kselect/verify.h"
#include "timing/event_timer.h"

namespace kselect::timing {

// A captured and instantiated graph, destroyed with its owner.
class CapturedGraph {
 public:
  // Captures whatever `enqueue` puts on `stream` (a capture-mode stream) into a graph.
  static StatusOr<CapturedGraph> Capture(cudaStream_t stream,
                                         const std::function<Status(cudaStream_t)>& enqueue);
  CapturedGraph(CapturedGraph&& other) noexcept;
  CapturedGraph& operator=(CapturedGraph&& other) noexcept;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph();

  Status Launch(cudaStream_t stream) const;

 private:
  CapturedGraph() = default;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// One device's timing state: its stream, an event timer and the operand sets of one problem.
class GraphTimer {
 public:
  static StatusOr<std::unique_ptr<GraphTimer>> Create(int device);
  ~GraphTimer();

  cudaStream_t stream() const { return stream_; }

  // The problem's operands (its fixed seed, verify::OperandSeed) in enough sets to hold
  // `rotate_bytes`, 2 x this device's L2 when 0, at most `max_sets`: what every timing here
  // cycles through.
  StatusOr<std::unique_ptr<verify::DeviceOperands>> RotatingOperands(
      const Problem& problem, std::span<const OperandSpec> specs, int64_t workspace_bytes,
      int64_t rotate_bytes, int64_t max_sets = 512) const;
  int64_t l2_bytes() const { return l2_bytes_; }

  // Median ms of one launch of `kernel` over `repeats` graph launches of enough launches to fill
  // `batch_ms`, cycling through `operands`' sets. A config whose eager estimate exceeds
  // `abort_bound_ms` (> 0) returns that estimate untimed further. Adds the GPU time it spent to
  // `*gpu_ms`.
  StatusOr<double> Time(PreparedKernel& kernel, const verify::DeviceOperands& operands,
                        double batch_ms, int repeats, double abort_bound_ms, double* gpu_ms);

  // Per kernel, the ms of one launch in each of `rounds` rounds; every round times each kernel's
  // graph once, starting at kernel (round % n) so no kernel always follows the same one.
  StatusOr<std::vector<std::vector<double>>> TimeInterleaved(
      std::span<PreparedKernel* const> kernels, const verify::DeviceOperands& operands,
      double batch_ms, int rounds, double* gpu_ms);

  // One eager, event-timed launch (ms), synchronised: the first launch loads the kernel's module.
  StatusOr<double> EagerLaunchMs(PreparedKernel& kernel, const KernelOperands& operands);

  // The events' ms around one launch of `graph`.
  StatusOr<double> TimeGraph(const CapturedGraph& graph);

 private:
  GraphTimer() = default;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<EventTimer> timer_;
  int64_t l2_bytes_ = 0;
};

// A config and the provider that runs it.
struct Contender {
  KernelProvider* provider = nullptr;
  KernelConfig config;
};

struct InterleavedRun {
  std::vector<std::vector<double>> rounds;  // per contender, the ms of one launch in each round
  // Per contender: its median ms and the median over rounds of contender 0's ms over its ms.
  std::vector<InterleavedFigure> figures;
  double gpu_ms = 0;  // GPU time spent timing
};

// Prepares every contender for `problem` and times them interleaved (GraphTimer::TimeInterleaved)
// on `operands`; contender 0 is the reference.
StatusOr<InterleavedRun> TimeContenders(GraphTimer& timer, const Problem& problem,
                                        std::span<const Contender> contenders,
                                        const verify::DeviceOperands& operands, double batch_ms,
                                        int rounds);

// The median GPU time of one eager launch (ms) on the legacy default stream: `warmup` launches,
// then `repeats` launches each timed alone with events. For checks and tests of a single kernel,
// not for comparisons (no batches, no rotation, no interleaving).
StatusOr<double> MedianLaunchMs(PreparedKernel& kernel, const KernelOperands& operands, int repeats,
                                int warmup = 3);

}  // namespace kselect::timing
