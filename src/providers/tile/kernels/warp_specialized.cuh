// Warp-specialized (sm_90a): warpgroup 0 is the producer (one thread issues TMA loads of A and B
// tiles into a kStages-deep ring, 128-byte swizzled, completing on "full" mbarriers); warpgroups
// 1..kWarpsM are consumers, each issuing wgmma m64nNk16 on its 64 rows of the tile from shared
// memory descriptors and releasing a stage on its "empty" mbarrier once the wgmma reading it has
// retired. A and B are K-major or MN-major (wgmma's transpose bits); TMA zero-fills out-of-range
// boxes, so any M, N and K runs whose contiguous extents are multiples of 8. Compiled after the
// spec's constants and prelude.cuh (see there); the constants block of this family also defines
// the KSELECT_WGMMA_* macros below.
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
__device__ __forceinline__ void TmaLoad(u32 dst, const TensorMap* map, u32 bar, int x, int y,
                                        int z) {
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
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Inline asm names each register it uses, and wgmma m64nNk16 takes N/2 accumulator registers, so
// the spec's constants block writes out the N-dependent parts for N = kTileN (GenerateSource):
//   KSELECT_WGMMA_SHAPE          "m64n<N>k16"
//   KSELECT_WGMMA_D              "{%0, %1, ..., %<N/2-1>}": the accumulator registers
//   KSELECT_WGMMA_DESCRIPTORS    "%<N/2>, %<N/2+1>": da and db, the inputs after them
//   KSELECT_WGMMA_TRANSPOSES     "%<N/2+2>, %<N/2+3>": the transpose immediates
//   KSELECT_WGMMA_D_OPERANDS(d)  "+f"(d[0]), ..., "+f"(d[N/2-1])
#ifndef KSELECT_WGMMA_SHAPE
#error "warp_specialized.cuh needs the KSELECT_WGMMA_* macros of the spec's constants block"
#endif
// scale-d is the predicate p, set: the wgmma accumulates into d.
#define KSELECT_WGMMA_ASM(ab_types)                                                           \
  "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\nwgmma.mma_async.sync.aligned." KSELECT_WGMMA_SHAPE \
  ".f32." ab_types " " KSELECT_WGMMA_D ", " KSELECT_WGMMA_DESCRIPTORS                         \
  ", p, 1, 1, " KSELECT_WGMMA_TRANSPOSES ";\n}\n"
// One wgmma m64nNk16 (N = kTileN) from shared-memory descriptors da and db into d; MN-major
// operands are read with the transpose bits.
__device__ __forceinline__ void Wgmma(float (&d)[kTileN / 2], u64 da, u64 db) {
  if (kInBf16) {
    asm volatile(KSELECT_WGMMA_ASM("bf16.bf16")
                 : KSELECT_WGMMA_D_OPERANDS(d)
                 : "l"(da), "l"(db), "n"(kAMN ? 1 : 0), "n"(kBMN ? 1 : 0));
  } else {
    asm volatile(KSELECT_WGMMA_ASM("f16.f16")
                 : KSELECT_WGMMA_D_OPERANDS(d)
                 : "l"(da), "l"(db), "n"(kAMN ? 1 : 0), "n"(kBMN ? 1 : 0));
  }
}
extern "C" __global__ void __launch_bounds__(kThreads, 1)
    kselect_tile_gemm(const Params p, const __grid_constant__ TensorMap map_a,
                      const __grid_constant__ TensorMap map_b) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // 128-byte swizzled tiles want 1024-byte aligned stages.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(smem_raw) + 1023) &
                                                         ~static_cast<u64>(1023));
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
          for (int c = 0; c < kTileM / 64; ++c)
            TmaLoad(sa + c * kChunkBytes, &map_a, full, m0 + 64 * c, k0, z);
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
        if (r < p.m && col < p.n)
          Finish2(p, z, split, r, col, acc[j * 4 + 2 * h], acc[j * 4 + 2 * h + 1]);
      }
    }
  }
}
