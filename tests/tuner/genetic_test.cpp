// The tuner's genetic search on CPU: a synthetic timing landscape over a real cuBLASLt-shaped
// config space (the same fields and groups as the provider's), so the search's behaviour (finds
// the optimum with a fraction of the evaluations, never times a config twice, seeds first,
// budgets honoured, invalid configs never chosen) is checked without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "kselect/kernel_config.h"
#include "kselect/tuner.h"

namespace kselect {
namespace {

// A space like cuBLASLt's for one problem: algos x tiles x stages x split-K x swizzle, with
// holes (not every combination exists), about 1,700 configs.
std::vector<KernelConfig> CublasLtLikeSpace() {
  std::vector<KernelConfig> configs;
  for (int algo : {6, 21, 66, 70}) {
    for (int tile = 1; tile <= 24; ++tile) {
      if ((tile + algo) % 5 == 0) continue;  // holes: tiles an algo lacks
      for (int stages : {8, 10, 16, 17, 19, 22}) {
        for (int split_k : {1, 2, 4, 8}) {
          for (int swizzle : {0, 1}) {
            if (split_k > 1 && algo == 70) continue;
            CublasLtConfig c;
            c.algo_id = algo;
            c.tile_id = tile;
            c.stages_id = stages;
            c.split_k = split_k;
            c.reduction_scheme = split_k > 1 ? 1 : 0;
            c.swizzle = swizzle;
            configs.emplace_back(c);
          }
        }
      }
    }
  }
  return configs;
}

// A rugged landscape with one global optimum: a smooth bowl over the genes plus deterministic
// per-config noise, and a few configs that fail.
double SyntheticMs(const KernelConfig& config) {
  const CublasLtConfig& c = std::get<CublasLtConfig>(config);
  const double bowl = 1.0 + 0.02 * std::abs(c.tile_id - 17) + 0.03 * (c.algo_id != 66) +
                      0.01 * std::abs(c.stages_id - 17) + 0.05 * std::log2(c.split_k) +
                      0.004 * c.swizzle;
  const uint64_t h = (static_cast<uint64_t>(c.algo_id) * 1000003u + c.tile_id * 10007u +
                      c.stages_id * 101u + c.split_k * 7u + c.swizzle) *
                     0x9e3779b97f4a7c15ull;
  return bowl + 0.01 * static_cast<double>(h >> 54) / 1024.0;
}

TEST(SearchSpaceTest, GenesFollowTheSchemaGroups) {
  auto space = MakeSearchSpace(CublasLtLikeSpace());
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  // algo, tile, stages, split_k, reduction, swizzle, custom, cluster, inner.
  EXPECT_EQ(space->gene_names.size(), 9u);
  // kernel {algo, custom, inner}, tile {tile, stages}, split_k {split_k, reduction}, swizzle,
  // cluster.
  EXPECT_EQ(space->groups.size(), 5u);
  for (size_t i = 0; i < space->configs.size(); i += 97) {
    EXPECT_EQ(space->Find(space->genes[i]), std::optional<size_t>(i));
  }
}

TEST(SearchSpaceTest, RefusesEmptyMixedAndDuplicated) {
  EXPECT_FALSE(MakeSearchSpace({}).ok());
  std::vector<KernelConfig> twice = {CublasLtConfig{}, CublasLtConfig{}};
  EXPECT_FALSE(MakeSearchSpace(twice).ok());
  std::vector<KernelConfig> mixed = {CublasLtConfig{}, TileConfig{}};
  EXPECT_FALSE(MakeSearchSpace(mixed).ok());
}

TEST(GeneticSearchTest, FindsTheOptimumWithAFractionOfTheSpaceAndNeverTimesTwice) {
  auto space = MakeSearchSpace(CublasLtLikeSpace());
  ASSERT_TRUE(space.ok());
  size_t optimum = 0;
  for (size_t i = 0; i < space->configs.size(); ++i) {
    if (SyntheticMs(space->configs[i]) < SyntheticMs(space->configs[optimum])) optimum = i;
  }
  int found = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::multiset<size_t> timed;
    GeneticOptions options;
    options.seed = seed;
    const GeneticResult result = RunGeneticSearch(
        *space, {},
        [&](size_t i) -> std::optional<double> {
          timed.insert(i);
          return SyntheticMs(space->configs[i]);
        },
        options);
    for (const size_t i : timed) EXPECT_EQ(timed.count(i), 1u) << "config timed twice";
    EXPECT_EQ(result.evaluated.size(), timed.size());
    EXPECT_LT(timed.size(), space->configs.size() / 2) << result.stopped_by;
    ASSERT_TRUE(result.best);
    // Within 1 % of the optimum every time; the optimum itself in most runs.
    EXPECT_LE(result.best_ms, 1.01 * SyntheticMs(space->configs[optimum]));
    found += *result.best == optimum;
  }
  EXPECT_GE(found, 3);
}

TEST(GeneticSearchTest, SeedsComeFirstAndFailuresAreNeverBest) {
  auto space = MakeSearchSpace(CublasLtLikeSpace());
  ASSERT_TRUE(space.ok());
  const std::vector<size_t> seeds = {5, 500, 5, 1000};
  GeneticOptions options;
  options.generations = 3;
  const GeneticResult result = RunGeneticSearch(
      *space, seeds,
      [&](size_t i) -> std::optional<double> {
        // Every config with split-K 8 "fails" (cannot be timed); config 500 is the fastest.
        if (std::get<CublasLtConfig>(space->configs[i]).split_k == 8) return std::nullopt;
        return i == 500 ? 0.01 : SyntheticMs(space->configs[i]);
      },
      options);
  ASSERT_GE(result.evaluated.size(), 3u);
  EXPECT_EQ(result.evaluated[0].first, 5u);
  EXPECT_EQ(result.evaluated[1].first, 500u);
  EXPECT_EQ(result.evaluated[2].first, 1000u);
  ASSERT_TRUE(result.best);
  EXPECT_EQ(*result.best, 500u);
  for (const size_t i : result.Fastest(1000)) {
    EXPECT_NE(std::get<CublasLtConfig>(space->configs[i]).split_k, 8);
  }
}

TEST(GeneticSearchTest, StopsOnTheBudgetAndTheEvaluationCap) {
  auto space = MakeSearchSpace(CublasLtLikeSpace());
  ASSERT_TRUE(space.ok());
  int calls = 0;
  GeneticOptions options;
  const GeneticResult budget = RunGeneticSearch(
      *space, {},
      [&](size_t i) -> std::optional<double> {
        ++calls;
        return SyntheticMs(space->configs[i]);
      },
      options, [&] { return calls >= 30; });
  EXPECT_EQ(budget.stopped_by, "budget");
  EXPECT_EQ(budget.evaluated.size(), 30u);
  options.max_evaluations = 50;
  const GeneticResult capped = RunGeneticSearch(
      *space, {}, [&](size_t i) -> std::optional<double> { return SyntheticMs(space->configs[i]); },
      options);
  EXPECT_EQ(capped.stopped_by, "evaluations");
  EXPECT_EQ(capped.evaluated.size(), 50u);
}

// With no cap on generations the search runs until its budget, or until max_restarts restarts
// in a row found nothing faster: the stated convergence criterion.
TEST(GeneticSearchTest, ConvergesOnlyAfterFruitlessRestartsInARow) {
  auto space = MakeSearchSpace(CublasLtLikeSpace());
  ASSERT_TRUE(space.ok());
  GeneticOptions options;
  options.generations = 0;
  options.max_restarts = 3;
  const GeneticResult flat = RunGeneticSearch(
      *space, {}, [&](size_t) -> std::optional<double> { return 1.0; }, options);
  EXPECT_EQ(flat.stopped_by, "converged");
  EXPECT_EQ(flat.restarts, 3);
  // Each stagnation period is stagnation_generations generations; four of them end the search.
  EXPECT_EQ(flat.generations, 4 * options.stagnation_generations);
  int calls = 0;
  const GeneticResult budgeted = RunGeneticSearch(
      *space, {},
      [&](size_t i) -> std::optional<double> {
        ++calls;
        return SyntheticMs(space->configs[i]);
      },
      options, [&] { return calls >= 200; });
  EXPECT_TRUE(budgeted.stopped_by == "budget" || budgeted.stopped_by == "converged")
      << budgeted.stopped_by;
}

TEST(TuneBudgetTest, SplitsByShareWithAnEvenFloor) {
  const std::vector<double> weights = {90, 10, 0};
  const std::vector<double> budgets = SplitSearchBudget(weights, 100);
  ASSERT_EQ(budgets.size(), 3u);
  EXPECT_NEAR(budgets[0], 10 + 63, 1e-9);
  EXPECT_NEAR(budgets[1], 10 + 7, 1e-9);
  EXPECT_NEAR(budgets[2], 10, 1e-9);  // a GEMM of no estimated weight still gets its floor
  const std::vector<double> nothing = {0, 0};
  EXPECT_NEAR(SplitSearchBudget(nothing, 10)[0], 5, 1e-9);
  EXPECT_TRUE(SplitSearchBudget({}, 10).empty());
}

TEST(GeneticSearchTest, ASmallSpaceIsSearchedWhole) {
  std::vector<KernelConfig> small;
  for (int tile = 1; tile <= 6; ++tile) {
    CublasLtConfig c;
    c.algo_id = 66;
    c.tile_id = tile;
    small.emplace_back(c);
  }
  auto space = MakeSearchSpace(small);
  ASSERT_TRUE(space.ok());
  const GeneticResult result = RunGeneticSearch(
      *space, {}, [&](size_t i) -> std::optional<double> { return 1.0 + static_cast<double>(i); },
      GeneticOptions{});
  EXPECT_EQ(result.stopped_by, "space exhausted");
  EXPECT_EQ(result.evaluated.size(), 6u);
  EXPECT_EQ(result.best, std::optional<size_t>(0));
}

}  // namespace
}  // namespace kselect
