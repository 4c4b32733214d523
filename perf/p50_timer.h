// Per-iteration timing for benchmarks that report a median (p50_us) beside Google Benchmark's
// mean: the selector's decisions have a long tail (a first call, a cache insert).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace kselect::bench {

// Microseconds since `start`.
inline double MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

// Sets the counter p50_us to the median of `us` (reordered); nothing when it is empty.
inline void ReportP50(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  state.counters["p50_us"] = us[us.size() / 2];
}

}  // namespace kselect::bench
