// The selector on a GPU host (runtime only, no dataset): what a new shape costs when the picks
// come from the library itself.
//   BM_Heuristic/cublaslt        cuBLASLt's own heuristic for a new shape (descriptors +
//                                cublasLtMatmulAlgoGetHeuristic, 8 algos), through the provider
//   BM_Select/cold_live          a new shape through the selector: the live heuristic query, the
//                                first stage (64), the model, CanImplement on the returned configs
//   BM_Select/cold_live_with_times  the same plus the predicted times of the top 8
//   BM_Select/cold_live_unchecked  the same without CanImplement
//   BM_Select/cached_live        a decision already in the cache
// Shapes: LLM layers in framework orientation (PyTorch nn.Linear: m = out features, n = tokens),
// a token count not asked before each time. Each reports p50_us. Skips without a GPU.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "kselect/provider.h"
#include "kselect/selector.h"
#include "p50_timer.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using bench::MicrosSince;
using bench::ReportP50;

const std::string kModel =
    (fs::path(KSELECT_SOURCE_DIR) / "models/h200_cublaslt_default_bf16_tn").string();

// (out features, in features) of Llama-3-8B/70B and Llama-2-7B projections.
constexpr std::pair<int64_t, int64_t> kLayers[] = {{4096, 4096},  {6144, 4096},  {14336, 4096},
                                                   {4096, 14336}, {28672, 4096}, {1024, 4096},
                                                   {11008, 4096}, {4096, 11008}};

// The n-th new problem: every layer, then the next token count.
GemmProblem NthProblem(int64_t i) {
  const auto& [m, k] = kLayers[i % std::size(kLayers)];
  GemmProblem p;
  p.m = m;
  p.k = k;
  p.n = 1 + i / static_cast<int64_t>(std::size(kLayers));
  p.layout = GemmLayout{MatrixOrder::kRowMajor, MatrixOrder::kColMajor, MatrixOrder::kColMajor};
  return p;
}

void BM_Heuristic(benchmark::State& state) {
  auto provider = CreateProvider(Provider::kCublasLt);
  if (!provider.ok()) {
    state.SkipWithError(provider.status().ToString().c_str());
    return;
  }
  // The provider's one-time set-up (handle, device query) is not a per-shape cost.
  if (auto warm = (*provider)->HeuristicPicks(NthProblem(100000), 8); !warm.ok()) {
    state.SkipWithError(warm.status().ToString().c_str());
    return;
  }
  std::vector<double> us;
  int64_t i = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto picks = (*provider)->HeuristicPicks(NthProblem(i++), 8);
    us.push_back(MicrosSince(start));
    if (!picks.ok() || picks->empty()) {
      state.SkipWithError("the heuristic returned no algorithm");
      return;
    }
  }
  ReportP50(state, us);
}

void SelectLive(benchmark::State& state, bool check, bool cached, int predicted_times = 0) {
  SelectorOptions options;
  options.first_stage_candidates = 64;
  options.predicted_times = predicted_times;
  options.check_can_implement = check;
  auto selector = Selector::Open(kModel, options);
  if (!selector.ok()) {
    state.SkipWithError(selector.status().ToString().c_str());
    return;
  }
  auto warm = (*selector)->Select(NthProblem(100000));
  if (!warm.ok() || (*warm)->path != DecisionPath::kModel) {
    state.SkipWithError(warm.ok() ? ("the model did not decide: " + (*warm)->note).c_str()
                                  : warm.status().ToString().c_str());
    return;
  }
  std::vector<double> us;
  int64_t i = 0;
  for (auto _ : state) {
    const GemmProblem problem = NthProblem(cached ? i++ % 64 : i++);
    if (cached && i <= 64) {
      if (!(*selector)->Select(problem).ok()) state.SkipWithError("select failed");
    }
    const auto start = std::chrono::steady_clock::now();
    auto selection = (*selector)->Select(problem);
    us.push_back(MicrosSince(start));
    if (!selection.ok()) {
      state.SkipWithError(selection.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(selection);
  }
  ReportP50(state, us);
}

void BM_SelectColdLive(benchmark::State& state) {
  SelectLive(state, true, false);
}
void BM_SelectColdLiveUnchecked(benchmark::State& state) {
  SelectLive(state, false, false);
}
// Plus the predicted TFLOPS and latency of the top 8 (the ranker's 2,998-tree latency model).
void BM_SelectColdLiveTimes(benchmark::State& state) {
  SelectLive(state, true, false, 8);
}
void BM_SelectCachedLive(benchmark::State& state) {
  SelectLive(state, true, true);
}

BENCHMARK(BM_Heuristic)
    ->Name("BM_Heuristic/cublaslt")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_SelectColdLive)
    ->Name("BM_Select/cold_live")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_SelectColdLiveTimes)
    ->Name("BM_Select/cold_live_with_times")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_SelectColdLiveUnchecked)
    ->Name("BM_Select/cold_live_unchecked")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_SelectCachedLive)
    ->Name("BM_Select/cached_live")
    ->Unit(benchmark::kNanosecond)
    ->Iterations(100000);

}  // namespace
}  // namespace kselect
