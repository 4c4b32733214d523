#include <gtest/gtest.h>

#include "kselect/ingest.h"

namespace kselect {
namespace {

Measurement Make(double latency_ms, int tile_id, const std::string& run = "r1") {
  Measurement m;
  m.op_type = "gemm";
  m.problem = GemmProblem{.m = 64, .n = 64, .k = 64};
  m.config = CublasLtConfig{.algo_id = 6, .tile_id = tile_id};
  m.latency_ms = latency_ms;
  m.run_id = run;
  m.samples = 5;
  m.cv = 0.01;
  DeriveRates(m);
  m.Validate();
  return m;
}

TEST(DedupTest, RepeatsBecomeOneRowWithTheMedian) {
  std::vector<Measurement> in = {Make(1.0, 1), Make(3.0, 1), Make(2.0, 1), Make(5.0, 2)};
  const auto out = MergeDuplicateMeasurements(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].latency_ms, 2.0);
  EXPECT_EQ(out[0].duplicates_merged, 3);
  EXPECT_EQ(out[0].samples, 15);
  // The spread between repeats (1, 2, 3 ms) is far above their own 1 % CV.
  EXPECT_NEAR(out[0].cv, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(out[1].latency_ms, 5.0);
  EXPECT_EQ(out[1].duplicates_merged, 1);
}

TEST(DedupTest, InvalidRepeatsDoNotPolluteTheMedianAndRunsStaySeparate) {
  Measurement broken = Make(-1.0, 1);
  ASSERT_FALSE(broken.is_valid);
  std::vector<Measurement> in = {broken, Make(4.0, 1), Make(4.0, 1, "r2")};
  const auto out = MergeDuplicateMeasurements(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].is_valid);
  EXPECT_DOUBLE_EQ(out[0].latency_ms, 4.0);
  EXPECT_EQ(out[0].duplicates_merged, 2);
  const auto all_bad = MergeDuplicateMeasurements({broken, broken});
  ASSERT_EQ(all_bad.size(), 1u);
  EXPECT_FALSE(all_bad[0].is_valid);
  EXPECT_EQ(all_bad[0].duplicates_merged, 2);
}

// Figures no GPU can produce are invalid with a reason, and a merge whose CV overflows (1e200 ms
// repeats) does not leave a "valid" row with CV NaN.
TEST(DedupTest, ImpossibleFiguresAreInvalidBeforeAndAfterMerging) {
  Measurement fast = Make(1.0, 1);
  fast.tflops = 1e308;
  fast.Validate();
  EXPECT_FALSE(fast.is_valid);
  EXPECT_NE(fast.invalid_reason.find("tflops is 1e+308"), std::string::npos) << fast.invalid_reason;
  EXPECT_FALSE(Make(1e200, 1).is_valid);
  EXPECT_NE(Make(1e200, 1).invalid_reason.find("latency_ms"), std::string::npos);
  EXPECT_FALSE(Make(kMaxPlausibleLatencyMs * 2, 1).is_valid);
  EXPECT_TRUE(Make(kMaxPlausibleLatencyMs / 2, 1).is_valid);

  Measurement slow = Make(1e150, 1), slower = Make(1e200, 1);
  for (Measurement* m : {&slow, &slower}) {  // as a reader that skipped the bounds would have it
    m->is_valid = true;
    m->invalid_reason.clear();
  }
  const auto merged = MergeDuplicateMeasurements({slow, slower});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_FALSE(merged[0].is_valid);
  EXPECT_FALSE(merged[0].invalid_reason.empty());
}

}  // namespace
}  // namespace kselect
