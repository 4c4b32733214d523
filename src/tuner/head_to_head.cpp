// The tile engine against cuBLASLt on one timing module: screening with the graph timer, then the
// finalists of both providers timed interleaved on the same rotated operands (drift between runs
// cannot favour either side).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "core/statistics.h"
#include "core/text.h"
#include "cuda/runtime.h"
#include "kselect/config_schema.h"
#include "kselect/cross_provider.h"
#include "kselect/model.h"
#include "kselect/tuner.h"
#include "kselect/verify.h"
#include "kselect/version.h"
#include "tuner/graph_timer.h"
#include "tuner/interleaved.h"

namespace kselect {
namespace {

using json = nlohmann::json;

using Screened = ScreenedTime;

class Runner final : public HeadToHeadRunner {
 public:
  explicit Runner(const HeadToHeadOptions& options) : options_(options) {}

  Status Init() {
    KSELECT_ASSIGN_OR_RETURN(device_, tuner::TileAndCublasLt::Create(options_.provider_options));
    if (!options_.cross_model.empty()) {
      SelectorOptions so;
      so.provider = options_.provider_options;
      so.time_top_k = options_.cross_time_top_k;
      so.first_use_cold_l2 = options_.cross_first_use_cold_l2;
      KSELECT_ASSIGN_OR_RETURN(cross_, CrossProviderSelector::Open(options_.cross_model, so));
    } else if (options_.cross_only) {
      return InvalidArgumentError("head to head: cross_only needs a cross-provider model");
    }
    return Status::Ok();
  }

  const HardwareProfile& hardware() const override { return device_.hardware; }

  StatusOr<HeadToHead> Run(const GemmProblem& problem) override {
    KSELECT_RETURN_IF_ERROR(problem.Validate());
    HeadToHead out;
    out.problem = problem;
    out.peak_gb_s = device_.hardware.peak_mem_bandwidth_gb_s;

    KSELECT_ASSIGN_OR_RETURN(const std::vector<KernelConfig> picks,
                             device_.cublaslt->HeuristicPicks(problem, options_.cublaslt_picks));
    if (picks.empty())
      return CannotImplementError("cuBLASLt has no pick for " + problem.ToString());
    std::vector<KernelConfig> cublaslt_configs = picks;
    if (options_.cublaslt_space) {
      KSELECT_ASSIGN_OR_RETURN(const std::vector<KernelConfig> space,
                               device_.cublaslt->Enumerate(problem));
      std::set<std::string> keys;
      for (const KernelConfig& c : cublaslt_configs) keys.insert(ConfigKey(c));
      for (const KernelConfig& c : space) {
        if (keys.insert(ConfigKey(c)).second) cublaslt_configs.push_back(c);
      }
    }
    StatusOr<std::vector<KernelConfig>> tile_configs =
        options_.cross_only ? std::vector<KernelConfig>{} : device_.tile->Enumerate(problem);
    if (!tile_configs.ok()) out.note += "tile: " + tile_configs.status().message() + "; ";
    if (options_.cross_only) cublaslt_configs.clear();

    KSELECT_ASSIGN_OR_RETURN(
        const tuner::TileAndCublasLt::Operands buffers,
        device_.RotatingOperands(problem, options_.provider_options.max_workspace_bytes,
                                 options_.rotate_bytes));
    const std::vector<OperandSpec>& specs = buffers.specs;
    const verify::DeviceOperands& operands = *buffers.rotating;

    KSELECT_ASSIGN_OR_RETURN(
        std::vector<Screened> cublaslt_screen,
        Screen(*device_.cublaslt, problem, cublaslt_configs, operands, out.note));
    out.cublaslt_screened = static_cast<int64_t>(cublaslt_screen.size());
    std::vector<Screened> tile_screen;
    if (tile_configs.ok()) {
      KSELECT_ASSIGN_OR_RETURN(tile_screen,
                               Screen(*device_.tile, problem, *tile_configs, operands, out.note));
    }
    out.tile_screened = static_cast<int64_t>(tile_screen.size());
    if (options_.keep_screened) {
      out.screened = cublaslt_screen;
      out.screened.insert(out.screened.end(), tile_screen.begin(), tile_screen.end());
      std::stable_sort(out.screened.begin(), out.screened.end(),
                       [](const Screened& a, const Screened& b) { return a.ms < b.ms; });
    }

    // Finalists: the pick first (the reference), cuBLASLt's fastest, the tile engine's fastest
    // that pass verification.
    std::vector<tuner::Contender> finalists{{device_.cublaslt.get(), picks[0]}};
    const std::string pick_key = ConfigKey(picks[0]);
    std::vector<size_t> cublaslt_slots{0};
    for (const Screened& s : cublaslt_screen) {
      if (static_cast<int>(cublaslt_slots.size()) > options_.finalists) break;
      if (ConfigKey(s.config) == pick_key) continue;
      cublaslt_slots.push_back(finalists.size());
      finalists.push_back({device_.cublaslt.get(), s.config});
    }
    // The reference for tile configs, made once per problem when the first one needs it.
    std::unique_ptr<verify::VerifyCase> check;
    auto verify_tile = [&](const KernelConfig& config) -> StatusOr<tuner::DeviceVerdict> {
      if (!check) {
        KSELECT_ASSIGN_OR_RETURN(check, device_.verifier->MakeCase(problem, specs));
      }
      return tuner::VerifyConfig(*device_.tile, config, *check);
    };
    std::vector<size_t> tile_slots;
    if (!tile_screen.empty()) {
      for (const Screened& s : tile_screen) {
        if (static_cast<int>(tile_slots.size()) >= options_.finalists) break;
        KSELECT_ASSIGN_OR_RETURN(const tuner::DeviceVerdict verdict, verify_tile(s.config));
        if (!verdict.passed) {
          out.note += ConfigKey(s.config) + " failed verification: " + verdict.detail + "; ";
          continue;
        }
        tile_slots.push_back(finalists.size());
        finalists.push_back({device_.tile.get(), s.config});
      }
    }

    std::optional<size_t> cross_slot;
    if (cross_) {
      KSELECT_ASSIGN_OR_RETURN(const CrossDecision d, cross_->Select(problem));
      out.cross_predicted_gain = d.predicted_gain;
      KernelConfig decided = d.config;
      if (options_.cross_time_top_k >= 2) {
        // What an application's call runs: kselect::Gemm times the candidates at first use.
        const KernelOperands& first = operands.operands();
        KSELECT_ASSIGN_OR_RETURN(
            const DispatchInfo info,
            Gemm(*cross_, problem, first.buffers.at(0), first.buffers.at(1), first.buffers.at(2),
                 first.workspace, first.workspace_bytes, nullptr));
        KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
        decided = info.config;
        out.cross_timed_configs = info.timed_configs;
        out.cross_first_use_cold_l2 = options_.cross_first_use_cold_l2;
      }
      const std::string key = ConfigKey(decided);
      for (size_t i = 0; i < finalists.size() && !cross_slot; ++i) {
        if (ConfigKey(finalists[i].config) == key) cross_slot = i;
      }
      if (!cross_slot) {
        const bool tile = ProviderOf(decided) == Provider::kTile;
        KernelProvider* provider = tile ? device_.tile.get() : device_.cublaslt.get();
        if (tile) {
          // Whatever runs for a user is checked first, like the tile finalists.
          KSELECT_ASSIGN_OR_RETURN(const tuner::DeviceVerdict verdict, verify_tile(decided));
          if (!verdict.passed) {
            return InternalError("the cross-provider decision " + key +
                                 " failed verification: " + verdict.detail);
          }
        }
        cross_slot = finalists.size();
        finalists.push_back({provider, decided});
      }
    }

    KSELECT_ASSIGN_OR_RETURN(const tuner::InterleavedRun run,
                             tuner::TimeContenders(*device_.timer, problem, finalists, operands,
                                                   options_.batch_ms, options_.rounds));
    auto fastest = [&](const std::vector<size_t>& slots) {
      return *std::min_element(slots.begin(), slots.end(), [&](size_t a, size_t b) {
        return run.figures[a].median_ms < run.figures[b].median_ms;
      });
    };
    out.cublaslt_pick = run.figures[0];
    out.finalists = run.figures;
    if (cross_slot) out.cross_pick = run.figures[*cross_slot];
    const size_t cublaslt_best = fastest(cublaslt_slots);
    out.cublaslt_best = run.figures[cublaslt_best];
    if (!tile_slots.empty()) {
      const size_t tile_best = fastest(tile_slots);
      out.tile_best = run.figures[tile_best];
      out.tile_over_cublaslt_best = MedianRatio(run.rounds[cublaslt_best], run.rounds[tile_best]);
    }
    return out;
  }

 private:
  // Every config timed once by the graph timer, fastest first; configs that cannot be prepared or
  // timed are left out (the first reason goes into `note`). A fault that poisons the context
  // ends the run.
  StatusOr<std::vector<Screened>> Screen(KernelProvider& provider, const GemmProblem& problem,
                                         const std::vector<KernelConfig>& configs,
                                         const verify::DeviceOperands& operands,
                                         std::string& note) {
    std::vector<Screened> out;
    double best = 0;
    bool noted = false;
    for (const KernelConfig& c : configs) {
      double gpu_ms = 0;
      StatusOr<std::unique_ptr<PreparedKernel>> kernel = provider.Prepare(problem, c);
      StatusOr<double> ms = kernel.ok()
                                ? device_.timer->Time(**kernel, operands, options_.screen_batch_ms,
                                                      3, best > 0 ? 3 * best : 0, &gpu_ms)
                                : StatusOr<double>(kernel.status());
      if (!ms.ok()) {
        if (!noted) note += ConfigKey(c) + ": " + ms.status().message() + "; ";
        noted = true;
        if (cudaDeviceSynchronize() != cudaSuccess) return ms.status();
        continue;
      }
      if (best == 0 || *ms < best) best = *ms;
      out.push_back({c, *ms});
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Screened& a, const Screened& b) { return a.ms < b.ms; });
    return out;
  }

  HeadToHeadOptions options_;
  tuner::TileAndCublasLt device_;
  std::unique_ptr<CrossProviderSelector> cross_;
};

}  // namespace

StatusOr<std::unique_ptr<HeadToHeadRunner>> HeadToHeadRunner::Create(
    const HeadToHeadOptions& options) {
  auto runner = std::make_unique<Runner>(options);
  KSELECT_RETURN_IF_ERROR(runner->Init());
  return std::unique_ptr<HeadToHeadRunner>(std::move(runner));
}

double HbmFraction(const GemmProblem& problem, double ms, double peak_gb_s) {
  if (ms <= 0 || peak_gb_s <= 0) return 0;
  return problem.MinBytes() / (ms * 1e-3) / (peak_gb_s * 1e9);
}

std::string HeadToHeadJson(std::span<const HeadToHead> results, const HardwareProfile& hardware,
                           const std::string& device_kind, const std::string& run_id) {
  json rows = json::array();
  double log_tile = 0, log_pick = 0;
  int compared = 0, at_or_above = 0, crossed = 0;
  double log_cross = 0;
  for (const HeadToHead& h : results) {
    json row = {
        {"problem", json_codec::GemmProblemToJson(h.problem)},
        {"min_bytes", h.problem.MinBytes()},
        {"tile_screened", h.tile_screened},
        {"cublaslt_screened", h.cublaslt_screened},
        {"cublaslt_pick", tuner::FigureJson(h.cublaslt_pick, h.problem, h.peak_gb_s)},
        {"cublaslt_best", tuner::FigureJson(h.cublaslt_best, h.problem, h.peak_gb_s)},
        {"tile_best",
         h.tile_best ? tuner::FigureJson(*h.tile_best, h.problem, h.peak_gb_s) : json(nullptr)},
        {"tile_over_cublaslt_best", h.tile_best ? json(h.tile_over_cublaslt_best) : json(nullptr)},
        {"note", h.note}};
    json finalists = json::array();
    for (const InterleavedFigure& f : h.finalists)
      finalists.push_back(tuner::FigureJson(f, h.problem, h.peak_gb_s));
    row["finalists"] = std::move(finalists);
    if (h.cross_pick) {
      row["cross_pick"] = tuner::FigureJson(*h.cross_pick, h.problem, h.peak_gb_s);
      row["cross_predicted_gain"] = h.cross_predicted_gain;
      row["cross_timed_configs"] = h.cross_timed_configs;
      row["cross_first_use_cold_l2"] = h.cross_first_use_cold_l2;
    }
    if (!h.screened.empty()) {
      json screened = json::array();
      for (const ScreenedTime& t : h.screened) {
        screened.push_back({{"config", json_codec::KernelConfigToJson(t.config)}, {"ms", t.ms}});
      }
      row["screened"] = std::move(screened);
    }
    rows.push_back(std::move(row));
    if (h.tile_best) {
      ++compared;
      log_tile += std::log(h.tile_over_cublaslt_best);
      log_pick += std::log(h.tile_best->speedup);
      at_or_above += h.tile_over_cublaslt_best >= 1.0;
    }
    if (h.cross_pick) {
      ++crossed;
      log_cross += std::log(h.cross_pick->speedup);
    }
  }
  json summary = {
      {"problems", results.size()},
      {"problems_with_a_tile_kernel", compared},
      {"share_of_shapes_at_or_above_cublaslt_best",
       compared > 0 ? static_cast<double>(at_or_above) / compared : 0.0},
      {"geomean_tile_over_cublaslt_best", compared > 0 ? std::exp(log_tile / compared) : 0.0},
      {"geomean_tile_over_cublaslt_pick", compared > 0 ? std::exp(log_pick / compared) : 0.0}};
  if (crossed > 0) {
    summary["problems_with_a_cross_pick"] = crossed;
    summary["geomean_cross_pick_over_cublaslt_pick"] = std::exp(log_cross / crossed);
  }
  json root = {{"format", "kselect.head_to_head"},
               {"format_version", 1},
               {"run_id", run_id},
               {"peak_mem_bandwidth_gb_s", hardware.peak_mem_bandwidth_gb_s},
               {"method",
                "graph timer (CUDA graphs of launches cycling operand sets rotated past 2 x L2), "
                "screening then the finalists of both providers timed interleaved; medians of "
                "rounds"},
               {"results", std::move(rows)},
               {"summary", std::move(summary)}};
  Provenance provenance = ProvenanceOf(hardware);
  provenance.device_kind = device_kind;
  json_codec::WriteProvenance(provenance, root);
  return root.dump(2) + "\n";
}

namespace {

// The screened time of `config` in one result's screened list (0 when absent).
double ScreenedMs(const std::map<std::string, double>& screened, const KernelConfig& config) {
  auto it = screened.find(ConfigKey(config));
  return it == screened.end() ? 0.0 : it->second;
}

}  // namespace

StatusOr<CrossEvaluation> EvaluateCrossProvider(const CrossProviderSelector& selector,
                                                std::span<const std::string> head_to_head_files) {
  CrossEvaluation e;
  double log_decision = 0, log_top = 0, log_best = 0;
  int chosen = 0;
  for (const std::string& file : head_to_head_files) {
    KSELECT_ASSIGN_OR_RETURN(const std::string text, ReadMaybeGzipFile(file));
    const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded() || !root.is_object() ||
        root.value("format", "") != "kselect.head_to_head" || !root.contains("results") ||
        !root.at("results").is_array()) {
      return ParseError(file + ": not a kselect.head_to_head file");
    }
    const json& results = root.at("results");
    for (size_t i = 0; i < results.size(); ++i) {
      const std::string where = file + ": results[" + std::to_string(i) + "]";
      const json& r = results[i];
      if (!r.is_object() || !r.contains("screened")) {
        return ParseError(where + ": no screened times (run kselect tile bench with --screened)");
      }
      // The fields this reads, with a wrong or missing one an error naming the result.
      std::optional<Problem> problem;
      std::optional<KernelConfig> pick;
      std::map<std::string, double> screened;
      std::vector<KernelConfig> challengers;
      double best_ms = 0;
      try {
        KSELECT_ASSIGN_OR_RETURN(problem,
                                 json_codec::ProblemFromJson(r.at("problem"), where + ".problem"));
        KSELECT_ASSIGN_OR_RETURN(pick, json_codec::KernelConfigFromJson(
                                           r.at("cublaslt_pick").at("config"), where + ".pick"));
        for (const json& t : r.at("screened")) {
          KSELECT_ASSIGN_OR_RETURN(const KernelConfig c,
                                   json_codec::KernelConfigFromJson(t.at("config"), where));
          const double ms = t.at("ms").get<double>();
          if (!(ms > 0)) return ParseError(where + ": a screened time is not positive");
          screened[ConfigKey(c)] = ms;
          if (best_ms == 0 || ms < best_ms) best_ms = ms;
          if (ProviderOf(c) == selector.manifest().challenger_provider) challengers.push_back(c);
        }
      } catch (const json::exception& ex) {
        return ParseError(where + ": " + ex.what());
      }
      const GemmProblem* gemm = std::get_if<GemmProblem>(&*problem);
      if (gemm == nullptr) return ParseError(where + ": not a GEMM problem");
      CrossEvaluationRow row;
      row.problem = *gemm;
      row.pick_ms = ScreenedMs(screened, *pick);
      if (row.pick_ms == 0) return ParseError(where + ": cuBLASLt's pick was not screened");
      KSELECT_ASSIGN_OR_RETURN(const CrossDecision d, selector.Decide(*gemm, *pick, challengers));
      row.challenger_chosen = d.challenger_chosen;
      row.predicted_gain = d.predicted_gain;
      row.decision_ms = ScreenedMs(screened, d.config);
      row.best_ms = best_ms;
      const double flops = gemm->Flops();
      row.reference_predicted_tflops = d.reference_predicted_tflops;
      row.reference_measured_tflops = flops / (row.pick_ms * 1e-3) / 1e12;
      if (d.challenger_top) {  // else no tile kernel: "always the tile top" runs the pick
        row.challenger_top_ms = ScreenedMs(screened, *d.challenger_top);
        row.challenger_predicted_tflops = d.challenger_predicted_tflops;
        row.challenger_measured_tflops = flops / (row.challenger_top_ms * 1e-3) / 1e12;
        log_top += std::log(row.pick_ms / row.challenger_top_ms);
      }
      const double ratio = row.pick_ms / row.decision_ms;
      log_decision += std::log(ratio);
      log_best += std::log(row.pick_ms / row.best_ms);
      chosen += row.challenger_chosen;
      if (e.rows.empty() || ratio < e.worst_decision_over_pick) e.worst_decision_over_pick = ratio;
      e.rows.push_back(row);
    }
  }
  if (e.rows.empty()) return InvalidArgumentError("no problems in the head-to-head files");
  const double n = static_cast<double>(e.rows.size());
  e.geomean_decision_over_pick = std::exp(log_decision / n);
  e.geomean_challenger_top_over_pick = std::exp(log_top / n);
  e.geomean_best_over_pick = std::exp(log_best / n);
  e.share_challenger_chosen = chosen / n;
  return e;
}

std::string CrossEvaluationJson(const CrossEvaluation& e, const std::string& model_dir,
                                std::span<const std::string> sources) {
  json rows = json::array();
  for (const CrossEvaluationRow& r : e.rows) {
    rows.push_back({{"problem", json_codec::GemmProblemToJson(r.problem)},
                    {"challenger_chosen", r.challenger_chosen},
                    {"predicted_gain", r.predicted_gain},
                    {"pick_ms", r.pick_ms},
                    {"decision_ms", r.decision_ms},
                    {"challenger_top_ms", r.challenger_top_ms},
                    {"best_ms", r.best_ms},
                    {"reference_predicted_tflops", r.reference_predicted_tflops},
                    {"reference_measured_tflops", r.reference_measured_tflops},
                    {"challenger_predicted_tflops", r.challenger_predicted_tflops},
                    {"challenger_measured_tflops", r.challenger_measured_tflops}});
  }
  json root = {{"format", "kselect.cross_evaluation"},
               {"format_version", 1},
               {"tool_version", ToolVersion()},
               {"model", model_dir},
               {"sources", std::vector<std::string>(sources.begin(), sources.end())},
               {"method",
                "screened times of one head-to-head process per problem (graph timer, operands "
                "rotated past 2 x L2): cuBLASLt's pick, its top 16 and every tile config"},
               {"summary",
                {{"problems", e.rows.size()},
                 {"geomean_decision_over_cublaslt_pick", e.geomean_decision_over_pick},
                 {"geomean_tile_top1_over_cublaslt_pick", e.geomean_challenger_top_over_pick},
                 {"geomean_best_of_both_over_cublaslt_pick", e.geomean_best_over_pick},
                 {"share_tile_chosen", e.share_challenger_chosen},
                 {"worst_decision_over_cublaslt_pick", e.worst_decision_over_pick}}},
               {"results", std::move(rows)}};
  return root.dump(1) + "\n";
}

}  // namespace kselect
