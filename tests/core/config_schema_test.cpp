// The providers' field tables: every codec reads them, so these checks hold the tables to what the
// codecs promise (existing dataset columns, on-disk key and JSON forms, search neighbourhoods).
#include "kselect/config_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/json_codec.h"
#include "kselect/catalogue.h"
#include "kselect/dataset.h"
#include "kselect/features.h"

namespace kselect {
namespace {

TEST(ConfigSchemaTest, RegistryHasOneRowPerProviderInOrder) {
  const auto schemas = ConfigSchemas();
  ASSERT_EQ(schemas.size(), std::variant_size_v<KernelConfig>);
  for (size_t i = 0; i < schemas.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(schemas[i].provider), i);
    EXPECT_EQ(schemas[i].make_default().index(), i);
    EXPECT_EQ(ProviderName(schemas[i].provider), schemas[i].name);
    EXPECT_NE(schemas[i].describe, nullptr);
  }
  EXPECT_NE(SchemaOf(Provider::kCublasLt).gemm_traits, nullptr);
  EXPECT_EQ(SchemaOf(Provider::kCudnn).gemm_traits, nullptr);
}

TEST(ConfigSchemaTest, EveryColumnExistsWithTheFieldsType) {
  std::map<std::string_view, ColumnType> columns;
  for (const ColumnSpec& c : DatasetColumns()) columns[c.name] = c.type;
  for (const ConfigSchema& schema : ConfigSchemas()) {
    std::set<std::string_view> names, own_columns;
    for (const ConfigField& f : schema.fields) {
      EXPECT_TRUE(names.insert(f.name).second) << schema.name << "." << f.name << " twice";
      if (f.column.empty()) continue;
      EXPECT_TRUE(own_columns.insert(f.column).second) << schema.name << ": " << f.column;
      ASSERT_TRUE(columns.count(f.column)) << schema.name << "." << f.name << " -> " << f.column;
      const ColumnType want = f.type == FieldType::kInt    ? ColumnType::kInt
                              : f.type == FieldType::kBool ? ColumnType::kBool
                                                           : ColumnType::kString;
      EXPECT_EQ(columns[f.column], want) << schema.name << "." << f.name;
    }
  }
}

// Search neighbourhoods are where the tuner mutates: a default outside its own neighbourhood
// would make the default unreachable once left.
TEST(ConfigSchemaTest, SearchNeighbourhoodsHoldTheDefault) {
  for (const ConfigSchema& schema : ConfigSchemas()) {
    const KernelConfig config = schema.make_default();
    for (const ConfigField& f : schema.fields) {
      if (f.search != SearchMove::kValues) {
        EXPECT_TRUE(f.neighbourhood.empty()) << schema.name << "." << f.name;
        continue;
      }
      ASSERT_TRUE(f.IsInteger()) << schema.name << "." << f.name;
      ASSERT_FALSE(f.neighbourhood.empty()) << schema.name << "." << f.name;
      EXPECT_NE(std::find(f.neighbourhood.begin(), f.neighbourhood.end(), f.get(config)),
                f.neighbourhood.end())
          << schema.name << "." << f.name;
    }
  }
}

TEST(ConfigSchemaTest, TileKeyAndJsonKeepTheirOnDiskForm) {
  TileConfig tile;
  tile.pipeline = TilePipeline::kWarpSpecialized;
  tile.scheduler = TileScheduler::kPersistent;
  tile.mask_k = false;
  tile.cluster_m = 2;
  EXPECT_EQ(ConfigKey(tile),
            "tile:tile=128x128x32,warps=2x2x1,instr=16x8x16,stages=3,pipeline=warp_specialized,"
            "scheduler=persistent,epilogue=direct,mask_m=1,mask_n=1,mask_k=0,splitk=1,"
            "cluster=2x1,swizzle=1");
  EXPECT_EQ(json_codec::KernelConfigToJson(tile).dump(),
            R"({"cluster":[2,1],"epilogue":"direct","instr":[16,8,16],"mask":[true,true,false],)"
            R"("pipeline":"warp_specialized","provider":"tile","scheduler":"persistent",)"
            R"("split_k":1,"stages":3,"swizzle":1,"tile":[128,128,32],"warps":[2,2,1]})");
  CudnnConfig cudnn{.engine_id = 7, .knobs = {{1, 4}, {3, -1}}};
  EXPECT_EQ(ConfigKey(cudnn), "cudnn:engine=7,k1=4,k3=-1");
  EXPECT_EQ(json_codec::KernelConfigToJson(cudnn).dump(),
            R"({"engine_id":7,"knobs":[[1,4],[3,-1]],"provider":"cudnn"})");
  CkConvConfig conv{.tile_m = 64, .tile_n = 64, .tile_k = 32, .pipeline = "compv3"};
  EXPECT_EQ(ConfigKey(conv), "ck_conv:tile=64x64x32,pipeline=compv3,scheduler=,dsb=0,si=0");
}

TEST(ConfigSchemaTest, JsonRefusesValuesOutsideTheMembersWidth) {
  auto j = json_codec::KernelConfigToJson(CublasLtConfig{});
  j["algo_id"] = int64_t{1} << 40;
  const auto bad = json_codec::KernelConfigFromJson(j, "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("c.algo_id"), std::string::npos);
  j = json_codec::KernelConfigToJson(TileConfig{});
  j["tile"] = {128, 128};
  EXPECT_FALSE(json_codec::KernelConfigFromJson(j, "c").ok());
  j = json_codec::KernelConfigToJson(CudnnConfig{});
  j.erase("engine_id");
  EXPECT_FALSE(json_codec::KernelConfigFromJson(j, "c").ok()) << "engine_id is required";
}

TEST(ConfigSchemaTest, RowsKeepEveryFieldAndDerivedColumns) {
  TileConfig tile;
  tile.scheduler = TileScheduler::kPersistent;
  tile.swizzle = 4;
  Measurement m;
  GemmProblem p;
  p.m = p.n = p.k = 256;
  m.problem = p;
  m.config = tile;
  const DatasetRow row = RowFromMeasurement(m, RunInfo{});
  EXPECT_EQ(row.persistent, true);
  EXPECT_EQ(row.cluster_k, 1);
  EXPECT_EQ(row.warp_m, 2);
  EXPECT_EQ(row.pipeline, "multistage");
  auto back = MeasurementFromRow(row);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->config, m.config);
  DatasetRow bad = row;
  bad.pipeline = "magic";
  const auto refused = MeasurementFromRow(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("column pipeline"), std::string::npos);
}

TEST(ConfigSchemaTest, RuleFieldsComeFromTheTables) {
  const std::vector<std::string> tile = RuleFields(Provider::kTile);
  EXPECT_NE(std::find(tile.begin(), tile.end(), "tile_m"), tile.end());
  EXPECT_NE(std::find(tile.begin(), tile.end(), "pipeline"), tile.end());
  EXPECT_EQ(std::find(tile.begin(), tile.end(), "persistent"), tile.end()) << "derived";
  const std::vector<std::string> lt = RuleFields(Provider::kCublasLt);
  EXPECT_EQ(lt.size(), 16u);
  EXPECT_EQ(ConfigFieldValue(CublasLtConfig{.algo_id = 66}, "algo_id"), 66);
  EXPECT_EQ(ConfigFieldValue(CublasLtConfig{}, "warps_m"), std::nullopt);
}

TEST(ConfigSchemaTest, FeatureBlocksAndEncodingsComeFromTheTables) {
  const FeatureSpec tile = GemmFeatureSpec(Provider::kTile, HardwareConstants{});
  EXPECT_EQ(tile.encodings.at("tile_pipeline"),
            (std::vector<std::string>{"multistage", "warp_specialized", "small_m", "decode"}));
  const FeatureSpec ck = GemmFeatureSpec(Provider::kCkTile, HardwareConstants{});
  EXPECT_EQ(ck.encodings.at("ck_epilogue"), (std::vector<std::string>{"default", "cshuffle"}));
  const FeatureSpec lt = GemmFeatureSpec(Provider::kCublasLt, HardwareConstants{});
  std::vector<std::string> provider_block;
  for (const FeatureInfo& f : lt.features) {
    if (f.name.rfind("cublaslt_", 0) == 0 || f.name == "cluster_k")
      provider_block.push_back(f.name);
  }
  EXPECT_EQ(provider_block, (std::vector<std::string>{
                                "cublaslt_algo_id", "cublaslt_tile_id", "cublaslt_stages_id",
                                "cublaslt_reduction_scheme", "cublaslt_swizzle",
                                "cublaslt_custom_option", "cublaslt_inner_shape_id", "cluster_k"}));
}

}  // namespace
}  // namespace kselect
