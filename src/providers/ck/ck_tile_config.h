// An AMD CK Tile GEMM kernel, from its name (AMD ingestion only). Field meanings follow CK:
// warp_* are warps per block, warp_tile_* the per-warp MFMA tile, vec_* 0 for "native". Its
// fields are described once, in the table in ck_tile_config.cpp.
#pragma once

#include <cstdint>
#include <string>

namespace kselect {

struct ConfigSchema;

struct CkTileConfig {
  int32_t tile_m = 0, tile_n = 0, tile_k = 0;
  int32_t warp_m = 0, warp_n = 0, warp_k = 0;
  int32_t warp_tile_m = 0, warp_tile_n = 0, warp_tile_k = 0;
  std::string pipeline;   // compv3, compv4, mem, ...
  std::string scheduler;  // intrawave, interwave
  std::string epilogue;   // cshuffle, default
  bool pad_m = false, pad_n = false, pad_k = false;
  bool persistent = false;
  int32_t vec_a = 0, vec_b = 0, vec_c = 0;
  int32_t split_k = 1;  // from the benchmark's problem record (CK names do not carry it)

  bool operator==(const CkTileConfig&) const = default;
};

// The table of CkTileConfig's fields (the schema registry's ck_tile row).
const ConfigSchema& CkTileConfigSchema();

// CK's convert_json_to_parquet.py marks every "mem" pipeline kernel as padded in all three
// dimensions (mem kernels handle any size although their names say False). kselect applies it on
// every CK Tile path, not only CK's JSON path, so a config means the same whichever file it came
// from.
void ApplyCkMemPipelinePadding(CkTileConfig& config);

}  // namespace kselect
