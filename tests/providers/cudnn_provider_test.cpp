// The cuDNN provider: the knob space on the CPU, what it answers without a GPU or cuDNN, and on
// a GPU the engine x knob enumeration, the heuristics' picks inside it, launches of every
// direction and a plan that survives serialisation.
#include "providers/cudnn/cudnn_provider.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <set>

#include "kselect/verify.h"
#include "providers/cudnn/cudnn_config.h"
#include "providers/cudnn/cudnn_library.h"
#include "timing/graph_timer.h"

namespace kselect::cudnn {
namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

ConvProblem Resnet3x3(ConvDirection direction) {
  ConvProblem p;
  p.n = 4;
  p.c = 64;
  p.k = 64;
  p.hi = p.wi = 28;
  p.y = p.x = 3;
  p.pad_h = p.pad_w = 1;
  p.direction = direction;
  return p;
}

TEST(CudnnKnobs, CombinationsCoverTheProductInOrder) {
  const auto all = KnobCombinations({{2, 0, 2, 1}, {7, 1, 4, 3}}, 100);
  // Tile 0..2 (3 values) x stages {1, 4} (stride 3): 6 combinations, first knob slowest.
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0], (std::vector<std::pair<int32_t, int64_t>>{{2, 0}, {7, 1}}));
  EXPECT_EQ(all[1], (std::vector<std::pair<int32_t, int64_t>>{{2, 0}, {7, 4}}));
  EXPECT_EQ(all[5], (std::vector<std::pair<int32_t, int64_t>>{{2, 2}, {7, 4}}));
}

TEST(CudnnKnobs, LargeProductsAreThinnedEvenlyAndDeterministically) {
  const std::vector<KnobRange> knobs = {{1, 0, 99, 1}, {2, 0, 99, 1}};  // 10,000 combinations
  const auto thinned = KnobCombinations(knobs, 50);
  ASSERT_EQ(thinned.size(), 50u);
  EXPECT_EQ(thinned, KnobCombinations(knobs, 50));
  std::set<int64_t> first_knob;
  for (const auto& c : thinned) first_knob.insert(c[0].second);
  EXPECT_EQ(first_knob.size(), 50u);  // spread over the slow knob, not 50 of one value
  EXPECT_EQ(*first_knob.begin(), 0);
  EXPECT_GE(*first_knob.rbegin(), 97);
}

TEST(CudnnKnobs, EngineWithoutKnobsIsOneConfigAndBadStrideCountsAsOne) {
  EXPECT_EQ(KnobCombinations({}, 10).size(), 1u);
  EXPECT_EQ(KnobCombinations({{3, 0, 2, 0}}, 10).size(), 3u);
  EXPECT_EQ(KnobCombinations({{3, 5, 2, 1}}, 10).size(), 1u);  // min > max: the minimum alone
}

TEST(CudnnProvider, SupportsValidChannelsLastBf16AndFp16ConvsOnly) {
  EXPECT_TRUE(CudnnSupportsProblem(Resnet3x3(ConvDirection::kForward)));
  ConvProblem fp16 = Resnet3x3(ConvDirection::kBackwardWeight);
  fp16.dtype = DataType::kF16;
  EXPECT_TRUE(CudnnSupportsProblem(fp16));
  ConvProblem fp8 = fp16;
  fp8.dtype = DataType::kF8E4M3;
  EXPECT_FALSE(CudnnSupportsProblem(fp8));
  ConvProblem nchw = Resnet3x3(ConvDirection::kForward);
  nchw.layout = ConvLayout::kChannelsFirst;
  EXPECT_FALSE(CudnnSupportsProblem(nchw));
  ConvProblem bad_groups = Resnet3x3(ConvDirection::kForward);
  bad_groups.g = 3;  // 64 channels do not split into 3 groups
  EXPECT_FALSE(CudnnSupportsProblem(bad_groups));
  EXPECT_FALSE(CudnnSupportsProblem(GemmProblem{.m = 64, .n = 64, .k = 64}));
}

TEST(CudnnProvider, OperandsWriteTheDirectionsOutput) {
  auto provider = CreateCudnnProvider({});
  for (ConvDirection d :
       {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardWeight}) {
    ConvProblem p = Resnet3x3(d);
    p.g = 4;
    const auto specs = provider->Operands(p);
    ASSERT_TRUE(specs.ok()) << specs.status().ToString();
    ASSERT_EQ(specs->size(), 3u);
    EXPECT_EQ((*specs)[0].bytes, 4 * 28 * 28 * 64 * 2);
    EXPECT_EQ((*specs)[1].bytes, 64 * 3 * 3 * 16 * 2);  // C/G = 16 per group
    EXPECT_EQ((*specs)[2].bytes, 4 * 28 * 28 * 64 * 2);
    const size_t written = d == ConvDirection::kForward        ? 2
                           : d == ConvDirection::kBackwardData ? 0
                                                               : 1;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ((*specs)[i].access, i == written ? OperandAccess::kWrite : OperandAccess::kRead)
          << ConvDirectionName(d) << " operand " << (*specs)[i].name;
    }
  }
  EXPECT_EQ(provider->Operands(GemmProblem{.m = 8, .n = 8, .k = 8}).status().code(),
            StatusCode::kCannotImplement);
}

TEST(CudnnProvider, WithoutAGpuEveryDeviceCallIsUnavailable) {
  if (HaveGpu()) GTEST_SKIP() << "a GPU is present: the GPU tests cover this provider";
  auto provider = CreateCudnnProvider({});
  const Problem p = Resnet3x3(ConvDirection::kForward);
  for (const Status& status :
       {provider->Enumerate(p).status(), provider->HeuristicPicks(p, 8).status(),
        provider->SecondHeuristicPicks(p, 8).status(),
        provider->CanImplement(p, CudnnConfig{.engine_id = 0})}) {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  }
  EXPECT_NE(provider->version().find("frontend 1."), std::string::npos) << provider->version();
}

TEST(CudnnProvider, MissingLibraryIsAClearUnavailable) {
  // The loader's answer is fixed per process; check the message it gives when it failed here.
  StatusOr<const CudnnLibrary*> library = LoadCudnn();
  if (library.ok()) {
    EXPECT_GE((*library)->version, 90000);
    EXPECT_NE((*library)->VersionText().find('.'), std::string::npos);
  } else {
    EXPECT_EQ(library.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(library.status().message().find("libcudnn"), std::string::npos);
  }
}

class CudnnGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
    if (!LoadCudnn().ok()) GTEST_SKIP() << LoadCudnn().status().ToString();
    provider_ = CreateCudnnProvider({});
  }
  std::unique_ptr<KernelProvider> provider_;
};

TEST_F(CudnnGpuTest, EnumeratesTheEngineSpaceWithBothHeuristicsInIt) {
  for (ConvDirection d :
       {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardWeight}) {
    const Problem p = Resnet3x3(d);
    StatusOr<std::vector<KernelConfig>> configs = provider_->Enumerate(p);
    ASSERT_TRUE(configs.ok()) << configs.status().ToString();
    EXPECT_GE(configs->size(), 2u) << ConvDirectionName(d);
    std::set<int64_t> engines;
    for (const KernelConfig& c : *configs) engines.insert(std::get<CudnnConfig>(c).engine_id);
    EXPECT_GE(engines.size(), 2u) << ConvDirectionName(d);
    for (bool mode_b : {false, true}) {
      StatusOr<std::vector<KernelConfig>> picks =
          mode_b ? provider_->SecondHeuristicPicks(p, 8) : provider_->HeuristicPicks(p, 8);
      ASSERT_TRUE(picks.ok()) << picks.status().ToString();
      ASSERT_FALSE(picks->empty()) << ConvDirectionName(d) << (mode_b ? " mode B" : " mode A");
      for (const KernelConfig& pick : *picks) {
        EXPECT_NE(std::find(configs->begin(), configs->end(), pick), configs->end())
            << "a heuristic pick outside the enumerated space: " << ConfigKey(pick);
        EXPECT_TRUE(provider_->CanImplement(p, pick).ok());
      }
    }
  }
}

TEST_F(CudnnGpuTest, RefusesAnEngineThatDoesNotExistAndAConfigOfAnotherProvider) {
  const Problem p = Resnet3x3(ConvDirection::kForward);
  EXPECT_EQ(provider_->CanImplement(p, CudnnConfig{.engine_id = 100000}).code(),
            StatusCode::kCannotImplement);
  EXPECT_EQ(provider_->Prepare(p, TileConfig{}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CudnnGpuTest, HeuristicPickMatchesTheReferenceInEveryDirection) {
  StatusOr<std::unique_ptr<verify::Verifier>> verifier = verify::Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  for (ConvDirection d :
       {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardWeight}) {
    ConvProblem p = Resnet3x3(d);
    p.g = 2;
    p.stride_h = p.stride_w = 2;
    const auto specs = provider_->Operands(p).value();
    StatusOr<std::unique_ptr<verify::VerifyCase>> c = (*verifier)->MakeCase(p, specs);
    if (c.status().code() == StatusCode::kUnimplemented) GTEST_SKIP() << c.status().ToString();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const auto picks = provider_->HeuristicPicks(p, 3).value();
    ASSERT_FALSE(picks.empty());
    for (const KernelConfig& pick : picks) {
      StatusOr<verify::CheckResult> result = verify::CheckConfig(*provider_, pick, **c);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      EXPECT_TRUE(result->passed) << ConvDirectionName(d) << " " << ConfigKey(pick) << ": "
                                  << result->ToString();
    }
  }
}

TEST_F(CudnnGpuTest, SerialisedPlanReloadsAndRuns) {
  const Problem p = Resnet3x3(ConvDirection::kForward);
  const auto picks = provider_->HeuristicPicks(p, 1).value();
  ASSERT_EQ(picks.size(), 1u);
  StatusOr<std::vector<uint8_t>> bytes = SerializePlan(*provider_, p, picks[0]);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_GT(bytes->size(), 16u);
  auto fresh = CreateCudnnProvider({});
  StatusOr<std::unique_ptr<PreparedKernel>> loaded = LoadSerializedPlan(*fresh, p, *bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const auto specs = fresh->Operands(p).value();
  auto operands = verify::DeviceOperands::Create(specs, (*loaded)->WorkspaceBytes(), 7);
  ASSERT_TRUE(operands.ok()) << operands.status().ToString();
  StatusOr<double> ms = timing::MedianLaunchMs(**loaded, (*operands)->operands(), 3);
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_GT(*ms, 0.0);
  // Bytes that are not a plan: a clear refusal, not a crash.
  std::vector<uint8_t> junk(64, 0x5a);
  EXPECT_FALSE(LoadSerializedPlan(*fresh, p, junk).ok());
}

}  // namespace
}  // namespace kselect::cudnn
