// Figures for the CPU-side data path (records/s): kselect JSONL parsing, duplicate merging and,
// with Arrow, the Parquet round trip. Run: build/bin/kselect_bench_dataset
#include <benchmark/benchmark.h>

#include <filesystem>

#include "core/json_codec.h"
#include "kselect/dataset.h"
#include "kselect/hardware.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

// A JSONL stream of `records` measurements over distinct shapes and cuBLASLt configs.
std::string SyntheticJsonl(int64_t records) {
  HardwareProfile hw;
  hw.device_name = "NVIDIA H200";
  hw.device_kind = "nvidia-h200";
  hw.arch = "sm_90";
  nlohmann::json run = {{"type", "run"},
                        {"format", "kselect.bench.jsonl"},
                        {"format_version", 1},
                        {"run_id", "bench"},
                        {"hardware", nlohmann::json::parse(HardwareProfileToJson(hw, -1))}};
  std::string out = run.dump() + "\n";
  for (int64_t i = 0; i < records; ++i) {
    GemmProblem p{.m = 1 + i % 97, .n = 4096, .k = 128 * (1 + i % 31)};
    CublasLtConfig c{.algo_id = 66,
                     .tile_id = static_cast<int32_t>(i % 40),
                     .stages_id = static_cast<int32_t>(i % 7)};
    nlohmann::json m = {{"type", "measurement"},
                        {"run_id", "bench"},
                        {"problem", json_codec::GemmProblemToJson(p)},
                        {"config", json_codec::KernelConfigToJson(c)},
                        {"latency_ms", 0.01 + 1e-6 * static_cast<double>(i)},
                        {"cv", 0.01},
                        {"samples", 7}};
    out += m.dump() + "\n";
  }
  return out;
}

void BM_ParseKselectJsonl(benchmark::State& state) {
  const std::string text = SyntheticJsonl(state.range(0));
  for (auto _ : state) {
    auto result = ParseKselectJsonl(text, "bench.jsonl", {});
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseKselectJsonl)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_MergeDuplicates(benchmark::State& state) {
  auto parsed = ParseKselectJsonl(SyntheticJsonl(state.range(0)), "bench.jsonl", {});
  for (auto _ : state) {
    auto merged = MergeDuplicateMeasurements(parsed->measurements);
    benchmark::DoNotOptimize(merged);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_MergeDuplicates)->Arg(10000)->Unit(benchmark::kMillisecond);

#ifdef KSELECT_WITH_ARROW
Dataset SyntheticDataset(int64_t records) {
  auto parsed = ParseKselectJsonl(SyntheticJsonl(records), "bench.jsonl", {});
  Dataset d;
  for (const Measurement& m : parsed->measurements) {
    d.rows.push_back(RowFromMeasurement(m, parsed->runs.front()));
  }
  return d;
}

void BM_WriteParquet(benchmark::State& state) {
  const Dataset d = SyntheticDataset(state.range(0));
  const std::string path =
      (std::filesystem::temp_directory_path() / "kselect_bench_write.parquet").string();
  for (auto _ : state) {
    if (!WriteDataset(d, path).ok()) state.SkipWithError("write failed");
  }
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_WriteParquet)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_ReadParquet(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "kselect_bench_read.parquet").string();
  if (!WriteDataset(SyntheticDataset(state.range(0)), path).ok()) {
    state.SkipWithError("write failed");
    return;
  }
  for (auto _ : state) {
    auto d = ReadDataset(path);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ReadParquet)->Arg(100000)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace kselect

BENCHMARK_MAIN();
