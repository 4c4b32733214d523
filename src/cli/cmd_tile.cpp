// kselect tile: the tile engine's rule sets and kernels.
//   tile list   --rules R   one catalogue config key per line; --snapshot writes the committed
//                           snapshot (rules/tile/snapshots/R.json, kselect.catalogue_snapshot)
//   tile source --rules R   the generated source of the first build spec (or --index i)
//   tile build  --rules R   compile every (config, variant) spec with NVRTC into the cubin cache
//   tile verify --rules R   (GPU) every config against a naive fp32 reference on a shape list
//   tile time   --rules R   (GPU) TFLOP/s of every config on one shape, beside cuBLASLt's pick
//   tile bench  --rules R   (GPU) head to head with cuBLASLt on shapes, one timing module
//                           (tuner.h: graph timer, rotated operands, interleaved finalists)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/gemm_args.h"
#include "core/text.h"
#include "kselect/catalogue.h"
#include "kselect/config_schema.h"
#include "kselect/cross_provider.h"
#include "kselect/eval.h"
#include "kselect/head_to_head.h"
#include "kselect/shapes.h"
#include "kselect/tile_checks.h"
#include "kselect/tuner.h"
#include "kselect/version.h"
#include "providers/tile/tile_engine.h"

namespace kselect::cli {
namespace {

struct TileOptions {
  std::string rules;
  std::string rules_dir = tile::DefaultRulesRoot();
  std::string snapshot;
  std::string cache_dir = tile::CompilerOptions::DefaultCacheDir();
  bool no_cache = false;
  int jobs = 0;
  bool stats = false;
  int index = 0;
  bool fail_fast = false;
  std::string shape = "4096,4096,4096";
  int repeats = 20;
  std::string log_path;
  // tile bench
  std::vector<std::string> shapes;
  std::string shape_file;
  std::string layout = "rcc";
  std::string dtype = "bf16";
  int cublaslt_picks = 16;
  bool cublaslt_space = false;
  int finalists = 3;
  int rounds = 15;
  bool keep_screened = false;
  std::string cross_model;
  int cross_time_top_k = 0;
  bool cross_first_use_warm_l2 = false;
  bool cross_first_use_eager = false;
  double cross_vendor_margin = SelectorOptions{}.first_use_vendor_margin;
  bool cross_only = false;
  // tile cross
  std::vector<std::string> screened_files;
  std::string json_path;
  std::string device_kind;
  std::string run_id;
};

void AddRuleOptions(CLI::App& app, TileOptions& o) {
  app.add_option("--rules", o.rules, "rule set name (<rules-dir>/tile/<name>.json) or a .json path")
      ->required();
  app.add_option("--rules-dir", o.rules_dir,
                 "folder of rule sets (<provider>/<name>.json); default $KSELECT_RULES_DIR, else "
                 "the install's or source tree's rules/")
      ->capture_default_str();
}

void AddCompileOptions(CLI::App& app, TileOptions& o) {
  app.add_option("--cache-dir", o.cache_dir, "on-disk cubin cache")->capture_default_str();
  app.add_flag("--no-cache", o.no_cache, "compile everything, read and write no cache");
  app.add_option("-j,--jobs", o.jobs, "parallel NVRTC compiles (0 = all cores)")
      ->capture_default_str();
}

tile::CompilerOptions CompilerOptionsOf(const TileOptions& o) {
  tile::CompilerOptions c;
  c.cache_dir = o.no_cache ? std::string() : o.cache_dir;
  c.threads = o.jobs;
  return c;
}

int RunList(const TileOptions& o) {
  if (!o.snapshot.empty()) {
    if (Status s = text::CheckOutputFile(o.snapshot, "--snapshot", {}); !s.ok()) {
      return ReportError("tile list", s);
    }
  }
  StatusOr<tile::TileRuleSet> set = tile::LoadRuleSet(o.rules, o.rules_dir);
  if (!set.ok()) return ReportError("tile list", set.status());
  for (const auto& c : set->configs) std::printf("%s\n", ConfigKey(c).c_str());
  if (!o.snapshot.empty()) {
    // The generation is device and problem independent: the snapshot has no device fields.
    CatalogueSnapshot snapshot;
    snapshot.provider = Provider::kTile;
    snapshot.rule_set = set->name;
    snapshot.rules_fingerprint = set->rules.fingerprint;
    snapshot.enumerated = static_cast<int64_t>(set->space.size());
    snapshot.tool = ToolDescription();
    snapshot.configs.assign(set->configs.begin(), set->configs.end());
    if (Status s = text::WriteFileAtomically(o.snapshot, CatalogueSnapshotToJson(snapshot));
        !s.ok()) {
      return ReportError("tile list", s);
    }
  }
  if (o.stats) {
    std::fprintf(stderr, "%s: %lld generated, %zu valid, %zu in the catalogue, %zu variants\n",
                 set->name.c_str(), static_cast<long long>(set->generated), set->space.size(),
                 set->configs.size(), set->variants.size());
    for (const auto& [rule, count] : set->rejected_by_rule) {
      std::fprintf(stderr, "  rejected by %s: %lld\n", rule.c_str(), static_cast<long long>(count));
    }
  }
  return kExitOk;
}

int RunSource(const TileOptions& o) {
  StatusOr<tile::TileRuleSet> set = tile::LoadRuleSet(o.rules, o.rules_dir);
  if (!set.ok()) return ReportError("tile source", set.status());
  const std::vector<tile::TileKernelSpec> specs = tile::BuildSpecs(*set);
  if (o.index < 0 || o.index >= static_cast<int>(specs.size())) {
    return ReportError("tile source", InvalidArgumentError("--index out of range"));
  }
  std::printf("%s", tile::GenerateSource(specs[o.index]).c_str());
  return kExitOk;
}

int RunBuild(const TileOptions& o) {
  StatusOr<tile::TileRuleSet> set = tile::LoadRuleSet(o.rules, o.rules_dir);
  if (!set.ok()) return ReportError("tile build", set.status());
  const std::vector<tile::TileKernelSpec> specs = tile::BuildSpecs(*set);
  const tile::TileCompiler compiler(CompilerOptionsOf(o));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<StatusOr<tile::TileBinary>> results = compiler.CompileAll(specs);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int failures = 0, hits = 0;
  std::vector<double> seconds;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      ++failures;
      std::fprintf(stderr, "FAILED %s\n%s\n", tile::SpecKey(specs[i]).c_str(),
                   results[i].status().ToString().c_str());
      continue;
    }
    if (results[i]->from_cache) {
      ++hits;
    } else {
      seconds.push_back(results[i]->compile_seconds);
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds.empty() ? 0.0 : seconds[seconds.size() / 2];
  const double max = seconds.empty() ? 0.0 : seconds.back();
  std::printf(
      "%s: %zu specs (%zu configs x %zu variants), %d compiled, %d cache hits, %d failed; "
      "NVRTC median %.3f s, max %.3f s per spec; wall %.1f s\n",
      set->name.c_str(), specs.size(), set->configs.size(), set->variants.size(),
      static_cast<int>(seconds.size()), hits, failures, median, max, wall);
  return failures == 0 ? kExitOk : kExitFailure;
}

// The error a check line shows: the relative rms error, NaN when an output was not finite (an
// element left unwritten), or the launch error.
std::string CheckErrorText(const tile::TileCheck& check) {
  if (!check.result.ok()) return check.result.status().ToString();
  return std::to_string(check.result->non_finite > 0 ? std::nan("")
                                                     : check.result->relative_rms_error);
}

int RunVerify(const TileOptions& o, const tile::TileRuleSet& rules) {
  std::ofstream log;
  if (!o.log_path.empty()) log.open(o.log_path);
  tile::TileVerifyCallbacks callbacks;
  callbacks.on_build_failure = [](std::string_view stage, const Status& status) {
    std::fprintf(stderr, "%s failed: %s\n", std::string(stage).c_str(), status.ToString().c_str());
  };
  callbacks.on_check = [&](const tile::TileCheck& check) {
    const bool passed = check.result.ok() && check.result->passed;
    if (log.is_open()) {
      log << (passed ? "PASS " : "FAIL ") << check.problem.ToString() << " | " << check.spec_key
          << " | err=" << CheckErrorText(check) << "\n";
    }
    if (!passed) {
      std::fprintf(stderr, "FAIL %s | %s | %s\n", check.problem.ToString().c_str(),
                   check.spec_key.c_str(), CheckErrorText(check).c_str());
      if (check.result.ok()) std::fprintf(stderr, "  %s\n", check.result->ToString().c_str());
    }
  };
  callbacks.on_variant = [&](const tile::TileVariantSummary& v) {
    std::printf(
        "verify %s in=%s out=%s layout=%s: %zu specs, %d checks, %d failed, %d skipped, "
        "worst rel err %.2e (tol %.0e)\n",
        rules.name.c_str(), std::string(DataTypeName(v.variant.input)).c_str(),
        std::string(DataTypeName(v.variant.output)).c_str(), v.variant.layout.ToString().c_str(),
        v.specs, v.checks, v.failures, v.skipped, v.worst_error, v.tolerance.relative_rms);
    std::fflush(stdout);
  };
  StatusOr<tile::TileVerifySummary> summary =
      tile::VerifyTileRuleSet(rules, CompilerOptionsOf(o), o.fail_fast, callbacks);
  if (!summary.ok()) return ReportError("tile verify", summary.status());
  if (summary->stopped) return kExitFailure;
  std::printf("verify %s: %d checks, %d failed, %d skipped (config cannot run the shape)\n",
              rules.name.c_str(), summary->checks, summary->failures, summary->skipped);
  return summary->failures == 0 ? kExitOk : kExitFailure;
}

int RunTime(const TileOptions& o, const tile::TileRuleSet& rules) {
  const std::vector<std::string_view> parts = text::Split(o.shape, ',');
  if (parts.size() != 3) return ReportError("tile time", InvalidArgumentError("--shape m,n,k"));
  int64_t dims[3];
  for (int i = 0; i < 3; ++i) {
    StatusOr<int64_t> v = text::ParseInt64(parts[i]);
    if (!v.ok()) return ReportError("tile time", v.status());
    dims[i] = *v;
  }
  const Status timed = tile::TimeTileRuleSet(
      rules, CompilerOptionsOf(o), dims[0], dims[1], dims[2], o.repeats,
      [](const tile::TileTimeReport& r) {
        const StatusOr<double>& lt = r.cublaslt_tflops;
        const double lt_tflops = lt.ok() ? *lt : 0.0;
        std::printf("time %s: %zu configs timed; cuBLASLt first heuristic pick %.1f TFLOP/s%s\n",
                    r.problem.ToString().c_str(), r.configs.size(), lt_tflops,
                    lt.ok() ? "" : (" (" + lt.status().ToString() + ")").c_str());
        for (size_t i = 0; i < std::min<size_t>(r.configs.size(), 8); ++i) {
          std::printf("  %7.1f TFLOP/s  %5.1f%% of cuBLASLt  %s\n", r.configs[i].tflops,
                      lt_tflops > 0 ? 100.0 * r.configs[i].tflops / lt_tflops : 0.0,
                      r.configs[i].spec_key.c_str());
        }
        std::fflush(stdout);
      });
  return timed.ok() ? kExitOk : ReportError("tile time", timed);
}

int RunBench(const TileOptions& o) {
  constexpr const char* kWhat = "tile bench";
  StatusOr<std::vector<ShapeRow>> shape_rows = ShapeRowsOf(o.shapes, o.shape_file);
  if (!shape_rows.ok()) return ReportError(kWhat, shape_rows.status());
  const std::vector<ShapeRow>& rows = *shape_rows;
  StatusOr<GemmLayout> layout = ParseGemmLayout(o.layout);
  if (!layout.ok()) return ReportError(kWhat, layout.status());
  StatusOr<DataType> dtype = ParseDataType(o.dtype);
  if (!dtype.ok()) return ReportError(kWhat, dtype.status());
  if (!o.json_path.empty()) {
    std::vector<std::string> inputs;
    if (!o.shape_file.empty()) inputs.push_back(o.shape_file);
    if (Status s = text::CheckOutputFile(o.json_path, "--output", inputs); !s.ok()) {
      return ReportError(kWhat, s);
    }
  }
  if ((o.cross_only || o.cross_time_top_k > 0 || o.cross_first_use_warm_l2 ||
       o.cross_first_use_eager) &&
      o.cross_model.empty()) {
    return ReportError(kWhat, InvalidArgumentError(
                                  "--cross-only, --cross-time-top-k, --cross-first-use-warm-l2 and "
                                  "--cross-first-use-eager need --cross-model"));
  }
  HeadToHeadOptions options;
  options.provider_options.rule_set = o.rules;
  options.provider_options.rules_dir = o.rules_dir;
  options.cublaslt_picks = o.cublaslt_picks;
  options.cublaslt_space = o.cublaslt_space;
  options.finalists = o.finalists;
  options.rounds = o.rounds;
  options.keep_screened = o.keep_screened;
  options.cross_model = o.cross_model;
  options.cross_time_top_k = o.cross_time_top_k;
  options.cross_first_use_cold_l2 = !o.cross_first_use_warm_l2;
  options.cross_first_use_graphs = !o.cross_first_use_eager;
  options.cross_vendor_margin = o.cross_vendor_margin;
  options.cross_only = o.cross_only;
  StatusOr<std::unique_ptr<HeadToHeadRunner>> runner = HeadToHeadRunner::Create(options);
  if (!runner.ok()) return ReportError(kWhat, runner.status());
  std::vector<HeadToHead> results;
  const std::string run_id =
      o.run_id.empty() ? "tile-bench-" + text::UtcNowIso8601(/*compact=*/true) : o.run_id;
  std::printf("%-28s %9s %9s %9s  %6s %6s %6s  %7s  %s\n", "problem (us)", "lt pick", "lt best",
              "tile", "hbm:pk", "best", "tile", "tile/lt", "tile config");
  for (const ShapeRow& row : rows) {
    GemmProblem p;
    p.m = row.m, p.n = row.n, p.k = row.k, p.batch = row.batch;
    p.layout = *layout;
    p.dtype_a = p.dtype_b = p.dtype_c = *dtype;
    StatusOr<HeadToHead> h = (*runner)->Run(p);
    if (!h.ok()) {
      std::fprintf(stderr, "tile bench: %s: %s\n", p.ToString().c_str(),
                   h.status().ToString().c_str());
      if (h.status().code() == StatusCode::kUnavailable ||
          h.status().code() == StatusCode::kInternal)
        return kExitFailure;
      continue;
    }
    const double peak = h->peak_gb_s;
    const char name_none[] = "-";
    std::printf(
        "%-28s %9.2f %9.2f %9.2f  %6.3f %6.3f %6.3f  %7.3f  %s\n",
        (std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k)).c_str(),
        h->cublaslt_pick.median_ms * 1e3, h->cublaslt_best.median_ms * 1e3,
        h->tile_best ? h->tile_best->median_ms * 1e3 : 0.0,
        HbmFraction(p, h->cublaslt_pick.median_ms, peak),
        HbmFraction(p, h->cublaslt_best.median_ms, peak),
        h->tile_best ? HbmFraction(p, h->tile_best->median_ms, peak) : 0.0,
        h->tile_over_cublaslt_best,
        h->tile_best ? SchemaOf(h->tile_best->config).describe(h->tile_best->config).c_str()
                     : name_none);
    std::fflush(stdout);
    results.push_back(std::move(*h));
    // Rewritten after every shape: a run stopped by a time limit keeps what it measured.
    if (!o.json_path.empty()) {
      const std::string text =
          HeadToHeadJson(results, (*runner)->hardware(), o.device_kind, run_id);
      if (Status s = text::WriteFileAtomically(o.json_path, text); !s.ok()) {
        return ReportError(kWhat, s);
      }
    }
  }
  return results.size() == rows.size() ? kExitOk : kExitFailure;
}

// Offline: a cross-provider model's decisions scored on head-to-head files with screened times.
int RunCross(const TileOptions& o) {
  constexpr const char* kWhat = "tile cross";
  if (!o.json_path.empty()) {
    if (Status s = text::CheckOutputFile(o.json_path, "--output", o.screened_files); !s.ok()) {
      return ReportError(kWhat, s);
    }
  }
  SelectorOptions so;
  so.check_can_implement = false;
  so.query_heuristic = false;
  StatusOr<std::unique_ptr<CrossProviderSelector>> selector =
      CrossProviderSelector::Open(o.cross_model, so);
  if (!selector.ok()) return ReportError(kWhat, selector.status());
  StatusOr<CrossEvaluation> e = EvaluateCrossProvider(**selector, o.screened_files);
  if (!e.ok()) return ReportError(kWhat, e.status());
  std::printf("%-24s %7s %8s %8s %8s %8s  %s\n", "problem", "gain", "pick us", "choice", "tile top",
              "best", "decision");
  for (const CrossEvaluationRow& r : e->rows) {
    std::printf("%-24s %7.3f %8.2f %8.2f %8.2f %8.2f  %s %.3f\n",
                (std::to_string(r.problem.m) + "x" + std::to_string(r.problem.n) + "x" +
                 std::to_string(r.problem.k))
                    .c_str(),
                r.predicted_gain, r.pick_ms * 1e3, r.decision_ms * 1e3, r.challenger_top_ms * 1e3,
                r.best_ms * 1e3, r.challenger_chosen ? "tile    " : "cublaslt",
                r.pick_ms / r.decision_ms);
  }
  std::printf(
      "problems %zu: decision over cuBLASLt's pick geomean %.4f (worst %.3f), tile chosen on "
      "%.1f %%; tile model's top always %.4f; best of both (ceiling) %.4f\n",
      e->rows.size(), e->geomean_decision_over_pick, e->worst_decision_over_pick,
      100 * e->share_challenger_chosen, e->geomean_challenger_top_over_pick,
      e->geomean_best_over_pick);
  if (!o.json_path.empty()) {
    if (Status s = text::WriteFileAtomically(
            o.json_path, CrossEvaluationJson(*e, o.cross_model, o.screened_files));
        !s.ok()) {
      return ReportError(kWhat, s);
    }
  }
  return kExitOk;
}

}  // namespace

Command TileCommand() {
  return {
      "tile", "list, build, verify and time the tile engine's NVRTC kernels",
      [](CLI::App& app) -> RunFunction {
        auto o = std::make_shared<TileOptions>();
        auto selected = std::make_shared<std::string>();
        app.require_subcommand(1);
        CLI::App* list = app.add_subcommand("list", "one catalogue config key per line");
        AddRuleOptions(*list, *o);
        list->add_flag("--stats", o->stats, "counts per validity and filter rule on stderr");
        list->add_option("--snapshot", o->snapshot,
                         "also write the catalogue snapshot JSON to FILE "
                         "(rules/tile/snapshots/<name>.json)");
        CLI::App* source = app.add_subcommand("source", "print one build spec's source");
        AddRuleOptions(*source, *o);
        source->add_option("--index", o->index, "build spec index")->capture_default_str();
        CLI::App* build = app.add_subcommand("build", "compile every build spec (NVRTC)");
        AddRuleOptions(*build, *o);
        AddCompileOptions(*build, *o);
        CLI::App* verify =
            app.add_subcommand("verify", "(GPU) check every config against a reference");
        AddRuleOptions(*verify, *o);
        AddCompileOptions(*verify, *o);
        verify->add_flag("--fail-fast", o->fail_fast, "stop at the first mismatch");
        verify->add_option("--log", o->log_path, "write one line per check here");
        CLI::App* time = app.add_subcommand("time", "(GPU) TFLOP/s per config on one shape");
        AddRuleOptions(*time, *o);
        AddCompileOptions(*time, *o);
        time->add_option("--shape", o->shape, "m,n,k")->capture_default_str();
        time->add_option("--repeats", o->repeats, "timed launches per config")
            ->capture_default_str();
        CLI::App* bench = app.add_subcommand(
            "bench", "(GPU) head to head with cuBLASLt on shapes, one timing module");
        AddRuleOptions(*bench, *o);
        bench->add_option("--shape", o->shapes, "m,n,k[,batch] (repeatable)");
        bench->add_option("--shapes", o->shape_file, "a shape CSV (kselect shapes)");
        bench
            ->add_option("--layout", o->layout,
                         "A, B, C orders; rcc = cuBLAS TN, nn.Linear's (m = out features, "
                         "n = tokens)")
            ->capture_default_str();
        bench->add_option("--dtype", o->dtype, "A, B and C type (bf16, fp16)")
            ->capture_default_str();
        bench
            ->add_option("--cublaslt-picks", o->cublaslt_picks,
                         "cuBLASLt heuristic's top N screened")
            ->capture_default_str();
        bench->add_flag("--cublaslt-space", o->cublaslt_space,
                        "also screen cuBLASLt's whole enumerated space (slow)");
        bench
            ->add_option("--finalists", o->finalists,
                         "per provider, the fastest screened configs timed interleaved")
            ->capture_default_str();
        bench->add_option("--rounds", o->rounds, "interleaved rounds")->capture_default_str();
        bench->add_flag("--screened", o->keep_screened,
                        "record every screened config's time in the JSON (both providers)");
        bench->add_option("--cross-model", o->cross_model,
                          "a cross-provider model directory: its decision is timed "
                          "interleaved with the pick");
        bench
            ->add_option("--cross-time-top-k", o->cross_time_top_k,
                         "with --cross-model: the decision is what kselect::Gemm runs after "
                         "timing the reference ranker's top K and the challenger's top at first "
                         "use (0 = the model's decision untimed)")
            ->check(CLI::Range(0, 64));
        bench->add_flag("--cross-first-use-warm-l2", o->cross_first_use_warm_l2,
                        "with --cross-time-top-k: the first-use timing reuses the caller's A and "
                        "B at every launch (weights that fit in L2 stay there) instead of "
                        "cycling through copies past 2 x L2 as the bench times (the default)");
        bench->add_flag("--cross-first-use-eager", o->cross_first_use_eager,
                        "with --cross-time-top-k: the first-use timing's batches are eager "
                        "launches instead of CUDA graphs (the default, as the bench times)");
        bench
            ->add_option("--cross-vendor-margin", o->cross_vendor_margin,
                         "with --cross-time-top-k: the vendor guard's margin "
                         "(SelectorOptions::first_use_vendor_margin): cuBLASLt's pick, timed "
                         "beside the candidates, runs unless one is faster by more than this "
                         "fraction")
            ->check(CLI::Range(0.0, 1.0))
            ->capture_default_str();
        bench->add_flag("--cross-only", o->cross_only,
                        "with --cross-model: time only cuBLASLt's pick and the decision (no "
                        "screening)");
        bench->add_option("-o,--output", o->json_path, "write the kselect.head_to_head JSON here");
        AddHiddenAlias(*bench, "--json", o->json_path);
        CLI::App* cross = app.add_subcommand(
            "cross", "score a cross-provider model on head-to-head files (--screened)");
        cross->add_option("--model", o->cross_model, "cross-provider model directory")->required();
        cross->add_option("--screened", o->screened_files, "kselect tile bench --screened JSON")
            ->required()
            ->check(CLI::ExistingFile);
        cross->add_option("-o,--output", o->json_path,
                          "write the kselect.cross_evaluation JSON here");
        AddHiddenAlias(*cross, "--json", o->json_path);
        bench->add_option("--device-kind", o->device_kind, "lender's kind, recorded");
        bench->add_option("--run-id", o->run_id, "recorded run id");
        for (CLI::App* sub : {list, source, build, verify, time, bench, cross}) {
          sub->callback([selected, sub] { *selected = sub->get_name(); });
        }
        return [o, selected]() -> int {
          if (*selected == "list") return RunList(*o);
          if (*selected == "source") return RunSource(*o);
          if (*selected == "build") return RunBuild(*o);
          if (*selected == "bench") return RunBench(*o);
          if (*selected == "cross") return RunCross(*o);
          StatusOr<tile::TileRuleSet> set = tile::LoadRuleSet(o->rules, o->rules_dir);
          if (!set.ok()) return ReportError("tile", set.status());
          if (*selected == "verify") return RunVerify(*o, *set);
          return RunTime(*o, *set);
        };
      }};
}

}  // namespace kselect::cli
