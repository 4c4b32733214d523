// ParseCkTileKernelName and ParseCkConvKernelName: every field of the documented name forms, and
// an error naming the offending token for everything else.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "kselect/ingest.h"
#include "testing_util.h"
#include "providers/ck/ck_kernel_name.h"

namespace kselect {
namespace {

using testing_util::Contains;

constexpr std::string_view kDocName =
    "gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x128x128_1x4x1_"
    "16x16x128";

TEST(CkTileKernelName, ParsesTheDocumentedExample) {
  StatusOr<CkTileKernelName> parsed = ParseCkTileKernelName(kDocName);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->op, "gemm_universal");
  EXPECT_EQ(parsed->dtype, "fp8");
  EXPECT_EQ(parsed->layout, "rcr");
  const CkTileConfig& c = parsed->config;
  EXPECT_EQ(c.pipeline, "compv3");
  EXPECT_EQ(c.epilogue, "cshuffle");
  EXPECT_EQ(c.scheduler, "intrawave");
  EXPECT_FALSE(c.pad_m);
  EXPECT_FALSE(c.pad_n);
  EXPECT_FALSE(c.pad_k);
  EXPECT_FALSE(c.persistent);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.tile_n, 128);
  EXPECT_EQ(c.tile_k, 128);
  EXPECT_EQ(c.warp_m, 1);
  EXPECT_EQ(c.warp_n, 4);
  EXPECT_EQ(c.warp_k, 1);
  EXPECT_EQ(c.warp_tile_m, 16);
  EXPECT_EQ(c.warp_tile_n, 16);
  EXPECT_EQ(c.warp_tile_k, 128);
  EXPECT_EQ(c.vec_a, 0);
  EXPECT_EQ(c.vec_b, 0);
  EXPECT_EQ(c.vec_c, 0);
}

TEST(CkTileKernelName, StripsTheBenchmarkPrefix) {
  StatusOr<CkTileKernelName> plain = ParseCkTileKernelName(kDocName);
  StatusOr<CkTileKernelName> prefixed = ParseCkTileKernelName("benchmark_" + std::string(kDocName));
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(prefixed.ok()) << prefixed.status().ToString();
  EXPECT_EQ(plain->config, prefixed->config);
  EXPECT_EQ(prefixed->op, "gemm_universal");
}

TEST(CkTileKernelName, ParsesPlainGemmFlagsAndVectorWidths) {
  StatusOr<CkTileKernelName> parsed = ParseCkTileKernelName(
      "gemm_bf16_crr_mem_default_interwave_True_False_True_True_256x192x64_2x2x1_32x32x16_vec8_4_"
      "2");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->op, "gemm");
  EXPECT_EQ(parsed->dtype, "bf16");
  EXPECT_EQ(parsed->layout, "crr");
  EXPECT_EQ(parsed->config.pipeline, "mem");
  EXPECT_EQ(parsed->config.epilogue, "default");
  EXPECT_EQ(parsed->config.scheduler, "interwave");
  EXPECT_TRUE(parsed->config.pad_m);
  EXPECT_FALSE(parsed->config.pad_n);
  EXPECT_TRUE(parsed->config.pad_k);
  EXPECT_TRUE(parsed->config.persistent);
  EXPECT_EQ(parsed->config.tile_n, 192);
  EXPECT_EQ(parsed->config.vec_a, 8);
  EXPECT_EQ(parsed->config.vec_b, 4);
  EXPECT_EQ(parsed->config.vec_c, 2);
}

TEST(CkTileKernelName, PipelinesMayContainUnderscores) {
  StatusOr<CkTileKernelName> parsed = ParseCkTileKernelName(
      "gemm_universal_fp16_rcr_comp_tdm_v2_tdm_intrawave_False_False_False_False_128x128x64_"
      "2x2x1_16x16x32");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->config.pipeline, "comp_tdm_v2");
  EXPECT_EQ(parsed->config.epilogue, "tdm");
  EXPECT_EQ(parsed->config.scheduler, "intrawave");
}

TEST(CkTileKernelName, ErrorsNameTheBadToken) {
  struct Case {
    std::string name;
    std::string expected;
  };
  const Case cases[] = {
      {"conv_fp8_rcr", "'conv'"},
      {"gemm_universal_fp9_rcr_compv3_cshuffle_intrawave_False_False_False_False_1x1x1_1x1x1_"
       "1x1x1",
       "'fp9'"},
      {"gemm_universal_fp8_rxr_compv3_cshuffle_intrawave_False_False_False_False_1x1x1_1x1x1_"
       "1x1x1",
       "'rxr'"},
      {"gemm_universal_fp8_rcr_compv3_fancy_intrawave_False_False_False_False_1x1x1_1x1x1_1x1x1",
       "no epilogue token"},
      {"gemm_universal_fp8_rcr_compv3_cshuffle_sidewave_False_False_False_False_1x1x1_1x1x1_"
       "1x1x1",
       "'sidewave'"},
      {"gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_false_False_False_False_1x1x1_1x1x1_"
       "1x1x1",
       "'false'"},
      {"gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x128_1x4x1_"
       "16x16x128",
       "'128x128'"},
      {"gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x0x128_1x4x1_"
       "16x16x128",
       "'0'"},
      {"gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x128x128_"
       "1x4x1",
       "ends before the warp tile shape"},
      {std::string(kDocName) + "_vec8_8", "malformed vector-width suffix"},
      {std::string(kDocName) + "_vecX_8_8", "'X'"},
      {std::string(kDocName) + "_extra", "'extra'"},
      {"", "expected 'gemm'"},
  };
  for (const Case& c : cases) {
    StatusOr<CkTileKernelName> parsed = ParseCkTileKernelName(c.name);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), StatusCode::kParseError) << c.name;
    EXPECT_TRUE(Contains(parsed.status().message(), c.expected));
    if (!c.name.empty()) {
      EXPECT_TRUE(Contains(parsed.status().message(), c.name));
    }
  }
}

TEST(CkConvKernelName, ParsesForwardName) {
  StatusOr<CkConvKernelName> parsed =
      ParseCkConvKernelName("grouped_conv_forward_bf16_2d_128x64x32_compv4_intrawave_dsb_si");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->direction, ConvDirection::kForward);
  EXPECT_EQ(parsed->dtype, "bf16");
  EXPECT_EQ(parsed->spatial_dims, 2);
  EXPECT_EQ(parsed->config.tile_m, 128);
  EXPECT_EQ(parsed->config.tile_n, 64);
  EXPECT_EQ(parsed->config.tile_k, 32);
  EXPECT_EQ(parsed->config.pipeline, "compv4");
  EXPECT_EQ(parsed->config.scheduler, "intrawave");
  EXPECT_TRUE(parsed->config.double_smem_buffer);
  EXPECT_TRUE(parsed->config.split_image);
}

TEST(CkConvKernelName, ParsesBackwardNamesAndOptionalSuffixes) {
  StatusOr<CkConvKernelName> data =
      ParseCkConvKernelName("grouped_conv_bwd_data_fp16_3d_64x64x64_mem");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->direction, ConvDirection::kBackwardData);
  EXPECT_EQ(data->dtype, "fp16");
  EXPECT_EQ(data->spatial_dims, 3);
  EXPECT_EQ(data->config.pipeline, "mem");
  EXPECT_EQ(data->config.scheduler, "");
  EXPECT_FALSE(data->config.double_smem_buffer);
  EXPECT_FALSE(data->config.split_image);

  StatusOr<CkConvKernelName> weight =
      ParseCkConvKernelName("grouped_conv_bwd_weight_bf16_2d_16x64x64_compv3_interwave_si");
  ASSERT_TRUE(weight.ok()) << weight.status().ToString();
  EXPECT_EQ(weight->direction, ConvDirection::kBackwardWeight);
  EXPECT_EQ(weight->config.scheduler, "interwave");
  EXPECT_FALSE(weight->config.double_smem_buffer);
  EXPECT_TRUE(weight->config.split_image);

  StatusOr<CkConvKernelName> fwd =
      ParseCkConvKernelName("grouped_conv_fwd_bf16_2d_32x64x64_basic_v1");
  ASSERT_TRUE(fwd.ok()) << fwd.status().ToString();
  EXPECT_EQ(fwd->direction, ConvDirection::kForward);
  EXPECT_EQ(fwd->config.pipeline, "basic_v1");
}

TEST(CkConvKernelName, RefusesUnknownTrailingTokens) {
  StatusOr<CkConvKernelName> gm =
      ParseCkConvKernelName("grouped_conv_fwd_bf16_2d_128x128x64_compv3_intrawave_gm4");
  ASSERT_FALSE(gm.ok());
  EXPECT_TRUE(Contains(gm.status().message(), "'gm4'"));
  EXPECT_TRUE(Contains(gm.status().message(), "grouped_conv_fwd_bf16_2d_128x128x64"));

  StatusOr<CkConvKernelName> two =
      ParseCkConvKernelName("grouped_conv_fwd_bf16_2d_128x128x64_compv3_dsb_2stage");
  ASSERT_FALSE(two.ok());
  EXPECT_TRUE(Contains(two.status().message(), "'2stage'"));

  // Out of order suffixes are not silently accepted either.
  StatusOr<CkConvKernelName> order =
      ParseCkConvKernelName("grouped_conv_fwd_bf16_2d_128x128x64_compv3_si_dsb");
  ASSERT_FALSE(order.ok());
  EXPECT_TRUE(Contains(order.status().message(), "'dsb'"));
}

TEST(CkConvKernelName, ErrorsNameTheBadToken) {
  struct Case {
    std::string name;
    std::string expected;
  };
  const Case cases[] = {
      {"gemm_fwd_bf16_2d_1x1x1_mem", "grouped_conv_"},
      {"grouped_conv_sideways_bf16_2d_1x1x1_mem", "'sideways'"},
      {"grouped_conv_bwd_bf16_2d_1x1x1_mem", "'bwd'"},
      {"grouped_conv_fwd_bf17_2d_1x1x1_mem", "'bf17'"},
      {"grouped_conv_fwd_bf16_4d_1x1x1_mem", "'4d'"},
      {"grouped_conv_fwd_bf16_2d_1x1_mem", "'1x1'"},
      {"grouped_conv_fwd_bf16_2d_1x1x1", "ends before the pipeline"},
      {"grouped_conv_fwd_bf16_2d_1x1x1_intrawave", "'intrawave'"},
  };
  for (const Case& c : cases) {
    StatusOr<CkConvKernelName> parsed = ParseCkConvKernelName(c.name);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), StatusCode::kParseError);
    EXPECT_TRUE(Contains(parsed.status().message(), c.expected));
  }
}

}  // namespace
}  // namespace kselect
