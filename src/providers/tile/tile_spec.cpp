// Specs, validity rules and can-implement checks of the tile engine.
#include <algorithm>
#include <limits>
#include <string>

#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

namespace kselect::tile {
namespace {

std::string Str(int64_t v) {
  return std::to_string(v);
}

bool IsMultistage(const TileKernelSpec& s) {
  return s.config.pipeline == TilePipeline::kMultistage;
}
bool IsSmallM(const TileKernelSpec& s) {
  return s.config.pipeline == TilePipeline::kSmallM;
}
bool IsWarpSpecialized(const TileKernelSpec& s) {
  return s.config.pipeline == TilePipeline::kWarpSpecialized;
}
bool IsDecode(const TileKernelSpec& s) {
  return s.config.pipeline == TilePipeline::kDecode;
}

// The widest of 8, 4, 2, 1 elements that divides `extent`.
int32_t WidestAlignment(int64_t extent) {
  for (int32_t a : {8, 4, 2}) {
    if (extent % a == 0) return a;
  }
  return 1;
}

bool IsAlignment(int32_t a) {
  return a == 1 || a == 2 || a == 4 || a == 8;
}

// Contiguous extents of the packed operands.
int64_t ExtentA(const GemmProblem& p) {
  return p.layout.a == MatrixOrder::kRowMajor ? p.k : p.m;
}
int64_t ExtentB(const GemmProblem& p) {
  return p.layout.b == MatrixOrder::kColMajor ? p.k : p.n;
}
int64_t ExtentC(const GemmProblem& p) {
  return p.layout.c == MatrixOrder::kRowMajor ? p.n : p.m;
}

const std::vector<ValidityRule>& Rules() {
  static const std::vector<ValidityRule> rules = {
      {"operand_dtypes",
       "A and B are bf16 or fp16 (one type), C is bf16, fp16 or fp32: the generated code has "
       "conversions and mma.sync forms for these only",
       [](const TileKernelSpec& s) -> std::string {
         if (s.input != DataType::kBF16 && s.input != DataType::kF16) {
           return "input " + std::string(DataTypeName(s.input)) + " is not bf16 or fp16";
         }
         if (s.output != DataType::kBF16 && s.output != DataType::kF16 &&
             s.output != DataType::kF32) {
           return "output " + std::string(DataTypeName(s.output)) + " is not bf16, fp16 or fp32";
         }
         return {};
       }},
      {"scheduler_data_parallel",
       "one block per output tile, except warp_specialized, which also has the persistent "
       "scheduler (a GPU-filling grid whose clusters stride over the tiles), pingpong and "
       "streamk",
       [](const TileKernelSpec& s) -> std::string {
         return s.config.scheduler == TileScheduler::kDataParallel || IsWarpSpecialized(s)
                    ? std::string()
                    : "scheduler " + std::string(TileSchedulerName(s.config.scheduler)) +
                          " is not generated for " +
                          std::string(TilePipelineName(s.config.pipeline));
       }},
      {"pingpong_shape",
       "pingpong: warp_specialized with two consumer warpgroups that each compute a whole tile "
       "(tile_m / 64 wgmma row blocks), so its tile_m / 64 * tile_n / 2 accumulators per thread "
       "are at most 128",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (c.scheduler != TileScheduler::kPingPong || !IsWarpSpecialized(s)) return {};
         if (c.warps_m != 2) return "pingpong needs warps_m 2, not " + Str(c.warps_m);
         const int64_t accumulators = static_cast<int64_t>(c.tile_m / 64) * (c.tile_n / 2);
         if (accumulators > 128) {
           return Str(accumulators) + " accumulators per thread exceed 128 (pingpong " +
                  Str(c.tile_m) + "x" + Str(c.tile_n) + ")";
         }
         return {};
       }},
      {"streamk_shape", "streamk: no split-K (stream-K splits the k iterations itself)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (c.scheduler != TileScheduler::kStreamK || c.split_k == 1) return {};
         return "streamk with split_k " + Str(c.split_k);
       }},
      {"cluster_shape",
       "thread-block clusters (TMA multicast of the shared operand) are warp_specialized only, "
       "cluster_m and cluster_n 1 or 2",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (c.cluster_m == 1 && c.cluster_n == 1) return {};
         if (!IsWarpSpecialized(s)) {
           return "cluster " + Str(c.cluster_m) + "x" + Str(c.cluster_n) + " is not 1x1 for " +
                  std::string(TilePipelineName(c.pipeline));
         }
         if (c.cluster_m < 1 || c.cluster_m > 2 || c.cluster_n < 1 || c.cluster_n > 2) {
           return "cluster " + Str(c.cluster_m) + "x" + Str(c.cluster_n) + " is not in 1..2 x 1..2";
         }
         return {};
       }},
      {"cluster_pieces",
       "warp_specialized clusters: each CTA multicasts an equal piece of the shared tile, whole "
       "1024-byte swizzle groups (K-major: tile / cluster rows a multiple of 8) or whole "
       "64-element MN chunks (MN-major)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsWarpSpecialized(s) || c.cluster_m < 1 || c.cluster_n < 1) return {};
         const bool a_mn = s.layout.a != MatrixOrder::kRowMajor;
         const bool b_mn = s.layout.b != MatrixOrder::kColMajor;
         const auto piece_ok = [](int32_t tile, int32_t parts, bool mn) {
           if (parts == 1) return true;  // not shared: the other rules cover the whole tile
           return mn ? tile % (64 * parts) == 0 : tile % (8 * parts) == 0;
         };
         if (!piece_ok(c.tile_m, c.cluster_n, a_mn)) {
           return "tile_m " + Str(c.tile_m) + " does not split into " + Str(c.cluster_n) +
                  " A pieces";
         }
         if (!piece_ok(c.tile_n, c.cluster_m, b_mn)) {
           return "tile_n " + Str(c.tile_n) + " does not split into " + Str(c.cluster_m) +
                  " B pieces";
         }
         return {};
       }},
      {"epilogue_kind",
       "accumulators are stored straight from registers (direct); warp_specialized with a "
       "column-major bf16/fp16 C and no split-K may transpose them in registers first "
       "(transposed: 16-byte column stores); smem staging is not generated",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (c.epilogue == TileEpilogue::kDirect) return {};
         if (c.epilogue == TileEpilogue::kSharedStaged) return "epilogue smem is not generated yet";
         if (!IsWarpSpecialized(s)) return "epilogue transposed is warp_specialized only";
         if (s.layout.c == MatrixOrder::kRowMajor)
           return "epilogue transposed needs column-major C";
         if (s.output == DataType::kF32) return "epilogue transposed needs a 16-bit C";
         if (c.split_k != 1) return "epilogue transposed has no split-K";
         return {};
       }},
      {"split_k_range", "split_k is 1 (none) to 64 slices of K",
       [](const TileKernelSpec& s) -> std::string {
         return s.config.split_k >= 1 && s.config.split_k <= 64
                    ? std::string()
                    : "split_k " + Str(s.config.split_k) + " is outside 1..64";
       }},
      {"swizzle_range", "raster swizzle width is 1 to 16 tile columns",
       [](const TileKernelSpec& s) -> std::string {
         return s.config.swizzle >= 1 && s.config.swizzle <= 16
                    ? std::string()
                    : "swizzle " + Str(s.config.swizzle) + " is outside 1..16";
       }},
      {"alignment_values", "operand alignments are 1, 2, 4 or 8 elements (2..16-byte loads)",
       [](const TileKernelSpec& s) -> std::string {
         if (IsAlignment(s.align_a) && IsAlignment(s.align_b) && IsAlignment(s.align_c)) return {};
         return "alignments " + Str(s.align_a) + "." + Str(s.align_b) + "." + Str(s.align_c) +
                " are not all in {1,2,4,8}";
       }},
      {"warps_k_one", "no intra-block K split (warps_k 1) outside the decode family",
       [](const TileKernelSpec& s) -> std::string {
         return IsDecode(s) || s.config.warps_k == 1
                    ? std::string()
                    : "warps_k " + Str(s.config.warps_k) + " is not 1";
       }},
      // Multistage (mma.sync) rules.
      {"mma_instr_m16n8k16", "multistage issues mma.sync m16n8k16 (instr 16x8x16)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsMultistage(s) || (c.instr_m == 16 && c.instr_n == 8 && c.instr_k == 16)) return {};
         return "instr " + Str(c.instr_m) + "x" + Str(c.instr_n) + "x" + Str(c.instr_k) +
                " is not 16x8x16";
       }},
      {"warp_tile_m_multiple_of_16", "each warp's rows (tile_m / warps_m) are whole m16 MMA tiles",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsMultistage(s)) return {};
         if (c.warps_m > 0 && c.tile_m > 0 && c.tile_m % (16 * c.warps_m) == 0) return {};
         return "tile_m " + Str(c.tile_m) + " is not a multiple of 16 * warps_m (" +
                Str(c.warps_m) + ")";
       }},
      {"warp_tile_n_multiple_of_16",
       "each warp's columns (tile_n / warps_n) are whole pairs of n8 MMA tiles (one ldmatrix.x4 "
       "loads B for two)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsMultistage(s)) return {};
         if (c.warps_n > 0 && c.tile_n > 0 && c.tile_n % (16 * c.warps_n) == 0) return {};
         return "tile_n " + Str(c.tile_n) + " is not a multiple of 16 * warps_n (" +
                Str(c.warps_n) + ")";
       }},
      {"tile_k_multiple_of_16", "tile_k is whole k16 MMA steps",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsMultistage(s) || (c.tile_k >= 16 && c.tile_k % 16 == 0)) return {};
         return "tile_k " + Str(c.tile_k) + " is not a positive multiple of 16";
       }},
      {"threads_per_block", "multistage blocks have 1 to 16 warps (32..512 threads)",
       [](const TileKernelSpec& s) -> std::string {
         const int64_t warps = static_cast<int64_t>(s.config.warps_m) * s.config.warps_n;
         if (!IsMultistage(s) || (warps >= 1 && warps <= 16)) return {};
         return Str(warps) + " warps per block is outside 1..16";
       }},
      {"stages_range",
       "the cp.async ring (multistage) is 2 to 8 stages deep, the TMA ring (warp_specialized) 2 "
       "to 24 (shared memory bounds it first): narrow tiles stream the weights of skinny GEMMs, "
       "whose speed is the bytes in flight per SM",
       [](const TileKernelSpec& s) -> std::string {
         if (IsSmallM(s) || IsDecode(s)) return {};
         const int32_t deepest = IsWarpSpecialized(s) ? 24 : 8;
         if (s.config.stages >= 2 && s.config.stages <= deepest) return {};
         return "stages " + Str(s.config.stages) + " is outside 2.." + Str(deepest);
       }},
      {"shared_memory", "the stages' A and B tiles fit in 227 KiB of shared memory",
       [](const TileKernelSpec& s) -> std::string {
         if (IsSmallM(s) || IsDecode(s)) return {};
         const int64_t bytes = LaunchShapeOf(s).shared_bytes;
         if (bytes <= kMaxSharedBytesPerBlock) return {};
         return Str(bytes) + " bytes of shared memory exceed " + Str(kMaxSharedBytesPerBlock);
       }},
      {"accumulator_registers",
       "at most 128 fp32 accumulators per thread, leaving room for fragments and addresses "
       "under the 255-register limit",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsMultistage(s) || c.warps_m * c.warps_n <= 0) return {};
         const int64_t per_thread =
             static_cast<int64_t>(c.tile_m) * c.tile_n / (32LL * c.warps_m * c.warps_n);
         if (per_thread <= 128) return {};
         return Str(per_thread) + " accumulators per thread exceed 128";
       }},
      // Warp-specialized (TMA + wgmma) rules.
      {"ws_tile_shape",
       "warp_specialized: warps_m consumer warpgroups (1 or 2) of 64 rows each, so tile_m = "
       "64 * warps_m; warps_n 1; tile_k 64 (one 128-byte swizzle row of 16-bit elements); "
       "tile_n a multiple of 16 up to 256 (wgmma N and the TMA box limit)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsWarpSpecialized(s)) return {};
         if (c.warps_m < 1 || c.warps_m > 2) return "warps_m " + Str(c.warps_m) + " is not 1 or 2";
         if (c.tile_m != 64 * c.warps_m) return "tile_m " + Str(c.tile_m) + " != 64 * warps_m";
         if (c.warps_n != 1) return "warps_n " + Str(c.warps_n) + " is not 1";
         if (c.tile_k != 64) return "tile_k " + Str(c.tile_k) + " is not 64";
         if (c.tile_n < 16 || c.tile_n > 256 || c.tile_n % 16 != 0) {
           return "tile_n " + Str(c.tile_n) + " is not a multiple of 16 in 16..256";
         }
         return {};
       }},
      {"ws_instr",
       "warp_specialized issues wgmma m64nNk16 with N = tile_n (instr 64 x tile_n x 16)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsWarpSpecialized(s) ||
             (c.instr_m == 64 && c.instr_n == c.tile_n && c.instr_k == 16)) {
           return {};
         }
         return "instr " + Str(c.instr_m) + "x" + Str(c.instr_n) + "x" + Str(c.instr_k) +
                " is not 64x" + Str(c.tile_n) + "x16";
       }},
      {"ws_mn_major_chunks",
       "warp_specialized loads an MN-major operand (column-major A, row-major B) as 64-element "
       "TMA boxes (the 128-byte swizzle span), so a row-major B needs tile_n a multiple of 64",
       [](const TileKernelSpec& s) -> std::string {
         if (!IsWarpSpecialized(s) || s.layout.b == MatrixOrder::kColMajor ||
             s.config.tile_n % 64 == 0) {
           return {};
         }
         return "tile_n " + Str(s.config.tile_n) + " is not a multiple of 64 for row-major B";
       }},
      {"ws_alignment", "TMA needs 16-byte global strides: align_a and align_b are 8",
       [](const TileKernelSpec& s) -> std::string {
         if (!IsWarpSpecialized(s) || (s.align_a == 8 && s.align_b == 8)) return {};
         return "alignments " + Str(s.align_a) + "." + Str(s.align_b) + " are not 8.8";
       }},
      // Small-M rules.
      {"small_m_shape",
       "small_m: 1 <= tile_m <= 16 rows, warps_m 1, stages 1, instr 1x1x1 (CUDA-core FMA)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsSmallM(s)) return {};
         if (c.tile_m < 1 || c.tile_m > 16) return "tile_m " + Str(c.tile_m) + " is outside 1..16";
         if (c.warps_m != 1) return "warps_m " + Str(c.warps_m) + " is not 1";
         if (c.stages != 1) return "stages " + Str(c.stages) + " is not 1";
         if (c.instr_m != 1 || c.instr_n != 1 || c.instr_k != 1) return "instr is not 1x1x1";
         return {};
       }},
      {"small_m_threads", "small_m: 1 to 16 warps; tile_k a multiple of 8 (vector K slices)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsSmallM(s)) return {};
         if (c.warps_n < 1 || c.warps_n > 16) return "warps_n " + Str(c.warps_n) + " not in 1..16";
         if (c.tile_k < 8 || c.tile_k % 8 != 0) return "tile_k " + Str(c.tile_k) + " not 8k";
         return {};
       }},
      {"small_m_columns",
       "small_m: B column-major splits tile_n evenly over warps; B row-major gives each thread "
       "align_b adjacent columns, so tile_n / align_b column groups must divide the threads",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsSmallM(s) || c.warps_n < 1 || c.tile_n < 1) return {};
         if (s.layout.b == MatrixOrder::kColMajor) {
           if (c.tile_n % c.warps_n == 0) return {};
           return "tile_n " + Str(c.tile_n) + " is not a multiple of warps_n " + Str(c.warps_n);
         }
         const int64_t threads = 32LL * c.warps_n;
         if (c.tile_n % s.align_b == 0 && threads % (c.tile_n / s.align_b) == 0) return {};
         return "tile_n " + Str(c.tile_n) + " / align_b " + Str(s.align_b) +
                " column groups do not divide " + Str(threads) + " threads";
       }},
      // Decode rules.
      {"decode_shape",
       "decode: instr 16x8x16 (mma.sync); warps_n 1; tile_m whole m16 tiles per warp (a multiple "
       "of 16 * warps_m); tile_n 8, 16, 32 or 64 tokens (n8 tiles); tile_k 32..256 in 32-element "
       "chunks "
       "(one 16-byte load per lane and row); stages 1 or 2 register stages; 1..32 warps",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsDecode(s)) return {};
         if (c.instr_m != 16 || c.instr_n != 8 || c.instr_k != 16) return "instr is not 16x8x16";
         if (c.warps_n != 1) return "warps_n " + Str(c.warps_n) + " is not 1";
         if (c.warps_m < 1 || c.tile_m < 16 || c.tile_m % (16 * c.warps_m) != 0) {
           return "tile_m " + Str(c.tile_m) + " is not a multiple of 16 * warps_m";
         }
         if (c.tile_n != 8 && c.tile_n != 16 && c.tile_n != 32 && c.tile_n != 64) {
           return "tile_n " + Str(c.tile_n) + " is not 8, 16, 32 or 64";
         }
         if (c.tile_k < 32 || c.tile_k > 256 || c.tile_k % 32 != 0) {
           return "tile_k " + Str(c.tile_k) + " is not a multiple of 32 in 32..256";
         }
         if (c.stages != 1 && c.stages != 2) return "stages " + Str(c.stages) + " is not 1 or 2";
         const int64_t warps = static_cast<int64_t>(c.warps_m) * c.warps_k;
         if (c.warps_k < 1 || warps > 32) return Str(warps) + " warps is outside 1..32";
         return {};
       }},
      {"decode_k_major",
       "decode: A row-major and B column-major (both k-contiguous: nn.Linear's weights and "
       "activations), so one 16-byte load is a whole mma fragment",
       [](const TileKernelSpec& s) -> std::string {
         if (!IsDecode(s) ||
             (s.layout.a == MatrixOrder::kRowMajor && s.layout.b == MatrixOrder::kColMajor)) {
           return {};
         }
         return "layout " + s.layout.ToString() + " is not k-contiguous in A and B";
       }},
      {"decode_alignment", "decode: 16-byte loads along K need align_a and align_b 8",
       [](const TileKernelSpec& s) -> std::string {
         if (!IsDecode(s) || (s.align_a == 8 && s.align_b == 8)) return {};
         return "alignments " + Str(s.align_a) + "." + Str(s.align_b) + " are not 8.8";
       }},
      {"decode_masked", "decode: the kernel always checks rows, tokens and K (masks on)",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsDecode(s) || (c.mask_m && c.mask_n && c.mask_k)) return {};
         return "a mask is off";
       }},
      {"decode_registers",
       "decode: the register stages (16 bytes per row and token per 32-element chunk) and the "
       "accumulators fit in 160 registers per thread",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsDecode(s) || c.warps_m < 1) return {};
         const int64_t row_tiles = c.tile_m / (16 * c.warps_m);
         const int64_t token_tiles = c.tile_n / 8;
         const int64_t regs = 4LL * c.stages * (c.tile_k / 32) * (2 * row_tiles + token_tiles) +
                              4 * row_tiles * token_tiles;
         if (regs <= 160) return {};
         return Str(regs) + " fragment and accumulator registers exceed 160";
       }},
      {"decode_shared", "decode: the K-split partial sums fit in 48 KiB of static shared memory",
       [](const TileKernelSpec& s) -> std::string {
         const TileConfig& c = s.config;
         if (!IsDecode(s) || c.warps_m < 1) return {};
         const int64_t bytes = 4LL * (c.warps_k - 1) * c.warps_m * (c.tile_m / (16 * c.warps_m)) *
                               (c.tile_n / 8) * 4 * 32;
         if (bytes <= 48 * 1024) return {};
         return Str(bytes) + " bytes of partial sums exceed 48 KiB";
       }},
  };
  return rules;
}

}  // namespace

int64_t MultistageSharedBytes(const TileConfig& c) {
  const int64_t pad = 8;
  const int64_t a_stage = static_cast<int64_t>(c.tile_m) * (c.tile_k + pad);  // either layout
  const int64_t b_stage = static_cast<int64_t>(c.tile_n) * (c.tile_k + pad);
  // Column-major A ([k][m+pad]) and row-major B ([k][n+pad]) pad the other dimension; take the
  // larger so one figure bounds every layout.
  const int64_t a_alt = static_cast<int64_t>(c.tile_k) * (c.tile_m + pad);
  const int64_t b_alt = static_cast<int64_t>(c.tile_k) * (c.tile_n + pad);
  return 2 * static_cast<int64_t>(c.stages) * (std::max(a_stage, a_alt) + std::max(b_stage, b_alt));
}

int64_t SmallMSharedBytes(const TileKernelSpec& spec) {
  if (spec.layout.b == MatrixOrder::kColMajor) return 0;
  return 4LL * spec.config.tile_m * spec.config.tile_n;
}

int64_t KTiles(const TileConfig& c, const GemmProblem& problem) {
  return (problem.k + c.tile_k - 1) / c.tile_k;
}

int32_t KTilesPerSplit(const TileConfig& c, const GemmProblem& problem) {
  return static_cast<int32_t>((KTiles(c, problem) + c.split_k - 1) / c.split_k);
}

int64_t ClustersPerSlice(const TileConfig& c, const GemmProblem& problem) {
  const int64_t tiles_m = (problem.m + c.tile_m - 1) / c.tile_m;
  const int64_t tiles_n = (problem.n + c.tile_n - 1) / c.tile_n;
  return ((tiles_m + c.cluster_m - 1) / c.cluster_m) * ((tiles_n + c.cluster_n - 1) / c.cluster_n);
}

std::string SpecKey(const TileKernelSpec& spec) {
  return ConfigKey(spec.config) + "|in=" + std::string(DataTypeName(spec.input)) +
         ",out=" + std::string(DataTypeName(spec.output)) + ",layout=" + spec.layout.ToString() +
         ",align=" + Str(spec.align_a) + "." + Str(spec.align_b) + "." + Str(spec.align_c);
}

StatusOr<TileKernelSpec> SpecForProblem(const TileConfig& config, const GemmProblem& problem) {
  if (problem.dtype_a != problem.dtype_b) {
    return CannotImplementError("tile kernels take A and B of one type, not " +
                                std::string(DataTypeName(problem.dtype_a)) + " and " +
                                std::string(DataTypeName(problem.dtype_b)));
  }
  if (problem.compute != DataType::kF32) {
    return CannotImplementError("tile kernels accumulate in fp32, not " +
                                std::string(DataTypeName(problem.compute)));
  }
  TileKernelSpec spec;
  spec.config = config;
  spec.input = problem.dtype_a;
  spec.output = problem.dtype_c;
  spec.layout = problem.layout;
  spec.align_a = WidestAlignment(ExtentA(problem));
  spec.align_b = WidestAlignment(ExtentB(problem));
  spec.align_c = 1;  // the epilogue stores single elements
  if (const std::string why = Rules()[0].check(spec); !why.empty()) {
    return CannotImplementError("tile kernels: " + why);
  }
  return spec;
}

const std::vector<ValidityRule>& ValidityRules() {
  return Rules();
}

TileConfig WithDerivedFields(TileConfig config) {
  if (config.pipeline == TilePipeline::kWarpSpecialized) {  // ws_tile_shape, ws_instr
    config.warps_m = std::max(1, config.tile_m / 64);
    config.warps_n = 1;
    config.instr_m = 64;
    config.instr_n = config.tile_n;
    config.instr_k = 16;
  }
  return config;
}

Status CheckValid(const TileKernelSpec& spec) {
  for (const ValidityRule& rule : Rules()) {
    if (std::string why = rule.check(spec); !why.empty()) {
      return InvalidArgumentError("validity rule " + std::string(rule.name) + ": " + why);
    }
  }
  return Status::Ok();
}

Status CanImplement(const TileKernelSpec& spec, const GemmProblem& problem) {
  KSELECT_RETURN_IF_ERROR(problem.Validate());
  const TileConfig& c = spec.config;
  if (problem.dtype_a != spec.input || problem.dtype_b != spec.input ||
      problem.dtype_c != spec.output || problem.compute != DataType::kF32) {
    return CannotImplementError("dtypes of " + problem.ToString() + " differ from the kernel's " +
                                SpecKey(spec));
  }
  if (!(problem.layout == spec.layout)) {
    return CannotImplementError("layout " + problem.layout.ToString() + " is not the kernel's " +
                                spec.layout.ToString());
  }
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (problem.m > kIntMax || problem.n > kIntMax || problem.k > kIntMax) {
    return CannotImplementError("dimensions above 2^31-1 are not supported");
  }
  if (ExtentA(problem) % spec.align_a != 0 || ExtentB(problem) % spec.align_b != 0 ||
      ExtentC(problem) % spec.align_c != 0) {
    return CannotImplementError("contiguous extents of " + problem.ToString() +
                                " are not multiples of the kernel's alignments");
  }
  if (!c.mask_m && problem.m % c.tile_m != 0) {
    return CannotImplementError("mask_m off needs m % tile_m == 0");
  }
  if (!c.mask_n && problem.n % c.tile_n != 0) {
    return CannotImplementError("mask_n off needs n % tile_n == 0");
  }
  if (!c.mask_k && problem.k % c.tile_k != 0) {
    return CannotImplementError("mask_k off needs k % tile_k == 0");
  }
  if (problem.batch * c.split_k > 65535) {
    return CannotImplementError("batch * split_k exceeds the grid's 65535 z-limit");
  }
  const int64_t tiles_m = (problem.m + c.tile_m - 1) / c.tile_m;
  const int64_t tiles_n = (problem.n + c.tile_n - 1) / c.tile_n;
  if (c.pipeline == TilePipeline::kDecode) {
    if (problem.n > c.tile_n && problem.m > c.tile_n) {
      return CannotImplementError("decode: neither m nor n of " + problem.ToString() +
                                  " is at most tile_n " + Str(c.tile_n) + " tokens");
    }
    return Status::Ok();
  }
  if (c.pipeline == TilePipeline::kSmallM && tiles_m > 65535) {
    return CannotImplementError("small_m: m / tile_m exceeds the grid's 65535 y-limit");
  }
  if (tiles_m * tiles_n > kIntMax) return CannotImplementError("too many output tiles");
  if (c.pipeline == TilePipeline::kWarpSpecialized) {
    // The kernel numbers work items (cluster-padded tiles of every batch and split) in an int
    // and steps past the last by at most a grid's clusters.
    const int64_t padded = (tiles_m + c.cluster_m - 1) / c.cluster_m * c.cluster_m *
                           ((tiles_n + c.cluster_n - 1) / c.cluster_n * c.cluster_n);
    if (padded * problem.batch * c.split_k > kIntMax - (1 << 20)) {
      return CannotImplementError("too many output tiles over batch and split-K");
    }
  }
  return Status::Ok();
}

LaunchShape LaunchShapeOf(const TileKernelSpec& spec) {
  const TileConfig& c = spec.config;
  if (c.pipeline == TilePipeline::kSmallM) return {32 * c.warps_n, 0};
  if (c.pipeline == TilePipeline::kDecode) return {32 * c.warps_m * c.warps_k, 0};
  if (c.pipeline == TilePipeline::kWarpSpecialized) {
    // Stages, 1024 bytes of slack to align them for the 128-byte swizzle, then the mbarriers.
    const int64_t bytes = static_cast<int64_t>(c.stages) * (c.tile_m + c.tile_n) * c.tile_k * 2 +
                          1024 + 16LL * c.stages;
    return {128 * (1 + c.warps_m), static_cast<int32_t>(std::min<int64_t>(bytes, 1 << 30))};
  }
  return {32 * c.warps_m * c.warps_n, static_cast<int32_t>(MultistageSharedBytes(c))};
}

namespace {

// Stream-K's flags (one per consumer warp of each CTA, rounded to 256 bytes so the partials stay
// aligned) and workspace bytes for `clusters` clusters.
int32_t StreamKFlagWords(const TileConfig& c, int64_t clusters) {
  const int64_t flags = clusters * c.cluster_m * c.cluster_n * c.warps_m * 4;
  return static_cast<int32_t>((flags + 63) / 64 * 64);
}
size_t StreamKWorkspaceBytes(const TileConfig& c, int64_t clusters) {
  return static_cast<size_t>(StreamKFlagWords(c, clusters)) * sizeof(int32_t) +
         static_cast<size_t>(clusters * c.cluster_m * c.cluster_n) * c.tile_m * c.tile_n *
             sizeof(float);
}

}  // namespace

StreamKLayout StreamKLayoutOf(const TileConfig& c, const GemmProblem& problem, int64_t clusters) {
  StreamKLayout layout;
  // Work items without split-K: cluster tiles times batch.
  const int64_t tiles = ClustersPerSlice(c, problem) * problem.batch;
  const int64_t k_tiles = KTiles(c, problem);
  layout.dp_tiles = static_cast<int32_t>(tiles);
  if (clusters < 1 || k_tiles == 0 || tiles % clusters == 0) return layout;
  // A last wave over three quarters full is left whole: the little it would gain is less than
  // split tiles at scattered k offsets lose to L2 misses (measured on an H200, 0.92-1.23x).
  if (tiles > clusters && 4 * (tiles % clusters) > 3 * clusters) return layout;
  const int64_t dp = tiles / clusters * clusters;
  layout.dp_tiles = static_cast<int32_t>(dp);
  layout.sk_tiles = static_cast<int32_t>(tiles - dp);
  // At least one cluster per split tile (short K must not queue whole tiles on a few clusters),
  // more where each still gets kMinStreamKIterations k tiles.
  const int64_t sk = layout.sk_tiles;
  layout.sk_clusters = static_cast<int32_t>(
      std::clamp<int64_t>(std::max(sk, sk * k_tiles / kMinStreamKIterations), 1, clusters));
  layout.flag_words = StreamKFlagWords(c, clusters);
  layout.workspace_bytes = StreamKWorkspaceBytes(c, clusters);
  return layout;
}

int64_t StreamKClusters(const TileConfig& c, const GemmProblem& problem,
                        int64_t resident_clusters) {
  const int64_t limit = std::max<int64_t>(
      1, std::min(resident_clusters, kMaxStreamKCtas / (c.cluster_m * c.cluster_n)));
  const int64_t tiles = ClustersPerSlice(c, problem) * problem.batch;
  if (tiles >= limit) return limit;
  // Below a wave each tile is split into the same number of equal parts, so the clusters read
  // the same k offsets of the operands at once (L2 serves the tiles that share them).
  const int64_t k_tiles = KTiles(c, problem);
  const int64_t parts =
      std::min(limit / std::max<int64_t>(tiles, 1), k_tiles / kMinStreamKIterations);
  return std::max<int64_t>(1, tiles * std::max<int64_t>(parts, 1));
}

size_t WorkspaceBytes(const TileKernelSpec& spec, const GemmProblem& problem) {
  if (spec.config.scheduler == TileScheduler::kStreamK) {
    // Enough for the largest grid StreamKClusters gives on any GPU.
    return StreamKWorkspaceBytes(spec.config,
                                 StreamKClusters(spec.config, problem, kMaxStreamKCtas));
  }
  if (spec.config.split_k <= 1) return 0;
  return static_cast<size_t>(problem.batch) * spec.config.split_k * problem.m * problem.n *
         sizeof(float);
}

}  // namespace kselect::tile
