// kselect train: LightGBM models from a canonical dataset, with grouped cross-validation.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "core/text.h"
#include "kselect/bench.h"
#include "kselect/model.h"
#include "kselect/train.h"

namespace kselect::cli {
namespace {

struct TrainArgs {
  std::vector<std::string> data;
  std::string out;
  std::string provider;
  std::string targets = "tflops,latency,bandwidth";
  std::string warm_start;
  std::string objective = "regression";
  std::string label = "log";
  std::string shard;  // "i/N": this process's problems of the data (distributed training)
  std::optional<double> sample_aborted;  // unset: --sample-weak's fraction
  std::vector<std::string> params;       // --param key=value, passed to LightGBM
  TrainOptions options;
};

// --param key=value (repeatable) into LightGbmParams::extra; a key given twice keeps the last.
Status ParseParams(const std::vector<std::string>& params, LightGbmParams* out) {
  for (const std::string& param : params) {
    const size_t eq = param.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--param '" + param +
                                  "' is not key=value (e.g. --param min_data_in_leaf=50)");
    }
    out->extra.emplace_back(param.substr(0, eq), param.substr(eq + 1));
  }
  return CheckExtraLightGbmParams(out->extra);
}

// Progress of the fits: a bar over each fit's rounds (early stopping ends most fits sooner, so
// its ETA is an upper bound); with -v LightGBM-style lines every 10th round instead.
void ReportIterations(TrainOptions* options) {
  if (Quiet()) return;
  auto bar = std::make_shared<std::unique_ptr<Progress>>();
  options->iteration = [bar](int round, int max_rounds, const std::string& metrics) {
    if (Verbose()) {
      if (round == 1 || round % 10 == 0 || round == max_rounds) {
        std::cerr << "train: [" << round << "/" << max_rounds << "]"
                  << (metrics.empty() ? "" : " valid " + metrics) << "\n";
      }
      return;
    }
    if (round == 1 || !*bar) *bar = std::make_unique<Progress>("train: rounds", max_rounds, 30);
    (*bar)->Update(round);
  };
  auto line = options->progress;
  options->progress = [bar, line](const std::string& text) {
    if (*bar) (*bar)->Finish();
    bar->reset();
    if (line) line(text);
  };
}

int RunTrainHere(TrainArgs& args);

// Distributed training runs in a child process: LightGBM's network crashes the process when a
// peer never joins or leaves mid-way, which becomes a clear error here instead (the staged output
// folder keeps --out whole either way).
int RunTrain(TrainArgs& args) {
  if (args.options.machines.empty()) return RunTrainHere(args);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) return ReportError("train", InternalError("fork failed for distributed training"));
  if (pid == 0) {
    const int rc = RunTrainHere(args);
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(rc);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return ReportError(
      "train",
      UnavailableError("distributed training died (signal " +
                       std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0) +
                       ") in LightGBM's network: a process of --machines did not join within "
                       "--network-timeout or left; nothing was written to " +
                       args.out));
}

int RunTrainHere(TrainArgs& args) {
  if (!args.provider.empty()) {
    auto provider = ParseProvider(args.provider);
    if (!provider.ok()) return ReportError("train", provider.status());
    args.options.provider = *provider;
  }
  auto objective = ParseObjective(args.objective);
  if (!objective.ok()) return ReportError("train", objective.status());
  args.options.objective = *objective;
  auto label = ParseLabelTransform(args.label);
  if (!label.ok()) return ReportError("train", label.status());
  args.options.label_transform = *label;
  args.options.targets.clear();
  size_t start = 0;
  while (start <= args.targets.size()) {
    const size_t comma = std::min(args.targets.find(',', start), args.targets.size());
    auto target = ParseTarget(args.targets.substr(start, comma - start));
    if (!target.ok()) return ReportError("train", target.status());
    args.options.targets.push_back(*target);
    start = comma + 1;
  }
  args.options.sampling.aborted_fraction =
      args.sample_aborted.value_or(args.options.sampling.weak_fraction);
  args.options.warm_start_dir = args.warm_start;
  args.options.data_sources = args.data;
  args.options.progress = [](const std::string& line) {
    if (!Quiet()) std::cerr << "train: " << line << "\n";
  };
  if (auto s = ParseParams(args.params, &args.options.params); !s.ok()) {
    return ReportError("train", s);
  }
  ReportIterations(&args.options);
  if (args.out.empty()) {
    std::cerr << "kselect train: -o/--output is required (the model directory to write)\n";
    return kExitUsage;
  }
  // Several files train one model (say every layout of a dtype: shapes held out together across
  // them).
  // Each file's fingerprint goes into the manifest, so `kselect eval --oof` on one of them can
  // tell whether it scores the data the folds trained on.
  if (auto s = text::CheckOutputFolder(args.out, "--output", args.data); !s.ok()) {
    return ReportError("train", s);
  }
  auto candidates =
      ReadCandidateSet(args.data, args.options.provider, &args.options.data_source_fingerprints);
  if (!candidates.ok()) return ReportError("train", candidates.status());
  if (!args.shard.empty()) {
    auto shard = ParseShard(args.shard);
    if (!shard.ok()) return ReportError("train", shard.status().WithContext("--shard"));
    // Problems are sorted by key, so every process reading the same files agrees on the split.
    std::vector<ProblemCandidates> kept;
    for (const size_t i : ShardIndices(candidates->problems.size(), *shard)) {
      kept.push_back(std::move(candidates->problems[i]));
    }
    if (kept.empty()) {
      return ReportError("train",
                         FailedPreconditionError("--shard " + args.shard + ": none of " +
                                                 std::to_string(candidates->problems.size()) +
                                                 " problems falls in this shard"));
    }
    candidates->problems = std::move(kept);
  }
  // Trained into a fresh folder beside --out and swapped in at the end: a failure or a kill
  // leaves the old model whole, and no file of an earlier model (a target since dropped) is left
  // for predict to load.
  std::filesystem::path out(args.out);
  if (!out.has_filename()) out = out.parent_path();  // "models/x/"
  const std::string staged = text::TempPathBeside(out.string());
  auto result = TrainModelOnCandidates(*candidates, args.options, staged);
  Status replaced = result.ok() ? text::ReplaceFolder(staged, out.string()) : result.status();
  if (!replaced.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(staged, ignored);
    return ReportError("train", replaced);
  }
  std::cout << "trained " << ProviderName(result->spec.provider) << " "
            << ObjectiveName(args.options.objective) << " model on " << result->rows << " rows ("
            << result->problems << " problems, " << result->shapes << " shapes, "
            << result->spec.features.size() << " features) into " << args.out << "\n";
  if (result->sampling) {
    const RowSamplingCounts& n = *result->sampling;
    std::printf(
        "  row sampling: %lld of %lld rows (%lld within %.3g of their best, %lld of %lld weak "
        "measured, %lld of %lld aborted)\n",
        static_cast<long long>(n.rows_after), static_cast<long long>(n.rows_before),
        static_cast<long long>(n.near_best), args.options.sampling.keep_within,
        static_cast<long long>(n.weak_kept), static_cast<long long>(n.weak_before),
        static_cast<long long>(n.aborted_kept), static_cast<long long>(n.aborted_before));
  }
  for (const FoldMetrics& f : result->folds) {
    // A ranker's scores have no label-space error to report.
    char fit[64] = "";
    if (!std::isnan(f.rmse_label)) {
      std::snprintf(fit, sizeof(fit), "rmse(%s) %.4f, r2 %.4f, ",
                    std::string(LabelTransformName(args.options.label_transform)).c_str(),
                    f.rmse_label, f.r2_label);
    }
    std::printf("  fold %d: %lld shapes, %d trees, %sefficiency mean %.2f%% p10 %.2f%%\n", f.fold,
                static_cast<long long>(f.valid_shapes), f.best_iteration, fit,
                100 * f.efficiency.mean, 100 * f.efficiency.p10);
  }
  if (!result->folds.empty()) {
    const EfficiencyStats& e = result->oof_efficiency;
    std::printf("  out-of-fold efficiency: mean %.2f%%, median %.2f%%, p10 %.2f%%, min %.2f%%\n",
                100 * e.mean, 100 * e.median, 100 * e.p10, 100 * e.min);
  }
  for (const auto& [file, trees] : result->model_files) {
    std::cout << "  " << file << ": " << trees << " trees\n";
  }
  return kExitOk;
}

}  // namespace

Command TrainCommand() {
  return {"train", "train LightGBM models on a dataset (GroupKFold CV by shape)",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<TrainArgs>();
            app.add_option("--data", args->data,
                           "canonical dataset (.parquet); repeat to train one model on several "
                           "files of one device")
                ->required()
                ->check(CLI::ExistingFile);
            app.add_option("-o,--output", args->out, "model directory to write (required)");
            AddHiddenAlias(app, "--out", args->out);
            app.add_option("--provider", args->provider,
                           "provider to train for (default: the dataset's only one)");
            app.add_option("--folds", args->options.folds, "GroupKFold folds (< 2: no CV)")
                ->capture_default_str()
                ->check(CLI::Range(0, 100));
            app.add_option("--seed", args->options.seed, "random seed")->capture_default_str();
            app.add_option("--threads", args->options.num_threads, "LightGBM threads")
                ->capture_default_str()
                ->check(CLI::Range(1, 256));
            app.add_option("--max-rounds", args->options.max_rounds, "most trees per model")
                ->capture_default_str()
                ->check(CLI::Range(1, 100000));
            app.add_option("--early-stopping", args->options.early_stopping_rounds,
                           "rounds without improvement on the inner split before stopping")
                ->capture_default_str()
                ->check(CLI::Range(1, 10000));
            app.add_option("--targets", args->targets, "comma-separated targets, tflops first")
                ->capture_default_str();
            app.add_option(
                   "--objective", args->objective,
                   "TFLOPS model: regression (on --label TFLOPS), lambdarank (per problem), or "
                   "blend (both, their per-problem rank percentiles weighted by --blend-weight)")
                ->capture_default_str();
            app.add_option("--label", args->label,
                           "regression label: log or log1p of the target (log weighs relative "
                           "errors the same at every speed)")
                ->capture_default_str();
            app.add_option("--top-weight", args->options.top_weight,
                           "regression: weigh rows by 1 + W * (TFLOPS / problem best)^4, so the "
                           "fit concentrates on each problem's fast configs (0 = unweighted)")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1000.0));
            app.add_option("--hard-mining", args->options.hard_mining_factor,
                           "hard-example mining: redo each fit with the training problems whose "
                           "in-sample pick is under --hard-threshold of their best weighted this "
                           "many times (1 = off)")
                ->capture_default_str()
                ->check(CLI::Range(1.0, 1000.0));
            app.add_option("--hard-threshold", args->options.hard_mining_threshold,
                           "efficiency under which a training problem counts as hard")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1.0));
            app.add_option("--blend-weight", args->options.blend_regression_weight,
                           "blend: weight of the regression member's per-problem rank "
                           "percentile (the ranker's is 1 - this)")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1.0));
            app.add_option("--sample-weak", args->options.sampling.weak_fraction,
                           "row sampling (for data too large to train in time): keep this "
                           "fraction of each problem's measured rows below --sample-keep-within "
                           "of its best, drawn by a hash of --seed and the row's keys (every "
                           "row near the best is kept; the peer block and the candidate table "
                           "still see every row; 1 = no sampling)")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1.0));
            app.add_option("--sample-aborted", args->sample_aborted,
                           "row sampling: the fraction of aborted (early-stopped, estimated) "
                           "rows below the line to keep (default: --sample-weak's)")
                ->check(CLI::Range(0.0, 1.0));
            app.add_option("--sample-keep-within", args->options.sampling.keep_within,
                           "row sampling: every row at or above this fraction of its problem's "
                           "best TFLOPS is kept")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1.0));
            app.add_flag("--peer-rank", args->options.peer_rank_feature,
                         "add the peer block: the provider heuristic's own picks (cuBLASLt's top "
                         "8, asked on the GPU at run time; the data's peer_rank) as features of "
                         "each candidate");
            app.add_option("--learning-rate", args->options.params.learning_rate)
                ->capture_default_str();
            app.add_option("--num-leaves", args->options.params.num_leaves)->capture_default_str();
            app.add_option("--param", args->params,
                           "a LightGBM parameter as key=value, repeatable (e.g. --param "
                           "min_data_in_leaf=50 --param feature_fraction=0.7); recorded in "
                           "train_manifest.json");
            app.add_option("--warm-start", args->warm_start,
                           "model directory to add trees to (same feature spec required)")
                ->check(CLI::ExistingDirectory);
            app.add_option("--warm-start-rounds", args->options.warm_start_rounds,
                           "most trees added by a warm start")
                ->capture_default_str();
            app.add_option("--machines", args->options.machines,
                           "distributed data-parallel training (LightGBM's tree_learner=data): "
                           "every process, host:port,host:port (start one kselect train per "
                           "entry, each with its own --listen-port and its shard of the data: "
                           "--shard i/N or its own --data files); fits --max-rounds trees, "
                           "--folds 0; each process writes the same trees (docs/models.md)");
            app.add_option("--listen-port", args->options.listen_port,
                           "this process's port from --machines")
                ->check(CLI::Range(1, 65535));
            app.add_option("--network-timeout", args->options.network_timeout_minutes,
                           "minutes to wait for the other processes")
                ->capture_default_str()
                ->check(CLI::Range(1, 600));
            app.add_option("--shard", args->shard,
                           "train on problems i, i+N, ... of the data (i/N): one process's share "
                           "in distributed training");
            return [args]() { return RunTrain(*args); };
          }};
}

}  // namespace kselect::cli
