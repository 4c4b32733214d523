// Helpers shared by the tile engine's source files.
#pragma once

#include <cstdint>
#include <string>

#include "providers/tile/tile_engine.h"

namespace kselect::tile {

// The generated code's output kind: 0 bf16, 1 fp16, 2 fp32.
inline int OutKind(DataType t) {
  return t == DataType::kBF16 ? 0 : t == DataType::kF16 ? 1 : 2;
}

// The first part of GenerateSource's module: the spec's constexpr constants (kTileM, kInBf16, ...)
// and, for the warp-specialized family, the KSELECT_WGMMA_* macros. The kernel files
// (kernels/*.cuh) follow it; the nvcc test compiles them after this block too.
std::string GenerateConstants(const TileKernelSpec& spec);

// Dynamic shared memory of a multistage kernel: `stages` padded A and B tiles of 2-byte elements.
int64_t MultistageSharedBytes(const TileConfig& c);
// Static shared memory of a small-M kernel (the k-slice sums when B is row-major).
int64_t SmallMSharedBytes(const TileKernelSpec& spec);

// "13.0": the NVRTC this binary compiles with (part of every cubin cache key).
std::string NvrtcVersionText();

// The largest shared memory a block may use on sm_90 (227 KiB).
inline constexpr int64_t kMaxSharedBytesPerBlock = 232448;

// k tiles of `problem` (ceil(k / tile_k)), and per split-K slice (ceil of that / split_k).
int64_t KTiles(const TileConfig& c, const GemmProblem& problem);
int32_t KTilesPerSplit(const TileConfig& c, const GemmProblem& problem);
// Clusters of cluster_m x cluster_n output tiles covering one batch entry's m x n (a
// warp_specialized launch's work items per batch entry and split-K slice).
int64_t ClustersPerSlice(const TileConfig& c, const GemmProblem& problem);

}  // namespace kselect::tile
