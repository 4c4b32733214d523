// A kselect tile-engine GEMM kernel config: every field that changes the generated source. Its
// fields are described once, in the table in tile_config.cpp.
#pragma once

#include <cstdint>
#include <string_view>

#include "kselect/status.h"

namespace kselect {

struct ConfigSchema;

// Tile-engine pipelines.
enum class TilePipeline {
  kMultistage,       // Ampere-style cp.async + ldmatrix + mma.sync ring
  kWarpSpecialized,  // Hopper TMA producer warp + wgmma consumer warpgroups
  kSmallM,           // memory-bound decode kernels (M <= 16), vectorised loads
  kDecode,           // memory-bound decode kernels, tokens in n or m: streaming loads, mma.sync
};
// kPingPong (warp_specialized): persistent, and the two consumer warpgroups take alternate tiles,
// one's epilogue overlapping the other's MMAs. kStreamK (warp_specialized): persistent, and the
// tiles past the last full wave but one are split over the clusters by k iterations, so every
// cluster ends at about the same time (partials reduced through the workspace).
enum class TileScheduler { kDataParallel, kPersistent, kPingPong, kStreamK };
// kTransposed: warp_specialized with a column-major 16-bit C: the accumulators are transposed in
// registers (movmatrix and quad shuffles) so each thread stores 8 consecutive rows at once.
enum class TileEpilogue { kDirect, kSharedStaged, kTransposed };
std::string_view TilePipelineName(TilePipeline p);  // "multistage", "warp_specialized", "small_m",
                                                    // "decode"
std::string_view TileSchedulerName(TileScheduler s);  // "data_parallel", "persistent", "pingpong",
                                                      // "streamk"
std::string_view TileEpilogueName(TileEpilogue e);    // "direct", "smem", "transposed"
StatusOr<TilePipeline> ParseTilePipeline(std::string_view name);
StatusOr<TileScheduler> ParseTileScheduler(std::string_view name);
StatusOr<TileEpilogue> ParseTileEpilogue(std::string_view name);

struct TileConfig {
  int32_t tile_m = 128, tile_n = 128, tile_k = 32;
  int32_t warps_m = 2, warps_n = 2, warps_k = 1;    // warps (or warpgroups for wgmma) per block
  int32_t instr_m = 16, instr_n = 8, instr_k = 16;  // MMA instruction shape
  int32_t stages = 3;
  TilePipeline pipeline = TilePipeline::kMultistage;
  TileScheduler scheduler = TileScheduler::kDataParallel;
  TileEpilogue epilogue = TileEpilogue::kDirect;
  bool mask_m = true, mask_n = true, mask_k = true;  // bounds checks per dimension
  int32_t split_k = 1;
  int32_t cluster_m = 1, cluster_n = 1;
  int32_t swizzle = 1;  // raster swizzle width in tiles (1 = plain row order)

  bool operator==(const TileConfig&) const = default;
};

// The table of TileConfig's fields (the schema registry's tile row).
const ConfigSchema& TileConfigSchema();

}  // namespace kselect
