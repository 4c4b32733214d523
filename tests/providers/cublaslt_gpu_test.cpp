// GPU consistency: every config of the `tests` catalogue computes the same GEMM as the verify
// module's reference; heuristic picks can implement; committed snapshots match a fresh enumeration
// on the same device and cuBLASLt. Skips, saying why, without a GPU.
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
#include "kselect/verify.h"

namespace kselect {
namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
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

  auto verifier = verify::Verifier::Create({.seed = 7});
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  auto verify_case = (*verifier)->MakeCase(problem, provider->Operands(problem).value());
  ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
  int checked = 0;
  for (const KernelConfig& config : *configs) {
    ASSERT_TRUE(provider->CanImplement(p, config).ok()) << DescribeConfig(config);
    const StatusOr<verify::CheckResult> result =
        verify::CheckConfig(*provider, config, **verify_case);
    ASSERT_TRUE(result.ok()) << DescribeConfig(config) << ": " << result.status().ToString();
    EXPECT_TRUE(result->passed) << DescribeConfig(config) << ": " << result->ToString();
    ++checked;
  }
  std::printf("checked %d configs of the tests catalogue against the reference\n", checked);
  auto peers = provider->HeuristicPicks(p, 8);
  ASSERT_TRUE(peers.ok()) << peers.status().ToString();
  EXPECT_FALSE(peers->empty());
  for (const KernelConfig& c : *peers)
    EXPECT_TRUE(provider->CanImplement(p, c).ok()) << DescribeConfig(c);
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
