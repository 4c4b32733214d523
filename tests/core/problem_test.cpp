#include "kselect/problem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kselect {
namespace {

TEST(ProblemTest, GemmFlopsAndBytes) {
  GemmProblem p{.m = 128, .n = 256, .k = 64};
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_DOUBLE_EQ(p.Flops(), 2.0 * 128 * 256 * 64);
  // bf16: A 128x64, B 64x256, C 128x256, two bytes each, beta = 0 so C is written once.
  EXPECT_DOUBLE_EQ(p.MinBytes(), 2.0 * (128 * 64 + 64 * 256 + 128 * 256));
  p.dtype_a = p.dtype_b = DataType::kF8E4M3;
  EXPECT_DOUBLE_EQ(p.MinBytes(), 1.0 * (128 * 64 + 64 * 256) + 2.0 * 128 * 256);
}

TEST(ProblemTest, ImpossibleGemmShapesAreRejected) {
  EXPECT_FALSE((GemmProblem{.m = 0, .n = 1, .k = 1}).Validate().ok());
  EXPECT_FALSE((GemmProblem{.m = 4, .n = -1, .k = 1}).Validate().ok());
  const Status overflow =
      GemmProblem{.m = int64_t{1} << 40, .n = int64_t{1} << 40, .k = 1}.Validate();
  EXPECT_EQ(overflow.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(overflow.message().find("overflows"), std::string::npos);
  // NaN never equals itself: a problem holding one could never be found in a cache.
  GemmProblem scalars{.m = 4, .n = 4, .k = 4};
  scalars.alpha = std::nan("");
  EXPECT_NE(scalars.Validate().message().find("finite"), std::string::npos);
  scalars.alpha = 1;
  scalars.beta = -std::numeric_limits<double>::infinity();
  EXPECT_FALSE(scalars.Validate().ok());
}

TEST(ProblemTest, LayoutsAndBlasOps) {
  auto rcr = ParseGemmLayout("rcr");
  ASSERT_TRUE(rcr.ok());
  EXPECT_EQ(rcr->ToString(), "rcr");
  EXPECT_EQ(rcr->BlasOps(), "");  // row-major C has no column-major BLAS name
  auto tn = GemmLayoutFromBlasOps("TN");
  ASSERT_TRUE(tn.ok());
  EXPECT_EQ(tn->ToString(), "rcc");
  EXPECT_EQ(tn->BlasOps(), "TN");
  for (const char* ops : {"NN", "NT", "TN", "TT"}) {
    EXPECT_EQ(GemmLayoutFromBlasOps(ops)->BlasOps(), ops);
  }
  EXPECT_FALSE(ParseGemmLayout("rxr").ok());
  EXPECT_FALSE(GemmLayoutFromBlasOps("TX").ok());
}

TEST(ProblemTest, DataTypeNames) {
  for (DataType t : {DataType::kF32, DataType::kTF32, DataType::kF16, DataType::kBF16,
                     DataType::kF8E4M3, DataType::kF8E5M2, DataType::kI8, DataType::kI32}) {
    EXPECT_EQ(*ParseDataType(DataTypeName(t)), t);
  }
  EXPECT_EQ(*ParseDataType("e4m3"), DataType::kF8E4M3);
  EXPECT_EQ(DataTypeBits(DataType::kBF16), 16);
  EXPECT_FALSE(ParseDataType("fp7").ok());
}

TEST(ProblemTest, ConvOutputSizesAndFlops) {
  ConvProblem p{.n = 2,
                .c = 64,
                .k = 128,
                .g = 2,
                .hi = 56,
                .wi = 56,
                .y = 3,
                .x = 3,
                .pad_h = 1,
                .pad_w = 1};
  ASSERT_TRUE(p.Validate().ok());
  EXPECT_FALSE(p.Is3d());
  EXPECT_EQ(p.Ho(), 56);
  EXPECT_EQ(p.Wo(), 56);
  EXPECT_EQ(p.Do(), 1);
  EXPECT_DOUBLE_EQ(p.Flops(), 2.0 * 2 * 128 * 56 * 56 * (64 / 2) * 9);
  p.stride_h = p.stride_w = 2;
  EXPECT_EQ(p.Ho(), 28);
  p.di = 8;
  p.z = 3;
  p.pad_d = 1;
  EXPECT_TRUE(p.Is3d());
  EXPECT_EQ(p.Do(), 8);
}

TEST(ProblemTest, ImpossibleConvolutionsAreRejected) {
  ConvProblem p{.n = 1, .c = 6, .k = 8, .g = 4, .hi = 8, .wi = 8, .y = 3, .x = 3};
  EXPECT_NE(p.Validate().message().find("divisible"), std::string::npos);
  p.g = 2;
  EXPECT_TRUE(p.Validate().ok());
  p.y = 11;  // filter larger than the input
  EXPECT_NE(p.Validate().message().find("empty output"), std::string::npos);
  EXPECT_FALSE(ParseConvDirection("sideways").ok());
  EXPECT_EQ(*ParseConvDirection("forward"), ConvDirection::kForward);
}

// Negative padding and dilations or strides below 1 are refused in every spatial dimension.
TEST(ProblemTest, NegativePaddingAndDilationBelowOneAreRejected) {
  const ConvProblem ok{.n = 1, .c = 8, .k = 8, .hi = 8, .wi = 8, .y = 3, .x = 3};
  ASSERT_TRUE(ok.Validate().ok());
  for (int64_t ConvProblem::*pad :
       {&ConvProblem::pad_d, &ConvProblem::pad_h, &ConvProblem::pad_w}) {
    ConvProblem p = ok;
    p.*pad = -1;
    EXPECT_NE(p.Validate().message().find("padding must not be negative"), std::string::npos);
  }
  const std::pair<int64_t ConvProblem::*, const char*> at_least_one[] = {
      {&ConvProblem::dilation_d, "dilation_d"},
      {&ConvProblem::dilation_h, "dilation_h"},
      {&ConvProblem::dilation_w, "dilation_w"},
      {&ConvProblem::stride_h, "stride_h"}};
  for (const auto& [field, name] : at_least_one) {
    for (const int64_t value : {0, -2}) {
      ConvProblem p = ok;
      p.*field = value;
      EXPECT_NE(p.Validate().message().find(name), std::string::npos) << p.Validate().message();
    }
  }
}

// Sizes read from a file can be anything: a padding or dilation whose output extent does not fit
// 64 bits is a clear error, not an overflow (found by fuzz_ck_conv_csv).
TEST(ProblemTest, ConvSizesBeyond64BitsAreRejected) {
  const ConvProblem ok{.n = 1, .c = 8, .k = 8, .hi = 8, .wi = 8, .y = 3, .x = 3};
  ConvProblem huge_pad = ok;
  huge_pad.pad_w = 6666666666666666666;
  EXPECT_NE(huge_pad.Validate().message().find("overflows 64-bit"), std::string::npos)
      << huge_pad.Validate().message();
  ConvProblem huge_dilation = ok;
  huge_dilation.dilation_h = 6666666666666666666;
  huge_dilation.y = 3;
  // The filter's span exceeds any input: an empty output, computed without overflow.
  EXPECT_NE(huge_dilation.Validate().message().find("empty output"), std::string::npos)
      << huge_dilation.Validate().message();
  EXPECT_EQ(huge_dilation.Ho(), 0);
}

}  // namespace
}  // namespace kselect
