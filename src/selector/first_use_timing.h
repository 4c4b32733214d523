// First-use timing shared by the dispatchers (dispatch.cpp for one selector, cross_provider.cpp
// for a decision over two providers): a few prepared kernels timed interleaved on the caller's
// inputs, the fastest first.
#pragma once

#include <string>
#include <vector>

#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect {

struct FirstUseContender {
  std::string key;  // ConfigKey of the kernel's config
  PreparedKernel* kernel = nullptr;
};

// Times `contenders` interleaved (warm-up, batches of at least 0.3 ms, the median of 7 in a
// rotated order) on `operands` with scratch copies of the operands `specs` marks as written (the
// caller's output is untouched, and beta * C reads real values), and returns their keys, fastest
// first; a contender that fails its warm-up launches is left out. Empty when fewer than two could
// be timed. `stream` is a cudaStream_t. Returns after the last batch completed.
StatusOr<std::vector<std::string>> TimeContendersAtFirstUse(
    std::vector<FirstUseContender> contenders, const std::vector<OperandSpec>& specs,
    const KernelOperands& operands, void* stream);

}  // namespace kselect
