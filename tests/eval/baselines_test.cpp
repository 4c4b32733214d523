// The baselines report on hand-built datasets whose answers are worked out in the comments:
// heuristic efficiencies and P10, duplicates across files, aborted rows, the rule set's loss and
// the rule that rejected the winner, data without peer ranks, and refused inputs.
#include <cmath>

#include <gtest/gtest.h>

#include "kselect/baselines.h"
#include "model/synthetic_gemm_data.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

GemmProblem Gemm(int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.layout.c = MatrixOrder::kColMajor;  // rcc: cuBLAS TN, as the cuBLASLt datasets
  return p;
}

// Configs differ by algo_id (the pair key); split_k and cluster_shape_id are what the rules see.
CublasLtConfig Config(int32_t algo_id, int32_t split_k = 1, int32_t cluster_shape_id = 0) {
  CublasLtConfig c;
  c.algo_id = algo_id;
  c.split_k = split_k;
  c.cluster_shape_id = cluster_shape_id;
  return c;
}

// kAbortedFlaggedValid: a row claiming both (a hand-edited or foreign file); aborted must win.
enum class Kind { kValid, kAborted, kInvalid, kAbortedFlaggedValid };

struct RowSpec {
  RowSpec(GemmProblem problem, CublasLtConfig config, double tflops,
          std::optional<int32_t> peer_rank = std::nullopt, Kind kind = Kind::kValid,
          double cv = 0.01)
      : problem(problem),
        config(config),
        tflops(tflops),
        peer_rank(peer_rank),
        kind(kind),
        cv(cv) {}
  GemmProblem problem;
  CublasLtConfig config;
  double tflops;
  std::optional<int32_t> peer_rank;
  Kind kind;
  double cv;
};

DatasetRow Row(const RowSpec& spec, const std::string& device_kind = "nvidia-h200") {
  RunInfo run;
  run.run_id = "test-run";
  run.hardware = testing_util::SyntheticH200();
  run.hardware.device_kind = device_kind;
  Measurement m;
  m.op_type = "gemm";
  m.problem = spec.problem;
  m.config = spec.config;
  m.tflops = spec.tflops;
  m.latency_ms = spec.tflops > 0 ? spec.problem.Flops() / (spec.tflops * 1e12) * 1e3 : 1.0;
  m.cv = spec.cv;
  m.peer_rank = spec.peer_rank;
  m.is_valid = spec.kind == Kind::kValid || spec.kind == Kind::kAbortedFlaggedValid;
  m.aborted = spec.kind == Kind::kAborted || spec.kind == Kind::kAbortedFlaggedValid;
  if (m.aborted || !m.is_valid)
    m.invalid_reason = m.aborted ? "aborted: slower than 3x" : "launch failed";
  return RowFromMeasurement(m, run);
}

Dataset Data(const std::vector<RowSpec>& specs) {
  Dataset d;
  for (const RowSpec& s : specs) d.rows.push_back(Row(s));
  return d;
}

const GemmProblem kP1 = Gemm(128, 256, 512);
const GemmProblem kP2 = Gemm(1, 4096, 4096);
const GemmProblem kP3 = Gemm(4096, 4096, 4096);
const GemmProblem kP4 = Gemm(2, 4096, 4096);
const GemmProblem kSampleOnly = Gemm(64, 64, 64);

// File 1: P1: A 100 (rank 2), B 80 (rank 1), C 50, D aborted at a figure that would be the
// oracle (and H, aborted but flagged valid, likewise), G invalid. P2: A 60 (rank 1), B 40 (rank 3),
// E 120. P3: A 200 (rank 1), B 100, F invalid. P4: only an aborted rank-1 pick. File 2 (a second
// run): P1 C at 125 (faster: replaces 50 and becomes P1's oracle), P2 E at 90 (slower: 120 stays),
// P3 F valid at 150 (replaces the invalid row). Three duplicated rows.
BaselineInputs HeuristicInputs() {
  BaselineInputs in;
  in.data.push_back(Data({
      {kP1, Config(1), 100, 2},
      {kP1, Config(2), 80, 1},
      {kP1, Config(3), 50},
      {kP1, Config(4), 500, std::nullopt, Kind::kAborted},
      {kP1, Config(8), 900, std::nullopt, Kind::kAbortedFlaggedValid},
      {kP1, Config(7), 0, std::nullopt, Kind::kInvalid},
      {kP2, Config(1), 60, 1},
      {kP2, Config(2), 40, 3},
      {kP2, Config(5), 120},
      {kP3, Config(1), 200, 1, Kind::kValid, 0.05},
      {kP3, Config(2), 100, std::nullopt, Kind::kValid, 0.05},
      {kP3, Config(6), 0, std::nullopt, Kind::kInvalid},
      {kP4, Config(1), 0, 1, Kind::kAborted},
  }));
  in.data.push_back(Data({
      {kP1, Config(3), 125},
      {kP2, Config(5), 90},
      {kP3, Config(6), 150, std::nullopt, Kind::kValid, 0.05},
  }));
  return in;
}

TEST(BaselineReport, CountsRowsDuplicatesAndCv) {
  auto report = BuildBaselineReport(HeuristicInputs());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->groups.size(), 1u);
  const GroupBaselines& g = report->groups[0];
  EXPECT_EQ(g.provider, "cublaslt");
  EXPECT_EQ(g.dtype, "bf16");
  EXPECT_EQ(g.layout, "rcc");
  EXPECT_EQ(g.rows, 16);
  EXPECT_EQ(g.valid_rows, 11);
  EXPECT_EQ(g.aborted_rows, 3);
  EXPECT_EQ(g.invalid_rows, 2);
  EXPECT_EQ(g.shapes, 4);
  EXPECT_EQ(g.shapes_without_valid, 1);  // P4
  EXPECT_EQ(g.duplicate_rows, 3);
  // Valid configs per shape: 3, 3, 3 and P4's 0.
  EXPECT_EQ(g.valid_configs_per_shape.count, 4);
  EXPECT_DOUBLE_EQ(g.valid_configs_per_shape.mean, 2.25);
  EXPECT_DOUBLE_EQ(g.valid_configs_per_shape.median, 3);
  EXPECT_DOUBLE_EQ(g.valid_configs_per_shape.min, 0);
  EXPECT_DOUBLE_EQ(g.valid_configs_per_shape.max, 3);
  // CV of the 11 valid rows: eight at 1 %, three at 5 %; P90 sits at sorted position 9.
  EXPECT_EQ(g.cv.count, 11);
  EXPECT_DOUBLE_EQ(g.cv.median, 0.01);
  EXPECT_DOUBLE_EQ(g.cv.p90, 0.05);
}

TEST(BaselineReport, HeuristicAgainstTheOracle) {
  auto report = BuildBaselineReport(HeuristicInputs());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const GroupBaselines& g = report->groups[0];
  ASSERT_TRUE(g.has_heuristic);
  // Top-1: P1 80/125 = 0.64 (the aborted 500 is no oracle; the second run's 125 is), P2 60/120
  // = 0.5, P3 200/200 = 1. P4's pick was aborted: no efficiency, counted apart.
  ASSERT_EQ(g.top1.count, 3);
  EXPECT_NEAR(g.top1.mean, (0.64 + 0.5 + 1.0) / 3, 1e-12);
  EXPECT_NEAR(g.top1.p10, 0.5 + 0.2 * (0.64 - 0.5), 1e-12);  // sorted 0.5, 0.64, 1: pos 0.2
  EXPECT_DOUBLE_EQ(g.top1.min, 0.5);
  EXPECT_EQ(g.top1_is_oracle, 1);
  EXPECT_EQ(g.problems_top1_unmeasured, 1);
  EXPECT_NEAR(g.geomean_speedup_over_top1, std::cbrt(1.5625 * 2.0 * 1.0), 1e-12);
  // Best of top 8: P1 100/125, P2 60/120, P3 1.
  ASSERT_EQ(g.best_of_8.count, 3);
  EXPECT_NEAR(g.best_of_8.mean, (0.8 + 0.5 + 1.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(g.best_of_8.min, 0.5);
  // Ranked rows: P1 2, P2 2, P3 1, P4 1 (aborted).
  EXPECT_EQ(g.heuristic_rows, 6);
  EXPECT_EQ(g.heuristic_rows_unmeasured, 1);
  EXPECT_EQ(g.heuristic_rows_aborted, 1);
  // Per problem, sorted by shape: P4 has no valid row and no outcome.
  ASSERT_EQ(g.problems.size(), 3u);
  EXPECT_EQ(g.problems[0].m, 1);  // P2
  EXPECT_DOUBLE_EQ(g.problems[0].oracle_tflops, 120);
  EXPECT_EQ(g.problems[1].m, 128);  // P1
  EXPECT_DOUBLE_EQ(g.problems[1].oracle_tflops, 125);
  EXPECT_EQ(g.problems[1].oracle_config, ConfigKey(Config(3)));
  EXPECT_EQ(g.problems[1].valid_configs, 3);
  EXPECT_TRUE(g.problems[2].top1_is_oracle);
  EXPECT_FALSE(g.has_sample);

  const std::string md = BaselineReportToMarkdown(*report, {{"a.parquet", "b.parquet"}, {}, {}});
  EXPECT_TRUE(Contains(md, "| duplicated (problem, config) rows | 3 |"));
  EXPECT_TRUE(Contains(md, "| top-1 (peer_rank 1) | 3 | 71.33% |"));
  EXPECT_TRUE(Contains(md, "top-1 is the oracle on 1 of 3 problems"));
  EXPECT_TRUE(Contains(md, "Not computed: no --full-sample rows"));
}

// A second heuristic (peer_rank_b) gets its own rows: P1 ranks C (the oracle, 125) first, P2
// ranks E (120, the oracle) first and A second.
TEST(BaselineReport, SecondHeuristicIsReportedApart) {
  BaselineInputs in = HeuristicInputs();
  Dataset b = Data({{kP1, Config(3), 125}, {kP2, Config(5), 120}, {kP2, Config(1), 60}});
  b.rows[0].peer_rank_b = 1;
  b.rows[1].peer_rank_b = 1;
  b.rows[2].peer_rank_b = 2;
  in.data.push_back(b);
  auto report = BuildBaselineReport(in);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const GroupBaselines& g = report->groups[0];
  ASSERT_TRUE(g.has_heuristic_b);
  EXPECT_EQ(g.heuristic_b_rows, 3);
  ASSERT_EQ(g.top1_b.count, 2);
  EXPECT_DOUBLE_EQ(g.top1_b.mean, 1.0);
  EXPECT_DOUBLE_EQ(g.geomean_speedup_over_top1_b, 1.0);
  // The first heuristic's figures are unchanged.
  EXPECT_NEAR(g.top1.mean, (0.64 + 0.5 + 1.0) / 3, 1e-12);
  const std::string md = BaselineReportToMarkdown(*report, {{"a.parquet"}, {}, {}});
  EXPECT_TRUE(Contains(md, "| second peer heuristic: top-1 (peer_rank_b 1) | 2 | 100.00% |"));
  const std::string json = BaselineReportToJson(*report, {{"a.parquet"}, {}, {}});
  EXPECT_TRUE(Contains(json, "\"second peer heuristic\""));
}

// The rule set of the loss tests: split-K up to 2, no clusters.
RuleSet TestRules() {
  auto rules = ParseRuleSet(R"({"format": "kselect.rules", "format_version": 1,
    "name": "test_rules", "provider": "cublaslt", "comment": "for the report test", "rules": [
      {"name": "split_k_up_to_2", "comment": "c", "field": "split_k", "max": 2},
      {"name": "no_clusters", "comment": "c", "field": "cluster_shape_id", "keep": [0]}]})",
                            "test_rules");
  EXPECT_TRUE(rules.ok()) << rules.status().ToString();
  return *rules;
}

// Sample: P1 S1 split-K 4 at 150 (the winner, out of rules), S2 at 130 (in rules), A again at 95
// (slower than the data's 100: a duplicate). P2 S3 with a cluster at 121: the rules' best is E at
// 120, a loss under 1 %. P3 S4 at 190: the data's A at 200 stays best, no loss. A problem only
// in the sample is not compared.
BaselineInputs LossInputs() {
  BaselineInputs in = HeuristicInputs();
  in.full_sample.push_back(Data({
      {kP1, Config(11, 4), 150},
      {kP1, Config(12), 130},
      {kP1, Config(1), 95},
      {kP2, Config(13, 1, 2), 121},
      {kP3, Config(14, 8, 2), 190},
      {kSampleOnly, Config(1), 10},
  }));
  in.rule_sets.push_back(TestRules());
  return in;
}

TEST(BaselineReport, RuleSetLossAgainstTheFullSample) {
  auto report = BuildBaselineReport(LossInputs());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const GroupBaselines& g = report->groups[0];
  ASSERT_TRUE(g.has_sample);
  EXPECT_EQ(g.rule_set, "test_rules");
  EXPECT_EQ(g.sample_rows, 6);
  EXPECT_EQ(g.sample_problems, 4);
  EXPECT_EQ(g.sample_duplicate_rows, 1);
  ASSERT_EQ(g.losses.size(), 3u);  // P1, P2, P3: P4 is not in the sample, kSampleOnly not in data

  const RuleLoss& p1 = g.losses[0];  // worst first
  EXPECT_EQ(p1.m, 128);
  EXPECT_NEAR(p1.loss, 1.0 - 130.0 / 150.0, 1e-12);
  EXPECT_EQ(p1.best_config, ConfigKey(Config(11, 4)));
  EXPECT_EQ(p1.best_source, "full sample");
  EXPECT_EQ(p1.best_in_rules_config, ConfigKey(Config(12)));
  EXPECT_EQ(p1.rejecting_rule, "split_k_up_to_2");
  EXPECT_EQ(p1.valid_configs, 5);  // A, B, C from the data; S1, S2 from the sample
  EXPECT_EQ(p1.valid_configs_in_rules, 4);

  const RuleLoss& p2 = g.losses[1];
  EXPECT_EQ(p2.m, 1);
  EXPECT_NEAR(p2.loss, 1.0 - 120.0 / 121.0, 1e-12);
  EXPECT_EQ(p2.rejecting_rule, "");  // under 1 %: not worth naming

  const RuleLoss& p3 = g.losses[2];
  EXPECT_DOUBLE_EQ(p3.loss, 0);
  EXPECT_EQ(p3.best_source, "data");

  EXPECT_EQ(g.loss.count, 3);
  EXPECT_NEAR(g.loss.median, p2.loss, 1e-12);
  EXPECT_NEAR(g.loss.p90, p2.loss + 0.8 * (p1.loss - p2.loss), 1e-12);
  EXPECT_NEAR(g.loss.max, p1.loss, 1e-12);
  EXPECT_EQ(g.losses_worth_naming, 1);
  EXPECT_EQ(g.rejecting_rules.at("split_k_up_to_2"), 1);

  const std::string md = BaselineReportToMarkdown(*report, {{"d.parquet"}, {"s.parquet"}, {}});
  EXPECT_TRUE(Contains(md, "rejected by `split_k_up_to_2`: 1"));
  EXPECT_TRUE(Contains(md, "| 128 x 256 x 512 | 13.33% |"));
  const std::string json = BaselineReportToJson(*report, {{"d.parquet"}, {"s.parquet"}, {}});
  EXPECT_TRUE(Contains(json, "\"rejecting_rule\": \"split_k_up_to_2\""));
  EXPECT_TRUE(Contains(json, "\"format\": \"kselect.data_report\""));
}

TEST(BaselineReport, DataWithoutPeerRanksSaysSo) {
  BaselineInputs in;
  in.data.push_back(Data({{kP1, Config(1), 100}, {kP1, Config(2), 80}}));
  auto report = BuildBaselineReport(in);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  const GroupBaselines& g = report->groups[0];
  EXPECT_FALSE(g.has_heuristic);
  EXPECT_EQ(g.top1.count, 0);
  EXPECT_EQ(g.problems.size(), 1u);
  EXPECT_FALSE(g.problems[0].top1_efficiency.has_value());
  const std::string md = BaselineReportToMarkdown(*report, {});
  EXPECT_TRUE(Contains(md, "No heuristic picks recorded"));
  EXPECT_TRUE(Contains(BaselineReportToJson(*report, {}), "\"recorded\": false"));
}

TEST(BaselineReport, RefusesEmptyForeignAndMixedInputs) {
  BaselineInputs empty;
  empty.data.emplace_back();
  auto none = BuildBaselineReport(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().ToString(), "no rows"));

  BaselineInputs foreign;
  foreign.data.push_back(Dataset{{DatasetRow{}}, {}});
  auto unnamed = BuildBaselineReport(foreign);
  ASSERT_FALSE(unnamed.ok());
  EXPECT_TRUE(Contains(unnamed.status().ToString(), "is this a kselect dataset?"));

  BaselineInputs mixed = HeuristicInputs();
  mixed.full_sample.push_back(Dataset{{Row({kP1, Config(11), 150}, "nvidia-h100")}, {}});
  mixed.rule_sets.push_back(TestRules());
  auto devices = BuildBaselineReport(mixed);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(devices.status().ToString(), "nvidia-h100"));

  BaselineInputs no_rules = LossInputs();
  no_rules.rule_sets.clear();
  auto missing = BuildBaselineReport(no_rules);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().ToString(), "no rule set for cublaslt"));
}

TEST(Spread, AddsP90AndMaxToComputeStats) {
  const Spread s = ComputeSpread({1.0, 0.5, 0.9, 1.0, 0.6});
  EXPECT_EQ(s.count, 5);
  EXPECT_NEAR(s.p10, 0.54, 1e-12);  // numpy: quantile(..., 0.1)
  EXPECT_NEAR(s.p90, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.max, 1.0);
  const Spread t = ComputeSpread({0, 10});
  EXPECT_DOUBLE_EQ(t.p90, 9);
  EXPECT_EQ(ComputeSpread({}).count, 0);
}

}  // namespace
}  // namespace kselect
