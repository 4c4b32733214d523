// First-use timing (kselect/timing.h's method): a few prepared kernels timed interleaved on the
// caller's inputs, the fastest first. Shared by the dispatchers (selector/dispatch.cpp for one
// selector, selector/cross_provider.cpp for a decision over two providers).
#pragma once

#include <string>
#include <vector>

#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect::timing {

struct FirstUseContender {
  std::string key;  // ConfigKey of the kernel's config
  PreparedKernel* kernel = nullptr;
};

// A timed contender: its key and the median ms of one launch over the timed batches.
struct TimedContender {
  std::string key;
  double median_ms = 0;
};

// Times `contenders` interleaved (warm-up, batches of at least 0.3 ms, the median of 7 in a
// rotated order) on `operands` with scratch copies of the operands `specs` marks as written (the
// caller's output is untouched, and beta * C reads real values), and returns them with their
// medians, fastest first; a contender that fails its warm-up launches is left out. One whose
// warm-up launch took over 3x the fastest's (and over 0.5 ms) is not timed further and comes last
// with its warm-up figure; a single contender left then comes first with its warm-up figure.
// Empty when fewer than two launched. `cold_l2`: launches cycle through copies of the read operands
// that together exceed 2 x L2 (SelectorOptions::first_use_cold_l2). `graph_batches`: each batch is
// a CUDA graph of the contender's launches, captured once on a stream of the timing's own
// (SelectorOptions::first_use_graphs; eager launches on `stream` where a contender cannot be
// captured). `stream` is a cudaStream_t. Returns after the last batch completed.
StatusOr<std::vector<TimedContender>> TimeContendersAtFirstUse(
    std::vector<FirstUseContender> contenders, const std::vector<OperandSpec>& specs,
    const KernelOperands& operands, bool cold_l2, bool graph_batches, void* stream);

}  // namespace kselect::timing
