// The cuBLASLt provider: enumerates cuBLASLt's algorithm configs through its capability queries
// (AlgoGetIds, AlgoInit, AlgoCapGetAttribute, AlgoCheck), checks and launches them.
#pragma once

#include <memory>

#include "kselect/provider.h"

namespace kselect::cublaslt {

// The registry's factory. Touches no GPU: the cuBLASLt handle is made on first use.
std::unique_ptr<KernelProvider> CreateCublasLtProvider(const ProviderOptions& options);

// Whether cuBLASLt runs this problem kind/dtype/layout in kselect: bf16 (NN/NT/TN/TT), fp16 and
// fp8 e4m3 (TN only; C bf16 or fp16), fp32 accumulation, column-major C. CPU only.
bool CublasLtSupportsProblem(const Problem& problem);

// Split-K factors tried for algos that support split-K (besides 1), as NVIDIA's
// LtSgemmCustomFind sample tries them.
inline constexpr int32_t kSplitKCandidates[] = {2, 3, 4, 5, 6, 8, 12, 16, 32};

}  // namespace kselect::cublaslt
