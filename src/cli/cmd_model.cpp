// kselect model: work with model directories directly. `candidates` writes the candidate table a
// selector chooses among (candidates.json.gz) from the model's training data, for models trained
// before `kselect train` wrote it; `score` predicts with a model trained outside kselect (CK
// Tile's train.py directory) for a table of feature rows, one prediction per row.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "core/text.h"
#include "kselect/foreign_model.h"
#include "kselect/model.h"
#include "kselect/train.h"

namespace kselect::cli {
namespace {

struct ModelArgs {
  std::string model;
  std::vector<std::string> data;
  bool allow_other_data = false;
};

// The data fingerprint the model's manifest recorded ("" when it has none).
StatusOr<std::string> TrainedFingerprint(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / "train_manifest.json").string();
  std::ifstream in(path);
  if (!in) return std::string();
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) {
    return ParseError(path + ": not a JSON object");
  }
  const auto data = manifest.find("data");
  if (data == manifest.end() || !data->is_object() || !data->contains("fingerprint") ||
      !(*data)["fingerprint"].is_string()) {
    return std::string();
  }
  return (*data)["fingerprint"].get<std::string>();
}

StatusOr<int> RunCandidates(const ModelArgs& args) {
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(args.model));
  KSELECT_ASSIGN_OR_RETURN(CandidateSet data, ReadCandidateSet(args.data, model.spec().provider));
  KSELECT_ASSIGN_OR_RETURN(const std::string trained, TrainedFingerprint(args.model));
  if (!trained.empty() && trained != data.fingerprint && !args.allow_other_data) {
    return FailedPreconditionError(
        "the data's fingerprint " + data.fingerprint + " is not the " + trained +
        " the model was trained on (train_manifest.json): pass the training files in the same "
        "order, or --allow-other-data to take candidates from other data");
  }
  KSELECT_RETURN_IF_ERROR(model.CheckHardware(data.hardware));
  const CandidateTable table = CandidateTableOf(data);
  KSELECT_RETURN_IF_ERROR(WriteCandidateTable(table, args.model));
  std::cout << args.model << "/" << kCandidateTableFile << ": " << table.NumConfigs()
            << " candidates in " << table.groups.size() << " groups from " << data.problems.size()
            << " problems (data " << data.fingerprint << ")\n";
  for (const auto& [key, configs] : table.groups) {
    std::cout << "  " << key << ": " << configs.size() << "\n";
  }
  return kExitOk;
}

struct ScoreArgs {
  std::string ck_model;
  std::string rows;
  std::string target = "tflops";
};

StatusOr<int> RunScore(const ScoreArgs& args) {
  KSELECT_ASSIGN_OR_RETURN(const Target target, ParseTarget(args.target));
  KSELECT_ASSIGN_OR_RETURN(const ForeignModel model, LoadCkTileModel(args.ck_model));
  KSELECT_ASSIGN_OR_RETURN(const std::string csv, text::ReadFile(args.rows));
  size_t num_rows = 0;
  KSELECT_ASSIGN_OR_RETURN(const std::vector<double> rows,
                           model.RowsFromCsv(csv, args.rows, &num_rows));
  KSELECT_ASSIGN_OR_RETURN(const std::vector<double> predictions,
                           model.Predict(target, rows, num_rows));
  // The shortest text that reads back as the same double.
  for (const double p : predictions) {
    char buffer[32];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, p);
    std::cout << std::string_view(buffer, static_cast<size_t>(end - buffer)) << "\n";
  }
  return kExitOk;
}

}  // namespace

Command ModelCommand() {
  return {"model",
          "model directories: write a model's candidate table; score rows with a model trained "
          "outside kselect (CK Tile's train.py)",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<ModelArgs>();
            auto score_args = std::make_shared<ScoreArgs>();
            app.require_subcommand(1);
            CLI::App* candidates = app.add_subcommand(
                "candidates",
                "write the candidate table (candidates.json.gz) from the training data");
            candidates->add_option("--model", args->model, "model directory")
                ->required()
                ->check(CLI::ExistingDirectory);
            candidates->add_option("--data", args->data, "the model's training dataset(s)")
                ->required()
                ->check(CLI::ExistingFile);
            candidates->add_flag("--allow-other-data", args->allow_other_data,
                                 "take candidates from data other than the training data");
            CLI::App* score = app.add_subcommand(
                "score",
                "predict one value per row of a CSV table whose header names the model's "
                "features (other columns are ignored); prints them in the target's units");
            score
                ->add_option("--ck-model", score_args->ck_model,
                             "CK Tile model directory (feature_spec.json, model_<target>.lgbm or "
                             ".lgbm.gz)")
                ->required()
                ->check(CLI::ExistingDirectory);
            score->add_option("--rows", score_args->rows, "CSV of feature rows")
                ->required()
                ->check(CLI::ExistingFile);
            score->add_option("--target", score_args->target, "tflops, latency or bandwidth")
                ->capture_default_str();
            return [args, score_args, candidates]() {
              if (candidates->parsed()) {
                auto rc = RunCandidates(*args);
                return rc.ok() ? *rc : ReportError("model candidates", rc.status());
              }
              auto rc = RunScore(*score_args);
              return rc.ok() ? *rc : ReportError("model score", rc.status());
            };
          }};
}

}  // namespace kselect::cli
