// kselect eval: selection efficiency of a model against the oracle and the peers' heuristics;
// kselect compare: two models on the same data, judged by the acceptance rules.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "core/text.h"
#include "kselect/eval_report.h"
#include "kselect/selector.h"
#include "kselect/train.h"

namespace kselect::cli {
namespace {

// The model's train_manifest.json["data"], or null when it cannot be read.
nlohmann::json ManifestData(const std::string& model_dir) {
  std::ifstream in(std::filesystem::path(model_dir) / "train_manifest.json");
  const auto manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("data")) return nullptr;
  return manifest["data"];
}

// True when `data` is exactly the data the model was trained on (same fingerprint).
bool IsTrainingData(const std::string& model_dir, const CandidateSet& data) {
  const nlohmann::json manifest_data = ManifestData(model_dir);
  if (!manifest_data.is_object()) return false;
  const auto& fingerprint = manifest_data.value("fingerprint", std::string());
  return !fingerprint.empty() && fingerprint == data.fingerprint;
}

// True when the manifest records its files' fingerprints and `data` is none of them: the
// out-of-fold predictions are then scored against other measurements (a re-measured file, say)
// than the folds trained on. Models trained before fingerprints were recorded are not judged.
bool IsOtherThanTrainingFiles(const std::string& model_dir, const CandidateSet& data) {
  const nlohmann::json manifest_data = ManifestData(model_dir);
  if (!manifest_data.is_object() || !manifest_data.contains("source_fingerprints")) return false;
  const nlohmann::json& fingerprints = manifest_data["source_fingerprints"];
  if (!fingerprints.is_array() || fingerprints.empty()) return false;
  for (const auto& f : fingerprints) {
    if (f.is_string() && f.get<std::string>() == data.fingerprint) return false;
  }
  return true;
}

void NoteOtherData(const char* command, const std::string& model_dir,
                   const std::string& data_path) {
  std::cerr << "kselect " << command << ": note: " << data_path << " is not one of the files "
            << model_dir
            << " was trained on (its fingerprint is none of train_manifest.json's "
               "source_fingerprints): the out-of-fold predictions are scored against other "
               "measurements than the folds trained on\n";
}

// One model's evaluation on a dataset, with what the reports need besides the summary.
struct Evaluation {
  EvalSummary summary;
  PredictionScatter scatter;
  bool in_sample = false;                  // `data` is exactly the model's training data
  bool other_than_training_files = false;  // out of fold: see IsOtherThanTrainingFiles
};

// `rows` reporting its progress as "<label> (rows)": every 1024 rows read, and the last.
RowSource WithReadProgress(RowSource rows, int64_t total_rows, const std::string& label) {
  return [rows = std::move(rows), total_rows,
          label](const std::function<Status(const DatasetRow&)>& visit) -> Status {
    const ProgressCallback progress = ShowProgress(label);
    int64_t read = 0;
    return rows([&](const DatasetRow& row) -> Status {
      KSELECT_RETURN_IF_ERROR(visit(row));
      if (++read % 1024 == 0 || read == total_rows) {
        progress({.done = read, .total = total_rows, .unit = "rows"});
      }
      return Status::Ok();
    });
  };
}

// With `out_of_fold`, the model's oof_predictions.csv replaces its predictions (refused when it
// does not cover the data); otherwise the model predicts every candidate. `command` labels the
// progress lines ("eval").
StatusOr<Evaluation> Evaluate(const std::string& model_dir, const RowSource& rows, bool out_of_fold,
                              const std::string& command) {
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(model_dir));
  KSELECT_ASSIGN_OR_RETURN(CandidateSet data, BuildCandidateSet(rows, model.spec().provider));
  std::vector<std::vector<double>> scores;
  if (out_of_fold) {
    KSELECT_RETURN_IF_ERROR(model.CheckHardware(data.hardware));
    KSELECT_ASSIGN_OR_RETURN(OofPredictions oof, ReadOofPredictions(model_dir));
    KSELECT_ASSIGN_OR_RETURN(scores, OofScores(oof, data));
  } else {
    KSELECT_ASSIGN_OR_RETURN(scores, PredictCandidateSet(model, data, Target::kTflops,
                                                         ShowProgress(command + ": predicting")));
  }
  Evaluation evaluation;
  evaluation.in_sample = !out_of_fold && IsTrainingData(model_dir, data);
  evaluation.other_than_training_files = out_of_fold && IsOtherThanTrainingFiles(model_dir, data);
  evaluation.scatter = BuildPredictionScatter(data, scores, model.Ranks(Target::kTflops));
  evaluation.summary = EvaluateScores(data, scores);
  return evaluation;
}

struct EvalArgs {
  std::vector<int> selector_stages;  // --selector: first-stage budgets to evaluate
  std::string model;
  std::string data;
  bool json = false;
  std::string markdown;
  std::string html;
  size_t worst = 20;
  bool out_of_fold = false;
};

// The selector's own decisions on measured data, once per first-stage budget: the efficiency of
// each problem's pick (measured TFLOPS / the problem's best), how often the pick equals the
// model's pick over the measured candidates (what the plain eval scores), how many picks the
// data did not measure, and the CPU time of a cold decision.
StatusOr<int> RunSelectorEval(const EvalArgs& args, const RowSource& rows) {
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(args.model));
  KSELECT_ASSIGN_OR_RETURN(CandidateSet data, BuildCandidateSet(rows, model.spec().provider));
  KSELECT_ASSIGN_OR_RETURN(auto full_scores,
                           PredictCandidateSet(model, data, Target::kTflops,
                                               ShowProgress("eval --selector: predicting")));
  std::printf("selector on %s: %zu problems (CanImplement not checked: the data says what ran)\n",
              args.data.c_str(), data.problems.size());
  std::printf("%11s  %8s  %8s  %8s  %8s  %10s  %10s  %9s  %9s\n", "first_stage", "mean", "median",
              "p10", "min", "same_pick", "unmeasured", "scored", "us/select");
  for (const int stage : args.selector_stages) {
    SelectorOptions options;
    options.top_k = 1;
    options.first_stage_candidates = stage;
    options.check_can_implement = false;
    options.query_heuristic = false;
    options.hardware = data.hardware;
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<Selector> selector,
                             Selector::Open(args.model, options));
    std::vector<double> efficiency;
    size_t same = 0, unmeasured = 0, scored = 0;
    double seconds = 0;
    for (size_t p = 0; p < data.problems.size(); ++p) {
      const ProblemCandidates& problem = data.problems[p];
      const std::vector<PeerPick> picks = PeerPicksOf(problem);
      std::optional<std::span<const PeerPick>> peer;
      if (model.UsesPeerRanks()) peer = picks;
      const auto start = std::chrono::steady_clock::now();
      KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector->Select(problem.problem, peer));
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      scored += selection->candidates_scored;
      const std::string pick = ConfigKey(selection->ranked.front().config);
      const std::vector<double>& scores = full_scores[p];
      const size_t best =
          static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
      if (problem.candidates[best].config_key == pick) ++same;
      double oracle = 0;
      std::optional<double> picked;
      for (const Candidate& c : problem.candidates) {
        oracle = std::max(oracle, c.tflops);
        if (c.config_key == pick) picked = c.tflops;
      }
      if (!picked) {
        ++unmeasured;
        continue;
      }
      efficiency.push_back(*picked / oracle);
    }
    const EfficiencyStats stats = ComputeStats(efficiency);
    const double n = static_cast<double>(data.problems.size());
    std::printf("%11d  %7.2f%%  %7.2f%%  %7.2f%%  %7.2f%%  %9.2f%%  %10zu  %9.0f  %9.1f\n", stage,
                100 * stats.mean, 100 * stats.median, 100 * stats.p10, 100 * stats.min,
                100 * same / n, unmeasured, scored / n, 1e6 * seconds / n);
  }
  std::printf(
      "first_stage 0 = every candidate of the table scored; same_pick = the model's pick over "
      "the data's measured candidates (kselect eval's); unmeasured picks are left out of the "
      "efficiency figures\n");
  return kExitOk;
}

int RunEval(const EvalArgs& args) {
  if (!args.selector_stages.empty()) {
    // The file is checked first (schema, row count), then streamed into the candidate set.
    auto info = InspectDatasetFileChecked(args.data);
    if (!info.ok()) return ReportError("eval", info.status());
    auto rc = RunSelectorEval(args, WithReadProgress(RowsOfFileChecked(args.data), info->rows,
                                                     "eval --selector: reading"));
    return rc.ok() ? *rc : ReportError("eval --selector", rc.status());
  }
  // Checked before the (slow) evaluation, so a bad path costs nothing and writes nothing.
  if (!args.markdown.empty()) {
    if (auto s = text::CheckOutputFile(args.markdown, "--markdown-output", {args.data}); !s.ok()) {
      return ReportError("eval", s);
    }
  }
  if (!args.html.empty()) {
    std::vector<std::string> others = {args.data};
    if (!args.markdown.empty()) others.push_back(args.markdown);
    if (auto s = text::CheckOutputFile(args.html, "--html-output", others); !s.ok()) {
      return ReportError("eval", s);
    }
  }
  auto info = InspectDatasetFileChecked(args.data);
  if (!info.ok()) return ReportError("eval", info.status());
  auto evaluation = Evaluate(
      args.model, WithReadProgress(RowsOfFileChecked(args.data), info->rows, "eval: reading"),
      args.out_of_fold, "eval");
  if (!evaluation.ok()) return ReportError("eval", evaluation.status());
  const EvalSummary* summary = &evaluation->summary;
  if (args.out_of_fold) {
    std::cerr << "kselect eval: out of fold: every problem as predicted by the fold model that "
                 "never saw its shape (GroupKFold, early stopping on an inner split)\n";
    if (evaluation->other_than_training_files) NoteOtherData("eval", args.model, args.data);
  } else if (evaluation->in_sample) {
    std::cerr << "kselect eval: note: this is the model's training data, so these figures are "
                 "in-sample; cv_metrics.json in the model directory holds the honest ones\n";
  }
  // Every report or none: a folder that vanished meanwhile must not leave one of them written.
  std::vector<text::OutputFile> reports;
  if (!args.markdown.empty()) {
    reports.push_back({args.markdown, EvalSummaryToMarkdown(*summary, args.model, args.data)});
  }
  if (!args.html.empty()) {
    const HtmlReportOptions options{.model_dir = args.model,
                                    .data_path = args.data,
                                    .worst_count = args.worst,
                                    .in_sample = evaluation->in_sample,
                                    .out_of_fold = args.out_of_fold};
    reports.push_back({args.html, EvalSummaryToHtml(*summary, evaluation->scatter, options)});
  }
  if (auto s = text::WriteFilesAtomically(reports); !s.ok()) return ReportError("eval", s);
  if (args.json) {
    std::cout << EvalSummaryToJson(*summary, args.model, args.data) << "\n";
  } else {
    const EfficiencyStats& e = summary->model;
    std::printf("%lld problems: efficiency mean %.2f%%, median %.2f%%, p10 %.2f%%, min %.2f%%\n",
                static_cast<long long>(e.count), 100 * e.mean, 100 * e.median, 100 * e.p10,
                100 * e.min);
    std::printf("top-1 %.2f%%, top-5 hit %.2f%%, NDCG@10 %.2f%%\n", 100 * summary->top1,
                100 * summary->top5, 100 * summary->ndcg_at_10);
    for (const EvalSummary::TimedTopK& timed : summary->timed) {
      std::printf("model's top %d timed at first use: mean %.2f%%, p10 %.2f%%, min %.2f%%", timed.k,
                  100 * timed.efficiency.mean, 100 * timed.efficiency.p10,
                  100 * timed.efficiency.min);
      if (timed.speedup_over_peer_top1 > 0) {
        std::printf(", %.4fx the %s's rank-1 pick", timed.speedup_over_peer_top1,
                    summary->peer_names.a.name.c_str());
      }
      std::printf("\n");
    }
    if (summary->peer_top1.count > 0) {
      // cuBLASLt's lines keep their wording ("peer"); a named heuristic (cuDNN's mode A) is named.
      const std::string& a = summary->peer_names.a.name;
      const bool generic = a == PeerNamesOf(Provider::kCublasLt).a.name;
      std::printf(
          "%s rank-1: mean %.2f%%, p10 %.2f%% (%lld problems); best of top 8: mean "
          "%.2f%%\n",
          generic ? "peer" : a.c_str(), 100 * summary->peer_top1.mean, 100 * summary->peer_top1.p10,
          static_cast<long long>(summary->peer_top1.count), 100 * summary->peer_best_of_8.mean);
      std::printf(
          "geomean speedup over %s rank-1 pick: %.4fx (faster on %lld, slower on "
          "%lld)\n",
          generic ? "the peer's" : (a + "'s").c_str(), summary->speedup_over_peer_top1,
          static_cast<long long>(summary->faster_than_peer_top1),
          static_cast<long long>(summary->slower_than_peer_top1));
    }
    if (summary->HasPeerB()) {
      // The provider's second heuristic (cuDNN's mode B), a peer of its own.
      const PeerSummary& b = summary->peer_b;
      const char* name = summary->peer_names.b.name.c_str();
      std::printf(
          "%s rank-1: mean %.2f%%, p10 %.2f%% (%lld problems); best of top 8: mean %.2f%%\n", name,
          100 * b.top1.mean, 100 * b.top1.p10, static_cast<long long>(b.top1.count),
          100 * b.best_of_8.mean);
      std::printf("geomean speedup over %s's rank-1 pick: %.4fx (faster on %lld, slower on %lld)\n",
                  name, b.speedup_over_top1, static_cast<long long>(b.faster_than_top1),
                  static_cast<long long>(b.slower_than_top1));
    }
  }
  return kExitOk;
}

struct CompareArgs {
  std::string old_model, new_model, data;
  bool out_of_fold = false;
};

int RunCompare(const CompareArgs& args) {
  auto info = InspectDatasetFileChecked(args.data);
  if (!info.ok()) return ReportError("compare", info.status());
  // Streamed once per model: only the candidate sets are held.
  const RowSource rows =
      WithReadProgress(RowsOfFileChecked(args.data), info->rows, "compare: reading");
  auto old_eval = Evaluate(args.old_model, rows, args.out_of_fold, "compare");
  if (!old_eval.ok()) return ReportError("compare", old_eval.status().WithContext(args.old_model));
  auto new_eval = Evaluate(args.new_model, rows, args.out_of_fold, "compare");
  if (!new_eval.ok()) return ReportError("compare", new_eval.status().WithContext(args.new_model));
  if (!args.out_of_fold && (old_eval->in_sample || new_eval->in_sample)) {
    std::cerr << "kselect compare: note: the data is a model's training data, so this compares "
                 "in-sample fits; --oof compares the models' out-of-fold predictions instead\n";
  }
  if (args.out_of_fold) {
    std::cout << "out-of-fold: each model's predictions by the fold models that never saw the "
                 "problem's shape\n";
    if (old_eval->other_than_training_files) NoteOtherData("compare", args.old_model, args.data);
    if (new_eval->other_than_training_files) NoteOtherData("compare", args.new_model, args.data);
  }
  auto result = CompareSummaries(old_eval->summary, new_eval->summary);
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
            app.add_option("--markdown-output", args->markdown,
                           "also write a Markdown report here");
            app.add_option("--html-output", args->html,
                           "also write a self-contained HTML report here (tables and inline SVG "
                           "plots; loads nothing from the network)");
            AddHiddenAlias(app, "--markdown", args->markdown);
            AddHiddenAlias(app, "--html", args->html);
            app.add_option("--worst", args->worst, "problems in the HTML report's worst table")
                ->capture_default_str()
                ->check(CLI::PositiveNumber);
            app.add_flag("--oof,--out-of-fold", args->out_of_fold,
                         "score the model's out-of-fold predictions (oof_predictions.csv.gz, "
                         "written by kselect train) instead of predicting the data: the held-out "
                         "figures, on the training data itself");
            app.add_option("--selector", args->selector_stages,
                           "evaluate the selector's own decisions over the model's candidate "
                           "table instead, once per first-stage budget given (0 = score all)")
                ->delimiter(',')
                ->check(CLI::NonNegativeNumber);
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
            app.add_flag("--oof,--out-of-fold", args->out_of_fold,
                         "judge each model by its out-of-fold predictions (oof_predictions.csv, "
                         "written by kselect train) instead of predicting the data itself: "
                         "honest on the training data; refused when a model's file does not "
                         "cover every (problem, config) of --data");
            return [args]() { return RunCompare(*args); };
          }};
}

}  // namespace kselect::cli
