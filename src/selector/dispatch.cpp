// kselect::Gemm and kselect::Conv: the selector's choice run on the caller's buffers, falling back
// down the ranking when a config cannot be prepared or launched.
#include <mutex>

#include "kselect/selector.h"

namespace kselect {

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
  std::string failures;
  for (size_t r = 0; r < ranked.size(); ++r) {
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
      auto& prepared = selector.prepared_kernels();
      const std::string key = problem_key + "|" + ConfigKey(config);
      auto it = prepared.find(key);
      if (it == prepared.end()) {
        auto made = provider->Prepare(problem, config);
        if (!made.ok()) {
          fail(made.status().message());
          continue;
        }
        it = prepared.emplace(key, std::move(*made)).first;
      }
      kernel = it->second.get();
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
    if (!failures.empty()) info.note = "fell back past " + failures;
    return info;
  }
  return CannotImplementError("none of the " + std::to_string(ranked.size()) +
                              " selected configs for " + problem_key + " ran: " + failures);
}

}  // namespace kselect
