#include <gtest/gtest.h>

#include "core/text.h"
#include "kselect/dataset.h"

namespace kselect {
namespace {

TEST(SchemaDocTest, DocsListEveryColumnOfTheCode) {
  auto doc = text::ReadFile(std::string(KSELECT_SOURCE_DIR) + "/docs/dataset_schema.md");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(*doc, DatasetSchemaMarkdown())
      << "docs/dataset_schema.md is stale: regenerate it with "
         "`kselect data schema --markdown > docs/dataset_schema.md`";
}

TEST(SchemaDocTest, ColumnNamesAreUniqueAndIncludeTheSeedColumns) {
  std::set<std::string_view> names;
  for (const auto& c : DatasetColumns()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  for (const char* seed : {"op_type",     "dtype",
                           "layout",      "arch",
                           "kernel_name", "m",
                           "n",           "k",
                           "split_k",     "measured_tflops",
                           "latency_ms",  "bandwidth_gb_s",
                           "is_valid",    "tile_m",
                           "warp_m",      "warp_tile_m",
                           "pipeline",    "scheduler",
                           "epilogue",    "pad_m",
                           "persistent",  "run_id"}) {
    EXPECT_TRUE(names.contains(seed)) << seed;
  }
}

}  // namespace
}  // namespace kselect
