// First-use orders shared by the dispatchers (dispatch.cpp for one selector, cross_provider.cpp
// for a decision over two providers): kept per problem, made by the timing module's
// timing::TimeContendersAtFirstUse (timing/first_use.h), never while a stream is captured, and
// guarded: the vendor heuristic's first pick is timed beside the candidates and kept unless one
// beats it by more than SelectorOptions::first_use_vendor_margin.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/provider.h"
#include "kselect/selector.h"
#include "kselect/status.h"
#include "timing/first_use.h"

namespace kselect {

// The order first-use timing settled for `problem_key`: found in `orders`, or made now by
// `time_now` and kept there (the caller holds the lock guarding `orders`). None (null) while
// `stream` is being captured into a graph, and `*note` says so. `*timed` = the configs this call
// timed (0 when the order was found).
StatusOr<const FirstUseRecord*> FirstUseOrder(
    std::unordered_map<std::string, FirstUseRecord>& orders, const std::string& problem_key,
    void* stream, const std::function<StatusOr<FirstUseRecord>()>& time_now, int* timed,
    std::string* note);

// First-use timing with the vendor guard, for both dispatchers: times `contenders` with the
// vendor's pick (`vendor`) beside them, prepared by `prepare_vendor` when they lack it and left
// out when it cannot run within `operands`' workspace, on the operands `provider` describes for
// `problem`; then GuardedRecord with SelectorOptions' margin. An empty record (nothing timed)
// with fewer than two contenders.
StatusOr<FirstUseRecord> TimeWithVendorPick(
    std::vector<timing::FirstUseContender> contenders, const std::optional<KernelConfig>& vendor,
    const std::function<StatusOr<PreparedKernel*>()>& prepare_vendor, KernelProvider& provider,
    const Problem& problem, const KernelOperands& operands, const SelectorOptions& options,
    void* stream);

// The record of one first-use timing (`timed`, fastest first): the vendor's pick (`vendor`, when
// it was timed) first unless the fastest candidate's median is below the pick's by more than
// `margin` (a fraction), then the rest fastest first.
FirstUseRecord GuardedRecord(std::vector<timing::TimedContender> timed,
                             const std::optional<KernelConfig>& vendor, double margin);

// "vendor's pick kept ..." / "... beat the vendor's pick by X %": the dispatch note of a record.
std::string GuardNote(const FirstUseRecord& record);

// Counts over the records (the caller holds their lock).
FirstUseGuardReport GuardReportOf(const std::unordered_map<std::string, FirstUseRecord>& orders);

// `ranked` with the vendor's pick appended when the record has one that `ranked` lacks, so that
// dispatch can run it.
std::vector<RankedConfig> WithVendorPick(std::span<const RankedConfig> ranked,
                                         const FirstUseRecord* record);

// Indices into `ranked`: the configs `timed_order` names (fastest first), then the rest in rank
// order.
std::vector<size_t> TimedFirst(std::span<const RankedConfig> ranked,
                               std::span<const std::string> timed_order);

}  // namespace kselect
