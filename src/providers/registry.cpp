// The provider registry: a table, one row per provider that can run kernels in this build.
#include <array>

#include "kselect/provider.h"
#include "providers/cublaslt/cublaslt_provider.h"
#include "providers/cudnn/cudnn_provider.h"
#include "providers/tile/tile_provider.h"

namespace kselect {
namespace {

constexpr std::array kRegistry = {
    ProviderEntry{Provider::kCublasLt, "cuBLASLt algorithm configs (AlgoGetIds/AlgoCheck space)",
                  &cublaslt::CreateCublasLtProvider},
    ProviderEntry{Provider::kTile, "kselect tile engine (NVRTC-compiled GEMM kernels, rules/tile)",
                  &tile::CreateTileProvider},
    ProviderEntry{Provider::kCudnn,
                  "cuDNN engine configs for grouped convolution (graph API, engine x knob space)",
                  &cudnn::CreateCudnnProvider},
};

}  // namespace

std::span<const ProviderEntry> ProviderRegistry() {
  return kRegistry;
}

StatusOr<std::unique_ptr<KernelProvider>> CreateProvider(Provider provider,
                                                         const ProviderOptions& options) {
  for (const ProviderEntry& entry : kRegistry) {
    if (entry.provider == provider) return entry.create(options);
  }
  return NotFoundError("no kernel provider '" + std::string(ProviderName(provider)) +
                       "' in this build (runnable: cublaslt, tile, cudnn)");
}

}  // namespace kselect
