// First-use timing shared by the dispatchers (dispatch.cpp for one selector, cross_provider.cpp
// for a decision over two providers): a few prepared kernels timed interleaved on the caller's
// inputs, the fastest first.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/provider.h"
#include "kselect/selector.h"
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
// be timed. `cold_l2`: launches cycle through copies of the read operands that together exceed
// 2 x L2 (SelectorOptions::first_use_cold_l2). `stream` is a cudaStream_t. Returns after the
// last batch completed.
StatusOr<std::vector<std::string>> TimeContendersAtFirstUse(
    std::vector<FirstUseContender> contenders, const std::vector<OperandSpec>& specs,
    const KernelOperands& operands, bool cold_l2, void* stream);

// The order first-use timing settled for `problem_key`: found in `orders`, or made now by
// `time_now` and kept there (the caller holds the lock guarding `orders`). None (null) while
// `stream` is being captured into a graph, and `*note` says so. `*timed` = the configs this call
// timed (0 when the order was found).
StatusOr<const std::vector<std::string>*> FirstUseOrder(
    std::unordered_map<std::string, std::vector<std::string>>& orders,
    const std::string& problem_key, void* stream,
    const std::function<StatusOr<std::vector<std::string>>()>& time_now, int* timed,
    std::string* note);

// Indices into `ranked`: the configs `timed_order` names (fastest first), then the rest in rank
// order.
std::vector<size_t> TimedFirst(std::span<const RankedConfig> ranked,
                               std::span<const std::string> timed_order);

}  // namespace kselect
