// Datasets written before the providers' field tables existed must read back to the same configs:
// every row's recomputed ConfigKey equals the key stored beside it, and writing the config again
// gives the same config columns.
#include <gtest/gtest.h>

#include <string>

#include "kselect/dataset.h"

namespace kselect {
namespace {

void ExpectRowsRoundTrip(const std::string& path) {
  StatusOr<Dataset> data = ReadDataset(path);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_FALSE(data->rows.empty());
  size_t checked = 0;
  for (const DatasetRow& row : data->rows) {
    StatusOr<Measurement> m = MeasurementFromRow(row);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_EQ(ConfigKey(m->config), row.config_key.value_or("")) << path;
    const DatasetRow again = RowFromMeasurement(*m, RunInfo{});
#define KSELECT_EXPECT_CONFIG_COLUMN(name, type, group, doc)                          \
  if (std::string_view(group) == "config" || std::string_view(group) == "cublaslt" || \
      std::string_view(group) == "tile" || std::string_view(group) == "ck_tile" ||    \
      std::string_view(group) == "ck_conv" || std::string_view(group) == "cudnn") {   \
    ASSERT_EQ(again.name, row.name) << path << ": column " #name;                     \
  }
    KSELECT_DATASET_COLUMNS(KSELECT_EXPECT_CONFIG_COLUMN)
#undef KSELECT_EXPECT_CONFIG_COLUMN
    ++checked;
  }
  EXPECT_EQ(checked, data->rows.size());
}

TEST(ConfigColumnsTest, ShippedTileDatasetRoundTrips) {
  ExpectRowsRoundTrip(std::string(KSELECT_SOURCE_DIR) + "/data/h200/tile_bf16_tn_wide.parquet");
}

TEST(ConfigColumnsTest, ShippedCublasLtDatasetRoundTrips) {
  ExpectRowsRoundTrip(std::string(KSELECT_SOURCE_DIR) +
                      "/data/h200/cublaslt_tiny_bf16_tn_wide.parquet");
}

}  // namespace
}  // namespace kselect
