// The GPU side of `kselect tile`: correctness against a reference, and timing beside cuBLASLt.
#pragma once

#include <string>

#include "kselect/tile_engine.h"

namespace kselect::cli {

// Runs every config of `rules` under each of its variants' dtypes and layouts over a fixed shape
// list (tile_device.cpp: M = 1, odd sizes, K not a multiple of tile_k, batch, alpha/beta) and
// compares with a naive fp32 reference kernel; prints one summary line per variant. Returns an
// exit code (kExitFailure on any mismatch, or when no GPU is present).
int RunTileVerify(const tile::TileRuleSet& rules, const tile::CompilerOptions& compiler,
                  bool fail_fast, const std::string& log_path);

// Times every config of `rules` (per variant) on `shape` ("m,n,k") and cuBLASLt's first heuristic
// pick for the same problem; prints TFLOP/s (median of `repeats` event-timed launches).
int RunTileTime(const tile::TileRuleSet& rules, const tile::CompilerOptions& compiler,
                const std::string& shape, int repeats);

}  // namespace kselect::cli
