// kselect model: what a trained model directory ships besides its trees. `candidates` writes the
// candidate table a selector chooses among (candidates.json.gz) from the model's training data,
// for models trained before `kselect train` wrote it.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
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
  KSELECT_RETURN_IF_ERROR(WriteCandidateTable(data, args.model));
  const CandidateTable table = CandidateTableOf(data);
  std::cout << args.model << "/" << kCandidateTableFile << ": " << table.NumConfigs()
            << " candidates in " << table.groups.size() << " groups from " << data.problems.size()
            << " problems (data " << data.fingerprint << ")\n";
  for (const auto& [key, configs] : table.groups) {
    std::cout << "  " << key << ": " << configs.size() << "\n";
  }
  return kExitOk;
}

}  // namespace

Command ModelCommand() {
  return {"model", "what a model directory ships: its candidate table",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<ModelArgs>();
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
            return [args, candidates]() {
              if (candidates->parsed()) {
                auto rc = RunCandidates(*args);
                return rc.ok() ? *rc : ReportError("model candidates", rc.status());
              }
              return kExitUsage;
            };
          }};
}

}  // namespace kselect::cli
