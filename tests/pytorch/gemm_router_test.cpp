// GemmRouter (src/pytorch/gemm_router.h) without a GPU: rules, token buckets, and the outcomes a
// framework falls through on. The routed launches are checked on the device by
// python/tests/test_torch.py and scripts/device/torch_bench.py.
#include "pytorch/gemm_router.h"

#include <gtest/gtest.h>

#include <string>

#include "kselect/hardware.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;
using testing_util::LinearGemm;
using testing_util::ModelDir;

TEST(GemmRouteRuleTest, ParsesPatterns) {
  auto any = ParseGemmRouteRule("*=models/a");
  ASSERT_TRUE(any.ok()) << any.status().message();
  EXPECT_FALSE(any->dtype.has_value());
  EXPECT_FALSE(any->layout.has_value());
  EXPECT_EQ(any->model_dir, "models/a");
  auto exact = ParseGemmRouteRule("bf16/rcc=models/x:models/y");
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_EQ(exact->dtype, DataType::kBF16);
  ASSERT_TRUE(exact->layout.has_value());
  EXPECT_EQ(exact->layout->ToString(), "rcc");
  EXPECT_EQ(exact->model_dir, "models/x:models/y");
  auto dtype_only = ParseGemmRouteRule("fp16/*=m");
  ASSERT_TRUE(dtype_only.ok());
  EXPECT_FALSE(dtype_only->layout.has_value());
}

TEST(GemmRouteRuleTest, RefusesMalformedRules) {
  for (const char* bad : {"", "bf16", "bf16=", "bf17=m", "bf16/rxc=m", "bf16/rc=m"}) {
    auto rule = ParseGemmRouteRule(bad);
    EXPECT_FALSE(rule.ok()) << bad;
  }
  EXPECT_TRUE(Contains(ParseGemmRouteRule("bf16").status().message(), "PATTERN=MODEL_DIR"));
}

TEST(TokenBucketTest, BucketsEndAtPowersOfTwoAndOneAndAHalfTimesThem) {
  const std::pair<int64_t, int64_t> expected[] = {
      {1, 1},     {2, 2},     {3, 3},     {4, 4},     {5, 6},       {6, 6},       {7, 8},
      {8, 8},     {9, 12},    {12, 12},   {13, 16},   {17, 24},     {25, 32},     {33, 48},
      {100, 128}, {129, 192}, {193, 256}, {256, 256}, {2000, 2048}, {2048, 2048}, {2049, 3072}};
  for (auto [n, end] : expected) EXPECT_EQ(TokenBucketEnd(n), end) << n;
}

GemmProblem Linear(int64_t n) {
  return LinearGemm(1024, n, 4096);
}

TEST(GemmRouterTest, NoRuleAndCaptureFallThroughAndAreRemembered) {
  GemmRouteRule fp16_only = *ParseGemmRouteRule("fp16=" + ModelDir("h200_cublaslt_default_rank"));
  GemmRouter router({fp16_only}, SelectorOptions{}, /*share_across_n=*/true);
  char buffers[3][256];
  const GemmProblem bf16 = Linear(8);
  // Met first during capture: nothing is decided, nothing is remembered.
  EXPECT_EQ(router.Run(bf16, buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, true),
            GemmRouteOutcome::kUndecidedCapture);
  EXPECT_FALSE(router.Decided(bf16));
  EXPECT_EQ(router.Run(bf16, buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, false),
            GemmRouteOutcome::kNoRule);
  EXPECT_TRUE(router.Decided(bf16));  // the next call is a lookup
  EXPECT_EQ(router.Run(bf16, buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, true),
            GemmRouteOutcome::kNoRule);
  EXPECT_TRUE(router.Decisions().empty());
}

TEST(GemmRouterTest, AModelThatCannotOpenIsReportedOnceAndPassesToTheNextRule) {
  GemmRouter router({*ParseGemmRouteRule("bf16=/nonexistent/model")}, SelectorOptions{}, true);
  char buffers[3][256];
  for (int64_t n : {1, 2}) {
    EXPECT_EQ(router.Run(Linear(n), buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, false),
              GemmRouteOutcome::kNoRule);
  }
  ASSERT_EQ(router.OpenErrors().size(), 1u);
  EXPECT_TRUE(Contains(router.OpenErrors()[0], "/nonexistent/model"));
}

TEST(GemmRouterTest, WithoutAGpuADecisionFailsOnceWithItsReason) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU decides: covered by test_torch.py";
  GemmRouter router({*ParseGemmRouteRule("*=" + ModelDir("h200_cublaslt_default_rank"))},
                    SelectorOptions{}, true);
  char buffers[3][256];
  const GemmProblem p = Linear(8);
  EXPECT_EQ(router.Run(p, buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, false),
            GemmRouteOutcome::kNoDecision);
  ASSERT_EQ(router.Decisions().size(), 1u);
  EXPECT_FALSE(router.Decisions()[0].note.empty());
  EXPECT_EQ(router.Decisions()[0].config, "");
  // Remembered: the next call does not decide again.
  EXPECT_EQ(router.Run(p, buffers[0], buffers[1], buffers[2], nullptr, 0, nullptr, false),
            GemmRouteOutcome::kNoDecision);
  EXPECT_EQ(router.Decisions().size(), 1u);
}

}  // namespace
}  // namespace kselect
