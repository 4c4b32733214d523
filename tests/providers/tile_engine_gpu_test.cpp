// GPU consistency of the tile engine: one config of each family, loaded directly (not through the
// provider), against the verify module's reference on a shape that is a multiple of no tile,
// with C poisoned (NaN) first. Skips without an sm_90 GPU; `kselect tile verify --rules tests`
// and tests/verify/consistency_gpu_test.cpp are the full harnesses.
#include <cuda_runtime_api.h>

#include <memory>

#include <gtest/gtest.h>

#include "kselect/verify.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_provider.h"

namespace kselect::tile {
namespace {

bool HaveHopper() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return false;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9 || prop.minor != 0) {
    return false;
  }
  // TileKernel::Load uses the current context: make the runtime create the primary one.
  return cudaSetDevice(0) == cudaSuccess && cudaFree(nullptr) == cudaSuccess;
}

TileConfig Config(TilePipeline pipeline) {
  TileConfig c;
  c.pipeline = pipeline;
  if (pipeline == TilePipeline::kWarpSpecialized) {
    c.tile_m = 128, c.tile_n = 128, c.tile_k = 64;
    c.warps_m = 2, c.warps_n = 1;
    c.instr_m = 64, c.instr_n = 128, c.instr_k = 16;
    c.stages = 4;
  } else if (pipeline == TilePipeline::kSmallM) {
    c.tile_m = 16, c.tile_n = 64, c.tile_k = 64;
    c.warps_m = 1, c.warps_n = 4;
    c.instr_m = c.instr_n = c.instr_k = 1;
    c.stages = 1;
  } else if (pipeline == TilePipeline::kDecode) {
    c.tile_m = 32, c.tile_n = 16, c.tile_k = 64;
    c.warps_m = 2, c.warps_n = 1, c.warps_k = 3;
    c.stages = 2;
  }
  return c;
}

class TileGpuTest : public ::testing::TestWithParam<TilePipeline> {};

TEST_P(TileGpuTest, MatchesTheReference) {
  if (!HaveHopper()) GTEST_SKIP() << "no sm_90 GPU on this host";
  GemmProblem p;
  p.m = GetParam() == TilePipeline::kSmallM ? 13 : 200;
  p.n = 300, p.k = 136;  // rcr, bf16: no dimension is a multiple of the tile
  if (GetParam() == TilePipeline::kDecode) {
    // Framework orientation (cuBLAS TN: tokens in n, C column-major), 11 tokens of 16.
    p.m = 300, p.n = 11, p.k = 1000;
    p.layout = *ParseGemmLayout("rcc");
  }
  StatusOr<TileKernelSpec> spec = SpecForProblem(Config(GetParam()), p);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  CompilerOptions options;
  options.cache_dir.clear();
  StatusOr<TileBinary> binary = TileCompiler(options).Compile(*spec);
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  StatusOr<std::unique_ptr<TileKernel>> kernel = TileKernel::Load(*binary);
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();

  StatusOr<std::unique_ptr<verify::Verifier>> verifier = verify::Verifier::Create({.seed = 5});
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  auto verify_case =
      (*verifier)->MakeCase(p, CreateTileProvider(ProviderOptions{})->Operands(p).value());
  ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
  const std::unique_ptr<PreparedKernel> bound = BindTileKernel(p, **kernel);
  const StatusOr<verify::CheckResult> result = (*verify_case)->Check(*bound);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->passed) << result->ToString();
  EXPECT_EQ(result->non_finite, 0) << "C not fully written: " << result->ToString();
}

INSTANTIATE_TEST_SUITE_P(Families, TileGpuTest,
                         ::testing::Values(TilePipeline::kMultistage, TilePipeline::kSmallM,
                                           TilePipeline::kWarpSpecialized, TilePipeline::kDecode),
                         [](const auto& info) {
                           return std::string(TilePipelineName(info.param));
                         });

}  // namespace
}  // namespace kselect::tile
