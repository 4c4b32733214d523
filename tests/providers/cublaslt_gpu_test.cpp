// GPU consistency: every config of the `tests` catalogue computes the same GEMM as a float64 CPU
// reference; heuristic picks can implement; committed snapshots match a fresh enumeration on
// the same device and cuBLASLt. Skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/catalogue.h"
#include "kselect/hardware.h"
#include "kselect/provider.h"

namespace kselect {
namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

uint16_t ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}
float FromBf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

RuleSet Rules(const std::string& name) {
  return FindRuleSet(std::string(KSELECT_SOURCE_DIR) + "/rules", Provider::kCublasLt, name).value();
}

TEST(CublasLtGpuTest, EveryTestsCatalogueConfigMatchesTheReference) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  GemmProblem p;
  p.m = 192;
  p.n = 160;
  p.k = 320;
  p.layout = GemmLayoutFromBlasOps("TN").value();  // A m x k row-major, B k x n column-major
  auto provider = CreateProvider(Provider::kCublasLt).value();
  const RuleSet rules = Rules("tests");
  const Problem problem = p;
  auto configs = provider->Enumerate(problem, RuleSetFilter(rules, problem));
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_FALSE(configs->empty());

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> a(p.m * p.k), b(p.k * p.n);
  std::vector<double> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i) af[i] = FromBf16(a[i] = ToBf16(dist(rng)));
  for (size_t i = 0; i < b.size(); ++i) bf[i] = FromBf16(b[i] = ToBf16(dist(rng)));
  std::vector<double> ref(p.m * p.n, 0.0);
  double ref_norm = 0;
  for (int64_t j = 0; j < p.n; ++j) {
    for (int64_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (int64_t l = 0; l < p.k; ++l) s += af[i * p.k + l] * bf[j * p.k + l];
      ref[j * p.m + i] = s;  // C column-major
      ref_norm += s * s;
    }
  }
  void *da, *db, *dd, *dw;
  const int64_t ws = 32ll << 20;
  ASSERT_EQ(cudaMalloc(&da, a.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&db, b.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dd, ref.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, ws), cudaSuccess);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  std::vector<uint16_t> out(ref.size());
  int checked = 0;
  for (const KernelConfig& config : *configs) {
    ASSERT_TRUE(provider->CanImplement(p, config).ok()) << DescribeConfig(config);
    auto kernel = provider->Prepare(p, config);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    cudaMemset(dd, 0xFF, ref.size() * 2);  // poison: NaN bf16 everywhere
    ASSERT_TRUE((*kernel)->Launch(GemmOperands{da, db, dd, dd, dw, ws}, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << DescribeConfig(config);
    cudaMemcpy(out.data(), dd, out.size() * 2, cudaMemcpyDeviceToHost);
    double err = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const double d = FromBf16(out[i]) - ref[i];
      err += d * d;
    }
    const double rel = std::sqrt(err / ref_norm);
    EXPECT_LT(rel, 1e-2) << DescribeConfig(config);  // bf16 output rounding is ~2e-3
    ++checked;
  }
  std::printf("checked %d configs of the tests catalogue against the float64 reference\n", checked);
  auto peers = provider->HeuristicPicks(p, 8);
  ASSERT_TRUE(peers.ok()) << peers.status().ToString();
  EXPECT_FALSE(peers->empty());
  for (const KernelConfig& c : *peers)
    EXPECT_TRUE(provider->CanImplement(p, c).ok()) << DescribeConfig(c);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  cudaFree(dw);
}

// cuBLASLt's fp8 kernels need 16-byte aligned dimensions: with m = 100 (a bf16 C column of 200
// bytes) the heuristic has nothing, which `kselect predict` reports instead of ranking configs
// that cannot launch; m = 128 has picks, each of which can implement the problem.
TEST(CublasLtGpuTest, HeuristicHasNoPicksForAnFp8ProblemNoKernelRuns) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  auto provider = CreateProvider(Provider::kCublasLt).value();
  GemmProblem p;
  p.m = 100;
  p.n = 7168;
  p.k = 2048;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  p.dtype_a = p.dtype_b = DataType::kF8E4M3;
  p.dtype_c = DataType::kBF16;
  auto none = provider->HeuristicPicks(p, 8);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty()) << none->size() << " picks, first " << DescribeConfig(none->front());
  p.m = 128;
  auto some = provider->HeuristicPicks(p, 8);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  ASSERT_FALSE(some->empty());
  for (const KernelConfig& c : *some)
    EXPECT_TRUE(provider->CanImplement(p, c).ok()) << DescribeConfig(c);
}

TEST(CublasLtGpuTest, SnapshotsMatchAFreshEnumeration) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  const HardwareProfile hw = QueryHardwareProfile(0).value();
  const std::filesystem::path dir =
      std::filesystem::path(KSELECT_SOURCE_DIR) / "rules/cublaslt/snapshots";
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    const nlohmann::json snap = nlohmann::json::parse(in);
    if (snap["device_name"] != hw.device_name || snap["cublaslt_version"] != hw.cublaslt_version) {
      std::printf("skipping %s: made on %s / cuBLASLt %d\n", entry.path().c_str(),
                  snap["device_name"].get<std::string>().c_str(),
                  snap["cublaslt_version"].get<int>());
      continue;
    }
    const RuleSet rules = Rules(snap["rule_set"]);
    const Problem p = json_codec::ProblemFromJson(snap["problem"], "snapshot").value();
    ProviderOptions po;
    po.max_workspace_bytes = snap["max_workspace_bytes"];
    auto provider = CreateProvider(Provider::kCublasLt, po).value();
    auto configs = provider->Enumerate(p, RuleSetFilter(rules, p));
    ASSERT_TRUE(configs.ok());
    std::vector<std::string> fresh, saved;
    for (const KernelConfig& c : *configs) fresh.push_back(ConfigKey(c));
    for (const auto& c : snap["configs"])
      saved.push_back(ConfigKey(json_codec::KernelConfigFromJson(c, "s").value()));
    EXPECT_EQ(fresh, saved) << entry.path()
                            << ": the device enumerates another catalogue; regenerate the snapshot";
    ++compared;
  }
  std::printf("compared %d snapshots\n", compared);
}

}  // namespace
}  // namespace kselect
