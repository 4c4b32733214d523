// kselect search: a model-guided search over the tile engine's config space (include/kselect/
// search.h). Per shape: the strategy's proposals (only configs that pass the validity rules and
// CanImplement; the rejected ones counted per rule), the model's best, the exhaustive best over
// the default and full catalogues, and with --measure the best proposals compiled, verified and
// timed on the GPU beside cuBLASLt's pick. Prints a table; --json writes kselect.search.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/gemm_args.h"
#include "core/text.h"
#include "kselect/config_schema.h"
#include "kselect/search.h"
#include "providers/tile/tile_engine.h"

namespace kselect::cli {
namespace {

constexpr const char* kWhat = "search";

// The library's options, bound to the flags directly (one default each, in search.h), and what
// only the command has.
struct SearchCliOptions {
  TileSearchOptions options;
  SearchMeasureOptions measure;
  std::vector<std::string> shapes;
  std::string shape_file;
  std::string layout = "rcc";
  std::string dtype = "bf16";
  std::string strategy = "random";
  std::string json_path;
  bool measure_flag = false;
  std::string device_kind;
  std::string run_id;

  SearchCliOptions() { options.rules_dir = tile::DefaultRulesRoot(); }
};

// Every file the command reads, so --json can refuse to overwrite one.
std::vector<std::string> InputFiles(const SearchCliOptions& o) {
  std::vector<std::string> inputs;
  if (!o.shape_file.empty()) inputs.push_back(o.shape_file);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(o.options.model_dir, error)) {
    if (entry.is_regular_file(error)) inputs.push_back(entry.path().string());
  }
  if (std::filesystem::is_regular_file(o.options.rule_set, error)) {
    inputs.push_back(o.options.rule_set);
  }
  return inputs;
}

std::string Shape(const GemmProblem& p) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
         (p.batch > 1 ? "x" + std::to_string(p.batch) : "");
}

void PrintHeader(const TileSearchResult& first, bool measured) {
  std::printf("%-20s %-8s %6s %15s %9s", "problem", "strategy", "scored", "rejected", "best");
  for (const SearchBaseline& b : first.baselines) {
    std::printf(" %12s %8s", (b.rule_set + " best").c_str(), "reached");
  }
  if (measured) {
    std::printf("  %9s %9s %7s %8s %9s", "lt us", "best us", "x lt", "verified", "pred/meas");
  }
  std::printf("\n");
}

void PrintRow(const TileSearchResult& r) {
  const SearchTrace& t = r.trace;
  const std::string rejected =
      std::to_string(t.rejected) + " (" +
      std::to_string(t.proposals > 0 ? (100 * t.rejected + t.proposals / 2) / t.proposals : 0) +
      "%)";
  std::printf("%-20s %-8s %6zu %15s %9.3f", Shape(r.problem).c_str(),
              std::string(SearchStrategyName(r.options.strategy)).c_str(), t.scored.size(),
              rejected.c_str(), r.top.empty() ? 0.0 : r.top.front().score);
  for (const SearchBaseline& b : r.baselines) {
    const std::string reached = b.search_scored_to_reach
                                    ? "at " + std::to_string(*b.search_scored_to_reach)
                                    : std::string("no");
    std::printf(" %12.3f %8s", b.best ? b.best->score : 0.0, reached.c_str());
  }
  if (r.measured) {
    const SearchMeasurement& m = *r.measured;
    const MeasuredConfig* best = nullptr;
    int verified = 0;
    for (const MeasuredConfig& c : m.configs) {
      verified += c.verified;
      if (c.figure && (best == nullptr || c.figure->median_ms < best->figure->median_ms)) best = &c;
    }
    std::printf("  %9.2f %9.2f %7.3f %5d/%-2zu %9.2f", m.cublaslt_pick.median_ms * 1e3,
                best ? best->figure->median_ms * 1e3 : 0.0, best ? best->figure->speedup : 0.0,
                verified, m.configs.size(), best ? best->predicted_over_measured : 0.0);
  }
  std::printf("\n");
}

// The rules that rejected the most proposals, on one line.
void PrintRejections(const TileSearchResult& r) {
  std::string line;
  for (size_t i = 0; i < r.trace.rejected_by_rule.size() && i < 4; ++i) {
    const RejectionCount& c = r.trace.rejected_by_rule[i];
    line += (line.empty() ? "" : ", ") + c.rule + " " + std::to_string(c.count);
  }
  if (!line.empty()) std::printf("  rejected by %s\n", line.c_str());
  if (!r.top.empty()) {
    std::printf("  best proposal %s\n", DescribeConfig(KernelConfig(r.top.front().config)).c_str());
  }
}

int Run(const SearchCliOptions& o, bool device_given) {
  StatusOr<SearchStrategy> strategy = ParseSearchStrategy(o.strategy);
  if (!strategy.ok()) return ReportError(kWhat, strategy.status());
  StatusOr<std::vector<ShapeRow>> rows = ShapeRowsOf(o.shapes, o.shape_file);
  if (!rows.ok()) return ReportError(kWhat, rows.status());
  StatusOr<GemmLayout> layout = ParseGemmLayout(o.layout);
  if (!layout.ok()) return ReportError(kWhat, layout.status());
  StatusOr<DataType> dtype = ParseDataType(o.dtype);
  if (!dtype.ok()) return ReportError(kWhat, dtype.status());
  std::vector<GemmProblem> problems;
  for (const ShapeRow& row : *rows) {
    GemmProblem p;
    p.m = row.m, p.n = row.n, p.k = row.k, p.batch = row.batch;
    p.layout = *layout;
    p.dtype_a = p.dtype_b = p.dtype_c = *dtype;
    if (Status valid = p.Validate(); !valid.ok()) return ReportError(kWhat, valid);
    problems.push_back(p);
  }
  if (!o.json_path.empty()) {
    if (Status s = text::CheckOutputFile(o.json_path, "--output", InputFiles(o)); !s.ok()) {
      return ReportError(kWhat, s);
    }
  }

  TileSearchOptions options = o.options;
  options.search.strategy = *strategy;
  // One count over every problem: each problem's budget of configs scored. Drawn from when the
  // searcher (and the device) are ready.
  auto show = std::make_shared<ProgressCallback>();
  const int64_t budget = options.search.budget;
  const auto total = static_cast<int64_t>(problems.size()) * budget;
  auto searched = std::make_shared<int64_t>(0);  // problems finished
  options.search.progress = [show, budget, total, searched](const ProgressCount& report) {
    (*show)({.done = *searched * budget + report.done, .total = total, .unit = "configs"});
  };
  StatusOr<std::unique_ptr<TileSearcher>> searcher = TileSearcher::Open(options);
  if (!searcher.ok()) return ReportError(kWhat, searcher.status());

  // The device first: a --measure that cannot measure fails before minutes of search.
  std::unique_ptr<SearchMeasurer> measurer;
  if (o.measure_flag || device_given) {
    SearchMeasureOptions mo = o.measure;
    mo.provider = options.provider;
    StatusOr<std::unique_ptr<SearchMeasurer>> created = SearchMeasurer::Create(mo);
    if (!created.ok()) {
      return ReportError(kWhat, Status(created.status().code(),
                                       "--measure needs a GPU: " + created.status().message()));
    }
    measurer = std::move(*created);
  }

  const TileSearchSpace& space = (*searcher)->space();
  std::string groups;
  for (const TileSearchGroup& g : space.groups) {
    groups += (groups.empty() ? "" : ", ") + std::string(TilePipelineName(g.pipeline)) + " " +
              std::to_string(static_cast<int64_t>(g.Size()));
  }
  std::printf("model %s (%s), space %s: %lld configs (%s)\n", options.model_dir.c_str(),
              (*searcher)->ScoresAreTflops() ? "predicted TFLOPS" : "ranking scores, not TFLOPS",
              space.rule_set.c_str(), static_cast<long long>(space.Size()), groups.c_str());
  *show = ShowProgress("search");
  std::vector<TileSearchResult> results;
  bool header = false;
  int failures = 0;
  for (const GemmProblem& p : problems) {
    StatusOr<TileSearchResult> result = (*searcher)->Run(p);
    ++*searched;
    (*show)({.done = *searched * budget, .total = total, .unit = "configs"});
    if (!result.ok()) {
      std::fprintf(stderr, "kselect search: %s: %s\n", p.ToString().c_str(),
                   result.status().ToString().c_str());
      ++failures;
      continue;
    }
    if (measurer) {
      if (Status s = measurer->Measure(&*result, (*searcher)->ScoresAreTflops()); !s.ok()) {
        std::fprintf(stderr, "kselect search: %s: measuring: %s\n", p.ToString().c_str(),
                     s.ToString().c_str());
        ++failures;
        // A fault leaves the context unusable: nothing more can be measured.
        if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kInternal) break;
      }
    }
    if (!header) PrintHeader(*result, measurer != nullptr);
    header = true;
    PrintRow(*result);
    PrintRejections(*result);
    std::fflush(stdout);
    results.push_back(std::move(*result));
  }
  if (!o.json_path.empty()) {
    const std::string run_id =
        o.run_id.empty() ? "search-" + text::UtcNowIso8601(/*compact=*/true) : o.run_id;
    const std::string text = SearchJson(
        results, **searcher, measurer ? &measurer->hardware() : nullptr, o.device_kind, run_id);
    if (Status s = text::WriteFileAtomically(o.json_path, text); !s.ok()) {
      return ReportError(kWhat, s);
    }
  }
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command SearchCommand() {
  return {
      "search",
      "search the tile engine's config space with a trained model (random or differential "
      "evolution); --measure times the best proposals on the GPU",
      [](CLI::App& app) -> RunFunction {
        auto o = std::make_shared<SearchCliOptions>();
        app.add_option("--model", o->options.model_dir,
                       "a tile model directory (models/h200_tile_bf16_tn)")
            ->required();
        app.add_option("--shape", o->shapes, "m,n,k[,batch] (repeatable)");
        app.add_option("--shapes", o->shape_file, "a shape CSV (kselect shapes)");
        app.add_option(
               "--layout", o->layout,
               "A, B, C orders; rcc = cuBLAS TN, nn.Linear's (m = out features, n = tokens)")
            ->capture_default_str();
        app.add_option("--dtype", o->dtype, "A, B and C type (bf16, fp16)")->capture_default_str();
        app.add_option("--rules", o->options.rule_set,
                       "tile rule set whose generator spans the space (a name or a .json path)")
            ->capture_default_str();
        app.add_option("--rules-dir", o->options.rules_dir,
                       "folder of rule sets (<provider>/<name>.json); default $KSELECT_RULES_DIR, "
                       "else the install's or source tree's rules/")
            ->capture_default_str();
        app.add_option("--strategy", o->strategy, "random or de (differential evolution)")
            ->capture_default_str();
        app.add_option("--budget", o->options.search.budget,
                       "distinct valid configs scored by the model")
            ->check(PositiveInteger())
            ->capture_default_str();
        app.add_option("--seed", o->options.search.seed, "random seed (same seed, same proposals)")
            ->capture_default_str();
        app.add_option("--top", o->options.search.top, "best proposals kept in the JSON")
            ->check(PositiveInteger())
            ->capture_default_str();
        app.add_option("--population", o->options.search.population,
                       "de: individuals (0 = budget / 10, 8..32)")
            ->capture_default_str();
        app.add_option("--de-weight", o->options.search.weight, "de: differential weight F")
            ->capture_default_str();
        app.add_option("--de-crossover", o->options.search.crossover, "de: crossover rate CR")
            ->capture_default_str();
        app.add_option("--de-stagnation", o->options.search.stagnation_generations,
                       "de: generations without a better best before all but the best are re-drawn")
            ->capture_default_str();
        app.add_option("-o,--output", o->json_path, "write the kselect.search JSON here");
        AddHiddenAlias(app, "--json", o->json_path);
        app.add_flag("--measure", o->measure_flag,
                     "(GPU) compile, verify and time the best proposals beside cuBLASLt's pick");
        app.add_option("--measure-top", o->measure.top, "distinct proposals measured")
            ->check(PositiveInteger())
            ->capture_default_str();
        app.add_option("--device", o->options.provider.device,
                       "CUDA device to measure on (implies --measure)")
            ->capture_default_str();
        app.add_option("--rounds", o->measure.rounds, "interleaved timing rounds")
            ->capture_default_str();
        app.add_option("--device-kind", o->device_kind, "lender's kind, recorded");
        app.add_option("--run-id", o->run_id, "recorded run id");
        CLI::App* self = &app;
        return [o, self]() -> int { return Run(*o, self->count("--device") > 0); };
      }};
}

}  // namespace kselect::cli
