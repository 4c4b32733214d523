// GPU checks of tile kernels: a naive fp32 reference compiled by NVRTC, poisoned outputs, random
// inputs drawn afresh per shape; and event timing beside cuBLASLt.
#include "cli/tile_device.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/text.h"
#include "cuda/driver_api.h"
#include "cuda/nvrtc_compile.h"

namespace kselect::cli {
namespace {

using tile::TileBinary;
using tile::TileKernel;
using tile::TileKernelSpec;

#define KSELECT_CUDA_RETURN(expr)                                                              \
  do {                                                                                         \
    const cudaError_t kselect_cuda_err_ = (expr);                                              \
    if (kselect_cuda_err_ != cudaSuccess) {                                                    \
      return InternalError(std::string(#expr) + ": " + cudaGetErrorString(kselect_cuda_err_)); \
    }                                                                                          \
  } while (0)

// One verification shape; alpha/beta as given.
struct Shape {
  int64_t m, n, k, batch;
  double alpha, beta;
};
// M = 1 and M < 16 (decode), sizes prime to every tile, K not a multiple of tile_k and odd K
// (alignment 1), exact multiples, alpha/beta != 1/0, and a batch.
const std::vector<Shape>& VerifyShapes() {
  static const std::vector<Shape> shapes = {
      {1, 256, 1024, 1, 1.0, 0.0},  {13, 520, 4104, 1, 1.0, 0.0}, {127, 257, 263, 1, 1.0, 0.0},
      {256, 512, 512, 1, 1.0, 0.0}, {300, 200, 96, 1, 1.5, 0.5},  {64, 96, 80, 3, 1.0, 0.0},
  };
  return shapes;
}

constexpr const char* kReferenceSource = R"CUDA(
__device__ float In(unsigned short h, int bf16) {
  float f;
  if (bf16) { asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(h)); }
  else { asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); }
  return f;
}
extern "C" __global__ void reference_gemm(const unsigned short* a, const unsigned short* b,
    const float* c0, float* ref, int m, int n, int k, int batch, int a_row, int b_col,
    int c_row, int bf16, float alpha, float beta) {
  const long long total = (long long)m * n * batch;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const int z = (int)(i / ((long long)m * n));
    const long long rc = i % ((long long)m * n);
    const int row = (int)(rc / n), col = (int)(rc % n);
    const unsigned short* az = a + (long long)z * m * k;
    const unsigned short* bz = b + (long long)z * k * n;
    float acc = 0.0f;
    for (int kk = 0; kk < k; ++kk) {
      const float x = In(az[a_row ? (long long)row * k + kk : (long long)kk * m + row], bf16);
      const float y = In(bz[b_col ? (long long)col * k + kk : (long long)kk * n + col], bf16);
      acc = fmaf(x, y, acc);
    }
    const long long o = (long long)z * m * n + (c_row ? (long long)row * n + col : (long long)col * m + row);
    ref[o] = alpha * acc + beta * c0[o];
  }
}
)CUDA";

uint16_t ToInput(float f, DataType t) {
  if (t == DataType::kBF16) return static_cast<__nv_bfloat16_raw>(__float2bfloat16(f)).x;
  return static_cast<__half_raw>(__float2half(f)).x;
}
float FromHalfBits(uint16_t u, DataType t) {
  if (t == DataType::kBF16) {
    __nv_bfloat16_raw raw;
    raw.x = u;
    return __bfloat162float(__nv_bfloat16(raw));
  }
  __half_raw raw;
  raw.x = u;
  return __half2float(__half(raw));
}

int ElementBytes(DataType t) {
  return t == DataType::kF32 ? 4 : 2;
}

// Device buffer owned for the scope of one check.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  Status Allocate(size_t n) {
    if (n <= bytes) return Status::Ok();
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
    KSELECT_CUDA_RETURN(cudaMalloc(&ptr, std::max<size_t>(n, 256)));
    bytes = n;
    return Status::Ok();
  }
};

Status CheckGpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    return UnavailableError("no CUDA device on this host");
  }
  KSELECT_CUDA_RETURN(cudaSetDevice(0));
  KSELECT_CUDA_RETURN(cudaFree(nullptr));
  return Status::Ok();
}

GemmProblem MakeProblem(const tile::TileBuildVariant& v, const Shape& s) {
  GemmProblem p;
  p.m = s.m, p.n = s.n, p.k = s.k, p.batch = s.batch;
  p.layout = v.layout;
  p.dtype_a = p.dtype_b = v.input;
  p.dtype_c = v.output;
  p.alpha = s.alpha, p.beta = s.beta;
  return p;
}

// Inputs and the reference result of one (variant, shape), on the device.
struct Case {
  GemmProblem problem;
  DeviceBuffer a, b, c0_out, c0_f32, ref, c, workspace;
  std::vector<float> ref_host;
  std::vector<uint8_t> c0_bytes;  // C's initial contents (random when beta != 0, else poison)
};

class Reference {
 public:
  Status Init() {
    KSELECT_ASSIGN_OR_RETURN(
        cuda::CompiledModule m,
        cuda::CompileModule(kReferenceSource, "reference.cu", cuda::DefaultCompileOptions(), {}));
    KSELECT_ASSIGN_OR_RETURN(api_, cuda::GetDriverApi());
    if (api_->module_load_data(&module_, m.cubin.data()) != CUDA_SUCCESS ||
        api_->module_get_function(&fn_, module_, "reference_gemm") != CUDA_SUCCESS) {
      return InternalError("cannot load the reference kernel");
    }
    return Status::Ok();
  }

  Status Prepare(Case& c, std::mt19937& rng) {
    const GemmProblem& p = c.problem;
    const size_t na = p.batch * p.m * p.k, nb = p.batch * p.k * p.n, nc = p.batch * p.m * p.n;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> ha(na), hb(nb);
    for (auto& x : ha) x = ToInput(dist(rng), p.dtype_a);
    for (auto& x : hb) x = ToInput(dist(rng), p.dtype_b);
    const int cb = ElementBytes(p.dtype_c);
    c.c0_bytes.assign(nc * cb, 0xFF);  // poison: NaN in bf16, fp16 and fp32
    std::vector<float> c0f(nc, 0.0f);
    if (p.beta != 0.0) {
      for (size_t i = 0; i < nc; ++i) {
        float v = dist(rng);
        if (cb == 2) {
          const uint16_t u = ToInput(v, p.dtype_c);
          v = FromHalfBits(u, p.dtype_c);
          std::memcpy(&c.c0_bytes[i * 2], &u, 2);
        } else {
          std::memcpy(&c.c0_bytes[i * 4], &v, 4);
        }
        c0f[i] = v;
      }
    }
    KSELECT_RETURN_IF_ERROR(c.a.Allocate(na * 2));
    KSELECT_RETURN_IF_ERROR(c.b.Allocate(nb * 2));
    KSELECT_RETURN_IF_ERROR(c.c0_f32.Allocate(nc * 4));
    KSELECT_RETURN_IF_ERROR(c.ref.Allocate(nc * 4));
    KSELECT_RETURN_IF_ERROR(c.c.Allocate(nc * cb));
    KSELECT_CUDA_RETURN(cudaMemcpy(c.a.ptr, ha.data(), na * 2, cudaMemcpyHostToDevice));
    KSELECT_CUDA_RETURN(cudaMemcpy(c.b.ptr, hb.data(), nb * 2, cudaMemcpyHostToDevice));
    KSELECT_CUDA_RETURN(cudaMemcpy(c.c0_f32.ptr, c0f.data(), nc * 4, cudaMemcpyHostToDevice));
    int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    int batch = static_cast<int>(p.batch);
    int a_row = p.layout.a == MatrixOrder::kRowMajor, b_col = p.layout.b == MatrixOrder::kColMajor;
    int c_row = p.layout.c == MatrixOrder::kRowMajor, bf16 = p.dtype_a == DataType::kBF16;
    float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
    void* args[] = {&c.a.ptr, &c.b.ptr, &c.c0_f32.ptr, &c.ref.ptr, &m,    &n,     &k,
                    &batch,   &a_row,   &b_col,        &c_row,     &bf16, &alpha, &beta};
    CUlaunchConfig cfg{};
    cfg.gridDimX = 1024;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 256;
    cfg.blockDimY = cfg.blockDimZ = 1;
    if (api_->launch_kernel_ex(&cfg, fn_, args, nullptr) != CUDA_SUCCESS) {
      return InternalError("reference launch failed");
    }
    KSELECT_CUDA_RETURN(cudaDeviceSynchronize());
    c.ref_host.resize(nc);
    KSELECT_CUDA_RETURN(cudaMemcpy(c.ref_host.data(), c.ref.ptr, nc * 4, cudaMemcpyDeviceToHost));
    return Status::Ok();
  }

 private:
  const cuda::DriverApi* api_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};

double Tolerance(DataType out) {
  switch (out) {
    case DataType::kBF16:
      return 1e-2;
    case DataType::kF16:
      return 2e-3;
    default:
      return 5e-4;
  }
}

// Runs one kernel on one case; returns the relative Frobenius error (NaN when any output is not
// finite, which includes elements left poisoned).
StatusOr<double> RunCheck(const TileKernel& kernel, Case& c) {
  const GemmProblem& p = c.problem;
  const size_t nc = p.batch * p.m * p.n;
  KSELECT_CUDA_RETURN(
      cudaMemcpy(c.c.ptr, c.c0_bytes.data(), c.c0_bytes.size(), cudaMemcpyHostToDevice));
  const size_t ws = tile::WorkspaceBytes(kernel.spec(), p);
  KSELECT_RETURN_IF_ERROR(c.workspace.Allocate(ws));
  tile::GemmArguments args{c.a.ptr, c.b.ptr, c.c.ptr, ws ? c.workspace.ptr : nullptr, nullptr};
  KSELECT_RETURN_IF_ERROR(kernel.Launch(p, args));
  KSELECT_CUDA_RETURN(cudaGetLastError());
  KSELECT_CUDA_RETURN(cudaDeviceSynchronize());
  std::vector<uint8_t> out(c.c0_bytes.size());
  KSELECT_CUDA_RETURN(cudaMemcpy(out.data(), c.c.ptr, out.size(), cudaMemcpyDeviceToHost));
  double err = 0, norm = 0;
  for (size_t i = 0; i < nc; ++i) {
    float v;
    if (p.dtype_c == DataType::kF32) {
      std::memcpy(&v, &out[i * 4], 4);
    } else {
      uint16_t u;
      std::memcpy(&u, &out[i * 2], 2);
      v = FromHalfBits(u, p.dtype_c);
    }
    if (!std::isfinite(v)) return std::nan("");
    const double d = static_cast<double>(v) - c.ref_host[i];
    err += d * d;
    norm += static_cast<double>(c.ref_host[i]) * c.ref_host[i];
  }
  return norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
}

}  // namespace

int RunTileVerify(const tile::TileRuleSet& rules, const tile::CompilerOptions& compiler_options,
                  bool fail_fast, const std::string& log_path) {
  if (Status s = CheckGpu(); !s.ok()) return ReportError("tile verify", s);
  Reference reference;
  if (Status s = reference.Init(); !s.ok()) return ReportError("tile verify", s);
  const tile::TileCompiler compiler(compiler_options);
  std::ofstream log;
  if (!log_path.empty()) log.open(log_path);
  std::mt19937 rng(20261122);
  int total_checks = 0, total_failures = 0, total_skipped = 0;
  for (const tile::TileBuildVariant& variant : rules.variants) {
    // Every (config, shape) spec of this variant, compiled in parallel up front.
    std::vector<TileKernelSpec> specs;
    std::map<std::string, size_t> index;
    std::vector<std::vector<int64_t>> spec_of(rules.configs.size());
    for (size_t ci = 0; ci < rules.configs.size(); ++ci) {
      for (const Shape& shape : VerifyShapes()) {
        StatusOr<TileKernelSpec> spec =
            tile::SpecForProblem(rules.configs[ci], MakeProblem(variant, shape));
        if (!spec.ok() || !tile::CheckValid(*spec).ok()) {
          spec_of[ci].push_back(-1);
          continue;
        }
        const std::string key = tile::SpecKey(*spec);
        auto [it, inserted] = index.emplace(key, specs.size());
        if (inserted) specs.push_back(*spec);
        spec_of[ci].push_back(static_cast<int64_t>(it->second));
      }
    }
    std::vector<StatusOr<TileBinary>> binaries = compiler.CompileAll(specs);
    std::vector<std::unique_ptr<TileKernel>> kernels(specs.size());
    int failures = 0, checks = 0, skipped = 0;
    double worst = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!binaries[i].ok()) {
        std::fprintf(stderr, "compile failed: %s\n", binaries[i].status().ToString().c_str());
        ++failures;
        continue;
      }
      StatusOr<std::unique_ptr<TileKernel>> k = TileKernel::Load(*binaries[i]);
      if (!k.ok()) {
        std::fprintf(stderr, "load failed: %s\n", k.status().ToString().c_str());
        ++failures;
        continue;
      }
      kernels[i] = std::move(k).value();
    }
    for (size_t si = 0; si < VerifyShapes().size(); ++si) {
      Case c;
      c.problem = MakeProblem(variant, VerifyShapes()[si]);
      if (Status s = reference.Prepare(c, rng); !s.ok()) return ReportError("tile verify", s);
      for (size_t ci = 0; ci < rules.configs.size(); ++ci) {
        const int64_t idx = spec_of[ci][si];
        if (idx < 0 || !kernels[idx]) {
          ++skipped;
          continue;
        }
        if (!tile::CanImplement(specs[idx], c.problem).ok()) {
          ++skipped;
          continue;
        }
        ++checks;
        StatusOr<double> err = RunCheck(*kernels[idx], c);
        const bool pass = err.ok() && std::isfinite(*err) && *err <= Tolerance(variant.output);
        if (err.ok() && std::isfinite(*err)) worst = std::max(worst, *err);
        if (log.is_open()) {
          log << (pass ? "PASS " : "FAIL ") << c.problem.ToString() << " | "
              << tile::SpecKey(specs[idx])
              << " | err=" << (err.ok() ? std::to_string(*err) : err.status().ToString()) << "\n";
        }
        if (!pass) {
          ++failures;
          std::fprintf(stderr, "FAIL %s | %s | %s\n", c.problem.ToString().c_str(),
                       tile::SpecKey(specs[idx]).c_str(),
                       err.ok() ? std::to_string(*err).c_str() : err.status().ToString().c_str());
          if (!err.ok()) {
            // A launch error poisons the context: stop here.
            return ReportError("tile verify", err.status());
          }
          if (fail_fast) return kExitFailure;
        }
      }
    }
    std::printf(
        "verify %s in=%s out=%s layout=%s: %zu specs, %d checks, %d failed, %d skipped, "
        "worst rel err %.2e (tol %.0e)\n",
        rules.name.c_str(), std::string(DataTypeName(variant.input)).c_str(),
        std::string(DataTypeName(variant.output)).c_str(), variant.layout.ToString().c_str(),
        specs.size(), checks, failures, skipped, worst, Tolerance(variant.output));
    std::fflush(stdout);
    total_checks += checks;
    total_failures += failures;
    total_skipped += skipped;
  }
  std::printf("verify %s: %d checks, %d failed, %d skipped (config cannot run the shape)\n",
              rules.name.c_str(), total_checks, total_failures, total_skipped);
  return total_failures == 0 ? kExitOk : kExitFailure;
}

namespace {

// Median of event-timed launches of `launch`, after warm-up; milliseconds.
template <typename Launch>
StatusOr<double> MedianMs(Launch&& launch, int repeats) {
  for (int i = 0; i < 3; ++i) KSELECT_RETURN_IF_ERROR(launch());
  KSELECT_CUDA_RETURN(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  KSELECT_CUDA_RETURN(cudaEventCreate(&start));
  KSELECT_CUDA_RETURN(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    KSELECT_CUDA_RETURN(cudaEventRecord(start));
    KSELECT_RETURN_IF_ERROR(launch());
    KSELECT_CUDA_RETURN(cudaEventRecord(stop));
    KSELECT_CUDA_RETURN(cudaEventSynchronize(stop));
    float t = 0;
    KSELECT_CUDA_RETURN(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  KSELECT_CUDA_RETURN(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

cudaDataType_t CudaType(DataType t) {
  return t == DataType::kBF16 ? CUDA_R_16BF : t == DataType::kF16 ? CUDA_R_16F : CUDA_R_32F;
}

// cuBLASLt's first heuristic pick for a row-major-C problem, run as C^T = B^T A^T (col-major).
StatusOr<double> TimeCublasLt(const GemmProblem& p, void* a, void* b, void* c, int repeats) {
  if (p.layout.c != MatrixOrder::kRowMajor) return UnavailableError("C must be row-major");
  cublasLtHandle_t handle;
  if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) return InternalError("cublasLtCreate");
  const bool b_row = p.layout.b == MatrixOrder::kRowMajor;
  const bool a_row = p.layout.a == MatrixOrder::kRowMajor;
  cublasOperation_t op_x = b_row ? CUBLAS_OP_N : CUBLAS_OP_T;  // X = B^T (n x k)
  cublasOperation_t op_y = a_row ? CUBLAS_OP_N : CUBLAS_OP_T;  // Y = A^T (k x m)
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x, sizeof(op_x));
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y, sizeof(op_y));
  cublasLtMatrixLayout_t lx, ly, lc;
  const cudaDataType_t in = CudaType(p.dtype_a), out = CudaType(p.dtype_c);
  // Stored shapes (rows x cols, col-major) before the op.
  cublasLtMatrixLayoutCreate(&lx, in, b_row ? p.n : p.k, b_row ? p.k : p.n, b_row ? p.n : p.k);
  cublasLtMatrixLayoutCreate(&ly, in, a_row ? p.k : p.m, a_row ? p.m : p.k, a_row ? p.k : p.m);
  cublasLtMatrixLayoutCreate(&lc, out, p.n, p.m, p.n);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws_bytes = 64 << 20;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                       sizeof(ws_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(handle, desc, lx, ly, lc, lc, pref, 1, &result, &found);
  if (found == 0) return InternalError("cuBLASLt found no algorithm");
  DeviceBuffer ws;
  KSELECT_RETURN_IF_ERROR(ws.Allocate(ws_bytes));
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  StatusOr<double> ms = MedianMs(
      [&]() -> Status {
        if (cublasLtMatmul(handle, desc, &alpha, b, lx, a, ly, &beta, c, lc, c, lc, &result.algo,
                           ws.ptr, ws_bytes, nullptr) != CUBLAS_STATUS_SUCCESS) {
          return InternalError("cublasLtMatmul failed");
        }
        return Status::Ok();
      },
      repeats);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(lx);
  cublasLtMatrixLayoutDestroy(ly);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(handle);
  return ms;
}

}  // namespace

int RunTileTime(const tile::TileRuleSet& rules, const tile::CompilerOptions& compiler_options,
                const std::string& shape_text, int repeats) {
  if (Status s = CheckGpu(); !s.ok()) return ReportError("tile time", s);
  const std::vector<std::string_view> parts = text::Split(shape_text, ',');
  if (parts.size() != 3) return ReportError("tile time", InvalidArgumentError("--shape m,n,k"));
  Shape shape{0, 0, 0, 1, 1.0, 0.0};
  int64_t* dims[] = {&shape.m, &shape.n, &shape.k};
  for (int i = 0; i < 3; ++i) {
    StatusOr<int64_t> v = text::ParseInt64(parts[i]);
    if (!v.ok()) return ReportError("tile time", v.status());
    *dims[i] = *v;
  }
  const tile::TileCompiler compiler(compiler_options);
  std::mt19937 rng(7);
  for (const tile::TileBuildVariant& variant : rules.variants) {
    const GemmProblem p = MakeProblem(variant, shape);
    std::vector<TileKernelSpec> specs;
    for (const TileConfig& c : rules.configs) {
      StatusOr<TileKernelSpec> spec = tile::SpecForProblem(c, p);
      if (spec.ok() && tile::CheckValid(*spec).ok() && tile::CanImplement(*spec, p).ok()) {
        specs.push_back(*spec);
      }
    }
    const auto binaries = compiler.CompileAll(specs);
    DeviceBuffer a, b, c, ws;
    const size_t na = p.m * p.k, nb = p.k * p.n, nc = p.m * p.n;
    if (!a.Allocate(na * 2).ok() || !b.Allocate(nb * 2).ok() ||
        !c.Allocate(nc * ElementBytes(p.dtype_c)).ok()) {
      return ReportError("tile time", InternalError("allocation failed"));
    }
    {
      // Random inputs (never zeros: they run faster than real data).
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<uint16_t> host(std::max(na, nb));
      for (auto& x : host) x = ToInput(dist(rng), p.dtype_a);
      cudaMemcpy(a.ptr, host.data(), na * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(b.ptr, host.data(), nb * 2, cudaMemcpyHostToDevice);
    }
    struct Row {
      double tflops;
      std::string key;
    };
    std::vector<Row> rows;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!binaries[i].ok()) continue;
      StatusOr<std::unique_ptr<TileKernel>> kernel = TileKernel::Load(*binaries[i]);
      if (!kernel.ok()) continue;
      const size_t wsb = tile::WorkspaceBytes(specs[i], p);
      if (!ws.Allocate(wsb).ok()) continue;
      tile::GemmArguments args{a.ptr, b.ptr, c.ptr, wsb ? ws.ptr : nullptr, nullptr};
      StatusOr<double> ms = MedianMs([&] { return (*kernel)->Launch(p, args); }, repeats);
      if (!ms.ok()) return ReportError("tile time", ms.status());
      rows.push_back({p.Flops() / (*ms * 1e-3) / 1e12, tile::SpecKey(specs[i])});
    }
    std::sort(rows.begin(), rows.end(),
              [](const Row& x, const Row& y) { return x.tflops > y.tflops; });
    StatusOr<double> lt = TimeCublasLt(p, a.ptr, b.ptr, c.ptr, repeats);
    const double lt_tflops = lt.ok() ? p.Flops() / (*lt * 1e-3) / 1e12 : 0.0;
    std::printf("time %s: %zu configs timed; cuBLASLt first heuristic pick %.1f TFLOP/s%s\n",
                p.ToString().c_str(), rows.size(), lt_tflops,
                lt.ok() ? "" : (" (" + lt.status().ToString() + ")").c_str());
    for (size_t i = 0; i < std::min<size_t>(rows.size(), 8); ++i) {
      std::printf("  %7.1f TFLOP/s  %5.1f%% of cuBLASLt  %s\n", rows[i].tflops,
                  lt_tflops > 0 ? 100.0 * rows[i].tflops / lt_tflops : 0.0, rows[i].key.c_str());
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace kselect::cli
