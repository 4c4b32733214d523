// kselect tune: an application's GEMM log -> a verified solution library and its report;
// kselect tune merge: one library into another with the merge rules.
// kselect replay: the log's call sequence timed with the default picks and with a library.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/text.h"
#include "kselect/gemm_log.h"
#include "kselect/hardware.h"
#include "kselect/solutions.h"
#include "kselect/tuner.h"

namespace kselect::cli {
namespace {

struct TuneArgs {
  // tune
  std::string log;
  std::string format = "auto";
  double threshold = 0;
  std::string model_dir;
  std::string output_dir;
  double budget_s = 20;
  double total_budget_s = 0;
  int enumerate_threads = 0;
  double min_speedup = 1.01;
  int population = 24;
  int generations = 0;
  uint64_t seed = 1;
  int rounds = 21;
  int heuristic_picks = 8;
  int max_gemms = 0;
  std::string devices = "0";
  int worker_device = -1;  // this process is a worker (hidden)
  std::string shard;
  std::string device_kind;
  std::string run_id;
  std::string tunableop;
  double tunableop_seconds = -1;
  // merge
  std::string base, incoming, merge_output;
  bool force = false;
  // replay
  std::string replay_log;
  std::string library;
  int replay_rounds = 15;
  int device = 0;
};

// The TunableOp results file's choices as extra figures: "Default" is PyTorch's untuned path.
void AddTunableOpChoices(const GemmLog& tunableop, TuneResult& result, std::string* note) {
  int64_t matched = 0, default_chosen = 0;
  for (TunedGemm& t : result.gemms) {
    if (t.reference.median_ms <= 0) continue;
    for (const LoggedGemm& g : tunableop.gemms) {
      if (!(g.problem == t.gemm.problem)) continue;
      ++matched;
      if (g.logged_algo == "Default" || g.logged_algo.empty()) {
        ++default_chosen;
        InterleavedFigure f = t.reference;
        f.speedup = 1.0;  // the untuned path itself: no uplift by construction
        t.others.emplace_back("tunableop", f);
      } else {
        t.note += "TunableOp chose " + g.logged_algo + " (not timed here); ";
      }
      break;
    }
  }
  *note = "TunableOp results " + tunableop.source + ": " + std::to_string(matched) +
          " of the tuned GEMMs found, " + std::to_string(default_chosen) + " with 'Default'";
}

int RunTune(const TuneArgs& args) {
  if (args.worker_device >= 0) {
    // The protocol owns the real stdout; anything else printed (a library's log) goes to stderr.
    const int protocol = ::dup(1);
    if (protocol < 0 || ::dup2(2, 1) < 0) return kExitFailure;
    return ServeTuneWorker(0, protocol, args.worker_device) == 0 ? kExitOk : kExitFailure;
  }
  if (args.log.empty()) {
    return ReportError("tune", InvalidArgumentError("a log to tune is required (see --help)"));
  }
  if (args.output_dir.empty()) {
    return ReportError("tune", InvalidArgumentError("-o/--output DIR is required"));
  }
  std::vector<std::string> inputs{args.log};
  if (!args.tunableop.empty()) inputs.push_back(args.tunableop);
  if (auto s = text::CheckOutputFolder(args.output_dir, "--output", inputs); !s.ok()) {
    return ReportError("tune", s);
  }
  GemmLogReadOptions read;
  auto format = ParseGemmLogFormat(args.format);
  if (!format.ok()) return ReportError("tune", format.status());
  read.format = *format;
  auto log = ReadGemmLog(args.log, read);
  if (!log.ok()) return ReportError("tune", log.status());
  for (const std::string& warning : log->warnings) std::cerr << "warning: " << warning << "\n";
  std::optional<GemmLog> tunableop;
  if (!args.tunableop.empty()) {
    GemmLogReadOptions t;
    t.format = GemmLogFormat::kTunableOpCsv;
    auto read_tunableop = ReadGemmLog(args.tunableop, t);
    if (!read_tunableop.ok()) return ReportError("tune", read_tunableop.status());
    tunableop = std::move(*read_tunableop);
  }
  TuneOptions o;
  o.model_dir = args.model_dir;
  o.budget_s = args.budget_s;
  o.total_budget_s = args.total_budget_s;
  o.enumerate_threads = args.enumerate_threads;
  o.min_speedup = args.min_speedup;
  o.genetic.population = args.population;
  o.genetic.generations = args.generations;
  o.genetic.seed = args.seed;
  o.interleaved_rounds = args.rounds;
  o.heuristic_picks = args.heuristic_picks;
  o.device_kind = args.device_kind;
  o.run_id = args.run_id;
  auto devices = ParseDeviceList(args.devices);
  if (!devices.ok()) return ReportError("tune", devices.status());
  o.devices = *devices;
  // Several GPUs: one worker process each, this binary again.
  if (o.devices.size() > 1) o.worker_command = {"/proc/self/exe", "tune"};
  auto shard = args.shard.empty() ? ShardFromEnvironment() : ParseShard(args.shard);
  if (!shard.ok()) return ReportError("tune", shard.status());
  o.shard = *shard;

  auto profile = QueryHardwareProfile(o.devices.front());
  if (!profile.ok()) return ReportError("tune", profile.status());
  auto hardware = HardwareConstantsFor(*profile);
  if (!hardware.ok()) return ReportError("tune", hardware.status());
  const GemmLogSummary summary = SummarizeGemmLog(*log, *hardware, args.threshold);
  std::vector<size_t> gemms;
  for (const GemmLogSummaryEntry& e : summary.kept) {
    if (args.max_gemms > 0 && static_cast<int>(gemms.size()) >= args.max_gemms) break;
    gemms.push_back(e.gemm);
  }
  char budget_text[96];
  if (o.total_budget_s > 0) {
    std::snprintf(budget_text, sizeof(budget_text), "%.0f s of search in all per device",
                  o.total_budget_s);
  } else {
    std::snprintf(budget_text, sizeof(budget_text), "%.0f s of search each", o.budget_s);
  }
  const std::string budget = budget_text;
  std::fprintf(stderr,
               "kselect tune: %s: %zu distinct GEMMs, %zu kept (%.1f %% of the estimated GEMM "
               "time), %zu tuned by this shard %d/%d on devices %s, %s\n",
               args.log.c_str(), log->gemms.size(), summary.kept.size(), 100 * summary.kept_share,
               ShardIndices(gemms.size(), o.shard).size(), o.shard.index, o.shard.count,
               args.devices.c_str(), budget.c_str());
  auto result = TuneGemms(
      *log, gemms, o, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  if (!result.ok()) return ReportError("tune", result.status());
  std::string tunableop_note;
  if (tunableop) AddTunableOpChoices(*tunableop, *result, &tunableop_note);
  if (!tunableop_note.empty()) std::fprintf(stderr, "%s\n", tunableop_note.c_str());

  const SolutionLibrary library = SolutionLibraryOf(*result);
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  if (ec) return ReportError("tune", IoError(args.output_dir + ": " + ec.message()));
  const std::filesystem::path dir(args.output_dir);
  if (auto s = SaveSolutionLibrary(library, (dir / "solutions.json").string()); !s.ok()) {
    return ReportError("tune", s);
  }
  std::string report = TuneReportJson(*result);
  if (tunableop) {
    // The peer's figures join the report: its choice per GEMM and the time its tuning took.
    auto root = nlohmann::json::parse(report);
    double weighted = WeightedUplift(*result, [](const TunedGemm& t) -> const InterleavedFigure* {
      for (const auto& [label, f] : t.others) {
        if (label == "tunableop") return &f;
      }
      return nullptr;
    });
    root["tunableop"] = {{"results", args.tunableop},
                         {"note", tunableop_note},
                         {"weighted_uplift", weighted},
                         {"tuning_s", args.tunableop_seconds}};
    report = root.dump(1) + "\n";
  }
  std::string markdown = TuneReportMarkdown(*result);
  if (tunableop) {
    char line[512];
    std::snprintf(line, sizeof(line),
                  "\nPyTorch TunableOp as installed: %s; its call-weighted uplift over the "
                  "untuned path is +0.00 %% wherever it kept 'Default'. Tuning took %.1f s.\n",
                  tunableop_note.c_str(), args.tunableop_seconds);
    markdown += line;
  }
  if (auto s =
          text::WriteFilesAtomically({{(dir / "report.json").string(), report},
                                      {(dir / "report.md").string(), markdown},
                                      {(dir / "results.csv").string(), TuneResultsCsv(*result)}});
      !s.ok()) {
    return ReportError("tune", s);
  }
  std::printf("%s", markdown.c_str());
  std::printf("\nwrote %s/{solutions.json (%zu solutions), report.json, report.md, results.csv}\n",
              args.output_dir.c_str(), library.solutions.size());
  return kExitOk;
}

int RunMerge(const TuneArgs& args) {
  if (auto s = text::CheckOutputFile(args.merge_output, "--output", {args.base, args.incoming});
      !s.ok()) {
    return ReportError("tune merge", s);
  }
  auto base = LoadSolutionLibrary(args.base);
  if (!base.ok()) return ReportError("tune merge", base.status());
  auto incoming = LoadSolutionLibrary(args.incoming);
  if (!incoming.ok()) return ReportError("tune merge", incoming.status());
  auto summary = MergeSolutionLibraries(*base, *incoming, args.force);
  if (!summary.ok()) return ReportError("tune merge", summary.status());
  if (auto s = SaveSolutionLibrary(*base, args.merge_output); !s.ok()) {
    return ReportError("tune merge", s);
  }
  std::printf(
      "merged %s into %s -> %s: %lld added, %lld replaced, %lld kept, %lld unchanged; "
      "%zu solutions\n",
      args.incoming.c_str(), args.base.c_str(), args.merge_output.c_str(),
      static_cast<long long>(summary->added), static_cast<long long>(summary->replaced),
      static_cast<long long>(summary->kept), static_cast<long long>(summary->unchanged),
      base->solutions.size());
  return kExitOk;
}

int RunReplay(const TuneArgs& args) {
  auto log = ReadGemmLog(args.replay_log);
  if (!log.ok()) return ReportError("replay", log.status());
  SolutionLibrary library;
  if (!args.library.empty()) {
    auto loaded = LoadSolutionLibrary(args.library);
    if (!loaded.ok()) return ReportError("replay", loaded.status());
    library = std::move(*loaded);
  }
  ReplayOptions o;
  o.device = args.device;
  o.rounds = args.replay_rounds;
  auto result = ReplayGemmLog(*log, library, o);
  if (!result.ok()) return ReportError("replay", result.status());
  std::printf(
      "replay %s on %s%s%s: %lld calls of %lld distinct GEMMs (%lld from the library), "
      "%d rounds interleaved\n",
      args.replay_log.c_str(), result->hardware.device_name.c_str(),
      args.device_kind.empty() ? "" : " / ", args.device_kind.c_str(),
      static_cast<long long>(result->calls), static_cast<long long>(result->distinct),
      static_cast<long long>(result->from_library), o.rounds);
  std::printf(
      "  default picks   %10.4f ms\n  with library    %10.4f ms\n  uplift          %+9.2f %%\n",
      result->default_ms, result->library_ms, 100 * result->uplift);
  if (!result->left_out.empty()) {
    std::printf("  left out        %lld calls of %zu GEMMs the provider cannot run:\n",
                static_cast<long long>(result->left_out_calls), result->left_out.size());
    for (const std::string& why : result->left_out) std::printf("    %s\n", why.c_str());
  }
  return kExitOk;
}

}  // namespace

Command TuneCommand() {
  return {"tune",
          "tune an application's GEMMs (a log) with a model-seeded genetic algorithm into a "
          "verified solution library; `tune merge` merges libraries",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<TuneArgs>();
            app.add_option("log", args->log,
                           "GEMM log: cuBLASLt trace, hipBLASLt profile, TunableOp CSV, CSV or a "
                           "kselect problem record")
                ->check(CLI::ExistingFile);
            app.add_option("--format", args->format, "log format (auto, cublaslt_trace, ...)")
                ->capture_default_str();
            app.add_option("--thr", args->threshold,
                           "keep GEMMs with at least this share of the estimated GEMM time "
                           "(0 keeps all)")
                ->check(CLI::Range(0.0, 1.0))
                ->capture_default_str();
            app.add_option("--max-gemms", args->max_gemms, "tune at most this many (0 = all)")
                ->check(CLI::NonNegativeNumber);
            app.add_option("--model", args->model_dir,
                           "model directory: its top-k seed the search, its pick is reported");
            app.add_option("-o,--output", args->output_dir,
                           "folder for solutions.json, report.json, report.md, results.csv");
            app.add_option("--budget", args->budget_s, "search wall time per GEMM (s)")
                ->check(CLI::PositiveNumber)
                ->capture_default_str();
            app.add_option("--budget-total", args->total_budget_s,
                           "search wall time of the whole log per device (s), split over the "
                           "GEMMs by their share of the time (30 % evenly); replaces --budget. "
                           "Verification and the interleaved runs add about 1 s per GEMM")
                ->check(CLI::NonNegativeNumber);
            app.add_option("--enumerate-threads", args->enumerate_threads,
                           "CPU threads enumerating config spaces while the GPU times (0 = the "
                           "host's cores - 1, at most 15)")
                ->check(CLI::Range(0, 256));
            app.add_option("--min-speedup", args->min_speedup,
                           "keep a solution only when at least this much faster, interleaved")
                ->check(CLI::Range(1.0, 100.0))
                ->capture_default_str();
            app.add_option("--population", args->population, "GA population")
                ->check(CLI::Range(2, 4096))
                ->capture_default_str();
            app.add_option("--generations", args->generations,
                           "GA generations cap (0 = none: the budget or convergence ends it)")
                ->check(CLI::Range(0, 100000))
                ->capture_default_str();
            app.add_option("--seed", args->seed, "GA random seed")->capture_default_str();
            app.add_option("--rounds", args->rounds, "interleaved rounds")
                ->check(CLI::Range(1, 1000))
                ->capture_default_str();
            app.add_option("--heuristic-picks", args->heuristic_picks,
                           "the heuristic's top N: seeds and the best-of-top-N figure")
                ->check(CLI::Range(1, 64))
                ->capture_default_str();
            app.add_option("--devices", args->devices,
                           "CUDA devices (0,1,..): with several, one worker process each, GEMMs "
                           "balanced by budget, a dead worker's GEMMs retried on another")
                ->capture_default_str();
            app.add_option("--worker-device", args->worker_device,
                           "internal: serve as the worker process for this device")
                ->group("");
            app.add_option("--shard", args->shard,
                           "i/N: this process tunes GEMMs i, i+N, ... (default: Slurm/MPI rank)");
            app.add_option("--device-kind", args->device_kind,
                           "lender's kind, recorded (nvidia-h200)");
            app.add_option("--run-id", args->run_id, "run id (default: from the start time)");
            app.add_option("--tunableop", args->tunableop,
                           "PyTorch TunableOp results CSV from the same device, compared in the "
                           "report")
                ->check(CLI::ExistingFile);
            app.add_option("--tunableop-seconds", args->tunableop_seconds,
                           "wall time TunableOp's tuning took (reported)");

            CLI::App* merge = app.add_subcommand(
                "merge", "merge a solution library into another (replace only when faster)");
            merge->add_option("base", args->base, "library merged into")
                ->required()
                ->check(CLI::ExistingFile);
            merge->add_option("incoming", args->incoming, "library merged from")
                ->required()
                ->check(CLI::ExistingFile);
            merge->add_option("-o,--output", args->merge_output, "merged library")->required();
            merge->add_flag("--force", args->force,
                            "the incoming solution replaces an existing one even when not faster");
            return [args, merge]() {
              if (merge->parsed()) return RunMerge(*args);
              return RunTune(*args);
            };
          }};
}

Command ReplayCommand() {
  return {"replay",
          "time an application's GEMM sequence with the default picks and with a solution "
          "library, interleaved, as CUDA graphs",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<TuneArgs>();
            app.add_option("log", args->replay_log, "GEMM log (any format kselect log reads)")
                ->required()
                ->check(CLI::ExistingFile);
            app.add_option("--library", args->library, "solution library (kselect tune)")
                ->check(CLI::ExistingFile);
            app.add_option("--rounds", args->replay_rounds, "interleaved rounds")
                ->check(CLI::Range(1, 1000))
                ->capture_default_str();
            app.add_option("--device", args->device, "CUDA device")->capture_default_str();
            app.add_option("--device-kind", args->device_kind, "lender's kind, printed");
            return [args]() { return RunReplay(*args); };
          }};
}

}  // namespace kselect::cli
