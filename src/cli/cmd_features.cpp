// kselect features: the model's feature matrix of a dataset's candidates, as Parquet, so the
// features a model sees can be inspected or used in a notebook (exactly what `kselect train`
// computes, from the same extractor and spec).
#include <cmath>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "core/text.h"
#include "kselect/features.h"
#include "kselect/train.h"
#include "kselect/version.h"

namespace kselect::cli {
namespace {

struct FeaturesArgs {
  std::vector<std::string> data;
  std::string out;
  std::string provider;
  bool peer_block = false;
};

int RunFeatures(const FeaturesArgs& args) {
  if (args.out.empty()) {
    std::cerr << "kselect features: -o/--output is required (the Parquet file to write)\n";
    return kExitUsage;
  }
  if (auto s = text::CheckOutputFile(args.out, "--output", args.data); !s.ok()) {
    return ReportError("features", s);
  }
  std::optional<Provider> provider;
  if (!args.provider.empty()) {
    auto parsed = ParseProvider(args.provider);
    if (!parsed.ok()) return ReportError("features", parsed.status());
    provider = *parsed;
  }
  auto data = ReadCandidateSet(args.data, provider);
  if (!data.ok()) return ReportError("features", data.status());
  // The spec `kselect train` would pick for this data (GEMM or the data's conv direction).
  auto training_spec = TrainingFeatureSpec(*data, args.peer_block);
  if (!training_spec.ok()) return ReportError("features", training_spec.status());
  const FeatureSpec& spec = *training_spec;
  auto extractor = CreateFeatureExtractor(spec);
  if (!extractor.ok()) return ReportError("features", extractor.status());

  const size_t rows = data->NumCandidates();
  const size_t cols = spec.features.size();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  ExportTable table;
  table.rows = static_cast<int64_t>(rows);
  std::vector<std::string> problem_keys, shape_keys, config_keys;
  std::vector<double> tflops, latency, estimated, peer_rank;
  std::vector<std::vector<double>> features(cols);
  for (auto* v : {&problem_keys, &shape_keys, &config_keys}) v->reserve(rows);
  for (auto& column : features) column.reserve(rows);
  std::vector<KernelConfig> configs;
  std::vector<double> block;
  for (const ProblemCandidates& p : data->problems) {
    configs.clear();
    for (const Candidate& c : p.candidates) configs.push_back(c.config);
    const std::vector<PeerPick> peer = PeerPicksOf(p);
    if (auto s = (*extractor)->ExtractBatch(p.problem, configs, &block, peer); !s.ok()) {
      return ReportError("features", s.WithContext(p.problem_key));
    }
    for (size_t i = 0; i < p.candidates.size(); ++i) {
      const Candidate& c = p.candidates[i];
      problem_keys.push_back(p.problem_key);
      shape_keys.push_back(p.shape_key);
      config_keys.push_back(c.config_key);
      tflops.push_back(c.tflops);
      latency.push_back(c.latency_ms);
      estimated.push_back(c.estimated ? 1.0 : 0.0);
      peer_rank.push_back(c.peer_rank ? static_cast<double>(*c.peer_rank) : kNaN);
      for (size_t f = 0; f < cols; ++f) features[f].push_back(block[i * cols + f]);
    }
  }
  table.string_columns = {{"problem_key", std::move(problem_keys)},
                          {"shape_key", std::move(shape_keys)},
                          {"config_key", std::move(config_keys)}};
  // The figures beside the features: labels for a notebook, never inputs of a model.
  table.double_columns = {{"measured_tflops", std::move(tflops)},
                          {"latency_ms", std::move(latency)},
                          {"estimated", std::move(estimated)},
                          {"peer_rank", std::move(peer_rank)}};
  for (size_t f = 0; f < cols; ++f) {
    table.double_columns.emplace_back("feature." + spec.features[f].name, std::move(features[f]));
  }
  table.metadata = {{"kselect.feature_spec", FeatureSpecToJson(spec)},
                    {"kselect.tool", ToolDescription()},
                    {"kselect.sources", nlohmann::json(args.data).dump()},
                    {"kselect.data_fingerprint", data->fingerprint}};
  if (auto s = WriteExportTableChecked(table, args.out); !s.ok()) {
    return ReportError("features", s);
  }
  std::cout << "wrote " << rows << " candidates x " << cols << " features ("
            << data->problems.size() << " problems, " << ProviderName(data->provider) << ") to "
            << args.out << "\n";
  return kExitOk;
}

}  // namespace

Command FeaturesCommand() {
  return {"features",
          "write the model features of a dataset's candidates to Parquet (for notebooks)",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<FeaturesArgs>();
            app.add_option("--data", args->data,
                           "canonical dataset (.parquet); repeat it to join several files")
                ->required();
            app.add_option("-o,--output", args->out, "Parquet file to write (required)");
            AddHiddenAlias(app, "--out", args->out);
            app.add_option("--provider", args->provider,
                           "provider whose candidates to take (default: the data's only one)");
            app.add_flag("--peer-rank", args->peer_block,
                         "add the peer block (the heuristic's picks as features), as train "
                         "--peer-rank does");
            return [args] { return RunFeatures(*args); };
          }};
}

}  // namespace kselect::cli
