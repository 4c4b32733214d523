// Embedding kselect in a C++ application: open a model directory once, ask it for the kernel of
// a few LLM GEMMs, and, where there is a GPU, run them through kselect::Gemm and check the
// result against cuBLASLt's default algorithm (fp32 output) on the same inputs.
//
//   select_gemm <model dir>
//
// Exits 0 when every check passes (or there is no GPU to run on), 1 otherwise.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kselect/selector.h"

namespace {

// PyTorch's nn.Linear (y = x W^T, row-major tensors) reaches cuBLASLt as TN: m = out features,
// n = tokens, k = in features; A = W (m x k row-major), B = x (k x n column-major, which is
// tokens x in row-major), C = y (m x n column-major: tokens x out row-major). In kselect's
// layout letters (A, B, C) that is "rcc". The sizes are Llama-3-8B's projections.
struct LlmGemm {
  const char* what;
  int64_t m, n, k;
};
constexpr LlmGemm kGemms[] = {
    {"decode, attention q/o projection, 16 tokens", 4096, 16, 4096},
    {"decode, MLP down projection, 1 token", 4096, 1, 14336},
    {"prefill, MLP gate/up projection, 2048 tokens", 14336, 2048, 4096},
    {"prefill, MLP down projection, 2048 tokens", 4096, 2048, 14336},
};

// Workspace handed to every GEMM: the selector's default limit, so no config is skipped for it.
constexpr int64_t kWorkspaceBytes = 32ll << 20;
// A bf16 output is rounded to 8 mantissa bits (half an ulp is up to 2^-8 relative); the
// accumulation order differs between kernels too. 4x margin over the rounding.
constexpr double kTolerance = 1.6e-2;

kselect::GemmProblem ToProblem(const LlmGemm& gemm) {
  kselect::GemmProblem problem;  // bf16 A, B and C, fp32 accumulation, alpha 1, beta 0
  problem.m = gemm.m;
  problem.n = gemm.n;
  problem.k = gemm.k;
  problem.layout = kselect::ParseGemmLayout("rcc").value();
  return problem;
}

void PrintSelection(const LlmGemm& gemm, const kselect::Selection& selection) {
  std::printf("%s: m=%lld n=%lld k=%lld bf16 rcc\n", gemm.what, static_cast<long long>(gemm.m),
              static_cast<long long>(gemm.n), static_cast<long long>(gemm.k));
  std::printf("  decided by: %s",
              std::string(kselect::DecisionPathName(selection.decided_by)).c_str());
  if (selection.path != selection.decided_by) {
    std::printf(" (answered from the %s)",
                std::string(kselect::DecisionPathName(selection.path)).c_str());
  }
  std::printf(", %zu of %zu candidates scored%s\n", selection.candidates_scored,
              selection.candidates_considered,
              selection.can_implement_checked ? ", checked on this GPU" : "");
  if (!selection.note.empty()) std::printf("  note: %s\n", selection.note.c_str());
  const size_t shown = std::min<size_t>(3, selection.ranked.size());
  for (size_t i = 0; i < shown; ++i) {
    const kselect::RankedConfig& ranked = selection.ranked[i];
    std::printf("  %zu. %-56s score %9.4g", i + 1, kselect::DescribeConfig(ranked.config).c_str(),
                ranked.score);
    if (ranked.predicted_tflops) std::printf("  predicted %6.1f TFLOPS", *ranked.predicted_tflops);
    std::printf("\n");
  }
}

// ------------------------------------------------------------------------------------ GPU part

uint16_t ToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even (inputs are finite)
  return static_cast<uint16_t>(bits >> 16);
}

float FromBf16(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// Random non-zero values of magnitude 1/16 to 1 with random signs (zeros can make kernels look
// faster, and exact cancellations hide wrong results).
std::vector<uint16_t> RandomBf16(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> magnitude(1.0f / 16, 1.0f);
  std::vector<uint16_t> out(count);
  for (uint16_t& value : out) {
    const float sign = (rng() & 1) ? 1.0f : -1.0f;
    value = ToBf16(sign * magnitude(rng));
  }
  return out;
}

#define CHECK_CUDA(call)                                                         \
  do {                                                                           \
    const cudaError_t error = (call);                                            \
    if (error != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(error)); \
      return false;                                                              \
    }                                                                            \
  } while (0)
#define CHECK_CUBLAS(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t status = (call);                                                     \
    if (status != CUBLAS_STATUS_SUCCESS) {                                                    \
      std::fprintf(stderr, "%s failed: cuBLAS status %d\n", #call, static_cast<int>(status)); \
      return false;                                                                           \
    }                                                                                         \
  } while (0)

// Device memory released when it goes out of scope.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};

// D (fp32, m x n column-major) = A^T B with cuBLASLt's own choice of algorithm: the reference.
bool ReferenceGemm(cublasLtHandle_t handle, const kselect::GemmProblem& p, const void* a,
                   const void* b, float* d, void* workspace) {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, d_layout = nullptr;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                              sizeof(transpose)));
  // A row-major m x k is column-major k x m, transposed by the op; B column-major k x n.
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout, CUDA_R_16BF, p.k, p.m, p.k));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b_layout, CUDA_R_16BF, p.k, p.n, p.k));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d_layout, CUDA_R_32F, p.m, p.n, p.m));
  const float alpha = 1.0f, beta = 0.0f;
  // No algorithm given: cuBLASLt runs its heuristic and takes its first answer.
  const cublasStatus_t status =
      cublasLtMatmul(handle, desc, &alpha, a, a_layout, b, b_layout, &beta, d, d_layout, d,
                     d_layout, nullptr, workspace, kWorkspaceBytes, nullptr);
  cublasLtMatrixLayoutDestroy(d_layout);
  cublasLtMatrixLayoutDestroy(b_layout);
  cublasLtMatrixLayoutDestroy(a_layout);
  cublasLtMatmulDescDestroy(desc);
  CHECK_CUBLAS(status);
  return true;
}

// Runs `gemm` through kselect::Gemm, checks it against the reference and times it. False when
// anything failed or the result is wrong.
bool RunAndCheck(kselect::Selector& selector, cublasLtHandle_t handle, const LlmGemm& gemm,
                 std::mt19937& rng) {
  const kselect::GemmProblem problem = ToProblem(gemm);
  const size_t a_count = static_cast<size_t>(gemm.m * gemm.k);
  const size_t b_count = static_cast<size_t>(gemm.k * gemm.n);
  const size_t c_count = static_cast<size_t>(gemm.m * gemm.n);
  const std::vector<uint16_t> a = RandomBf16(a_count, rng);
  const std::vector<uint16_t> b = RandomBf16(b_count, rng);

  DeviceBuffer d_a, d_b, d_c, d_ref, d_workspace;
  CHECK_CUDA(cudaMalloc(&d_a.ptr, a_count * 2));
  CHECK_CUDA(cudaMalloc(&d_b.ptr, b_count * 2));
  CHECK_CUDA(cudaMalloc(&d_c.ptr, c_count * 2));
  CHECK_CUDA(cudaMalloc(&d_ref.ptr, c_count * 4));
  CHECK_CUDA(cudaMalloc(&d_workspace.ptr, kWorkspaceBytes));
  CHECK_CUDA(cudaMemcpy(d_a.ptr, a.data(), a_count * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_b.ptr, b.data(), b_count * 2, cudaMemcpyHostToDevice));
  // NaN bytes: an element the kernel leaves unwritten cannot pass.
  CHECK_CUDA(cudaMemset(d_c.ptr, 0xFF, c_count * 2));

  const kselect::StatusOr<kselect::DispatchInfo> info = kselect::Gemm(
      selector, problem, d_a.ptr, d_b.ptr, d_c.ptr, d_workspace.ptr, kWorkspaceBytes, nullptr);
  if (!info.ok()) {
    std::fprintf(stderr, "  kselect::Gemm failed: %s\n", info.status().ToString().c_str());
    return false;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  if (!ReferenceGemm(handle, problem, d_a.ptr, d_b.ptr, static_cast<float*>(d_ref.ptr),
                     d_workspace.ptr)) {
    return false;
  }
  CHECK_CUDA(cudaDeviceSynchronize());

  std::vector<uint16_t> c(c_count);
  std::vector<float> ref(c_count);
  CHECK_CUDA(cudaMemcpy(c.data(), d_c.ptr, c_count * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(ref.data(), d_ref.ptr, c_count * 4, cudaMemcpyDeviceToHost));
  // Relative to max(|ref|, rms(ref)), so elements near zero do not dominate.
  double sum_squares = 0;
  for (float value : ref) sum_squares += static_cast<double>(value) * value;
  const double rms = std::sqrt(sum_squares / static_cast<double>(c_count));
  double max_error = 0;
  for (size_t i = 0; i < c_count; ++i) {
    const double out = FromBf16(c[i]);
    const double error =
        std::isfinite(out)
            ? std::fabs(out - ref[i]) / std::max(std::fabs(static_cast<double>(ref[i])), rms)
            : INFINITY;
    max_error = std::max(max_error, error);
  }

  // Time the dispatch as the application calls it (the prepared kernel is cached by now).
  constexpr int kRepeats = 20;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < kRepeats; ++i) {
    const auto timed = kselect::Gemm(selector, problem, d_a.ptr, d_b.ptr, d_c.ptr, d_workspace.ptr,
                                     kWorkspaceBytes, nullptr);
    if (!timed.ok()) {
      std::fprintf(stderr, "  kselect::Gemm failed: %s\n", timed.status().ToString().c_str());
      return false;
    }
  }
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float total_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&total_ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double ms = total_ms / kRepeats;

  const bool passed = max_error <= kTolerance;
  std::printf("  ran rank %d (%s): %.4f ms, %.1f TFLOPS; max rel error %.3e (tol %.1e): %s\n",
              info->rank, kselect::DescribeConfig(info->config).c_str(), ms,
              problem.Flops() / (ms * 1e-3) / 1e12, max_error, kTolerance,
              passed ? "PASS" : "FAIL");
  if (!info->note.empty()) std::printf("  dispatch note: %s\n", info->note.c_str());
  return passed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <model dir>\n", argv[0]);
    return 2;
  }
  kselect::SelectorOptions options;
  options.top_k = 3;
  kselect::StatusOr<std::unique_ptr<kselect::Selector>> selector =
      kselect::Selector::Open(argv[1], options);
  if (!selector.ok()) {
    std::fprintf(stderr, "cannot open the model: %s\n", selector.status().ToString().c_str());
    return 1;
  }

  int devices = 0;
  const bool have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cublasLtHandle_t handle = nullptr;
  if (have_gpu && cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasLtCreate failed\n");
    return 1;
  }
  std::mt19937 rng(2024);
  int failed = 0;
  for (const LlmGemm& gemm : kGemms) {
    const kselect::StatusOr<const kselect::Selection*> selection =
        (*selector)->Select(ToProblem(gemm));
    if (!selection.ok()) {
      std::fprintf(stderr, "%s: %s\n", gemm.what, selection.status().ToString().c_str());
      ++failed;
      continue;
    }
    PrintSelection(gemm, **selection);
    if (have_gpu && !RunAndCheck(**selector, handle, gemm, rng)) ++failed;
  }
  if (handle != nullptr) cublasLtDestroy(handle);
  if (!have_gpu) std::printf("no GPU here: the dispatch part (kselect::Gemm) was skipped\n");
  std::printf("%s\n", failed == 0 ? "PASS" : "FAIL");
  return failed == 0 ? 0 : 1;
}
