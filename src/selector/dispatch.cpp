// kselect::Gemm: the selector's choice run on the caller's buffers, falling back down the ranking
// when a config cannot be prepared or launched.
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
  if (workspace_bytes < 0 || (workspace == nullptr && workspace_bytes > 0)) {
    return InvalidArgumentError("Gemm: workspace_bytes must be >= 0, with a buffer when > 0");
  }
  KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.provider());
  KernelOperands operands;
  operands.buffers = {const_cast<void*>(a), const_cast<void*>(b), c};
  operands.workspace = workspace;
  operands.workspace_bytes = workspace_bytes;
  const std::string problem_key = problem.ToString();
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
  return CannotImplementError("Gemm: none of the " + std::to_string(ranked.size()) +
                              " selected configs for " + problem_key + " ran: " + failures);
}

}  // namespace kselect
