// Timing kernels on the GPU: the method every kselect figure follows, written once here. Every
// caller times through src/timing/: the bench worker (datasets), the tuner and replay, the
// head-to-head and search benchmarks, first-use timing in dispatch, and verify's launch timing.
//
// The method (METHOD.md of the device tool; PyTorch TunableOp and CUTLASS's profiler do the same):
//  1. Warm-up. A config's first launch can load its module (lazy loading) and meet idle clocks:
//     it is never a sample. It bounds the kernel's time from above; a second launch is the
//     estimate that sizes the batches.
//  2. Batches. Launches are timed in batches of a target GPU time (0.2-0.5 ms), so that the
//     events' resolution and the launch gaps do not decide. A batch is one pair of CUDA events
//     around N launches: eager behind a gate that holds the stream until all N are enqueued
//     (GatedRegions), eager back to back (first use), or one CUDA graph of N launches
//     (GraphTimer, as an application's graph runs them).
//  3. Rotation. Launches cycle through operand sets that together exceed 2 x L2
//     (RotatingSetCount), so no launch reads what the one before left in L2.
//  4. Interleaving. Contenders are timed in rounds, one batch of each per round in a rotated
//     order (round r starts at contender r mod n), so drift (clocks, power, temperature) hits all
//     alike; a speedup is the median of per-round ratios against contender 0. The bench's drift
//     control times a reference batch right after every batch of a config.
//  5. Medians. A figure is the median of its batches' per-launch times.
// Every CUDA status is checked; a failed launch or wait ends the timing with a Status.
#pragma once

#include <cstdint>
#include <span>

#include "kselect/kernel_config.h"
#include "kselect/provider.h"

namespace kselect {

// One contender's figure from interleaved rounds.
struct InterleavedFigure {
  KernelConfig config;
  double median_ms = 0;
  double speedup = 1;  // median over rounds of reference_ms / this config's ms in that round
};

// How many operand sets hold at least `rotate_bytes` (one more when a set is smaller than it, so
// the set a launch reads is never the one read just before), at most `max_sets`. CPU only.
int64_t RotatingSetCount(std::span<const OperandSpec> operands, int64_t rotate_bytes,
                         int64_t max_sets = 512);

// Launches per batch: enough for `target_ms` of GPU time at `estimate_ms` a launch (rounded up),
// at least 1, at most `max_launches`.
int LaunchesPerBatch(double target_ms, double estimate_ms, int max_launches);

}  // namespace kselect
