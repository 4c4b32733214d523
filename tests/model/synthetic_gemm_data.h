// A generated dataset for testing the LEARNING MACHINERY ONLY. Its TFLOPS come from the explicit
// formula below, not from a GPU; it is never written as data or used to ship a model.
//
// For tile-engine configs (tm x tn x tk, 3 stages) on an H200-like profile (132 SMs):
//   blocks   = ceil(m/tm) * ceil(n/tn)              waves = ceil(blocks / 132)
//   wave_eff = blocks / (waves * 132)               fill_d = d / (t_d * ceil(d/t_d)), d in {m, n}
//   k_eff    = k / (k + 6 * tk)                     (pipeline fill and drain cost, 3 stages)
//   tk_eff   = tk / (tk + 16)                       (deeper k steps amortise barriers)
//   tile_eff = tm*tn / (tm*tn + 64*(tm + tn))       (operand reuse grows with area / perimeter)
//   TFLOPS   = 700 * wave_eff * fill_m * fill_n * k_eff * tk_eff * tile_eff * layout_factor
// with layout_factor 1 for rcr and 0.9 for rrr. The best config thus depends on the shape (small
// shapes favour small tiles that fill the SMs; large ones favour large tiles).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "kselect/dataset.h"

namespace kselect::testing_util {

inline HardwareProfile SyntheticH200() {
  HardwareProfile h;
  h.device_name = "NVIDIA H200";
  h.device_kind = "nvidia-h200";
  h.arch = "sm_90";
  h.cc_major = 9;
  h.sm_count = 132;
  h.sm_clock_mhz = 1980;
  h.l2_bytes = 50 << 20;
  h.smem_per_sm_bytes = 233472;
  h.smem_per_block_optin_bytes = 232448;
  h.max_threads_per_sm = 2048;
  h.peak_mem_bandwidth_gb_s = 4800;
  return h;
}

inline std::vector<TileConfig> SyntheticTileConfigs() {
  std::vector<TileConfig> configs;
  for (int tm : {64, 128, 256}) {
    for (int tn : {64, 128, 256}) {
      for (int tk : {32, 64}) {
        TileConfig c;
        c.tile_m = tm;
        c.tile_n = tn;
        c.tile_k = tk;
        c.stages = 3;
        configs.push_back(c);
      }
    }
  }
  return configs;
}

inline double SyntheticTflops(const GemmProblem& p, const TileConfig& c) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const double blocks = static_cast<double>(ceil_div(p.m, c.tile_m) * ceil_div(p.n, c.tile_n));
  const double waves = std::ceil(blocks / 132.0);
  const double wave_eff = blocks / (waves * 132.0);
  const double fill_m = static_cast<double>(p.m) / (c.tile_m * ceil_div(p.m, c.tile_m));
  const double fill_n = static_cast<double>(p.n) / (c.tile_n * ceil_div(p.n, c.tile_n));
  const double k_eff = p.k / (p.k + 6.0 * c.tile_k);
  const double tk_eff = c.tile_k / (c.tile_k + 16.0);
  const double area = static_cast<double>(c.tile_m) * c.tile_n;
  const double tile_eff = area / (area + 64.0 * (c.tile_m + c.tile_n));
  const double layout = p.layout.b == MatrixOrder::kRowMajor ? 0.9 : 1.0;
  return 700.0 * wave_eff * fill_m * fill_n * k_eff * tk_eff * tile_eff * layout;
}

// `shapes` distinct random shapes (seeded) not in `used` (which receives them), each measured for
// every config in rcr and, for every third shape, also rrr. Rows carry a peer_rank: the "peer"
// ranks configs by tile area, largest first.
inline Dataset SyntheticDataset(int shapes, uint64_t seed,
                                std::set<std::tuple<int64_t, int64_t, int64_t>>* used = nullptr) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> local;
  if (used == nullptr) used = &local;
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> dims = {16,   48,   96,   128,  200,  384,  512, 777,
                                     1000, 1536, 2048, 3000, 4096, 6144, 8192};
  const std::vector<int64_t> ks = {256, 1024, 4096, 8192};
  std::uniform_int_distribution<size_t> pick_dim(0, dims.size() - 1), pick_k(0, ks.size() - 1);
  RunInfo run;
  run.run_id = "synthetic-" + std::to_string(seed);
  run.tool = "synthetic formula (tests only)";
  run.hardware = SyntheticH200();
  Dataset dataset;
  const std::vector<TileConfig> configs = SyntheticTileConfigs();
  for (int s = 0; s < shapes; ++s) {
    GemmProblem p;
    p.m = dims[pick_dim(rng)];
    p.n = dims[pick_dim(rng)];
    p.k = ks[pick_k(rng)];
    if (!used->emplace(p.m, p.n, p.k).second) {
      --s;
      continue;
    }
    std::vector<GemmLayout> layouts = {GemmLayout{}};
    if (s % 3 == 0) layouts.push_back(GemmLayout{MatrixOrder::kRowMajor, MatrixOrder::kRowMajor});
    for (const GemmLayout& layout : layouts) {
      p.layout = layout;
      for (size_t i = 0; i < configs.size(); ++i) {
        Measurement m;
        m.op_type = "gemm";
        m.problem = p;
        m.config = configs[i];
        m.tflops = SyntheticTflops(p, configs[i]);
        m.latency_ms = p.Flops() / (m.tflops * 1e12) * 1e3;
        m.bandwidth_gb_s = p.MinBytes() / (m.latency_ms * 1e-3) / 1e9;
        m.is_valid = true;
        m.peer_rank = static_cast<int32_t>(configs.size() - i);  // largest tiles last in list
        dataset.rows.push_back(RowFromMeasurement(m, run));
      }
    }
  }
  return dataset;
}

}  // namespace kselect::testing_util
