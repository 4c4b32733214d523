// kselect model: work with models directly. `score` predicts with a model trained outside kselect
// (CK Tile's train.py directory) for a table of feature rows, one prediction per row.
#include <charconv>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "core/text.h"
#include "kselect/foreign_model.h"

namespace kselect::cli {
namespace {

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
  return {"model", "score rows with a model trained outside kselect (CK Tile's train.py)",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<ScoreArgs>();
            app.require_subcommand(1);
            CLI::App* score = app.add_subcommand(
                "score",
                "predict one value per row of a CSV table whose header names the model's "
                "features (other columns are ignored); prints them in the target's units");
            score
                ->add_option("--ck-model", args->ck_model,
                             "CK Tile model directory (feature_spec.json, model_<target>.lgbm or "
                             ".lgbm.gz)")
                ->required()
                ->check(CLI::ExistingDirectory);
            score->add_option("--rows", args->rows, "CSV of feature rows")
                ->required()
                ->check(CLI::ExistingFile);
            score->add_option("--target", args->target, "tflops, latency or bandwidth")
                ->capture_default_str();
            return [args]() {
              auto rc = RunScore(*args);
              return rc.ok() ? *rc : ReportError("model score", rc.status());
            };
          }};
}

}  // namespace kselect::cli
