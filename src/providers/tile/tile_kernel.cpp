// Loading a tile module into the current context and launching it through the driver API.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "cuda/driver_api.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

namespace kselect::tile {
namespace {

// Mirrors `struct Params` in kernels/prelude.cuh, field for field.
struct KernelParams {
  const void* a;
  const void* b;
  void* c;
  float* workspace;
  int32_t m, n, k;
  int32_t batch;
  int32_t k_tiles_per_split;
  float alpha, beta;
  int32_t sk_dp_tiles, sk_tiles, sk_clusters, sk_flag_words;
};

Status DriverStatus(const cuda::DriverApi& api, CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  return InternalError(what + ": " + cuda::DriverErrorText(api, result));
}

// The TMA descriptor of one operand: `rows` rows of `inner` contiguous elements per batch, boxes
// of box_inner x box_rows, 128-byte swizzle (matching the kernel's wgmma descriptors). K-major
// operands: inner = k, box tile_k x tile rows; MN-major: inner = m or n, box 64 x tile_k.
Status EncodeOperand(const cuda::DriverApi& api, CUtensorMap* map, const void* base, DataType type,
                     int64_t inner, int64_t rows, int64_t batch, int32_t box_inner,
                     int32_t box_rows) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(inner * 2),
                                 static_cast<cuuint64_t>(inner * rows * 2)};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner), static_cast<cuuint32_t>(box_rows),
                             1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult result = api.tensor_map_encode_tiled(
      map,
      type == DataType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      3, const_cast<void*>(base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return DriverStatus(api, result, "cuTensorMapEncodeTiled");
}

// The launch attribute of a config's cluster: cluster_m x cluster_n CTAs, consecutive along x
// (warp_specialized.cuh reads the rank as (rank % cluster_m, rank / cluster_m)).
CUlaunchAttribute ClusterAttribute(const TileConfig& c) {
  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = static_cast<unsigned>(c.cluster_m * c.cluster_n);
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  return cluster;
}

bool Aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

}  // namespace

TileKernel::~TileKernel() {
  if (module_ == nullptr) return;
  if (StatusOr<const cuda::DriverApi*> api = cuda::GetDriverApi(); api.ok()) {
    (*api)->module_unload(static_cast<CUmodule>(module_));
  }
}

StatusOr<std::unique_ptr<TileKernel>> TileKernel::Load(const TileBinary& binary) {
  KSELECT_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::GetDriverApi());
  std::unique_ptr<TileKernel> kernel(new TileKernel());
  kernel->spec_ = binary.spec;
  CUmodule module = nullptr;
  CUresult result = api->module_load_data(&module, binary.cubin.data());
  if (result != CUDA_SUCCESS) {
    return InvalidArgumentError("loading tile cubin " + binary.cache_key.substr(0, 12) + ": " +
                                cuda::DriverErrorText(*api, result));
  }
  kernel->module_ = module;
  CUfunction gemm = nullptr;
  CUfunction reduce = nullptr;
  KSELECT_RETURN_IF_ERROR(DriverStatus(
      *api, api->module_get_function(&gemm, module, kGemmKernelName), "cuModuleGetFunction"));
  KSELECT_RETURN_IF_ERROR(
      DriverStatus(*api, api->module_get_function(&reduce, module, kSplitKReduceKernelName),
                   "cuModuleGetFunction"));
  const LaunchShape shape = LaunchShapeOf(binary.spec);
  if (shape.shared_bytes > 0) {
    KSELECT_RETURN_IF_ERROR(
        DriverStatus(*api,
                     api->func_set_attribute(gemm, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             shape.shared_bytes),
                     "cuFuncSetAttribute(max dynamic shared memory)"));
  }
  kernel->gemm_ = gemm;
  kernel->reduce_ = reduce;
  const TileConfig& c = binary.spec.config;
  if (c.scheduler != TileScheduler::kDataParallel) {
    // A persistent grid is as many clusters as are resident at once: asked of the driver, which
    // knows the SM count, the GPCs clusters must fit in and this kernel's shared memory.
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(c.cluster_m * c.cluster_n);
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = static_cast<unsigned>(shape.threads);
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = static_cast<unsigned>(shape.shared_bytes);
    CUlaunchAttribute cluster = ClusterAttribute(c);
    config.attrs = &cluster;
    config.numAttrs = 1;
    int clusters = 0;
    KSELECT_RETURN_IF_ERROR(
        DriverStatus(*api, api->occupancy_max_active_clusters(&clusters, gemm, &config),
                     "cuOccupancyMaxActiveClusters"));
    if (clusters < 1) {
      return InvalidArgumentError("tile kernel " + binary.cache_key.substr(0, 12) +
                                  ": no cluster of it fits on this GPU");
    }
    kernel->resident_clusters_ = clusters;
  }
  return kernel;
}

Status TileKernel::Launch(const GemmProblem& problem, const GemmArguments& args) const {
  KSELECT_RETURN_IF_ERROR(CanImplement(spec_, problem));
  if (!Aligned(args.a, 16) || !Aligned(args.b, 16) ||
      !Aligned(args.c, spec_.output == DataType::kF32 ? 4 : 2)) {
    return CannotImplementError("A and B must be 16-byte aligned, C element aligned");
  }
  const size_t workspace = WorkspaceBytes(spec_, problem);
  if (workspace > 0 && (args.workspace == nullptr || !Aligned(args.workspace, 16))) {
    return InvalidArgumentError(std::string(spec_.config.split_k > 1 ? "split-K" : "stream-K") +
                                " needs a 16-byte aligned workspace of " +
                                std::to_string(workspace) + " bytes");
  }
  KSELECT_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::GetDriverApi());
  const TileConfig& c = spec_.config;
  const int64_t tiles_m = (problem.m + c.tile_m - 1) / c.tile_m;
  const int64_t tiles_n = (problem.n + c.tile_n - 1) / c.tile_n;
  const int64_t cluster_size = c.cluster_m * c.cluster_n;
  // Stream-K's grid and split (all work ids whole, and no workspace, when they come out even).
  int64_t streamk_clusters = 0;
  StreamKLayout streamk;
  if (c.scheduler == TileScheduler::kStreamK) {
    streamk_clusters = StreamKClusters(c, problem, resident_clusters_);
    streamk = StreamKLayoutOf(c, problem, streamk_clusters);
  }
  KernelParams params{args.a,
                      args.b,
                      args.c,
                      static_cast<float*>(args.workspace),
                      static_cast<int32_t>(problem.m),
                      static_cast<int32_t>(problem.n),
                      static_cast<int32_t>(problem.k),
                      static_cast<int32_t>(problem.batch),
                      KTilesPerSplit(c, problem),
                      static_cast<float>(problem.alpha),
                      static_cast<float>(problem.beta),
                      streamk.dp_tiles,
                      streamk.sk_tiles,
                      streamk.sk_clusters,
                      streamk.flag_words};
  void* kernel_args[] = {&params, nullptr, nullptr};
  CUtensorMap map_a, map_b;
  if (spec_.config.pipeline == TilePipeline::kWarpSpecialized) {
    const TileConfig& t = spec_.config;
    // Inside a cluster each CTA loads its piece of the shared operand (warp_specialized.cuh):
    // a K-major box of tile / cluster rows.
    if (spec_.layout.a == MatrixOrder::kRowMajor) {
      KSELECT_RETURN_IF_ERROR(EncodeOperand(*api, &map_a, args.a, spec_.input, problem.k, problem.m,
                                            problem.batch, t.tile_k, t.tile_m / t.cluster_n));
    } else {
      KSELECT_RETURN_IF_ERROR(EncodeOperand(*api, &map_a, args.a, spec_.input, problem.m, problem.k,
                                            problem.batch, 64, t.tile_k));
    }
    if (spec_.layout.b == MatrixOrder::kColMajor) {
      KSELECT_RETURN_IF_ERROR(EncodeOperand(*api, &map_b, args.b, spec_.input, problem.k, problem.n,
                                            problem.batch, t.tile_k, t.tile_n / t.cluster_m));
    } else {
      KSELECT_RETURN_IF_ERROR(EncodeOperand(*api, &map_b, args.b, spec_.input, problem.n, problem.k,
                                            problem.batch, 64, t.tile_k));
    }
    kernel_args[1] = &map_a;
    kernel_args[2] = &map_b;
  }

  const LaunchShape shape = LaunchShapeOf(spec_);
  CUlaunchConfig config{};
  if (c.pipeline == TilePipeline::kSmallM) {
    config.gridDimX = static_cast<unsigned>(tiles_n);
    config.gridDimY = static_cast<unsigned>(tiles_m);
  } else if (c.pipeline == TilePipeline::kDecode) {
    // One block per tile_m weight rows; the rows are m with the tokens in n, else n.
    const int64_t rows = problem.n <= c.tile_n ? problem.m : problem.n;
    config.gridDimX = static_cast<unsigned>((rows + c.tile_m - 1) / c.tile_m);
    config.gridDimY = 1;
  } else if (c.pipeline == TilePipeline::kWarpSpecialized) {
    // Whole clusters of cluster_m x cluster_n tiles (edge CTAs past m or n load zeros, store
    // nothing and still multicast their pieces); persistent grids stride over all of them.
    const int64_t clusters = ClustersPerSlice(c, problem);
    if (c.scheduler == TileScheduler::kStreamK) {
      config.gridDimX = static_cast<unsigned>(streamk_clusters * cluster_size);
    } else if (c.scheduler != TileScheduler::kDataParallel) {
      const int64_t work = clusters * problem.batch * c.split_k;
      config.gridDimX =
          static_cast<unsigned>(std::min<int64_t>(work, resident_clusters_) * cluster_size);
    } else {
      config.gridDimX = static_cast<unsigned>(clusters * cluster_size);
    }
    config.gridDimY = 1;
  } else {
    config.gridDimX = static_cast<unsigned>(tiles_m * tiles_n);
    config.gridDimY = 1;
  }
  config.gridDimZ = c.scheduler != TileScheduler::kDataParallel
                        ? 1u
                        : static_cast<unsigned>(problem.batch * c.split_k);
  config.blockDimX = static_cast<unsigned>(shape.threads);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = static_cast<unsigned>(shape.shared_bytes);
  config.hStream = static_cast<CUstream>(args.stream);
  // The decode family waits for the preceding grid itself (griddepcontrol.wait, decode.cuh), so
  // it may be launched before that grid ends: its launch and L2 prefetch overlap the other's tail.
  CUlaunchAttribute programmatic{};
  programmatic.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  programmatic.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchAttribute cluster = ClusterAttribute(c);
  if (c.pipeline == TilePipeline::kDecode) {
    config.attrs = &programmatic;
    config.numAttrs = 1;
  } else if (c.cluster_m * c.cluster_n > 1) {
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  if (streamk.sk_tiles > 0) {
    // The partials' flags start lowered (warp_specialized.cuh).
    KSELECT_RETURN_IF_ERROR(
        DriverStatus(*api,
                     api->memset_d32_async(reinterpret_cast<CUdeviceptr>(args.workspace), 0,
                                           static_cast<size_t>(streamk.flag_words), config.hStream),
                     "cuMemsetD32Async (stream-K flags)"));
  }
  KSELECT_RETURN_IF_ERROR(DriverStatus(
      *api, api->launch_kernel_ex(&config, static_cast<CUfunction>(gemm_), kernel_args, nullptr),
      "launching " + std::string(kGemmKernelName)));
  if (c.split_k > 1) {
    const int64_t total = problem.batch * problem.m * problem.n;
    CUlaunchConfig reduce{};
    reduce.gridDimX = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 4096));
    reduce.gridDimY = reduce.gridDimZ = 1;
    reduce.blockDimX = 256;
    reduce.blockDimY = reduce.blockDimZ = 1;
    reduce.hStream = config.hStream;
    KSELECT_RETURN_IF_ERROR(DriverStatus(
        *api,
        api->launch_kernel_ex(&reduce, static_cast<CUfunction>(reduce_), kernel_args, nullptr),
        "launching " + std::string(kSplitKReduceKernelName)));
  }
  return Status::Ok();
}

}  // namespace kselect::tile
