#include "kselect/kernel_config.h"

#include <gtest/gtest.h>

#include <set>

#include "core/json_codec.h"

namespace kselect {
namespace {

std::vector<KernelConfig> OneOfEach() {
  CublasLtConfig lt{.algo_id = 66,
                    .tile_id = 20,
                    .stages_id = 35,
                    .split_k = 2,
                    .reduction_scheme = 1,
                    .swizzle = 1,
                    .custom_option = 3,
                    .cluster_shape_id = 2,
                    .tile_m = 128,
                    .tile_n = 128,
                    .stage_k = 64,
                    .stages = 3,
                    .cluster_m = 2,
                    .cluster_n = 1,
                    .cluster_k = 1};
  TileConfig tile;
  tile.pipeline = TilePipeline::kWarpSpecialized;
  tile.scheduler = TileScheduler::kPersistent;
  tile.epilogue = TileEpilogue::kSharedStaged;
  tile.mask_k = false;
  tile.cluster_m = 2;
  CudnnConfig cudnn{.engine_id = 7, .knobs = {{1, 4}, {3, -1}}};
  CkTileConfig ck{.tile_m = 256,
                  .tile_n = 128,
                  .tile_k = 64,
                  .warp_m = 2,
                  .warp_n = 2,
                  .warp_k = 1,
                  .warp_tile_m = 32,
                  .warp_tile_n = 32,
                  .warp_tile_k = 16,
                  .pipeline = "compv4",
                  .scheduler = "intrawave",
                  .epilogue = "cshuffle",
                  .pad_m = true,
                  .persistent = true,
                  .vec_a = 8};
  CkConvConfig conv{.tile_m = 64,
                    .tile_n = 64,
                    .tile_k = 32,
                    .pipeline = "compv3",
                    .scheduler = "intrawave",
                    .double_smem_buffer = true};
  return {lt, tile, cudnn, ck, conv};
}

TEST(KernelConfigTest, ProvidersRoundTripThroughNames) {
  for (Provider p : {Provider::kCublasLt, Provider::kTile, Provider::kCudnn, Provider::kCkTile,
                     Provider::kCkConv}) {
    EXPECT_EQ(*ParseProvider(ProviderName(p)), p);
  }
  EXPECT_FALSE(ParseProvider("rocblas").ok());
}

TEST(KernelConfigTest, ConfigKeysAreDistinctAndStable) {
  const auto configs = OneOfEach();
  std::set<std::string> keys;
  for (const auto& c : configs) keys.insert(ConfigKey(c));
  EXPECT_EQ(keys.size(), configs.size());
  // The key is an on-disk identity: changing its text breaks joins with old datasets.
  EXPECT_EQ(ConfigKey(configs[0]),
            "cublaslt:algo=66,tile=20,stages=35,splitk=2,reduction=1,swizzle=1,custom=3,"
            "cluster=2,inner=0");
  TileConfig other = std::get<TileConfig>(configs[1]);
  other.stages += 1;
  EXPECT_NE(ConfigKey(other), ConfigKey(configs[1]));
  EXPECT_EQ(SplitKOf(configs[0]), 2);
  EXPECT_EQ(SplitKOf(configs[2]), 1);
}

// Descriptions are what people compare in predict output and reports: configs that differ in
// a field that changes the kernel must read differently (split-K reduction and inner shape once
// read alike).
TEST(KernelConfigTest, CublasLtDescriptionsTellVariantsApart) {
  const CublasLtConfig base = std::get<CublasLtConfig>(OneOfEach()[0]);
  EXPECT_EQ(DescribeConfig(base),
            "cublaslt algo66 tile128x128 stages64x3 splitk2 reduce-inplace cluster2x1x1 swz opt3");
  std::set<std::string> descriptions{DescribeConfig(base)};
  for (int32_t scheme : {2, 4}) {
    CublasLtConfig other = base;
    other.reduction_scheme = scheme;
    descriptions.insert(DescribeConfig(other));
  }
  CublasLtConfig inner = base;
  inner.inner_shape_id = 4;
  descriptions.insert(DescribeConfig(inner));
  EXPECT_EQ(descriptions.size(), 4u);
  EXPECT_TRUE(descriptions.count(
      "cublaslt algo66 tile128x128 stages64x3 splitk2 reduce-output cluster2x1x1 swz opt3"));
}

TEST(KernelConfigTest, JsonRoundTripKeepsEveryField) {
  for (const auto& c : OneOfEach()) {
    const auto json = json_codec::KernelConfigToJson(c);
    auto back = json_codec::KernelConfigFromJson(json, "config");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c) << json.dump();
  }
}

TEST(KernelConfigTest, JsonReaderNamesTheBadField) {
  auto j = json_codec::KernelConfigToJson(OneOfEach()[1]);
  j["stages"] = "three";
  auto bad = json_codec::KernelConfigFromJson(j, "line7.config");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line7.config.stages"), std::string::npos);
  j = json_codec::KernelConfigToJson(OneOfEach()[0]);
  j["tile_idd"] = 3;
  bad = json_codec::KernelConfigFromJson(j, "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("c.tile_idd: unknown field"), std::string::npos);
  j = json_codec::KernelConfigToJson(OneOfEach()[1]);
  j["pipeline"] = "magic";
  EXPECT_FALSE(json_codec::KernelConfigFromJson(j, "c").ok());
}

TEST(KernelConfigTest, ProblemJsonRoundTrip) {
  GemmProblem g{.m = 1, .n = 4096, .k = 14336, .batch = 2};
  g.layout = *GemmLayoutFromBlasOps("TN");
  g.beta = 0.5;
  ConvProblem c{.n = 4,
                .c = 32,
                .k = 64,
                .g = 1,
                .di = 4,
                .hi = 9,
                .wi = 9,
                .z = 3,
                .y = 3,
                .x = 3,
                .pad_d = 1,
                .direction = ConvDirection::kBackwardWeight};
  for (const Problem& p : {Problem(g), Problem(c)}) {
    auto back = json_codec::ProblemFromJson(json_codec::ProblemToJson(p), "problem");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, p);
  }
  auto j = json_codec::ProblemToJson(Problem(g));
  j.erase("m");
  auto missing = json_codec::ProblemFromJson(j, "p");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("p.m: required field is missing"), std::string::npos);
}

}  // namespace
}  // namespace kselect
