// Providers for logged GEMMs: each GEMM's configs run inside the workspace the application gave
// it (the log's, when the log says), and a provider's workspace limit is part of what it accepts
// (Enumerate, CanImplement, its heuristic's picks), so there is one provider per limit.
#pragma once

#include <algorithm>
#include <map>
#include <memory>

#include "kselect/gemm_log.h"
#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect {

// The workspace a logged GEMM's configs may use: `limit`, or less when its calls had less.
inline int64_t WorkspaceLimit(int64_t limit, const LoggedGemm& gemm) {
  return gemm.workspace_bytes >= 0 ? std::min(limit, gemm.workspace_bytes) : limit;
}

class ProvidersByWorkspace {
 public:
  ProvidersByWorkspace(Provider provider, const ProviderOptions& options, int device)
      : provider_(provider), options_(options) {
    options_.device = device;
  }

  StatusOr<KernelProvider*> For(int64_t workspace_bytes) {
    auto it = providers_.find(workspace_bytes);
    if (it == providers_.end()) {
      ProviderOptions po = options_;
      po.max_workspace_bytes = workspace_bytes;
      KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<KernelProvider> created,
                               CreateProvider(provider_, po));
      it = providers_.emplace(workspace_bytes, std::move(created)).first;
    }
    return it->second.get();
  }

 private:
  Provider provider_;
  ProviderOptions options_;
  std::map<int64_t, std::unique_ptr<KernelProvider>> providers_;
};

}  // namespace kselect
