// The tile engine's kernel texts, src/providers/tile/kernels/*.cuh, embedded into the binary at
// build time: embed_kernels.cmake writes their bytes into generated/tile_kernel_sources.cpp.
#pragma once

#include <span>

namespace kselect::tile {

// One embedded .cuh file.
struct KernelSource {
  const char* path;  // from the source root: "src/providers/tile/kernels/<name>.cuh"
  const char* text;  // the file's bytes
};

// The prelude every module starts with, then one file per family (TilePipeline).
extern const KernelSource kPreludeSource;
extern const KernelSource kMultistageSource;
extern const KernelSource kSmallMSource;
extern const KernelSource kWarpSpecializedSource;
extern const KernelSource kDecodeSource;

// Every embedded file, in the order sources.cmake lists them.
std::span<const KernelSource* const> KernelSources();

}  // namespace kselect::tile
