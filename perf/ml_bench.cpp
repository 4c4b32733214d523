// Throughput of the ML core: feature extraction (configs/s, one at a time and batched per
// problem), LightGBM training time on generated data, and the run-time cost of ranking one
// problem's candidates with a shipped model (features + every tree). The generated TFLOPS follow
// the test formula of tests/model/synthetic_gemm_data.h: for timing only, never data or a model.
//   kselect_bench_ml --benchmark_filter=Extract          extraction only (seconds)
//   kselect_bench_ml --benchmark_filter='Train/1000000'  the 1 M-row training target
//   kselect_bench_ml --benchmark_filter=Rank   ranking latency per problem with the shipped
//                                              model (KSELECT_BENCH_MODEL=DIR picks another)
// Tree scoring alone (time per row x tree, kselect's scorers against LightGBM's predictor):
// kselect_bench_select --benchmark_filter=BM_Score.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <benchmark/benchmark.h>

#include "kselect/train.h"
#include "model/synthetic_gemm_data.h"

namespace kselect {
namespace {

std::vector<KernelConfig> BenchTileConfigs() {
  std::vector<KernelConfig> out;
  for (const TileConfig& base : testing_util::SyntheticTileConfigs()) {
    for (int stages : {3, 4}) {
      for (int split_k : {1, 2}) {
        TileConfig c = base;
        c.stages = stages;
        c.split_k = split_k;
        out.push_back(c);
      }
    }
  }
  return out;  // 72 configs
}

std::vector<KernelConfig> BenchCublasLtConfigs(int count) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pick(0, 3);
  const int tiles[] = {64, 128, 192, 256};
  std::vector<KernelConfig> out;
  for (int i = 0; i < count; ++i) {
    CublasLtConfig c;
    c.algo_id = 66 + pick(rng);
    c.tile_id = 20 + i % 40;
    c.tile_m = tiles[pick(rng)];
    c.tile_n = tiles[pick(rng)];
    c.stage_k = 64;
    c.stages = 3 + pick(rng);
    c.split_k = 1 + pick(rng);
    c.cluster_m = 1 + pick(rng) % 2;
    c.cluster_n = 1;
    c.cluster_k = 1;
    out.push_back(c);
  }
  return out;
}

HardwareConstants BenchHardware() {
  return HardwareConstantsFor(testing_util::SyntheticH200()).value();
}

GemmProblem BenchProblem() {
  GemmProblem p;
  p.m = 3000;
  p.n = 7168;
  p.k = 2048;
  return p;
}

void BM_ExtractSingle(benchmark::State& state) {
  const auto e =
      GemmFeatureExtractor::Create(GemmFeatureSpec(Provider::kCublasLt, BenchHardware())).value();
  const std::vector<KernelConfig> configs = BenchCublasLtConfigs(512);
  const GemmProblem p = BenchProblem();
  std::vector<double> row;
  for (auto _ : state) {
    for (const KernelConfig& c : configs) {
      benchmark::DoNotOptimize(e.Extract(p, c, &row).ok());
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(configs.size()));
  state.counters["features"] = static_cast<double>(e.NumFeatures());
}
BENCHMARK(BM_ExtractSingle);

void BM_ExtractBatch(benchmark::State& state) {
  const auto e =
      GemmFeatureExtractor::Create(GemmFeatureSpec(Provider::kCublasLt, BenchHardware())).value();
  const std::vector<KernelConfig> configs = BenchCublasLtConfigs(512);
  const GemmProblem p = BenchProblem();
  std::vector<double> matrix;
  for (auto _ : state) {
    benchmark::DoNotOptimize(e.ExtractBatch(p, configs, &matrix).ok());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(configs.size()));
}
BENCHMARK(BM_ExtractBatch);

// `rows` rows: random shapes (log-uniform m, n in [1, 16384], k in [64, 16384]) x 72 configs.
CandidateSet BenchCandidates(int64_t rows) {
  CandidateSet set;
  set.provider = Provider::kTile;
  set.hardware = BenchHardware();
  set.fingerprint = "bench";
  const std::vector<KernelConfig> configs = BenchTileConfigs();
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> log_mn(0, std::log2(16384.0)), log_k(6, 14);
  for (int64_t done = 0; done < rows;) {
    ProblemCandidates pc;
    GemmProblem problem;
    problem.m = static_cast<int64_t>(std::exp2(log_mn(rng)));
    problem.n = static_cast<int64_t>(std::exp2(log_mn(rng)));
    problem.k = static_cast<int64_t>(std::exp2(log_k(rng)));
    pc.problem = problem;
    pc.problem_key = problem.ToString() + " #" + std::to_string(set.problems.size());
    pc.shape_key = pc.problem_key;
    for (const KernelConfig& c : configs) {
      Candidate cand;
      cand.config = c;
      cand.config_key = ConfigKey(c);
      const TileConfig& t = std::get<TileConfig>(c);
      cand.tflops = testing_util::SyntheticTflops(problem, t) * (t.split_k == 2 ? 0.9 : 1.0);
      cand.latency_ms = problem.Flops() / (cand.tflops * 1e12) * 1e3;
      cand.bandwidth_gb_s = 1;
      pc.candidates.push_back(std::move(cand));
    }
    done += static_cast<int64_t>(configs.size());
    set.rows_used = done;
    set.problems.push_back(std::move(pc));
  }
  return set;
}

// One `kselect train --folds 0 --targets tflops` equivalent: an inner-split early-stopped fit
// to pick the tree count, then the final fit on every row.
void BM_Train(benchmark::State& state) {
  const CandidateSet data = BenchCandidates(state.range(0));
  TrainOptions options;
  options.folds = 0;
  options.targets = {Target::kTflops};
  options.num_threads = 2;
  options.max_rounds = 200;
  options.early_stopping_rounds = 20;
  const std::string out =
      (std::filesystem::temp_directory_path() / "kselect_bench_ml_model").string();
  int trees = 0;
  for (auto _ : state) {
    const auto result = TrainModelOnCandidates(data, options, out);
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      break;
    }
    trees = result->rounds.front().second;
  }
  std::filesystem::remove_all(out);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(data.NumCandidates()));
  state.counters["rows"] = static_cast<double>(data.NumCandidates());
  state.counters["trees"] = trees;
}
BENCHMARK(BM_Train)
    ->Arg(100000)
    ->Arg(1000000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// Ranking one problem's candidates at run time with a shipped model: feature extraction and
// prediction by every tree, one thread, as `kselect predict` and a selector do. The candidates
// are generated cuBLASLt configs (tree paths, not the configs, set the cost); 1,700 is the
// median catalogue size of the bf16 TN data.
void BM_RankShippedModel(benchmark::State& state) {
  const char* env = std::getenv("KSELECT_BENCH_MODEL");
  const std::string dir =
      env ? env : std::string(KSELECT_SOURCE_DIR) + "/models/h200_cublaslt_default_bf16_tn";
  auto model = Model::Load(dir);
  if (!model.ok()) {
    state.SkipWithError(("cannot load " + dir + ": " + model.status().ToString()).c_str());
    return;
  }
  const std::vector<KernelConfig> configs = BenchCublasLtConfigs(static_cast<int>(state.range(0)));
  std::vector<PeerPick> picks;  // the first 8 candidates play cuBLASLt's top 8
  for (size_t i = 0; i < configs.size() && i < 8; ++i) {
    picks.push_back({configs[i], static_cast<int32_t>(i + 1)});
  }
  const auto peer =
      model->UsesPeerRanks() ? std::optional<std::span<const PeerPick>>(picks) : std::nullopt;
  GemmProblem p = BenchProblem();
  p.m = 16;  // a decode-size problem: the case where selection pays most
  for (auto _ : state) {
    auto scores = model->Predict(Target::kTflops, p, configs, peer);
    if (!scores.ok()) {
      state.SkipWithError(scores.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(scores->data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["candidates"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_RankShippedModel)->Arg(64)->Arg(512)->Arg(1700)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kselect

BENCHMARK_MAIN();
