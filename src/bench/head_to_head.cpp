// The tile engine against cuBLASLt on one timing module: screening with the graph timer, then the
// finalists of both providers timed interleaved on the same rotated operands (drift between runs
// cannot favour either side).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/provider_comparison.h"
#include "core/json_codec.h"
#include "core/provenance_json.h"
#include "core/statistics.h"
#include "core/text.h"
#include "cuda/runtime.h"
#include "kselect/config_schema.h"
#include "kselect/cross_provider.h"
#include "kselect/head_to_head.h"
#include "kselect/model.h"
#include "kselect/verify.h"
#include "kselect/version.h"
#include "timing/graph_timer.h"

namespace kselect {
namespace {

using json = nlohmann::json;

using Screened = ScreenedTime;

class Runner final : public HeadToHeadRunner {
 public:
  explicit Runner(const HeadToHeadOptions& options) : options_(options) {}

  Status Init() {
    KSELECT_ASSIGN_OR_RETURN(device_, bench::TileAndCublasLt::Create(options_.provider_options));
    if (!options_.cross_model.empty()) {
      SelectorOptions so;
      so.provider = options_.provider_options;
      so.time_top_k = options_.cross_time_top_k;
      so.first_use_cold_l2 = options_.cross_first_use_cold_l2;
      so.first_use_graphs = options_.cross_first_use_graphs;
      so.first_use_vendor_margin = options_.cross_vendor_margin;
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
        const bench::TileAndCublasLt::Operands buffers,
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
    std::vector<timing::Contender> finalists{{device_.cublaslt.get(), picks[0]}};
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
    auto verify_tile = [&](const KernelConfig& config) -> StatusOr<bench::DeviceVerdict> {
      if (!check) {
        KSELECT_ASSIGN_OR_RETURN(check, device_.verifier->MakeCase(problem, specs));
      }
      return bench::VerifyConfig(*device_.tile, config, *check);
    };
    std::vector<size_t> tile_slots;
    if (!tile_screen.empty()) {
      for (const Screened& s : tile_screen) {
        if (static_cast<int>(tile_slots.size()) >= options_.finalists) break;
        KSELECT_ASSIGN_OR_RETURN(const bench::DeviceVerdict verdict, verify_tile(s.config));
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
        out.cross_vendor_kept = info.vendor_kept;
        out.cross_first_use_cold_l2 = options_.cross_first_use_cold_l2;
        out.cross_first_use_graphs = options_.cross_first_use_graphs;
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
          KSELECT_ASSIGN_OR_RETURN(const bench::DeviceVerdict verdict, verify_tile(decided));
          if (!verdict.passed) {
            return InternalError("the cross-provider decision " + key +
                                 " failed verification: " + verdict.detail);
          }
        }
        cross_slot = finalists.size();
        finalists.push_back({provider, decided});
      }
    }

    KSELECT_ASSIGN_OR_RETURN(const timing::InterleavedRun run,
                             timing::TimeContenders(*device_.timer, problem, finalists, operands,
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
  bench::TileAndCublasLt device_;
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
  int compared = 0, at_or_above = 0, crossed = 0, vendor_timed = 0, vendor_kept = 0;
  int cross_below_098 = 0;
  double log_cross = 0, worst_cross = 0;
  for (const HeadToHead& h : results) {
    json row = {
        {"problem", json_codec::GemmProblemToJson(h.problem)},
        {"min_bytes", h.problem.MinBytes()},
        {"tile_screened", h.tile_screened},
        {"cublaslt_screened", h.cublaslt_screened},
        {"cublaslt_pick", bench::FigureJson(h.cublaslt_pick, h.problem, h.peak_gb_s)},
        {"cublaslt_best", bench::FigureJson(h.cublaslt_best, h.problem, h.peak_gb_s)},
        {"tile_best",
         h.tile_best ? bench::FigureJson(*h.tile_best, h.problem, h.peak_gb_s) : json(nullptr)},
        {"tile_over_cublaslt_best", h.tile_best ? json(h.tile_over_cublaslt_best) : json(nullptr)},
        {"note", h.note}};
    json finalists = json::array();
    for (const InterleavedFigure& f : h.finalists)
      finalists.push_back(bench::FigureJson(f, h.problem, h.peak_gb_s));
    row["finalists"] = std::move(finalists);
    if (h.cross_pick) {
      row["cross_pick"] = bench::FigureJson(*h.cross_pick, h.problem, h.peak_gb_s);
      row["cross_predicted_gain"] = h.cross_predicted_gain;
      row["cross_timed_configs"] = h.cross_timed_configs;
      row["cross_first_use_cold_l2"] = h.cross_first_use_cold_l2;
      row["cross_first_use_graphs"] = h.cross_first_use_graphs;
      if (h.cross_vendor_kept) row["cross_vendor_kept"] = *h.cross_vendor_kept;
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
      worst_cross =
          crossed == 0 ? h.cross_pick->speedup : std::min(worst_cross, h.cross_pick->speedup);
      ++crossed;
      log_cross += std::log(h.cross_pick->speedup);
      cross_below_098 += h.cross_pick->speedup < 0.98 ? 1 : 0;
      if (h.cross_vendor_kept) {
        ++vendor_timed;
        vendor_kept += *h.cross_vendor_kept ? 1 : 0;
      }
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
    summary["worst_cross_pick_over_cublaslt_pick"] = worst_cross;
    summary["cross_picks_below_0_98_of_cublaslt_pick"] = cross_below_098;
    // The vendor guard at first use: problems where cuBLASLt's pick was timed, and kept.
    summary["first_use_vendor_timed"] = vendor_timed;
    summary["first_use_vendor_kept"] = vendor_kept;
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

}  // namespace kselect
