// The enum-id decoding tables against cuBLASLt's own header, and the provider's CPU-side
// behaviour (support matrix, registry, clean kUnavailable without a GPU).
#include <gtest/gtest.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "kselect/provider.h"
#include "providers/cublaslt/cublaslt_ids.h"
#include "providers/cublaslt/cublaslt_provider.h"

namespace kselect::cublaslt {
namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(CublasLtIdsTest, DecodesTilesFromTheHeaderEnums) {
  EXPECT_EQ(DecodeTileId(CUBLASLT_MATMUL_TILE_8x8)->m, 8);
  const auto t = DecodeTileId(CUBLASLT_MATMUL_TILE_128x256);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->m, 128);
  EXPECT_EQ(t->n, 256);
  const auto last = DecodeTileId(CUBLASLT_MATMUL_TILE_512x1024);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->m, 512);
  EXPECT_EQ(last->n, 1024);
  EXPECT_FALSE(DecodeTileId(CUBLASLT_MATMUL_TILE_UNDEFINED).has_value());
  EXPECT_FALSE(DecodeTileId(CUBLASLT_MATMUL_TILE_END).has_value());
}

TEST(CublasLtIdsTest, DecodesStagesIncludingAuto) {
  const auto s = DecodeStagesId(CUBLASLT_MATMUL_STAGES_64x3);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->k, 64);
  EXPECT_EQ(s->count, 3);
  const auto a = DecodeStagesId(CUBLASLT_MATMUL_STAGES_64xAUTO);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->k, 64);
  EXPECT_EQ(a->count, 0);
  EXPECT_EQ(DecodeStagesId(CUBLASLT_MATMUL_STAGES_8x3)->count, 3);
  EXPECT_EQ(DecodeStagesId(CUBLASLT_MATMUL_STAGES_768xAUTO)->k, 768);
  EXPECT_FALSE(DecodeStagesId(CUBLASLT_MATMUL_STAGES_UNDEFINED).has_value());
}

TEST(CublasLtIdsTest, DecodesClusterShapes) {
  const auto c = DecodeClusterShapeId(CUBLASLT_CLUSTER_SHAPE_2x1x1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->m, 2);
  EXPECT_EQ(c->n, 1);
  EXPECT_EQ(c->k, 1);
  EXPECT_EQ(DecodeClusterShapeId(CUBLASLT_CLUSTER_SHAPE_1x15x1)->n, 15);
  EXPECT_EQ(DecodeClusterShapeId(CUBLASLT_CLUSTER_SHAPE_4x2x1)->m, 4);
  EXPECT_FALSE(DecodeClusterShapeId(CUBLASLT_CLUSTER_SHAPE_AUTO).has_value());
  const std::vector<int32_t> ids = ExplicitClusterShapeIds();
  EXPECT_EQ(ids.size(), static_cast<size_t>(CUBLASLT_CLUSTER_SHAPE_END - 2));  // all but AUTO and 1
  EXPECT_EQ(ids.front(), CUBLASLT_CLUSTER_SHAPE_1x1x1);
}

TEST(CublasLtIdsTest, FillsDecodedFields) {
  CublasLtConfig c;
  c.tile_id = CUBLASLT_MATMUL_TILE_64x128;
  c.stages_id = CUBLASLT_MATMUL_STAGES_32x4;
  c.cluster_shape_id = CUBLASLT_CLUSTER_SHAPE_1x2x1;
  FillDecodedFields(c);
  EXPECT_EQ(c.tile_m, 64);
  EXPECT_EQ(c.tile_n, 128);
  EXPECT_EQ(c.stage_k, 32);
  EXPECT_EQ(c.stages, 4);
  EXPECT_EQ(c.cluster_m, 1);
  EXPECT_EQ(c.cluster_n, 2);
  EXPECT_EQ(c.cluster_k, 1);
  c.cluster_shape_id = 0;
  FillDecodedFields(c);
  EXPECT_EQ(c.cluster_m, 0);
}

GemmProblem Bf16(const std::string& ops) {
  GemmProblem p;
  p.m = p.n = p.k = 256;
  p.layout = GemmLayoutFromBlasOps(ops).value();
  return p;
}

TEST(CublasLtProviderTest, SupportMatrix) {
  for (const char* ops : {"NN", "NT", "TN", "TT"})
    EXPECT_TRUE(CublasLtSupportsProblem(Bf16(ops))) << ops;
  GemmProblem fp16 = Bf16("TN");
  fp16.dtype_a = fp16.dtype_b = fp16.dtype_c = DataType::kF16;
  EXPECT_TRUE(CublasLtSupportsProblem(fp16));
  GemmProblem fp16_nn = fp16;
  fp16_nn.layout = GemmLayoutFromBlasOps("NN").value();
  EXPECT_TRUE(CublasLtSupportsProblem(fp16_nn));
  // fp32 GEMMs of a real trace (a rotary table's outer product: k = 1), fp32 or tf32 compute.
  GemmProblem fp32 = Bf16("NN");
  fp32.m = 64;
  fp32.n = 1;
  fp32.k = 1;
  fp32.dtype_a = fp32.dtype_b = fp32.dtype_c = DataType::kF32;
  EXPECT_TRUE(CublasLtSupportsProblem(fp32));
  fp32.compute = DataType::kTF32;
  EXPECT_TRUE(CublasLtSupportsProblem(fp32));
  fp32.dtype_c = DataType::kBF16;
  EXPECT_FALSE(CublasLtSupportsProblem(fp32));
  GemmProblem mixed = Bf16("TN");
  mixed.dtype_b = DataType::kF16;
  EXPECT_FALSE(CublasLtSupportsProblem(mixed));
  GemmProblem fp8 = Bf16("TN");
  fp8.dtype_a = fp8.dtype_b = DataType::kF8E4M3;
  EXPECT_TRUE(CublasLtSupportsProblem(fp8));
  GemmProblem row_c = Bf16("TN");
  row_c.layout.c = MatrixOrder::kRowMajor;
  EXPECT_FALSE(CublasLtSupportsProblem(row_c));
  EXPECT_FALSE(CublasLtSupportsProblem(Problem(ConvProblem{})));
}

TEST(CublasLtProviderTest, RegistryIsATable) {
  ASSERT_FALSE(ProviderRegistry().empty());
  EXPECT_EQ(ProviderRegistry()[0].provider, Provider::kCublasLt);
  auto provider = CreateProvider(Provider::kCublasLt);
  ASSERT_TRUE(provider.ok());
  EXPECT_EQ((*provider)->id(), Provider::kCublasLt);
  EXPECT_EQ(CreateProvider(Provider::kCkTile).status().code(), StatusCode::kNotFound);
}

TEST(CublasLtProviderTest, WithoutGpuEverythingIsUnavailable) {
  if (HaveGpu()) GTEST_SKIP() << "a GPU is present: the GPU tests cover this provider";
  auto provider = CreateProvider(Provider::kCublasLt).value();
  const Problem p = Bf16("TN");
  EXPECT_EQ(provider->Enumerate(p).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(provider->CanImplement(p, CublasLtConfig{}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(provider->HeuristicPicks(p, 8).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(provider->Prepare(p, CublasLtConfig{}).status().code(), StatusCode::kUnavailable);
  // Unsupported problems are refused before any device call.
  EXPECT_EQ(provider->Enumerate(Problem(ConvProblem{})).status().code(),
            StatusCode::kCannotImplement);
}

}  // namespace
}  // namespace kselect::cublaslt
