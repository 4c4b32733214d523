// kselect eval: selection efficiency of a model against the oracle and the peers' heuristics;
// kselect compare: two models on the same data, judged by the acceptance rules.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "kselect/model.h"

namespace kselect::cli {
namespace {

// True when `data` is exactly the data the model was trained on (same fingerprint).
bool IsTrainingData(const std::string& model_dir, const CandidateSet& data) {
  std::ifstream in(std::filesystem::path(model_dir) / "train_manifest.json");
  const auto manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("data")) return false;
  const auto& fingerprint = manifest["data"].value("fingerprint", std::string());
  return !fingerprint.empty() && fingerprint == data.fingerprint;
}

StatusOr<EvalSummary> Evaluate(const std::string& model_dir, const Dataset& dataset,
                               bool* in_sample = nullptr) {
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(model_dir));
  KSELECT_ASSIGN_OR_RETURN(CandidateSet data, BuildCandidateSet(dataset, model.spec().provider));
  if (in_sample) *in_sample = IsTrainingData(model_dir, data);
  return EvaluateModel(model, data);
}

struct EvalArgs {
  std::string model;
  std::string data;
  bool json = false;
  std::string markdown;
};

int RunEval(const EvalArgs& args) {
  auto dataset = ReadDatasetChecked(args.data);
  if (!dataset.ok()) return ReportError("eval", dataset.status());
  bool in_sample = false;
  auto summary = Evaluate(args.model, *dataset, &in_sample);
  if (!summary.ok()) return ReportError("eval", summary.status());
  if (in_sample) {
    std::cerr << "kselect eval: note: this is the model's training data, so these figures are "
                 "in-sample; cv_metrics.json in the model directory holds the honest ones\n";
  }
  if (!args.markdown.empty()) {
    std::ofstream out(args.markdown, std::ios::trunc);
    out << EvalSummaryToMarkdown(*summary, args.model, args.data);
    if (!out.good()) return ReportError("eval", IoError("cannot write " + args.markdown));
  }
  if (args.json) {
    std::cout << EvalSummaryToJson(*summary, args.model, args.data) << "\n";
  } else {
    const EfficiencyStats& e = summary->model;
    std::printf("%lld problems: efficiency mean %.2f%%, median %.2f%%, p10 %.2f%%, min %.2f%%\n",
                static_cast<long long>(e.count), 100 * e.mean, 100 * e.median, 100 * e.p10,
                100 * e.min);
    std::printf("top-1 %.2f%%, top-5 hit %.2f%%, NDCG@10 %.2f%%\n", 100 * summary->top1,
                100 * summary->top5, 100 * summary->ndcg_at_10);
    if (summary->peer_top1.count > 0) {
      std::printf(
          "peer rank-1: mean %.2f%%, p10 %.2f%% (%lld problems); best of top 8: mean "
          "%.2f%%\n",
          100 * summary->peer_top1.mean, 100 * summary->peer_top1.p10,
          static_cast<long long>(summary->peer_top1.count), 100 * summary->peer_best_of_8.mean);
    }
  }
  return kExitOk;
}

struct CompareArgs {
  std::string old_model, new_model, data;
};

int RunCompare(const CompareArgs& args) {
  auto dataset = ReadDatasetChecked(args.data);
  if (!dataset.ok()) return ReportError("compare", dataset.status());
  auto old_summary = Evaluate(args.old_model, *dataset);
  if (!old_summary.ok())
    return ReportError("compare", old_summary.status().WithContext(args.old_model));
  auto new_summary = Evaluate(args.new_model, *dataset);
  if (!new_summary.ok())
    return ReportError("compare", new_summary.status().WithContext(args.new_model));
  auto result = CompareSummaries(*old_summary, *new_summary);
  if (!result.ok()) return ReportError("compare", result.status());
  std::cout << ComparisonToText(*result);
  return result->passed ? kExitOk : kExitFailure;
}

}  // namespace

Command EvalCommand() {
  return {"eval", "efficiency against the oracle and the peers' heuristics",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<EvalArgs>();
            app.add_option("--model", args->model, "model directory")
                ->required()
                ->check(CLI::ExistingDirectory);
            app.add_option("--data", args->data, "canonical dataset (.parquet)")
                ->required()
                ->check(CLI::ExistingFile);
            app.add_flag("--json", args->json, "print the JSON report");
            app.add_option("--markdown", args->markdown, "also write a Markdown report here");
            return [args]() { return RunEval(*args); };
          }};
}

Command CompareCommand() {
  return {"compare", "compare two models with the acceptance rules (exit 1 when rejected)",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<CompareArgs>();
            app.add_option("old", args->old_model, "baseline model directory")
                ->required()
                ->check(CLI::ExistingDirectory);
            app.add_option("new", args->new_model, "candidate model directory")
                ->required()
                ->check(CLI::ExistingDirectory);
            app.add_option("--data", args->data, "dataset both are evaluated on")
                ->required()
                ->check(CLI::ExistingFile);
            return [args]() { return RunCompare(*args); };
          }};
}

}  // namespace kselect::cli
