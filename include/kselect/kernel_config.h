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

// One cuBLASLt algorithm configuration: the ids cublasLtMatmulAlgoConfigSetAttribute takes, plus
// the numeric fields decoded from the enum ids (for features; 0 where the id is AUTO/undefined).
struct CublasLtConfig {
  int32_t algo_id = 0;
  int32_t tile_id = 0;           // cublasLtMatmulTile_t
  int32_t stages_id = 0;         // cublasLtMatmulStages_t
  int32_t split_k = 1;           // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  int32_t reduction_scheme = 0;  // cublasLtReductionScheme_t
  int32_t swizzle = 0;           // CTA swizzling, 0 or 1
  int32_t custom_option = 0;
  int32_t cluster_shape_id = 0;  // cublasLtClusterShape_t
  int32_t inner_shape_id = 0;    // cublasLtMatmulInnerShape_t
  // Decoded from the ids.
  int32_t tile_m = 0, tile_n = 0;
  int32_t stage_k = 0, stages = 0;  // MATMUL_STAGES_64x3 -> stage_k 64, stages 3
  int32_t cluster_m = 0, cluster_n = 0, cluster_k = 0;

  bool operator==(const CublasLtConfig&) const = default;
};

// Tile-engine pipelines.
enum class TilePipeline {
  kMultistage,       // Ampere-style cp.async + ldmatrix + mma.sync ring
  kWarpSpecialized,  // Hopper TMA producer warp + wgmma consumer warpgroups
  kSmallM,           // memory-bound decode kernels (M <= 16), vectorised loads
};
enum class TileScheduler { kDataParallel, kPersistent };
enum class TileEpilogue { kDirect, kSharedStaged };
std::string_view TilePipelineName(TilePipeline p);    // "multistage", "warp_specialized", "small_m"
std::string_view TileSchedulerName(TileScheduler s);  // "data_parallel", "persistent"
std::string_view TileEpilogueName(TileEpilogue e);    // "direct", "smem"
StatusOr<TilePipeline> ParseTilePipeline(std::string_view name);
StatusOr<TileScheduler> ParseTileScheduler(std::string_view name);
StatusOr<TileEpilogue> ParseTileEpilogue(std::string_view name);

// A kselect tile-engine GEMM kernel: every field that changes the generated source.
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

// A cuDNN engine config: the engine's global index and its knob settings (knob type, value).
struct CudnnConfig {
  int64_t engine_id = 0;
  std::vector<std::pair<int32_t, int64_t>> knobs;

  bool operator==(const CudnnConfig&) const = default;
};

// An AMD CK Tile GEMM kernel, from its name (AMD ingestion only). Field meanings follow CK:
// warp_* are warps per block, warp_tile_* the per-warp MFMA tile, vec_* 0 for "native".
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

// An AMD CK grouped-convolution kernel, from its name (AMD ingestion only). The tile fields are
// the dispatcher's {tile_m}x{tile_n}x{tile_k}, not CK's mislabelled block_size/gemm_*_per_block.
struct CkConvConfig {
  int32_t tile_m = 0, tile_n = 0, tile_k = 0;
  std::string pipeline;   // compv3, compv4, compv5, mem, ...
  std::string scheduler;  // wave scheduler suffix when present (intrawave, interwave), else ""
  bool double_smem_buffer = false;  // "_dsb"
  bool split_image = false;         // "_si"

  bool operator==(const CkConvConfig&) const = default;
};

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
