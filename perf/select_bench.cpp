// The selector's decision time (selector.h) with the shipped bf16 TN peer ranker and its full
// candidate table, one core unless said otherwise:
//   BM_Select/cold        a framework-orientation bf16 TN problem (PyTorch nn.Linear: m = out
//                         features, n = tokens) not in the cache, heuristic picks supplied,
//                         first stage of 64 candidates (measured not to change held-out quality:
//                         docs/lab/selector.md)
//   BM_Select/cold_with_times  the same plus the predicted TFLOPS and latency of the top 8
//   BM_Select/cold_full   every candidate scored (no first stage)
//   BM_Select/cached      a decision already in the cache; also from 8 threads at once
// Each reports p50_us over its iterations (the live cuBLASLt heuristic query that supplies the
// picks on a GPU host is timed on the device: scripts/device/selector_check.sh).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <vector>

#include "kselect/dataset.h"
#include "kselect/eval.h"
#include "kselect/model.h"
#include "kselect/selector.h"
#include "p50_timer.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using bench::MicrosSince;
using bench::ReportP50;

const std::string kModel =
    (fs::path(KSELECT_SOURCE_DIR) / "models/h200_cublaslt_default_bf16_tn").string();

// LLM layers in framework orientation (m = out features, k = in features), from the held-out
// data's shapes (measured with the tokens in m: their n is the layer's out features), with the
// heuristic's picks recorded for one of each layer's problems as the picks supplied.
struct Workload {
  std::vector<GemmProblem> layers;
  std::map<std::pair<int64_t, int64_t>, std::vector<PeerPick>> picks;
};

const Workload& LoadWorkload() {
  static const Workload workload = [] {
    Workload w;
    auto dataset = ReadDataset(
        (fs::path(KSELECT_SOURCE_DIR) / "data/h200/cublaslt_default_bf16_tn_holdout.parquet")
            .string());
    if (!dataset.ok()) return w;
    auto data = BuildCandidateSet(*dataset, Provider::kCublasLt);
    if (!data.ok()) return w;
    for (const ProblemCandidates& problem : data->problems) {
      GemmProblem layer = std::get<GemmProblem>(problem.problem);
      layer.m = layer.n;
      const auto key = std::make_pair(layer.m, layer.k);
      if (w.picks.contains(key)) continue;
      w.picks[key] = PeerPicksOf(problem);
      w.layers.push_back(layer);
    }
    return w;
  }();
  return workload;
}

std::unique_ptr<Selector> OpenSelector(int first_stage, int predicted_times = 0) {
  SelectorOptions options;
  options.predicted_times = predicted_times;
  options.first_stage_candidates = first_stage;
  options.check_can_implement = false;  // the decision alone, as on a host whose GPU said yes
  options.query_heuristic = false;
  options.cache_capacity = 1 << 20;
  auto selector = Selector::Open(kModel, options);
  return selector.ok() ? std::move(*selector) : nullptr;
}

void Cold(benchmark::State& state, int first_stage, int predicted_times = 0) {
  const Workload& workload = LoadWorkload();
  auto selector = OpenSelector(first_stage, predicted_times);
  if (!selector || workload.layers.empty()) {
    state.SkipWithError("cannot open the model or read the held-out data");
    return;
  }
  std::vector<double> us;
  int64_t tokens = 1, layer = 0;
  for (auto _ : state) {
    // A new problem every time: the layers' shapes with a token count not asked for yet.
    GemmProblem problem = workload.layers[layer];
    problem.n = tokens;
    const auto& picks = workload.picks.at({problem.m, problem.k});
    const auto start = std::chrono::steady_clock::now();
    auto selection = selector->Select(problem, picks);
    us.push_back(MicrosSince(start));
    if (!selection.ok() || (*selection)->path != DecisionPath::kModel) {
      state.SkipWithError("the model did not decide");
      return;
    }
    benchmark::DoNotOptimize(selection);
    if (++layer == static_cast<int64_t>(workload.layers.size())) {
      layer = 0;
      ++tokens;
    }
  }
  ReportP50(state, us);
  state.counters["candidates"] =
      static_cast<double>(selector->Candidates(workload.layers[0]).size());
}

void BM_SelectCold(benchmark::State& state) {
  Cold(state, 64);
}
void BM_SelectColdFull(benchmark::State& state) {
  Cold(state, 0);
}
// With the latency model's time for the top 8 (2,998 trees a config).
void BM_SelectColdTimes(benchmark::State& state) {
  Cold(state, 64, 8);
}

// Where a cold decision's time goes: the 66 configs the first stage picks for a decode shape,
// their features (the extractor) and their scores (features + the 177 trees).
void SelectParts(benchmark::State& state, bool score) {
  const Workload& workload = LoadWorkload();
  auto selector = OpenSelector(64);
  if (!selector || workload.layers.empty()) {
    state.SkipWithError("cannot open the model or read the held-out data");
    return;
  }
  GemmProblem problem = workload.layers[0];
  problem.n = 16;
  const auto& picks = workload.picks.at({problem.m, problem.k});
  auto selection = selector->Select(problem, picks);
  if (!selection.ok()) {
    state.SkipWithError(selection.status().ToString().c_str());
    return;
  }
  auto table = selector->Candidates(problem);
  const std::vector<KernelConfig> configs(table.begin(), table.begin() + 66);
  std::vector<double> features;
  for (auto _ : state) {
    if (score) {
      auto scores = selector->model().Predict(Target::kTflops, problem, configs,
                                              std::span<const PeerPick>(picks));
      benchmark::DoNotOptimize(scores);
    } else {
      auto status = selector->model().extractor().ExtractBatch(problem, configs, &features,
                                                               std::span<const PeerPick>(picks));
      benchmark::DoNotOptimize(status);
    }
  }
}
void BM_SelectPartsExtract(benchmark::State& state) {
  SelectParts(state, false);
}
void BM_SelectPartsScore(benchmark::State& state) {
  SelectParts(state, true);
}
BENCHMARK(BM_SelectPartsExtract)->Name("BM_SelectParts/extract_66")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SelectPartsScore)->Name("BM_SelectParts/score_66")->Unit(benchmark::kMicrosecond);

void BM_SelectCached(benchmark::State& state) {
  static std::unique_ptr<Selector> selector;
  static std::vector<GemmProblem> problems;
  const Workload& workload = LoadWorkload();
  if (state.thread_index() == 0) {
    selector = OpenSelector(64);
    problems.clear();
    for (const GemmProblem& layer : workload.layers) {
      GemmProblem p = layer;
      p.n = 16;
      if (selector && selector->Select(p, workload.picks.at({p.m, p.k})).ok()) {
        problems.push_back(p);
      }
    }
  }
  std::vector<double> us;
  size_t i = static_cast<size_t>(state.thread_index());
  for (auto _ : state) {
    if (problems.empty()) {
      state.SkipWithError("no cached decisions");
      break;
    }
    const GemmProblem& problem = problems[i++ % problems.size()];
    const auto start = std::chrono::steady_clock::now();
    auto selection = selector->Select(problem);
    us.push_back(MicrosSince(start));
    benchmark::DoNotOptimize(selection);
  }
  state.SetItemsProcessed(state.iterations());
  ReportP50(state, us);
}

BENCHMARK(BM_SelectCold)->Name("BM_Select/cold")->Unit(benchmark::kMicrosecond)->Iterations(400);
BENCHMARK(BM_SelectColdTimes)
    ->Name("BM_Select/cold_with_times")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);
BENCHMARK(BM_SelectColdFull)
    ->Name("BM_Select/cold_full")
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(40);
BENCHMARK(BM_SelectCached)->Name("BM_Select/cached")->Unit(benchmark::kNanosecond);
BENCHMARK(BM_SelectCached)
    ->Name("BM_Select/cached")
    ->Unit(benchmark::kNanosecond)
    ->Threads(8)
    ->UseRealTime();

}  // namespace
}  // namespace kselect
