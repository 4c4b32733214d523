// The selection report shared by `kselect predict` and `kselect conv select`.
#include "cli/selection_report.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "kselect/model.h"

namespace kselect::cli {

StatusOr<std::optional<std::vector<PeerPick>>> RecordedPeerPicks(const Dataset& dataset,
                                                                 Provider provider,
                                                                 const Problem& problem) {
  const std::string problem_key = ProblemToString(problem);
  const std::string provider_name(ProviderName(provider));
  std::vector<PeerPick> picks;
  bool measured = false;
  for (const DatasetRow& row : dataset.rows) {
    if (row.problem_key.value_or("") != problem_key || row.provider.value_or("") != provider_name) {
      continue;
    }
    measured = true;
    const bool first = row.peer_rank && *row.peer_rank > 0;
    const bool second = row.peer_rank_b && *row.peer_rank_b > 0;
    if (!first && !second) continue;
    KSELECT_ASSIGN_OR_RETURN(Measurement meas, MeasurementFromRow(row));
    if (first) picks.push_back({meas.config, static_cast<int32_t>(*row.peer_rank)});
    if (second) {
      picks.push_back(
          {meas.config, static_cast<int32_t>(*row.peer_rank_b), PeerHeuristic::kSecond});
    }
  }
  if (!measured) return std::optional<std::vector<PeerPick>>();
  // Each heuristic's list in rank order, as eval's PeerPicksOf orders them.
  std::stable_sort(picks.begin(), picks.end(), [](const PeerPick& a, const PeerPick& b) {
    return std::pair(a.heuristic, a.rank) < std::pair(b.heuristic, b.rank);
  });
  return std::optional(std::move(picks));
}

void PrintSelection(const SelectionReport& args, const Selector& selector,
                    const Selection& selection, size_t candidates, size_t not_implementable,
                    const std::string& peer_source) {
  const Model& model = selector.model();
  const std::string problem = ProblemToString(selection.problem);
  const bool by_model = selection.decided_by == DecisionPath::kModel;
  const bool ranker = by_model && model.Ranks(Target::kTflops);
  const bool blend = by_model && model.Blends();
  const bool has_latency_model = model.Has(Target::kLatency);
  const size_t top = std::min(selection.ranked.size(), static_cast<size_t>(std::max(args.top, 1)));
  const char* ranked_by = !by_model ? "fallback"
                          : blend   ? "blend score"
                          : ranker  ? "lambdarank score"
                                    : "predicted TFLOPS";
  const char* tflops_from = !by_model            ? "the fallback stage"
                            : (blend || !ranker) ? "tflops model"
                            : has_latency_model  ? "latency model"
                                                 : nullptr;
  const char* latency_from = !by_model            ? "the fallback stage"
                             : has_latency_model  ? "latency model"
                             : (blend || !ranker) ? "tflops model (flops / TFLOPS)"
                                                  : nullptr;
  auto or_null = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json();
  };
  if (args.json) {
    nlohmann::json ranked = nlohmann::json::array();
    for (size_t r = 0; r < top; ++r) {
      const RankedConfig& entry = selection.ranked[r];
      nlohmann::json row = {{"rank", r + 1},
                            {"config", ConfigKey(entry.config)},
                            {"name", DescribeConfig(entry.config)},
                            {"predicted_tflops", or_null(entry.predicted_tflops)},
                            {"predicted_latency_ms", or_null(entry.predicted_latency_ms)}};
      if (ranker || !by_model) row["score"] = entry.score;
      ranked.push_back(std::move(row));
    }
    std::cout << nlohmann::json{{"problem", problem},
                                {"model", selector.model_dir()},
                                {"path", DecisionPathName(selection.path)},
                                {"decided_by", DecisionPathName(selection.decided_by)},
                                {"note", selection.note},
                                {"ranked_by", ranked_by},
                                {"predicted_tflops_from",
                                 tflops_from ? nlohmann::json(tflops_from) : nlohmann::json()},
                                {"predicted_latency_from",
                                 latency_from ? nlohmann::json(latency_from) : nlohmann::json()},
                                {"candidates", candidates},
                                {"candidates_scored", selection.candidates_scored},
                                {"can_implement_checked", selection.can_implement_checked},
                                {"not_implementable", not_implementable},
                                {"peer_picks_from", peer_source.empty()
                                                        ? nlohmann::json()
                                                        : nlohmann::json(peer_source)},
                                {"ranked", ranked}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << problem << ": " << candidates << " candidates";
  if (args.can_implement) {
    std::cout << " the provider can run it with (" << not_implementable << " cannot)";
  }
  std::cout << "\n";
  if (args.several_models) std::cout << "model for this device: " << selector.model_dir() << "\n";
  std::cout << "decided by: " << DecisionPathName(selection.decided_by);
  if (selection.path == DecisionPath::kCache) std::cout << " (cached)";
  if (selection.candidates_scored != candidates) {
    std::cout << ", " << selection.candidates_scored << " scored";
  }
  std::cout << (selection.can_implement_checked ? ", CanImplement checked"
                                                : ", CanImplement not checked (no GPU to ask)")
            << "\n";
  if (!selection.note.empty()) std::cout << "note: " << selection.note << "\n";
  if (!peer_source.empty()) std::cout << "peer picks from " << peer_source << "\n";
  auto text = [](const std::optional<double>& v, const char* format) {
    char buf[32] = "-";
    if (v) std::snprintf(buf, sizeof(buf), format, *v);
    return std::string(buf);
  };
  if (ranker) {
    std::printf("rank  %10s  %10s  %10s  config\n", "score", "latency_ms", "TFLOPS*");
  } else {
    std::printf("rank  %10s  %10s  config\n", "TFLOPS", "latency_ms");
  }
  for (size_t r = 0; r < top; ++r) {
    const RankedConfig& entry = selection.ranked[r];
    const std::string order_value =
        ranker ? text(entry.score, "%.4f") : text(entry.predicted_tflops, "%.2f");
    std::printf("%4zu  %10s  %10s  ", r + 1, order_value.c_str(),
                text(entry.predicted_latency_ms, "%.4g").c_str());
    if (ranker) std::printf("%10s  ", text(entry.predicted_tflops, "%.2f").c_str());
    std::printf("%s\n", DescribeConfig(entry.config).c_str());
  }
  if (blend) {
    std::printf(
        "score: %.1f x the regression's per-problem rank percentile + %.1f x the "
        "ranker's; TFLOPS* = the regression member's prediction\n",
        model.blend_regression_weight(), 1 - model.blend_regression_weight());
  } else if (ranker) {
    std::cout << "score: the ranker's order only, not TFLOPS; TFLOPS* = the problem's flops / "
                 "predicted latency"
              << (has_latency_model ? ""
                                    : " (this model has no latency model: retrain with "
                                      "--targets tflops,latency)")
              << "\n";
  } else if (by_model && !has_latency_model) {
    std::cout << "latency_ms = the problem's flops / predicted TFLOPS (the model has no "
                 "separate latency model)\n";
  }
}

}  // namespace kselect::cli
