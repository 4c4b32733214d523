// The tile engine's device checks behind `kselect tile verify` and `kselect tile time`, built on
// the verify module: every config of a rule set under each build variant against the GEMM
// reference, and TFLOP/s per config beside cuBLASLt's first heuristic pick (timed through the
// cuBLASLt provider). Results arrive through callbacks as they are made; nothing is printed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/status.h"
#include "providers/tile/tile_engine.h"
#include "kselect/verify.h"

namespace kselect::tile {

// One (spec, shape) check.
struct TileCheck {
  GemmProblem problem;
  std::string spec_key;
  StatusOr<verify::CheckResult> result = verify::CheckResult{};  // error: the launch failed
};

// The checks of one build variant.
struct TileVariantSummary {
  TileBuildVariant variant;
  size_t specs = 0;  // distinct (config, shape) kernels compiled
  int checks = 0;
  int failures = 0;        // failed checks, plus specs that did not compile or load
  int skipped = 0;         // (config, shape) pairs the config cannot run
  double worst_error = 0;  // largest relative rms error of a check with finite output
  verify::Tolerance tolerance;
};

struct TileVerifyCallbacks {
  // A spec did not build: `stage` is "compile" or "load".
  std::function<void(std::string_view stage, const Status& status)> on_build_failure;
  std::function<void(const TileCheck& check)> on_check;
  std::function<void(const TileVariantSummary& summary)> on_variant;
};

struct TileVerifySummary {
  int checks = 0, failures = 0, skipped = 0;
  bool stopped = false;  // fail_fast ended the sweep at the first failed check
};

// Checks every config of `rules` under each of its variants on verify::GemmCheckProblems (C
// poisoned, random non-zero inputs, the dtype's tolerance). An error Status when there is no GPU,
// the reference cannot be built, or a launch fails (a fault can leave the CUDA context unusable;
// on_check has reported that check first).
StatusOr<TileVerifySummary> VerifyTileRuleSet(const TileRuleSet& rules,
                                              const CompilerOptions& compiler, bool fail_fast,
                                              const TileVerifyCallbacks& callbacks);

// One config's speed.
struct TileTiming {
  std::string spec_key;
  double tflops = 0;
};

// The timings of one build variant on the timed shape.
struct TileTimeReport {
  GemmProblem problem;
  std::vector<TileTiming> configs;  // fastest first
  // cuBLASLt's first heuristic pick on the same problem (a row-major-C problem is timed as its
  // column-major transpose, TransposedGemm), or why it could not be timed.
  StatusOr<double> cublaslt_tflops = 0.0;
};

// Times every config of `rules` (per variant) on m x n x k: the median of `repeats` event-timed
// launches after 3 warm-ups, random non-zero inputs. Configs that do not compile or load are left
// out; an error Status when there is no GPU or a launch fails.
Status TimeTileRuleSet(const TileRuleSet& rules, const CompilerOptions& compiler, int64_t m,
                       int64_t n, int64_t k, int repeats,
                       const std::function<void(const TileTimeReport& report)>& on_variant);

}  // namespace kselect::tile
