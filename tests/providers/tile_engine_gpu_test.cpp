// GPU consistency of the tile engine: one config of each family against a float64 CPU reference on
// a shape that is a multiple of no tile, with C poisoned (NaN) first. Skips without an sm_90 GPU;
// `kselect tile verify --rules tests` is the full harness.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kselect/tile_engine.h"

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

uint16_t Bits(__nv_bfloat16 h) {
  return static_cast<__nv_bfloat16_raw>(h).x;
}
float Value(uint16_t u) {
  __nv_bfloat16_raw raw;
  raw.x = u;
  return __bfloat162float(__nv_bfloat16(raw));
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
  }
  return c;
}

class TileGpuTest : public ::testing::TestWithParam<TilePipeline> {};

TEST_P(TileGpuTest, MatchesFloat64Reference) {
  if (!HaveHopper()) GTEST_SKIP() << "no sm_90 GPU on this host";
  GemmProblem p;
  p.m = GetParam() == TilePipeline::kSmallM ? 13 : 200;
  p.n = 300, p.k = 136;  // rcr, bf16: no dimension is a multiple of the tile
  StatusOr<TileKernelSpec> spec = SpecForProblem(Config(GetParam()), p);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  CompilerOptions options;
  options.cache_dir.clear();
  StatusOr<TileBinary> binary = TileCompiler(options).Compile(*spec);
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  StatusOr<std::unique_ptr<TileKernel>> kernel = TileKernel::Load(*binary);
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<uint16_t> a(p.m * p.k), b(p.k * p.n), c(p.m * p.n, 0xFFFF);
  for (auto& x : a) x = Bits(__float2bfloat16(dist(rng)));
  for (auto& x : b) x = Bits(__float2bfloat16(dist(rng)));
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  ASSERT_EQ(cudaMalloc(&da, a.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dc, c.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dc, c.data(), c.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const Status launched = (*kernel)->Launch(p, {da, db, dc, nullptr, nullptr});
  ASSERT_TRUE(launched.ok()) << launched.ToString();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < p.k; ++k)
        ref += double(Value(a[i * p.k + k])) * Value(b[j * p.k + k]);
      const double out = Value(c[i * p.n + j]);
      ASSERT_TRUE(std::isfinite(out)) << "C(" << i << "," << j << ") not written";
      err += (out - ref) * (out - ref);
      norm += ref * ref;
    }
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-2);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

INSTANTIATE_TEST_SUITE_P(Families, TileGpuTest,
                         ::testing::Values(TilePipeline::kMultistage, TilePipeline::kSmallM,
                                           TilePipeline::kWarpSpecialized),
                         [](const auto& info) {
                           return std::string(TilePipelineName(info.param));
                         });

}  // namespace
}  // namespace kselect::tile
