// Evaluation of a kernel selector against the oracle (the best measured config of each problem)
// and against the peer heuristic recorded in the dataset (cuBLASLt's own ranking, peer_rank).
//
// Per problem (a GEMM shape with its layout and dtypes):
//   efficiency   = measured TFLOPS of the selected config / oracle TFLOPS
//   top-1        = the selected config is the oracle's
//   top-k hit    = the oracle's config is among the k best predicted
//   NDCG@k       = graded: relevance of a config = its TFLOPS / oracle TFLOPS; DCG over the
//                  predicted order, divided by the DCG of the measured order (1 = perfect)
// Peers: "peer_top1" = the config the peer ranks 1; "peer_best_of_8" = the best measured of the
// peer's top 8 (what "autotune the heuristic's top 8" gets). Where rows carry peer_rank_b (a
// provider's second heuristic, cuDNN's mode B), "peer_b_top1" and "peer_b_best_of_8" are the same
// for it, reported as a peer of its own.
// Timed at first use: "model_top2_timed" ... "model_top20_timed" = the best measured of the
// model's 2 (3, 5, 10, 20; kTimedTopK) best-ranked configs, what the selector gets when it times
// them the first time it runs a problem (SelectorOptions::time_top_k), with this data's
// measurements standing for that timing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kselect/dataset.h"
#include "kselect/features.h"
#include "kselect/kernel_config.h"
#include "kselect/model.h"
#include "kselect/problem.h"
#include "kselect/progress.h"
#include "kselect/selector.h"
#include "kselect/status.h"

namespace kselect {

// One measured config of a problem.
struct Candidate {
  KernelConfig config;
  std::string config_key;
  double tflops = 0;
  double latency_ms = 0;
  double bandwidth_gb_s = 0;
  std::optional<int32_t> peer_rank;
  std::optional<int32_t> peer_rank_b;  // rank in the provider's second heuristic, if it has one
  bool estimated = false;              // an aborted row: its latency comes from 1-2 timed batches
};

// All valid measured configs of one problem.
struct ProblemCandidates {
  std::string problem_key;  // ProblemToString(): shape, layout, dtypes (a conv: its direction too)
  // The GroupKFold key, layout and dtype deliberately left out: "m,n,k,batch" for a GEMM, the
  // geometry (N, C, K, G, sizes, filter, stride, pad, dilation) for a convolution.
  std::string shape_key;
  Problem problem;
  std::vector<Candidate> candidates;
};

// The valid and the aborted (estimated) rows of one provider (GEMM or convolution), grouped by
// problem, with the hardware they share.
struct CandidateSet {
  Provider provider = Provider::kCublasLt;
  HardwareConstants hardware;
  std::vector<ProblemCandidates> problems;  // sorted by problem_key; candidates by config_key
  int64_t rows_read = 0;
  int64_t rows_used = 0;
  int64_t rows_skipped = 0;    // invalid, other provider, or non-positive TFLOPS
  int64_t rows_estimated = 0;  // aborted rows used with their early-abort latency
  std::string fingerprint;     // FNV-1a 64 over the used rows' keys and figures, hex
  size_t NumCandidates() const;
};

// The peer heuristic's picks among the problem's candidates (those with a peer_rank), best
// first, as the peer block of a feature spec takes them.
std::vector<PeerPick> PeerPicksOf(const ProblemCandidates& problem);

// Builds the set. `provider` picks the provider; when unset, the data must hold exactly one (and
// not GEMM and convolution rows together).
// Refuses (kFailedPrecondition) duplicated (problem, config) rows, naming the first and the
// count, and rows from more than one hardware.
StatusOr<CandidateSet> BuildCandidateSet(const Dataset& dataset, std::optional<Provider> provider);
// The same over rows streamed from a source (a file: RowsOfFile), holding only the candidates.
// Without `provider` the source is read twice.
StatusOr<CandidateSet> BuildCandidateSet(const RowSource& rows, std::optional<Provider> provider);

// The vendor guard's decision from measured efficiencies: the peer's pick (`peer`) unless the
// best of the timed candidates (`best`) is faster by more than `margin` (a fraction).
inline double GuardedEfficiency(double best, double peer, double margin) {
  return ReplacesVendorPick(best / peer, margin) ? best : peer;
}

// How many of the model's best-ranked configs "timed at first use" figures time (the selector's
// SelectorOptions::time_top_k): the best measured of them is what dispatch would run. 10 and 20
// show what timing deeper buys (cuDNN's viable engine configs of a layer number 15-20).
inline constexpr std::array<int, 5> kTimedTopK = {2, 3, 5, 10, 20};

// The outcome of one problem given a score per candidate (higher = better).
struct ProblemOutcome {
  std::string problem_key;
  int64_t m = 0, n = 0, k = 0;  // a GEMM's dimensions (0 for other problems)
  size_t candidates = 0;
  double oracle_tflops = 0;
  double selected_tflops = 0;
  double efficiency = 0;
  std::string selected_config, oracle_config;  // ConfigKey: the on-disk identity
  std::string selected_name, oracle_name;      // DescribeConfig: as `kselect predict` prints
  int oracle_predicted_rank = 0;  // 1-based rank of the oracle config in the predicted order
  double ndcg_at_5 = 0, ndcg_at_10 = 0;
  std::optional<double> peer_top1_efficiency;
  std::optional<double> peer_best_of_8_efficiency;
  std::optional<double> peer_b_top1_efficiency;  // the second heuristic's, where recorded
  std::optional<double> peer_b_best_of_8_efficiency;
  // Per kTimedTopK entry: the best measured of the model's top k (timing them at first use),
  // / oracle.
  std::array<double, kTimedTopK.size()> model_timed_efficiency{};
};
ProblemOutcome EvaluateProblem(const ProblemCandidates& problem, std::span<const double> scores);

// Graded NDCG@k of `scores`' order with relevance = tflops / oracle tflops.
double NdcgAtK(std::span<const double> tflops, std::span<const double> scores, int k);

// Distribution of efficiencies over problems.
struct EfficiencyStats {
  int64_t count = 0;
  double mean = 0, median = 0, p10 = 0, min = 0;
};

// What reports call a provider's two heuristics: `name` heads a rank-1 row ("peer heuristic
// (rank 1)"), `short_name` a best-of-8 row ("peer best of top 8"). cuDNN: "cudnn heuristic mode
// A" and "mode B"; providers with one heuristic keep "peer heuristic" and name the second
// generically.
struct PeerName {
  std::string name, short_name;
};
struct PeerNames {
  PeerName a, b;
};
PeerNames PeerNamesOf(Provider provider);

// One heuristic's figures over the problems where it ranked candidates.
struct PeerSummary {
  EfficiencyStats top1;       // over problems with a rank-1 row
  EfficiencyStats best_of_8;  // over problems with ranked rows
  // Geomean over problems with a rank-1 row of model efficiency / its rank-1 efficiency, and how
  // often that is above/below 1.
  double speedup_over_top1 = 0;
  int64_t speedup_problems = 0, faster_than_top1 = 0, slower_than_top1 = 0;
};
// Linear-interpolation quantiles (numpy's default). Empty input gives count 0 and zeros.
EfficiencyStats ComputeStats(std::vector<double> values);

struct EvalSummary {
  EfficiencyStats model;
  double top1 = 0, top3 = 0, top5 = 0, top10 = 0;
  double ndcg_at_5 = 0, ndcg_at_10 = 0;
  EfficiencyStats peer_top1;       // over problems with a peer rank-1 row
  EfficiencyStats peer_best_of_8;  // over problems with peer-ranked rows
  // Geomean over problems with a peer rank-1 row of model efficiency / peer rank-1 efficiency
  // (= the speedup of the model's picks over the peer's own), and how often it is above/below 1.
  double speedup_over_peer_top1 = 0;
  int64_t speedup_problems = 0, faster_than_peer_top1 = 0, slower_than_peer_top1 = 0;
  // The provider's second heuristic (peer_rank_b), empty (counts 0) when no row carries a rank.
  PeerSummary peer_b;
  // Per kTimedTopK entry: the model's top k timed at first use (the best measured of them), with
  // their geomean over the peer's rank-1 pick (0 without peer ranks).
  struct TimedTopK {
    int k = 0;
    EfficiencyStats efficiency;
    double speedup_over_peer_top1 = 0;
    // With the vendor guard (SelectorOptions::first_use_vendor_margin), over problems with a
    // peer rank-1 row: the peer's pick timed beside the top k and kept unless the best of them is
    // faster by more than the margin. Its efficiency, geomean and worst ratio over the peer's
    // pick, and how often the pick was kept.
    EfficiencyStats guarded_efficiency;
    double guarded_speedup_over_peer_top1 = 0;
    double guarded_worst_over_peer_top1 = 0;
    int64_t guarded_problems = 0, vendor_kept = 0;
  };
  std::array<TimedTopK, kTimedTopK.size()> timed = [] {
    std::array<TimedTopK, kTimedTopK.size()> entries{};
    for (size_t i = 0; i < kTimedTopK.size(); ++i) entries[i].k = kTimedTopK[i];
    return entries;
  }();
  bool HasPeerB() const { return peer_b.top1.count > 0 || peer_b.best_of_8.count > 0; }
  // The heuristics' names in reports (EvaluateScores sets them from the data's provider).
  PeerNames peer_names = PeerNamesOf(Provider::kCublasLt);
  // Model efficiency per slice of problems (ck_tile_heuristics.md §4.4 thresholds), keyed
  // "m: tiny (<32)", "m: small (32-255)", "m: medium (256-4095)", "m: large (>=4096)",
  // "k: shallow (<512)", "k: medium (512-4095)", "k: deep (>=4096)". Efficiency stays relative
  // to each problem's overall oracle.
  std::map<std::string, EfficiencyStats> slices;
  std::vector<ProblemOutcome> problems;
};
// The slice names of a problem: one M family and one K regime; none for other problems than
// GEMMs (m or k is 0).
std::vector<std::string> SlicesOf(int64_t m, int64_t k);
EvalSummary Summarize(std::vector<ProblemOutcome> outcomes);
// Evaluates every problem of `data` from per-candidate scores: scores[p][c] belongs to
// data.problems[p].candidates[c] (a model's predictions, or its out-of-fold ones).
EvalSummary EvaluateScores(const CandidateSet& data, std::span<const std::vector<double>> scores);

// The target's predictions for every candidate of `data`: result[p][c] belongs to
// data.problems[p].candidates[c]. Refuses data of another provider or hardware. `progress`
// counts "problems" predicted.
StatusOr<std::vector<std::vector<double>>> PredictCandidateSet(
    const Model& model, const CandidateSet& data, Target target,
    const ProgressCallback& progress = {});

// Scores every candidate set problem with the model's TFLOPS predictions and summarises.
StatusOr<EvalSummary> EvaluateModel(const Model& model, const CandidateSet& data);

// JSON (machine-readable, with per-problem rows) and Markdown (a report for people).
std::string EvalSummaryToJson(const EvalSummary& summary, const std::string& model_dir,
                              const std::string& data_path);
std::string EvalSummaryToMarkdown(const EvalSummary& summary, const std::string& model_dir,
                                  const std::string& data_path);

// The acceptance rules of a model comparison on the same problems (ck_tile_heuristics.md §4.6):
// mean and median efficiency within 0.5 points, P10 within 2 points, and no problem losing more
// than 10 points.
struct ComparisonResult {
  bool passed = false;
  EfficiencyStats old_stats, new_stats;
  int64_t improved = 0, same = 0, degraded = 0;
  int64_t same_selection = 0;
  double worst_drop = 0;  // largest per-problem efficiency loss (old - new), >= 0
  std::string worst_problem;
  std::vector<std::string> failures;  // one line per broken rule
};
// Both summaries must cover the same problems (by key); otherwise kInvalidArgument.
StatusOr<ComparisonResult> CompareSummaries(const EvalSummary& old_summary,
                                            const EvalSummary& new_summary);
std::string ComparisonToText(const ComparisonResult& result);

// ---------------------------------------------------------------------------------------------
// Offline evaluation of a cross-provider decision on head-to-head files written with --screened:
// per problem, the decision over cuBLASLt's pick and the screened tile configs, scored with the
// screened times of the same process.
struct CrossEvaluationRow {
  GemmProblem problem;
  bool challenger_chosen = false;
  double predicted_gain = 0;
  double pick_ms = 0;            // cuBLASLt's pick, screened
  double decision_ms = 0;        // the decision, screened
  double challenger_top_ms = 0;  // the challenger model's top config, screened (0: none)
  double best_ms = 0;            // fastest screened config of either provider
  double reference_predicted_tflops = 0, reference_measured_tflops = 0;
  double challenger_predicted_tflops = 0, challenger_measured_tflops = 0;
};
struct CrossEvaluation {
  std::vector<CrossEvaluationRow> rows;
  double geomean_decision_over_pick = 0;        // the figure the issue asks for
  double geomean_challenger_top_over_pick = 0;  // always the tile model's top config
  double geomean_best_over_pick = 0;            // the ceiling (best of both, screened)
  double share_challenger_chosen = 0;
  double worst_decision_over_pick = 0;
};
class CrossProviderSelector;
StatusOr<CrossEvaluation> EvaluateCrossProvider(const CrossProviderSelector& selector,
                                                std::span<const std::string> head_to_head_files);
std::string CrossEvaluationJson(const CrossEvaluation& evaluation, const std::string& model_dir,
                                std::span<const std::string> sources);

}  // namespace kselect
