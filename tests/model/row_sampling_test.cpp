// Per-problem row sampling of training data (SampleTrainingRows): what it always keeps, how many
// of the rest it draws, and that the draw depends only on the seed and the row's keys.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kselect/train.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

// One problem of `rows` candidates: config i runs at 100 * (1 - i / rows) TFLOPS (config 0 the
// best), every `aborted_every`-th row below the best is an aborted (estimated) row, and configs
// listed in `peer_ranked` carry the heuristic's rank.
ProblemCandidates Problem(const std::string& key, int rows, int aborted_every,
                          const std::set<int>& peer_ranked = {}) {
  ProblemCandidates p;
  p.problem_key = key;
  p.shape_key = key;
  for (int i = 0; i < rows; ++i) {
    Candidate c;
    c.config_key = "config " + std::to_string(i);
    c.tflops = 100.0 * (1.0 - static_cast<double>(i) / rows);
    c.estimated = i > 0 && aborted_every > 0 && i % aborted_every == 0;
    if (peer_ranked.count(i)) c.peer_rank = static_cast<int32_t>(peer_ranked.size());
    p.candidates.push_back(c);
  }
  return p;
}

std::set<std::string> KeptKeys(const ProblemCandidates& p) {
  std::set<std::string> keys;
  for (const Candidate& c : p.candidates) keys.insert(c.config_key);
  return keys;
}

TEST(RowSampling, KeepsEveryRowNearTheBestAndDrawsTheHeuristicsPicksLikeTheRest) {
  CandidateSet data;
  data.problems.push_back(Problem("p", 1000, 3, {0, 500, 999}));
  data.fingerprint = "0123456789abcdef";
  RowSampling sampling;
  sampling.keep_within = 0.9;
  sampling.weak_fraction = 0;
  sampling.aborted_fraction = 0;
  RowSamplingCounts counts;
  const auto sampled = SampleTrainingRows(data, sampling, 42, &counts);
  ASSERT_TRUE(sampled.ok()) << sampled.status().ToString();
  // Rows 0-100 run at or above 90 TFLOPS; the picks 500 and 999 below the line are drawn (and,
  // at fraction 0, dropped): keeping every pick made the ranker trust them less.
  std::set<std::string> expected;
  for (int i = 0; i <= 100; ++i) expected.insert("config " + std::to_string(i));
  ASSERT_EQ(sampled->problems.size(), 1u);
  EXPECT_EQ(KeptKeys(sampled->problems[0]), expected);
  EXPECT_EQ(counts.rows_before, 1000);
  EXPECT_EQ(counts.rows_after, 101);
  EXPECT_EQ(counts.near_best, 101);
  EXPECT_EQ(counts.weak_kept + counts.aborted_kept, 0);
  EXPECT_EQ(counts.weak_before + counts.aborted_before, 1000 - 101);
  EXPECT_EQ(sampled->fingerprint, data.fingerprint);
  // Order within the problem is kept (the best stays first here).
  EXPECT_EQ(sampled->problems[0].candidates.front().config_key, "config 0");
}

TEST(RowSampling, DrawsAboutTheFractionOfWeakAndOfAbortedRows) {
  CandidateSet data;
  for (int q = 0; q < 20; ++q) data.problems.push_back(Problem("p" + std::to_string(q), 2000, 2));
  RowSampling sampling;
  sampling.keep_within = 0.95;
  sampling.weak_fraction = 0.3;
  sampling.aborted_fraction = 0.05;
  RowSamplingCounts counts;
  ASSERT_TRUE(SampleTrainingRows(data, sampling, 7, &counts).ok());
  ASSERT_GT(counts.weak_before, 15000);
  ASSERT_GT(counts.aborted_before, 15000);
  const double weak = static_cast<double>(counts.weak_kept) / counts.weak_before;
  const double aborted = static_cast<double>(counts.aborted_kept) / counts.aborted_before;
  EXPECT_NEAR(weak, 0.3, 0.02);
  EXPECT_NEAR(aborted, 0.05, 0.01);
  EXPECT_EQ(counts.rows_after, counts.near_best + counts.weak_kept + counts.aborted_kept);
}

TEST(RowSampling, TheDrawDependsOnlyOnTheSeedAndTheRowsKeys) {
  CandidateSet data;
  data.problems.push_back(Problem("a", 500, 4));
  data.problems.push_back(Problem("b", 500, 4));
  RowSampling sampling;
  sampling.weak_fraction = 0.2;
  sampling.aborted_fraction = 0.2;
  const auto first = SampleTrainingRows(data, sampling, 42, nullptr);
  const auto again = SampleTrainingRows(data, sampling, 42, nullptr);
  const auto other_seed = SampleTrainingRows(data, sampling, 43, nullptr);
  ASSERT_TRUE(first.ok() && again.ok() && other_seed.ok());
  EXPECT_EQ(KeptKeys(first->problems[0]), KeptKeys(again->problems[0]));
  EXPECT_NE(KeptKeys(first->problems[0]), KeptKeys(other_seed->problems[0]));
  // Each problem draws its own rows: the same config keys, another sample.
  EXPECT_NE(KeptKeys(first->problems[0]), KeptKeys(first->problems[1]));
  // Problem "b" alone, or after other problems, keeps the same rows.
  CandidateSet only_b;
  only_b.problems.push_back(data.problems[1]);
  std::reverse(only_b.problems[0].candidates.begin(), only_b.problems[0].candidates.end());
  const auto alone = SampleTrainingRows(only_b, sampling, 42, nullptr);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(KeptKeys(alone->problems[0]), KeptKeys(first->problems[1]));
}

TEST(RowSampling, FractionsOfOneKeepEveryRowAndAreInactive) {
  RowSampling sampling;
  EXPECT_FALSE(sampling.Active());
  CandidateSet data;
  data.problems.push_back(Problem("p", 300, 2));
  RowSamplingCounts counts;
  const auto sampled = SampleTrainingRows(data, sampling, 1, &counts);
  ASSERT_TRUE(sampled.ok());
  EXPECT_EQ(counts.rows_after, 300);
  EXPECT_EQ(sampled->problems[0].candidates.size(), 300u);
  sampling.aborted_fraction = 0.5;
  EXPECT_TRUE(sampling.Active());
}

TEST(RowSampling, RefusesAFractionOutsideZeroToOne) {
  CandidateSet data;
  data.problems.push_back(Problem("p", 10, 0));
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    RowSampling sampling;
    sampling.weak_fraction = bad;
    const auto refused = SampleTrainingRows(data, sampling, 1, nullptr);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(refused.status().message(), "weak fraction"))
        << refused.status().message();
  }
  RowSampling sampling;
  sampling.keep_within = 2;
  EXPECT_FALSE(SampleTrainingRows(data, sampling, 1, nullptr).ok());
}

}  // namespace
}  // namespace kselect
