// Numeric meaning of cuBLASLt's enum ids (tiles, stages, cluster shapes), from generated data
// tables (id_tables.inc). CPU only: no cuBLASLt call, so features and tests use it anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kselect/kernel_config.h"

namespace kselect::cublaslt {

struct TileShape {
  int32_t m = 0, n = 0;  // CTA tile rows and columns (elements of C)
};
struct StagesShape {
  int32_t k = 0;      // K depth of one stage (elements)
  int32_t count = 0;  // pipeline stages; 0 for the *xAUTO ids
};
struct ClusterShape {
  int32_t m = 0, n = 0, k = 0;  // thread-block-cluster extent in CTAs
};

// std::nullopt for UNDEFINED/AUTO (0) and ids this cuBLASLt header does not define.
std::optional<TileShape> DecodeTileId(int32_t tile_id);
std::optional<StagesShape> DecodeStagesId(int32_t stages_id);
std::optional<ClusterShape> DecodeClusterShapeId(int32_t cluster_shape_id);

// Sets tile_m/tile_n, stage_k/stages and cluster_m/n/k from the ids (zeros where undefined).
void FillDecodedFields(CublasLtConfig& config);

// Every explicit cluster-shape id (AUTO excluded), ascending.
std::vector<int32_t> ExplicitClusterShapeIds();

}  // namespace kselect::cublaslt
