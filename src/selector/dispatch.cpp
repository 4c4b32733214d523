// kselect::Gemm and kselect::Conv: the selector's choice run on the caller's buffers, falling back
// down the ranking when a config cannot be prepared or launched; with time_top_k, the best-ranked
// few are timed at a problem's first dispatch and the fastest runs from then on.
#include <algorithm>
#include <mutex>
#include <numeric>

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

// Times the first `count` configs of `ranked` that prepare and fit the workspace (see
// TimeContendersAtFirstUse). The caller holds the dispatch mutex.
StatusOr<std::vector<std::string>> TimeFirstUse(
    std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared,
    KernelProvider& provider, const Problem& problem, const std::string& problem_key,
    std::span<const RankedConfig> ranked, size_t count, const KernelOperands& operands,
    bool cold_l2, cudaStream_t stream) {
  std::vector<timing::FirstUseContender> contenders;
  for (size_t r = 0; r < ranked.size() && contenders.size() < count; ++r) {
    const KernelConfig& config = ranked[r].config;
    if (ProviderOf(config) != provider.id()) continue;
    auto kernel = PreparedLocked(prepared, provider, problem, problem_key, config);
    if (!kernel.ok() || (*kernel)->WorkspaceBytes() > operands.workspace_bytes) continue;
    contenders.push_back({ConfigKey(config), *kernel});
  }
  if (contenders.size() < 2) return std::vector<std::string>{};
  KSELECT_ASSIGN_OR_RETURN(std::vector<OperandSpec> specs, provider.Operands(problem));
  return timing::TimeContendersAtFirstUse(std::move(contenders), specs, operands, cold_l2, stream);
}

}  // namespace

StatusOr<const std::vector<std::string>*> FirstUseOrder(
    std::unordered_map<std::string, std::vector<std::string>>& orders,
    const std::string& problem_key, void* stream,
    const std::function<StatusOr<std::vector<std::string>>()>& time_now, int* timed,
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
  KSELECT_ASSIGN_OR_RETURN(std::vector<std::string> order, time_now());
  *timed = static_cast<int>(order.size());
  return &orders.emplace(problem_key, std::move(order)).first->second;
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
  if (time_top_k >= 2 && ranked.size() >= 2) {
    std::lock_guard lock(selector.dispatch_mutex());
    KSELECT_ASSIGN_OR_RETURN(const std::vector<std::string>* timed,
                             FirstUseOrder(
                                 selector.first_use_orders(), problem_key, stream,
                                 [&] {
                                   return TimeFirstUse(selector.prepared_kernels(), *provider,
                                                       problem, problem_key, ranked, time_top_k,
                                                       operands,
                                                       selector.options().first_use_cold_l2,
                                                       static_cast<cudaStream_t>(stream));
                                 },
                                 &timed_configs, &timing_note));
    if (timed != nullptr && !timed->empty()) order = TimedFirst(ranked, *timed);
  }
  std::string failures;
  for (size_t r : order) {
    const KernelConfig& config = ranked[r].config;
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
    if (!failures.empty()) info.note = "fell back past " + failures;
    if (timed_configs > 0) {
      info.note += std::string(info.note.empty() ? "" : "; ") + "timed the top " +
                   std::to_string(timed_configs) + " at first use: rank " +
                   std::to_string(info.rank) + " was the fastest";
    }
    if (!timing_note.empty()) info.note += (info.note.empty() ? "" : "; ") + timing_note;
    return info;
  }
  return CannotImplementError("none of the " + std::to_string(ranked.size()) +
                              " selected configs for " + problem_key + " ran: " + failures);
}

}  // namespace kselect
