// One cuBLASLt algorithm configuration: the ids cublasLtMatmulAlgoConfigSetAttribute takes, plus
// the numeric fields decoded from the enum ids (for features; 0 where the id is AUTO/undefined).
// Its fields are described once, in the table in cublaslt_config.cpp.
#pragma once

#include <cstdint>

namespace kselect {

struct ConfigSchema;

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

// The table of CublasLtConfig's fields (the schema registry's cuBLASLt row).
const ConfigSchema& CublasLtConfigSchema();

}  // namespace kselect
