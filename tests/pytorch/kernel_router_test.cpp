// KernelRouter (src/pytorch/kernel_router.h) without a GPU: rules, token buckets, and the outcomes
// a framework falls through on. The routed launches are checked on the device by
// python/tests/test_torch.py and scripts/device/torch_bench.py.
#include "pytorch/kernel_router.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kselect/hardware.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;
using testing_util::LinearGemm;
using testing_util::ModelDir;

TEST(RouteRuleTest, ParsesPatterns) {
  auto any = ParseRouteRule("*=models/a");
  ASSERT_TRUE(any.ok()) << any.status().message();
  EXPECT_FALSE(any->dtype.has_value());
  EXPECT_FALSE(any->layout.has_value());
  EXPECT_EQ(any->model_dir, "models/a");
  auto exact = ParseRouteRule("bf16/rcc=models/x:models/y");
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_EQ(exact->dtype, DataType::kBF16);
  ASSERT_TRUE(exact->layout.has_value());
  EXPECT_EQ(exact->layout->ToString(), "rcc");
  EXPECT_EQ(exact->model_dir, "models/x:models/y");
  auto dtype_only = ParseRouteRule("fp16/*=m");
  ASSERT_TRUE(dtype_only.ok());
  EXPECT_FALSE(dtype_only->layout.has_value());
  EXPECT_FALSE(dtype_only->conv);
  auto conv = ParseRouteRule("conv/bwd_weight=models/w");
  ASSERT_TRUE(conv.ok()) << conv.status().message();
  EXPECT_TRUE(conv->conv);
  EXPECT_EQ(conv->direction, ConvDirection::kBackwardWeight);
  auto any_conv = ParseRouteRule("conv=models/c");
  ASSERT_TRUE(any_conv.ok());
  EXPECT_TRUE(any_conv->conv);
  EXPECT_FALSE(any_conv->direction.has_value());
}

TEST(RouteRuleTest, RefusesMalformedRules) {
  for (const char* bad :
       {"", "bf16", "bf16=", "bf17=m", "bf16/rxc=m", "bf16/rc=m", "conv/sideways=m"}) {
    auto rule = ParseRouteRule(bad);
    EXPECT_FALSE(rule.ok()) << bad;
  }
  EXPECT_TRUE(Contains(ParseRouteRule("bf16").status().message(), "PATTERN=MODEL_DIR"));
}

TEST(TokenBucketTest, BucketsEndAtPowersOfTwoAndOneAndAHalfTimesThem) {
  const std::pair<int64_t, int64_t> expected[] = {
      {1, 1},     {2, 2},     {3, 3},     {4, 4},     {5, 6},       {6, 6},       {7, 8},
      {8, 8},     {9, 12},    {12, 12},   {13, 16},   {17, 24},     {25, 32},     {33, 48},
      {100, 128}, {129, 192}, {193, 256}, {256, 256}, {2000, 2048}, {2048, 2048}, {2049, 3072}};
  for (auto [n, end] : expected) EXPECT_EQ(TokenBucketEnd(n), end) << n;
}

Problem Linear(int64_t n) {
  return LinearGemm(1024, n, 4096);
}

// Host buffers standing for device operands: the tests never reach a launch.
KernelOperands Operands() {
  static char buffers[3][256];
  KernelOperands operands;
  operands.buffers = {buffers[0], buffers[1], buffers[2]};
  return operands;
}

TEST(KernelRouterTest, NoRuleAndCaptureFallThroughAndAreRemembered) {
  RouteRule fp16_only = *ParseRouteRule("fp16=" + ModelDir("h200_cublaslt_default_rank"));
  KernelRouter router({fp16_only}, SelectorOptions{}, SelectorOptions{}, /*share_across_n=*/true);
  const Problem bf16 = Linear(8);
  // Met first during capture: nothing is decided, nothing is remembered.
  EXPECT_EQ(router.Run(bf16, Operands(), nullptr, true), RouteOutcome::kUndecidedCapture);
  EXPECT_EQ(router.Find(bf16), nullptr);
  EXPECT_EQ(router.Run(bf16, Operands(), nullptr, false), RouteOutcome::kNoRule);
  EXPECT_NE(router.Find(bf16), nullptr);  // the next call is a lookup
  EXPECT_EQ(router.Run(bf16, Operands(), nullptr, true), RouteOutcome::kNoRule);
  EXPECT_TRUE(router.Decisions().empty());
}

TEST(KernelRouterTest, AConvolutionNeedsAConvolutionRule) {
  KernelRouter router({*ParseRouteRule("*=" + ModelDir("h200_cublaslt_default_rank"))},
                      SelectorOptions{}, SelectorOptions{}, true);
  ConvProblem conv;
  conv.n = 1;
  conv.c = conv.k = 64;
  conv.hi = conv.wi = 56;
  conv.y = conv.x = 3;
  conv.pad_h = conv.pad_w = 1;
  EXPECT_EQ(router.Run(Problem(conv), Operands(), nullptr, false), RouteOutcome::kNoRule);
  EXPECT_TRUE(router.OpenErrors().empty());  // the GEMM rule's model was never opened
}

TEST(KernelRouterTest, AModelThatCannotOpenIsReportedOnceAndPassesToTheNextRule) {
  KernelRouter router({*ParseRouteRule("bf16=/nonexistent/model")}, SelectorOptions{},
                      SelectorOptions{}, true);
  for (int64_t n : {1, 2}) {
    EXPECT_EQ(router.Run(Linear(n), Operands(), nullptr, false), RouteOutcome::kNoRule);
  }
  ASSERT_EQ(router.OpenErrors().size(), 1u);
  EXPECT_TRUE(Contains(router.OpenErrors()[0], "/nonexistent/model"));
}

TEST(KernelRouterTest, WithoutAGpuADecisionFailsOnceWithItsReason) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU decides: covered by test_torch.py";
  KernelRouter router({*ParseRouteRule("*=" + ModelDir("h200_cublaslt_default_rank"))},
                      SelectorOptions{}, SelectorOptions{}, true);
  const Problem p = Linear(8);
  EXPECT_EQ(router.Run(p, Operands(), nullptr, false), RouteOutcome::kNoDecision);
  ASSERT_EQ(router.Decisions().size(), 1u);
  EXPECT_FALSE(router.Decisions()[0].note.empty());
  EXPECT_EQ(router.Decisions()[0].config, "");
  // Remembered: the next call does not decide again.
  EXPECT_EQ(router.Run(p, Operands(), nullptr, false), RouteOutcome::kNoDecision);
  EXPECT_EQ(router.Decisions().size(), 1u);
}

TEST(KernelRouterTest, DecisionFilesCarryTheRankingToALaterRouter) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU decides: covered by test_torch.py";
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("kselect_router_decisions_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  const RouteRule rule = *ParseRouteRule("*=" + ModelDir("h200_cublaslt_default_rank"));
  {
    KernelRouter router({rule}, SelectorOptions{}, SelectorOptions{}, true);
    EXPECT_EQ(router.SaveDecisions(dir).value(), 0);  // no route opened yet: nothing to save
    // Without a GPU the launch fails, but the model ranked the problem first.
    EXPECT_EQ(router.Run(Linear(8), Operands(), nullptr, false), RouteOutcome::kNoDecision);
    EXPECT_EQ(router.SaveDecisions(dir).value(), 1);
  }
  const std::string file = dir + "/route0-h200_cublaslt_default_rank.json";
  ASSERT_TRUE(std::filesystem::exists(file));
  KernelRouter later({rule}, SelectorOptions{}, SelectorOptions{}, true);
  later.LoadDecisionsFrom(dir);
  EXPECT_TRUE(later.LoadedDecisionFiles().empty());  // read when the route opens
  later.Run(Linear(8), Operands(), nullptr, false);
  ASSERT_EQ(later.LoadedDecisionFiles().size(), 1u);
  EXPECT_EQ(later.LoadedDecisionFiles()[0], "route0-h200_cublaslt_default_rank.json: 1 decisions");
  // A damaged file is refused and said; the router still decides.
  {
    std::ofstream damaged(file, std::ios::trunc);
    damaged << "{\"format\": \"kselect.decision_cache\", \"decisions\": [";
  }
  KernelRouter damaged_reader({rule}, SelectorOptions{}, SelectorOptions{}, true);
  damaged_reader.LoadDecisionsFrom(dir);
  EXPECT_EQ(damaged_reader.Run(Linear(8), Operands(), nullptr, false), RouteOutcome::kNoDecision);
  ASSERT_EQ(damaged_reader.OpenErrors().size(), 1u);
  EXPECT_TRUE(Contains(damaged_reader.OpenErrors()[0], file));
  // A folder that cannot be made: a clear error.
  EXPECT_FALSE(later.SaveDecisions(file + "/below_a_file").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kselect
