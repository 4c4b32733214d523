// The parts of model.h that do not touch LightGBM: target names, GroupKFold, evaluation.
#include <algorithm>
#include <numeric>

#include "kselect/model.h"

namespace kselect {

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
  return objective == Objective::kLambdarank ? "lambdarank" : "regression";
}

StatusOr<Objective> ParseObjective(std::string_view name) {
  for (Objective o : {Objective::kRegression, Objective::kLambdarank}) {
    if (ObjectiveName(o) == name) return o;
  }
  return InvalidArgumentError("unknown objective '" + std::string(name) +
                              "' (expected regression or lambdarank)");
}

std::vector<int> GroupKFold(std::span<const int64_t> group_sizes, int folds) {
  KSELECT_CHECK(folds >= 1);
  std::vector<size_t> order(group_sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return group_sizes[a] > group_sizes[b]; });
  std::vector<int64_t> load(static_cast<size_t>(folds), 0);
  std::vector<int> fold_of(group_sizes.size(), 0);
  for (size_t g : order) {
    const int lightest =
        static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    fold_of[g] = lightest;
    load[static_cast<size_t>(lightest)] += group_sizes[g];
  }
  return fold_of;
}

StatusOr<EvalSummary> EvaluateModel(const Model& model, const CandidateSet& data) {
  if (data.provider != model.spec().provider) {
    return SchemaMismatchError("the model is for provider " +
                               std::string(ProviderName(model.spec().provider)) +
                               " but the data is " + std::string(ProviderName(data.provider)));
  }
  KSELECT_RETURN_IF_ERROR(model.CheckHardware(data.hardware));
  std::vector<ProblemOutcome> outcomes;
  std::vector<KernelConfig> configs;
  for (const ProblemCandidates& p : data.problems) {
    configs.clear();
    for (const Candidate& c : p.candidates) configs.push_back(c.config);
    KSELECT_ASSIGN_OR_RETURN(std::vector<double> scores,
                             model.Predict(Target::kTflops, p.problem, configs));
    outcomes.push_back(EvaluateProblem(p, scores));
  }
  return Summarize(std::move(outcomes));
}

}  // namespace kselect
