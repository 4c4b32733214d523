// Model entry points for builds without LightGBM (the GPU-side build): they fail clearly.
#include "kselect/model.h"

namespace kselect {
namespace {
Status NoLightGbm() {
  return UnavailableError(
      "this kselect was built without LightGBM (KSELECT_WITH_LIGHTGBM=OFF); train, evaluate "
      "and predict on a full build");
}
}  // namespace

struct Model::Impl {
  FeatureSpec spec;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;
const FeatureSpec& Model::spec() const {
  return impl_->spec;
}
const GemmFeatureExtractor& Model::extractor() const {
  KSELECT_CHECK_MSG(false, "no model can be loaded without LightGBM");
  __builtin_unreachable();
}
bool Model::Has(Target) const {
  return false;
}
bool Model::Ranks(Target) const {
  return false;
}
bool Model::Blends() const {
  return false;
}
double Model::blend_regression_weight() const {
  return kBlendRegressionWeight;
}
LabelTransform Model::label_transform() const {
  return LabelTransform::kLog;
}
StatusOr<Model> Model::Load(const std::string&) {
  return NoLightGbm();
}
Status Model::CheckHardware(const HardwareConstants&) const {
  return NoLightGbm();
}
StatusOr<std::vector<double>> Model::PredictFeatures(Target, std::span<const double>,
                                                     size_t) const {
  return NoLightGbm();
}
StatusOr<std::vector<double>> Model::Predict(Target, const GemmProblem&,
                                             std::span<const KernelConfig>,
                                             std::optional<std::span<const PeerPick>>) const {
  return NoLightGbm();
}
StatusOr<std::vector<double>> Model::PredictTflops(const GemmProblem&,
                                                   std::span<const KernelConfig>,
                                                   std::optional<std::span<const PeerPick>>) const {
  return NoLightGbm();
}
bool Model::UsesPeerRanks() const {
  return false;
}
StatusOr<TrainResult> TrainModel(const Dataset&, const TrainOptions&, const std::string&) {
  return NoLightGbm();
}
StatusOr<TrainResult> TrainModelOnCandidates(const CandidateSet&, const TrainOptions&,
                                             const std::string&) {
  return NoLightGbm();
}

}  // namespace kselect
