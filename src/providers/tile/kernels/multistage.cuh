// The multistage family: cp.async into a `kStages`-deep shared-memory ring, ldmatrix,
// mma.sync m16n8k16. Shared tiles keep the operand's contiguous dimension innermost and are padded
// by 8 elements (16 bytes) per row, which makes ldmatrix's eight 16-byte row reads hit distinct
// banks. Compiled after the spec's constants and prelude.cuh (see there).
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
__device__ __forceinline__ void CommitGroup() {
  asm volatile("cp.async.commit_group;\n" ::);
}
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

extern "C" __global__ void __launch_bounds__(kThreads) kselect_tile_gemm(const Params p) {
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

  const int k_tiles_total = KTileCount(p);
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
        const u16* ptr = kARow
                             ? ta + (mrow + (quad % 2) * 8 + row8) * kAStride + kk + (quad / 2) * 8
                             : ta + (kk + (quad / 2) * 8 + row8) * kAStride + mrow + (quad % 2) * 8;
        LdMatrixX4(fa[i], ptr, !kARow);
      }
#pragma unroll
      for (int j = 0; j < kMmaN / 2; ++j) {
        const int ncol = wn * kWarpN + j * 16;
        const u16* ptr = kBCol
                             ? tb + (ncol + (quad / 2) * 8 + row8) * kBStride + kk + (quad % 2) * 8
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
