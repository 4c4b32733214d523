// Tree scoring at run time, one thread: the same model and the same feature rows through kselect's
// compiled scorer (CompiledTrees, what Model scores with), its reference evaluator (TreeEnsemble)
// and LightGBM's own predictor (LGBM_BoosterPredictForMat). Each reports ns_per_row_tree, CPU time
// per (row x tree), the figure docs/lab/compiled_scorer.md compares.
//
// The model is the shipped bf16 TN peer ranker (models/h200_cublaslt_default_bf16_tn,
// model_tflops.lgbm.gz). The rows are real: 100 valid candidates (evenly spaced by config key) of
// each of 20 problems (evenly spaced) of the bf16 TN holdout set, with the peer heuristic's
// recorded picks, built by the model's own extractor; all 2,000 are scored in one call. Each
// benchmark runs 5 times: on a shared host the "_min" line is the least disturbed figure.
//   kselect_bench_select --benchmark_filter=BM_Score
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#ifdef KSELECT_WITH_LIGHTGBM
#include <LightGBM/c_api.h>
#endif

#include "kselect/dataset.h"
#include "kselect/eval.h"
#include "kselect/model.h"
#include "model/compiled_trees.h"
#include "model/tree_ensemble.h"

namespace kselect {
namespace {

constexpr size_t kProblems = 20;
constexpr size_t kRowsPerProblem = 100;

struct ScoreInput {
  std::string text;          // the LightGBM model text
  std::vector<double> rows;  // row-major, the model's features wide
  size_t num_rows = 0;
  int num_features = 0;
};

StatusOr<ScoreInput> BuildScoreInput() {
  const std::string source = KSELECT_SOURCE_DIR;
  const std::string dir = source + "/models/h200_cublaslt_default_bf16_tn";
  ScoreInput in;
  KSELECT_ASSIGN_OR_RETURN(in.text, ReadMaybeGzipFile(dir + "/model_tflops.lgbm.gz"));
  KSELECT_ASSIGN_OR_RETURN(const Model model, Model::Load(dir));
  KSELECT_ASSIGN_OR_RETURN(
      const Dataset data,
      ReadDataset(source + "/data/h200/cublaslt_default_bf16_tn_holdout.parquet"));
  KSELECT_ASSIGN_OR_RETURN(const CandidateSet set, BuildCandidateSet(data, model.spec().provider));
  if (set.problems.size() < kProblems) {
    return FailedPreconditionError("the holdout set has fewer than 20 problems");
  }
  in.num_features = static_cast<int>(model.extractor().NumFeatures());
  for (size_t p = 0; p < kProblems; ++p) {
    const ProblemCandidates& problem = set.problems[p * set.problems.size() / kProblems];
    if (problem.candidates.size() < kRowsPerProblem) {
      return FailedPreconditionError(problem.problem_key + " has fewer than 100 candidates");
    }
    std::vector<KernelConfig> configs;
    for (size_t c = 0; c < kRowsPerProblem; ++c) {
      configs.push_back(problem.candidates[c * problem.candidates.size() / kRowsPerProblem].config);
    }
    const std::vector<PeerPick> picks = PeerPicksOf(problem);
    std::vector<double> x;
    KSELECT_RETURN_IF_ERROR(model.extractor().ExtractBatch(
        problem.problem, configs, &x,
        model.UsesPeerRanks() ? std::optional<std::span<const PeerPick>>(picks) : std::nullopt));
    in.rows.insert(in.rows.end(), x.begin(), x.end());
  }
  in.num_rows = kProblems * kRowsPerProblem;
  return in;
}

// Built once for every benchmark (reading the holdout set takes seconds).
const StatusOr<ScoreInput>& Input() {
  static const StatusOr<ScoreInput> input = BuildScoreInput();
  return input;
}

double ThreadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Runs `predict(rows, out)` per iteration over the input's rows; ns_per_row_tree is this thread's
// CPU time per (row x tree).
template <typename Predict>
void RunScore(benchmark::State& state, int trees, Predict predict) {
  const ScoreInput& in = *Input();
  std::vector<double> out(in.num_rows);
  const double start = ThreadCpuSeconds();
  for (auto _ : state) {
    if (!predict(in.rows.data(), out.data())) return;
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds = ThreadCpuSeconds() - start;
  state.counters["rows"] = static_cast<double>(in.num_rows);
  state.counters["trees"] = trees;
  state.counters["ns_per_row_tree"] =
      1e9 * seconds /
      (static_cast<double>(state.iterations()) * static_cast<double>(in.num_rows) * trees);
}

bool Ready(benchmark::State& state) {
  if (!Input().ok()) {
    state.SkipWithError(Input().status().ToString().c_str());
    return false;
  }
  return true;
}

StatusOr<TreeEnsemble> Trees() {
  return TreeEnsemble::FromLightGbmText(Input()->text, "model_tflops.lgbm.gz");
}

void ScoreCompiled(benchmark::State& state) {
  if (!Ready(state)) return;
  const StatusOr<TreeEnsemble> trees = Trees();
  if (!trees.ok()) return state.SkipWithError(trees.status().ToString().c_str());
  const StatusOr<CompiledTrees> compiled = CompiledTrees::Compile(*trees);
  if (!compiled.ok()) return state.SkipWithError(compiled.status().ToString().c_str());
  RunScore(state, compiled->num_trees(), [&](const double* rows, double* out) {
    compiled->Predict(rows, Input()->num_rows, out);
    return true;
  });
}

void ScoreTreeEnsemble(benchmark::State& state) {
  if (!Ready(state)) return;
  const StatusOr<TreeEnsemble> trees = Trees();
  if (!trees.ok()) return state.SkipWithError(trees.status().ToString().c_str());
  RunScore(state, trees->num_trees(), [&](const double* rows, double* out) {
    trees->Predict(rows, Input()->num_rows, out);
    return true;
  });
}

#ifdef KSELECT_WITH_LIGHTGBM
void ScoreLightGbm(benchmark::State& state) {
  if (!Ready(state)) return;
  BoosterHandle booster = nullptr;
  int trees = 0;
  if (LGBM_BoosterLoadModelFromString(Input()->text.c_str(), &trees, &booster) != 0) {
    return state.SkipWithError(LGBM_GetLastError());
  }
  const ScoreInput& in = *Input();
  RunScore(state, trees, [&](const double* rows, double* out) {
    int64_t len = 0;
    if (LGBM_BoosterPredictForMat(booster, rows, C_API_DTYPE_FLOAT64,
                                  static_cast<int32_t>(in.num_rows), in.num_features, 1,
                                  C_API_PREDICT_NORMAL, 0, -1, "num_threads=1", &len, out) != 0) {
      state.SkipWithError(LGBM_GetLastError());
      return false;
    }
    return true;
  });
  LGBM_BoosterFree(booster);
}
#endif

double Min(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

// Five runs each, reported with their mean, median, spread and minimum.
void Register(const char* name, void (*run)(benchmark::State&)) {
  benchmark::RegisterBenchmark(name, run)
      ->Unit(benchmark::kMicrosecond)
      ->Repetitions(5)
      ->ReportAggregatesOnly(true)
      ->ComputeStatistics("min", Min);
}

[[maybe_unused]] const bool kRegistered = [] {
  Register("BM_Score/compiled", ScoreCompiled);
  Register("BM_Score/tree_ensemble", ScoreTreeEnsemble);
#ifdef KSELECT_WITH_LIGHTGBM
  Register("BM_Score/lightgbm", ScoreLightGbm);
#endif
  return true;
}();

}  // namespace
}  // namespace kselect
