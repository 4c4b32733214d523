// The vendor guard of first-use timing (SelectorOptions::first_use_vendor_margin), CPU side: the
// decision rule over timed medians, the dispatch list that can run the vendor's pick, the report,
// and eval's rule over measured efficiencies. The device side is DispatchGpuTest's first-use tests.
#include <gtest/gtest.h>

#include <unordered_map>
#include <vector>

#include "kselect/eval.h"
#include "kselect/provider.h"
#include "kselect/selector.h"
#include "providers/cublaslt/cublaslt_config.h"
#include "selector/first_use_timing.h"

namespace kselect {
namespace {

KernelConfig Algo(int id) {
  CublasLtConfig c;
  c.algo_id = id;
  return c;
}

std::vector<timing::TimedContender> Timed(std::vector<std::pair<int, double>> algo_ms) {
  std::vector<timing::TimedContender> out;
  for (const auto& [id, ms] : algo_ms) out.push_back({ConfigKey(Algo(id)), ms});
  return out;
}

TEST(VendorGuardTest, KeepsThePickUnlessBeatenByMoreThanTheMargin) {
  // Algo 7 is the vendor's pick; algo 1 is 0.5 % faster: within a 1 % margin, the pick stays.
  FirstUseRecord kept = GuardedRecord(Timed({{1, 0.995}, {2, 0.999}, {7, 1.0}}), Algo(7), 0.01);
  ASSERT_EQ(kept.order.size(), 3u);
  EXPECT_EQ(kept.order.front(), ConfigKey(Algo(7)));
  EXPECT_EQ(kept.order[1], ConfigKey(Algo(1)));  // the rest stay fastest first
  EXPECT_TRUE(kept.vendor_timed);
  EXPECT_TRUE(kept.vendor_kept);
  // 3 % faster: the candidate runs.
  FirstUseRecord beaten = GuardedRecord(Timed({{1, 0.97}, {7, 1.0}}), Algo(7), 0.01);
  EXPECT_EQ(beaten.order.front(), ConfigKey(Algo(1)));
  EXPECT_TRUE(beaten.vendor_timed);
  EXPECT_FALSE(beaten.vendor_kept);
  // The pick fastest anyway.
  FirstUseRecord fastest = GuardedRecord(Timed({{7, 0.9}, {1, 1.0}}), Algo(7), 0.01);
  EXPECT_EQ(fastest.order.front(), ConfigKey(Algo(7)));
  EXPECT_TRUE(fastest.vendor_kept);
  // Margin 0: only the fastest runs.
  FirstUseRecord strict = GuardedRecord(Timed({{1, 0.999}, {7, 1.0}}), Algo(7), 0.0);
  EXPECT_EQ(strict.order.front(), ConfigKey(Algo(1)));
}

TEST(VendorGuardTest, APickThatWasNotTimedIsNotAGuardAndSaysSo) {
  FirstUseRecord none = GuardedRecord(Timed({{1, 0.9}, {2, 1.0}}), std::nullopt, 0.01);
  EXPECT_EQ(none.order.front(), ConfigKey(Algo(1)));
  EXPECT_FALSE(none.vendor_timed);
  EXPECT_NE(GuardNote(none).find("not guarded"), std::string::npos);
  FirstUseRecord untimed = GuardedRecord(Timed({{1, 0.9}, {2, 1.0}}), Algo(7), 0.01);
  EXPECT_FALSE(untimed.vendor_timed);
  EXPECT_FALSE(untimed.vendor_kept);
  EXPECT_NE(GuardNote(untimed).find("could not be timed"), std::string::npos);
}

TEST(VendorGuardTest, DispatchCanRunAPickTheSelectionLacks) {
  std::vector<RankedConfig> ranked(2);
  ranked[0].config = Algo(1);
  ranked[1].config = Algo(2);
  FirstUseRecord record = GuardedRecord(Timed({{1, 1.0}, {2, 1.1}, {7, 0.999}}), Algo(7), 0.01);
  const std::vector<RankedConfig> candidates = WithVendorPick(ranked, &record);
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(ConfigKey(candidates[2].config), ConfigKey(Algo(7)));
  const std::vector<size_t> order = TimedFirst(candidates, record.order);
  EXPECT_EQ(order.front(), 2u);  // the vendor's pick runs first
  // A pick already in the selection is not added twice.
  FirstUseRecord listed = GuardedRecord(Timed({{1, 1.0}, {2, 1.1}}), Algo(2), 0.01);
  EXPECT_EQ(WithVendorPick(ranked, &listed).size(), 2u);
  EXPECT_EQ(WithVendorPick(ranked, nullptr).size(), 2u);
}

// Never launched: a contender alone is not timed.
class UnlaunchedKernel final : public PreparedKernel {
 public:
  int64_t WorkspaceBytes() const override { return 0; }
  Status Launch(const KernelOperands&, void*) override {
    ADD_FAILURE() << "a lone contender was launched";
    return InternalError("launched");
  }
};

TEST(VendorGuardTest, AVendorPickLeftAloneRunsUntimedAndAnythingElseAloneIsNoOrder) {
  // The candidates failed to prepare: the vendor's pick, all that prepared, runs; nothing was
  // timed.
  UnlaunchedKernel kernel;
  auto provider = CreateProvider(Provider::kCublasLt, {});
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  const Problem problem = GemmProblem{.m = 64, .n = 64, .k = 64};
  auto no_prepare = []() -> StatusOr<PreparedKernel*> { return InternalError("not asked"); };
  StatusOr<FirstUseRecord> alone =
      TimeWithVendorPick({{ConfigKey(Algo(7)), &kernel}}, Algo(7), no_prepare, **provider, problem,
                         KernelOperands{}, SelectorOptions{}, nullptr);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  ASSERT_EQ(alone->order.size(), 1u);
  EXPECT_EQ(alone->order.front(), ConfigKey(Algo(7)));
  EXPECT_TRUE(alone->vendor_kept);
  EXPECT_FALSE(alone->vendor_timed);
  EXPECT_EQ(alone->timing_ms, 0.0);
  // One candidate that is not the pick (the pick could not be prepared): no order, so dispatch
  // runs the selection's ranking.
  auto refused = []() -> StatusOr<PreparedKernel*> { return CannotImplementError("no"); };
  StatusOr<FirstUseRecord> other =
      TimeWithVendorPick({{ConfigKey(Algo(1)), &kernel}}, Algo(7), refused, **provider, problem,
                         KernelOperands{}, SelectorOptions{}, nullptr);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_TRUE(other->order.empty());
  // A one-config order counts as untimed.
  std::unordered_map<std::string, FirstUseRecord> orders;
  int timed = -1;
  std::string note;
  StatusOr<const FirstUseRecord*> kept = FirstUseOrder(
      orders, "p", nullptr, [&]() -> StatusOr<FirstUseRecord> { return *alone; }, &timed, &note);
  if (kept.ok()) {  // (without a GPU the capture query fails first)
    EXPECT_EQ(timed, 0);
    EXPECT_EQ((*kept)->order.size(), 1u);
  }
}

TEST(VendorGuardTest, TheReportCountsTimedKeptAndBeatenPicks) {
  std::unordered_map<std::string, FirstUseRecord> records;
  records["a"] = GuardedRecord(Timed({{1, 0.995}, {7, 1.0}}), Algo(7), 0.01);  // kept
  records["b"] = GuardedRecord(Timed({{1, 0.90}, {7, 1.0}}), Algo(7), 0.01);   // beaten
  records["c"] = GuardedRecord(Timed({{1, 0.90}, {2, 1.0}}), Algo(7), 0.01);   // not timed
  records["d"] = FirstUseRecord{};                                             // nothing timed
  const FirstUseGuardReport report = GuardReportOf(records);
  EXPECT_EQ(report.timed_problems, 3);
  EXPECT_EQ(report.vendor_timed, 2);
  EXPECT_EQ(report.vendor_kept, 1);
}

TEST(VendorGuardTest, EvalAppliesTheSameRuleToMeasuredEfficiencies) {
  EXPECT_DOUBLE_EQ(GuardedEfficiency(0.995, 0.99, 0.01), 0.99);  // within the margin: the pick
  EXPECT_DOUBLE_EQ(GuardedEfficiency(1.0, 0.95, 0.01), 1.0);     // beyond it: the best
  EXPECT_DOUBLE_EQ(GuardedEfficiency(0.90, 0.95, 0.01), 0.95);   // never below the pick
  EXPECT_GT(SelectorOptions{}.first_use_vendor_margin, 0.0);
}

}  // namespace
}  // namespace kselect
