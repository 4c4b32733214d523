// Source generation: a spec becomes a block of constexpr constants followed by the kernel text of
// its family, src/providers/tile/kernels/*.cuh, embedded at build time (embed_kernels.cmake). The
// kernel text includes no header (conversions and tensor-core instructions are inline PTX), which
// keeps an NVRTC compile well under a second; see docs/tile_engine.md.
#include <sstream>
#include <string>

#include "providers/tile/kernel_sources.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

namespace kselect::tile {
namespace {

const char* Bool(bool b) {
  return b ? "true" : "false";
}

// The KSELECT_WGMMA_* macros warp_specialized.cuh reads: inline asm names every register it
// uses, and wgmma m64nNk16 has N/2 accumulator registers, so they are written out for N here.
std::string WgmmaMacros(int n) {
  const int regs = n / 2;
  std::ostringstream s;
  s << "// wgmma m64n" << n << "k16 operands for warp_specialized.cuh: " << regs
    << " accumulator registers.\n";
  s << "#define KSELECT_WGMMA_SHAPE \"m64n" << n << "k16\"\n";
  s << "#define KSELECT_WGMMA_D \"{";
  for (int i = 0; i < regs; ++i) s << (i ? ", " : "") << "%" << i;
  s << "}\"\n";
  s << "#define KSELECT_WGMMA_DESCRIPTORS \"%" << regs << ", %" << regs + 1 << "\"\n";
  s << "#define KSELECT_WGMMA_TRANSPOSES \"%" << regs + 2 << ", %" << regs + 3 << "\"\n";
  s << "#define KSELECT_WGMMA_D_OPERANDS(d) ";
  for (int i = 0; i < regs; ++i) s << (i ? ", " : "") << "\"+f\"(d[" << i << "])";
  s << "\n";
  return s.str();
}

// One embedded file, preceded by a #line directive: NVRTC's messages and -lineinfo then point at
// the .cuh file and line, not at the generated module.
void AppendKernelSource(std::ostringstream& s, const KernelSource& source) {
  s << "#line 1 \"" << source.path << "\"\n" << source.text;
}

// The kernel text of a family.
const KernelSource& FamilySource(TilePipeline pipeline) {
  switch (pipeline) {
    case TilePipeline::kMultistage:
      return kMultistageSource;
    case TilePipeline::kSmallM:
      return kSmallMSource;
    case TilePipeline::kWarpSpecialized:
      return kWarpSpecializedSource;
    case TilePipeline::kDecode:
      return kDecodeSource;
  }
  return kMultistageSource;  // not reached: every pipeline is listed above
}

}  // namespace

std::string GenerateConstants(const TileKernelSpec& spec) {
  const TileConfig& c = spec.config;
  std::ostringstream s;
  s << "// kselect tile engine, generated: " << SpecKey(spec) << "\n";
  s << "constexpr int kTileM = " << c.tile_m << ", kTileN = " << c.tile_n
    << ", kTileK = " << c.tile_k << ";\n";
  s << "constexpr int kWarpsM = " << c.warps_m << ", kWarpsN = " << c.warps_n
    << ", kWarpsK = " << c.warps_k << ";\n";
  s << "constexpr int kStages = " << c.stages << ";\n";
  s << "constexpr int kSplitK = " << c.split_k << ";\n";
  s << "constexpr int kSwizzle = " << c.swizzle << ";\n";
  s << "constexpr bool kMaskM = " << Bool(c.mask_m) << ", kMaskN = " << Bool(c.mask_n)
    << ", kMaskK = " << Bool(c.mask_k) << ";\n";
  s << "constexpr bool kInBf16 = " << Bool(spec.input == DataType::kBF16) << ";\n";
  s << "constexpr int kOutKind = " << OutKind(spec.output) << ";  // 0 bf16, 1 fp16, 2 fp32\n";
  s << "constexpr bool kARow = " << Bool(spec.layout.a == MatrixOrder::kRowMajor)
    << ";  // A m x k, k contiguous\n";
  s << "constexpr bool kBCol = " << Bool(spec.layout.b == MatrixOrder::kColMajor)
    << ";  // B k x n, k contiguous\n";
  s << "constexpr bool kCRow = " << Bool(spec.layout.c == MatrixOrder::kRowMajor) << ";\n";
  s << "constexpr int kAlignA = " << spec.align_a << ", kAlignB = " << spec.align_b
    << ", kAlignC = " << spec.align_c << ";\n";
  if (c.pipeline == TilePipeline::kWarpSpecialized) {
    s << "constexpr int kClusterM = " << c.cluster_m << ", kClusterN = " << c.cluster_n << ";\n";
    s << "constexpr bool kPersistent = " << Bool(c.scheduler != TileScheduler::kDataParallel)
      << ";\n";
    s << "constexpr bool kPingPong = " << Bool(c.scheduler == TileScheduler::kPingPong) << ";\n";
    s << "constexpr bool kStreamK = " << Bool(c.scheduler == TileScheduler::kStreamK) << ";\n";
    s << "constexpr bool kEpilogueTransposed = " << Bool(c.epilogue == TileEpilogue::kTransposed)
      << ";\n";
    s << WgmmaMacros(c.tile_n);
  }
  return s.str();
}

std::string GenerateSource(const TileKernelSpec& spec) {
  std::ostringstream s;
  s << GenerateConstants(spec);
  AppendKernelSource(s, kPreludeSource);
  AppendKernelSource(s, FamilySource(spec.config.pipeline));
  return s.str();
}

}  // namespace kselect::tile
