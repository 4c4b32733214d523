// kselect bench: time a provider's catalogue on every shape of a shape file into streaming JSONL.
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

int RunBenchCommand(BenchArgs& args) {
  BenchOptions& o = args.options;
  // The records are appended to --output: it must not be the shape file being read.
  if (auto s = text::CheckOutputFile(args.output, "--output", {args.shapes}); !s.ok()) {
    return ReportError("bench", s);
  }
  auto shapes = LoadShapeFile(args.shapes);
  if (!shapes.ok()) return ReportError("bench", shapes.status());
  if (args.max_shapes > 0 && static_cast<int64_t>(shapes->size()) > args.max_shapes) {
    shapes->resize(static_cast<size_t>(args.max_shapes));
  }
  for (const ShapeRow& row : *shapes) {
    auto problem = MakeGemmProblem(row.m, row.n, row.k, row.batch, args.dtype, args.ops);
    if (!problem.ok()) return ReportError("bench", problem.status().WithContext(args.shapes));
    o.problems.push_back(*problem);
  }
  auto provider = ParseProvider(args.provider);
  if (!provider.ok()) return ReportError("bench", provider.status());
  o.provider = *provider;
  // Every provider's catalogue: what it enumerates or generates, filtered by the rule set; a
  // generating provider (the tile engine) reads its generator from the same file.
  auto rules = FindRuleSet(args.rules_dir, o.provider, args.rules);
  if (!rules.ok()) return ReportError("bench", rules.status());
  o.rules = *rules;
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
  auto devices = ParseDeviceList(args.devices);
  if (!devices.ok()) return ReportError("bench", devices.status());
  o.devices = *devices;
  o.device_kind = args.device_kind;
  o.run_id = args.run_id;
  o.max_workspace_bytes = static_cast<int64_t>(args.max_workspace_mib * 1024 * 1024);
  o.rotate_bytes = static_cast<int64_t>(args.rotate_mib * 1024 * 1024);
  std::fprintf(
      stderr,
      "kselect bench: %zu shapes (%s %s), shard %d/%d, rule set %s (%s), devices %s -> %s\n",
      o.problems.size(), args.dtype.c_str(), args.ops.c_str(), o.shard.index, o.shard.count,
      o.rules.name.c_str(), FingerprintText(o.rules.fingerprint).c_str(), args.devices.c_str(),
      o.output_path.c_str());
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
        app.add_option("--shapes", args->shapes, "shape CSV (shapes/wide.csv, ...)")
            ->required()
            ->type_name("FILE");
        app.add_option("--max-shapes", args->max_shapes,
                       "use only the first N rows of the shape file (0 = all)");
        app.add_option("--dtype", args->dtype, "bf16, fp16 or fp8 (e4m3 inputs, bf16 output)")
            ->capture_default_str();
        app.add_option("--ops", args->ops, "cuBLAS transpose pair: NN, NT, TN, TT")
            ->capture_default_str();
        app.add_option("--provider", args->provider, "kernel provider")->capture_default_str();
        app.add_option("--rules", args->rules, "rule set name (rules/<provider>/<name>.json)")
            ->capture_default_str();
        app.add_option("--rules-dir", args->rules_dir,
                       "folder of rule sets (<provider>/<name>.json); default "
                       "$KSELECT_RULES_DIR, else the source tree's rules/")
            ->capture_default_str();
        app.add_option("-o,--output", args->output, "JSONL file the records are appended to")
            ->required()
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
        return [args] { return RunBenchCommand(*args); };
      }};
}

}  // namespace kselect::cli
