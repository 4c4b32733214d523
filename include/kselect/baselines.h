// The baselines report of the GEMM-data issue (`kselect data report`), computed from datasets:
//   - what the data holds per (provider, dtype, layout) group: shapes, rows, valid configs, CV;
//   - how close the provider's own heuristic gets to the oracle (the best valid measured config of
//     each problem, catalogue configs and the heuristic's picks together): its top-1 pick
//     (peer_rank 1) and the best of its top 8;
//   - what a rule set costs: against a random sample of the full config space measured for some
//     of the same problems, the best config the rules keep vs the best config measured at all.
// Aborted and invalid rows are never measurements. A (problem, config) pair measured more than
// once across the inputs (separate runs) counts once, with its fastest valid measurement.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kselect/catalogue.h"
#include "kselect/dataset.h"
#include "kselect/status.h"

namespace kselect {

// A loss above this (1 %) is worth changing the rules for: the report names the rule that
// rejected the winning config.
inline constexpr double kRuleLossWorthNaming = 0.01;

// Distribution of a figure over problems or rows. mean, median, p10 and min are ComputeStats'
// (eval.h); p90 uses the same linear interpolation (numpy's default). Zeros when count is 0.
struct Spread {
  int64_t count = 0;
  double mean = 0, median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};
Spread ComputeSpread(std::vector<double> values);

// The heuristic's picks on one problem. Efficiencies are TFLOPS / oracle TFLOPS (0..1].
struct HeuristicOutcome {
  std::string problem_key;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t valid_configs = 0;
  double oracle_tflops = 0;
  std::string oracle_config;
  std::optional<double> top1_efficiency;       // unset: no valid rank-1 measurement
  std::optional<double> best_of_8_efficiency;  // unset: no valid rank 1..8 measurement
  bool top1_is_oracle = false;                 // ties with the oracle count
  // The provider's second heuristic (peer_rank_b, cuDNN's mode B), likewise.
  std::optional<double> top1_b_efficiency;
  std::optional<double> best_of_8_b_efficiency;
};

// A rule set against the full config space on one problem.
struct RuleLoss {
  std::string problem_key;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t valid_configs = 0;           // distinct valid configs: data, sample and peers together
  int64_t valid_configs_in_rules = 0;  // of those, the ones every rule keeps
  double best_tflops = 0;              // the overall winner
  std::string best_config;
  std::string best_source;          // where the winner was measured: "data" or "full sample"
  double best_in_rules_tflops = 0;  // 0 when the rules keep no valid config
  std::string best_in_rules_config;
  double loss = 0;  // 1 - best_in_rules / best
  // The rule that rejects the overall winner, when loss > kRuleLossWorthNaming ("" otherwise).
  std::string rejecting_rule;
};

// Everything the report says about one (provider, dtype, layout) group.
struct GroupBaselines {
  std::string provider, dtype, layout;

  // The data (not the full sample). Row counts are of rows as read; aborted rows are counted
  // apart from the other invalid ones.
  int64_t rows = 0, valid_rows = 0, aborted_rows = 0, invalid_rows = 0;
  int64_t shapes = 0;                // distinct problems
  int64_t shapes_without_valid = 0;  // problems with no valid measurement at all
  int64_t duplicate_rows = 0;        // rows repeating a (problem, config) pair already read
  Spread valid_configs_per_shape;    // distinct valid configs per problem
  Spread cv;                         // of valid rows with a CV

  // The heuristic (peer_rank). has_heuristic is false when no row of the group carries a rank.
  bool has_heuristic = false;
  int64_t heuristic_rows = 0;             // rows with peer_rank 1..8
  int64_t heuristic_rows_unmeasured = 0;  // of those, invalid or aborted
  int64_t heuristic_rows_aborted = 0;
  int64_t problems_top1_unmeasured = 0;  // a rank-1 row exists but is not a valid measurement
  Spread top1;                           // efficiency over problems with a valid top-1
  Spread best_of_8;
  double geomean_speedup_over_top1 = 0;  // geomean of oracle / top-1 TFLOPS; 0 when no top-1
  int64_t top1_is_oracle = 0;
  std::vector<HeuristicOutcome> problems;  // sorted by m, n, k, batch
  // The second heuristic (peer_rank_b; cuDNN's mode B): false when no row carries its rank.
  bool has_heuristic_b = false;
  int64_t heuristic_b_rows = 0;  // rows with peer_rank_b 1..8
  Spread top1_b, best_of_8_b;
  double geomean_speedup_over_top1_b = 0;  // geomean of oracle / its top-1 TFLOPS

  // The rule set vs the full sample; has_sample is false without full-sample rows for the group.
  bool has_sample = false;
  std::string rule_set;               // name of the rule set applied
  int64_t sample_rows = 0;            // full-sample rows of this group
  int64_t sample_problems = 0;        // distinct problems in them
  int64_t sample_duplicate_rows = 0;  // sample rows repeating a pair already read (data or sample)
  std::vector<RuleLoss> losses;       // problems in both data and sample, worst loss first
  Spread loss;
  int64_t losses_worth_naming = 0;                 // loss > kRuleLossWorthNaming
  std::map<std::string, int64_t> rejecting_rules;  // rule -> problems it cost > 1 %
};

struct BaselineReport {
  std::vector<GroupBaselines> groups;    // sorted by provider, dtype, layout
  int64_t data_rows_skipped = 0;         // rows without provider, problem or config key
  int64_t sample_rows_outside_data = 0;  // full-sample rows of a group the data lacks
};

// Inputs of the report. `rule_sets`: one per provider that has full-sample rows (the first of a
// provider is used).
struct BaselineInputs {
  std::vector<Dataset> data;
  std::vector<Dataset> full_sample;
  std::vector<RuleSet> rule_sets;
};

// The same inputs as row streams: each source calls `visit` once per row, in order, and stops at
// the first error it returns. The report keeps a few figures per (problem, config) pair, not the
// rows, so files can be streamed into it.
struct BaselineRowSources {
  std::vector<RowSource> data;
  std::vector<RowSource> full_sample;
  std::vector<RuleSet> rule_sets;
};

// kInvalidArgument when there are no data rows, or no data row names its provider, problem and
// config; kFailedPrecondition when the rows come from more than one device (oracles across
// devices mean nothing), or when full-sample rows of a data group have no rule set for their
// provider.
StatusOr<BaselineReport> BuildBaselineReport(const BaselineInputs& inputs);
StatusOr<BaselineReport> BuildBaselineReport(const BaselineRowSources& inputs);

// The paths are only printed: they name the inputs in the report.
struct ReportSources {
  std::vector<std::string> data;
  std::vector<std::string> full_sample;
  std::vector<std::string> rule_set_paths;  // where the rule sets came from
};
std::string BaselineReportToMarkdown(const BaselineReport& report, const ReportSources& sources);
std::string BaselineReportToJson(const BaselineReport& report, const ReportSources& sources);

}  // namespace kselect
