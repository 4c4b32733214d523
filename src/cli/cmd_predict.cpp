// kselect predict: the selector's decision for one GEMM (selector.h), printed: the ranked configs
// with their predicted time, and which stage decided. With --candidates, the model's ranking of
// exactly a dataset's configs instead (what `kselect eval` scores).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "cli/gemm_args.h"
#include "cli/selection_report.h"
#include "kselect/candidates.h"
#include "kselect/cross_provider.h"
#include "kselect/model.h"
#include "kselect/provider.h"
#include "kselect/selector.h"

namespace kselect::cli {
namespace {

struct PredictArgs {
  std::vector<std::string> models;  // one per device: the selector opens the device's
  std::string candidates;
  std::string hardware;  // a saved profile (kselect hw --save) of the device to predict for
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype = "bf16";
  std::string dtype_c;
  std::string layout;  // "": the model's (DefaultLayout)
  int top = 10;
  bool json = false;
  bool can_implement = false;  // drop configs the provider cannot run this problem with
  std::string peer_data;       // a dataset whose recorded heuristic picks feed a peer model
  int first_stage = 0;         // SelectorOptions::first_stage_candidates
};

// Drops the configs (and their keys) that the model's provider cannot run `problem` with, by the
// provider's CanImplement; returns how many were dropped. The tile engine decides on the CPU;
// cuBLASLt asks the library on this host's GPU, so without one the filter fails with a message
// saying so rather than rank unchecked configs.
StatusOr<size_t> KeepImplementable(const Model& model, const GemmProblem& problem,
                                   std::vector<KernelConfig>* configs,
                                   std::vector<std::string>* keys) {
  const std::string provider_name(ProviderName(model.spec().provider));
  auto provider = CreateProvider(model.spec().provider);
  if (!provider.ok()) {
    return UnavailableError("--can-implement: provider " + provider_name +
                            " has no runtime in this build (" + provider.status().message() +
                            "); drop --can-implement to rank every measured config");
  }
  std::vector<KernelConfig> kept_configs;
  std::vector<std::string> kept_keys;
  for (size_t i = 0; i < configs->size(); ++i) {
    const Status check = (*provider)->CanImplement(problem, (*configs)[i]);
    if (check.code() == StatusCode::kCannotImplement) continue;
    if (check.code() == StatusCode::kUnavailable) {
      return UnavailableError(
          "--can-implement checks each config with the " + provider_name +
          " provider on a GPU, and this host has none (" + check.message() +
          "); run it on a GPU host, or drop --can-implement to rank every measured config");
    }
    KSELECT_RETURN_IF_ERROR(check.WithContext("--can-implement: " + keys->at(i)));
    kept_configs.push_back(std::move((*configs)[i]));
    kept_keys.push_back(std::move((*keys)[i]));
  }
  const size_t dropped = configs->size() - kept_configs.size();
  if (kept_configs.empty()) {
    return FailedPreconditionError("none of the " + std::to_string(dropped) + " candidate " +
                                   provider_name + " configs can implement " + problem.ToString());
  }
  *configs = std::move(kept_configs);
  *keys = std::move(kept_keys);
  return dropped;
}

// The peer heuristic's picks for the problem, for models trained with --peer-rank: the dataset's
// own record when it measured this problem (the picks the bench got from the library), else the
// provider's heuristic on this host's GPU, whose picks join the candidates. Says where they came
// from in `source`.
StatusOr<std::vector<PeerPick>> PeerPicksFor(const Model& model, const Dataset& dataset,
                                             const GemmProblem& problem, const std::string& path,
                                             std::vector<KernelConfig>* configs,
                                             std::vector<std::string>* keys, std::string* source) {
  const std::string problem_key = problem.ToString();
  const std::string provider(ProviderName(model.spec().provider));
  KSELECT_ASSIGN_OR_RETURN(std::optional<std::vector<PeerPick>> recorded,
                           RecordedPeerPicks(dataset, model.spec().provider, problem));
  if (recorded) {
    *source = path + " (the heuristic's picks recorded when the problem was measured)";
    return std::move(*recorded);
  }
  std::vector<PeerPick> picks;
  auto runtime = CreateProvider(model.spec().provider);
  StatusOr<std::vector<KernelConfig>> listed =
      runtime.ok() ? (*runtime)->HeuristicPicks(problem, 8)
                   : StatusOr<std::vector<KernelConfig>>(runtime.status());
  if (!listed.ok()) {
    return FailedPreconditionError(
        "this model uses the " + provider +
        " heuristic's own picks as features (trained with --peer-rank); " + path +
        " did not measure " + problem_key + " and the library cannot be asked here (" +
        listed.status().message() +
        "). Run on a GPU host, or use a model trained without --peer-rank");
  }
  // No algorithm from the heuristic means the library cannot run this problem at all (fp8
  // kernels, for one, need 16-byte aligned dimensions): a ranking would only list configs
  // that fail to launch.
  if (listed->empty()) {
    return FailedPreconditionError(provider + "'s heuristic on this GPU has no algorithm for " +
                                   problem_key + ": the library cannot run this problem here");
  }
  for (size_t r = 0; r < listed->size(); ++r) {
    std::string key = ConfigKey((*listed)[r]);
    if (std::find(keys->begin(), keys->end(), key) == keys->end()) {
      configs->push_back((*listed)[r]);
      keys->push_back(std::move(key));
    }
    picks.push_back({(*listed)[r], static_cast<int32_t>(r + 1)});
  }
  *source = provider + "'s heuristic on this GPU (" + std::to_string(listed->size()) + " picks)";
  std::stable_sort(picks.begin(), picks.end(),
                   [](const PeerPick& a, const PeerPick& b) { return a.rank < b.rank; });
  return picks;
}

// The layout when --layout is not given: the one the model's candidate table covers for the
// dtype, or rcc (cuBLAS TN, PyTorch's nn.Linear) when it covers several including rcc; a
// cross-provider directory answers with its reference model's table. Says where it came from in
// `why`.
StatusOr<std::string> DefaultLayout(const PredictArgs& args, std::string* why) {
  std::string dir = args.models.front();
  if (IsCrossProviderDir(dir)) {
    KSELECT_ASSIGN_OR_RETURN(const CrossProviderManifest manifest, LoadCrossProviderManifest(dir));
    dir = manifest.reference_ranker.empty() ? manifest.reference_model : manifest.reference_ranker;
  }
  auto table = LoadCandidateTable(dir);
  if (!table.ok() && !args.candidates.empty()) return std::string("rcr");
  if (!table.ok()) {
    return InvalidArgumentError("give --layout (rcc for cuBLAS TN / nn.Linear): " +
                                table.status().message());
  }
  const std::string want = "a=" + args.dtype + " ";
  std::set<std::string> layouts;
  for (const auto& [group, configs] : table->groups) {
    const size_t at = group.find(" layout=");
    if (group.find(want) == std::string::npos || at == std::string::npos) continue;
    layouts.insert(group.substr(at + 8, 3));
  }
  const bool gemm_model =
      std::any_of(table->groups.begin(), table->groups.end(),
                  [](const auto& group) { return group.first.rfind("gemm", 0) == 0; });
  // A convolution model: Run says what to use instead.
  // Ranking a dataset's configs (--candidates) needs no table: the layout the option always
  // defaulted to, and the dataset's own checks.
  if (!gemm_model || (layouts.empty() && !args.candidates.empty())) return std::string("rcr");
  if (layouts.empty()) {
    std::string groups;
    for (const auto& [group, configs] : table->groups)
      groups += (groups.empty() ? "" : "; ") + group;
    return InvalidArgumentError(args.models.front() + " has no candidates for --dtype " +
                                args.dtype + " (it covers: " + groups + ")");
  }
  if (layouts.size() == 1) {
    *why = "the only layout the model covers for " + args.dtype;
    return *layouts.begin();
  }
  std::string all;
  for (const std::string& l : layouts) all += (all.empty() ? "" : ", ") + l;
  if (layouts.count("rcc")) {
    *why = "the model covers " + all +
           "; rcc is cuBLAS TN, as nn.Linear runs; --layout picks "
           "another";
    return std::string("rcc");
  }
  return InvalidArgumentError("the model covers several layouts for " + args.dtype + " (" + all +
                              "): give --layout");
}

// The vendor library's own pick for the problem (its heuristic's rank 1) beside the decision,
// with the gain the model predicts over it: what the decision is worth. Predicted by the
// model's latency model where it has one (a ranker's scores are not times), else its TFLOPS.
// Prints nothing when neither gives a figure.
// When `measured` (config key -> latency in ms, from a dataset that measured the problem) holds
// both configs, the measured gain is printed too.
void PrintGainOverPick(Selector& selector, const GemmProblem& problem, const Selection& selection,
                       std::span<const PeerPick> picks,
                       const std::map<std::string, double>& measured = {}) {
  if (selection.ranked.empty()) return;
  const PeerPick* pick = nullptr;
  for (const PeerPick& p : picks) {
    if (p.heuristic == PeerHeuristic::kFirst && p.rank == 1) pick = &p;
  }
  if (pick == nullptr) return;
  const std::string vendor(ProviderName(ProviderOf(pick->config)));
  const KernelConfig& choice = selection.ranked.front().config;
  const std::string choice_key = ConfigKey(choice), pick_key = ConfigKey(pick->config);
  if (choice_key == pick_key) {
    std::cout << "vendor's pick: the decision is " << vendor
              << "'s own heuristic pick (gain 1.00x)\n";
    return;
  }
  const KernelConfig both[] = {choice, pick->config};
  auto ranked = selector.Rank(problem, both, picks);
  if (!ranked.ok()) return;
  std::optional<double> choice_ms, pick_ms, choice_tflops, pick_tflops;
  for (const RankedConfig& entry : ranked->ranked) {
    const std::string key = ConfigKey(entry.config);
    (key == choice_key ? choice_ms : pick_ms) = entry.predicted_latency_ms;
    (key == choice_key ? choice_tflops : pick_tflops) = entry.predicted_tflops;
  }
  std::optional<double> gain;
  const char* from = "";
  if (choice_ms && pick_ms && *choice_ms > 0) {
    gain = *pick_ms / *choice_ms;
    from = "latency model";
  } else if (choice_tflops && pick_tflops && *pick_tflops > 0) {
    gain = *choice_tflops / *pick_tflops;
    from = "TFLOPS model";
  }
  std::cout << "vendor's pick: " << DescribeConfig(pick->config) << " (" << vendor
            << "'s heuristic, rank 1)";
  if (gain) std::printf("; the decision is predicted %.3fx as fast (%s)", *gain, from);
  std::cout << "\n";
  const auto at_choice = measured.find(choice_key), at_pick = measured.find(pick_key);
  if (at_choice != measured.end() && at_pick != measured.end() && at_choice->second > 0) {
    std::printf(
        "measured (the dataset's timings): the decision %.4g ms, the vendor's pick %.4g ms: "
        "%.3fx\n",
        at_choice->second, at_pick->second, at_pick->second / at_choice->second);
  }
}

// The measured latency of each valid config of `problem` in `dataset` (ms).
std::map<std::string, double> MeasuredLatencies(const Dataset& dataset,
                                                const GemmProblem& problem) {
  std::map<std::string, double> out;
  const std::string key = problem.ToString();
  for (const DatasetRow& row : dataset.rows) {
    if (row.problem_key.value_or("") != key || !row.is_valid.value_or(false)) continue;
    auto meas = MeasurementFromRow(row);
    if (!meas.ok() || !row.latency_ms) continue;
    out[ConfigKey(meas->config)] = *row.latency_ms;
  }
  return out;
}

SelectionReport ReportOf(const PredictArgs& args) {
  return {.top = args.top,
          .json = args.json,
          .several_models = args.models.size() > 1,
          .can_implement = args.can_implement};
}

StatusOr<GemmProblem> ProblemOf(const PredictArgs& args) {
  GemmProblem problem;
  problem.m = args.m;
  problem.n = args.n;
  problem.k = args.k;
  problem.batch = args.batch;
  KSELECT_ASSIGN_OR_RETURN(problem.layout, ParseGemmLayout(args.layout));
  KSELECT_ASSIGN_OR_RETURN(problem.dtype_a, ParseDataType(args.dtype));
  problem.dtype_b = problem.dtype_a;
  // 8-bit inputs write 16-bit outputs unless told otherwise.
  problem.dtype_c = DataTypeBits(problem.dtype_a) == 8 ? DataType::kBF16 : problem.dtype_a;
  if (!args.dtype_c.empty()) {
    KSELECT_ASSIGN_OR_RETURN(problem.dtype_c, ParseDataType(args.dtype_c));
  }
  KSELECT_RETURN_IF_ERROR(problem.Validate());
  return problem;
}

// A cross-provider model directory: the decision between the providers, made live (cuBLASLt's
// heuristic pick is part of it, so it needs the GPU).
StatusOr<int> RunCrossProvider(const PredictArgs& args, const SelectorOptions& options,
                               const GemmProblem& problem) {
  const std::string& dir = args.models.front();
  if (!args.candidates.empty() || !args.peer_data.empty()) {
    return InvalidArgumentError(dir +
                                " is a cross-provider model: give it without --candidates or "
                                "--peer-data (its decision is made live)");
  }
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<CrossProviderSelector> selector,
                           CrossProviderSelector::Open(dir, options));
  KSELECT_ASSIGN_OR_RETURN(const CrossDecision d, selector->Select(problem));
  const size_t top = std::min(d.ranked.size(), static_cast<size_t>(std::max(args.top, 1)));
  const std::string chosen(ProviderName(ProviderOf(d.config)));
  if (args.json) {
    nlohmann::json ranked = nlohmann::json::array();
    for (size_t r = 0; r < top; ++r) {
      const RankedConfig& entry = d.ranked[r];
      ranked.push_back(
          {{"rank", r + 1},
           {"provider", ProviderName(ProviderOf(entry.config))},
           {"config", ConfigKey(entry.config)},
           {"name", DescribeConfig(entry.config)},
           {"predicted_tflops",
            entry.predicted_tflops ? nlohmann::json(*entry.predicted_tflops) : nlohmann::json()}});
    }
    std::cout << nlohmann::json{{"problem", problem.ToString()},
                                {"model", dir},
                                {"provider_chosen", chosen},
                                {"challenger_chosen", d.challenger_chosen},
                                {"predicted_gain", d.predicted_gain},
                                {"reference_pick", ConfigKey(d.reference_pick)},
                                {"reference_choice", ConfigKey(d.reference_choice)},
                                {"note", d.note},
                                {"ranked", ranked}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  std::cout << problem.ToString() << ": " << chosen << " chosen (challenger predicted "
            << d.predicted_gain << "x the reference's choice)\n";
  if (!d.note.empty()) std::cout << "note: " << d.note << "\n";
  for (size_t r = 0; r < top; ++r) {
    const RankedConfig& entry = d.ranked[r];
    std::printf("%2zu. %-9s %-60s", r + 1,
                std::string(ProviderName(ProviderOf(entry.config))).c_str(),
                DescribeConfig(entry.config).c_str());
    if (entry.predicted_tflops) std::printf("  predicted %.2f TFLOPS", *entry.predicted_tflops);
    std::printf("\n");
  }
  std::cout << "dispatch (kselect::Gemm with time_top_k >= 2) times these at first use and runs "
               "the fastest\n";
  return kExitOk;
}

StatusOr<int> Run(const PredictArgs& given) {
  PredictArgs args = given;
  if (args.layout.empty()) {
    std::string why;
    KSELECT_ASSIGN_OR_RETURN(args.layout, DefaultLayout(args, &why));
    if (!args.json && !Quiet()) std::cout << "layout " << args.layout << " (" << why << ")\n";
  }
  SelectorOptions options;
  options.top_k = std::max(args.top, 1);
  options.first_stage_candidates = args.first_stage;
  if (!args.hardware.empty()) {
    KSELECT_ASSIGN_OR_RETURN(HardwareProfile profile, LoadHardwareProfile(args.hardware));
    KSELECT_ASSIGN_OR_RETURN(options.hardware, HardwareConstantsFor(profile));
  }
  KSELECT_ASSIGN_OR_RETURN(const GemmProblem problem, ProblemOf(args));
  if (std::any_of(args.models.begin(), args.models.end(), IsCrossProviderDir)) {
    // Per-device models naming a cross-provider directory: the one trained for this device.
    KSELECT_ASSIGN_OR_RETURN(const std::string dir, ModelDirForDevice(args.models, options));
    PredictArgs chosen = args;
    chosen.models = {dir};
    if (IsCrossProviderDir(dir)) return RunCrossProvider(chosen, options, problem);
    return Run(chosen);
  }
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<Selector> selector,
                           Selector::Open(args.models, options));
  const Model& model = selector->model();
  // The options describe a GEMM; a convolution model would only fail to find candidates.
  if (const FeatureSpec& spec = model.spec(); spec.conv_direction) {
    return FailedPreconditionError(
        selector->model_dir() + " is a " + std::string(ConvDirectionName(*spec.conv_direction)) +
        " convolution model (" + std::string(ProviderName(spec.provider)) +
        "), and kselect predict selects for GEMMs: kselect conv select --model " +
        selector->model_dir() + " selects for a convolution");
  }

  if (args.candidates.empty()) {
    // The selector's own decision over the model's candidate table.
    std::optional<std::vector<PeerPick>> peer;
    std::string peer_source;
    std::map<std::string, double> measured;
    if (!args.peer_data.empty() && model.UsesPeerRanks()) {
      KSELECT_ASSIGN_OR_RETURN(Dataset dataset, ReadDatasetChecked(args.peer_data));
      measured = MeasuredLatencies(dataset, problem);
      KSELECT_ASSIGN_OR_RETURN(peer, RecordedPeerPicks(dataset, model.spec().provider, problem));
      if (!peer) {
        return FailedPreconditionError(args.peer_data + " did not measure " + problem.ToString() +
                                       ": it has no heuristic picks recorded for it");
      }
      peer_source = args.peer_data + " (the heuristic's picks recorded when it was measured)";
    }
    const auto ranks = peer ? std::optional<std::span<const PeerPick>>(*peer)
                            : std::optional<std::span<const PeerPick>>();
    KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector->Select(problem, ranks));
    PrintSelection(ReportOf(args), *selector, *selection, selection->candidates_considered, 0,
                   peer_source);
    if (peer && !args.json) PrintGainOverPick(*selector, problem, *selection, *peer, measured);
    return kExitOk;
  }

  // Ranking a dataset's configs is the model's alone: no fallback for another device.
  if (options.hardware) KSELECT_RETURN_IF_ERROR(model.CheckHardware(*options.hardware));
  // Candidates: the distinct configs the file measured for this provider and input dtype.
  KSELECT_ASSIGN_OR_RETURN(Dataset dataset, ReadDatasetChecked(args.candidates));
  const std::string provider(ProviderName(model.spec().provider));
  std::set<std::string> seen;
  std::vector<KernelConfig> configs;
  std::vector<std::string> keys;
  for (const DatasetRow& row : dataset.rows) {
    if (row.provider.value_or("") != provider || row.dtype.value_or(args.dtype) != args.dtype) {
      continue;
    }
    KSELECT_ASSIGN_OR_RETURN(Measurement meas, MeasurementFromRow(row));
    std::string key = ConfigKey(meas.config);
    if (!seen.insert(key).second) continue;
    configs.push_back(meas.config);
    keys.push_back(std::move(key));
  }
  if (configs.empty()) {
    return InvalidArgumentError(args.candidates + " has no " + provider + " configs for dtype " +
                                args.dtype);
  }
  std::optional<std::vector<PeerPick>> peer;
  std::string peer_source;
  if (model.UsesPeerRanks()) {
    KSELECT_ASSIGN_OR_RETURN(peer, PeerPicksFor(model, dataset, problem, args.candidates, &configs,
                                                &keys, &peer_source));
  }
  size_t not_implementable = 0;
  if (args.can_implement) {
    KSELECT_ASSIGN_OR_RETURN(not_implementable, KeepImplementable(model, problem, &configs, &keys));
  }
  // The heuristic's picks stay features of the problem even when a pick cannot run it.
  const auto ranks = peer ? std::optional<std::span<const PeerPick>>(*peer)
                          : std::optional<std::span<const PeerPick>>();
  KSELECT_ASSIGN_OR_RETURN(Selection selection, selector->Rank(problem, configs, ranks));
  selection.can_implement_checked = args.can_implement;
  PrintSelection(ReportOf(args), *selector, selection, configs.size(), not_implementable,
                 peer_source);
  if (peer && !args.json) {
    PrintGainOverPick(*selector, problem, selection, *peer, MeasuredLatencies(dataset, problem));
  }
  return kExitOk;
}

}  // namespace

Command PredictCommand() {
  return {
      "predict", "rank configs for a problem with a trained model",
      [](CLI::App& app) -> RunFunction {
        auto args = std::make_shared<PredictArgs>();
        app.add_option("--model", args->models,
                       "model directory; repeat to give one per device (e.g. the H200's and the "
                       "H100's): the one trained for the GPU (or --hardware) ranks, matched on "
                       "each model's recorded hardware (a cross-provider directory's: its "
                       "reference model's)")
            ->required()
            ->check(CLI::ExistingDirectory);
        app.add_option("--hardware", args->hardware,
                       "a saved hardware profile (kselect hw --save; data/hardware/*.json) of the "
                       "device to select for (default: this host's GPU, else the model's own)")
            ->check(CLI::ExistingFile);
        app.add_option("--candidates", args->candidates,
                       "rank exactly this dataset's distinct configs (default: the selector's "
                       "decision over the model's candidate table)")
            ->check(CLI::ExistingFile);
        app.add_option("--peer-data", args->peer_data,
                       "a dataset that measured the problem: its recorded heuristic picks feed a "
                       "model trained with them (default: asked live on a GPU host)")
            ->check(CLI::ExistingFile);
        app.add_option("--first-stage", args->first_stage,
                       "score at most this many candidates with the whole model, picked by the "
                       "heuristic's families and the analytical estimate (0 = all)")
            ->capture_default_str()
            ->check(CLI::NonNegativeNumber);
        app.add_option("--m", args->m, "rows of A and C")->required()->check(PositiveInteger());
        app.add_option("--n", args->n, "columns of B and C")->required()->check(PositiveInteger());
        app.add_option("--k", args->k, "reduction dimension")->required()->check(PositiveInteger());
        app.add_option("--batch", args->batch, "batch count")
            ->capture_default_str()
            ->check(PositiveInteger());
        app.add_option("--dtype", args->dtype, "input dtype")->capture_default_str();
        app.add_option("--dtype-c", args->dtype_c, "output dtype (default: input, bf16 for 8-bit)");
        app.add_option("--layout", args->layout,
                       "layout of A, B, C (r row-, c column-major; rcc = cuBLAS TN as nn.Linear "
                       "runs it); default: the model's, rcc where it covers several");
        app.add_option("--top", args->top, "configs to print")
            ->capture_default_str()
            ->check(PositiveInteger());
        app.add_flag("--json", args->json, "print JSON");
        app.add_flag("--can-implement", args->can_implement,
                     "rank only the configs the provider's CanImplement accepts for this problem "
                     "(cuBLASLt asks the GPU, so it fails on a host without one)");
        return [args]() {
          auto rc = Run(*args);
          return rc.ok() ? *rc : ReportError("predict", rc.status());
        };
      }};
}

}  // namespace kselect::cli
