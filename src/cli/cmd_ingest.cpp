// kselect ingest: benchmark output (kselect JSONL, CK Tile logs/JSON, CK conv CSV) -> Parquet.
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "core/text.h"
#include "kselect/ingest.h"
#include "kselect/version.h"

namespace kselect::cli {
namespace {

struct IngestArgs {
  std::vector<std::string> inputs;
  std::string output;
  std::string format;
  std::string arch;
  std::string device_kind;
  std::string run_id;
  std::string conv_direction;
  bool allow_mixed = false;
  bool complete_problems_only = false;
  bool one_run_per_problem = false;
  bool allow_duplicates = false;
  bool json = false;
};

int RunIngest(const IngestArgs& args) {
  if (auto s = RequireArrow(); !s.ok()) return ReportError("ingest", s);
  if (auto s = text::CheckOutputFile(args.output, "--output", args.inputs); !s.ok()) {
    return ReportError("ingest", s);
  }
  if (!args.allow_duplicates) {
    if (auto s = text::CheckDistinctInputs(args.inputs); !s.ok()) return ReportError("ingest", s);
  }
  IngestOptions options;
  options.arch = args.arch;
  options.device_kind = args.device_kind;
  options.run_id = args.run_id;
  options.complete_problems_only = args.complete_problems_only || args.one_run_per_problem;
  if (!args.conv_direction.empty()) {
    auto direction = ParseConvDirection(args.conv_direction);
    if (!direction.ok()) return ReportError("ingest", direction.status());
    options.conv_direction = *direction;
  }
  std::optional<InputFormat> format;
  if (!args.format.empty() && args.format != "auto") {
    auto parsed = ParseInputFormat(args.format);
    if (!parsed.ok()) return ReportError("ingest", parsed.status());
    format = *parsed;
  }

  std::vector<Measurement> measurements;
  std::map<std::string, RunInfo> runs;
  // --one-run-per-problem: ProblemToString -> the first run (in input order) that finished it.
  std::map<std::string, std::string> run_of_problem;
  nlohmann::json sources = nlohmann::json::array();
  int64_t warnings = 0;
  Progress progress("ingest", static_cast<int64_t>(args.inputs.size()));
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const std::string& path = args.inputs[i];
    auto result = IngestFile(path, format, options);
    if (!result.ok()) return ReportError("ingest", result.status());
    for (const std::string& warning : result->warnings) std::cerr << "warning: " << warning << "\n";
    warnings += static_cast<int64_t>(result->warnings.size());
    if (result->dropped_incomplete > 0) {
      std::cerr << "ingest: " << path << ": dropped " << result->dropped_incomplete
                << " measurements of problems whose sweep did not finish\n";
    }
    for (const RunInfo& run : result->runs) runs.try_emplace(run.run_id, run);
    for (const auto& done : result->completed_problems)
      run_of_problem.try_emplace(done.problem, done.run_id);
    auto data = text::ReadFile(path);
    sources.push_back({{"path", path},
                       {"sha256", data.ok() ? text::Sha256Hex(*data) : ""},
                       {"records", result->measurements.size()},
                       {"warnings", result->warnings.size()}});
    for (Measurement& m : result->measurements) measurements.push_back(std::move(m));
    progress.Update(static_cast<int64_t>(i + 1));
  }
  progress.Finish();
  if (args.one_run_per_problem) {
    // A collection spread over calls measures a cut-off problem again in a later run: keep one
    // complete sweep per problem, so no (problem, config) pair comes from two runs.
    int64_t dropped = 0;
    std::vector<Measurement> kept;
    for (Measurement& m : measurements) {
      const auto it = run_of_problem.find(ProblemToString(m.problem));
      if (it != run_of_problem.end() && it->second == m.run_id) {
        kept.push_back(std::move(m));
      } else {
        ++dropped;
      }
    }
    measurements = std::move(kept);
    if (dropped > 0) {
      std::cerr << "ingest: dropped " << dropped
                << " measurements of problems an earlier input's run already finished\n";
    }
  }
  if (measurements.empty()) {
    return ReportError("ingest", ParseError("no measurements found in the input files"));
  }

  const size_t records = measurements.size();
  measurements = MergeDuplicateMeasurements(std::move(measurements));
  Dataset dataset;
  for (const Measurement& m : measurements) {
    dataset.rows.push_back(RowFromMeasurement(m, runs.at(m.run_id)));
  }
  if (auto s = CheckOneDevice(dataset.rows, args.allow_mixed); !s.ok()) {
    return ReportError("ingest", s);
  }
  dataset.metadata[std::string(kMetaSources)] = sources.dump();
  dataset.metadata[std::string(kMetaOptions)] = nlohmann::json{
      {"command", "ingest"},
      {"format", args.format.empty() ? "auto" : args.format},
      {"arch", args.arch},
      {"device_kind", args.device_kind},
      {"run_id", args.run_id},
      {"conv_direction", args.conv_direction},
      {"allow_mixed", args.allow_mixed},
      {"complete_problems_only", args.complete_problems_only},
      {"one_run_per_problem", args.one_run_per_problem}}.dump();
  if (auto s = WriteDatasetChecked(dataset, args.output); !s.ok()) return ReportError("ingest", s);

  const DatasetSummary summary = SummarizeDataset(dataset);
  const int64_t merged = static_cast<int64_t>(records) - summary.rows;
  if (args.json) {
    std::cout << nlohmann::json{{"output", args.output},
                                {"records", records},
                                {"rows", summary.rows},
                                {"valid_rows", summary.valid_rows},
                                {"invalid_rows", summary.invalid_rows},
                                {"high_cv_rows", summary.high_cv_rows},
                                {"duplicates_merged", merged},
                                {"warnings", warnings},
                                {"shapes", summary.shapes},
                                {"configs", summary.configs}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "wrote " << args.output << ": " << summary.rows << " rows (" << summary.valid_rows
              << " valid, " << summary.invalid_rows << " invalid, " << summary.high_cv_rows
              << " with CV > 10 %) from " << records << " records in " << args.inputs.size()
              << " file(s); " << merged << " duplicates merged, " << warnings << " warnings; "
              << summary.shapes << " shapes x " << summary.configs << " configs\n";
  }
  return kExitOk;
}

}  // namespace

Command IngestCommand() {
  return {
      "ingest",
      "turn benchmark output (kselect JSONL, CK Tile log/JSON, CK conv CSV) into a Parquet "
      "dataset",
      [](CLI::App& app) -> RunFunction {
        auto args = std::make_shared<IngestArgs>();
        app.add_option("inputs", args->inputs, "input files")->required()->check(CLI::ExistingFile);
        app.add_option("-o,--output", args->output, "output Parquet file")->required();
        app.add_option("--format", args->format,
                       "input format: auto, kselect-jsonl, ck-log, ck-json, ck-conv-csv")
            ->default_val("auto");
        app.add_option("--arch", args->arch, "architecture of AMD inputs (gfx950, ...)");
        app.add_option("--device-kind", args->device_kind,
                       "device kind to record when the input does not say");
        app.add_option("--run-id", args->run_id, "override the run id of every row");
        app.add_option("--conv-direction", args->conv_direction,
                       "direction of CK conv CSV rows whose kernel name does not say");
        app.add_flag("--allow-mixed", args->allow_mixed,
                     "allow rows from several device kinds in one dataset");
        app.add_flag("--complete-problems-only", args->complete_problems_only,
                     "kselect JSONL: drop measurements of problems without a problem_done "
                     "record (the partial problem a time limit or kill left)");
        app.add_flag("--one-run-per-problem", args->one_run_per_problem,
                     "kselect JSONL: keep each problem from the first input run that finished "
                     "it (implies --complete-problems-only); for collections spread over calls");
        app.add_flag("--allow-duplicates", args->allow_duplicates,
                     "accept the same input file more than once (its records merge with "
                     "themselves)");
        app.add_flag("--json", args->json, "print a JSON summary");
        return [args]() { return RunIngest(*args); };
      }};
}

}  // namespace kselect::cli
