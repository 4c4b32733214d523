// The baselines report: data quality, the provider heuristic against the oracle, and the loss of
// a rule set against a sample of the full config space.
#include "kselect/baselines.h"
#include "core/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "kselect/eval.h"
#include "kselect/version.h"

namespace kselect {
namespace {

// Aborted rows stop timing early and invalid rows failed; neither is a figure to compare.
bool IsMeasurement(const DatasetRow& row) {
  const double tflops = row.measured_tflops.value_or(0.0);
  return row.is_valid.value_or(false) && !row.aborted.value_or(false) && std::isfinite(tflops) &&
         tflops > 0;
}

bool HasIdentity(const DatasetRow& row) {
  return row.provider && row.problem_key && row.config_key;
}

using GroupKey = std::tuple<std::string, std::string, std::string>;

GroupKey GroupOf(const DatasetRow& row) {
  // Convolution rows carry their layout in conv_layout.
  return {row.provider.value_or(""), row.dtype.value_or(""),
          row.layout ? *row.layout : row.conv_layout.value_or("")};
}

std::string DeviceOf(const DatasetRow& row) {
  if (row.device_kind && !row.device_kind->empty()) return *row.device_kind;
  return row.device_name.value_or("unknown device") + " (" + row.arch.value_or("?") + ")";
}

// One (problem, config) pair as kept: its fastest valid row, else its first row. Only what the
// report reads of that row is kept (not the row: a report over millions of rows would hold them
// all).
struct KeptPair {
  bool valid = false;
  bool from_sample = false;
  double tflops = 0;
  double latency_ms = 0;
  std::optional<KernelConfig> config;  // parsed for valid pairs
  std::optional<int64_t> peer_rank;    // the best rank any of its rows carries
  std::optional<int64_t> peer_rank_b;  // likewise in the second heuristic
};

struct ProblemPairs {
  bool seen = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;     // the problem's dimensions, from its first row
  std::optional<Problem> problem;             // likewise, parsed
  std::map<std::string, KeptPair> by_config;  // config_key -> pair
};

StatusOr<Measurement> MeasurementOf(const DatasetRow& row) {
  auto measurement = MeasurementFromRow(row);
  if (!measurement.ok()) {
    return measurement.status().WithContext("row of problem " + row.problem_key.value_or("?") +
                                            ", config " + row.config_key.value_or("?"));
  }
  return measurement;
}

// Adds `row` to its pair; true when the pair had been read before (a duplicate).
StatusOr<bool> AddRow(ProblemPairs& problem, const DatasetRow& row, bool from_sample) {
  if (!problem.seen) {
    problem.seen = true;
    problem.m = row.m.value_or(0);
    problem.n = row.n.value_or(0);
    problem.k = row.k.value_or(0);
    problem.batch = row.batch.value_or(1);
  }
  const bool valid = IsMeasurement(row);
  auto [it, inserted] = problem.by_config.try_emplace(*row.config_key);
  KeptPair& pair = it->second;
  if (row.peer_rank && (!pair.peer_rank || *row.peer_rank < *pair.peer_rank)) {
    pair.peer_rank = row.peer_rank;
  }
  if (row.peer_rank_b && (!pair.peer_rank_b || *row.peer_rank_b < *pair.peer_rank_b)) {
    pair.peer_rank_b = row.peer_rank_b;
  }
  const bool faster = valid && (!pair.valid || *row.measured_tflops > pair.tflops);
  if (inserted || faster) {
    pair.valid = valid;
    pair.from_sample = from_sample;
    pair.tflops = row.measured_tflops.value_or(0.0);
    pair.latency_ms = row.latency_ms.value_or(0.0);
    pair.config.reset();
    if (valid || !problem.problem) {
      KSELECT_ASSIGN_OR_RETURN(Measurement m, MeasurementOf(row));
      if (valid) pair.config = std::move(m.config);
      if (!problem.problem) problem.problem = std::move(m.problem);
    }
  }
  return !inserted;
}

// The report's names for a group's heuristics (a group names its provider as text).
PeerNames PeerNamesOfProvider(const std::string& provider) {
  const auto parsed = ParseProvider(provider);
  return PeerNamesOf(parsed.ok() ? *parsed : Provider::kCublasLt);
}

// Linear interpolation between order statistics, as ComputeStats does for the median and P10.
double Quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

void FillDimensions(const ProblemPairs& pairs, int64_t& m, int64_t& n, int64_t& k, int64_t& batch) {
  m = pairs.m;
  n = pairs.n;
  k = pairs.k;
  batch = pairs.batch;
}

auto ShapeOrder = [](const auto& a, const auto& b) {
  return std::tie(a.m, a.n, a.k, a.batch, a.problem_key) <
         std::tie(b.m, b.n, b.k, b.batch, b.problem_key);
};

// The heuristic section of one group, from its kept pairs.
Status SummarizeHeuristic(const std::map<std::string, ProblemPairs>& problems, GroupBaselines& g) {
  std::vector<double> top1, best_of_8, log_speedups, top1_b, best_of_8_b, log_speedups_b;
  for (const auto& [problem_key, pairs] : problems) {
    ProblemCandidates candidates;
    candidates.problem_key = problem_key;
    bool top1_listed = false, top1_measured = false;
    for (const auto& [config_key, pair] : pairs.by_config) {
      if (pair.peer_rank == 1) {
        top1_listed = true;
        top1_measured = top1_measured || pair.valid;
      }
      if (!pair.valid) continue;
      Candidate c;
      c.config = *pair.config;
      c.config_key = config_key;
      c.tflops = pair.tflops;
      c.latency_ms = pair.latency_ms;
      if (pair.peer_rank) c.peer_rank = static_cast<int32_t>(*pair.peer_rank);
      if (pair.peer_rank_b) c.peer_rank_b = static_cast<int32_t>(*pair.peer_rank_b);
      candidates.candidates.push_back(std::move(c));
    }
    if (top1_listed && !top1_measured) ++g.problems_top1_unmeasured;
    if (candidates.candidates.empty()) continue;
    // Scoring by the measured TFLOPS makes EvaluateProblem's selection the oracle; what is used
    // here is its oracle and its peer efficiencies, so the report and `kselect eval` agree.
    std::vector<double> scores;
    for (const Candidate& c : candidates.candidates) scores.push_back(c.tflops);
    const ProblemOutcome outcome = EvaluateProblem(candidates, scores);
    HeuristicOutcome h;
    h.problem_key = problem_key;
    FillDimensions(pairs, h.m, h.n, h.k, h.batch);
    h.valid_configs = static_cast<int64_t>(candidates.candidates.size());
    h.oracle_tflops = outcome.oracle_tflops;
    h.oracle_config = outcome.oracle_config;
    h.top1_efficiency = outcome.peer_top1_efficiency;
    h.best_of_8_efficiency = outcome.peer_best_of_8_efficiency;
    if (h.top1_efficiency) {
      h.top1_is_oracle = *h.top1_efficiency >= 1.0;
      top1.push_back(*h.top1_efficiency);
      log_speedups.push_back(-std::log(*h.top1_efficiency));
      if (h.top1_is_oracle) ++g.top1_is_oracle;
    }
    if (h.best_of_8_efficiency) best_of_8.push_back(*h.best_of_8_efficiency);
    h.top1_b_efficiency = outcome.peer_b_top1_efficiency;
    h.best_of_8_b_efficiency = outcome.peer_b_best_of_8_efficiency;
    if (h.top1_b_efficiency) {
      top1_b.push_back(*h.top1_b_efficiency);
      log_speedups_b.push_back(-std::log(*h.top1_b_efficiency));
    }
    if (h.best_of_8_b_efficiency) best_of_8_b.push_back(*h.best_of_8_b_efficiency);
    g.problems.push_back(std::move(h));
  }
  std::sort(g.problems.begin(), g.problems.end(), ShapeOrder);
  g.top1 = ComputeSpread(top1);
  g.best_of_8 = ComputeSpread(best_of_8);
  if (!log_speedups.empty()) {
    g.geomean_speedup_over_top1 = std::exp(
        std::accumulate(log_speedups.begin(), log_speedups.end(), 0.0) / log_speedups.size());
  }
  g.top1_b = ComputeSpread(top1_b);
  g.best_of_8_b = ComputeSpread(best_of_8_b);
  if (!log_speedups_b.empty()) {
    g.geomean_speedup_over_top1_b =
        std::exp(std::accumulate(log_speedups_b.begin(), log_speedups_b.end(), 0.0) /
                 static_cast<double>(log_speedups_b.size()));
  }
  return Status::Ok();
}

// The rule set's loss on one problem measured in both the data and the sample; nullopt when no
// pair of the problem is a valid measurement.
StatusOr<std::optional<RuleLoss>> ProblemLoss(const std::string& problem_key,
                                              const ProblemPairs& pairs, const RuleSet& rules) {
  RuleLoss loss;
  loss.problem_key = problem_key;
  FillDimensions(pairs, loss.m, loss.n, loss.k, loss.batch);
  // Conditioned rules depend on the problem (every row of the group has the same one).
  const Problem& problem = *pairs.problem;
  const KeptPair* best = nullptr;
  std::optional<KernelConfig> best_config;
  for (const auto& [config_key, pair] : pairs.by_config) {
    if (!pair.valid) continue;
    const KernelConfig& config = *pair.config;
    const double tflops = pair.tflops;
    ++loss.valid_configs;
    if (RejectingRule(rules, problem, config).empty()) {
      ++loss.valid_configs_in_rules;
      if (tflops > loss.best_in_rules_tflops) {
        loss.best_in_rules_tflops = tflops;
        loss.best_in_rules_config = config_key;
      }
    }
    if (best == nullptr || tflops > best->tflops) {
      best = &pair;
      best_config = config;
      loss.best_config = config_key;
    }
  }
  if (best == nullptr) return std::optional<RuleLoss>();
  loss.best_tflops = best->tflops;
  loss.best_source = best->from_sample ? "full sample" : "data";
  loss.loss = 1.0 - loss.best_in_rules_tflops / loss.best_tflops;
  if (loss.loss > kRuleLossWorthNaming)
    loss.rejecting_rule = RejectingRule(rules, problem, *best_config);
  return std::optional<RuleLoss>(std::move(loss));
}

// Over the problems measured in both the data and the sample.
Status SummarizeLoss(const std::map<std::string, ProblemPairs>& data,
                     const std::set<std::string>& sample_problems,
                     const std::map<std::string, ProblemPairs>& combined, const RuleSet& rules,
                     GroupBaselines& g) {
  g.rule_set = rules.name;
  std::vector<double> values;
  for (const auto& [problem_key, pairs] : combined) {
    if (!data.contains(problem_key) || !sample_problems.contains(problem_key)) continue;
    KSELECT_ASSIGN_OR_RETURN(std::optional<RuleLoss> loss, ProblemLoss(problem_key, pairs, rules));
    if (!loss) continue;
    values.push_back(loss->loss);
    if (loss->loss > kRuleLossWorthNaming) {
      ++g.losses_worth_naming;
      ++g.rejecting_rules[loss->rejecting_rule];
    }
    g.losses.push_back(std::move(*loss));
  }
  std::sort(g.losses.begin(), g.losses.end(), [](const RuleLoss& a, const RuleLoss& b) {
    if (a.loss != b.loss) return a.loss > b.loss;
    return ShapeOrder(a, b);
  });
  g.loss = ComputeSpread(values);
  return Status::Ok();
}

std::string Pct(double v) {
  return text::Percent(v);
}

std::string Shape(int64_t m, int64_t n, int64_t k, int64_t batch) {
  std::string s = std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k);
  if (batch != 1) s += " (batch " + std::to_string(batch) + ")";
  return s;
}

nlohmann::json SpreadJson(const Spread& s) {
  if (s.count == 0) return {{"count", 0}};
  return {{"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"p10", s.p10},
          {"p90", s.p90},     {"min", s.min},   {"max", s.max}};
}

nlohmann::json OptionalJson(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace

Spread ComputeSpread(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  const EfficiencyStats stats = ComputeStats(values);
  std::sort(values.begin(), values.end());
  s.count = stats.count;
  s.mean = stats.mean;
  s.median = stats.median;
  s.p10 = stats.p10;
  s.min = stats.min;
  s.p90 = Quantile(values, 0.9);
  s.max = values.back();
  return s;
}

StatusOr<BaselineReport> BuildBaselineReport(const BaselineInputs& inputs) {
  BaselineRowSources sources;
  sources.rule_sets = inputs.rule_sets;
  for (const Dataset& d : inputs.data) sources.data.push_back(RowsOf(d));
  for (const Dataset& d : inputs.full_sample) sources.full_sample.push_back(RowsOf(d));
  return BuildBaselineReport(sources);
}

StatusOr<BaselineReport> BuildBaselineReport(const BaselineRowSources& inputs) {
  BaselineReport report;
  struct GroupState {
    GroupBaselines out;
    std::map<std::string, ProblemPairs> data;      // problem_key -> pairs
    std::map<std::string, ProblemPairs> combined;  // data and sample together
    std::set<std::string> sample_problems;
    std::vector<double> cv;
  };
  std::map<GroupKey, GroupState> groups;
  std::map<std::string, std::string> devices;  // device -> where it was first seen
  auto note_device = [&devices](const DatasetRow& row, const std::string& where) {
    devices.try_emplace(DeviceOf(row), where);
  };

  int64_t data_rows = 0;
  for (size_t d = 0; d < inputs.data.size(); ++d) {
    KSELECT_RETURN_IF_ERROR(inputs.data[d]([&](const DatasetRow& row) -> Status {
      ++data_rows;
      if (!HasIdentity(row)) {
        ++report.data_rows_skipped;
        return Status::Ok();
      }
      note_device(row, "data file " + std::to_string(d + 1));
      GroupState& group = groups[GroupOf(row)];
      GroupBaselines& g = group.out;
      ++g.rows;
      const bool measured = IsMeasurement(row);
      if (measured) {
        ++g.valid_rows;
        if (row.cv) group.cv.push_back(*row.cv);
      } else if (row.aborted.value_or(false)) {
        ++g.aborted_rows;
      } else {
        ++g.invalid_rows;
      }
      if (row.peer_rank && *row.peer_rank >= 1 && *row.peer_rank <= 8) {
        g.has_heuristic = true;
        ++g.heuristic_rows;
        if (!measured) ++g.heuristic_rows_unmeasured;
        if (row.aborted.value_or(false)) ++g.heuristic_rows_aborted;
      }
      if (row.peer_rank_b && *row.peer_rank_b >= 1 && *row.peer_rank_b <= 8) {
        g.has_heuristic_b = true;
        ++g.heuristic_b_rows;
      }
      KSELECT_ASSIGN_OR_RETURN(const bool duplicate,
                               AddRow(group.data[*row.problem_key], row, false));
      if (duplicate) ++g.duplicate_rows;
      return AddRow(group.combined[*row.problem_key], row, false).status();
    }));
  }
  if (data_rows == 0) {
    return InvalidArgumentError("the data holds no rows: nothing to report");
  }
  if (groups.empty()) {
    return InvalidArgumentError("none of the " + std::to_string(data_rows) +
                                " data rows names its provider, problem and config "
                                "(provider, problem_key, config_key): is this a kselect dataset?");
  }

  for (size_t s = 0; s < inputs.full_sample.size(); ++s) {
    KSELECT_RETURN_IF_ERROR(inputs.full_sample[s]([&](const DatasetRow& row) -> Status {
      if (!HasIdentity(row)) return Status::Ok();
      auto group = groups.find(GroupOf(row));
      if (group == groups.end()) {
        ++report.sample_rows_outside_data;
        return Status::Ok();
      }
      note_device(row, "full-sample file " + std::to_string(s + 1));
      GroupBaselines& g = group->second.out;
      g.has_sample = true;
      ++g.sample_rows;
      group->second.sample_problems.insert(*row.problem_key);
      KSELECT_ASSIGN_OR_RETURN(const bool duplicate,
                               AddRow(group->second.combined[*row.problem_key], row, true));
      if (duplicate) ++g.sample_duplicate_rows;
      return Status::Ok();
    }));
  }
  if (devices.size() > 1) {
    std::string list;
    for (const auto& [device, where] : devices) {
      list += (list.empty() ? "" : ", ") + device + " (" + where + ")";
    }
    return FailedPreconditionError(
        "the inputs come from more than one device (" + list +
        "); an oracle across devices means nothing: filter with `kselect data filter "
        "--device-kind`");
  }

  for (auto& [key, group] : groups) {
    GroupBaselines& g = group.out;
    std::tie(g.provider, g.dtype, g.layout) = key;
    g.shapes = static_cast<int64_t>(group.data.size());
    std::vector<double> valid_configs;
    for (const auto& [problem_key, pairs] : group.data) {
      const auto valid = std::count_if(pairs.by_config.begin(), pairs.by_config.end(),
                                       [](const auto& entry) { return entry.second.valid; });
      if (valid == 0) ++g.shapes_without_valid;
      valid_configs.push_back(static_cast<double>(valid));
    }
    g.valid_configs_per_shape = ComputeSpread(valid_configs);
    g.cv = ComputeSpread(group.cv);
    KSELECT_RETURN_IF_ERROR(SummarizeHeuristic(group.data, g));

    if (g.has_sample) {
      g.sample_problems = static_cast<int64_t>(group.sample_problems.size());
      auto provider = ParseProvider(g.provider);
      if (!provider.ok()) return provider.status();
      const RuleSet* rules = nullptr;
      for (const RuleSet& r : inputs.rule_sets) {
        if (r.provider == *provider) {
          rules = &r;
          break;
        }
      }
      if (rules == nullptr) {
        return FailedPreconditionError("the full sample has " + g.provider +
                                       " rows but no rule set for " + g.provider +
                                       " was given: the default-vs-full loss needs one");
      }
      KSELECT_RETURN_IF_ERROR(
          SummarizeLoss(group.data, group.sample_problems, group.combined, *rules, g));
    }
    report.groups.push_back(std::move(g));
  }
  return report;
}

std::string BaselineReportToMarkdown(const BaselineReport& report, const ReportSources& sources) {
  std::ostringstream md;
  md << "# kselect data report\n\n";
  for (const std::string& path : sources.data) md << "- data: `" << path << "`\n";
  for (const std::string& path : sources.full_sample) md << "- full sample: `" << path << "`\n";
  for (const std::string& path : sources.rule_set_paths) md << "- rule set: `" << path << "`\n";
  md << "- tool: " << ToolDescription() << "\n";
  if (report.data_rows_skipped > 0) {
    md << "- data rows skipped (no provider, problem or config key): " << report.data_rows_skipped
       << "\n";
  }
  if (report.sample_rows_outside_data > 0) {
    md << "- full-sample rows of a provider/dtype/layout the data lacks (ignored): "
       << report.sample_rows_outside_data << "\n";
  }
  md << "\nValid rows are measurements: aborted and invalid rows never are. A (problem, config) "
        "measured more than once counts once, with its fastest valid measurement.\n";

  for (const GroupBaselines& g : report.groups) {
    md << "\n## " << g.provider << " " << g.dtype << " " << g.layout << "\n\n";
    md << "| data | value |\n|---|---|\n";
    md << "| shapes (distinct problems) | " << g.shapes;
    if (g.shapes_without_valid > 0) md << " (" << g.shapes_without_valid << " without a valid row)";
    md << " |\n";
    md << "| rows | " << g.rows << " |\n";
    md << "| valid rows | " << g.valid_rows << " |\n";
    md << "| aborted rows | " << g.aborted_rows << " |\n";
    md << "| invalid rows (not aborted) | " << g.invalid_rows << " |\n";
    md << "| duplicated (problem, config) rows | " << g.duplicate_rows << " |\n";
    const Spread& v = g.valid_configs_per_shape;
    md << "| valid configs per shape | mean " << text::Fixed(v.mean, 1) << ", median "
       << text::Fixed(v.median, 1) << ", min " << text::Fixed(v.min, 0) << ", max "
       << text::Fixed(v.max, 0) << " |\n";
    if (g.cv.count > 0) {
      md << "| CV of valid rows | median " << Pct(g.cv.median) << ", P90 " << Pct(g.cv.p90)
         << " |\n";
    } else {
      md << "| CV of valid rows | none recorded |\n";
    }

    md << "\n### " << g.provider << " heuristic vs the oracle\n\n";
    if (!g.has_heuristic) {
      md << "No heuristic picks recorded (no row carries a peer_rank).\n";
    } else {
      md << "Oracle: the best valid measurement of each problem (catalogue configs and the "
            "heuristic's picks together). Efficiency = TFLOPS / oracle TFLOPS.\n\n";
      md << "| pick | problems | mean | median | P10 | min |\n|---|---|---|---|---|---|\n";
      auto row = [&md](const char* name, const Spread& s) {
        md << "| " << name << " | " << s.count << " | " << Pct(s.mean) << " | " << Pct(s.median)
           << " | " << Pct(s.p10) << " | " << Pct(s.min) << " |\n";
      };
      if (g.top1.count > 0) row("top-1 (peer_rank 1)", g.top1);
      if (g.best_of_8.count > 0) row("best of top 8", g.best_of_8);
      if (g.has_heuristic_b) {
        // The provider's second heuristic (cuDNN's mode B) as its own rows.
        const std::string b = PeerNamesOfProvider(g.provider).b.name;
        const std::string b_top1 = b + ": top-1 (peer_rank_b 1)", b_best = b + ": best of top 8";
        if (g.top1_b.count > 0) row(b_top1.c_str(), g.top1_b);
        if (g.best_of_8_b.count > 0) row(b_best.c_str(), g.best_of_8_b);
      }
      md << "\n";
      if (g.top1_b.count > 0) {
        md << "- geomean speedup of the oracle over the second heuristic's top-1: "
           << text::Fixed(g.geomean_speedup_over_top1_b, 4) << "x\n";
      }
      if (g.top1.count > 0) {
        md << "- geomean speedup of the oracle over top-1: "
           << text::Fixed(g.geomean_speedup_over_top1, 4) << "x\n- top-1 is the oracle on "
           << g.top1_is_oracle << " of " << g.top1.count << " problems\n";
      } else {
        md << "- no problem has a valid top-1 (peer_rank 1) measurement\n";
      }
      md << "- heuristic rows (peer_rank 1..8): " << g.heuristic_rows << ", of which "
         << g.heuristic_rows_unmeasured << " without a valid measurement ("
         << g.heuristic_rows_aborted << " aborted: clearly slower than the best so far)\n";
      if (g.problems_top1_unmeasured > 0) {
        md << "- problems whose top-1 pick has no valid measurement (left out above, so top-1 "
              "looks better than it is): "
           << g.problems_top1_unmeasured << "\n";
      }
      std::vector<const HeuristicOutcome*> worst;
      for (const HeuristicOutcome& h : g.problems) {
        if (h.top1_efficiency && *h.top1_efficiency < 1.0) worst.push_back(&h);
      }
      std::stable_sort(worst.begin(), worst.end(), [](const auto* a, const auto* b) {
        return *a->top1_efficiency < *b->top1_efficiency;
      });
      if (!worst.empty()) {
        md << "\nWorst top-1 problems:\n\n| m x n x k | top-1 | best of 8 | oracle TFLOPS | "
              "oracle config |\n|---|---|---|---|---|\n";
        for (size_t i = 0; i < worst.size() && i < 10; ++i) {
          const HeuristicOutcome& h = *worst[i];
          md << "| " << Shape(h.m, h.n, h.k, h.batch) << " | " << Pct(*h.top1_efficiency) << " | "
             << (h.best_of_8_efficiency ? Pct(*h.best_of_8_efficiency) : "-") << " | "
             << text::Fixed(h.oracle_tflops, 2) << " | `" << h.oracle_config << "` |\n";
        }
      }
    }

    md << "\n### Rule set vs the full config space\n\n";
    if (!g.has_sample) {
      md << "Not computed: no --full-sample rows for this provider, dtype and layout.\n";
      continue;
    }
    md << "Rule set `" << g.rule_set << "`. Full-sample rows " << g.sample_rows << " over "
       << g.sample_problems << " problems (" << g.sample_duplicate_rows
       << " repeating a (problem, config) already read); " << g.losses.size()
       << " problems are in both the data and the sample.\n\n"
       << "loss = 1 - best valid config the rules keep / best valid config measured (data, "
          "sample and heuristic picks together).\n\n";
    if (g.losses.empty()) {
      md << "No problem is in both the data and the sample.\n";
      continue;
    }
    md << "- loss: median " << Pct(g.loss.median) << ", P90 " << Pct(g.loss.p90) << ", max "
       << Pct(g.loss.max) << "\n- problems losing more than " << Pct(kRuleLossWorthNaming) << ": "
       << g.losses_worth_naming << "\n";
    for (const auto& [rule, count] : g.rejecting_rules) {
      md << "  - rejected by `" << rule << "`: " << count << "\n";
    }
    md << "\n| m x n x k | loss | in rules TFLOPS | best TFLOPS | best config (from) | "
          "rejected by |\n|---|---|---|---|---|---|\n";
    for (const RuleLoss& l : g.losses) {
      md << "| " << Shape(l.m, l.n, l.k, l.batch) << " | " << Pct(l.loss) << " | "
         << text::Fixed(l.best_in_rules_tflops, 2) << " | " << text::Fixed(l.best_tflops, 2)
         << " | `" << l.best_config << "` (" << l.best_source << ") | "
         << (l.rejecting_rule.empty() ? "" : "`" + l.rejecting_rule + "`") << " |\n";
    }
  }
  return md.str();
}

std::string BaselineReportToJson(const BaselineReport& report, const ReportSources& sources) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupBaselines& g : report.groups) {
    nlohmann::json problems = nlohmann::json::array();
    for (const HeuristicOutcome& h : g.problems) {
      problems.push_back({{"problem", h.problem_key},
                          {"m", h.m},
                          {"n", h.n},
                          {"k", h.k},
                          {"batch", h.batch},
                          {"valid_configs", h.valid_configs},
                          {"oracle_tflops", h.oracle_tflops},
                          {"oracle_config", h.oracle_config},
                          {"top1_efficiency", OptionalJson(h.top1_efficiency)},
                          {"best_of_8_efficiency", OptionalJson(h.best_of_8_efficiency)},
                          {"top1_is_oracle", h.top1_is_oracle}});
      if (g.has_heuristic_b) {
        problems.back()["top1_b_efficiency"] = OptionalJson(h.top1_b_efficiency);
        problems.back()["best_of_8_b_efficiency"] = OptionalJson(h.best_of_8_b_efficiency);
      }
    }
    nlohmann::json heuristic = {{"recorded", g.has_heuristic}};
    if (g.has_heuristic) {
      heuristic["rows"] = g.heuristic_rows;
      heuristic["rows_unmeasured"] = g.heuristic_rows_unmeasured;
      heuristic["rows_aborted"] = g.heuristic_rows_aborted;
      heuristic["problems_top1_unmeasured"] = g.problems_top1_unmeasured;
      heuristic["top1"] = SpreadJson(g.top1);
      heuristic["best_of_8"] = SpreadJson(g.best_of_8);
      heuristic["geomean_speedup_over_top1"] =
          g.top1.count > 0 ? nlohmann::json(g.geomean_speedup_over_top1) : nlohmann::json();
      heuristic["top1_is_oracle"] = g.top1_is_oracle;
    }
    if (g.has_heuristic_b) {
      heuristic["b"] = {
          {"name", PeerNamesOfProvider(g.provider).b.name},
          {"rows", g.heuristic_b_rows},
          {"top1", SpreadJson(g.top1_b)},
          {"best_of_8", SpreadJson(g.best_of_8_b)},
          {"geomean_speedup_over_top1",
           g.top1_b.count > 0 ? nlohmann::json(g.geomean_speedup_over_top1_b) : nlohmann::json()}};
    }
    heuristic["problems"] = problems;
    nlohmann::json rules = {{"computed", g.has_sample}};
    if (g.has_sample) {
      nlohmann::json losses = nlohmann::json::array();
      for (const RuleLoss& l : g.losses) {
        losses.push_back({{"problem", l.problem_key},
                          {"m", l.m},
                          {"n", l.n},
                          {"k", l.k},
                          {"batch", l.batch},
                          {"valid_configs", l.valid_configs},
                          {"valid_configs_in_rules", l.valid_configs_in_rules},
                          {"best_tflops", l.best_tflops},
                          {"best_config", l.best_config},
                          {"best_source", l.best_source},
                          {"best_in_rules_tflops", l.best_in_rules_tflops},
                          {"best_in_rules_config", l.best_in_rules_config},
                          {"loss", l.loss},
                          {"rejecting_rule", l.rejecting_rule}});
      }
      rules["rule_set"] = g.rule_set;
      rules["sample_rows"] = g.sample_rows;
      rules["sample_problems"] = g.sample_problems;
      rules["sample_duplicate_rows"] = g.sample_duplicate_rows;
      rules["loss"] = SpreadJson(g.loss);
      rules["loss_threshold"] = kRuleLossWorthNaming;
      rules["losses_over_threshold"] = g.losses_worth_naming;
      rules["rejecting_rules"] = g.rejecting_rules;
      rules["problems"] = losses;
    }
    groups.push_back({{"provider", g.provider},
                      {"dtype", g.dtype},
                      {"layout", g.layout},
                      {"data",
                       {{"shapes", g.shapes},
                        {"shapes_without_valid", g.shapes_without_valid},
                        {"rows", g.rows},
                        {"valid_rows", g.valid_rows},
                        {"aborted_rows", g.aborted_rows},
                        {"invalid_rows", g.invalid_rows},
                        {"duplicate_rows", g.duplicate_rows},
                        {"valid_configs_per_shape", SpreadJson(g.valid_configs_per_shape)},
                        {"cv", SpreadJson(g.cv)}}},
                      {"heuristic", heuristic},
                      {"rules_vs_full", rules}});
  }
  const nlohmann::json j = {{"format", "kselect.data_report"},
                            {"format_major", 1},
                            {"tool", ToolDescription()},
                            {"data", sources.data},
                            {"full_sample", sources.full_sample},
                            {"rule_sets", sources.rule_set_paths},
                            {"data_rows_skipped", report.data_rows_skipped},
                            {"sample_rows_outside_data", report.sample_rows_outside_data},
                            {"groups", groups}};
  return j.dump(2);
}

}  // namespace kselect
