// The device half of kselect search (include/kselect/search.h): the best proposals (and the
// baselines' best configs) compiled through the tile provider (NVRTC, cubin cache), verified
// against the reference, and timed interleaved with cuBLASLt's heuristic rank-1 pick on operands
// rotated past L2, with the head to head's helpers (bench/provider_comparison.h).
#include <set>

#include "bench/provider_comparison.h"
#include "kselect/search.h"
#include "kselect/verify.h"
#include "timing/graph_timer.h"

namespace kselect {
namespace {

class Measurer final : public SearchMeasurer {
 public:
  Measurer(const SearchMeasureOptions& options, bench::TileAndCublasLt device)
      : options_(options), device_(std::move(device)) {}

  const HardwareProfile& hardware() const override { return device_.hardware; }

  Status Measure(TileSearchResult* result, bool scores_are_tflops) override {
    const GemmProblem& problem = result->problem;
    SearchMeasurement m;
    m.peak_gb_s = device_.hardware.peak_mem_bandwidth_gb_s;
    KSELECT_ASSIGN_OR_RETURN(const std::vector<KernelConfig> picks,
                             device_.cublaslt->HeuristicPicks(problem, 1));
    if (picks.empty()) {
      return CannotImplementError("cuBLASLt has no pick for " + problem.ToString());
    }

    // What is measured: the best distinct proposals, then the baselines' best configs.
    std::set<std::string> keys;
    auto add = [&](const std::string& role, const ScoredConfig& s) {
      if (!keys.insert(ConfigKey(KernelConfig(s.config))).second) return;
      MeasuredConfig c;
      c.role = role;
      c.config = s.config;
      c.predicted = s.score;
      m.configs.push_back(std::move(c));
    };
    for (size_t i = 0; i < result->top.size() && static_cast<int>(i) < options_.top; ++i) {
      add("proposal " + std::to_string(i + 1), result->top[i]);
    }
    if (options_.baselines) {
      for (const SearchBaseline& b : result->baselines) {
        if (b.best) add(b.rule_set + " best", *b.best);
      }
    }

    KSELECT_ASSIGN_OR_RETURN(
        const bench::TileAndCublasLt::Operands buffers,
        device_.RotatingOperands(problem, options_.provider.max_workspace_bytes,
                                 options_.rotate_bytes));
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::VerifyCase> check,
                             device_.verifier->MakeCase(problem, buffers.specs));
    std::vector<timing::Contender> contenders{{device_.cublaslt.get(), picks[0]}};
    std::vector<size_t> slot_of(m.configs.size(), 0);  // 0: not timed
    for (size_t i = 0; i < m.configs.size(); ++i) {
      MeasuredConfig& c = m.configs[i];
      KSELECT_ASSIGN_OR_RETURN(const bench::DeviceVerdict verdict,
                               bench::VerifyConfig(*device_.tile, KernelConfig(c.config), *check));
      c.verified = verdict.passed;
      c.verification = verdict.detail;
      if (!verdict.passed) {
        m.note += c.role + " " + ConfigKey(KernelConfig(c.config)) +
                  " failed verification: " + verdict.detail + "; ";
        continue;
      }
      slot_of[i] = contenders.size();
      contenders.push_back({device_.tile.get(), KernelConfig(c.config)});
    }
    KSELECT_ASSIGN_OR_RETURN(
        const timing::InterleavedRun run,
        timing::TimeContenders(*device_.timer, problem, contenders, *buffers.rotating,
                               options_.batch_ms, options_.rounds));
    m.cublaslt_pick = run.figures[0];
    m.cublaslt_tflops = problem.Flops() / (m.cublaslt_pick.median_ms * 1e-3) / 1e12;
    for (size_t i = 0; i < m.configs.size(); ++i) {
      if (slot_of[i] == 0) continue;
      MeasuredConfig& c = m.configs[i];
      c.figure = run.figures[slot_of[i]];
      c.measured_tflops = problem.Flops() / (c.figure->median_ms * 1e-3) / 1e12;
      if (scores_are_tflops && c.measured_tflops > 0) {
        c.predicted_over_measured = c.predicted / c.measured_tflops;
      }
    }
    result->measured = std::move(m);
    return Status::Ok();
  }

 private:
  SearchMeasureOptions options_;
  bench::TileAndCublasLt device_;
};

}  // namespace

StatusOr<std::unique_ptr<SearchMeasurer>> SearchMeasurer::Create(
    const SearchMeasureOptions& options) {
  KSELECT_ASSIGN_OR_RETURN(bench::TileAndCublasLt device,
                           bench::TileAndCublasLt::Create(options.provider));
  return std::unique_ptr<SearchMeasurer>(std::make_unique<Measurer>(options, std::move(device)));
}

}  // namespace kselect
