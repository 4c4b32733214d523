// Offline scoring of a cross-provider decision (eval.h's EvaluateCrossProvider) on head-to-head
// files written with --screened: per problem, the decision over cuBLASLt's pick and the screened
// tile configs, scored with the screened times of the same process.
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/cross_provider.h"
#include "kselect/eval.h"
#include "kselect/model.h"
#include "kselect/version.h"

namespace kselect {

using nlohmann::json;

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
