// A model's predictions over a candidate set and their evaluation (eval.h): the bridge between
// inference (model.h) and the offline evaluation layer.
#include "kselect/eval.h"

namespace kselect {

StatusOr<std::vector<std::vector<double>>> PredictCandidateSet(const Model& model,
                                                               const CandidateSet& data,
                                                               Target target,
                                                               const ProgressCallback& progress) {
  if (data.provider != model.spec().provider) {
    return SchemaMismatchError("the model is for provider " +
                               std::string(ProviderName(model.spec().provider)) +
                               " but the data is " + std::string(ProviderName(data.provider)));
  }
  KSELECT_RETURN_IF_ERROR(model.CheckHardware(data.hardware));
  std::vector<std::vector<double>> scores;
  std::vector<KernelConfig> configs;
  for (const ProblemCandidates& p : data.problems) {
    configs.clear();
    for (const Candidate& c : p.candidates) configs.push_back(c.config);
    const std::vector<PeerPick> peer = PeerPicksOf(p);
    KSELECT_ASSIGN_OR_RETURN(std::vector<double> predictions,
                             model.Predict(target, p.problem, configs, peer));
    scores.push_back(std::move(predictions));
    if (progress) {
      progress({.done = static_cast<int64_t>(scores.size()),
                .total = static_cast<int64_t>(data.problems.size()),
                .unit = "problems"});
    }
  }
  return scores;
}

StatusOr<EvalSummary> EvaluateModel(const Model& model, const CandidateSet& data) {
  KSELECT_ASSIGN_OR_RETURN(std::vector<std::vector<double>> scores,
                           PredictCandidateSet(model, data, Target::kTflops));
  return EvaluateScores(data, scores);
}

}  // namespace kselect
