// Warp-specialized (sm_90a): warpgroup 0 is the producer (one thread issues TMA loads of A and B
// tiles into a kStages-deep ring, 128-byte swizzled, completing on "full" mbarriers); warpgroups
// 1..kWarpsM are consumers, each issuing wgmma m64nNk16 on its 64 rows of the tile from shared
// memory descriptors and releasing a stage on its "empty" mbarrier once the wgmma reading it has
// retired. A and B are K-major or MN-major (wgmma's transpose bits); TMA zero-fills out-of-range
// boxes, so any M, N and K runs whose contiguous extents are multiples of 8. Compiled after the
// spec's constants and prelude.cuh (see there); the constants block of this family also defines
// kClusterM, kClusterN, kPersistent, kPingPong, kStreamK and the KSELECT_WGMMA_* macros below.
//
// Clusters (kClusterM x kClusterN CTAs, rank r at (r % kClusterM, r / kClusterM)): the CTAs of a
// cluster column share one B tile and those of a cluster row one A tile, so each CTA loads only
// its piece of a shared tile and multicasts it to the others (TMA .multicast::cluster): less L2
// traffic per FLOP. A CTA's stage is then written by its whole cluster row and column, so before
// any of them refills a stage every consumer that reads it must have released it: a consumer
// arrives on the "empty" barrier of every CTA in its row and column.
//
// Persistent (kPersistent): the grid is what fits on the GPU at once, and each cluster walks the
// output tiles (batch and split-K slices included) with a stride of the cluster count, so the
// producer fills the ring for the next tile while the consumers store the last one.
//
// Stream-K (kStreamK, persistent): when the tiles leave the last wave part full, the tiles of that
// wave are not given out whole: their k iterations are split evenly over the first sk_clusters
// clusters (StreamKLayoutOf sizes them), each taking a run of consecutive iterations that
// may start or end inside a tile. Only the part-full wave is split, not the last full one with it:
// clusters at different k offsets of more tiles than L2 holds made the split wave memory-bound.
// A cluster's run that starts inside a tile is the first it computes and the tile's head (its
// first k iterations) the last its owner computes, so the owner of the head finishes the tile:
// every other contributor stores its fp32 partial in its CTA's workspace slot and raises its
// per-warp flag (zeroed by the host before each launch); the head's owner waits for those flags
// and adds the partials in cluster order.
constexpr int kConsumers = kWarpsM;
// Cooperative (the default): the consumers split a tile's rows, 64 each. Pingpong: each consumer
// computes whole tiles, kTileM / 64 wgmma row blocks, on alternate work items.
constexpr int kRowBlocks = kPingPong ? kTileM / 64 : 1;
// Stages each consumer reads before they are refilled: one consumer reads a pingpong stage.
constexpr int kReadersPerStage = kPingPong ? 1 : kConsumers;
__device__ __forceinline__ int RowBlock(int consumer, int block) {
  return kPingPong ? block : consumer;
}
constexpr int kThreads = 128 * (kConsumers + 1);
constexpr int kAStageBytes = kTileM * kTileK * 2;
constexpr int kBStageBytes = kTileN * kTileK * 2;
constexpr int kStageBytes = kAStageBytes + kBStageBytes;
typedef unsigned long long u64;
// MN-major operands (A column-major, B row-major) are read with wgmma's transpose bit.
constexpr bool kAMN = !kARow;
constexpr bool kBMN = !kBCol;
constexpr int kChunkBytes = 64 * kTileK * 2;  // one 64-element MN chunk of a stage (8 KiB)
constexpr int kClusterSize = kClusterM * kClusterN;
// A is shared along a cluster row (kClusterN CTAs), B along a cluster column (kClusterM CTAs):
// each CTA loads 1 / kClusterN of A (rows of a K-major box, or 64-wide MN chunks) and
// 1 / kClusterM of B.
constexpr int kAPieceBytes = kAStageBytes / kClusterN;
constexpr int kBPieceBytes = kBStageBytes / kClusterM;
static_assert(kAPieceBytes % 1024 == 0 && kBPieceBytes % 1024 == 0,
              "cluster pieces keep the 128-byte swizzle's 1024-byte alignment");
static_assert(!kAMN || (kTileM / 64) % kClusterN == 0, "whole MN chunks of A per CTA");
static_assert(!kBMN || (kTileN / 64) % kClusterM == 0, "whole MN chunks of B per CTA");
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
// The same, delivered to the same offset in every CTA of `mask` (cluster ranks), each of which
// counts the bytes on its own barrier at `bar`'s offset.
__device__ __forceinline__ void TmaLoadMulticast(u32 dst, const TensorMap* map, u32 bar, int x,
                                                 int y, int z, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(x), "r"(y), "r"(z), "r"(bar), "h"(mask)
      : "memory");
}
// Loads a piece of a stage: multicast to `mask` when other CTAs share it, a plain load if not.
template <bool kShared>
__device__ __forceinline__ void TmaLoadPiece(u32 dst, const TensorMap* map, u32 bar, int x, int y,
                                             int z, unsigned short mask) {
  if (kShared) {
    TmaLoadMulticast(dst, map, bar, x, y, z, mask);
  } else {
    TmaLoad(dst, map, bar, x, y, z);
  }
}
// Loads this CTA's piece `part` of `parts` of one operand's stage at `dst` (the tile's rows
// start at `row0`): K-major operands as one box of kTile / parts rows, MN-major ones as their
// share of the 64-wide MN chunks; multicast to `mask` when the tile is shared (parts > 1).
template <bool kMN, int kTile, int kParts>
__device__ __forceinline__ void LoadPiece(u32 dst, const TensorMap* map, u32 bar, int row0, int k0,
                                          int z, int part, unsigned short mask) {
  if (kMN) {
    constexpr int kChunks = kTile / 64 / kParts;
#pragma unroll
    for (int c = part * kChunks; c < (part + 1) * kChunks; ++c)
      TmaLoadPiece<(kParts > 1)>(dst + c * kChunkBytes, map, bar, row0 + 64 * c, k0, z, mask);
  } else {
    constexpr int kRows = kTile / kParts;
    TmaLoadPiece<(kParts > 1)>(dst + part * kRows * kTileK * 2, map, bar, k0, row0 + part * kRows,
                               z, mask);
  }
}
__device__ __forceinline__ u32 ClusterRank() {
  u32 rank = 0;
  if (kClusterSize > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
// Arrives on the barrier at local address `bar` in the CTA of cluster rank `rank`.
__device__ __forceinline__ void BarrierArriveCluster(u32 bar, u32 rank) {
  if (kClusterSize == 1) {
    BarrierArrive(bar);
    return;
  }
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  // The default .release.cta semantics, as CUTLASS's ClusterBarrier arrives remotely.
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// Named barriers between the two consumer warpgroups (256 threads; barrier 0 is __syncthreads).
__device__ __forceinline__ void NamedBarrierSync(int id) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory");
}
__device__ __forceinline__ void NamedBarrierArrive(int id) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory");
}
// Every thread of the block (and of the cluster, inside one) meets here.
__device__ __forceinline__ void ClusterSync() {
  if (kClusterSize > 1) {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
  } else {
    __syncthreads();
  }
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
// The transposed epilogue (kTransposedEpilogue: column-major 16-bit C, no split-K). A warp's
// accumulators of two n8 column blocks are four 8x8 matrices M(q), q = 2 * block + row half,
// each held as in mma: lane (g, c) = (lane / 4, lane % 4) has row g, columns 2c and 2c + 1.
// movmatrix transposes each in registers, so lane (g, c) then has rows 2c, 2c + 1 of column g;
// three quad shuffles give lane (g, q) all 8 rows of column g of M(q): one 16-byte store, and a
// column's two row halves are adjacent (whole 32-byte sectors).
__device__ __forceinline__ u32 Pack2(float lo, float hi) {
  const u32 l = kOutKind == 0 ? FloatToBf16(lo) : FloatToF16(lo);
  const u32 h = kOutKind == 0 ? FloatToBf16(hi) : FloatToF16(hi);
  return l | (h << 16);
}
__device__ __forceinline__ u32 Transpose8x8(u32 v) {
  u32 t;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(t) : "r"(v));
  return t;
}
// `acc` holds the tile's columns j * 8 .. j * 8 + 15 (blocks j and j + 1) for this warp's 16 rows
// at (row0, col0); stores alpha * acc where the 8 rows exist (m % 8 == 0, so all 8 or none).
__device__ __forceinline__ void StoreTransposedPair(const Params& p, int z, int row0, int col0,
                                                    const float* acc, int lane) {
  u32 t[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int block = q >> 1, half = q & 1;
    t[q] = Transpose8x8(
        Pack2(p.alpha * acc[block * 4 + 2 * half], p.alpha * acc[block * 4 + 2 * half + 1]));
  }
  const int q = lane & 3;
  u32 o[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int send = (q - r) & 3;  // the piece the lane r places ahead wants from this lane
    const u32 v = send == 0 ? t[0] : send == 1 ? t[1] : send == 2 ? t[2] : t[3];
    const u32 got = r == 0 ? v : __shfl_sync(0xffffffffu, v, (lane & ~3) | ((q + r) & 3));
    const int slot = (q + r) & 3;  // rows 2 * slot, 2 * slot + 1
    o[0] = slot == 0 ? got : o[0];
    o[1] = slot == 1 ? got : o[1];
    o[2] = slot == 2 ? got : o[2];
    o[3] = slot == 3 ? got : o[3];
  }
  const int row = row0 + (q & 1) * 8;
  const int col = col0 + (q >> 1) * 8 + lane / 4;
  if (row < p.m && col < p.n) {
    u16* c = static_cast<u16*>(p.c) + CIndex(p, z, row, col);
    *reinterpret_cast<uint4*>(c) = make_uint4(o[0], o[1], o[2], o[3]);
  }
}
constexpr bool kTransposedEpilogue = kEpilogueTransposed;
static_assert(!kStreamK || (kPersistent && !kPingPong && kSplitK == 1),
              "stream-K is a persistent cooperative schedule without split-K");
static_assert(!kTransposedEpilogue || (!kCRow && kOutKind != 2 && kSplitK == 1),
              "the transposed epilogue is for a column-major 16-bit C without split-K");

// One unit of work: an output tile of one batch entry and one split-K slice, or under stream-K
// a run of its k tiles: `contributors` clusters from this one on add into it (this one computes
// its head and stores it, > 1) or it adds into another's (a run past the head, 0).
struct WorkTile {
  int m0, n0, z, split, kt_begin, k_tiles;
  int contributors;
};
// Work item `id` of this CTA (cluster rank rm, rn): cluster tiles in swizzled raster order
// (kSwizzle cluster columns walk down the cluster rows), then batch and split-K slices.
__device__ __forceinline__ WorkTile WorkOf(const Params& p, int id, int rm, int rn) {
  const int tiles_m = (p.m + kTileM - 1) / kTileM;
  const int tiles_n = (p.n + kTileN - 1) / kTileN;
  const int ctiles_m = (tiles_m + kClusterM - 1) / kClusterM;
  const int ctiles_n = (tiles_n + kClusterN - 1) / kClusterN;
  const int per_slice = ctiles_m * ctiles_n;
  const int slice = id / per_slice;
  const int local_id = id - slice * per_slice;
  const int group_size = kSwizzle * ctiles_m;
  const int group = local_id / group_size;
  const int first_n = group * kSwizzle;
  const int width = min(kSwizzle, ctiles_n - first_n);
  const int local = local_id - group * group_size;
  WorkTile w;
  w.m0 = ((local / width) * kClusterM + rm) * kTileM;
  w.n0 = ((first_n + local % width) * kClusterN + rn) * kTileN;
  w.z = slice / kSplitK;
  w.split = slice % kSplitK;
  const int k_tiles_total = KTileCount(p);
  w.kt_begin = w.split * p.k_tiles_per_split;
  const int kt_end = min(k_tiles_total, w.kt_begin + p.k_tiles_per_split);
  w.k_tiles = max(0, kt_end - w.kt_begin);
  w.contributors = 1;
  return w;
}
__device__ __forceinline__ int WorkCount(const Params& p) {
  const int ctiles_m = ((p.m + kTileM - 1) / kTileM + kClusterM - 1) / kClusterM;
  const int ctiles_n = ((p.n + kTileN - 1) / kTileN + kClusterN - 1) / kClusterN;
  return ctiles_m * ctiles_n * p.batch * kSplitK;
}
// Where a cluster is in its list of work items: whole work ids from `next` to `end` by `stride`,
// then (stream-K) the split tiles' k iterations [sk_next, sk_end).
struct WorkCursor {
  int next, stride, end;
  long long sk_next, sk_end;
};
__device__ __forceinline__ WorkCursor FirstWork(const Params& p, int cluster_id, int clusters) {
  WorkCursor c;
  c.sk_next = c.sk_end = 0;
  if (!kPersistent) {
    // Data parallel: one work item per cluster, the batch and split-K slices in blockIdx.z.
    c.next = cluster_id + clusters * blockIdx.z;
    c.stride = 1;
    c.end = c.next + 1;
    return c;
  }
  c.next = cluster_id;
  c.stride = clusters;
  c.end = kStreamK ? p.sk_dp_tiles : WorkCount(p);
  if (kStreamK && cluster_id < p.sk_clusters) {
    const long long iterations = static_cast<long long>(p.sk_tiles) * KTileCount(p);
    c.sk_next = cluster_id * iterations / p.sk_clusters;
    c.sk_end = (cluster_id + 1) * iterations / p.sk_clusters;
  }
  return c;
}
// The next work item of this cluster (cluster rank rm, rn) into `w`; false when there is none.
__device__ __forceinline__ bool NextWork(const Params& p, WorkCursor& c, int cluster_id, int rm,
                                         int rn, WorkTile& w) {
  if (c.next < c.end) {
    w = WorkOf(p, c.next, rm, rn);
    c.next += c.stride;
    return true;
  }
  if (!kStreamK || c.sk_next >= c.sk_end) return false;
  const int k_tiles = KTileCount(p);
  const long long iterations = static_cast<long long>(p.sk_tiles) * k_tiles;
  const int tile = static_cast<int>(c.sk_next / k_tiles);
  const int first_k = static_cast<int>(c.sk_next - static_cast<long long>(tile) * k_tiles);
  const int run =
      static_cast<int>(min(static_cast<long long>(k_tiles - first_k), c.sk_end - c.sk_next));
  c.sk_next += run;
  w = WorkOf(p, p.sk_dp_tiles + tile, rm, rn);
  w.kt_begin = first_k;
  w.k_tiles = run;
  // Cluster i < sk_clusters takes iterations [i * iterations / sk_clusters, (i + 1) * iterations /
  // sk_clusters), so iteration x is cluster ((x + 1) * sk_clusters - 1) / iterations's.
  const long long tile_last = static_cast<long long>(tile) * k_tiles + k_tiles - 1;
  const int owner_last = static_cast<int>(((tile_last + 1) * p.sk_clusters - 1) / iterations);
  w.contributors = first_k > 0 ? 0 : owner_last - cluster_id + 1;
  return true;
}
// fp32 x 4 to and from global memory through L2 only: the other contributors' partials are
// written by other SMs.
__device__ __forceinline__ void StoreL2(float4* p, float4 v) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w)
               : "memory");
}
__device__ __forceinline__ float4 LoadL2(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
// A stream-K partial's flag: raised (release, GPU scope) after the partial is stored, waited for
// (acquire) before it is read.
__device__ __forceinline__ void FlagRaise(int* flag) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(flag), "r"(1) : "memory");
}
__device__ __forceinline__ void FlagWait(const int* flag) {
  int v = 0;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
  } while (v == 0);
}
// Stream-K: a run past a tile's head stores this warp's partial sums in its CTA's slot and raises
// the warp's flag; the head's owner waits for the flags of the clusters after it and adds their
// partials into `acc` in cluster order (the result does not depend on who finished first).
// Returns whether this CTA stores the tile.
__device__ __forceinline__ bool StreamKFixup(const Params& p, const WorkTile& w, int cluster_id,
                                             u32 rank, int consumer, int t,
                                             float (&acc)[kTileN / 2]) {
  constexpr int kVectors = kTileN / 8;  // float4s per thread
  constexpr int kSlotVectors = kConsumers * kVectors * 128;
  const int warp_slot = consumer * 4 + t / 32;
  float4* slots = reinterpret_cast<float4*>(p.workspace + p.sk_flag_words) +
                  static_cast<long long>(consumer) * kVectors * 128 + t;
  int* flags = reinterpret_cast<int*>(p.workspace) + warp_slot;
  const int cta = cluster_id * kClusterSize + static_cast<int>(rank);
  if (w.contributors == 0) {
    float4* mine = slots + static_cast<long long>(cta) * kSlotVectors;
#pragma unroll
    for (int j = 0; j < kVectors; ++j)
      StoreL2(mine + j * 128,
              make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
    __threadfence();
    __syncwarp();
    if (t % 32 == 0) FlagRaise(flags + cta * kConsumers * 4);
    return false;
  }
  for (int c = 1; c < w.contributors; ++c) {
    const int other = cta + c * kClusterSize;
    if (t % 32 == 0) FlagWait(flags + other * kConsumers * 4);
    __syncwarp();
    const float4* theirs = slots + static_cast<long long>(other) * kSlotVectors;
#pragma unroll
    for (int j = 0; j < kVectors; ++j) {
      const float4 v = LoadL2(theirs + j * 128);
      acc[4 * j] += v.x;
      acc[4 * j + 1] += v.y;
      acc[4 * j + 2] += v.z;
      acc[4 * j + 3] += v.w;
    }
  }
  return true;
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

  const u32 rank = ClusterRank();
  const int rm = static_cast<int>(rank) % kClusterM;
  const int rn = static_cast<int>(rank) / kClusterM;
  // Cluster ranks that receive this CTA's A piece (its cluster row) and B piece (its column).
  unsigned short row_mask = 0, column_mask = 0;
#pragma unroll
  for (int j = 0; j < kClusterN; ++j) row_mask |= 1u << (rm + kClusterM * j);
#pragma unroll
  for (int i = 0; i < kClusterM; ++i) column_mask |= 1u << (i + kClusterM * rn);

  // Data parallel: one work item per cluster. Persistent: the clusters of the grid stride over
  // the work items (FirstWork, NextWork).
  const int cluster_id = blockIdx.x / kClusterSize;
  const int clusters = gridDim.x / kClusterSize;

  const int wg = threadIdx.x / 128;
  const int t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      BarrierInit(full0 + 8 * s, 1);
      BarrierInit(empty0 + 8 * s, kReadersPerStage * (kClusterM + kClusterN - 1));
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Every barrier of the cluster is initialised before any CTA loads into or arrives on it.
  ClusterSync();

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (t == 0) {
      int it = 0;  // stages filled so far, across work items: the ring's position and phase
      WorkCursor cursor = FirstWork(p, cluster_id, clusters);
      WorkTile w;
      while (NextWork(p, cursor, cluster_id, rm, rn, w)) {
        for (int kt = 0; kt < w.k_tiles; ++kt, ++it) {
          const int s = it % kStages;
          if (it >= kStages) BarrierWait(empty0 + 8 * s, ((it / kStages) + 1) & 1);
          const u32 full = full0 + 8 * s;
          BarrierExpectTx(full, kStageBytes);
          const int k0 = (w.kt_begin + kt) * kTileK;
          const u32 sa = SmemAddress(smem + s * kStageBytes);
          const u32 sb = sa + kAStageBytes;
          LoadPiece<kAMN, kTileM, kClusterN>(sa, &map_a, full, w.m0, k0, w.z, rn, row_mask);
          LoadPiece<kBMN, kTileN, kClusterM>(sb, &map_b, full, w.n0, k0, w.z, rm, column_mask);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int consumer = wg - 1;
    // Releases stage s for every CTA that writes it: this CTA's cluster row and column.
    auto release = [&](int s) {
      if (t != 0) return;
#pragma unroll
      for (int j = 0; j < kClusterN; ++j) BarrierArriveCluster(empty0 + 8 * s, rm + kClusterM * j);
#pragma unroll
      for (int i = 0; i < kClusterM; ++i) {
        if (i != rm) BarrierArriveCluster(empty0 + 8 * s, i + kClusterM * rn);
      }
    };
    const int warp = t / 32;
    const int lane = t % 32;
    int it = 0;
    int local = -1;  // this cluster's work items so far: pingpong gives consumer c the c-th of two
    WorkCursor cursor = FirstWork(p, cluster_id, clusters);
    WorkTile w;
    while (NextWork(p, cursor, cluster_id, rm, rn, w)) {
      ++local;
      if (kPingPong && (local & 1) != consumer) {
        it += w.k_tiles;  // the other consumer's stages
        continue;
      }
      // Pingpong: the consumers' main loops take turns (named barriers 1 and 2), so one's
      // epilogue runs while the other's MMAs have the tensor cores.
      if (kPingPong && local > 0) NamedBarrierSync(1 + consumer);
      float acc[kRowBlocks][kTileN / 2];
#pragma unroll
      for (int b = 0; b < kRowBlocks; ++b)
#pragma unroll
        for (int i = 0; i < kTileN / 2; ++i) acc[b][i] = 0.0f;
      for (int kt = 0; kt < w.k_tiles; ++kt, ++it) {
        const int s = it % kStages;
        BarrierWait(full0 + 8 * s, (it / kStages) & 1);
        const u32 sb = SmemAddress(smem + s * kStageBytes + kAStageBytes);
        const u64 db = Descriptor(sb, kBMN ? kChunkBytes : 16);
        WgmmaFence();
#pragma unroll
        for (int b = 0; b < kRowBlocks; ++b) {
          const u32 sa =
              SmemAddress(smem + s * kStageBytes) + RowBlock(consumer, b) * 64 * kTileK * 2;
          const u64 da = Descriptor(sa, kAMN ? kChunkBytes : 16);
#pragma unroll
          for (int kk = 0; kk < kTileK / 16; ++kk)
            Wgmma(acc[b], da + kAStep * kk, db + kBStep * kk);
        }
        WgmmaCommit();
        WgmmaWait<1>();
        // The wgmma group of the previous k tile has retired: its stage may be refilled.
        if (kt > 0) release((it - 1) % kStages);
      }
      WgmmaWait<0>();
      if (w.k_tiles > 0) release((it - 1) % kStages);
      if (kPingPong && cursor.next < cursor.end) NamedBarrierArrive(2 - consumer);
      if (kStreamK && w.contributors != 1 &&
          !StreamKFixup(p, w, cluster_id, rank, consumer, t, acc[0]))
        continue;

#pragma unroll
      for (int b = 0; b < kRowBlocks; ++b) {
        const int row0 = w.m0 + RowBlock(consumer, b) * 64 + warp * 16;
        // The transposed stores need whole 16-byte columns of 8 rows: m % 8 == 0, an aligned C,
        // and beta 0 (beta * C is added in fp32 by the direct path, not after rounding).
        if (kTransposedEpilogue && p.beta == 0.0f && p.m % 8 == 0 &&
            (reinterpret_cast<u64>(p.c) & 15) == 0) {
#pragma unroll
          for (int j = 0; j < kTileN / 8; j += 2)
            StoreTransposedPair(p, w.z, row0, w.n0 + j * 8, acc[b] + j * 4, lane);
          continue;
        }
        const int row = row0 + lane / 4;
#pragma unroll
        for (int j = 0; j < kTileN / 8; ++j) {
          const int col = w.n0 + j * 8 + (lane % 4) * 2;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = row + h * 8;
            if (r < p.m && col < p.n)
              Finish2(p, w.z, w.split, r, col, acc[b][j * 4 + 2 * h], acc[b][j * 4 + 2 * h + 1]);
          }
        }
      }
    }
  }
  // No CTA leaves while a peer may still arrive on its barriers.
  if (kClusterSize > 1) ClusterSync();
}
