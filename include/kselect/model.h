// Model inference: a trained model directory loaded and scoring (problem, kernel config) pairs,
// one regression (or ranker) per target. Inference reads LightGBM's text models with kselect's own
// tree evaluator (bit-identical to LightGBM's predictions), so it links without LightGBM, Arrow or
// the evaluation layer; training, its artifacts and cross-validation are in train.h.
//
// A model directory holds:
//   model_tflops.lgbm.gz (+ model_latency.lgbm.gz, model_bandwidth.lgbm.gz)   LightGBM text
//                              models, gzip-compressed
//   feature_spec.json          the FeatureSpec the model was trained with (read at inference)
//   train_manifest.json        data fingerprint, rows, duplicates, parameters, versions, lineage
//   cv_metrics.json            per-fold and out-of-fold metrics of the TFLOPS model
//   feature_importances.json   split and gain importances per target
//   oof_predictions.csv.gz     out-of-fold TFLOPS prediction of every training row (gzip text:
//                              a config table, then each problem's candidates by config index)
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/features.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

enum class Target { kTflops, kLatency, kBandwidth };
std::string_view TargetName(Target target);  // "tflops", "latency", "bandwidth"
StatusOr<Target> ParseTarget(std::string_view name);
// The file of a target's model in a model directory: "model_<target>.lgbm.gz".
std::string ModelFileName(Target target);

// How the TFLOPS model learns: regression on the transformed TFLOPS (predictions are TFLOPS);
// LightGBM lambdarank with one query per problem and graded relevance (RelevanceGrade in
// train.h; predictions are ranking scores only); or a blend of both: a
// regression (model_tflops.lgbm.gz) and a ranker (model_tflops_rank.lgbm.gz) trained on the same
// folds, whose per-problem rank percentiles are averaged with weight kBlendRegressionWeight on
// the regression (predictions are blend scores in (0, 1]; the regression member still gives
// TFLOPS). Latency and bandwidth models are always regressions.
enum class Objective { kRegression, kLambdarank, kBlend };
std::string_view ObjectiveName(Objective objective);  // "regression", "lambdarank", "blend"
StatusOr<Objective> ParseObjective(std::string_view name);

// Weight of the regression's rank percentile in a blend (the ranker's is 1 - this). Measured on
// the bf16 TN H200 data (docs/models.md): 0.3 beat 0.5 and 0.7 held out.
inline constexpr double kBlendRegressionWeight = 0.3;
inline constexpr const char* kBlendRankerFile = "model_tflops_rank.lgbm.gz";
// Blend scores of one problem's candidates: regression_weight * pct(regression) + (1 -
// regression_weight) * pct(ranker), pct = rank / count with ties given their average rank (like
// pandas' rank(pct=True)), so the best candidate of both members scores 1.
std::vector<double> BlendScores(std::span<const double> regression, std::span<const double> ranker,
                                double regression_weight);

// The label transform of regression models. log: relative errors weigh the same at every speed
// (measured on the bf16 TN H200 data: held-out geomean over cuBLASLt's top-1 1.025x vs 1.014x for
// log1p, whose near-linear range under 1 TFLOPS let decode-size problems be ranked badly). log1p:
// models written before the option (their manifests say "log1p ...").
enum class LabelTransform { kLog, kLog1p };
std::string_view LabelTransformName(LabelTransform transform);  // "log", "log1p"
StatusOr<LabelTransform> ParseLabelTransform(std::string_view name);
double ForwardLabel(LabelTransform transform, double value);  // target units -> label space
double InverseLabel(LabelTransform transform, double label);  // label space -> target units

// A whole file, gunzipped when it is gzip data (plain files are read as they are). Refused with
// the path in the message: anything but a readable regular file (text::CheckReadableFile), and
// more than `max_bytes` once decompressed (4 GiB by default).
StatusOr<std::string> ReadMaybeGzipFile(const std::string& path,
                                        int64_t max_bytes = int64_t{4} << 30);
// Writes `text` gzip-compressed, atomically (a temporary beside `path`, then a rename).
Status WriteGzipFile(const std::string& path, const std::string& text);

// A loaded model directory.
class Model {
 public:
  // Reads feature_spec.json and every model_*.lgbm.gz present (the TFLOPS model is required);
  // checks each model's feature count and names against the spec; the label transform comes from
  // train_manifest.json (log1p when the manifest predates the field). Corrupt files give a
  // kParseError naming the file and what is wrong with it.
  static StatusOr<Model> Load(const std::string& dir);
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const FeatureSpec& spec() const;
  // The extractor the spec names (features.h), built when the model loaded.
  const FeatureExtractor& extractor() const;
  bool Has(Target target) const;
  // True when the target's predictions order candidates but are not in the target's units (a
  // ranker, or a blend for the TFLOPS target).
  bool Ranks(Target target) const;
  // True for a blend model (regression and ranker members for TFLOPS).
  bool Blends() const;
  double blend_regression_weight() const;
  LabelTransform label_transform() const;
  // Predictions in the target's units (TFLOPS, ms, GB/s), or ranking scores for a ranker, for
  // row-major features. A blend's TFLOPS here are its regression member's (blending needs whole
  // problems: use Predict).
  StatusOr<std::vector<double>> PredictFeatures(Target target, std::span<const double> features,
                                                size_t rows) const;
  // Predictions for every candidate of one problem. `peer` (the heuristic's picks for the
  // problem) is required when the model was trained with the peer block; a problem of another
  // kind than the model's extractor describes is a kInvalidArgument.
  StatusOr<std::vector<double>> Predict(
      Target target, const Problem& problem, std::span<const KernelConfig> candidates,
      std::optional<std::span<const PeerPick>> peer = std::nullopt) const;
  // TFLOPS predictions (a regression's, or a blend's regression member's) for one problem's
  // candidates; kFailedPrecondition for a pure ranker, which has none.
  StatusOr<std::vector<double>> PredictTflops(
      const Problem& problem, std::span<const KernelConfig> candidates,
      std::optional<std::span<const PeerPick>> peer = std::nullopt) const;
  // True when the model needs the peer heuristic's picks (trained with peer_rank_feature).
  bool UsesPeerRanks() const;
  // Refuses (kSchemaMismatch) hardware other than the model's.
  Status CheckHardware(const HardwareConstants& hardware) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kselect
