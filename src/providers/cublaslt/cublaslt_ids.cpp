#include "providers/cublaslt/cublaslt_ids.h"

#include <algorithm>
#include <span>

namespace kselect::cublaslt {
namespace {

struct TileIdRow {
  int32_t id, m, n;
};
struct StagesIdRow {
  int32_t id, k, count;
};
struct ClusterIdRow {
  int32_t id, m, n, k;
};

#include "providers/cublaslt/id_tables.inc"

template <typename Row>
const Row* FindRow(std::span<const Row> table, int32_t id) {
  if (id == 0) return nullptr;  // UNDEFINED / AUTO
  const auto it =
      std::find_if(table.begin(), table.end(), [id](const Row& r) { return r.id == id; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::optional<TileShape> DecodeTileId(int32_t tile_id) {
  const TileIdRow* row = FindRow<TileIdRow>(kTileIdTable, tile_id);
  if (row == nullptr) return std::nullopt;
  return TileShape{row->m, row->n};
}

std::optional<StagesShape> DecodeStagesId(int32_t stages_id) {
  const StagesIdRow* row = FindRow<StagesIdRow>(kStagesIdTable, stages_id);
  if (row == nullptr) return std::nullopt;
  return StagesShape{row->k, row->count};
}

std::optional<ClusterShape> DecodeClusterShapeId(int32_t cluster_shape_id) {
  const ClusterIdRow* row = FindRow<ClusterIdRow>(kClusterIdTable, cluster_shape_id);
  if (row == nullptr) return std::nullopt;
  return ClusterShape{row->m, row->n, row->k};
}

void FillDecodedFields(CublasLtConfig& config) {
  const TileShape tile = DecodeTileId(config.tile_id).value_or(TileShape{});
  const StagesShape stages = DecodeStagesId(config.stages_id).value_or(StagesShape{});
  const ClusterShape cluster =
      DecodeClusterShapeId(config.cluster_shape_id).value_or(ClusterShape{});
  config.tile_m = tile.m;
  config.tile_n = tile.n;
  config.stage_k = stages.k;
  config.stages = stages.count;
  config.cluster_m = cluster.m;
  config.cluster_n = cluster.n;
  config.cluster_k = cluster.k;
}

std::vector<int32_t> ExplicitClusterShapeIds() {
  std::vector<int32_t> ids;
  for (const ClusterIdRow& row : kClusterIdTable) ids.push_back(row.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace kselect::cublaslt
