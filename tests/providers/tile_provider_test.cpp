// The tile engine behind the provider interface: what `kselect bench --provider tile` drives.
// Enumeration compiles with NVRTC and so runs here without a GPU; launching needs one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kselect/provider.h"

namespace kselect {
namespace {

GemmProblem Bf16Gemm(int64_t m, int64_t n, int64_t k) {
  GemmProblem p{.m = m, .n = n, .k = k};
  p.layout = *ParseGemmLayout("rcr");
  return p;
}

std::unique_ptr<KernelProvider> TinyTileProvider() {
  ProviderOptions options;
  options.rule_set = "tiny";
  auto provider = CreateProvider(Provider::kTile, options);
  KSELECT_CHECK_MSG(provider.ok(), provider.status().ToString());
  return std::move(provider).value();
}

TEST(TileProviderTest, RegisteredBesideCublasLt) {
  bool tile = false;
  for (const ProviderEntry& entry : ProviderRegistry()) tile |= entry.provider == Provider::kTile;
  EXPECT_TRUE(tile);
  EXPECT_EQ(TinyTileProvider()->id(), Provider::kTile);
}

TEST(TileProviderTest, EnumeratesCompiledTypedConfigsThatCanImplementTheProblem) {
  auto provider = TinyTileProvider();
  const Problem problem = Bf16Gemm(512, 384, 1000);  // K not a multiple of any tile_k
  auto configs = provider->Enumerate(problem);
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_FALSE(configs->empty());
  for (const KernelConfig& config : *configs) {
    ASSERT_TRUE(std::holds_alternative<TileConfig>(config));
    EXPECT_TRUE(provider->CanImplement(problem, config).ok()) << ConfigKey(config);
    EXPECT_TRUE(provider->WorkspaceBytes(problem, config).ok());
  }
  // A filter narrows the list; the tile engine has no heuristic of its own.
  ConfigFilter only_multistage;
  only_multistage.keep = [](const KernelConfig& c) {
    return std::get<TileConfig>(c).pipeline == TilePipeline::kMultistage;
  };
  auto filtered = provider->Enumerate(problem, only_multistage);
  ASSERT_TRUE(filtered.ok());
  EXPECT_LT(filtered->size(), configs->size());
  EXPECT_TRUE(provider->HeuristicPicks(problem, 8)->empty());
}

TEST(TileProviderTest, RefusesWhatTheEngineDoesNotGenerate) {
  auto provider = TinyTileProvider();
  GemmProblem fp8 = Bf16Gemm(256, 256, 256);
  fp8.dtype_a = fp8.dtype_b = DataType::kF8E4M3;
  EXPECT_FALSE(provider->SupportsProblem(fp8));
  EXPECT_TRUE(provider->Enumerate(fp8)->empty());
  const Status lt = provider->CanImplement(Bf16Gemm(64, 64, 64), CublasLtConfig{.algo_id = 66});
  EXPECT_EQ(lt.code(), StatusCode::kCannotImplement);
  TileConfig broken;
  broken.tile_m = 100;  // not a multiple of the warp layout
  EXPECT_EQ(provider->CanImplement(Bf16Gemm(64, 64, 64), broken).code(),
            StatusCode::kCannotImplement);
}

TEST(TileProviderTest, PrepareNeedsAGpu) {
  auto provider = TinyTileProvider();
  const Problem problem = Bf16Gemm(256, 256, 256);
  auto configs = provider->Enumerate(problem);
  ASSERT_TRUE(configs.ok() && !configs->empty());
  auto prepared = provider->Prepare(problem, configs->front());
  if (prepared.ok()) GTEST_SKIP() << "a GPU is present: launch is covered by the GPU tests";
  EXPECT_EQ(prepared.status().code(), StatusCode::kUnavailable) << prepared.status().ToString();
}

}  // namespace
}  // namespace kselect
