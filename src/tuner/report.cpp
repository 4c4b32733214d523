// The tuning report (JSON, Markdown) and the raw results CSV.
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "kselect/config_schema.h"
#include "kselect/tuner.h"
#include "tuner/tune_internal.h"

namespace kselect {
namespace {

using json = nlohmann::json;

const InterleavedFigure* Tuned(const TunedGemm& t) {
  return t.accepted && t.tuned ? &*t.tuned : nullptr;
}
const InterleavedFigure* ModelPick(const TunedGemm& t) {
  return t.model_pick ? &*t.model_pick : nullptr;
}
const InterleavedFigure* BestOfTop8(const TunedGemm& t) {
  return t.best_of_top8 ? &*t.best_of_top8 : nullptr;
}

json FigureJson(const std::optional<InterleavedFigure>& f) {
  if (!f) return nullptr;
  return {{"config", json_codec::KernelConfigToJson(f->config)},
          {"name", SchemaOf(f->config).describe(f->config)},
          {"median_ms", f->median_ms},
          {"speedup", f->speedup}};
}

// Mean and geometric mean of a choice's speedups over the measured GEMMs (1 where it has none).
std::pair<double, double> MeanAndGeomean(const TuneResult& result,
                                         const InterleavedFigure* (*pick)(const TunedGemm&)) {
  double sum = 0, log_sum = 0;
  int n = 0;
  for (const TunedGemm& t : result.gemms) {
    if (t.reference.median_ms <= 0) continue;
    const InterleavedFigure* f = pick(t);
    const double s = f != nullptr ? f->speedup : 1.0;
    sum += s;
    log_sum += std::log(s);
    ++n;
  }
  if (n == 0) return {1, 1};
  return {sum / n, std::exp(log_sum / n)};
}

struct Totals {
  double search_s = 0, enumerate_s = 0, confirm_s = 0, search_gpu_ms = 0, top8_gpu_ms = 0;
  double enumerate_wait_s = 0;
  int64_t configs_timed = 0, configs_enumerated = 0, tuned = 0, failed = 0, kept_own = 0;
  int64_t calls = 0, calls_measured = 0;
};

Totals TotalsOf(const TuneResult& result) {
  Totals t;
  for (const TunedGemm& g : result.gemms) {
    t.search_s += g.search_s;
    t.enumerate_s += g.enumerate_s;
    t.confirm_s += g.confirm_s;
    t.search_gpu_ms += g.search_gpu_ms;
    t.top8_gpu_ms += g.top8_gpu_ms;
    t.configs_timed += g.configs_timed;
    t.configs_enumerated += g.configs_enumerated;
    t.tuned += g.accepted;
    t.failed += g.outcome.starts_with("failed");
    t.kept_own += g.outcome.starts_with("kept:");
    t.enumerate_wait_s += g.enumerate_wait_s;
    t.calls += g.gemm.calls;
    if (g.reference.median_ms > 0) t.calls_measured += g.gemm.calls;
  }
  return t;
}

}  // namespace

json LoggedGemmToJson(const LoggedGemm& g) {
  return {{"problem", json_codec::GemmProblemToJson(g.problem)},
          {"calls", g.calls},
          {"lda", g.lda},
          {"ldb", g.ldb},
          {"ldc", g.ldc},
          {"epilogue", g.epilogue},
          {"logged_algo", g.logged_algo},
          {"logged_workspace_bytes", g.workspace_bytes},
          {"first_line", g.first_line}};
}

StatusOr<LoggedGemm> LoggedGemmFromJson(const json& j) {
  if (!j.is_object()) return ParseError("a logged GEMM must be a JSON object");
  try {
    LoggedGemm g;
    KSELECT_ASSIGN_OR_RETURN(const Problem problem,
                             json_codec::ProblemFromJson(j.at("problem"), "problem"));
    if (!std::holds_alternative<GemmProblem>(problem)) return ParseError("problem: not a GEMM");
    g.problem = std::get<GemmProblem>(problem);
    g.calls = j.at("calls").get<int64_t>();
    g.lda = j.value("lda", int64_t{0});
    g.ldb = j.value("ldb", int64_t{0});
    g.ldc = j.value("ldc", int64_t{0});
    g.epilogue = j.value("epilogue", std::string());
    g.logged_algo = j.value("logged_algo", std::string());
    g.workspace_bytes = j.value("logged_workspace_bytes", int64_t{-1});
    g.first_line = j.value("first_line", int64_t{0});
    return g;
  } catch (const json::exception& e) {
    return ParseError(std::string("logged GEMM: ") + e.what());
  }
}

json TunedGemmToJson(const TunedGemm& t) {
  json others = json::object();
  for (const auto& [label, f] : t.others) others[label] = FigureJson(f);
  json out = LoggedGemmToJson(t.gemm);
  out.update({{"outcome", t.outcome},
              {"accepted", t.accepted},
              {"note", t.note},
              {"verification", t.verification},
              {"reference", t.reference.median_ms > 0 ? FigureJson(t.reference) : json()},
              {"tuned", FigureJson(t.tuned)},
              {"chosen_from", t.chosen_from},
              {"speedup_q1", t.speedup_q1},
              {"workspace_limit", t.workspace_limit},
              {"model_pick", FigureJson(t.model_pick)},
              {"best_of_top8", FigureJson(t.best_of_top8)},
              {"others", std::move(others)},
              {"configs_enumerated", t.configs_enumerated},
              {"configs_timed", t.configs_timed},
              {"generations", t.generations},
              {"restarts", t.restarts},
              {"stopped_by", t.stopped_by},
              {"enumerate_s", t.enumerate_s},
              {"enumerate_wait_s", t.enumerate_wait_s},
              {"budget_s", t.budget_s},
              {"search_s", t.search_s},
              {"search_gpu_ms", t.search_gpu_ms},
              {"top8_gpu_ms", t.top8_gpu_ms},
              {"confirm_s", t.confirm_s},
              {"wall_s", t.wall_s},
              {"device", t.device}});
  return out;
}

namespace {

StatusOr<std::optional<InterleavedFigure>> FigureFromJson(const json& j, const std::string& path) {
  if (j.is_null()) return std::optional<InterleavedFigure>();
  if (!j.is_object() || !j.contains("config")) {
    return ParseError(path + ": a figure must be an object with a config");
  }
  InterleavedFigure f;
  KSELECT_ASSIGN_OR_RETURN(f.config,
                           json_codec::KernelConfigFromJson(j["config"], path + ".config"));
  f.median_ms = j.value("median_ms", 0.0);
  f.speedup = j.value("speedup", 1.0);
  return std::optional<InterleavedFigure>(std::move(f));
}

}  // namespace

StatusOr<TunedGemm> TunedGemmFromJson(const json& j) {
  if (!j.is_object()) return ParseError("a tuned GEMM must be a JSON object");
  try {
    TunedGemm t;
    KSELECT_ASSIGN_OR_RETURN(t.gemm, LoggedGemmFromJson(j));
    t.outcome = j.value("outcome", std::string());
    t.accepted = j.value("accepted", false);
    t.note = j.value("note", std::string());
    t.verification = j.value("verification", std::string());
    KSELECT_ASSIGN_OR_RETURN(const std::optional<InterleavedFigure> reference,
                             FigureFromJson(j.value("reference", json()), "reference"));
    if (reference) t.reference = *reference;
    KSELECT_ASSIGN_OR_RETURN(t.tuned, FigureFromJson(j.value("tuned", json()), "tuned"));
    KSELECT_ASSIGN_OR_RETURN(t.model_pick,
                             FigureFromJson(j.value("model_pick", json()), "model_pick"));
    KSELECT_ASSIGN_OR_RETURN(t.best_of_top8,
                             FigureFromJson(j.value("best_of_top8", json()), "best_of_top8"));
    if (t.accepted && !t.tuned) return ParseError("accepted without a tuned figure");
    t.chosen_from = j.value("chosen_from", std::string());
    t.speedup_q1 = j.value("speedup_q1", 0.0);
    t.workspace_limit = j.value("workspace_limit", int64_t{0});
    t.configs_enumerated = j.value("configs_enumerated", int64_t{0});
    t.configs_timed = j.value("configs_timed", int64_t{0});
    t.generations = j.value("generations", 0);
    t.restarts = j.value("restarts", 0);
    t.stopped_by = j.value("stopped_by", std::string());
    t.enumerate_s = j.value("enumerate_s", 0.0);
    t.enumerate_wait_s = j.value("enumerate_wait_s", 0.0);
    t.budget_s = j.value("budget_s", 0.0);
    t.search_s = j.value("search_s", 0.0);
    t.search_gpu_ms = j.value("search_gpu_ms", 0.0);
    t.top8_gpu_ms = j.value("top8_gpu_ms", 0.0);
    t.confirm_s = j.value("confirm_s", 0.0);
    t.wall_s = j.value("wall_s", 0.0);
    t.device = j.value("device", 0);
    return t;
  } catch (const json::exception& e) {
    return ParseError(std::string("tuned GEMM: ") + e.what());
  }
}

json TuneOptionsToJson(const TuneOptions& o) {
  const GeneticOptions& g = o.genetic;
  return {{"provider", ProviderName(o.provider)},
          {"max_workspace_bytes", o.provider_options.max_workspace_bytes},
          {"rule_set", o.provider_options.rule_set},
          {"rules_dir", o.provider_options.rules_dir},
          {"model_dir", o.model_dir},
          {"model_top_k", o.model_top_k},
          {"heuristic_picks", o.heuristic_picks},
          {"genetic",
           {{"population", g.population},
            {"generations", g.generations},
            {"tournament", g.tournament},
            {"crossover_rate", g.crossover_rate},
            {"mutation_rate", g.mutation_rate},
            {"elites", g.elites},
            {"stagnation_generations", g.stagnation_generations},
            {"max_restarts", g.max_restarts},
            {"max_evaluations", g.max_evaluations},
            {"seed", g.seed}}},
          {"budget_s", o.budget_s},
          {"total_budget_s", o.total_budget_s},
          {"enumerate_threads", o.enumerate_threads},
          {"min_speedup", o.min_speedup},
          {"confirm_candidates", o.confirm_candidates},
          {"interleaved_rounds", o.interleaved_rounds},
          {"batch_ms", o.batch_ms},
          {"interleaved_batch_ms", o.interleaved_batch_ms},
          {"abort_factor", o.abort_factor},
          {"rotate_bytes", o.rotate_bytes},
          {"device_kind", o.device_kind},
          {"run_id", o.run_id}};
}

StatusOr<TuneOptions> TuneOptionsFromJson(const json& j) {
  if (!j.is_object()) return ParseError("tune options must be a JSON object");
  try {
    TuneOptions o;
    KSELECT_ASSIGN_OR_RETURN(o.provider, ParseProvider(j.at("provider").get<std::string>()));
    o.provider_options.max_workspace_bytes = j.at("max_workspace_bytes").get<int64_t>();
    o.provider_options.rule_set = j.value("rule_set", std::string());
    o.provider_options.rules_dir = j.value("rules_dir", std::string());
    o.model_dir = j.value("model_dir", std::string());
    o.model_top_k = j.value("model_top_k", o.model_top_k);
    o.heuristic_picks = j.value("heuristic_picks", o.heuristic_picks);
    const json& g = j.at("genetic");
    o.genetic.population = g.at("population").get<int>();
    o.genetic.generations = g.at("generations").get<int>();
    o.genetic.tournament = g.at("tournament").get<int>();
    o.genetic.crossover_rate = g.at("crossover_rate").get<double>();
    o.genetic.mutation_rate = g.at("mutation_rate").get<double>();
    o.genetic.elites = g.at("elites").get<int>();
    o.genetic.stagnation_generations = g.at("stagnation_generations").get<int>();
    o.genetic.max_restarts = g.at("max_restarts").get<int>();
    o.genetic.max_evaluations = g.at("max_evaluations").get<int64_t>();
    o.genetic.seed = g.at("seed").get<uint64_t>();
    o.budget_s = j.at("budget_s").get<double>();
    o.total_budget_s = j.at("total_budget_s").get<double>();
    o.enumerate_threads = j.at("enumerate_threads").get<int>();
    o.min_speedup = j.at("min_speedup").get<double>();
    o.confirm_candidates = j.at("confirm_candidates").get<int>();
    o.interleaved_rounds = j.at("interleaved_rounds").get<int>();
    o.batch_ms = j.at("batch_ms").get<double>();
    o.interleaved_batch_ms = j.at("interleaved_batch_ms").get<double>();
    o.abort_factor = j.at("abort_factor").get<double>();
    o.rotate_bytes = j.at("rotate_bytes").get<int64_t>();
    o.device_kind = j.value("device_kind", std::string());
    o.run_id = j.value("run_id", std::string());
    if (o.genetic.population < 2 || o.genetic.tournament < 1 || o.genetic.elites < 0 ||
        o.interleaved_rounds < 1 || o.min_speedup < 1) {
      return ParseError("tune options out of range");
    }
    return o;
  } catch (const json::exception& e) {
    return ParseError(std::string("tune options: ") + e.what());
  }
}

std::string TuneReportJson(const TuneResult& result) {
  const Totals totals = TotalsOf(result);
  const auto [tuned_mean, tuned_geomean] = MeanAndGeomean(result, &Tuned);
  const auto [model_mean, model_geomean] = MeanAndGeomean(result, &ModelPick);
  const auto [top8_mean, top8_geomean] = MeanAndGeomean(result, &BestOfTop8);
  json gemms = json::array();
  for (const TunedGemm& t : result.gemms) gemms.push_back(TunedGemmToJson(t));
  json workers = json::array();
  for (const TuneWorkerRecord& w : result.workers) {
    workers.push_back({{"device", w.device},
                       {"pid", w.pid},
                       {"gemms_done", w.gemms_done},
                       {"busy_s", w.busy_s},
                       {"ended", w.ended}});
  }
  const TuneOptions& o = result.options;
  json root = {
      {"format", "kselect.tune_report"},
      {"version", 1},
      {"run_id", result.run_id},
      {"log", result.log_source},
      {"provider", ProviderName(o.provider)},
      {"provider_version", result.provider_version},
      {"options",
       {{"model_dir", o.model_dir},
        {"budget_s", o.budget_s},
        {"total_budget_s", o.total_budget_s},
        {"min_speedup", o.min_speedup},
        {"population", o.genetic.population},
        {"generations", o.genetic.generations},
        {"heuristic_picks", o.heuristic_picks},
        {"model_top_k", o.model_top_k},
        {"interleaved_rounds", o.interleaved_rounds},
        {"confirm_candidates", o.confirm_candidates},
        {"seed", o.genetic.seed}}},
      {"gemms_tuned", result.gemms.size()},
      {"gemms_accepted", totals.tuned},
      {"gemms_failed", totals.failed},
      {"gemms_kept_own_choice", totals.kept_own},
      // The uplifts cover the measured GEMMs' calls; those kept on the application's own choice
      // run as before.
      {"calls", totals.calls},
      {"calls_measured", totals.calls_measured},
      // Call-weighted: sum(calls x reference ms) / sum(calls x choice ms) - 1.
      {"weighted_uplift", WeightedUplift(result, &Tuned)},
      {"model_only_weighted_uplift", WeightedUplift(result, &ModelPick)},
      {"best_of_top8_weighted_uplift", WeightedUplift(result, &BestOfTop8)},
      {"mean_speedup",
       {{"tuned", tuned_mean}, {"model_only", model_mean}, {"best_of_top8", top8_mean}}},
      {"geomean_speedup",
       {{"tuned", tuned_geomean}, {"model_only", model_geomean}, {"best_of_top8", top8_geomean}}},
      // What each choice cost: the model none (no timing), the top 8 their timing, the tuned
      // library the whole search.
      {"gpu_time",
       {{"tuned_search_s", totals.search_s},
        {"tuned_search_gpu_ms", totals.search_gpu_ms},
        {"enumerate_s", totals.enumerate_s},
        {"enumerate_wait_s", totals.enumerate_wait_s},
        {"verify_and_interleave_s", totals.confirm_s},
        {"best_of_top8_gpu_ms", totals.top8_gpu_ms},
        {"model_only_gpu_ms", 0}}},
      {"configs_timed", totals.configs_timed},
      {"configs_enumerated", totals.configs_enumerated},
      {"seconds", result.seconds},
      {"workers", std::move(workers)},
      {"gemms", std::move(gemms)}};
  Provenance provenance = ProvenanceOf(result.hardware);
  provenance.device_kind = result.device_kind;
  json_codec::WriteProvenance(provenance, root);
  return root.dump(1) + "\n";
}

std::string TuneReportMarkdown(const TuneResult& result) {
  const Totals totals = TotalsOf(result);
  std::ostringstream md;
  char line[1024];
  md << "# kselect tune report: " << result.run_id << "\n\n";
  std::snprintf(line, sizeof(line),
                "Device: %s (%s), driver %d, CUDA runtime %d, %s. Log: `%s`. %zu GEMMs, "
                "%lld tuned, %lld kept on the application's own choice, %lld failed; %lld of "
                "%lld calls measured; %.0f s in all.\n\n",
                result.hardware.device_name.c_str(),
                result.device_kind.empty() ? "kind unknown" : result.device_kind.c_str(),
                result.hardware.driver_version, result.hardware.runtime_version,
                result.provider_version.c_str(), result.log_source.c_str(), result.gemms.size(),
                static_cast<long long>(totals.tuned), static_cast<long long>(totals.kept_own),
                static_cast<long long>(totals.failed),
                static_cast<long long>(totals.calls_measured), static_cast<long long>(totals.calls),
                result.seconds);
  md << line;
  if (!result.workers.empty()) {
    md << "Worker processes:";
    for (const TuneWorkerRecord& w : result.workers) {
      std::snprintf(line, sizeof(line), " GPU %d (pid %d): %lld GEMMs, %.1f s busy, %s;", w.device,
                    w.pid, static_cast<long long>(w.gemms_done), w.busy_s, w.ended.c_str());
      md << line;
    }
    md << "\n\n";
  }
  md << "Every figure is a speedup over cuBLASLt's default pick (its heuristic's rank 1), timed "
        "interleaved with it in one process (CUDA graphs, operands rotated past L2, median of "
        "the rounds' ratios). Call-weighted uplift = sum(calls x default ms) / sum(calls x "
        "choice ms) - 1.\n\n";
  md << "| choice | call-weighted uplift | mean | geomean | GPU time needed |\n";
  md << "|---|---:|---:|---:|---|\n";
  const auto [tm, tg] = MeanAndGeomean(result, &Tuned);
  const auto [mm, mg] = MeanAndGeomean(result, &ModelPick);
  const auto [bm, bg] = MeanAndGeomean(result, &BestOfTop8);
  std::snprintf(line, sizeof(line),
                "| tuned library (fastest verified of search, model and top N; >= %.2fx) | "
                "%+.2f %% | %.3fx | %.3fx | %.1f s search (%.2f s GPU in timed regions), %lld "
                "configs timed |\n",
                result.options.min_speedup, 100 * WeightedUplift(result, &Tuned), tm, tg,
                totals.search_s, totals.search_gpu_ms / 1000,
                static_cast<long long>(totals.configs_timed));
  md << line;
  std::snprintf(line, sizeof(line),
                "| model-only pick (no timing) | %+.2f %% | %.3fx | %.3fx | none |\n",
                100 * WeightedUplift(result, &ModelPick), mm, mg);
  md << line;
  std::snprintf(line, sizeof(line),
                "| best of cuBLASLt's top %d, timed | %+.2f %% | %.3fx | %.3fx | %.2f s GPU |\n",
                result.options.heuristic_picks, 100 * WeightedUplift(result, &BestOfTop8), bm, bg,
                totals.top8_gpu_ms / 1000);
  md << line;
  md << "\n## Per GEMM\n\n";
  md << "| # | m | n | k | batch | layout | dtype | calls | default ms | tuned | from | q1 | "
        "model | top8 | timed/space | budget s | outcome |\n";
  md << "|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---|\n";
  auto speedup = [](const std::optional<InterleavedFigure>& f) {
    if (!f) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof(b), "%.3fx", f->speedup);
    return std::string(b);
  };
  int rank = 0;
  for (const TunedGemm& t : result.gemms) {
    const GemmProblem& p = t.gemm.problem;
    std::snprintf(line, sizeof(line),
                  "| %d | %lld | %lld | %lld | %lld | %s | %s | %lld | %.4f | %s | %s | %.3f | "
                  "%s | %s | %lld/%lld | %.1f | %s |\n",
                  ++rank, static_cast<long long>(p.m), static_cast<long long>(p.n),
                  static_cast<long long>(p.k), static_cast<long long>(p.batch),
                  p.layout.ToString().c_str(), std::string(DataTypeName(p.dtype_a)).c_str(),
                  static_cast<long long>(t.gemm.calls), t.reference.median_ms,
                  speedup(t.tuned).c_str(), t.chosen_from.empty() ? "-" : t.chosen_from.c_str(),
                  t.speedup_q1, speedup(t.model_pick).c_str(), speedup(t.best_of_top8).c_str(),
                  static_cast<long long>(t.configs_timed),
                  static_cast<long long>(t.configs_enumerated), t.budget_s, t.outcome.c_str());
    md << line;
  }
  md << "\n\"tuned\" is the final choice: the fastest verified config among the search's best, "
        "the model's first pick and the best of the top N, picked in one interleaved run and "
        "measured in a second (every figure of a row comes from that second run); it is used "
        "only when the outcome is \"tuned\" (at least the threshold faster). \"from\" says "
        "which sets hold it; \"q1\" is the 25th percentile of its per-round speedups.\n";
  return md.str();
}

std::string TuneResultsCsv(const TuneResult& result) {
  std::ostringstream csv;
  csv << "run_id,m,n,k,batch,layout,a,b,c,calls,choice,config,median_ms,speedup,accepted\n";
  auto row = [&](const TunedGemm& t, const std::string& choice, const InterleavedFigure& f) {
    const GemmProblem& p = t.gemm.problem;
    csv << result.run_id << ',' << p.m << ',' << p.n << ',' << p.k << ',' << p.batch << ','
        << p.layout.ToString() << ',' << DataTypeName(p.dtype_a) << ',' << DataTypeName(p.dtype_b)
        << ',' << DataTypeName(p.dtype_c) << ',' << t.gemm.calls << ',' << choice << ",\""
        << ConfigKey(f.config) << "\"," << f.median_ms << ',' << f.speedup << ','
        << (choice == "tuned" && t.accepted ? 1 : 0) << '\n';
  };
  for (const TunedGemm& t : result.gemms) {
    if (t.reference.median_ms > 0) row(t, "default", t.reference);
    if (t.tuned) row(t, "tuned", *t.tuned);
    if (t.model_pick) row(t, "model_only", *t.model_pick);
    if (t.best_of_top8) row(t, "best_of_top8", *t.best_of_top8);
    for (const auto& [label, f] : t.others) row(t, label, f);
  }
  return csv.str();
}

}  // namespace kselect
