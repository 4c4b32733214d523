// Model inference (model.h): a model directory's LightGBM text models read by TreeEnsemble,
// kselect's own evaluator (bit-identical to LightGBM's predictions, tests/model/
// tree_ensemble_test.cpp), and scored by its compiled form, CompiledTrees (identical to
// TreeEnsemble, tests/model/compiled_trees_test.cpp), so the runtime links without LightGBM.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "core/text.h"
#include "kselect/model.h"
#include "model/compiled_trees.h"
#include "model/tree_ensemble.h"

namespace kselect {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view TargetName(Target target) {
  switch (target) {
    case Target::kTflops:
      return "tflops";
    case Target::kLatency:
      return "latency";
    case Target::kBandwidth:
      return "bandwidth";
  }
  return "tflops";
}

StatusOr<Target> ParseTarget(std::string_view name) {
  for (Target t : {Target::kTflops, Target::kLatency, Target::kBandwidth}) {
    if (TargetName(t) == name) return t;
  }
  return InvalidArgumentError("unknown target '" + std::string(name) +
                              "' (expected tflops, latency or bandwidth)");
}

std::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kRegression:
      return "regression";
    case Objective::kLambdarank:
      return "lambdarank";
    case Objective::kBlend:
      return "blend";
  }
  return "regression";
}

StatusOr<Objective> ParseObjective(std::string_view name) {
  for (Objective o : {Objective::kRegression, Objective::kLambdarank, Objective::kBlend}) {
    if (ObjectiveName(o) == name) return o;
  }
  return InvalidArgumentError("unknown objective '" + std::string(name) +
                              "' (expected regression, lambdarank or blend)");
}

namespace {

// Rank / count of each value, ties sharing their average rank (1 = the smallest).
std::vector<double> RankPercentiles(std::span<const double> values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> pct(values.size());
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
    const double average_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    for (size_t t = i; t < j; ++t) pct[order[t]] = average_rank / n;
    i = j;
  }
  return pct;
}

}  // namespace

std::vector<double> BlendScores(std::span<const double> regression, std::span<const double> ranker,
                                double regression_weight) {
  KSELECT_CHECK(regression.size() == ranker.size());
  const std::vector<double> a = RankPercentiles(regression);
  const std::vector<double> b = RankPercentiles(ranker);
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i] = regression_weight * a[i] + (1 - regression_weight) * b[i];
  }
  return out;
}

std::string ModelFileName(Target target) {
  return "model_" + std::string(TargetName(target)) + ".lgbm.gz";
}

std::string_view LabelTransformName(LabelTransform transform) {
  return transform == LabelTransform::kLog1p ? "log1p" : "log";
}

StatusOr<LabelTransform> ParseLabelTransform(std::string_view name) {
  for (LabelTransform t : {LabelTransform::kLog, LabelTransform::kLog1p}) {
    if (LabelTransformName(t) == name) return t;
  }
  return InvalidArgumentError("unknown label transform '" + std::string(name) +
                              "' (expected log or log1p)");
}

double ForwardLabel(LabelTransform transform, double value) {
  return transform == LabelTransform::kLog1p ? std::log1p(value) : std::log(value);
}

double InverseLabel(LabelTransform transform, double label) {
  return transform == LabelTransform::kLog1p ? std::expm1(label) : std::exp(label);
}

namespace {

// What inference needs from a model directory's train_manifest.json.
struct ManifestFacts {
  // "log (regression models)"; manifests from before the field, and directories without one,
  // were log1p.
  LabelTransform label_transform = LabelTransform::kLog1p;
  std::optional<double> blend_regression_weight;  // blend models only
};

StatusOr<ManifestFacts> ReadManifestFacts(const std::string& dir) {
  ManifestFacts facts;
  const fs::path path = fs::path(dir) / "train_manifest.json";
  if (!fs::exists(path)) return facts;
  KSELECT_ASSIGN_OR_RETURN(const std::string contents, text::ReadFile(path.string()));
  json manifest = json::parse(contents, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object()) {
    return ParseError(path.string() + ": not a JSON object");
  }
  if (const auto it = manifest.find("target_transform"); it != manifest.end()) {
    if (!it->is_string()) return ParseError(path.string() + ": target_transform is not a string");
    const std::string value = it->get<std::string>();
    auto transform = ParseLabelTransform(value.substr(0, value.find(' ')));
    if (!transform.ok()) return transform.status().WithContext(path.string());
    facts.label_transform = *transform;
  }
  if (const auto it = manifest.find("blend"); it != manifest.end() && !it->is_null()) {
    const auto weight = it->is_object() ? it->find("regression_weight") : it->end();
    if (weight == it->end() || !weight->is_number() || !(weight->get<double>() >= 0) ||
        !(weight->get<double>() <= 1)) {
      return ParseError(path.string() + ": blend.regression_weight is not a number in [0, 1]");
    }
    facts.blend_regression_weight = weight->get<double>();
  }
  return facts;
}

// Loads a model file and checks it against the spec's features.
StatusOr<TreeEnsemble> LoadCheckedTrees(const fs::path& path, const FeatureSpec& spec) {
  KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(path.string()));
  StatusOr<TreeEnsemble> trees = TreeEnsemble::FromLightGbmText(text, path.string());
  if (!trees.ok()) {
    // The evaluator's message names the file and what is wrong; malformed text stays a
    // kParseError, a model it cannot reproduce keeps its own code.
    return Status(
        trees.status().code(),
        trees.status().message() + " (not a readable LightGBM model: retrain or restore the file)");
  }
  if (static_cast<size_t>(trees->num_features()) != spec.features.size()) {
    return SchemaMismatchError(
        path.string() + ": the model takes " + std::to_string(trees->num_features()) +
        " features but feature_spec.json lists " + std::to_string(spec.features.size()));
  }
  if (trees->feature_names() != spec.Names()) {
    return SchemaMismatchError(path.string() +
                               ": the model's feature names differ from feature_spec.json");
  }
  return trees;
}

// The model text itself says how it was trained (its header's "objective=lambdarank ...").
bool IsRanker(const TreeEnsemble& trees) {
  return trees.objective().starts_with("lambdarank");
}

// The trees compiled for scoring (TreeEnsemble stays the parser and the reference).
StatusOr<CompiledTrees> Compiled(const TreeEnsemble& trees, const fs::path& path) {
  StatusOr<CompiledTrees> compiled = CompiledTrees::Compile(trees);
  if (!compiled.ok()) return compiled.status().WithContext(path.string());
  return compiled;
}

}  // namespace

struct Model::Impl {
  FeatureSpec spec;
  std::unique_ptr<FeatureExtractor> extractor;
  std::map<Target, CompiledTrees> models;
  std::set<Target> rankers;
  LabelTransform label_transform = LabelTransform::kLog1p;
  std::optional<CompiledTrees> blend_ranker;  // a blend's ranker (its regression: models[kTflops])
  double blend_regression_weight = kBlendRegressionWeight;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const FeatureSpec& Model::spec() const {
  return impl_->spec;
}
const FeatureExtractor& Model::extractor() const {
  return *impl_->extractor;
}
bool Model::Has(Target target) const {
  return impl_->models.count(target) > 0;
}
bool Model::Ranks(Target target) const {
  return impl_->rankers.count(target) > 0 || (target == Target::kTflops && Blends());
}
bool Model::Blends() const {
  return impl_->blend_ranker.has_value();
}
double Model::blend_regression_weight() const {
  return impl_->blend_regression_weight;
}
LabelTransform Model::label_transform() const {
  return impl_->label_transform;
}

StatusOr<Model> Model::Load(const std::string& dir) {
  if (!fs::is_directory(dir)) return NotFoundError(dir + ": no such model directory");
  auto impl = std::make_unique<Impl>();
  KSELECT_ASSIGN_OR_RETURN(impl->spec,
                           LoadFeatureSpec((fs::path(dir) / "feature_spec.json").string()));
  auto extractor = CreateFeatureExtractor(impl->spec);
  if (!extractor.ok()) return extractor.status().WithContext(dir);
  impl->extractor = std::move(*extractor);
  KSELECT_ASSIGN_OR_RETURN(const ManifestFacts facts, ReadManifestFacts(dir));
  impl->label_transform = facts.label_transform;
  for (Target t : {Target::kTflops, Target::kLatency, Target::kBandwidth}) {
    const fs::path path = fs::path(dir) / ModelFileName(t);
    if (!fs::exists(path)) {
      if (t == Target::kTflops)
        return NotFoundError(path.string() + ": the TFLOPS model is missing");
      continue;
    }
    KSELECT_ASSIGN_OR_RETURN(const TreeEnsemble trees, LoadCheckedTrees(path, impl->spec));
    if (IsRanker(trees)) impl->rankers.insert(t);
    KSELECT_ASSIGN_OR_RETURN(CompiledTrees compiled, Compiled(trees, path));
    impl->models.emplace(t, std::move(compiled));
  }
  // A blend: the manifest says so and the ranker member lies beside the regression.
  const fs::path ranker_path = fs::path(dir) / kBlendRankerFile;
  if (facts.blend_regression_weight.has_value() != fs::exists(ranker_path)) {
    return SchemaMismatchError(
        dir + ": " +
        (fs::exists(ranker_path)
             ? std::string(kBlendRankerFile) + " is there but the manifest describes no blend"
             : "the manifest describes a blend but " + std::string(kBlendRankerFile) +
                   " is missing"));
  }
  if (facts.blend_regression_weight) {
    if (impl->rankers.count(Target::kTflops)) {
      return SchemaMismatchError(dir + ": a blend's TFLOPS model must be a regression");
    }
    KSELECT_ASSIGN_OR_RETURN(const TreeEnsemble ranker, LoadCheckedTrees(ranker_path, impl->spec));
    if (!IsRanker(ranker)) {
      return SchemaMismatchError(ranker_path.string() + ": not a lambdarank model");
    }
    KSELECT_ASSIGN_OR_RETURN(CompiledTrees compiled, Compiled(ranker, ranker_path));
    impl->blend_ranker.emplace(std::move(compiled));
    impl->blend_regression_weight = *facts.blend_regression_weight;
  }
  return Model(std::move(impl));
}

Status Model::CheckHardware(const HardwareConstants& hardware) const {
  const std::string d = DescribeHardwareDifference(impl_->spec.hardware, hardware);
  if (d.empty()) return Status::Ok();
  return SchemaMismatchError("the model was trained for other hardware: " + d +
                             "; use a model trained on this device or retrain");
}

StatusOr<std::vector<double>> Model::PredictFeatures(Target target,
                                                     std::span<const double> features,
                                                     size_t rows) const {
  const auto it = impl_->models.find(target);
  if (it == impl_->models.end()) {
    return NotFoundError("the model has no " + std::string(TargetName(target)) + " model");
  }
  KSELECT_CHECK(features.size() == rows * impl_->spec.features.size());
  std::vector<double> out(rows);
  if (rows == 0) return out;
  it->second.Predict(features.data(), rows, out.data());
  // Regression models are trained on the transformed target; a ranker's scores stay scores.
  if (impl_->rankers.count(target) == 0) {
    for (double& v : out) v = InverseLabel(impl_->label_transform, v);
  }
  return out;
}

bool Model::UsesPeerRanks() const {
  return impl_->extractor->UsesPeerRanks();
}

StatusOr<std::vector<double>> Model::Predict(Target target, const Problem& problem,
                                             std::span<const KernelConfig> candidates,
                                             std::optional<std::span<const PeerPick>> peer) const {
  std::vector<double> x;
  KSELECT_RETURN_IF_ERROR(impl_->extractor->ExtractBatch(problem, candidates, &x, peer));
  const bool blended = target == Target::kTflops && Blends();
  // A blend that gives its regression no weight orders by the ranker alone: the regression's
  // trees (the larger member) are not run.
  const bool regression_weighed = !blended || impl_->blend_regression_weight > 0;
  std::vector<double> predicted(candidates.size(), 0.0);
  if (regression_weighed) {
    KSELECT_ASSIGN_OR_RETURN(predicted, PredictFeatures(target, x, candidates.size()));
  }
  if (!blended) return predicted;
  std::vector<double> ranker_scores(candidates.size());
  if (!candidates.empty()) {
    impl_->blend_ranker->Predict(x.data(), candidates.size(), ranker_scores.data());
  }
  return BlendScores(predicted, ranker_scores, impl_->blend_regression_weight);
}

StatusOr<std::vector<double>> Model::PredictTflops(
    const Problem& problem, std::span<const KernelConfig> candidates,
    std::optional<std::span<const PeerPick>> peer) const {
  if (impl_->rankers.count(Target::kTflops)) {
    return FailedPreconditionError(
        "a lambdarank model predicts scores, not TFLOPS (train a regression or a blend)");
  }
  std::vector<double> x;
  KSELECT_RETURN_IF_ERROR(impl_->extractor->ExtractBatch(problem, candidates, &x, peer));
  return PredictFeatures(Target::kTflops, x, candidates.size());
}

}  // namespace kselect
