// Measurement: one timed (problem, kernel config) pair, with how it was measured and by which run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/hardware.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"

namespace kselect {

// How a figure was measured (METHOD.md: warm-up, events, median of batches, rotated buffers).
struct MeasurementMethod {
  std::string name;       // "kselect.bench", "ck_tile.streaming_log", ...
  std::string timer;      // "cuda_events", "hip_events", "unknown"
  std::string statistic;  // "median", "mean"
  int32_t warmup_iters = 0;
  int32_t repeats = 0;                // timed batches the statistic is taken over
  int32_t iters_per_repeat = 0;       // launches per timed batch
  int64_t rotating_buffer_bytes = 0;  // input bytes rotated through to defeat L2 (0 = none)
  int32_t sm_clock_min_mhz = 0;       // SM clocks seen during the timing (0 = not sampled)
  int32_t sm_clock_max_mhz = 0;
  double power_w = 0;         // mean board power NVML reported while timing (0 = not sampled)
  int32_t temperature_c = 0;  // highest GPU temperature seen while timing (0 = not sampled)

  bool operator==(const MeasurementMethod&) const = default;
};

// A collection run: who measured, where, and with what. Every row of a run shares it.
struct RunInfo {
  std::string run_id;
  std::string tool;        // "kselect 0.1.0 (git abc123)", or the AMD tool the log came from
  std::string started_at;  // ISO 8601 UTC
  HardwareProfile hardware;
  MeasurementMethod method;  // the run's default method; a measurement may override it
};

// Bounds no real GPU run can exceed; a figure beyond them is corrupt, not fast. The fastest
// GPU's dense peak is about 10 PFLOPS (10,000 TFLOPS) and its memory about 10 TB/s: 100x both.
// A single kernel timed for more than a day is no benchmark.
inline constexpr double kMaxPlausibleTflops = 1e6;
inline constexpr double kMaxPlausibleBandwidthGbS = 1e6;
inline constexpr double kMaxPlausibleLatencyMs = 24.0 * 3600 * 1000;

struct Measurement {
  std::string op_type;  // "gemm", "grouped_conv", "gemm_universal" (CK) ...
  Problem problem;
  KernelConfig config;
  std::string kernel_name;  // human-readable; for AMD rows, the name the config was parsed from
  double latency_ms = 0;
  double tflops = 0;
  double bandwidth_gb_s = 0;
  bool is_valid = false;
  std::string invalid_reason;  // why is_valid is false ("" when valid)
  double cv = 0;               // coefficient of variation over the repeats (0 = unknown)
  int32_t samples = 0;         // repeats behind the statistic
  int32_t duplicates_merged =
      1;                      // measurements of this (run, problem, config) merged into this one
  bool aborted = false;       // stopped early: clearly slower than the best so far
  double abort_bound_ms = 0;  // when aborted: the latency it was known to exceed
  std::optional<int32_t> peer_rank;  // rank in the peer heuristic's list (1 = its pick), if listed
  // Rank in the provider's second heuristic, where it has one (cuDNN: peer_rank is heuristic
  // mode A, peer_rank_b mode B); empty for providers with one heuristic.
  std::optional<int32_t> peer_rank_b;
  MeasurementMethod method;
  std::string run_id;
  std::string timestamp;  // ISO 8601 UTC
  // The GPU that measured this row when a run spans several (`kselect bench --devices 0,1`);
  // empty: the run's device.
  std::string device_uuid;
  // Drift control (`kselect bench --interleave-reference`): the latency of the problem's
  // reference config (its first valid one) in batches interleaved with this row's, 0 when none.
  // latency / reference_latency compares across runs where latency alone drifts with clocks.
  double reference_latency_ms = 0;
  bool is_drift_reference = false;  // this row times the reference itself

  // Sets is_valid/invalid_reason from the figures: a non-positive, NaN or infinite latency or
  // TFLOPS, a figure beyond the kMaxPlausible* bounds or a non-finite CV makes the row invalid
  // (never silently valid). Keeps an existing invalid verdict.
  void Validate();
};

// Why figures cannot be trusted (the rule Measurement::Validate applies), or "" when they can:
// latency and TFLOPS finite, positive and within the kMaxPlausible* bounds, bandwidth 0 (not
// reported) or likewise, CV finite and non-negative.
std::string ImplausibleFigures(double latency_ms, double tflops, double bandwidth_gb_s, double cv);

// Fills tflops and bandwidth from latency and the problem when they are missing (0).
void DeriveRates(Measurement& m);

// What counts as a repeat when measurements merge: the same (run, problem, config), or the same
// (problem, config) in any run (independent collections on one device kind, merged to average
// out run-to-run noise). Rows merged from several runs name them all in their run id, joined by
// kMergedRunSeparator.
enum class MergeScope { kWithinRun, kAcrossRuns };
inline constexpr std::string_view kMergedRunSeparator = " + ";

}  // namespace kselect
