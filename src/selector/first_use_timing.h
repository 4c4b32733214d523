// First-use orders shared by the dispatchers (dispatch.cpp for one selector, cross_provider.cpp
// for a decision over two providers): kept per problem, made by the timing module's
// timing::TimeContendersAtFirstUse (timing/first_use.h), never while a stream is captured.
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
