// The preloaded layer's logic on the GPU, in process: the real cublasLtMatmul under the layer,
// on an application's own descriptors, heuristic algo and buffers. Skipped without a GPU (the
// preloaded path itself is checked by tests/layer/preload_check.sh on the device).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "kselect/hardware.h"
#include "kselect/provenance.h"
#include "kselect/provider.h"
#include "kselect/solutions.h"
#include "layer/layer.h"
#include "nlohmann/json.hpp"
#include "testing_util.h"

namespace kselect::layer {
namespace {

namespace fs = std::filesystem;

constexpr size_t kWorkspaceBytes = 32u << 20;

// `count` random bf16 values in [-1, 1] in device memory (the caller frees it).
void* RandomDevice(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<__nv_bfloat16> host(static_cast<size_t>(count));
  for (auto& v : host) v = __float2bfloat16(dist(rng));
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * 2), cudaSuccess);
  cudaMemcpy(device, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  return device;
}

// One bf16 TN GEMM as an application sets it up: descriptors, random operands, a bias, a
// workspace and cuBLASLt's heuristic pick.
class AppGemm {
 public:
  AppGemm(cublasLtHandle_t handle, int64_t m, int64_t n, int64_t k, bool bias)
      : handle_(handle), m_(m), n_(n), k_(k) {
    EXPECT_EQ(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              CUBLAS_STATUS_SUCCESS);
    const cublasOperation_t t = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, k, m, k);
    cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, k, n, k);
    cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, m, n, m);
    a_buf_ = Random(m * k, 1);
    b_buf_ = Random(k * n, 2);
    d_buf_ = Random(m * n, 3);
    if (bias) {
      bias_buf_ = Random(m, 4);
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                     sizeof(epilogue));
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_buf_,
                                     sizeof(bias_buf_));
    }
    EXPECT_EQ(cudaMalloc(&workspace_, kWorkspaceBytes), cudaSuccess);
    cublasLtMatmulPreference_t preference;
    cublasLtMatmulPreferenceCreate(&preference);
    const uint64_t limit = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &limit, sizeof(limit));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    EXPECT_EQ(cublasLtMatmulAlgoGetHeuristic(handle, op_, a_, b_, d_, d_, preference, 1, &result,
                                             &returned),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatmulPreferenceDestroy(preference);
    EXPECT_EQ(returned, 1);
    algo_ = result.algo;
  }
  ~AppGemm() {
    for (void* p : {a_buf_, b_buf_, d_buf_, bias_buf_, workspace_}) cudaFree(p);
    for (auto layout : {a_, b_, d_}) cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(op_);
  }

  GemmProblem problem() const { return testing_util::LinearGemm(m_, n_, k_); }

  // D = A^T B (+ bias) through `layer` (or cuBLASLt directly when null); D read back.
  std::vector<float> Run(Layer* layer, size_t workspace_bytes = kWorkspaceBytes) {
    const float alpha = 1, beta = 0;
    const cublasStatus_t status =
        layer != nullptr
            ? layer->Matmul(&cublasLtMatmul, handle_, op_, &alpha, a_buf_, a_, b_buf_, b_, &beta,
                            d_buf_, d_, d_buf_, d_, &algo_, workspace_, workspace_bytes, nullptr)
            : cublasLtMatmul(handle_, op_, &alpha, a_buf_, a_, b_buf_, b_, &beta, d_buf_, d_,
                             d_buf_, d_, &algo_, workspace_, workspace_bytes, nullptr);
    EXPECT_EQ(status, CUBLAS_STATUS_SUCCESS);
    std::vector<__nv_bfloat16> host(static_cast<size_t>(m_ * n_));
    EXPECT_EQ(cudaMemcpy(host.data(), d_buf_, host.size() * 2, cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<float> out(host.size());
    for (size_t i = 0; i < host.size(); ++i) out[i] = __bfloat162float(host[i]);
    return out;
  }

 private:
  static void* Random(int64_t count, unsigned seed) { return RandomDevice(count, seed); }

  cublasLtHandle_t handle_;
  int64_t m_, n_, k_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  void *a_buf_ = nullptr, *b_buf_ = nullptr, *d_buf_ = nullptr, *bias_buf_ = nullptr;
  void* workspace_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// Largest difference relative to the largest magnitude (bf16 outputs of two kernels differ in
// rounding, not more).
double RelativeDifference(const std::vector<float>& x, const std::vector<float>& y) {
  double largest = 1e-6, worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    largest = std::max(largest, static_cast<double>(std::fabs(x[i])));
    worst = std::max(worst, static_cast<double>(std::fabs(x[i] - y[i])));
  }
  return worst / largest;
}

class LayerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no GPU on this host";
    }
    ASSERT_EQ(cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS);
    tmp_ = fs::temp_directory_path() /
           ("kselect_layer_gpu_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(tmp_);
  }
  void TearDown() override {
    if (handle_ != nullptr) cublasLtDestroy(handle_);
    fs::remove_all(tmp_);
  }
  cublasLtHandle_t handle_ = nullptr;
  fs::path tmp_;
};

// Untimed (time_top_k 0): the model's first config runs on every call.
TEST_F(LayerGpuTest, SelectModeRunsTheModelsChoiceWithTheSameResults) {
  LayerSettings settings;
  settings.mode = LayerMode::kSelect;
  settings.model = testing_util::ModelDir("h200_cublaslt_bf16_tn_rank");
  settings.time_top_k = 0;
  Layer layer(settings);
  struct Case {
    int64_t m, n, k;
    bool bias;
  };
  for (const Case& c : {Case{4096, 8, 4096, false}, Case{14336, 16, 4096, true},
                        Case{1024, 1, 4096, false}, Case{4096, 2048, 4096, true}}) {
    AppGemm gemm(handle_, c.m, c.n, c.k, c.bias);
    const std::vector<float> expected = gemm.Run(nullptr);
    for (int i = 0; i < 3; ++i) {
      EXPECT_LT(RelativeDifference(expected, gemm.Run(&layer)), 2e-2) << gemm.problem().ToString();
    }
  }
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["model_status"], "used") << stats.dump(2);
  EXPECT_EQ(stats["calls"], 12);
  EXPECT_EQ(stats["overridden"], 12) << stats.dump(2);
  for (const auto& g : stats["gemms"]) {
    EXPECT_EQ(g["decision"], "model") << g.dump();
    EXPECT_FALSE(g["application_algo"].get<std::string>().empty());
  }
}

// Timed at first use (the default): the model's top 3 beside the application's own algo, on the
// call's operands; the output is the call's, whichever wins.
TEST_F(LayerGpuTest, SelectModeTimesTheModelsTopAgainstTheApplicationsChoice) {
  LayerSettings settings;
  settings.mode = LayerMode::kSelect;
  settings.model = testing_util::ModelDir("h200_cublaslt_bf16_tn_rank");
  Layer layer(settings);
  for (const auto& [m, n, k] :
       {std::tuple{4096, 8, 4096}, std::tuple{1024, 8, 4096}, std::tuple{14336, 2048, 4096}}) {
    AppGemm gemm(handle_, m, n, k, false);
    const std::vector<float> expected = gemm.Run(nullptr);
    for (int i = 0; i < 3; ++i) {
      EXPECT_LT(RelativeDifference(expected, gemm.Run(&layer)), 2e-2) << gemm.problem().ToString();
    }
  }
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["calls"], 9);
  for (const auto& g : stats["gemms"]) {
    EXPECT_TRUE(g["decision"] == "model" || g["decision"] == "vendor") << g.dump();
    EXPECT_NE(g["why"].get<std::string>().find("timed at first use"), std::string::npos)
        << g.dump();
    const int64_t kept = g["pass_reasons"].value("vendor_kept", int64_t{0});
    EXPECT_EQ(g["overridden"].get<int64_t>() + kept, 3) << g.dump();
  }
}

TEST_F(LayerGpuTest, LibraryModeRunsTheLibrarysConfig) {
  AppGemm gemm(handle_, 4096, 16, 4096, false);
  auto provider = CreateProvider(Provider::kCublasLt, ProviderOptions{});
  ASSERT_TRUE(provider.ok());
  auto picks = (*provider)->HeuristicPicks(gemm.problem(), 4);
  ASSERT_TRUE(picks.ok() && picks->size() >= 2);
  const KernelConfig tuned = (*picks)[1];  // not what the application's heuristic call returns
  auto hardware = QueryHardwareProfile(0);
  ASSERT_TRUE(hardware.ok());
  SolutionLibrary library;
  library.identity = ProvenanceOf(*hardware);
  Solution solution;
  solution.problem = gemm.problem();
  solution.config = tuned;
  library.solutions.push_back(solution);
  const std::string path = (tmp_ / "solutions.json").string();
  ASSERT_TRUE(SaveSolutionLibrary(library, path).ok());

  LayerSettings settings;
  settings.mode = LayerMode::kLibrary;
  settings.solutions = path;
  Layer layer(settings);
  const std::vector<float> expected = gemm.Run(nullptr);
  EXPECT_LT(RelativeDifference(expected, gemm.Run(&layer)), 2e-2);
  EXPECT_LT(RelativeDifference(expected, gemm.Run(&layer)), 2e-2);
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["library_status"], "used") << stats.dump(2);
  ASSERT_EQ(stats["gemms"].size(), 1u);
  EXPECT_EQ(stats["gemms"][0]["decision"], "library") << stats.dump(2);
  EXPECT_EQ(stats["gemms"][0]["config"], DescribeConfig(tuned));
  EXPECT_EQ(stats["overridden"], 2);
}

// cuBLAS's GemmEx under the layer (what PyTorch's default backend calls): the layer runs the
// model's choice through cuBLASLt on the handle's stream and workspace, with the same results.
TEST_F(LayerGpuTest, CublasGemmExRunsTheChoiceThroughCublasLt) {
  cublasHandle_t blas_handle = nullptr;
  ASSERT_EQ(cublasCreate(&blas_handle), CUBLAS_STATUS_SUCCESS);
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, kWorkspaceBytes), cudaSuccess);
  ASSERT_EQ(cublasSetWorkspace(blas_handle, workspace, kWorkspaceBytes), CUBLAS_STATUS_SUCCESS);
  LayerSettings settings;
  settings.mode = LayerMode::kSelect;
  settings.model = testing_util::ModelDir("h200_cublaslt_bf16_tn_rank");
  settings.time_top_k = 0;  // the model's first runs on every call (the timed path: above)
  Layer layer(settings);
  BlasFunctions blas;
  blas.lt_matmul = &cublasLtMatmul;
  blas.get_stream = &cublasGetStream_v2;
  blas.get_pointer_mode = &cublasGetPointerMode_v2;
  blas.workspace = workspace;
  blas.workspace_bytes = kWorkspaceBytes;

  for (const auto& [m, n, k] :
       {std::tuple{4096, 8, 4096}, std::tuple{14336, 16, 4096}, std::tuple{4096, 2048, 4096}}) {
    void* a = RandomDevice(static_cast<int64_t>(m) * k, 7);
    void* b = RandomDevice(static_cast<int64_t>(k) * n, 8);
    void* c = RandomDevice(static_cast<int64_t>(m) * n, 9);
    const float one = 1, zero = 0;
    auto read_c = [&] {
      std::vector<__nv_bfloat16> host(static_cast<size_t>(m) * n);
      EXPECT_EQ(cudaMemcpy(host.data(), c, host.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      std::vector<float> out(host.size());
      for (size_t i = 0; i < host.size(); ++i) out[i] = __bfloat162float(host[i]);
      return out;
    };
    ASSERT_EQ(cublasGemmEx(blas_handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_16BF, k,
                           b, CUDA_R_16BF, k, &zero, c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT_TENSOR_OP),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<float> expected = read_c();
    BlasArgs args;
    args.call.handle = blas_handle;
    args.call.trans_a = CUBLAS_OP_T;
    args.call.m = m;
    args.call.n = n;
    args.call.k = k;
    args.call.type_a = args.call.type_b = args.call.type_c = CUDA_R_16BF;
    args.call.lda = k;
    args.call.ldb = k;
    args.call.ldc = m;
    args.call.compute = CUBLAS_COMPUTE_32F;
    args.alpha = &one;
    args.a = a;
    args.b = b;
    args.beta = &zero;
    args.c = c;
    auto fail_if_passed = [](const void*) { return CUBLAS_STATUS_EXECUTION_FAILED; };
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(layer.Blas(blas, args, fail_if_passed, nullptr), CUBLAS_STATUS_SUCCESS)
          << m << "x" << n << "x" << k << ": " << layer.StatsJson();
      EXPECT_LT(RelativeDifference(expected, read_c()), 2e-2) << m << "x" << n << "x" << k;
    }
    for (void* p : {a, b, c}) cudaFree(p);
  }
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["overridden"], 6) << stats.dump(2);
  cudaFree(workspace);
  cublasDestroy(blas_handle);
}

}  // namespace
}  // namespace kselect::layer
