// An AMD CK grouped-convolution kernel, from its name (AMD ingestion only). The tile fields are
// the dispatcher's {tile_m}x{tile_n}x{tile_k}, not CK's mislabelled block_size/gemm_*_per_block.
// Its fields are described once, in the table in ck_conv_config.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace kselect {

struct ConfigSchema;

struct CkConvConfig {
  int32_t tile_m = 0, tile_n = 0, tile_k = 0;
  std::string pipeline;   // compv3, compv4, compv5, mem, ...
  std::string scheduler;  // wave scheduler suffix when present (intrawave, interwave), else ""
  bool double_smem_buffer = false;  // "_dsb"
  bool split_image = false;         // "_si"

  bool operator==(const CkConvConfig&) const = default;
};

// The table of CkConvConfig's fields (the schema registry's ck_conv row).
const ConfigSchema& CkConvConfigSchema();

}  // namespace kselect
