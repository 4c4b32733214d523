// The tile engine behind the KernelProvider interface, so `kselect bench` times its kernels like
// any other provider's: configs are generated from a tile rule set (ProviderOptions::rule_set,
// looked up as <rules_dir>/tile/<name>.json) and filtered by the caller's ConfigFilter (the same
// rule set's RuleSetFilter), each is bound to a problem as a TileKernelSpec, compiled with NVRTC
// (cached on disk) and launched.
#pragma once

#include <memory>

#include "kselect/provider.h"

namespace kselect::tile {

class TileKernel;

std::unique_ptr<KernelProvider> CreateTileProvider(const ProviderOptions& options);

// `kernel` bound to `problem` behind the PreparedKernel interface, borrowing it (the caller keeps
// it alive): for callers that compile and load tile kernels themselves (`kselect tile verify`).
std::unique_ptr<PreparedKernel> BindTileKernel(const GemmProblem& problem,
                                               const TileKernel& kernel);

}  // namespace kselect::tile
