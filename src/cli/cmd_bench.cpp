// kselect bench: time a provider's catalogue on every shape of a shape file into streaming JSONL.
// A GEMM shape file gives one problem per row (--dtype, --ops); a conv shape file, told by its
// header, one per row and direction (--dtype, --conv-direction; tensors channels-last).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "cli/gemm_args.h"
#include "core/text.h"
#include "kselect/bench.h"
#include "kselect/shapes.h"
#include "providers/tile/tile_engine.h"

namespace kselect::cli {
namespace {

struct BenchArgs {
  std::string shapes;
  std::string conv_directions = "fwd";
  bool dry_run = false;
  int64_t max_shapes = 0;
  std::string dtype = "bf16";
  std::string ops = "TN";
  std::string provider = "cublaslt";
  std::string rules = "default";
  std::string rules_dir = tile::DefaultRulesRoot();
  std::string output;
  bool resume = false;
  std::string shard;
  std::string devices = "0";
  std::string device_kind;
  std::string run_id;
  double max_workspace_mib = 32;
  double rotate_mib = 0;
  BenchOptions options;
};

// "fwd,bwd_data": distinct directions in the order given.
StatusOr<std::vector<ConvDirection>> ParseConvDirections(const std::string& text) {
  std::vector<ConvDirection> directions;
  for (const std::string_view part : text::Split(text, ',')) {
    auto direction = ParseConvDirection(text::Trim(part));
    if (!direction.ok()) return direction.status().WithContext("--conv-direction");
    if (std::find(directions.begin(), directions.end(), *direction) != directions.end()) {
      return InvalidArgumentError("--conv-direction: '" + std::string(text::Trim(part)) +
                                  "' is listed twice");
    }
    directions.push_back(*direction);
  }
  return directions;
}

// The GEMM problems of a GEMM shape file: one per row.
StatusOr<std::vector<Problem>> GemmBenchProblems(const BenchArgs& args) {
  KSELECT_ASSIGN_OR_RETURN(std::vector<ShapeRow> shapes, LoadShapeFile(args.shapes));
  if (args.max_shapes > 0 && static_cast<int64_t>(shapes.size()) > args.max_shapes) {
    shapes.resize(static_cast<size_t>(args.max_shapes));
  }
  std::vector<Problem> problems;
  for (const ShapeRow& row : shapes) {
    auto problem = MakeGemmProblem(row.m, row.n, row.k, row.batch, args.dtype, args.ops);
    if (!problem.ok()) return problem.status().WithContext(args.shapes);
    problems.push_back(*problem);
  }
  return problems;
}

// The convolutions of a conv shape file: one per row and direction, row by row (a run stopped by
// --time-limit-s has every direction of the rows it reached).
StatusOr<std::vector<Problem>> ConvBenchProblems(const BenchArgs& args) {
  DataType dtype;
  if (args.dtype == "bf16") {
    dtype = DataType::kBF16;
  } else if (args.dtype == "fp16") {
    dtype = DataType::kF16;
  } else {
    return InvalidArgumentError("--dtype '" + args.dtype +
                                "' is not a convolution dtype (bf16 or fp16)");
  }
  KSELECT_ASSIGN_OR_RETURN(const std::vector<ConvDirection> directions,
                           ParseConvDirections(args.conv_directions));
  KSELECT_ASSIGN_OR_RETURN(std::vector<ConvShapeRow> shapes, LoadConvShapeFile(args.shapes));
  if (args.max_shapes > 0 && static_cast<int64_t>(shapes.size()) > args.max_shapes) {
    shapes.resize(static_cast<size_t>(args.max_shapes));
  }
  std::vector<Problem> problems;
  for (const ConvShapeRow& row : shapes) {
    for (const ConvDirection direction : directions)
      problems.push_back(ConvShape(row, direction, dtype));
  }
  return problems;
}

int RunBenchCommand(BenchArgs& args, const CLI::App& app) {
  BenchOptions& o = args.options;
  auto kind = ShapeFileKindOf(args.shapes);
  if (!kind.ok()) return ReportError("bench", kind.status());
  const bool conv = *kind == ShapeFileKind::kConv;
  // An option of the other kind of shape file would be ignored: say so instead.
  if (conv && app.count("--ops") > 0) {
    return ReportError(
        "bench", InvalidArgumentError(args.shapes + " is a conv shape file: --ops applies to "
                                                    "GEMM shape files (use --conv-direction)"));
  }
  if (!conv && app.count("--conv-direction") > 0) {
    return ReportError("bench",
                       InvalidArgumentError(args.shapes + " is a GEMM shape file: --conv-direction "
                                                          "applies to conv shape files"));
  }
  if (!args.dry_run) {
    if (args.output.empty()) {
      return ReportError("bench", InvalidArgumentError("--output is required (unless --dry-run)"));
    }
    // The records are appended to --output: it must not be the shape file being read.
    if (auto s = text::CheckOutputFile(args.output, "--output", {args.shapes}); !s.ok()) {
      return ReportError("bench", s);
    }
  }
  auto problems = conv ? ConvBenchProblems(args) : GemmBenchProblems(args);
  if (!problems.ok()) return ReportError("bench", problems.status());
  o.problems = std::move(*problems);
  auto provider = ParseProvider(args.provider);
  if (!provider.ok()) return ReportError("bench", provider.status());
  o.provider = *provider;
  o.output_path = args.output;
  o.resume = args.resume;
  if (!args.shard.empty()) {
    auto shard = ParseShard(args.shard);
    if (!shard.ok()) return ReportError("bench", shard.status());
    o.shard = *shard;
  } else {
    auto shard = ShardFromEnvironment();
    if (!shard.ok()) return ReportError("bench", shard.status());
    o.shard = *shard;
  }
  if (args.dry_run) {
    // What this shard would time, without a GPU, a rule set or an output file.
    const std::vector<size_t> mine = ShardIndices(o.problems.size(), o.shard);
    for (const size_t i : mine) std::printf("%s\n", ProblemToString(o.problems[i]).c_str());
    std::fprintf(stderr, "kselect bench: dry run: %zu of %zu problems in shard %d/%d (%s)\n",
                 mine.size(), o.problems.size(), o.shard.index, o.shard.count,
                 conv ? ("conv " + args.dtype + " " + args.conv_directions).c_str()
                      : (args.dtype + " " + args.ops).c_str());
    return kExitOk;
  }
  // Every provider's catalogue: what it enumerates or generates, filtered by the rule set; a
  // generating provider (the tile engine) reads its generator from the same file.
  auto rules = FindRuleSet(args.rules_dir, o.provider, args.rules);
  if (!rules.ok()) return ReportError("bench", rules.status());
  o.rules = *rules;
  auto devices = ParseDeviceList(args.devices);
  if (!devices.ok()) return ReportError("bench", devices.status());
  o.devices = *devices;
  o.device_kind = args.device_kind;
  o.run_id = args.run_id;
  o.max_workspace_bytes = static_cast<int64_t>(args.max_workspace_mib * 1024 * 1024);
  o.rotate_bytes = static_cast<int64_t>(args.rotate_mib * 1024 * 1024);
  std::fprintf(
      stderr,
      "kselect bench: %zu problems (%s %s), shard %d/%d, rule set %s (%s), devices %s -> %s\n",
      o.problems.size(), args.dtype.c_str(),
      conv ? ("conv " + args.conv_directions).c_str() : args.ops.c_str(), o.shard.index,
      o.shard.count, o.rules.name.c_str(), FingerprintText(o.rules.fingerprint).c_str(),
      args.devices.c_str(), o.output_path.c_str());
  // Problems finished, with rate and ETA; -v adds a line per problem (its configs to time).
  o.progress = ShowProgress("bench");
  auto summary = RunBench(o);
  if (!summary.ok()) return ReportError("bench", summary.status());
  const BenchSummary& s = *summary;
  std::printf(
      "problems %lld (failed %lld, finished %lld, already finished %lld), rows written %lld "
      "(valid %lld, invalid %lld, aborted %lld), skipped (resume) %lld, worker restarts %lld, "
      "%.1f s, %.1f rows/s%s\n",
      static_cast<long long>(s.problems), static_cast<long long>(s.problems_failed),
      static_cast<long long>(s.problems_done), static_cast<long long>(s.problems_skipped),
      static_cast<long long>(s.rows), static_cast<long long>(s.valid),
      static_cast<long long>(s.invalid), static_cast<long long>(s.aborted),
      static_cast<long long>(s.skipped), static_cast<long long>(s.worker_restarts), s.seconds,
      s.seconds > 0 ? static_cast<double>(s.rows) / s.seconds : 0.0,
      s.time_limited ? "; stopped by --time-limit-s (continue with --resume)" : "");
  return s.problems_failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

Command BenchCommand() {
  return {
      "bench", "time a provider's catalogue on a shape file into streaming JSONL (GPU)",
      [](CLI::App& app) -> RunFunction {
        auto args = std::make_shared<BenchArgs>();
        BenchOptions& o = args->options;
        app.add_option("--shapes", args->shapes,
                       "shape CSV, GEMM (shapes/wide.csv: header m,n,k,...) or convolution "
                       "(shapes/conv_train.csv: header n,c,k,g,...), told by its header")
            ->required()
            ->type_name("FILE");
        app.add_option("--max-shapes", args->max_shapes,
                       "use only the first N rows of the shape file (0 = all)");
        app.add_option("--dtype", args->dtype,
                       "bf16, fp16 or fp8 (e4m3 inputs, bf16 output; GEMM only)")
            ->capture_default_str();
        app.add_option("--ops", args->ops, "cuBLAS transpose pair: NN, NT, TN, TT (GEMM files)")
            ->capture_default_str();
        app.add_option("--conv-direction", args->conv_directions,
                       "conv shape files: directions timed for every row, comma-separated "
                       "(fwd, bwd_data, bwd_weight); tensors channels-last (NHWC/NDHWC)")
            ->capture_default_str();
        app.add_flag("--dry-run", args->dry_run,
                     "print the problems this shard would time, one per line, and stop (no "
                     "GPU, rule set or output file needed)");
        app.add_option("--provider", args->provider, "kernel provider")->capture_default_str();
        app.add_option("--rules", args->rules, "rule set name (rules/<provider>/<name>.json)")
            ->capture_default_str();
        app.add_option("--rules-dir", args->rules_dir,
                       "folder of rule sets (<provider>/<name>.json); default "
                       "$KSELECT_RULES_DIR, else the install's or source tree's rules/")
            ->capture_default_str();
        app.add_option("-o,--output", args->output,
                       "JSONL file the records are appended to (required unless --dry-run)")
            ->type_name("FILE");
        app.add_flag("--resume", args->resume,
                     "continue a killed run in the same file (repairs a torn last line)");
        app.add_option("--shard", args->shard,
                       "run problems i, i+N, ... (i/N); default from SLURM_PROCID/SLURM_NTASKS or "
                       "OMPI_COMM_WORLD_RANK/SIZE, else 0/1");
        app.add_option("--devices", args->devices, "CUDA devices, comma-separated")
            ->capture_default_str();
        app.add_option("--device-kind", args->device_kind,
                       "lender's kind name recorded in the run (nvidia-h200)");
        app.add_option("--run-id", args->run_id, "run id (default: kind-time-shard)");
        app.add_option("--repeats", o.repeats, "timed batches per config (median)")
            ->capture_default_str();
        app.add_option("--warmup", o.warmup_iters, "most warm-up launches")->capture_default_str();
        app.add_option("--warmup-ms", o.warmup_ms, "GPU time the warm-up launches aim for (ms)")
            ->capture_default_str();
        app.add_option("--batch-ms", o.batch_ms, "GPU time one timed batch aims for (ms)")
            ->capture_default_str();
        app.add_option("--config-budget-ms", o.config_budget_ms,
                       "GPU time budget for the timed batches of one config (ms): repeats are cut "
                       "(not below 3) for long kernels")
            ->capture_default_str();
        app.add_option("--abort-factor", o.abort_factor,
                       "abort configs whose estimate exceeds this many times the best so far")
            ->capture_default_str();
        app.add_option("--confirm-top", o.confirm_top,
                       "after a problem, time its N fastest configs (and the heuristic's pick) "
                       "again; ingestion takes the median of the repeats")
            ->capture_default_str()
            ->check(CLI::Range(0, 1000));
        app.add_option("--confirm-rounds", o.confirm_rounds,
                       "times each of those is timed again (0 = no confirmation)")
            ->capture_default_str()
            ->check(CLI::Range(0, 100));
        app.add_option("--peers", o.heuristic_picks, "provider heuristic picks recorded with ranks")
            ->capture_default_str();
        app.add_flag("--interleave-reference", o.interleave_reference,
                     "drift control: time each config batch by batch interleaved with the "
                     "problem's reference (its first valid config); rows record the reference's "
                     "time from the same batches (docs/lab/drift.md)");
        app.add_option(
               "--max-configs", o.max_configs_per_problem,
               "time at most the first N catalogue configs per problem (0 = all; smoke runs)")
            ->capture_default_str();
        app.add_option("--sample-fraction", o.sample_fraction,
                       "time a deterministic random sample of the rule set's configs (0-1]; with "
                       "--rules full it measures what a smaller catalogue loses")
            ->capture_default_str()
            ->check(CLI::Range(1e-6, 1.0));
        app.add_option("--sample-seed", o.sample_seed, "seed of --sample-fraction")
            ->capture_default_str();
        app.add_option("--time-limit-s", o.time_limit_s,
                       "stop starting configs after this many seconds (0 = none); --resume "
                       "continues")
            ->capture_default_str();
        app.add_option("--planners", o.planners,
                       "workers per device enumerating upcoming problems ahead of the timer")
            ->capture_default_str()
            ->check(CLI::Range(1, 64));
        app.add_option("--watchdog-s", o.watchdog_s,
                       "kill a worker silent this long on one config (s)")
            ->capture_default_str();
        app.add_option("--max-workspace-mib", args->max_workspace_mib, "workspace limit (MiB)")
            ->capture_default_str();
        app.add_option("--rotate-mib", args->rotate_mib,
                       "input bytes to rotate through (MiB; 0 = 2 x L2)")
            ->capture_default_str();
        return [args, &app] { return RunBenchCommand(*args, app); };
      }};
}

}  // namespace kselect::cli
