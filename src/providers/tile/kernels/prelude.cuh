// The prelude of every tile-engine module: element conversions, the parameter block, output
// stores and the split-K reduction kernel.
//
// Not a standalone header. GenerateSource (../tile_source.cpp) writes a spec's module as its
// block of constexpr constants (kTileM, kInBf16, kOutKind, kCRow, ...), then this file, then the
// family's file (multistage.cuh, small_m.cuh or warp_specialized.cuh), and NVRTC compiles that
// text. The files are embedded into the binary at build time (../embed_kernels.cmake) and name no
// header: conversions and tensor-core instructions are inline PTX, which keeps an NVRTC compile
// well under a second. tests/providers/tile_kernels_test.cpp compiles each family with nvcc.
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
  // Stream-K (warp_specialized): work ids below sk_dp_tiles run whole, the next sk_tiles are split
  // by k iterations over the first sk_clusters clusters; the workspace holds sk_flag_words int
  // flags, then one partial tile per CTA.
  int sk_dp_tiles, sk_tiles, sk_clusters, sk_flag_words;
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
// k tiles of the problem: ceil(k / kTileK).
__device__ __forceinline__ int KTileCount(const Params& p) {
  return (p.k + kTileK - 1) / kTileK;
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
    const i64 i =
        (static_cast<i64>(z) * kSplitK + split) * p.m * p.n + static_cast<i64>(row) * p.n + col;
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
    for (int s = 0; s < kSplitK; ++s)
      acc += p.workspace[(static_cast<i64>(z) * kSplitK + s) * mn + rc];
    const i64 o = CIndex(p, z, row, col);
    float v = p.alpha * acc;
    if (p.beta != 0.0f) v += p.beta * OutToFloat(p.c, o);
    StoreOut(p.c, o, v);
  }
}
