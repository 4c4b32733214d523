// Source generation: a spec becomes a block of constexpr constants followed by fixed kernel text
// for its family. The kernel text includes no header (conversions and tensor-core instructions are
// inline PTX), which keeps an NVRTC compile well under a second; see docs/tile_engine.md.
#include <sstream>
#include <string>

#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

namespace kselect::tile {
namespace {

// Shared by both families: element conversions, the parameter block, output stores and the
// split-K reduction kernel.
constexpr const char* kPrelude = R"CUDA(
typedef unsigned short u16;
typedef unsigned int u32;
typedef long long i64;

struct Params {
  const u16* a;
  const u16* b;
  void* c;
  float* workspace;
  int m, n, k;
  int batch;
  int k_tiles_per_split;
  float alpha, beta;
};

__device__ __forceinline__ float InToFloat(u16 h) {
  float f;
  if (kInBf16) {
    asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(h));
  } else {
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  }
  return f;
}
__device__ __forceinline__ u16 FloatToBf16(float f) {
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ u16 FloatToF16(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float OutToFloat(const void* c, i64 i) {
  if (kOutKind == 2) return static_cast<const float*>(c)[i];
  const u16 h = static_cast<const u16*>(c)[i];
  float f;
  if (kOutKind == 0) {
    asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(h));
  } else {
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  }
  return f;
}
__device__ __forceinline__ void StoreOut(void* c, i64 i, float v) {
  if (kOutKind == 2) {
    static_cast<float*>(c)[i] = v;
  } else if (kOutKind == 0) {
    static_cast<u16*>(c)[i] = FloatToBf16(v);
  } else {
    static_cast<u16*>(c)[i] = FloatToF16(v);
  }
}
// Index of C(row, col) in batch `z`.
__device__ __forceinline__ i64 CIndex(const Params& p, int z, int row, int col) {
  const i64 base = static_cast<i64>(z) * p.m * p.n;
  return base + (kCRow ? static_cast<i64>(row) * p.n + col : static_cast<i64>(col) * p.m + row);
}
// The epilogue of one accumulator: alpha*acc + beta*C, or the raw partial sum under split-K.
__device__ __forceinline__ void Finish(const Params& p, int z, int split, int row, int col,
                                       float acc) {
  if (kSplitK > 1) {
    const i64 i = (static_cast<i64>(z) * kSplitK + split) * p.m * p.n +
                  static_cast<i64>(row) * p.n + col;
    p.workspace[i] = acc;
    return;
  }
  const i64 i = CIndex(p, z, row, col);
  float v = p.alpha * acc;
  if (p.beta != 0.0f) v += p.beta * OutToFloat(p.c, i);
  StoreOut(p.c, i, v);
}

// Two horizontally adjacent accumulators (row, col) and (row, col + 1): one 4- or 8-byte store
// when C is row-major, both columns exist and the pair is aligned; else two Finish calls.
__device__ __forceinline__ void Finish2(const Params& p, int z, int split, int row, int col,
                                        float v0, float v1) {
  const int bytes = kOutKind == 2 ? 4 : 2;
  if (kSplitK == 1 && kCRow && col + 1 < p.n && (p.n & 1) == 0 &&
      (reinterpret_cast<unsigned long long>(p.c) & (2 * bytes - 1)) == 0) {
    const i64 i = CIndex(p, z, row, col);
    float a = p.alpha * v0, b = p.alpha * v1;
    if (p.beta != 0.0f) {
      a += p.beta * OutToFloat(p.c, i);
      b += p.beta * OutToFloat(p.c, i + 1);
    }
    if (kOutKind == 2) {
      *reinterpret_cast<float2*>(static_cast<float*>(p.c) + i) = make_float2(a, b);
    } else {
      const u32 lo = kOutKind == 0 ? FloatToBf16(a) : FloatToF16(a);
      const u32 hi = kOutKind == 0 ? FloatToBf16(b) : FloatToF16(b);
      *reinterpret_cast<u32*>(static_cast<u16*>(p.c) + i) = lo | (hi << 16);
    }
    return;
  }
  Finish(p, z, split, row, col, v0);
  if (col + 1 < p.n) Finish(p, z, split, row, col + 1, v1);
}

// Sums the split-K partials (fp32, row-major per split) and applies alpha/beta.
extern "C" __global__ void kselect_tile_splitk_reduce(Params p) {
  const i64 mn = static_cast<i64>(p.m) * p.n;
  const i64 total = mn * p.batch;
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<i64>(gridDim.x) * blockDim.x) {
    const int z = static_cast<int>(i / mn);
    const i64 rc = i - z * mn;
    const int row = static_cast<int>(rc / p.n);
    const int col = static_cast<int>(rc - static_cast<i64>(row) * p.n);
    float acc = 0.0f;
    for (int s = 0; s < kSplitK; ++s) acc += p.workspace[(static_cast<i64>(z) * kSplitK + s) * mn + rc];
    const i64 o = CIndex(p, z, row, col);
    float v = p.alpha * acc;
    if (p.beta != 0.0f) v += p.beta * OutToFloat(p.c, o);
    StoreOut(p.c, o, v);
  }
}
)CUDA";

// Multistage: cp.async into a `kStages`-deep shared-memory ring, ldmatrix, mma.sync m16n8k16.
// Shared tiles keep the operand's contiguous dimension innermost and are padded by 8 elements
// (16 bytes) per row, which makes ldmatrix's eight 16-byte row reads hit distinct banks.
constexpr const char* kMultistage = R"CUDA(
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWarpM = kTileM / kWarpsM;
constexpr int kWarpN = kTileN / kWarpsN;
constexpr int kMmaM = kWarpM / 16;
constexpr int kMmaN = kWarpN / 8;
constexpr int kPad = 8;
// A tile: [kTileM][kTileK] when A is row-major (k contiguous), else [kTileK][kTileM].
constexpr int kARows = kARow ? kTileM : kTileK;
constexpr int kACols = kARow ? kTileK : kTileM;
constexpr int kAStride = kACols + kPad;
// B tile: [kTileN][kTileK] when B is column-major (k contiguous), else [kTileK][kTileN].
constexpr int kBRows = kBCol ? kTileN : kTileK;
constexpr int kBCols = kBCol ? kTileK : kTileN;
constexpr int kBStride = kBCols + kPad;
constexpr int kAStage = kARows * kAStride;
constexpr int kBStage = kBRows * kBStride;

__device__ __forceinline__ u32 SmemAddress(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// Copies kBytes from global to shared memory, or zero-fills them when `valid` is false.
template <int kBytes>
__device__ __forceinline__ void CopyAsync(u16* dst, const u16* src, bool valid) {
  if (kBytes == 2) {
    *dst = valid ? *src : static_cast<u16>(0);
  } else {
    const int src_bytes = valid ? kBytes : 0;
    if (kBytes == 16) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddress(dst)),
                   "l"(src), "r"(src_bytes));
    } else {
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(SmemAddress(dst)),
                   "l"(src), "n"(kBytes), "r"(src_bytes));
    }
  }
}
__device__ __forceinline__ void CommitGroup() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Loads one (kTileM x kTileK) slice of A and one (kTileK x kTileN) slice of B into a stage.
__device__ __forceinline__ void LoadStage(const Params& p, const u16* a, const u16* b, u16* sa,
                                          u16* sb, int m0, int n0, int k0, int tid) {
  constexpr int kAChunksPerRow = kACols / kAlignA;
  constexpr int kAChunks = kARows * kAChunksPerRow;
#pragma unroll
  for (int i = 0; i < (kAChunks + kThreads - 1) / kThreads; ++i) {
    const int chunk = tid + i * kThreads;
    if (kAChunks % kThreads == 0 || chunk < kAChunks) {
      const int r = chunk / kAChunksPerRow;
      const int c = (chunk % kAChunksPerRow) * kAlignA;
      const int gm = m0 + (kARow ? r : c);
      const int gk = k0 + (kARow ? c : r);
      const bool valid = (!kMaskM || gm < p.m) && (!kMaskK || gk < p.k);
      const i64 offset = kARow ? static_cast<i64>(gm) * p.k + gk : static_cast<i64>(gk) * p.m + gm;
      CopyAsync<kAlignA * 2>(sa + r * kAStride + c, valid ? a + offset : a, valid);
    }
  }
  constexpr int kBChunksPerRow = kBCols / kAlignB;
  constexpr int kBChunks = kBRows * kBChunksPerRow;
#pragma unroll
  for (int i = 0; i < (kBChunks + kThreads - 1) / kThreads; ++i) {
    const int chunk = tid + i * kThreads;
    if (kBChunks % kThreads == 0 || chunk < kBChunks) {
      const int r = chunk / kBChunksPerRow;
      const int c = (chunk % kBChunksPerRow) * kAlignB;
      const int gn = n0 + (kBCol ? r : c);
      const int gk = k0 + (kBCol ? c : r);
      const bool valid = (!kMaskN || gn < p.n) && (!kMaskK || gk < p.k);
      const i64 offset = kBCol ? static_cast<i64>(gn) * p.k + gk : static_cast<i64>(gk) * p.n + gn;
      CopyAsync<kAlignB * 2>(sb + r * kBStride + c, valid ? b + offset : b, valid);
    }
  }
}

__device__ __forceinline__ void LdMatrixX4(u32 (&r)[4], const u16* p, bool trans) {
  if (trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SmemAddress(p)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SmemAddress(p)));
  }
}

__device__ __forceinline__ void Mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if (kInBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    kselect_tile_gemm(const Params p) {
  extern __shared__ __align__(128) u16 smem[];
  u16* const sa = smem;
  u16* const sb = smem + kStages * kAStage;

  // Raster: tiles in groups of kSwizzle tile columns, column-major inside a group, so blocks
  // running together share B columns and A rows in L2.
  const int tiles_m = (p.m + kTileM - 1) / kTileM;
  const int tiles_n = (p.n + kTileN - 1) / kTileN;
  int tile_m, tile_n;
  {
    const int id = blockIdx.x;
    const int group_size = kSwizzle * tiles_m;
    const int group = id / group_size;
    const int first_n = group * kSwizzle;
    const int width = min(kSwizzle, tiles_n - first_n);
    const int local = id - group * group_size;
    tile_n = first_n + local % width;
    tile_m = local / width;
  }
  const int z = blockIdx.z / kSplitK;
  const int split = blockIdx.z % kSplitK;
  const int m0 = tile_m * kTileM;
  const int n0 = tile_n * kTileN;
  const u16* const a = p.a + static_cast<i64>(z) * p.m * p.k;
  const u16* const b = p.b + static_cast<i64>(z) * p.k * p.n;

  const int k_tiles_total = (p.k + kTileK - 1) / kTileK;
  const int kt_begin = split * p.k_tiles_per_split;
  const int kt_end = min(k_tiles_total, kt_begin + p.k_tiles_per_split);
  const int k_tiles = max(0, kt_end - kt_begin);

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int wm = warp % kWarpsM;
  const int wn = warp / kWarpsM;

  float acc[kMmaM][kMmaN][4];
#pragma unroll
  for (int i = 0; i < kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) {
      LoadStage(p, a, b, sa + s * kAStage, sb + s * kBStage, m0, n0, (kt_begin + s) * kTileK, tid);
    }
    CommitGroup();
  }

  // Per-lane ldmatrix coordinates (see docs/tile_engine.md for the fragment mapping).
  const int quad = lane / 8;
  const int row8 = lane % 8;

  for (int kt = 0; kt < k_tiles; ++kt) {
    WaitGroup<kStages - 2>();
    __syncthreads();
    {
      const int next = kt + kStages - 1;
      if (next < k_tiles) {
        const int slot = next % kStages;
        LoadStage(p, a, b, sa + slot * kAStage, sb + slot * kBStage, m0, n0,
                  (kt_begin + next) * kTileK, tid);
      }
      CommitGroup();
    }
    const u16* const ta = sa + (kt % kStages) * kAStage;
    const u16* const tb = sb + (kt % kStages) * kBStage;
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 16) {
      u32 fa[kMmaM][4];
      u32 fb[kMmaN / 2][4];
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        const int mrow = wm * kWarpM + i * 16;
        const u16* ptr = kARow ? ta + (mrow + (quad % 2) * 8 + row8) * kAStride + kk + (quad / 2) * 8
                               : ta + (kk + (quad / 2) * 8 + row8) * kAStride + mrow + (quad % 2) * 8;
        LdMatrixX4(fa[i], ptr, !kARow);
      }
#pragma unroll
      for (int j = 0; j < kMmaN / 2; ++j) {
        const int ncol = wn * kWarpN + j * 16;
        const u16* ptr = kBCol ? tb + (ncol + (quad / 2) * 8 + row8) * kBStride + kk + (quad % 2) * 8
                               : tb + (kk + (quad % 2) * 8 + row8) * kBStride + ncol + (quad / 2) * 8;
        LdMatrixX4(fb[j], ptr, !kBCol);
      }
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int j = 0; j < kMmaN; ++j)
          Mma(acc[i][j], fa[i], fb[j / 2][(j % 2) * 2], fb[j / 2][(j % 2) * 2 + 1]);
    }
  }
  WaitGroup<0>();

  const int group_row = lane / 4;
  const int group_col = (lane % 4) * 2;
#pragma unroll
  for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * kWarpM + i * 16 + group_row + h * 8;
        const int col = n0 + wn * kWarpN + j * 8 + group_col;
        if ((!kMaskM || row < p.m) && (!kMaskN || col < p.n)) {
          Finish2(p, z, split, row, col, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
      }
    }
  }
}
)CUDA";

// Small-M: each block owns kTileN columns and up to kTileM (<= 16) rows; fp32 FMAs on CUDA cores.
// B column-major (k contiguous): each warp walks its columns four at a time, lanes split K in
// kAlignB-wide vectors, then a shuffle reduction. B row-major (n contiguous): each thread owns
// kAlignB adjacent columns of one k-slice; k-slices meet in shared-memory atomics.
constexpr const char* kSmallM = R"CUDA(
constexpr int kThreads = kWarpsN * 32;

template <int kWidth>
struct alignas(kWidth * 2) Vec {
  u16 v[kWidth];
};

__device__ __forceinline__ float LoadA(const Params& p, const u16* a, int row, int k) {
  const i64 i = kARow ? static_cast<i64>(row) * p.k + k : static_cast<i64>(k) * p.m + row;
  return InToFloat(a[i]);
}

extern "C" __global__ void __launch_bounds__(kThreads) kselect_tile_gemm(const Params p) {
  const int z = blockIdx.z / kSplitK;
  const int split = blockIdx.z % kSplitK;
  const int m0 = blockIdx.y * kTileM;
  const int n0 = blockIdx.x * kTileN;
  const u16* const a = p.a + static_cast<i64>(z) * p.m * p.k;
  const u16* const b = p.b + static_cast<i64>(z) * p.k * p.n;
  const int k_begin = split * p.k_tiles_per_split * kTileK;
  const int k_end = min(p.k, k_begin + p.k_tiles_per_split * kTileK);
  const int tid = threadIdx.x;
  constexpr int kV = kAlignB;

  if (kBCol) {
    constexpr int kColsPerWarp = kTileN / kWarpsN;
    constexpr int kCols = kColsPerWarp < 4 ? kColsPerWarp : 4;
    const int lane = tid % 32;
    const int warp = tid / 32;
    for (int c0 = 0; c0 < kColsPerWarp; c0 += kCols) {
      float acc[kCols][kTileM];
#pragma unroll
      for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int r = 0; r < kTileM; ++r) acc[c][r] = 0.0f;
      const int nbase = n0 + warp * kColsPerWarp + c0;
      for (int k = k_begin + lane * kV; k < k_end; k += 32 * kV) {
        float bv[kCols][kV];
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const int n = nbase + c;
          Vec<kV> v;
          if (n < p.n) {
            v = *reinterpret_cast<const Vec<kV>*>(b + static_cast<i64>(n) * p.k + k);
          } else {
#pragma unroll
            for (int e = 0; e < kV; ++e) v.v[e] = 0;
          }
#pragma unroll
          for (int e = 0; e < kV; ++e) bv[c][e] = InToFloat(v.v[e]);
        }
#pragma unroll
        for (int r = 0; r < kTileM; ++r) {
          const int row = m0 + r;
          if (row < p.m) {
            float av[kV];
            if (kARow && kAlignA >= kV) {
              const Vec<kV> v = *reinterpret_cast<const Vec<kV>*>(a + static_cast<i64>(row) * p.k + k);
#pragma unroll
              for (int e = 0; e < kV; ++e) av[e] = InToFloat(v.v[e]);
            } else {
#pragma unroll
              for (int e = 0; e < kV; ++e) av[e] = LoadA(p, a, row, k + e);
            }
#pragma unroll
            for (int c = 0; c < kCols; ++c)
#pragma unroll
              for (int e = 0; e < kV; ++e) acc[c][r] += av[e] * bv[c][e];
          }
        }
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
#pragma unroll
        for (int r = 0; r < kTileM; ++r) {
          float v = acc[c][r];
#pragma unroll
          for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
          acc[c][r] = v;
        }
      }
      // Lane r writes row r of each column (spreads the stores over lanes).
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
#pragma unroll
        for (int r = 0; r < kTileM; ++r) {
          const int row = m0 + r;
          const int col = nbase + c;
          if (lane == r && row < p.m && col < p.n) Finish(p, z, split, row, col, acc[c][r]);
        }
      }
    }
  } else {
    constexpr int kColGroups = kTileN / kV;
    constexpr int kSlices = kThreads / kColGroups;
    __shared__ float sum[kTileM][kTileN];
    for (int i = tid; i < kTileM * kTileN; i += kThreads) (&sum[0][0])[i] = 0.0f;
    __syncthreads();
    const int group = tid % kColGroups;
    const int slice = tid / kColGroups;
    const int n = n0 + group * kV;
    float acc[kTileM][kV];
#pragma unroll
    for (int r = 0; r < kTileM; ++r)
#pragma unroll
      for (int e = 0; e < kV; ++e) acc[r][e] = 0.0f;
    if (slice < kSlices && n < p.n) {
      for (int k = k_begin + slice; k < k_end; k += kSlices) {
        const Vec<kV> v = *reinterpret_cast<const Vec<kV>*>(b + static_cast<i64>(k) * p.n + n);
        float bv[kV];
#pragma unroll
        for (int e = 0; e < kV; ++e) bv[e] = InToFloat(v.v[e]);
#pragma unroll
        for (int r = 0; r < kTileM; ++r) {
          const float av = (m0 + r < p.m) ? LoadA(p, a, m0 + r, k) : 0.0f;
#pragma unroll
          for (int e = 0; e < kV; ++e) acc[r][e] += av * bv[e];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kTileM; ++r)
#pragma unroll
      for (int e = 0; e < kV; ++e) atomicAdd(&sum[r][group * kV + e], acc[r][e]);
    __syncthreads();
    for (int i = tid; i < kTileM * kTileN; i += kThreads) {
      const int r = kCRow ? i / kTileN : i % kTileM;
      const int c = kCRow ? i % kTileN : i / kTileM;
      const int row = m0 + r;
      const int col = n0 + c;
      if (row < p.m && col < p.n) Finish(p, z, split, row, col, sum[r][c]);
    }
  }
}
)CUDA";

constexpr const char* kWarpSpecialized = R"CUDA(
// Warp-specialized (sm_90a): warpgroup 0 is the producer (one thread issues TMA loads of A and B
// tiles into a kStages-deep ring, 128-byte swizzled, completing on "full" mbarriers); warpgroups
// 1..kWarpsM are consumers, each issuing wgmma m64nNk16 on its 64 rows of the tile from shared
// memory descriptors and releasing a stage on its "empty" mbarrier once the wgmma reading it has
// retired. A and B are K-major or MN-major (wgmma's transpose bits); TMA zero-fills out-of-range
// boxes, so any M, N and K runs whose contiguous extents are multiples of 8.
constexpr int kConsumers = kWarpsM;
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kAStageBytes = kTileM * kTileK * 2;
constexpr int kBStageBytes = kTileN * kTileK * 2;
constexpr int kStageBytes = kAStageBytes + kBStageBytes;
typedef unsigned long long u64;
// MN-major operands (A column-major, B row-major) are read with wgmma's transpose bit.
constexpr bool kAMN = !kARow;
constexpr bool kBMN = !kBCol;
constexpr int kChunkBytes = 64 * kTileK * 2;  // one 64-element MN chunk of a stage (8 KiB)
// Descriptor advance per k16 step, in 16-byte units: 32 bytes along a K-major row, or two
// 8-row groups (2048 bytes) down an MN-major chunk.
constexpr int kAStep = kAMN ? 128 : 2;
constexpr int kBStep = kBMN ? 128 : 2;

struct alignas(64) TensorMap {
  u64 opaque[16];
};

__device__ __forceinline__ u32 SmemAddress(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void BarrierInit(u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void BarrierExpectTx(u32 bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void BarrierArrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void BarrierWait(u32 bar, int parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void TmaLoad(u32 dst, const TensorMap* map, u32 bar, int x, int y, int z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
}
// Shared-memory matrix descriptor, 128-byte swizzle. K-major: rows of 64 k-elements, 8-row
// groups 1024 bytes apart (SBO), LBO unused. MN-major: 64-element MN chunks of 64 k-rows each,
// chunks `lbo` bytes apart, 8-k-row groups 1024 bytes apart.
__device__ __forceinline__ u64 Descriptor(u32 address, u32 lbo) {
  u64 d = static_cast<u64>((address & 0x3FFFF) >> 4);
  d |= static_cast<u64>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<u64>(1024 >> 4) << 32;
  d |= static_cast<u64>(1) << 62;
  return d;
}
__device__ __forceinline__ void WgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
@WGMMA@
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    kselect_tile_gemm(const Params p, const __grid_constant__ TensorMap map_a,
                      const __grid_constant__ TensorMap map_b) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // 128-byte swizzled tiles want 1024-byte aligned stages.
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<u64>(smem_raw) + 1023) & ~static_cast<u64>(1023));
  u64* bars = reinterpret_cast<u64*>(smem + kStages * kStageBytes);
  const u32 full0 = SmemAddress(bars);
  const u32 empty0 = SmemAddress(bars + kStages);

  const int tiles_m = (p.m + kTileM - 1) / kTileM;
  const int tiles_n = (p.n + kTileN - 1) / kTileN;
  int tile_m, tile_n;
  {
    const int id = blockIdx.x;
    const int group_size = kSwizzle * tiles_m;
    const int group = id / group_size;
    const int first_n = group * kSwizzle;
    const int width = min(kSwizzle, tiles_n - first_n);
    const int local = id - group * group_size;
    tile_n = first_n + local % width;
    tile_m = local / width;
  }
  const int z = blockIdx.z / kSplitK;
  const int split = blockIdx.z % kSplitK;
  const int m0 = tile_m * kTileM;
  const int n0 = tile_n * kTileN;
  const int k_tiles_total = (p.k + kTileK - 1) / kTileK;
  const int kt_begin = split * p.k_tiles_per_split;
  const int kt_end = min(k_tiles_total, kt_begin + p.k_tiles_per_split);
  const int k_tiles = max(0, kt_end - kt_begin);

  const int wg = threadIdx.x / 128;
  const int t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(full0 + 8 * s, 1);
      BarrierInit(empty0 + 8 * s, kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (t == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        if (kt >= kStages) BarrierWait(empty0 + 8 * s, ((kt / kStages) + 1) & 1);
        const u32 full = full0 + 8 * s;
        BarrierExpectTx(full, kStageBytes);
        const int k0 = (kt_begin + kt) * kTileK;
        const u32 sa = SmemAddress(smem + s * kStageBytes);
        // K-major operands arrive as one box per stage; MN-major ones as 64-wide MN chunks.
        if (kAMN) {
#pragma unroll
          for (int c = 0; c < kTileM / 64; ++c) TmaLoad(sa + c * kChunkBytes, &map_a, full, m0 + 64 * c, k0, z);
        } else {
          TmaLoad(sa, &map_a, full, k0, m0, z);
        }
        if (kBMN) {
#pragma unroll
          for (int c = 0; c < kTileN / 64; ++c) {
            TmaLoad(sa + kAStageBytes + c * kChunkBytes, &map_b, full, n0 + 64 * c, k0, z);
          }
        } else {
          TmaLoad(sa + kAStageBytes, &map_b, full, k0, n0, z);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int consumer = wg - 1;
    float acc[kTileN / 2];
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) acc[i] = 0.0f;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % kStages;
      BarrierWait(full0 + 8 * s, (kt / kStages) & 1);
      const u32 sa = SmemAddress(smem + s * kStageBytes) + consumer * 64 * kTileK * 2;
      const u32 sb = SmemAddress(smem + s * kStageBytes + kAStageBytes);
      const u64 da = Descriptor(sa, kAMN ? kChunkBytes : 16);
      const u64 db = Descriptor(sb, kBMN ? kChunkBytes : 16);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) Wgmma(acc, da + kAStep * kk, db + kBStep * kk);
      WgmmaCommit();
      WgmmaWait<1>();
      // The wgmma group of the previous k tile has retired: its stage may be refilled.
      if (kt > 0 && t == 0) BarrierArrive(empty0 + 8 * ((kt - 1) % kStages));
    }
    WgmmaWait<0>();

    const int warp = t / 32;
    const int lane = t % 32;
    const int row = m0 + consumer * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int col = n0 + j * 8 + (lane % 4) * 2;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row + h * 8;
        if (r < p.m && col < p.n) Finish2(p, z, split, r, col, acc[j * 4 + 2 * h], acc[j * 4 + 2 * h + 1]);
      }
    }
  }
}
)CUDA";

const char* Bool(bool b) {
  return b ? "true" : "false";
}

// The wgmma m64nNk16 wrapper: its asm lists N/2 accumulator registers, so it is written out here.
std::string WgmmaFunction(int n, bool bf16, bool trans_a, bool trans_b) {
  std::ostringstream s;
  const int regs = n / 2;
  s << "__device__ __forceinline__ void Wgmma(float (&d)[" << regs << "], u64 da, u64 db) {\n";
  // scale-d is a predicate (accumulate into d); A and B are K-major (no transpose).
  s << "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
    << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << (bf16 ? "bf16.bf16" : "f16.f16")
    << " {";
  for (int i = 0; i < regs; ++i) s << (i ? ", " : "") << "%" << i;
  s << "}, %" << regs << ", %" << regs + 1 << ", p, 1, 1, " << (trans_a ? 1 : 0) << ", "
    << (trans_b ? 1 : 0) << ";\\n}\\n\"\n    : ";
  for (int i = 0; i < regs; ++i) s << (i ? ", " : "") << "\"+f\"(d[" << i << "])";
  s << "\n    : \"l\"(da), \"l\"(db));\n}\n";
  return s.str();
}

}  // namespace

std::string GenerateSource(const TileKernelSpec& spec) {
  const TileConfig& c = spec.config;
  std::ostringstream s;
  s << "// kselect tile engine, generated: " << SpecKey(spec) << "\n";
  s << "constexpr int kTileM = " << c.tile_m << ", kTileN = " << c.tile_n
    << ", kTileK = " << c.tile_k << ";\n";
  s << "constexpr int kWarpsM = " << c.warps_m << ", kWarpsN = " << c.warps_n << ";\n";
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
  s << kPrelude;
  if (c.pipeline == TilePipeline::kWarpSpecialized) {
    std::string body = kWarpSpecialized;
    body.replace(body.find("@WGMMA@"), 7,
                 WgmmaFunction(c.tile_n, spec.input == DataType::kBF16,
                               spec.layout.a == MatrixOrder::kColMajor,
                               spec.layout.b == MatrixOrder::kRowMajor));
    s << body;
  } else {
    s << (c.pipeline == TilePipeline::kSmallM ? kSmallM : kMultistage);
  }
  return s.str();
}

}  // namespace kselect::tile
