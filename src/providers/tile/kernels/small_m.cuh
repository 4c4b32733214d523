// The small-M family: each block owns kTileN columns and up to kTileM (<= 16) rows; fp32 FMAs on
// CUDA cores. B column-major (k contiguous): each warp walks its columns four at a time, lanes
// split K in kAlignB-wide vectors, then a shuffle reduction. B row-major (n contiguous): each
// thread owns kAlignB adjacent columns of one k-slice; k-slices meet in shared-memory atomics.
// Compiled after the spec's constants and prelude.cuh (see there).
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
              const Vec<kV> v =
                  *reinterpret_cast<const Vec<kV>*>(a + static_cast<i64>(row) * p.k + k);
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
