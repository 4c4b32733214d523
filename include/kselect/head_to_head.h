// The head to head (kselect tile bench): the tile engine against cuBLASLt on one timing module.
// Per problem: cuBLASLt's heuristic top N (and optionally its whole enumerated space) and the tile
// rule set's configs are screened with the graph timer on operands rotated past L2; the fastest
// `finalists` of each provider (tile finalists verified against the reference first) and
// cuBLASLt's rank-1 pick are then timed interleaved, so drift between runs cannot favour either.
// Part of the benchmarking harness (src/bench/head_to_head.cpp); its offline scoring of a
// cross-provider decision is eval.h's EvaluateCrossProvider.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kselect/hardware.h"
#include "kselect/problem.h"
#include "kselect/provider.h"
#include "kselect/selector.h"
#include "kselect/status.h"
#include "kselect/timing.h"

namespace kselect {

struct HeadToHeadOptions {
  ProviderOptions provider_options;  // device, workspace limit, tile rule set
  int cublaslt_picks = 16;           // cuBLASLt heuristic's top N screened
  bool cublaslt_space = false;       // also screen cuBLASLt's whole enumerated space (slow)
  int finalists = 3;                 // per provider, timed interleaved
  int rounds = 15;
  double screen_batch_ms = 0.2;  // GPU time per graph launch while screening
  double batch_ms = 0.5;         // and in the interleaved rounds
  int64_t rotate_bytes = 0;      // operand bytes rotated through (0 = 2 x L2)
  // A cross-provider model directory (cross_provider.h): its decision joins the finalists and is
  // reported as HeadToHead::cross_pick. "" = none.
  std::string cross_model;
  // The cross-provider selector's SelectorOptions::time_top_k: with >= 2 its decision is what
  // kselect::Gemm runs after timing the candidates of both providers at the problem's first use
  // (on the problem's first operand set), the same path an application takes.
  int cross_time_top_k = 0;
  // The cross-provider selector's SelectorOptions::first_use_vendor_margin.
  double cross_vendor_margin = SelectorOptions{}.first_use_vendor_margin;
  // The cross-provider selector's SelectorOptions::first_use_cold_l2 (on by default, as there).
  bool cross_first_use_cold_l2 = true;
  // ... and its SelectorOptions::first_use_graphs (on by default, as there).
  bool cross_first_use_graphs = true;
  // Time only cuBLASLt's pick and the cross-provider decision: no screening, no other finalists
  // (a fast live check of a cross-provider model over many shapes).
  bool cross_only = false;
  // Keep every screened config's time in HeadToHead::screened (an offline evaluation set for
  // cross-provider selection: both providers timed in one process, minutes of drift excluded).
  bool keep_screened = false;
};

// One config's screening time (graph timer, one measurement of 3 launches' median).
struct ScreenedTime {
  KernelConfig config;
  double ms = 0;
};

struct HeadToHead {
  GemmProblem problem;
  int64_t tile_screened = 0, cublaslt_screened = 0;
  // Speedups are over cuBLASLt's rank-1 pick (median of per-round ratios).
  InterleavedFigure cublaslt_pick;
  InterleavedFigure cublaslt_best;             // fastest cuBLASLt finalist (may be the pick)
  std::optional<InterleavedFigure> tile_best;  // fastest verified tile finalist
  // Median over rounds of cublaslt_best's ms / tile_best's ms (> 1: the tile kernel is faster).
  double tile_over_cublaslt_best = 0;
  double peak_gb_s = 0;  // the device's HBM peak, for bandwidth fractions
  std::string note;      // finalists that failed verification, configs that failed to time
  // With HeadToHeadOptions::keep_screened: every config screened, both providers, fastest first.
  std::vector<ScreenedTime> screened;
  // With HeadToHeadOptions::cross_model: the cross-provider decision, timed interleaved.
  std::optional<InterleavedFigure> cross_pick;
  double cross_predicted_gain = 0;
  int cross_timed_configs = 0;
  // With cross_time_top_k >= 2: whether cuBLASLt's pick was timed beside the candidates and
  // stayed the choice (the vendor guard); unset when it was not timed.
  std::optional<bool>
      cross_vendor_kept;  // configs the decision timed at first use (cross_time_top_k)
  bool cross_first_use_cold_l2 = false;  // ... with the read operands rotated past 2 x L2
  bool cross_first_use_graphs = false;   // ... with each batch a CUDA graph
  // Every finalist as timed interleaved (the pick first, then cuBLASLt's, the tile engine's and
  // the cross-provider decision), so configs can be compared with each other in one run.
  std::vector<InterleavedFigure> finalists;
};

class HeadToHeadRunner {
 public:
  // kUnavailable without a GPU.
  static StatusOr<std::unique_ptr<HeadToHeadRunner>> Create(const HeadToHeadOptions& options);
  virtual ~HeadToHeadRunner() = default;
  virtual StatusOr<HeadToHead> Run(const GemmProblem& problem) = 0;
  virtual const HardwareProfile& hardware() const = 0;
};

// Bytes a GEMM must move at least (A and B read, C written; C read too when beta != 0) over
// `ms`, as a fraction of `peak_gb_s`.
double HbmFraction(const GemmProblem& problem, double ms, double peak_gb_s);

// {"format": "kselect.head_to_head", "format_version": 1, device, versions, run_id, "results":
// [{problem, cublaslt_pick, cublaslt_best, tile_best: {config, median_ms, tflops, hbm_fraction,
// speedup_over_pick}, tile_over_cublaslt_best, finalists: [...]}], "summary": {...}}.
std::string HeadToHeadJson(std::span<const HeadToHead> results, const HardwareProfile& hardware,
                           const std::string& device_kind, const std::string& run_id);

}  // namespace kselect
