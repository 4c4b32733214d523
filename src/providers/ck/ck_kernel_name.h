// Parsers for AMD kernel names: CK Tile GEMM names (ck_tile_heuristics.md §1.5) and the
// dispatcher's grouped-convolution names (§7.2), into the CK providers' typed configs. AMD logs
// carry kernel configs only as names, so these are the one place kselect recovers a config from a
// name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kselect/problem.h"
#include "kselect/status.h"
#include "providers/ck/ck_conv_config.h"
#include "providers/ck/ck_tile_config.h"

namespace kselect {

// A CK Tile GEMM kernel name (ck_tile_heuristics.md §1.5) with the dtype and layout it encodes.
struct CkTileKernelName {
  std::string op;      // "gemm_universal" or "gemm"
  std::string dtype;   // "fp8", "fp16", ...
  std::string layout;  // "rcr", ...
  CkTileConfig config;
};
StatusOr<CkTileKernelName> ParseCkTileKernelName(std::string_view name);

// A CK grouped-conv kernel name: grouped_conv_{variant}_{dtype}_{nd}d_{A}x{B}x{C}_{pipeline}...
struct CkConvKernelName {
  ConvDirection direction = ConvDirection::kForward;
  std::string dtype;
  int32_t spatial_dims = 2;
  CkConvConfig config;
};
StatusOr<CkConvKernelName> ParseCkConvKernelName(std::string_view name);

}  // namespace kselect
