// Training entry points for builds without LightGBM (the GPU-side build): they fail clearly.
// Inference (model.cpp) needs no LightGBM and works in every build.
#include "kselect/train.h"

namespace kselect {
namespace {
Status NoLightGbm() {
  return UnavailableError(
      "this kselect was built without LightGBM (KSELECT_WITH_LIGHTGBM=OFF); train on a full "
      "build");
}
}  // namespace

StatusOr<TrainResult> TrainModel(const Dataset&, const TrainOptions&, const std::string&) {
  return NoLightGbm();
}
StatusOr<TrainResult> TrainModelOnCandidates(const CandidateSet&, const TrainOptions&,
                                             const std::string&) {
  return NoLightGbm();
}

}  // namespace kselect
