// Training: LightGBM models fitted on a candidate set with honest grouped cross-validation, the
// artifacts of a model directory (model.h lists them) and the out-of-fold predictions file.
// Part of the offline library (LightGBM, the dataset and evaluation layers); inference is model.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kselect/candidates.h"
#include "kselect/dataset.h"
#include "kselect/eval.h"
#include "kselect/features.h"
#include "kselect/model.h"
#include "kselect/status.h"

namespace kselect {

// The ranker's relevance grade of a candidate measured at `value` on a problem whose best is
// `best`: fine near the top, where selection is decided, coarse below: 30 at the best, one grade
// less per 0.5 % down to 11 at 90-90.5 %, then 1 + floor(10 * value / best) (9 for 80-90 %, ...,
// 1 under 10 %). Why (bf16 TN H200 data, 5-fold out of fold, docs/models.md): round(30 * value /
// best), 3.3 % steps, tied every config within 1.6 % of the best; 0.5 % steps down to a floor
// of 0 at 85 % made the ranker beat the regression but left every slower config equal, so it
// picked 20 %-of-best configs on a few problems; the coarse tail keeps those down.
inline constexpr int kMaxRelevanceGrade = 30;
int RelevanceGrade(double value, double best);

// LightGBM parameters kselect sets (the rest are LightGBM's defaults).
struct LightGbmParams {
  int num_leaves = 63;
  int max_depth = -1;
  double learning_rate = 0.05;
  int min_data_in_leaf = 10;
  double feature_fraction = 0.85;
  double bagging_fraction = 0.85;
  int bagging_freq = 1;  // without it LightGBM never bags (CK's subsample was inert)
  double lambda_l1 = 0.05;
  double lambda_l2 = 0.5;
  int max_bin = 255;
  // Further LightGBM parameters (`kselect train --param key=value`), in the order given: each
  // replaces the same key above or is added to the booster's and the dataset's parameter
  // strings; recorded in the manifest. Keys kselect sets from its own options (objective,
  // metric, seed, threads, ...) are refused by CheckExtraLightGbmParams.
  std::vector<std::pair<std::string, std::string>> extra;
};

// kInvalidArgument naming the key when a --param key is one kselect sets from its own options
// (objective, metric, eval_at, label_gain, seed, num_threads, tree_learner, num_machines, ...)
// or is not a plain LightGBM name.
Status CheckExtraLightGbmParams(const std::vector<std::pair<std::string, std::string>>& extra);

// Per-problem sampling of the training rows a ranker barely needs, so that millions of rows
// train on a small machine: every row at or above `keep_within` of its problem's best TFLOPS is
// kept; below that line a measured row is kept with probability `weak_fraction` and an aborted
// (estimated) row with probability `aborted_fraction`, the heuristic's picks included (the peer
// block's features are computed from the unsampled problem). Each draw is a hash of the seed,
// the problem key and the config key: the same rows on every run, whatever the files' order or
// what else they hold. The problem's best row is always kept, so its oracle and a ranker's
// grades do not move.
struct RowSampling {
  double keep_within = 0.9;
  double weak_fraction = 1;
  double aborted_fraction = 1;
  // False when both fractions are 1: every row is kept and nothing is drawn.
  bool Active() const { return weak_fraction < 1 || aborted_fraction < 1; }
};

// What a sampling kept: rows before and after, and why each kept row is in.
struct RowSamplingCounts {
  int64_t rows_before = 0, rows_after = 0;
  int64_t near_best = 0;  // rows within keep_within of their problem's best (all kept)
  int64_t weak_before = 0, weak_kept = 0;        // measured rows below the line
  int64_t aborted_before = 0, aborted_kept = 0;  // aborted rows below the line
};

// `data` with each problem's candidates sampled as `sampling` says under `seed` (order kept;
// problems, hardware and fingerprint as in `data`). Refuses (kInvalidArgument) a fraction
// outside [0, 1]. `counts` may be null.
StatusOr<CandidateSet> SampleTrainingRows(const CandidateSet& data, const RowSampling& sampling,
                                          uint64_t seed, RowSamplingCounts* counts);

struct TrainOptions {
  std::optional<Provider> provider;  // unset: the dataset's only provider
  int folds = 5;                     // GroupKFold over problem shapes; < 2 disables CV
  uint64_t seed = 42;
  int num_threads = 2;
  int max_rounds = 2000;
  int early_stopping_rounds = 50;
  // Fraction of the training shapes held out (by shape) inside each fold to pick the number of
  // rounds; the fold's own validation shapes are never used for that.
  double inner_valid_fraction = 0.2;
  std::vector<Target> targets = {Target::kTflops, Target::kLatency, Target::kBandwidth};
  Objective objective = Objective::kRegression;
  LabelTransform label_transform = LabelTransform::kLog;
  // Regression targets: row weight 1 + top_weight * (TFLOPS / problem best)^4, so the fit
  // concentrates on each problem's fast configs (0 = unweighted).
  double top_weight = 0;
  // Hard-example mining (TFLOPS regression): each fit is redone with the rows of training
  // problems whose in-sample pick is under `hard_mining_threshold` of their best weighted
  // `hard_mining_factor` times (factor <= 1: off).
  double hard_mining_factor = 1;
  double hard_mining_threshold = 0.98;
  LightGbmParams params;
  // Rows each fit trains on (the candidate table keeps every config): see RowSampling. Drawn
  // under `seed`; recorded in the manifest with its counts.
  RowSampling sampling;
  // Adds the peer block to the features: the provider heuristic's own picks (cuBLASLt's top 8
  // at run time) as features of each candidate, from the dataset's peer_rank column.
  bool peer_rank_feature = false;
  // A blend's weight on its regression member's rank percentile (the ranker's is 1 - this).
  double blend_regression_weight = kBlendRegressionWeight;
  std::string warm_start_dir;  // add trees to this model (its spec must match exactly)
  int warm_start_rounds = 200;
  std::vector<std::string> data_sources;  // the dataset files, recorded in the manifest
  // Each file's candidate fingerprint (same order as data_sources; may be empty), recorded in
  // the manifest so an out-of-fold evaluation can tell whether it scores the training data.
  std::vector<std::string> data_source_fingerprints;
  // Distributed data-parallel training (LightGBM's tree_learner=data) for data that outgrows one
  // machine: every process listed in `machines` ("host:port,host:port", this one listening on
  // `listen_port`) is given its own shard of the problems and all of them fit the same trees,
  // bin boundaries and histograms being summed over the network. It fits `max_rounds` trees
  // (early stopping would decide on each shard's own split), with no cross-validation, hard
  // mining or warm start. Empty: one process.
  std::string machines;
  int listen_port = 0;
  int network_timeout_minutes = 5;
  // Called after each fit with a one-line account (fold, trees, seconds); may be empty.
  std::function<void(const std::string&)> progress;
  // Called after every boosting round of every fit with the round, the fit's most rounds and
  // the validation metrics ("ndcg@1 0.9312 ndcg@3 0.9544", "rmse 0.0812"; "" without
  // validation rows); may be empty. `kselect train` draws progress from it and, with -v, prints
  // LightGBM-style per-iteration lines.
  std::function<void(int round, int max_rounds, const std::string& metrics)> iteration;
};

struct FoldMetrics {
  int fold = 0;
  int64_t train_rows = 0, valid_rows = 0, valid_shapes = 0;
  int best_iteration = 0;  // picked on the inner split
  double rmse_label = 0;   // on the fold's validation rows, in label space
  double r2_label = 0;
  EfficiencyStats efficiency;  // of the fold's validation problems
};

struct TrainResult {
  FeatureSpec spec;
  int64_t rows = 0, problems = 0, shapes = 0;  // rows: those the fits trained on
  std::optional<RowSamplingCounts> sampling;   // set when options.sampling was active
  std::vector<FoldMetrics> folds;
  EfficiencyStats oof_efficiency;              // out-of-fold, over all problems (when CV ran)
  std::vector<std::pair<Target, int>> rounds;  // trees of each saved model (after warm start)
  std::vector<std::pair<std::string, int>> model_files;  // each saved file and its trees
};

// Assigns each group a fold like scikit-learn's GroupKFold: groups in decreasing size order go
// to the currently lightest fold (ties: lowest fold, then group order). `group_sizes[g]` is the
// row count of group g; returns the fold of each group. Deterministic; a group is never split.
std::vector<int> GroupKFold(std::span<const int64_t> group_sizes, int folds);

// The feature spec a model of `data` is trained with, picked by the data's problems: the GEMM
// spec for GEMM providers (with the peer block when `with_peer_block`); for convolution providers
// the conv spec of the data's one direction, with a knob column per knob type the data's configs
// use, or exactly `knob_types` when given (a warm start keeps its model's columns). Refuses
// (kInvalidArgument) data mixing GEMM and convolution problems or convolution directions (one
// model per direction), and the peer block for convolutions.
StatusOr<FeatureSpec> TrainingFeatureSpec(const CandidateSet& data, bool with_peer_block,
                                          const std::vector<int32_t>* knob_types = nullptr);

// Trains every target on `dataset` and writes the model directory `out_dir` (created if
// missing). Fails with LightGBM's message on library errors, kUnavailable when kselect was
// built without LightGBM.
StatusOr<TrainResult> TrainModel(const Dataset& dataset, const TrainOptions& options,
                                 const std::string& out_dir);
// The same from an already built candidate set (BuildCandidateSet's checks are the caller's).
StatusOr<TrainResult> TrainModelOnCandidates(const CandidateSet& data, const TrainOptions& options,
                                             const std::string& out_dir);

// The out-of-fold TFLOPS predictions of a model directory (oof_predictions.csv.gz, or the plain
// oof_predictions.csv of older models): each training
// row predicted by the fold model that never saw its shape, keyed by (problem key, config key).
struct OofPredictions {
  std::string path;
  std::vector<std::string> configs;  // config keys, indexed by the rows below
  std::map<std::string, int> config_index;
  std::map<std::string, std::map<int, double>> by_problem;  // problem key -> config -> prediction
  size_t size() const;
  // The prediction of a pair, or nullopt when the file lacks it.
  std::optional<double> Find(const std::string& problem_key, const std::string& config_key) const;
};
// Reads `model_dir`/oof_predictions.csv.gz: format 2 (a "# kselect.oof_predictions 2" line, then
// `config,<index>,"<key>"` lines, `problem,"<key>",<fold>` lines each followed by its
// `<config index>,<prediction>` lines), or the older one-pair-per-line CSV. kNotFound when the
// file is missing; kParseError naming the line for malformed rows; kFailedPrecondition when the
// predictions are NaN (the model was trained without cross-validation, so it has none).
inline constexpr const char* kOofPredictionsFile = "oof_predictions.csv.gz";
inline constexpr const char* kOofFormat2Header = "# kselect.oof_predictions 2";
StatusOr<OofPredictions> ReadOofPredictions(const std::string& model_dir);

// The candidate table of a model trained on `data` (candidates.h): every distinct config of
// each problem group, so a selector knows its candidates without the data.
CandidateTable CandidateTableOf(const CandidateSet& data);
// Writes `table` to `model_dir`/candidates.json.gz (atomically).
Status WriteCandidateTable(const CandidateTable& table, const std::string& model_dir);
// Per-candidate scores of `data` from out-of-fold predictions, shaped like PredictCandidateSet's.
// Refuses (kFailedPrecondition) data with a (problem, config) pair the file lacks, saying how
// many are covered and naming the first missing one: OOF predictions exist only for the rows the
// model was trained on.
StatusOr<std::vector<std::vector<double>>> OofScores(const OofPredictions& oof,
                                                     const CandidateSet& data);

}  // namespace kselect
