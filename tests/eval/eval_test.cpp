// Selection metrics: efficiency, graded NDCG, quantiles, peers, and the comparison rules.
#include <cmath>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "kselect/eval.h"
#include "kselect/eval_report.h"
#include "kselect/train.h"
#include "model/synthetic_gemm_data.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

ProblemCandidates Problem(const std::vector<double>& tflops,
                          const std::vector<std::optional<int32_t>>& peer = {},
                          const std::vector<std::optional<int32_t>>& peer_b = {}) {
  ProblemCandidates p;
  p.problem_key = "p";
  p.problem = GemmProblem{.m = 256, .n = 256, .k = 256};
  for (size_t i = 0; i < tflops.size(); ++i) {
    Candidate c;
    TileConfig t;
    t.tile_m = 16 * static_cast<int32_t>(i + 1);
    c.config = t;
    c.config_key = "c" + std::to_string(i);
    c.tflops = tflops[i];
    if (i < peer.size()) c.peer_rank = peer[i];
    if (i < peer_b.size()) c.peer_rank_b = peer_b[i];
    p.candidates.push_back(c);
  }
  return p;
}

TEST(Ndcg, IsOneForThePerfectOrderAndGradedOtherwise) {
  const std::vector<double> tflops = {100, 50, 80, 10};
  EXPECT_DOUBLE_EQ(NdcgAtK(tflops, tflops, 4), 1.0);
  // Predicted order 50, 80, 100, 10: relevances 0.5, 0.8, 1.0, 0.1.
  const std::vector<double> scores = {2, 4, 3, 1};
  const double dcg = 0.5 + 0.8 / std::log2(3) + 1.0 / std::log2(4) + 0.1 / std::log2(5);
  const double ideal = 1.0 + 0.8 / std::log2(3) + 0.5 / std::log2(4) + 0.1 / std::log2(5);
  EXPECT_NEAR(NdcgAtK(tflops, scores, 4), dcg / ideal, 1e-12);
  // Not top-1 accuracy: a near-oracle pick scores close to 1.
  EXPECT_NEAR(NdcgAtK(std::vector<double>{100, 99}, std::vector<double>{0, 1}, 1), 0.99, 1e-12);
}

TEST(EvaluateProblem, EfficiencyRankAndPeers) {
  const ProblemCandidates p = Problem({100, 50, 80, 10}, {3, 1, std::nullopt, 2});
  const std::vector<double> scores = {1, 0, 5, 2};  // picks the 80 config; the oracle is second
  const ProblemOutcome o = EvaluateProblem(p, scores);
  EXPECT_DOUBLE_EQ(o.efficiency, 0.8);
  EXPECT_EQ(o.selected_config, "c2");
  EXPECT_EQ(o.oracle_config, "c0");
  EXPECT_EQ(o.oracle_predicted_rank, 3);  // order c2, c3, c0, c1
  ASSERT_TRUE(o.peer_top1_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*o.peer_top1_efficiency, 0.5);
  ASSERT_TRUE(o.peer_best_of_8_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*o.peer_best_of_8_efficiency, 1.0);  // the peer's top 8 holds the oracle
}

// Timing the model's best-ranked k at first use gets the best measured of them, and the summary
// carries each k with its geomean over the peer's rank-1 pick.
TEST(EvaluateProblem, TimedAtFirstUseIsTheBestOfTheModelsTopK) {
  // The oracle is the model's fifth; the peer picks the 20 config.
  const ProblemCandidates p = Problem({20, 100, 50, 60, 80, 90}, {1});
  const std::vector<double> scores = {6, 2, 5, 4, 3, 1};  // order 20, 50, 60, 80, 100, 90
  const ProblemOutcome o = EvaluateProblem(p, scores);
  EXPECT_DOUBLE_EQ(o.efficiency, 0.2);
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[0], 0.5);  // top 2
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[1], 0.6);  // top 3
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[2], 1.0);  // top 5
  EXPECT_EQ(o.oracle_predicted_rank, 5);

  const EvalSummary s = Summarize({o});
  EXPECT_EQ(s.timed[2].k, 5);
  EXPECT_DOUBLE_EQ(s.timed[2].efficiency.mean, 1.0);
  EXPECT_NEAR(s.timed[1].speedup_over_peer_top1, 3.0, 1e-12);  // top 3: 0.6 / 0.2
  const nlohmann::json j = nlohmann::json::parse(EvalSummaryToJson(s, "m", "d"));
  EXPECT_DOUBLE_EQ(j["timed_at_first_use"]["model_top5"]["mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(
      j["timed_at_first_use"]["model_top2"]["geomean_speedup_over_peer_top1"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j["problems"][0]["model_top5_timed_efficiency"].get<double>(), 1.0);
  EXPECT_TRUE(Contains(EvalSummaryToMarkdown(s, "m", "d"),
                       "| kselect model, its top 5 timed at first use | 1 | 100.00%"));
}

// Timing deeper (top 10, top 20) reaches an oracle the model ranks past its fifth, and the
// summary, JSON and report carry every depth.
TEST(EvaluateProblem, TimingDeeperReachesAnOracleRankedTwelfth) {
  // 12 configs, measured 10..120; the model ranks them slowest first: 10, 20, ..., 120.
  std::vector<double> tflops, scores;
  for (int i = 1; i <= 12; ++i) {
    tflops.push_back(10.0 * i);
    scores.push_back(static_cast<double>(12 - i));
  }
  const ProblemOutcome o = EvaluateProblem(Problem(tflops, {}), scores);
  EXPECT_EQ(o.oracle_predicted_rank, 12);
  ASSERT_EQ(kTimedTopK.size(), 5u);
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[2], 50.0 / 120);   // top 5: 10 to 50
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[3], 100.0 / 120);  // top 10: 10 to 100
  EXPECT_DOUBLE_EQ(o.model_timed_efficiency[4], 1.0);          // top 20: all 12
  const EvalSummary s = Summarize({o});
  EXPECT_EQ(s.timed[3].k, 10);
  EXPECT_EQ(s.timed[4].k, 20);
  const nlohmann::json j = nlohmann::json::parse(EvalSummaryToJson(s, "m", "d"));
  EXPECT_DOUBLE_EQ(j["timed_at_first_use"]["model_top20"]["min"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["problems"][0]["model_top10_timed_efficiency"].get<double>(), 100.0 / 120);
  EXPECT_TRUE(Contains(EvalSummaryToMarkdown(s, "m", "d"),
                       "| kselect model, its top 20 timed at first use | 1 | 100.00%"));
}

TEST(ComputeStats, MatchesNumpyLinearQuantiles) {
  // numpy: quantile([0.5, 0.6, 0.9, 1.0, 1.0], 0.1) = 0.54, median 0.9.
  const EfficiencyStats s = ComputeStats({1.0, 0.5, 0.9, 1.0, 0.6});
  EXPECT_EQ(s.count, 5);
  EXPECT_NEAR(s.mean, 0.8, 1e-12);
  EXPECT_NEAR(s.median, 0.9, 1e-12);
  EXPECT_NEAR(s.p10, 0.54, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 0.5);
  EXPECT_EQ(ComputeStats({}).count, 0);
}

EvalSummary SummaryOf(const std::vector<double>& efficiencies) {
  std::vector<ProblemOutcome> outcomes;
  for (size_t i = 0; i < efficiencies.size(); ++i) {
    ProblemOutcome o;
    o.problem_key = "p" + std::to_string(i);
    o.m = 16;  // GEMMs of the tiny-M, shallow-K slices
    o.k = 256;
    o.efficiency = efficiencies[i];
    o.selected_config = "c";
    o.oracle_predicted_rank = efficiencies[i] == 1.0 ? 1 : 2;
    outcomes.push_back(o);
  }
  return Summarize(outcomes);
}

TEST(CompareSummaries, AppliesTheAcceptanceRules) {
  const std::vector<double> base(20, 0.98);
  auto same = CompareSummaries(SummaryOf(base), SummaryOf(base));
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->passed);
  EXPECT_EQ(same->same, 20);

  std::vector<double> one_drop = base;
  one_drop[7] = 0.86;  // -12 points on one problem; mean falls only 0.6 points
  auto drop = CompareSummaries(SummaryOf(base), SummaryOf(one_drop));
  ASSERT_TRUE(drop.ok());
  EXPECT_FALSE(drop->passed);
  EXPECT_EQ(drop->worst_problem, "p7");
  EXPECT_TRUE(Contains(ComparisonToText(*drop), "p7 lost 12.00%"));

  std::vector<double> small = base;
  for (double& e : small) e -= 0.004;  // within 0.5 points everywhere
  EXPECT_TRUE(CompareSummaries(SummaryOf(base), SummaryOf(small))->passed);
  for (double& e : small) e -= 0.004;  // now 0.8 points: mean and median fail
  auto worse = CompareSummaries(SummaryOf(base), SummaryOf(small));
  EXPECT_FALSE(worse->passed);
  EXPECT_EQ(worse->failures.size(), 2u);

  EXPECT_FALSE(CompareSummaries(SummaryOf(base), SummaryOf({0.9})).ok());
}

TEST(BuildCandidateSet, GroupsByProblemAndPicksTheOnlyProvider) {
  const Dataset data = testing_util::SyntheticDataset(6, 4);
  const auto set = BuildCandidateSet(data, std::nullopt);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->provider, Provider::kTile);
  EXPECT_EQ(set->problems.size(), 6u + 2u);  // shapes 0 and 3 also in rrr
  EXPECT_EQ(set->rows_used, static_cast<int64_t>(data.rows.size()));
  EXPECT_EQ(set->hardware.sm_count, 132);
  // Layout is part of the problem but not of the shape (GroupKFold) key.
  EXPECT_EQ(set->problems[0].shape_key.find("layout"), std::string::npos);
  const auto none = BuildCandidateSet(data, Provider::kCublasLt);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "no valid cublaslt"));
}

// Rows of convolution `problems` x cuDNN engines 0..2, measured on the synthetic H200.
Dataset ConvRows(const std::vector<ConvProblem>& problems) {
  RunInfo run;
  run.run_id = "conv";
  run.hardware = testing_util::SyntheticH200();
  Dataset data;
  for (const ConvProblem& p : problems) {
    for (int64_t engine = 0; engine < 3; ++engine) {
      Measurement m;
      m.op_type = "grouped_conv";
      m.problem = p;
      m.config = CudnnConfig{.engine_id = engine, .knobs = {{1, engine}}};
      m.latency_ms = 0.1 * static_cast<double>(engine + 1);
      m.tflops = p.Flops() / (m.latency_ms * 1e-3) / 1e12;
      m.bandwidth_gb_s = 1;
      m.is_valid = true;
      data.rows.push_back(RowFromMeasurement(m, run));
    }
  }
  return data;
}

ConvProblem Conv(ConvDirection direction, DataType dtype = DataType::kBF16) {
  ConvProblem p;
  p.n = 4;
  p.c = p.k = 64;
  p.hi = p.wi = 28;
  p.y = p.x = 3;
  p.pad_h = p.pad_w = 1;
  p.direction = direction;
  p.dtype = dtype;
  return p;
}

TEST(BuildCandidateSet, GroupsConvolutionRowsByTheirProblemKey) {
  // The same layer in two dtypes: two problems, one shape (GroupKFold keeps them together).
  const Dataset data =
      ConvRows({Conv(ConvDirection::kForward), Conv(ConvDirection::kForward, DataType::kF16)});
  const auto set = BuildCandidateSet(data, std::nullopt);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->provider, Provider::kCudnn);
  ASSERT_EQ(set->problems.size(), 2u);
  EXPECT_EQ(set->rows_used, 6);
  for (const ProblemCandidates& p : set->problems) {
    EXPECT_EQ(p.problem_key, ProblemToString(p.problem));
    EXPECT_TRUE(std::holds_alternative<ConvProblem>(p.problem));
    EXPECT_EQ(p.candidates.size(), 3u);
  }
  EXPECT_NE(set->problems[0].problem_key, set->problems[1].problem_key);
  EXPECT_EQ(set->problems[0].shape_key, set->problems[1].shape_key);
  EXPECT_EQ(set->problems[0].shape_key, "4,64,64,1,1,28,28,1,3,3,1,1,1,0,1,1,1,1,1");

  const auto none = BuildCandidateSet(data, Provider::kCkConv);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "no valid ck_conv convolution rows"));

  // GEMM and convolution rows together: refused unless a provider is picked.
  Dataset mixed = data;
  const Dataset gemm = testing_util::SyntheticDataset(2, 4);
  mixed.rows.insert(mixed.rows.end(), gemm.rows.begin(), gemm.rows.end());
  const auto refused = BuildCandidateSet(mixed, std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(
      Contains(refused.status().message(), "mixes GEMM rows (tile) and convolution rows (cudnn)"));
  EXPECT_EQ(BuildCandidateSet(mixed, Provider::kCudnn)->problems.size(), 2u);
}

TEST(TrainingFeatureSpec, PicksTheConvSpecOfTheDataAndRefusesMixes) {
  const CandidateSet fwd =
      BuildCandidateSet(ConvRows({Conv(ConvDirection::kForward)}), std::nullopt).value();
  const auto spec = TrainingFeatureSpec(fwd, false);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->extractor, "conv");
  EXPECT_EQ(spec->conv_direction, ConvDirection::kForward);
  EXPECT_EQ(SpecKnobTypes(*spec), std::vector<int32_t>{1});
  const std::vector<int32_t> kept = {4, 9};
  EXPECT_EQ(SpecKnobTypes(TrainingFeatureSpec(fwd, false, &kept).value()), kept);

  // --peer-rank: the conv peer block, last.
  const auto peer = TrainingFeatureSpec(fwd, true);
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  EXPECT_TRUE(SpecUsesPeerRanks(*peer));
  EXPECT_EQ(peer->features.back().name, "peer_list_size");
  EXPECT_EQ(peer->features.size(), spec->features.size() + std::size(kConvPeerFeatures));

  const CandidateSet both =
      BuildCandidateSet(
          ConvRows({Conv(ConvDirection::kForward), Conv(ConvDirection::kBackwardWeight)}),
          std::nullopt)
          .value();
  const auto mixed = TrainingFeatureSpec(both, false);
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Contains(mixed.status().message(), "mixes convolution directions (1 bwd_weight, 1 fwd)"));
  EXPECT_TRUE(Contains(mixed.status().message(), "one model per direction"));

  CandidateSet kinds = fwd;
  kinds.problems.push_back(kinds.problems.front());
  kinds.problems.back().problem = GemmProblem{.m = 8, .n = 8, .k = 8};
  EXPECT_TRUE(Contains(TrainingFeatureSpec(kinds, false).status().message(),
                       "mixes GEMM and convolution problems"));

  const CandidateSet gemm =
      BuildCandidateSet(testing_util::SyntheticDataset(2, 4), std::nullopt).value();
  EXPECT_EQ(TrainingFeatureSpec(gemm, false).value(),
            GemmFeatureSpec(Provider::kTile, gemm.hardware));
}

TEST(BuildCandidateSet, SkipsInvalidRowsAndFingerprintsTheData) {
  Dataset data = testing_util::SyntheticDataset(4, 4);
  const auto before = BuildCandidateSet(data, std::nullopt).value();
  data.rows[0].is_valid = false;
  const auto after = BuildCandidateSet(data, std::nullopt).value();
  EXPECT_EQ(after.rows_skipped, 1);
  EXPECT_NE(before.fingerprint, after.fingerprint);
  EXPECT_EQ(before.fingerprint,
            BuildCandidateSet(testing_util::SyntheticDataset(4, 4), std::nullopt)->fingerprint);
}

TEST(BuildCandidateSet, AbortedRowsAreEstimatedCandidatesNeverTheOracle) {
  Dataset data = testing_util::SyntheticDataset(4, 4);
  const size_t candidates = BuildCandidateSet(data, std::nullopt)->NumCandidates();
  // Row 0 aborted by the bench: slower than the best so far, with the latency it showed.
  DatasetRow& aborted = data.rows[0];
  aborted.is_valid = false;
  aborted.aborted = true;
  aborted.latency_ms = *aborted.latency_ms * 50;
  aborted.measured_tflops = 0.0;
  // Row 1 invalid for another reason (a crash): never a candidate.
  data.rows[1].is_valid = false;
  const auto set = BuildCandidateSet(data, std::nullopt);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->rows_estimated, 1);
  EXPECT_EQ(set->rows_skipped, 1);
  EXPECT_EQ(set->NumCandidates(), candidates - 1);
  int estimated = 0;
  for (const ProblemCandidates& p : set->problems) {
    for (const Candidate& c : p.candidates) {
      if (!c.estimated) continue;
      ++estimated;
      EXPECT_GT(c.tflops, 0);  // derived from the latency it showed
      double best = 0;
      for (const Candidate& other : p.candidates) best = std::max(best, other.tflops);
      EXPECT_LT(c.tflops, best);
    }
  }
  EXPECT_EQ(estimated, 1);
}

TEST(Summarize, SlicesByMFamilyAndKRegime) {
  std::vector<ProblemOutcome> outcomes(3);
  outcomes[0].m = 1;
  outcomes[0].k = 8192;
  outcomes[0].efficiency = 0.5;
  outcomes[1].m = 16;
  outcomes[1].k = 256;
  outcomes[1].efficiency = 0.7;
  outcomes[2].m = 5000;
  outcomes[2].k = 4096;
  outcomes[2].efficiency = 1.0;
  const EvalSummary s = Summarize(outcomes);
  EXPECT_EQ(s.slices.at("m: tiny (<32)").count, 2);
  EXPECT_NEAR(s.slices.at("m: tiny (<32)").mean, 0.6, 1e-12);
  EXPECT_EQ(s.slices.at("m: large (>=4096)").count, 1);
  EXPECT_EQ(s.slices.at("k: deep (>=4096)").count, 2);
  EXPECT_EQ(s.slices.at("k: shallow (<512)").min, 0.7);
  EXPECT_EQ(s.slices.count("m: small (32-255)"), 0u);
  // A convolution's outcome (no m or k) falls in no GEMM slice.
  EXPECT_TRUE(SlicesOf(0, 0).empty());
}

TEST(EvalReports, JsonAndMarkdownCarryTheFigures) {
  const EvalSummary s = SummaryOf({1.0, 0.9, 0.8});
  const std::string json = EvalSummaryToJson(s, "models/x", "data/y.parquet");
  EXPECT_TRUE(Contains(json, "\"efficiency\""));
  EXPECT_TRUE(Contains(json, "\"ndcg_at_10\""));
  const std::string md = EvalSummaryToMarkdown(s, "models/x", "data/y.parquet");
  EXPECT_TRUE(Contains(md, "| kselect model | 3 | 90.00%"));
  EXPECT_TRUE(Contains(md, "top-1 accuracy | 33.33%"));
  EXPECT_TRUE(Contains(md, "| m: tiny (<32) | 3 |"));
  EXPECT_TRUE(Contains(json, "\"slices\""));
}

// Two heuristics on three problems (cuDNN: modes A and B): the model beats A's picks and loses
// to B's; every report shows B as a peer of its own, named by the provider.
TEST(EvalReports, SecondHeuristicIsItsOwnPeerNamedByProvider) {
  CandidateSet data;
  data.provider = Provider::kCudnn;
  //                 tflops            A's ranks                     B's ranks
  data.problems.push_back(Problem({100, 60, 90}, {2, 1, std::nullopt}, {1, std::nullopt, 2}));
  data.problems.push_back(Problem({50, 100, 80}, {1, 2, 3}, {std::nullopt, 1, std::nullopt}));
  data.problems.push_back(Problem({70, 100}, {1, std::nullopt}, {std::nullopt, 1}));
  for (size_t i = 0; i < data.problems.size(); ++i) {
    data.problems[i].problem_key = "p" + std::to_string(i);
  }
  // The model picks 90, 80 and 100 TFLOPS: efficiencies 0.9, 0.8, 1.0.
  const std::vector<std::vector<double>> scores = {{0, 1, 2}, {0, 1, 2}, {0, 1}};
  const EvalSummary s = EvaluateScores(data, scores);
  EXPECT_EQ(s.peer_names.a.name, "cudnn heuristic mode A");
  EXPECT_EQ(s.peer_names.b.name, "cudnn heuristic mode B");
  // A: 0.6, 0.5, 0.7; B: 1.0, 1.0, 1.0 (its rank 1 is the oracle everywhere).
  EXPECT_NEAR(s.peer_top1.mean, 0.6, 1e-12);
  ASSERT_TRUE(s.HasPeerB());
  EXPECT_NEAR(s.peer_b.top1.mean, 1.0, 1e-12);
  EXPECT_EQ(s.peer_b.top1.count, 3);
  EXPECT_NEAR(s.peer_b.best_of_8.mean, 1.0, 1e-12);
  EXPECT_GT(s.speedup_over_peer_top1, 1.0);
  EXPECT_EQ(s.faster_than_peer_top1, 3);
  EXPECT_NEAR(s.peer_b.speedup_over_top1, std::cbrt(0.9 * 0.8 * 1.0), 1e-12);
  EXPECT_EQ(s.peer_b.faster_than_top1, 0);
  EXPECT_EQ(s.peer_b.slower_than_top1, 2);
  EXPECT_EQ(s.peer_b.speedup_problems, 3);
  ASSERT_TRUE(s.problems[1].peer_b_top1_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*s.problems[1].peer_b_top1_efficiency, 1.0);
  EXPECT_FALSE(s.problems[1].peer_b_best_of_8_efficiency.value_or(0) < 1.0);

  const auto json = nlohmann::json::parse(EvalSummaryToJson(s, "m", "d"));
  const auto& peers = json.at("peers");
  // The first heuristic's keys are today's; the second's are added beside them.
  EXPECT_NEAR(peers.at("peer_top1").at("mean").get<double>(), 0.6, 1e-12);
  EXPECT_TRUE(peers.contains("geomean_speedup_over_peer_top1"));
  EXPECT_EQ(peers.at("peer_name"), "cudnn heuristic mode A");
  EXPECT_EQ(peers.at("peer_b_name"), "cudnn heuristic mode B");
  EXPECT_NEAR(peers.at("peer_b_top1").at("mean").get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(peers.at("peer_b_best_of_8").at("mean").get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(peers.at("geomean_speedup_over_peer_b_top1").get<double>(),
              std::cbrt(0.9 * 0.8 * 1.0), 1e-12);
  EXPECT_EQ(peers.at("slower_than_peer_b_top1"), 2);
  EXPECT_DOUBLE_EQ(json.at("problems")[0].at("peer_b_top1_efficiency").get<double>(), 1.0);

  const std::string md = EvalSummaryToMarkdown(s, "m", "d");
  EXPECT_TRUE(Contains(md, "| cudnn heuristic mode A (rank 1) | 3 | 60.00%"));
  EXPECT_TRUE(Contains(md, "| cudnn heuristic mode B (rank 1) | 3 | 100.00%"));
  EXPECT_TRUE(Contains(md, "| cudnn mode B best of top 8 | 3 | 100.00%"));
  EXPECT_TRUE(Contains(md, "over cudnn heuristic mode B's rank-1 pick: 0.8963x"));

  const std::string html = EvalSummaryToHtml(s, PredictionScatter{}, HtmlReportOptions{});
  EXPECT_TRUE(Contains(html, "data-selector=\"peer_b_top1\"><th>cudnn heuristic mode B (rank 1)"));
  EXPECT_TRUE(Contains(html, "data-selector=\"peer_b_best_of_8\""));
  EXPECT_TRUE(Contains(html, "id=\"peer-b-speedup\""));
  EXPECT_TRUE(Contains(html, "<th>cudnn heuristic mode A (rank 1)</th>"));
}

// cuBLASLt keeps today's names and, without peer_rank_b, today's keys only.
TEST(EvalReports, OneHeuristicKeepsTodaysNamesAndKeys) {
  CandidateSet data;
  data.provider = Provider::kCublasLt;
  data.problems.push_back(Problem({100, 60}, {2, 1}));
  const EvalSummary s = EvaluateScores(data, std::vector<std::vector<double>>{{1, 0}});
  EXPECT_FALSE(s.HasPeerB());
  const auto json = nlohmann::json::parse(EvalSummaryToJson(s, "m", "d"));
  EXPECT_FALSE(json.at("peers").contains("peer_b_top1"));
  EXPECT_FALSE(json.at("problems")[0].contains("peer_b_top1_efficiency"));
  const std::string md = EvalSummaryToMarkdown(s, "m", "d");
  EXPECT_TRUE(Contains(md, "| peer heuristic (rank 1) | 1 |"));
  EXPECT_TRUE(Contains(md, "| peer best of top 8 | 1 |"));
  EXPECT_TRUE(Contains(md, "over the peer's rank-1 pick"));
  EXPECT_FALSE(Contains(md, "mode B"));
}

}  // namespace
}  // namespace kselect
