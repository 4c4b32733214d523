// Typed kernel configurations, one struct per provider, held in the KernelConfig variant.
// Features and datasets read these fields; nothing recovers a config by parsing a kernel name
// (names are for people, and for ingesting AMD logs, whose configs only exist as names).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kselect/status.h"
#include "providers/ck/ck_conv_config.h"
#include "providers/ck/ck_tile_config.h"
#include "providers/cublaslt/cublaslt_config.h"
#include "providers/cudnn/cudnn_config.h"
#include "providers/tile/tile_config.h"

namespace kselect {

enum class Provider {
  kCublasLt,  // cuBLASLt algorithm configs (the hipBLASLt analogue)
  kTile,      // kselect's own NVRTC-compiled GEMM kernels (the CK Tile analogue)
  kCudnn,     // cuDNN engine configs for grouped convolution
  kCkTile,    // AMD CK Tile GEMM kernels, from ingested AMD logs
  kCkConv,    // AMD CK grouped-convolution kernels, from ingested AMD CSV files
};
// "cublaslt", "tile", "cudnn", "ck_tile", "ck_conv".
std::string_view ProviderName(Provider provider);
StatusOr<Provider> ParseProvider(std::string_view name);

// The typed configs, one struct per provider, each in its provider's folder with the table that
// describes its fields (include/kselect/config_schema.h).
using KernelConfig =
    std::variant<CublasLtConfig, TileConfig, CudnnConfig, CkTileConfig, CkConvConfig>;

Provider ProviderOf(const KernelConfig& config);
// The split-K factor of a config (1 where the provider has none).
int32_t SplitKOf(const KernelConfig& config);
// A canonical, stable text of every typed field, "cublaslt:algo=66,tile=..": the identity used
// for de-duplication and joins. It is never parsed back; configs travel as typed fields.
std::string ConfigKey(const KernelConfig& config);
// A short human-readable name for tables and logs.
std::string DescribeConfig(const KernelConfig& config);

}  // namespace kselect
