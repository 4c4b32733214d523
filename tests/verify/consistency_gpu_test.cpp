// GPU consistency (the ggml test-backend-ops idea): every registered provider's small catalogue
// (the `tests` rule set: a cuBLASLt filter under rules/cublaslt/, the tile generator under
// rules/tile/) on every verify::GemmCheckProblems shape of a few dtype/layout variants, checked
// against the verify module's reference: poisoned outputs, random non-zero inputs, the dtype's
// tolerance. Prints one summary line per provider. Skips, saying why, without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>

#include "kselect/catalogue.h"
#include "kselect/provider.h"
#include "kselect/verify.h"

namespace kselect::verify {
namespace {

struct ProviderTally {
  int problems = 0;
  int checked = 0;
  int passed = 0;
  int skipped = 0;  // Prepare said the config cannot run the problem
  double max_error = 0;
  double max_relative_rms = 0;
};

// The problems every provider is asked for; each runs those it supports. Column-major C is what
// cuBLASLt writes, row-major C the tile engine's usual layout.
std::vector<GemmProblem> ConsistencyProblems() {
  std::vector<GemmProblem> problems;
  for (const auto& [input, output, layout] :
       {std::tuple{DataType::kBF16, DataType::kBF16, "rcc"},
        std::tuple{DataType::kF16, DataType::kF16, "rcc"},
        std::tuple{DataType::kBF16, DataType::kBF16, "rcr"}}) {
    for (const GemmProblem& p : GemmCheckProblems(input, output, ParseGemmLayout(layout).value()))
      problems.push_back(p);
  }
  return problems;
}

TEST(ConsistencyGpuTest, EveryProvidersCatalogueMatchesTheReference) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU on this host";
  }
  StatusOr<std::unique_ptr<Verifier>> verifier = Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  const std::string rules_dir = std::string(KSELECT_SOURCE_DIR) + "/rules";
  int failures_reported = 0;
  for (const ProviderEntry& entry : ProviderRegistry()) {
    ProviderOptions options;
    options.rule_set = "tests";  // providers that generate their catalogue read it by name
    options.rules_dir = rules_dir;
    const std::unique_ptr<KernelProvider> provider = entry.create(options);
    // The GEMM providers: a convolution provider (cuDNN) runs none of these problems and has
    // no `tests` rule set; its engine configs are checked by CudnnGpuTest.
    const std::vector<GemmProblem> problems = ConsistencyProblems();
    if (std::none_of(problems.begin(), problems.end(), [&](const GemmProblem& gemm) {
          return provider->SupportsProblem(Problem(gemm));
        })) {
      std::printf("consistency %s: runs none of the GEMM problems, skipped\n", entry.summary);
      continue;
    }
    // Every provider's catalogue: what it yields, filtered by its `tests` rule set.
    const StatusOr<RuleSet> rules = FindRuleSet(rules_dir, entry.provider, "tests");
    ASSERT_TRUE(rules.ok()) << rules.status().ToString();
    ProviderTally tally;
    for (const GemmProblem& gemm : problems) {
      const Problem problem = gemm;
      if (!provider->SupportsProblem(problem)) continue;
      ++tally.problems;
      const StatusOr<std::vector<KernelConfig>> configs =
          provider->Enumerate(problem, RuleSetFilter(*rules, problem));
      ASSERT_TRUE(configs.ok()) << entry.summary << ": " << configs.status().ToString();
      const StatusOr<std::vector<OperandSpec>> operands = provider->Operands(problem);
      ASSERT_TRUE(operands.ok()) << operands.status().ToString();
      StatusOr<std::unique_ptr<VerifyCase>> verify_case = (*verifier)->MakeCase(problem, *operands);
      ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
      for (const KernelConfig& config : *configs) {
        const StatusOr<CheckResult> result = CheckConfig(*provider, config, **verify_case);
        if (!result.ok() && result.status().code() == StatusCode::kCannotImplement) {
          ++tally.skipped;
          continue;
        }
        // A launch error can leave the context unusable: nothing after it would mean anything.
        ASSERT_TRUE(result.ok()) << gemm.ToString() << " | " << DescribeConfig(config) << ": "
                                 << result.status().ToString();
        ++tally.checked;
        tally.max_error = std::max(tally.max_error, result->max_error);
        tally.max_relative_rms = std::max(tally.max_relative_rms, result->relative_rms_error);
        if (result->passed) {
          ++tally.passed;
        } else if (++failures_reported <= 20) {
          ADD_FAILURE() << gemm.ToString() << " | " << DescribeConfig(config) << ": "
                        << result->ToString();
        }
      }
    }
    std::printf(
        "consistency %s: %d problems, %d configs checked, %d passed, %d skipped (cannot "
        "implement), max element err %.2e, max rel rms err %.2e\n",
        std::string(ProviderName(entry.provider)).c_str(), tally.problems, tally.checked,
        tally.passed, tally.skipped, tally.max_error, tally.max_relative_rms);
    std::fflush(stdout);
    EXPECT_EQ(tally.passed, tally.checked) << entry.summary;
    EXPECT_GT(tally.checked, 0) << entry.summary << ": nothing was checked";
  }
}

}  // namespace
}  // namespace kselect::verify
