// kselect::Gemm on the device: the selector's choice for LLM GEMMs (framework orientation: m =
// out features, n = tokens), run on buffers the verify module filled with random non-zero data,
// and compared with its double-precision reference. Skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>

#include "kselect/cross_provider.h"
#include "kselect/selector.h"
#include "kselect/verify.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::LinearGemm;
using testing_util::ModelDir;
using verify::CheckResult;
using verify::Verifier;
using verify::VerifyCase;

// The cross-provider models are the H200's: on another GPU their model stages are passed over
// (never serving another device's model silently), so the decisions these tests expect do not
// apply there.
bool TrainedForAnotherDevice(const CrossDecision& d) {
  return d.note.find("other hardware") != std::string::npos;
}

// A "kernel" that is the whole dispatcher: Launch runs a kselect::Gemm call (one selector's or the
// cross-provider selector's), so the verify module checks exactly what an application's call
// computes.
class DispatchKernel final : public PreparedKernel {
 public:
  using Dispatch = std::function<StatusOr<DispatchInfo>(const KernelOperands&, void* stream)>;
  explicit DispatchKernel(Dispatch dispatch) : dispatch_(std::move(dispatch)) {}
  template <typename AnySelector>
  DispatchKernel(AnySelector& selector, const GemmProblem& problem)
      : dispatch_([&selector, problem](const KernelOperands& o, void* stream) {
          return Gemm(selector, problem, o.buffers[0], o.buffers[1], o.buffers[2], o.workspace,
                      o.workspace_bytes, stream);
        }) {}
  int64_t WorkspaceBytes() const override { return 32ll << 20; }
  Status Launch(const KernelOperands& operands, void* stream) override {
    auto info = dispatch_(operands, stream);
    if (!info.ok()) return info.status();
    last_ = *info;
    all_.push_back(*info);
    return Status::Ok();
  }
  const DispatchInfo& last() const { return last_; }
  const std::vector<DispatchInfo>& all() const { return all_; }

 private:
  Dispatch dispatch_;
  DispatchInfo last_;
  std::vector<DispatchInfo> all_;
};

// LLM GEMMs for the first-use timing tests: decode (1 and 16 tokens), prefill, and an odd shape.
std::vector<GemmProblem> FirstUseProblems() {
  return {LinearGemm(4096, 1, 4096), LinearGemm(14336, 16, 4096), LinearGemm(4096, 512, 4096),
          LinearGemm(1000, 7, 3000)};
}

// What CheckFirstUseTiming saw: the first dispatch and the last check's figures.
struct FirstUseCheck {
  DispatchInfo first;
  std::string checked;
};

// Dispatches `problem` through `selector` (with first-use timing) on operands `provider` allocates
// and checks it against the reference twice: the first check's first dispatch times 2 to
// `max_timed` configs, every later dispatch runs the config it settled on untimed, and every
// output passes. nullopt after a failure, which is reported.
template <typename AnySelector>
std::optional<FirstUseCheck> CheckFirstUseTiming(AnySelector& selector, KernelProvider& provider,
                                                 Verifier& verifier, const GemmProblem& problem,
                                                 int max_timed) {
  auto operands = provider.Operands(problem);
  if (!operands.ok()) {
    ADD_FAILURE() << problem.ToString() << ": " << operands.status().ToString();
    return std::nullopt;
  }
  auto verify_case = verifier.MakeCase(problem, *operands);
  if (!verify_case.ok()) {
    ADD_FAILURE() << problem.ToString() << ": " << verify_case.status().ToString();
    return std::nullopt;
  }
  DispatchKernel kernel(selector, problem);
  std::string checked;
  for (int check = 0; check < 2; ++check) {
    auto result = (*verify_case)->Check(kernel);
    if (!result.ok()) {
      ADD_FAILURE() << problem.ToString() << ": " << result.status().ToString();
      return std::nullopt;
    }
    EXPECT_TRUE(result->passed) << problem.ToString() << ": " << result->ToString();
    checked = result->ToString();
  }
  if (kernel.all().size() < 2) {
    ADD_FAILURE() << problem.ToString() << ": " << kernel.all().size() << " dispatches";
    return std::nullopt;
  }
  const DispatchInfo& first = kernel.all().front();
  EXPECT_GE(first.timed_configs, 2) << problem.ToString() << ": " << first.note;
  EXPECT_LE(first.timed_configs, max_timed);
  EXPECT_NE(first.note.find("at first use"), std::string::npos) << first.note;
  for (size_t i = 1; i < kernel.all().size(); ++i) {
    EXPECT_EQ(kernel.all()[i].timed_configs, 0) << problem.ToString();
    EXPECT_EQ(ConfigKey(kernel.all()[i].config), ConfigKey(first.config)) << problem.ToString();
  }
  return FirstUseCheck{first, checked};
}

// Every test here needs the GPU and the verify module: skipped without a GPU.
class DispatchGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no GPU on this host";
    }
    auto verifier = Verifier::Create();
    ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
    verifier_ = std::move(*verifier);
  }
  std::unique_ptr<Verifier> verifier_;
};

TEST_F(DispatchGpuTest, GemmRunsTheSelectionCorrectly) {
  const std::vector<GemmProblem> problems = {LinearGemm(4096, 1, 4096), LinearGemm(4096, 16, 4096),
                                             LinearGemm(1000, 7, 3000),
                                             LinearGemm(2048, 512, 1024)};
  for (const char* model :
       {"h200_cublaslt_default_bf16_tn", "h200_cublaslt_default", "h200_tile_bf16_tn"}) {
    const std::string dir = (std::filesystem::path(KSELECT_SOURCE_DIR) / "models" / model).string();
    auto selector = Selector::Open(dir);
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    auto provider = (*selector)->provider();
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    for (const GemmProblem& problem : problems) {
      auto selection = (*selector)->Select(problem);
      ASSERT_TRUE(selection.ok()) << model << " " << problem.ToString() << ": "
                                  << selection.status().ToString();
      // On the device the model decides (the peer ranker with picks asked live), and what it
      // returns was checked with CanImplement.
      EXPECT_EQ((*selection)->decided_by, DecisionPath::kModel)
          << model << ": " << (*selection)->note;
      EXPECT_TRUE((*selection)->can_implement_checked) << model;
      auto operands = (*provider)->Operands(problem);
      ASSERT_TRUE(operands.ok()) << operands.status().ToString();
      auto verify_case = verifier_->MakeCase(problem, *operands);
      ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
      DispatchKernel kernel(**selector, problem);
      auto result = (*verify_case)->Check(kernel);
      ASSERT_TRUE(result.ok()) << model << " " << problem.ToString() << ": "
                               << result.status().ToString();
      EXPECT_TRUE(result->passed) << model << " " << problem.ToString() << ": "
                                  << result->ToString();
      std::printf("dispatch %-30s %-60s rank %d %-50s %s%s\n", model, problem.ToString().c_str(),
                  kernel.last().rank, DescribeConfig(kernel.last().config).c_str(),
                  result->ToString().c_str(),
                  kernel.last().note.empty() ? "" : (" note: " + kernel.last().note).c_str());
    }
  }
}

// The same through the cross-provider selector: decode GEMMs go to the tile engine, a large one
// stays with cuBLASLt's pick, and what runs matches the reference either way.
TEST_F(DispatchGpuTest, CrossProviderGemmRunsEitherProvidersChoiceCorrectly) {
  const std::string dir =
      (std::filesystem::path(KSELECT_SOURCE_DIR) / "models" / "h200_cross_bf16_tn").string();
  auto selector = CrossProviderSelector::Open(dir);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  auto provider = (*selector)->reference().provider();
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  struct Case {
    GemmProblem problem;
    bool tile_expected;
  };
  const std::vector<Case> cases = {{LinearGemm(4096, 1, 4096), true},
                                   {LinearGemm(14336, 1, 4096), true},
                                   {LinearGemm(4096, 4096, 4096), false}};
  for (const Case& c : cases) {
    auto decision = (*selector)->Select(c.problem);
    ASSERT_TRUE(decision.ok()) << decision.status().ToString();
    if (TrainedForAnotherDevice(*decision)) GTEST_SKIP() << decision->note;
    EXPECT_EQ(decision->challenger_chosen, c.tile_expected)
        << c.problem.ToString() << ": predicted gain " << decision->predicted_gain << " "
        << decision->note;
    auto operands = (*provider)->Operands(c.problem);
    ASSERT_TRUE(operands.ok()) << operands.status().ToString();
    auto verify_case = verifier_->MakeCase(c.problem, *operands);
    ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
    DispatchKernel kernel(**selector, c.problem);
    auto result = (*verify_case)->Check(kernel);
    ASSERT_TRUE(result.ok()) << c.problem.ToString() << ": " << result.status().ToString();
    EXPECT_TRUE(result->passed) << c.problem.ToString() << ": " << result->ToString();
    EXPECT_EQ(ProviderOf(kernel.last().config),
              decision->challenger_chosen ? Provider::kTile : Provider::kCublasLt);
    std::printf("cross dispatch %-60s gain %.3f %-50s %s\n", c.problem.ToString().c_str(),
                decision->predicted_gain, DescribeConfig(kernel.last().config).c_str(),
                result->ToString().c_str());
  }
}

// First-use timing (SelectorOptions::time_top_k): the first dispatch of a problem times the top 3
// on scratch outputs and runs the fastest, every later dispatch runs that config without timing,
// and the output is right throughout (the verify module launches the dispatcher several times,
// over poisoned outputs); with the read operands' copies rotated past L2 too
// (first_use_cold_l2).
TEST_F(DispatchGpuTest, FirstUseTimingRunsTheFastestOfTheTopKCorrectly) {
  for (const bool cold_l2 : {false, true}) {
    SelectorOptions options;
    options.time_top_k = 3;
    options.first_use_cold_l2 = cold_l2;
    auto selector = Selector::Open(ModelDir("h200_cublaslt_bf16_tn_rank"), options);
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    auto provider = (*selector)->provider();
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    for (const GemmProblem& problem : FirstUseProblems()) {
      // The top 3 and cuBLASLt's own pick beside them (the vendor guard).
      const auto check = CheckFirstUseTiming(**selector, **provider, *verifier_, problem, 4);
      ASSERT_TRUE(check) << problem.ToString() << (cold_l2 ? " (cold L2)" : "");
      const DispatchInfo& first = check->first;
      EXPECT_TRUE(first.rank <= 3 || first.note.find("vendor's pick runs") != std::string::npos)
          << first.note;
      EXPECT_NE(first.note.find("vendor's pick"), std::string::npos) << first.note;
      std::printf("first-use timing%s %-60s ran rank %d of the top %d: %s; %s\n",
                  cold_l2 ? " (cold L2)" : "", problem.ToString().c_str(), first.rank,
                  first.timed_configs, DescribeConfig(first.config).c_str(),
                  check->checked.c_str());
    }
  }
}

// A decision file carries the first-use order: a fresh selector that loads it runs the same
// config at once, untimed, says the order came from the file, and computes the right output.
TEST_F(DispatchGpuTest, DecisionFileCarriesTheFirstUseOrderToAFreshSelector) {
  SelectorOptions options;
  options.time_top_k = 3;
  const std::string path =
      (std::filesystem::temp_directory_path() / "kselect_dispatch_first_use_cache.json").string();
  std::vector<std::string> ran;
  {
    auto selector = Selector::Open(ModelDir("h200_cublaslt_bf16_tn_rank"), options);
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    auto provider = (*selector)->provider();
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    for (const GemmProblem& problem : FirstUseProblems()) {
      const auto check = CheckFirstUseTiming(**selector, **provider, *verifier_, problem, 4);
      ASSERT_TRUE(check) << problem.ToString();
      ran.push_back(ConfigKey(check->first.config));
    }
    ASSERT_TRUE((*selector)->SaveCache(path).ok());
  }
  auto fresh = Selector::Open(ModelDir("h200_cublaslt_bf16_tn_rank"), options);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  const Status loaded = (*fresh)->LoadCache(path);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  auto provider = (*fresh)->provider();
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  const std::vector<GemmProblem> problems = FirstUseProblems();
  for (size_t i = 0; i < problems.size(); ++i) {
    const GemmProblem& problem = problems[i];
    auto operands = (*provider)->Operands(problem);
    ASSERT_TRUE(operands.ok()) << operands.status().ToString();
    auto verify_case = verifier_->MakeCase(problem, *operands);
    ASSERT_TRUE(verify_case.ok()) << verify_case.status().ToString();
    DispatchKernel kernel(**fresh, problem);
    auto result = (*verify_case)->Check(kernel);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_TRUE(result->passed) << problem.ToString() << ": " << result->ToString();
    const DispatchInfo& first = kernel.all().front();
    EXPECT_EQ(first.timed_configs, 0) << first.note;
    EXPECT_TRUE(first.order_from_file) << first.note;
    EXPECT_TRUE(first.vendor_kept.has_value()) << first.note;
    EXPECT_EQ(ConfigKey(first.config), ran[i]) << problem.ToString() << ": " << first.note;
    EXPECT_NE(first.note.find("earlier process"), std::string::npos) << first.note;
  }
  EXPECT_EQ((*fresh)->first_use_guard_report().timed_problems, 0);
  std::filesystem::remove(path);
}

// The cross-provider selector with the cuBLASLt peer ranker and first-use timing: the first
// dispatch of a problem times the ranker's top 2 and the tile model's top, both providers
// interleaved, and runs the fastest; later dispatches run it untimed; the output is right
// throughout, whichever provider won.
TEST_F(DispatchGpuTest, CrossProviderFirstUseTimingRunsTheFastestOfBothProvidersCorrectly) {
  for (const bool cold_l2 : {false, true}) {
    SelectorOptions options;
    options.time_top_k = 2;
    options.first_use_cold_l2 = cold_l2;
    auto selector = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn_rank"), options);
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    auto provider = (*selector)->reference().provider();
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    for (const GemmProblem& problem : FirstUseProblems()) {
      auto decision = (*selector)->Select(problem);
      ASSERT_TRUE(decision.ok()) << decision.status().ToString();
      if (TrainedForAnotherDevice(*decision)) GTEST_SKIP() << decision->note;
      // On the device the ranker decides the reference side (the heuristic's picks asked live).
      EXPECT_EQ(decision->note.find("reference ranker passed over"), std::string::npos)
          << decision->note;
      EXPECT_GE(decision->ranked.size(), 2u) << problem.ToString();
      // Asked again, the decision comes from the cache: the same.
      auto again = (*selector)->Select(problem);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(ConfigKey(again->config), ConfigKey(decision->config));
      const auto check = CheckFirstUseTiming(**selector, **provider, *verifier_, problem, 4);
      ASSERT_TRUE(check) << problem.ToString();
      EXPECT_NE(check->first.note.find("vendor's pick"), std::string::npos) << check->first.note;
      std::printf("cross first-use%s %-60s decision %-8s ran %-50s (timed %d) %s\n",
                  cold_l2 ? " (cold L2)" : "", problem.ToString().c_str(),
                  decision->challenger_chosen ? "tile" : "cublaslt",
                  DescribeConfig(check->first.config).c_str(), check->first.timed_configs,
                  check->checked.c_str());
    }
  }
}

}  // namespace
}  // namespace kselect
