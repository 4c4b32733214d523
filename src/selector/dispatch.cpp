// kselect::Gemm and kselect::Conv: the selector's choice run on the caller's buffers, falling back
// down the ranking when a config cannot be prepared or launched; with time_top_k, the best-ranked
// few are timed at a problem's first dispatch and the fastest runs from then on.
#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <numeric>

#include "core/clock.h"
#include "core/statistics.h"
#include "cuda/runtime.h"
#include "kselect/selector.h"
#include "kselect/verify.h"
#include "selector/first_use_timing.h"
#include "timing/first_use.h"

namespace kselect {
namespace {

// The prepared kernel of (problem, config), prepared on first use; the caller holds the
// selector's dispatch mutex.
StatusOr<PreparedKernel*> PreparedLocked(
    std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared,
    KernelProvider& provider, const Problem& problem, const std::string& problem_key,
    const KernelConfig& config) {
  const std::string key = problem_key + "|" + ConfigKey(config);
  auto it = prepared.find(key);
  if (it == prepared.end()) {
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> made,
                             provider.Prepare(problem, config));
    it = prepared.emplace(key, std::move(made)).first;
  }
  return it->second.get();
}

// Times the first `count` configs of `ranked` that prepare and fit the workspace, and the
// provider heuristic's first pick beside them (the vendor guard; see TimeContendersAtFirstUse
// and GuardedRecord). The caller holds the dispatch mutex, which guards the provider.
StatusOr<FirstUseRecord> TimeFirstUse(
    std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared,
    KernelProvider& provider, const Problem& problem, const std::string& problem_key,
    std::span<const RankedConfig> ranked, size_t count, const KernelOperands& operands,
    const SelectorOptions& options, cudaStream_t stream) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<timing::FirstUseContender> contenders;
  for (size_t r = 0; r < ranked.size() && contenders.size() < count; ++r) {
    const KernelConfig& config = ranked[r].config;
    if (ProviderOf(config) != provider.id()) continue;
    auto kernel = PreparedLocked(prepared, provider, problem, problem_key, config);
    if (!kernel.ok() || (*kernel)->WorkspaceBytes() > operands.workspace_bytes) continue;
    contenders.push_back({ConfigKey(config), *kernel});
  }
  std::optional<KernelConfig> vendor;
  if (StatusOr<std::vector<KernelConfig>> picks = provider.HeuristicPicks(problem, 1);
      picks.ok() && !picks->empty()) {
    vendor = picks->front();
  }
  const double contenders_ms = MsSince(start);
  KSELECT_ASSIGN_OR_RETURN(
      FirstUseRecord record,
      TimeWithVendorPick(
          std::move(contenders), vendor,
          [&] { return PreparedLocked(prepared, provider, problem, problem_key, *vendor); },
          provider, problem, operands, options, stream));
  record.prepare_ms += contenders_ms;
  return record;
}

}  // namespace

StatusOr<const FirstUseRecord*> FirstUseOrder(
    std::unordered_map<std::string, FirstUseRecord>& orders, const std::string& problem_key,
    void* stream, const std::function<StatusOr<FirstUseRecord>()>& time_now, int* timed,
    std::string* note) {
  *timed = 0;
  auto it = orders.find(problem_key);
  if (it != orders.end()) return &it->second;
  auto capture = cudaStreamCaptureStatusNone;
  KSELECT_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    *note = "not timed: the stream is being captured into a graph";
    return nullptr;
  }
  KSELECT_ASSIGN_OR_RETURN(FirstUseRecord record, time_now());
  // One config in the order was run, not timed against another.
  *timed = record.order.size() >= 2 ? static_cast<int>(record.order.size()) : 0;
  return &orders.emplace(problem_key, std::move(record)).first->second;
}

StatusOr<FirstUseRecord> TimeWithVendorPick(
    std::vector<timing::FirstUseContender> contenders, const std::optional<KernelConfig>& vendor,
    const std::function<StatusOr<PreparedKernel*>()>& prepare_vendor, KernelProvider& provider,
    const Problem& problem, const KernelOperands& operands, const SelectorOptions& options,
    void* stream) {
  const auto start = std::chrono::steady_clock::now();
  if (vendor) {
    const std::string key = ConfigKey(*vendor);
    if (std::none_of(contenders.begin(), contenders.end(),
                     [&](const timing::FirstUseContender& c) { return c.key == key; })) {
      StatusOr<PreparedKernel*> kernel = prepare_vendor();
      if (kernel.ok() && (*kernel)->WorkspaceBytes() <= operands.workspace_bytes) {
        contenders.push_back({key, *kernel});
      }
    }
  }
  const double prepare_ms = MsSince(start);
  if (contenders.size() < 2) {
    // Nothing to time. When the vendor's pick is all that prepared, it runs: no candidate was
    // shown to beat it.
    FirstUseRecord untimed;
    untimed.prepare_ms = prepare_ms;
    if (vendor && contenders.size() == 1 && contenders.front().key == ConfigKey(*vendor)) {
      untimed.vendor_pick = vendor;
      untimed.vendor_kept = true;
      untimed.order.push_back(contenders.front().key);
    }
    return untimed;
  }
  const auto timing_start = std::chrono::steady_clock::now();
  KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs, provider.Operands(problem));
  KSELECT_ASSIGN_OR_RETURN(std::vector<timing::TimedContender> timed,
                           timing::TimeContendersAtFirstUse(std::move(contenders), specs, operands,
                                                            options.first_use_cold_l2,
                                                            options.first_use_graphs, stream));
  FirstUseRecord record = GuardedRecord(std::move(timed), vendor, options.first_use_vendor_margin);
  record.prepare_ms = prepare_ms;
  record.timing_ms = MsSince(timing_start);
  return record;
}

FirstUseRecord GuardedRecord(std::vector<timing::TimedContender> timed,
                             const std::optional<KernelConfig>& vendor, double margin) {
  FirstUseRecord record;
  record.vendor_pick = vendor;
  if (vendor && !timed.empty()) {
    const std::string vendor_key = ConfigKey(*vendor);
    auto at = std::find_if(timed.begin(), timed.end(),
                           [&](const timing::TimedContender& t) { return t.key == vendor_key; });
    if (at != timed.end()) {
      record.vendor_timed = true;
      // The fastest replaces the pick only when faster by more than the margin.
      if (at != timed.begin() &&
          !ReplacesVendorPick(at->median_ms / timed.front().median_ms, margin)) {
        std::rotate(timed.begin(), at, at + 1);
      }
      record.vendor_kept = timed.front().key == vendor_key;
    }
  }
  for (timing::TimedContender& t : timed) record.order.push_back(std::move(t.key));
  return record;
}

std::string GuardNote(const FirstUseRecord& record) {
  if (!record.vendor_pick) return "not guarded: the vendor's heuristic had no pick";
  if (!record.vendor_timed) return "not guarded: the vendor's pick could not be timed";
  return record.vendor_kept ? "the vendor's pick kept (no candidate beat it by the margin)"
                            : "a candidate beat the vendor's pick by more than the margin";
}

FirstUseGuardReport GuardReportOf(const std::unordered_map<std::string, FirstUseRecord>& orders) {
  FirstUseGuardReport report;
  for (const auto& [key, record] : orders) {
    if (record.order.empty() || record.from_file) continue;  // timed here only
    ++report.timed_problems;
    report.vendor_timed += record.vendor_timed ? 1 : 0;
    report.vendor_kept += record.vendor_kept ? 1 : 0;
  }
  return report;
}

std::vector<RankedConfig> WithVendorPick(std::span<const RankedConfig> ranked,
                                         const FirstUseRecord* record) {
  std::vector<RankedConfig> out(ranked.begin(), ranked.end());
  if (record == nullptr || !record->vendor_pick) return out;
  const std::string key = ConfigKey(*record->vendor_pick);
  for (const RankedConfig& r : out) {
    if (ConfigKey(r.config) == key) return out;
  }
  RankedConfig vendor;
  vendor.config = *record->vendor_pick;
  vendor.score = -std::numeric_limits<double>::infinity();  // ranked by nobody: timing decides
  out.push_back(std::move(vendor));
  return out;
}

std::vector<size_t> TimedFirst(std::span<const RankedConfig> ranked,
                               std::span<const std::string> timed_order) {
  std::vector<size_t> order;
  for (const std::string& key : timed_order) {
    for (size_t r = 0; r < ranked.size(); ++r) {
      if (ConfigKey(ranked[r].config) == key) {
        order.push_back(r);
        break;
      }
    }
  }
  for (size_t r = 0; r < ranked.size(); ++r) {
    if (std::find(order.begin(), order.end(), r) == order.end()) order.push_back(r);
  }
  return order;
}

StatusOr<PreparedKernel*> PreparedForDispatch(Selector& selector, const Problem& problem,
                                              const KernelConfig& config) {
  KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.provider());
  if (ProviderOf(config) != provider->id()) {
    return InvalidArgumentError(DescribeConfig(config) + ": not a " +
                                std::string(ProviderName(provider->id())) + " config");
  }
  std::lock_guard lock(selector.dispatch_mutex());
  return PreparedLocked(selector.prepared_kernels(), *provider, problem, ProblemToString(problem),
                        config);
}

StatusOr<DispatchInfo> Gemm(Selector& selector, const GemmProblem& problem, const void* a,
                            const void* b, void* c, void* workspace, int64_t workspace_bytes,
                            void* stream) {
  KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector.Select(problem));
  return GemmRanked(selector, problem, selection->ranked, selection->path, a, b, c, workspace,
                    workspace_bytes, stream);
}

StatusOr<DispatchInfo> GemmRanked(Selector& selector, const GemmProblem& problem,
                                  std::span<const RankedConfig> ranked, DecisionPath path,
                                  const void* a, const void* b, void* c, void* workspace,
                                  int64_t workspace_bytes, void* stream) {
  if (a == nullptr || b == nullptr || c == nullptr) {
    return InvalidArgumentError("Gemm: A, B and C must be device pointers, not null");
  }
  KernelOperands operands;
  operands.buffers = {const_cast<void*>(a), const_cast<void*>(b), c};
  operands.workspace = workspace;
  operands.workspace_bytes = workspace_bytes;
  return DispatchRanked(selector, problem, ranked, path, operands, stream);
}

StatusOr<DispatchInfo> Conv(Selector& selector, const ConvProblem& problem, void* x, void* w,
                            void* y, void* workspace, int64_t workspace_bytes, void* stream) {
  if (x == nullptr || w == nullptr || y == nullptr) {
    return InvalidArgumentError("Conv: x, w and y must be device pointers, not null");
  }
  KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector.Select(problem));
  KernelOperands operands;
  operands.buffers = {x, w, y};  // ConvOperandSpecs' order
  operands.workspace = workspace;
  operands.workspace_bytes = workspace_bytes;
  return DispatchRanked(selector, problem, selection->ranked, selection->path, operands, stream);
}

StatusOr<DispatchInfo> DispatchRanked(Selector& selector, const Problem& problem,
                                      std::span<const RankedConfig> ranked, DecisionPath path,
                                      const KernelOperands& operands, void* stream) {
  const int64_t workspace_bytes = operands.workspace_bytes;
  if (workspace_bytes < 0 || (operands.workspace == nullptr && workspace_bytes > 0)) {
    return InvalidArgumentError("workspace_bytes must be >= 0, with a buffer when > 0");
  }
  KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.provider());
  const std::string problem_key = ProblemToString(problem);
  // The order to try, as indices into `ranked`: with first-use timing, the timed configs
  // fastest first, then the rest as ranked.
  std::vector<size_t> order(ranked.size());
  std::iota(order.begin(), order.end(), size_t{0});
  int timed_configs = 0;
  std::string timing_note;
  const size_t time_top_k = static_cast<size_t>(std::max(selector.options().time_top_k, 0));
  // The configs dispatch may run: the selection, and the vendor's pick when first-use timing
  // timed it beside them (the vendor guard).
  std::vector<RankedConfig> candidates(ranked.begin(), ranked.end());
  std::optional<bool> vendor_kept;
  bool order_from_file = false;
  double prepare_ms = 0, timing_ms = 0;
  if (time_top_k >= 2 && ranked.size() >= 2) {
    std::lock_guard lock(selector.dispatch_mutex());
    bool made_now = false;
    KSELECT_ASSIGN_OR_RETURN(const FirstUseRecord* record,
                             FirstUseOrder(
                                 selector.first_use_orders(), problem_key, stream,
                                 [&] {
                                   made_now = true;
                                   return TimeFirstUse(selector.prepared_kernels(), *provider,
                                                       problem, problem_key, ranked, time_top_k,
                                                       operands, selector.options(),
                                                       static_cast<cudaStream_t>(stream));
                                 },
                                 &timed_configs, &timing_note));
    if (record != nullptr && !record->order.empty()) {
      candidates = WithVendorPick(ranked, record);
      order = TimedFirst(candidates, record->order);
      if (timed_configs > 0) timing_note = GuardNote(*record);
      if (timed_configs > 0 && record->vendor_timed) vendor_kept = record->vendor_kept;
      if (record->from_file) {
        order_from_file = true;
        // Kept untimed as the only contender that prepared counts as kept too, as it did then.
        if (record->vendor_timed || record->vendor_kept) vendor_kept = record->vendor_kept;
        timing_note = "the order an earlier process timed (a decision file): " + GuardNote(*record);
      }
    }
    if (record != nullptr && made_now) {
      prepare_ms = record->prepare_ms;
      timing_ms = record->timing_ms;
      if (timed_configs == 0 && record->vendor_kept) {
        timing_note = "the vendor's pick runs untimed: it was the only contender that prepared";
      }
    }
  } else if (time_top_k < 2 && ranked.size() >= 2) {
    timing_note =
        "not guarded: untimed (time_top_k < 2), the vendor's pick was not timed beside it";
  }
  std::string failures;
  for (size_t r : order) {
    const KernelConfig& config = candidates[r].config;
    if (ProviderOf(config) != provider->id()) {
      failures += (failures.empty() ? "" : "; ") + DescribeConfig(config) + ": not a " +
                  std::string(ProviderName(provider->id())) + " config";
      continue;
    }
    auto fail = [&](const std::string& why) {
      failures += (failures.empty() ? "" : "; ") + DescribeConfig(config) + ": " + why;
    };
    PreparedKernel* kernel = nullptr;
    {
      std::lock_guard lock(selector.dispatch_mutex());
      auto made =
          PreparedLocked(selector.prepared_kernels(), *provider, problem, problem_key, config);
      if (!made.ok()) {
        fail(made.status().message());
        continue;
      }
      kernel = *made;
    }
    if (kernel->WorkspaceBytes() > workspace_bytes) {
      fail("needs " + std::to_string(kernel->WorkspaceBytes()) + " bytes of workspace, given " +
           std::to_string(workspace_bytes));
      continue;
    }
    const Status launched = kernel->Launch(operands, stream);
    if (!launched.ok()) {
      fail(launched.message());
      continue;
    }
    DispatchInfo info;
    info.config = config;
    info.path = path;
    info.rank = static_cast<int>(r + 1);
    info.timed_configs = timed_configs;
    info.vendor_kept = vendor_kept;
    info.prepare_ms = prepare_ms;
    info.timing_ms = timing_ms;
    info.order_from_file = order_from_file;
    if (!failures.empty()) info.note = "fell back past " + failures;
    if (timed_configs > 0) {
      info.note += std::string(info.note.empty() ? "" : "; ") + "timed " +
                   std::to_string(timed_configs) + " configs at first use: " +
                   (r < ranked.size() ? "rank " + std::to_string(info.rank) + " runs"
                                      : std::string("the vendor's pick runs"));
    }
    if (!timing_note.empty()) info.note += (info.note.empty() ? "" : "; ") + timing_note;
    return info;
  }
  return CannotImplementError("none of the " + std::to_string(ranked.size()) +
                              " selected configs for " + problem_key + " ran: " + failures);
}

}  // namespace kselect
