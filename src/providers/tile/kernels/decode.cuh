// The decode family: memory-bound GEMMs where one side is a handful of tokens. In the framework
// orientation (nn.Linear through cuBLAS TN: m = out features, n = tokens) the tokens are n <=
// kTileN; a problem with m <= kTileN (tokens in m) runs the same code with the operands' roles
// swapped. Both operands are k-contiguous (A row-major, B column-major), so the "weights" are rows
// of length k and so are the tokens.
//
// The kernel exists to keep HBM busy. Each warp streams 16 weight rows (kRowTiles m16 tiles) over
// its own contiguous share of K: every lane issues 16-byte loads that bypass L1 (the weights are
// read once), kTileK / 32 chunks per step and kStages steps in flight (Little's law: about 30 KB
// per SM at 4.8 TB/s). The tokens are L1-cached loads (every block reads them). The products are
// tensor-core mma.sync m16n8k16 with K permuted inside each 32-element chunk: a lane's one 16-byte
// load of a weight row and one of a token row are exactly the A and B fragments of two k16 steps
// (the permutation is the same on both sides, so the sum is unchanged). kWarpsK warps split K
// inside a block and meet in shared memory; split_k splits it over blocks (workspace + reduce).
//
// Programmatic dependent launch (the engine launches this family with programmatic stream
// serialization): a warp prefetches the first register stages of its rows into L2, then waits
// for the preceding grid (griddepcontrol.wait) before its first load, so it is correct whatever
// the previous kernel wrote, and after its main loop lets the next grid launch
// (griddepcontrol.launch_dependents): back-to-back decode GEMMs overlap one's reduction and
// epilogue with the next one's launch and first loads.
// Compiled after the spec's constants and prelude.cuh (see there).
constexpr int kThreads = 32 * kWarpsM * kWarpsK;
constexpr int kRowTiles = kTileM / (16 * kWarpsM);  // m16 weight-row tiles per warp
constexpr int kTokenTiles = kTileN / 8;             // n8 token tiles
constexpr int kChunks = kTileK / 32;                // 32-element K chunks per step

struct Frag {
  u32 w[kChunks][kRowTiles][2][4];  // weight rows g and g + 8 of each row tile, 8 elements each
  u32 x[kChunks][kTokenTiles][4];   // token g of each token tile, 8 elements
};

__device__ __forceinline__ void LoadStreaming(u32 (&v)[4], const u16* p, bool ok) {
  if (ok) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
        : "l"(p));
  } else {
    v[0] = v[1] = v[2] = v[3] = 0u;
  }
}

__device__ __forceinline__ void LoadCached(u32 (&v)[4], const u16* p, bool ok) {
  if (ok) {
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
        : "l"(p));
  } else {
    v[0] = v[1] = v[2] = v[3] = 0u;
  }
}

__device__ __forceinline__ void MmaK16(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0,
                                       u32 b1) {
  if (kInBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

struct DecodeLane {
  const u16* w_row[kRowTiles][2];  // rows g and g + 8 of each row tile (row 0 when out of range)
  bool w_ok[kRowTiles][2];
  const u16* x_row[kTokenTiles];
  bool x_ok[kTokenTiles];
  int k_lane;  // 8 * (lane % 4): the lane's offset inside a 32-element chunk
  int k;
  int chunk_end;  // this warp's K share ends before this chunk
};

// Loads chunk `c0` .. c0 + kChunks - 1 of every row; chunks past the warp's share (or K) are zero.
__device__ __forceinline__ void LoadStep(Frag& f, const DecodeLane& l, int c0) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int k = (c0 + c) * 32 + l.k_lane;
    const bool in_k = c0 + c < l.chunk_end && k < l.k;
#pragma unroll
    for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        LoadStreaming(f.w[c][r][h], l.w_row[r][h] + k, in_k && l.w_ok[r][h]);
    }
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j) LoadCached(f.x[c][j], l.x_row[j] + k, in_k && l.x_ok[j]);
  }
}

__device__ __forceinline__ void ComputeStep(float (&acc)[kRowTiles][kTokenTiles][4],
                                            const Frag& f) {
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
#pragma unroll
    for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
      for (int j = 0; j < kTokenTiles; ++j) {
        // Two k16 steps: words 0-1 of each load, then words 2-3.
        MmaK16(acc[r][j], f.w[c][r][0][0], f.w[c][r][1][0], f.w[c][r][0][1], f.w[c][r][1][1],
               f.x[c][j][0], f.x[c][j][1]);
        MmaK16(acc[r][j], f.w[c][r][0][2], f.w[c][r][1][2], f.w[c][r][0][3], f.w[c][r][1][3],
               f.x[c][j][2], f.x[c][j][3]);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(kThreads) kselect_tile_gemm(const Params p) {
  // Tokens in n (the framework orientation) when they fit, else in m.
  const bool tokens_in_n = p.n <= kTileN;
  const int rows = tokens_in_n ? p.m : p.n;
  const int tokens = tokens_in_n ? p.n : p.m;
  const int z = blockIdx.z / kSplitK;
  const int split = blockIdx.z % kSplitK;
  const u16* const a = p.a + static_cast<i64>(z) * p.m * p.k;
  const u16* const b = p.b + static_cast<i64>(z) * p.k * p.n;
  const u16* const weights = tokens_in_n ? a : b;
  const u16* const x = tokens_in_n ? b : a;

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp % kWarpsM;
  const int warp_k = warp / kWarpsM;
  const int g = lane / 4;
  const int t = lane % 4;
  const int row0 = blockIdx.x * kTileM + warp_m * kRowTiles * 16;

  // K in 32-element chunks: this split's share, then this warp's contiguous part of it.
  const int chunks = (p.k + 31) / 32;
  const int per_split = (chunks + kSplitK - 1) / kSplitK;
  const int split_begin = split * per_split;
  const int split_end = min(chunks, split_begin + per_split);
  const int per_warp = (max(split_end - split_begin, 0) + kWarpsK - 1) / kWarpsK;
  const int chunk_begin = split_begin + warp_k * per_warp;

  DecodeLane l;
  l.k_lane = 8 * t;
  l.k = p.k;
  l.chunk_end = min(split_end, chunk_begin + per_warp);
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + r * 16 + h * 8 + g;
      l.w_ok[r][h] = row < rows;
      l.w_row[r][h] = weights + static_cast<i64>(l.w_ok[r][h] ? row : 0) * p.k;
    }
  }
#pragma unroll
  for (int j = 0; j < kTokenTiles; ++j) {
    const int token = j * 8 + g;
    l.x_ok[j] = token < tokens;
    l.x_row[j] = x + static_cast<i64>(l.x_ok[j] ? token : 0) * p.k;
  }

  // The first register stages' bytes of this warp's rows go to L2 while the preceding grid
  // finishes (L2 is the coherence point: a prefetch cannot read stale data).
  {
    const int k_begin = min(chunk_begin * 32, p.k);
    const int k_end = min(min(l.chunk_end * 32, p.k), k_begin + kStages * kTileK);
    for (int i = lane; i < kRowTiles * 16 && k_end > k_begin; i += 32) {
      const int row = row0 + i;
      if (row >= rows) continue;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(
                       weights + static_cast<i64>(row) * p.k + k_begin),
                   "r"(static_cast<u32>(k_end - k_begin) * 2u)
                   : "memory");
    }
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");

  float acc[kRowTiles][kTokenTiles][4];
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[r][j][e] = 0.0f;

  int c = chunk_begin;
  if (kStages == 1) {
    for (; c < l.chunk_end; c += kChunks) {
      Frag f;
      LoadStep(f, l, c);
      ComputeStep(acc, f);
    }
  } else if (c < l.chunk_end) {
    // Two register stages: the next step's loads are in flight while this one computes.
    Frag f0, f1;
    LoadStep(f0, l, c);
    while (true) {
      if (c + kChunks < l.chunk_end) LoadStep(f1, l, c + kChunks);
      ComputeStep(acc, f0);
      c += kChunks;
      if (c >= l.chunk_end) break;
      if (c + kChunks < l.chunk_end) LoadStep(f0, l, c + kChunks);
      ComputeStep(acc, f1);
      c += kChunks;
      if (c >= l.chunk_end) break;
    }
  }

  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

  if (kWarpsK > 1) {
    // Warps 1.. of each K group hand their sums to warp 0 through shared memory.
    constexpr int kPerLane = kRowTiles * kTokenTiles * 4;
    __shared__ float partial[kWarpsK > 1 ? kWarpsK - 1 : 1][kWarpsM][kPerLane][32];
    if (warp_k > 0) {
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
        for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            partial[warp_k - 1][warp_m][(r * kTokenTiles + j) * 4 + e][lane] = acc[r][j][e];
    }
    __syncthreads();
    if (warp_k > 0) return;
    for (int w = 0; w < kWarpsK - 1; ++w) {
#pragma unroll
      for (int r = 0; r < kRowTiles; ++r)
#pragma unroll
        for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[r][j][e] += partial[w][warp_m][(r * kTokenTiles + j) * 4 + e][lane];
    }
  }

  // Accumulator e of (r, j): weight row g (+8 for e >= 2), token 2t + (e & 1) of token tile j.
#pragma unroll
  for (int r = 0; r < kRowTiles; ++r) {
#pragma unroll
    for (int j = 0; j < kTokenTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = row0 + r * 16 + (e >= 2 ? 8 : 0) + g;
        const int token = j * 8 + 2 * t + (e & 1);
        if (row >= rows || token >= tokens) continue;
        if (tokens_in_n) {
          Finish(p, z, split, row, token, acc[r][j][e]);
        } else {
          Finish(p, z, split, token, row, acc[r][j][e]);
        }
      }
    }
  }
}
