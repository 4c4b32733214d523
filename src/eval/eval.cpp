// Candidate sets from datasets, per-problem selection metrics, summaries, reports and the model
// comparison rules.
#include "kselect/eval.h"
#include "core/text.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kselect/config_schema.h"
#include "kselect/selector.h"
#include "kselect/version.h"

namespace kselect {
namespace {

std::string ShapeKey(const GemmProblem& p) {
  return std::to_string(p.m) + "," + std::to_string(p.n) + "," + std::to_string(p.k) + "," +
         std::to_string(p.batch);
}

// A convolution's geometry: the same layer in another dtype, layout or direction is one shape,
// so cross-validation never trains on a layer it validates on.
std::string ShapeKey(const ConvProblem& p) {
  std::string key;
  for (int64_t v :
       {p.n, p.c, p.k, p.g, p.di, p.hi, p.wi, p.z, p.y, p.x, p.stride_d, p.stride_h, p.stride_w,
        p.pad_d, p.pad_h, p.pad_w, p.dilation_d, p.dilation_h, p.dilation_w}) {
    key += (key.empty() ? "" : ",") + std::to_string(v);
  }
  return key;
}

bool IsConvProvider(Provider provider) {
  return SchemaOf(provider).gemm_traits == nullptr;
}

// A row's problem kind from its columns alone (the first pass reads no config).
bool IsGemmRow(const DatasetRow& row) {
  return row.m.has_value() && !row.conv_direction.has_value();
}
bool IsConvRow(const DatasetRow& row) {
  return row.conv_direction.has_value();
}

// Predicted order: descending score, ties broken by candidate index so results are stable.
std::vector<size_t> OrderByScore(std::span<const double> scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double sa = std::isnan(scores[a]) ? -INFINITY : scores[a];
    const double sb = std::isnan(scores[b]) ? -INFINITY : scores[b];
    return sa > sb;
  });
  return order;
}

std::string Pct(double v) {
  return text::Percent(v);
}

// Stats over no problems are null, never a misleading 0 %.
nlohmann::json StatsJson(const EfficiencyStats& s) {
  if (s.count == 0) {
    return {
        {"count", 0}, {"mean", nullptr}, {"median", nullptr}, {"p10", nullptr}, {"min", nullptr}};
  }
  return {
      {"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"p10", s.p10}, {"min", s.min}};
}

}  // namespace

size_t CandidateSet::NumCandidates() const {
  size_t n = 0;
  for (const ProblemCandidates& p : problems) n += p.candidates.size();
  return n;
}

std::vector<PeerPick> PeerPicksOf(const ProblemCandidates& problem) {
  std::vector<PeerPick> picks;
  for (const Candidate& c : problem.candidates) {
    if (c.peer_rank && *c.peer_rank > 0) picks.push_back({c.config, *c.peer_rank});
    if (c.peer_rank_b && *c.peer_rank_b > 0) {
      picks.push_back({c.config, *c.peer_rank_b, PeerHeuristic::kSecond});
    }
  }
  std::stable_sort(picks.begin(), picks.end(), [](const PeerPick& a, const PeerPick& b) {
    return std::pair(a.heuristic, a.rank) < std::pair(b.heuristic, b.rank);
  });
  return picks;
}

StatusOr<CandidateSet> BuildCandidateSet(const Dataset& dataset, std::optional<Provider> provider) {
  return BuildCandidateSet(RowsOf(dataset), provider);
}

StatusOr<CandidateSet> BuildCandidateSet(const RowSource& rows, std::optional<Provider> provider) {
  CandidateSet set;
  if (!provider) {
    // A first pass over the rows for their provider: a file source streams again.
    std::set<std::string> seen, gemm_providers, conv_providers;
    KSELECT_RETURN_IF_ERROR(rows([&](const DatasetRow& row) {
      ++set.rows_read;
      if (!row.is_valid.value_or(false) || !row.provider) return Status::Ok();
      if (IsGemmRow(row)) gemm_providers.insert(*row.provider);
      if (IsConvRow(row)) conv_providers.insert(*row.provider);
      if (IsGemmRow(row) || IsConvRow(row)) seen.insert(*row.provider);
      return Status::Ok();
    }));
    if (seen.empty()) {
      return InvalidArgumentError("the dataset has no valid GEMM or convolution rows (" +
                                  std::to_string(set.rows_read) + " rows read)");
    }
    if (!gemm_providers.empty() && !conv_providers.empty()) {
      auto list = [](const std::set<std::string>& names) {
        std::string out;
        for (const std::string& p : names) out += (out.empty() ? "" : ", ") + p;
        return out;
      };
      return InvalidArgumentError("the dataset mixes GEMM rows (" + list(gemm_providers) +
                                  ") and convolution rows (" + list(conv_providers) +
                                  "); a model learns one kind of problem: pick one with "
                                  "--provider");
    }
    if (seen.size() > 1) {
      std::string list;
      for (const std::string& p : seen) list += (list.empty() ? "" : ", ") + p;
      return InvalidArgumentError("the dataset holds several providers (" + list +
                                  "); pick one with --provider");
    }
    KSELECT_ASSIGN_OR_RETURN(provider, ParseProvider(*seen.begin()));
  }
  set.provider = *provider;
  set.rows_read = 0;
  const std::string provider_name(ProviderName(*provider));

  std::map<std::string, ProblemCandidates> by_problem;
  std::map<std::string, int64_t> row_of_pair;
  int64_t duplicates = 0;
  std::string first_duplicate;
  std::optional<HardwareConstants> hardware;
  std::map<std::string, HardwareConstants> hardware_cache;
  KSELECT_RETURN_IF_ERROR(rows([&](const DatasetRow& row) -> Status {
    const auto i = static_cast<size_t>(set.rows_read++);
    // Aborted rows are candidates too, with the latency of their 1-2 timed batches: the bench
    // stopped timing them because they were clearly slow, and a selector must learn that.
    // Leaving them out would train and score the model on the fast configs alone.
    const bool aborted = row.aborted.value_or(false) && row.latency_ms.value_or(0.0) > 0;
    if ((!row.is_valid.value_or(false) && !aborted) || row.provider.value_or("") != provider_name ||
        (!IsGemmRow(row) && !IsConvRow(row)) ||
        (!aborted && row.measured_tflops.value_or(0.0) <= 0)) {
      ++set.rows_skipped;
      return Status::Ok();
    }
    auto measurement = MeasurementFromRow(row);
    if (!measurement.ok()) {
      return measurement.status().WithContext("dataset row " + std::to_string(i));
    }
    if (!measurement->is_valid && !aborted) {  // the file said valid; its figures did not
      ++set.rows_skipped;
      return Status::Ok();
    }
    if (aborted) {
      DeriveRates(*measurement);
      if (!(measurement->tflops > 0)) {
        ++set.rows_skipped;
        return Status::Ok();
      }
      ++set.rows_estimated;
    }
    const Problem& problem = measurement->problem;
    // Hardware constants per distinct device description (rows of one run share it).
    const std::string hw_key = row.arch.value_or("") + "|" + row.device_kind.value_or("") + "|" +
                               row.device_name.value_or("") + "|" +
                               std::to_string(row.sm_count.value_or(0)) + "|" +
                               std::to_string(row.sm_clock_mhz.value_or(0)) + "|" +
                               std::to_string(row.peak_mem_bandwidth_gb_s.value_or(0));
    auto cached = hardware_cache.find(hw_key);
    if (cached == hardware_cache.end()) {
      auto constants = HardwareConstantsFor(HardwareFromRow(row));
      if (!constants.ok())
        return constants.status().WithContext("dataset row " + std::to_string(i));
      cached = hardware_cache.emplace(hw_key, *constants).first;
    }
    if (!hardware) {
      hardware = cached->second;
    } else if (!(*hardware == cached->second)) {
      return FailedPreconditionError(
          "the dataset mixes hardware (" + DescribeHardwareDifference(*hardware, cached->second) +
          " at row " + std::to_string(i) +
          "); a model is trained for one device: filter with `kselect data filter --device-kind`");
    }
    Candidate c;
    c.config = measurement->config;
    c.config_key = ConfigKey(c.config);
    c.tflops = measurement->tflops;
    c.latency_ms = measurement->latency_ms;
    c.bandwidth_gb_s = measurement->bandwidth_gb_s;
    c.peer_rank = measurement->peer_rank;
    c.peer_rank_b = measurement->peer_rank_b;
    c.estimated = aborted;
    // The problem's identity (problem_key) groups rows, for convolutions as for GEMMs.
    const std::string problem_key = ProblemToString(problem);
    const auto [it, inserted] =
        row_of_pair.emplace(problem_key + " | " + c.config_key, static_cast<int64_t>(i));
    if (!inserted) {
      if (duplicates == 0) {
        first_duplicate = "rows " + std::to_string(it->second) + " and " + std::to_string(i) +
                          " (" + problem_key + ", " + c.config_key + ")";
      }
      ++duplicates;
      return Status::Ok();
    }
    ProblemCandidates& pc = by_problem[problem_key];
    if (pc.candidates.empty()) {
      pc.problem_key = problem_key;
      pc.shape_key = std::visit([](const auto& p) { return ShapeKey(p); }, problem);
      pc.problem = problem;
    }
    pc.candidates.push_back(std::move(c));
    ++set.rows_used;
    return Status::Ok();
  }));
  if (duplicates > 0) {
    return FailedPreconditionError(
        std::to_string(duplicates) + " duplicated (problem, config) row(s), first at " +
        first_duplicate +
        "; repeated measurements would be counted twice (a copied dataset trains on double "
        "weight): merge repeats with `kselect data merge` or drop the copy");
  }
  if (by_problem.empty()) {
    return InvalidArgumentError(
        "no valid " + provider_name + (IsConvProvider(*provider) ? " convolution" : " GEMM") +
        " rows in the dataset (" + std::to_string(set.rows_read) + " rows read)");
  }
  set.hardware = *hardware;
  uint64_t h = text::kFnv1a64Basis;
  for (auto& [key, pc] : by_problem) {
    std::sort(pc.candidates.begin(), pc.candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.config_key < b.config_key; });
    for (const Candidate& c : pc.candidates) {
      char figures[64];
      std::snprintf(figures, sizeof(figures), "|%.17g|%.17g\n", c.tflops, c.latency_ms);
      h = text::Fnv1a64(figures, text::Fnv1a64(c.config_key, text::Fnv1a64(key, h)));
    }
    set.problems.push_back(std::move(pc));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, h);
  set.fingerprint = hex;
  return set;
}

double NdcgAtK(std::span<const double> tflops, std::span<const double> scores, int k) {
  KSELECT_CHECK(tflops.size() == scores.size());
  if (tflops.empty()) return 0;
  const double oracle = *std::max_element(tflops.begin(), tflops.end());
  if (oracle <= 0) return 0;
  auto dcg = [&](const std::vector<size_t>& order) {
    double sum = 0;
    for (size_t r = 0; r < order.size() && r < static_cast<size_t>(k); ++r) {
      sum += (tflops[order[r]] / oracle) / std::log2(static_cast<double>(r) + 2.0);
    }
    return sum;
  };
  const double ideal = dcg(OrderByScore(tflops));
  return ideal > 0 ? dcg(OrderByScore(scores)) / ideal : 0;
}

ProblemOutcome EvaluateProblem(const ProblemCandidates& problem, std::span<const double> scores) {
  KSELECT_CHECK(scores.size() == problem.candidates.size());
  KSELECT_CHECK(!scores.empty());
  ProblemOutcome o;
  o.problem_key = problem.problem_key;
  if (const auto* gemm = std::get_if<GemmProblem>(&problem.problem)) {
    o.m = gemm->m;
    o.n = gemm->n;
    o.k = gemm->k;
  }
  o.candidates = problem.candidates.size();
  std::vector<double> tflops;
  for (const Candidate& c : problem.candidates) tflops.push_back(c.tflops);
  const size_t oracle =
      static_cast<size_t>(std::max_element(tflops.begin(), tflops.end()) - tflops.begin());
  const std::vector<size_t> order = OrderByScore(scores);
  o.oracle_tflops = tflops[oracle];
  o.selected_tflops = tflops[order[0]];
  o.efficiency = o.oracle_tflops > 0 ? o.selected_tflops / o.oracle_tflops : 0;
  o.selected_config = problem.candidates[order[0]].config_key;
  o.oracle_config = problem.candidates[oracle].config_key;
  o.selected_name = DescribeConfig(problem.candidates[order[0]].config);
  o.oracle_name = DescribeConfig(problem.candidates[oracle].config);
  auto best_of_first = [&](size_t k) {
    double best = 0;
    for (size_t r = 0; r < k && r < order.size(); ++r) best = std::max(best, tflops[order[r]]);
    return o.oracle_tflops > 0 ? best / o.oracle_tflops : 0;
  };
  for (size_t i = 0; i < kTimedTopK.size(); ++i)
    o.model_timed_efficiency[i] = best_of_first(static_cast<size_t>(kTimedTopK[i]));
  // Ties in measured TFLOPS count as hits: the oracle's rank is that of the first candidate as
  // fast as the oracle.
  for (size_t r = 0; r < order.size(); ++r) {
    if (tflops[order[r]] >= o.oracle_tflops) {
      o.oracle_predicted_rank = static_cast<int>(r) + 1;
      break;
    }
  }
  o.ndcg_at_5 = NdcgAtK(tflops, scores, 5);
  o.ndcg_at_10 = NdcgAtK(tflops, scores, 10);
  // Each heuristic's rank-1 pick and the best of its top 8, from its own ranks.
  auto score_peer = [&](std::optional<int32_t> Candidate::*rank_of, std::optional<double>& top1,
                        std::optional<double>& best_of_8_efficiency) {
    double best_of_8 = 0;
    for (size_t i = 0; i < problem.candidates.size(); ++i) {
      const auto& rank = problem.candidates[i].*rank_of;
      if (!rank) continue;
      if (*rank == 1) top1 = tflops[i] / o.oracle_tflops;
      if (*rank >= 1 && *rank <= 8) best_of_8 = std::max(best_of_8, tflops[i]);
    }
    if (best_of_8 > 0) best_of_8_efficiency = best_of_8 / o.oracle_tflops;
  };
  score_peer(&Candidate::peer_rank, o.peer_top1_efficiency, o.peer_best_of_8_efficiency);
  score_peer(&Candidate::peer_rank_b, o.peer_b_top1_efficiency, o.peer_b_best_of_8_efficiency);
  return o;
}

PeerNames PeerNamesOf(Provider provider) {
  if (provider == Provider::kCudnn) {
    return {{"cudnn heuristic mode A", "cudnn mode A"}, {"cudnn heuristic mode B", "cudnn mode B"}};
  }
  return {{"peer heuristic", "peer"}, {"second peer heuristic", "second peer"}};
}

EfficiencyStats ComputeStats(std::vector<double> values) {
  EfficiencyStats s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
  };
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.median = quantile(0.5);
  s.p10 = quantile(0.1);
  s.min = values.front();
  return s;
}

std::vector<std::string> SlicesOf(int64_t m, int64_t k) {
  // GEMM regimes only: a convolution's outcome has no m or k to place it by.
  if (m <= 0 || k <= 0) return {};
  const char* m_family = m < 32     ? "m: tiny (<32)"
                         : m < 256  ? "m: small (32-255)"
                         : m < 4096 ? "m: medium (256-4095)"
                                    : "m: large (>=4096)";
  const char* k_regime = k < 512    ? "k: shallow (<512)"
                         : k < 4096 ? "k: medium (512-4095)"
                                    : "k: deep (>=4096)";
  return {m_family, k_regime};
}

EvalSummary Summarize(std::vector<ProblemOutcome> outcomes) {
  EvalSummary s;
  std::map<std::string, std::vector<double>> by_slice;
  for (const ProblemOutcome& o : outcomes) {
    for (const std::string& slice : SlicesOf(o.m, o.k)) by_slice[slice].push_back(o.efficiency);
  }
  for (auto& [slice, values] : by_slice) s.slices[slice] = ComputeStats(std::move(values));
  std::vector<double> eff, peer1, peer8, peer_b1, peer_b8;
  double log_speedup_b = 0;
  double n5 = 0, n10 = 0;
  int64_t hits[4] = {0, 0, 0, 0};
  const int ks[4] = {1, 3, 5, 10};
  double log_speedup = 0;
  for (const ProblemOutcome& o : outcomes) {
    eff.push_back(o.efficiency);
    if (o.peer_top1_efficiency && *o.peer_top1_efficiency > 0) {
      log_speedup += std::log(o.efficiency / *o.peer_top1_efficiency);
      ++s.speedup_problems;
      s.faster_than_peer_top1 += o.efficiency > *o.peer_top1_efficiency;
      s.slower_than_peer_top1 += o.efficiency < *o.peer_top1_efficiency;
    }
    if (o.peer_top1_efficiency) peer1.push_back(*o.peer_top1_efficiency);
    if (o.peer_best_of_8_efficiency) peer8.push_back(*o.peer_best_of_8_efficiency);
    if (o.peer_b_top1_efficiency && *o.peer_b_top1_efficiency > 0) {
      log_speedup_b += std::log(o.efficiency / *o.peer_b_top1_efficiency);
      ++s.peer_b.speedup_problems;
      s.peer_b.faster_than_top1 += o.efficiency > *o.peer_b_top1_efficiency;
      s.peer_b.slower_than_top1 += o.efficiency < *o.peer_b_top1_efficiency;
    }
    if (o.peer_b_top1_efficiency) peer_b1.push_back(*o.peer_b_top1_efficiency);
    if (o.peer_b_best_of_8_efficiency) peer_b8.push_back(*o.peer_b_best_of_8_efficiency);
    n5 += o.ndcg_at_5;
    n10 += o.ndcg_at_10;
    for (int i = 0; i < 4; ++i) hits[i] += o.oracle_predicted_rank <= ks[i] ? 1 : 0;
  }
  const double count = std::max<double>(1.0, static_cast<double>(outcomes.size()));
  s.model = ComputeStats(eff);
  s.peer_top1 = ComputeStats(peer1);
  s.peer_best_of_8 = ComputeStats(peer8);
  if (s.speedup_problems > 0)
    s.speedup_over_peer_top1 = std::exp(log_speedup / static_cast<double>(s.speedup_problems));
  s.peer_b.top1 = ComputeStats(peer_b1);
  s.peer_b.best_of_8 = ComputeStats(peer_b8);
  if (s.peer_b.speedup_problems > 0) {
    s.peer_b.speedup_over_top1 =
        std::exp(log_speedup_b / static_cast<double>(s.peer_b.speedup_problems));
  }
  for (size_t i = 0; i < kTimedTopK.size(); ++i) {
    EvalSummary::TimedTopK* timed = &s.timed[i];
    std::vector<double> values;
    double log_sum = 0;
    int64_t with_peer = 0;
    for (const ProblemOutcome& o : outcomes) {
      const double e = o.model_timed_efficiency[i];
      values.push_back(e);
      if (o.peer_top1_efficiency && *o.peer_top1_efficiency > 0 && e > 0) {
        log_sum += std::log(e / *o.peer_top1_efficiency);
        ++with_peer;
      }
    }
    timed->efficiency = ComputeStats(std::move(values));
    timed->speedup_over_peer_top1 =
        with_peer > 0 ? std::exp(log_sum / static_cast<double>(with_peer)) : 0;
    // The vendor guard, as dispatch applies it (the same margin).
    const double margin = SelectorOptions{}.first_use_vendor_margin;
    std::vector<double> guarded;
    double log_guarded = 0;
    for (const ProblemOutcome& o : outcomes) {
      if (!o.peer_top1_efficiency || *o.peer_top1_efficiency <= 0) continue;
      const double peer = *o.peer_top1_efficiency;
      const double e = GuardedEfficiency(o.model_timed_efficiency[i], peer, margin);
      guarded.push_back(e);
      log_guarded += std::log(e / peer);
      timed->guarded_worst_over_peer_top1 =
          timed->guarded_problems == 0 ? e / peer
                                       : std::min(timed->guarded_worst_over_peer_top1, e / peer);
      ++timed->guarded_problems;
      timed->vendor_kept += e == peer ? 1 : 0;
    }
    timed->guarded_efficiency = ComputeStats(std::move(guarded));
    timed->guarded_speedup_over_peer_top1 =
        timed->guarded_problems > 0
            ? std::exp(log_guarded / static_cast<double>(timed->guarded_problems))
            : 0;
  }
  s.top1 = hits[0] / count;
  s.top3 = hits[1] / count;
  s.top5 = hits[2] / count;
  s.top10 = hits[3] / count;
  s.ndcg_at_5 = n5 / count;
  s.ndcg_at_10 = n10 / count;
  s.problems = std::move(outcomes);
  return s;
}

EvalSummary EvaluateScores(const CandidateSet& data, std::span<const std::vector<double>> scores) {
  KSELECT_CHECK(scores.size() == data.problems.size());
  std::vector<ProblemOutcome> outcomes;
  for (size_t p = 0; p < data.problems.size(); ++p) {
    outcomes.push_back(EvaluateProblem(data.problems[p], scores[p]));
  }
  EvalSummary summary = Summarize(std::move(outcomes));
  summary.peer_names = PeerNamesOf(data.provider);
  return summary;
}

std::string EvalSummaryToJson(const EvalSummary& s, const std::string& model_dir,
                              const std::string& data_path) {
  nlohmann::json problems = nlohmann::json::array();
  for (const ProblemOutcome& o : s.problems) {
    nlohmann::json p = {{"problem", o.problem_key},
                        {"m", o.m},
                        {"n", o.n},
                        {"k", o.k},
                        {"candidates", o.candidates},
                        {"oracle_tflops", o.oracle_tflops},
                        {"selected_tflops", o.selected_tflops},
                        {"efficiency", o.efficiency},
                        {"selected_config", o.selected_config},
                        {"oracle_config", o.oracle_config},
                        {"oracle_predicted_rank", o.oracle_predicted_rank},
                        {"ndcg_at_5", o.ndcg_at_5},
                        {"ndcg_at_10", o.ndcg_at_10}};
    for (size_t i = 0; i < kTimedTopK.size(); ++i) {
      p["model_top" + std::to_string(kTimedTopK[i]) + "_timed_efficiency"] =
          o.model_timed_efficiency[i];
    }
    p["peer_top1_efficiency"] =
        o.peer_top1_efficiency ? nlohmann::json(*o.peer_top1_efficiency) : nlohmann::json();
    p["peer_best_of_8_efficiency"] = o.peer_best_of_8_efficiency
                                         ? nlohmann::json(*o.peer_best_of_8_efficiency)
                                         : nlohmann::json();
    if (s.HasPeerB()) {
      p["peer_b_top1_efficiency"] =
          o.peer_b_top1_efficiency ? nlohmann::json(*o.peer_b_top1_efficiency) : nlohmann::json();
      p["peer_b_best_of_8_efficiency"] = o.peer_b_best_of_8_efficiency
                                             ? nlohmann::json(*o.peer_b_best_of_8_efficiency)
                                             : nlohmann::json();
    }
    problems.push_back(std::move(p));
  }
  nlohmann::json slices = nlohmann::json::object();
  for (const auto& [name, stats] : s.slices) slices[name] = StatsJson(stats);
  nlohmann::json j = {{"format", "kselect.eval_report"},
                      {"format_major", 1},
                      {"tool", ToolDescription()},
                      {"model", model_dir},
                      {"data", data_path},
                      {"efficiency", StatsJson(s.model)},
                      {"ranking",
                       {{"top1", s.top1},
                        {"top3_hit", s.top3},
                        {"top5_hit", s.top5},
                        {"top10_hit", s.top10},
                        {"ndcg_at_5", s.ndcg_at_5},
                        {"ndcg_at_10", s.ndcg_at_10}}},
                      {"peers",
                       {{"peer_top1", StatsJson(s.peer_top1)},
                        {"peer_best_of_8", StatsJson(s.peer_best_of_8)},
                        {"geomean_speedup_over_peer_top1", s.speedup_over_peer_top1},
                        {"faster_than_peer_top1", s.faster_than_peer_top1},
                        {"slower_than_peer_top1", s.slower_than_peer_top1}}},
                      {"slices", slices},
                      {"problems", problems}};
  for (const EvalSummary::TimedTopK& timed : s.timed) {
    nlohmann::json t = StatsJson(timed.efficiency);
    t["geomean_speedup_over_peer_top1"] = timed.speedup_over_peer_top1;
    j["timed_at_first_use"]["model_top" + std::to_string(timed.k)] = std::move(t);
    if (timed.guarded_problems > 0) {
      nlohmann::json g = StatsJson(timed.guarded_efficiency);
      g["geomean_speedup_over_peer_top1"] = timed.guarded_speedup_over_peer_top1;
      g["worst_over_peer_top1"] = timed.guarded_worst_over_peer_top1;
      g["vendor_kept"] = timed.vendor_kept;
      g["vendor_kept_share"] =
          static_cast<double>(timed.vendor_kept) / static_cast<double>(timed.guarded_problems);
      j["timed_at_first_use_guarded"]["model_top" + std::to_string(timed.k)] = std::move(g);
    }
  }
  nlohmann::json& peers = j["peers"];
  peers["peer_name"] = s.peer_names.a.name;
  if (s.HasPeerB()) {
    // The second heuristic as a peer of its own, beside the first's keys.
    peers["peer_b_name"] = s.peer_names.b.name;
    peers["peer_b_top1"] = StatsJson(s.peer_b.top1);
    peers["peer_b_best_of_8"] = StatsJson(s.peer_b.best_of_8);
    peers["geomean_speedup_over_peer_b_top1"] = s.peer_b.speedup_over_top1;
    peers["faster_than_peer_b_top1"] = s.peer_b.faster_than_top1;
    peers["slower_than_peer_b_top1"] = s.peer_b.slower_than_top1;
  }
  return j.dump(2);
}

std::string EvalSummaryToMarkdown(const EvalSummary& s, const std::string& model_dir,
                                  const std::string& data_path) {
  std::ostringstream md;
  md << "# kselect evaluation\n\n"
     << "- model: `" << model_dir << "`\n- data: `" << data_path
     << "`\n- tool: " << ToolDescription() << "\n- problems: " << s.model.count << "\n\n"
     << "Efficiency = measured TFLOPS of the selected config / best measured config.\n\n"
     << "| selector | problems | mean | median | P10 | min |\n|---|---|---|---|---|---|\n";
  auto row = [&](const char* name, const EfficiencyStats& e) {
    md << "| " << name << " | " << e.count << " | " << Pct(e.mean) << " | " << Pct(e.median)
       << " | " << Pct(e.p10) << " | " << Pct(e.min) << " |\n";
  };
  row("kselect model", s.model);
  for (const EvalSummary::TimedTopK& timed : s.timed) {
    const std::string name =
        "kselect model, its top " + std::to_string(timed.k) + " timed at first use";
    row(name.c_str(), timed.efficiency);
    if (timed.guarded_problems > 0) {
      const std::string guarded = name + ", the peer's pick beside them (vendor guard)";
      row(guarded.c_str(), timed.guarded_efficiency);
    }
  }
  const PeerNames& names = s.peer_names;
  const std::string a_top1 = names.a.name + " (rank 1)",
                    a_best = names.a.short_name + " best of top 8";
  const std::string b_top1 = names.b.name + " (rank 1)",
                    b_best = names.b.short_name + " best of top 8";
  if (s.peer_top1.count > 0) row(a_top1.c_str(), s.peer_top1);
  if (s.peer_best_of_8.count > 0) row(a_best.c_str(), s.peer_best_of_8);
  if (s.peer_b.top1.count > 0) row(b_top1.c_str(), s.peer_b.top1);
  if (s.peer_b.best_of_8.count > 0) row(b_best.c_str(), s.peer_b.best_of_8);
  auto speedup_line = [&](const std::string& whose, double speedup, int64_t faster, int64_t slower,
                          int64_t problems) {
    char line[256];
    std::snprintf(line, sizeof(line),
                  "\nGeomean speedup of the model's picks over %s rank-1 pick: %.4fx "
                  "(faster on %lld, slower on %lld of %lld problems).\n",
                  whose.c_str(), speedup, static_cast<long long>(faster),
                  static_cast<long long>(slower), static_cast<long long>(problems));
    md << line;
  };
  if (s.speedup_problems > 0) {
    // cuBLASLt's wording stays "the peer's"; a named heuristic is named.
    const std::string whose =
        names.a.name == "peer heuristic" ? std::string("the peer's") : names.a.name + "'s";
    speedup_line(whose, s.speedup_over_peer_top1, s.faster_than_peer_top1, s.slower_than_peer_top1,
                 s.speedup_problems);
  }
  if (s.peer_b.speedup_problems > 0) {
    speedup_line(names.b.name + "'s", s.peer_b.speedup_over_top1, s.peer_b.faster_than_top1,
                 s.peer_b.slower_than_top1, s.peer_b.speedup_problems);
  }
  md << "\n| ranking | value |\n|---|---|\n"
     << "| top-1 accuracy | " << Pct(s.top1) << " |\n"
     << "| top-3 hit rate | " << Pct(s.top3) << " |\n"
     << "| top-5 hit rate | " << Pct(s.top5) << " |\n"
     << "| top-10 hit rate | " << Pct(s.top10) << " |\n"
     << "| NDCG@5 (graded) | " << Pct(s.ndcg_at_5) << " |\n"
     << "| NDCG@10 (graded) | " << Pct(s.ndcg_at_10) << " |\n";
  md << "\n## Slices\n\n| slice | problems | mean | median | P10 | min "
        "|\n|---|---|---|---|---|---|\n";
  for (const auto& [name, stats] : s.slices) row(name.c_str(), stats);
  std::vector<const ProblemOutcome*> worst;
  for (const ProblemOutcome& o : s.problems) worst.push_back(&o);
  std::sort(worst.begin(), worst.end(), [](const ProblemOutcome* a, const ProblemOutcome* b) {
    return a->efficiency < b->efficiency;
  });
  md << "\n## Worst problems\n\n| problem | efficiency | selected | oracle |\n|---|---|---|---|\n";
  for (size_t i = 0; i < worst.size() && i < 10; ++i) {
    md << "| " << worst[i]->problem_key << " | " << Pct(worst[i]->efficiency) << " | `"
       << worst[i]->selected_config << "` | `" << worst[i]->oracle_config << "` |\n";
  }
  return md.str();
}

StatusOr<ComparisonResult> CompareSummaries(const EvalSummary& old_summary,
                                            const EvalSummary& new_summary) {
  std::map<std::string, const ProblemOutcome*> old_by_key;
  for (const ProblemOutcome& o : old_summary.problems) old_by_key[o.problem_key] = &o;
  if (old_by_key.size() != new_summary.problems.size()) {
    return InvalidArgumentError("the two evaluations cover different problem sets (" +
                                std::to_string(old_by_key.size()) + " vs " +
                                std::to_string(new_summary.problems.size()) + ")");
  }
  ComparisonResult r;
  r.old_stats = old_summary.model;
  r.new_stats = new_summary.model;
  for (const ProblemOutcome& n : new_summary.problems) {
    const auto it = old_by_key.find(n.problem_key);
    if (it == old_by_key.end()) {
      return InvalidArgumentError("problem " + n.problem_key + " is only in the new evaluation");
    }
    const double delta = n.efficiency - it->second->efficiency;
    if (delta > 1e-9) {
      ++r.improved;
    } else if (delta < -1e-9) {
      ++r.degraded;
    } else {
      ++r.same;
    }
    if (n.selected_config == it->second->selected_config) ++r.same_selection;
    if (-delta > r.worst_drop) {
      r.worst_drop = -delta;
      r.worst_problem = n.problem_key;
    }
  }
  auto check = [&](const char* what, double old_v, double new_v, double tolerance) {
    if (old_v - new_v > tolerance) {
      r.failures.push_back(std::string(what) + " fell from " + Pct(old_v) + " to " + Pct(new_v) +
                           " (allowed " + Pct(tolerance) + ")");
    }
  };
  check("mean efficiency", r.old_stats.mean, r.new_stats.mean, 0.005);
  check("median efficiency", r.old_stats.median, r.new_stats.median, 0.005);
  check("P10 efficiency", r.old_stats.p10, r.new_stats.p10, 0.02);
  if (r.worst_drop > 0.10) {
    r.failures.push_back("problem " + r.worst_problem + " lost " + Pct(r.worst_drop) +
                         " efficiency (allowed 10.00%)");
  }
  r.passed = r.failures.empty();
  return r;
}

std::string ComparisonToText(const ComparisonResult& r) {
  std::ostringstream out;
  out << "metric        old       new\n";
  out << "mean      " << Pct(r.old_stats.mean) << "  " << Pct(r.new_stats.mean) << "\n";
  out << "median    " << Pct(r.old_stats.median) << "  " << Pct(r.new_stats.median) << "\n";
  out << "P10       " << Pct(r.old_stats.p10) << "  " << Pct(r.new_stats.p10) << "\n";
  out << "min       " << Pct(r.old_stats.min) << "  " << Pct(r.new_stats.min) << "\n";
  out << "problems: " << r.improved << " improved, " << r.same << " same, " << r.degraded
      << " degraded; same selection on " << r.same_selection << "\n";
  out << "largest per-problem loss: " << Pct(r.worst_drop)
      << (r.worst_problem.empty() ? "" : " (" + r.worst_problem + ")") << "\n";
  for (const std::string& f : r.failures) out << "FAIL: " << f << "\n";
  out << (r.passed ? "PASS: the new model meets the acceptance rules\n"
                   : "REJECT: the new model breaks the acceptance rules\n");
  return out.str();
}

}  // namespace kselect
