// Selection with the runtime library alone (kselect_runtime: no Arrow, no LightGBM, no bench, no
// evaluation layer): every shipped model loads, and the models rank a real cuBLASLt catalogue (the
// committed H200 snapshot of rules/cublaslt/default.json for bf16 TN 4096^3) through
// Model::Predict. This program links kselect_runtime and GoogleTest only;
// check_runtime_symbols.cmake checks that it holds no Arrow or LightGBM code.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/features.h"
#include "kselect/model.h"
#include "kselect/problem.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;

const std::string kModelsDir = std::string(KSELECT_SOURCE_DIR) + "/models";
// A regression on log(TFLOPS) over the cuBLASLt default datasets, without the peer block: it
// predicts TFLOPS for any problem (the shipped GPU-less h200_cublaslt_default is a ranker).
const std::string kDefaultModel = kModelsDir + "/h200_cublaslt_default_tflops";
// The bf16 TN ranker that takes cuBLASLt's own top picks as features.
const std::string kPeerRanker = kModelsDir + "/h200_cublaslt_default_bf16_tn";

// The committed catalogue snapshot: the configs cuBLASLt enumerated on an H200 for its problem,
// filtered by the default rule set.
struct Catalogue {
  GemmProblem problem;
  std::vector<KernelConfig> configs;
};

Catalogue LoadSnapshot() {
  const std::string path =
      std::string(KSELECT_SOURCE_DIR) + "/rules/cublaslt/snapshots/default.bf16_tn_4096.json";
  std::ifstream in(path);
  const nlohmann::json snapshot = nlohmann::json::parse(in);
  Catalogue catalogue;
  const StatusOr<Problem> problem = json_codec::ProblemFromJson(snapshot.at("problem"), path);
  EXPECT_TRUE(problem.ok()) << problem.status().ToString();
  if (problem.ok()) catalogue.problem = std::get<GemmProblem>(*problem);
  for (const nlohmann::json& config : snapshot.at("configs")) {
    const StatusOr<KernelConfig> parsed = json_codec::KernelConfigFromJson(config, path);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    if (parsed.ok()) catalogue.configs.push_back(*parsed);
  }
  return catalogue;
}

GemmProblem WithShape(GemmProblem problem, int64_t m, int64_t n, int64_t k) {
  problem.m = m;
  problem.n = n;
  problem.k = k;
  return problem;
}

// Dense 16-bit tensor peak of the model's hardware, in TFLOPS.
double PeakTflops(const HardwareConstants& hw) {
  return hw.sm_count * hw.sm_clock_mhz * 1e6 * hw.flops_per_clock_per_sm_16bit / 1e12;
}

TEST(RuntimeOnlyTest, EveryShippedModelLoadsWithoutLightGbm) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(kModelsDir)) {
    if (!fs::exists(entry.path() / "feature_spec.json")) continue;
    const StatusOr<Model> model = Model::Load(entry.path().string());
    ASSERT_TRUE(model.ok()) << entry.path() << ": " << model.status().ToString();
    EXPECT_TRUE(model->Has(Target::kTflops)) << entry.path();
    EXPECT_EQ(model->extractor().NumFeatures(), model->spec().features.size()) << entry.path();
    EXPECT_TRUE(model->CheckHardware(model->spec().hardware).ok()) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 6);
}

TEST(RuntimeOnlyTest, PredictsPlausibleTflopsForTheCatalogue) {
  const Catalogue catalogue = LoadSnapshot();
  ASSERT_EQ(catalogue.configs.size(), 475u);
  const StatusOr<Model> model = Model::Load(kDefaultModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_FALSE(model->UsesPeerRanks());
  ASSERT_FALSE(model->Ranks(Target::kTflops));

  const StatusOr<std::vector<double>> large =
      model->PredictTflops(catalogue.problem, catalogue.configs);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  ASSERT_EQ(large->size(), catalogue.configs.size());
  const double peak = PeakTflops(model->spec().hardware);
  for (double tflops : *large) {
    EXPECT_TRUE(std::isfinite(tflops));
    EXPECT_GT(tflops, 0);
    EXPECT_LT(tflops, peak);
  }
  // A 4096^3 bf16 GEMM is compute bound: cuBLASLt's best kernels reach over half of the
  // dense peak on an H200, and the catalogue spans slow (64x64 tiles, split-K) to fast configs.
  const auto [slowest, fastest] = std::minmax_element(large->begin(), large->end());
  EXPECT_GT(*fastest, 0.5 * peak);
  EXPECT_GT(*fastest, 2 * *slowest);

  // One token of decode (m = 1) is memory bound: no config can beat the roofline of its bytes.
  const GemmProblem decode = WithShape(catalogue.problem, 1, 4096, 4096);
  const StatusOr<std::vector<double>> small = model->PredictTflops(decode, catalogue.configs);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  const double roofline_tflops =
      decode.Flops() / (decode.MinBytes() / (model->spec().hardware.mem_bandwidth_gb_s * 1e9)) /
      1e12;
  EXPECT_LT(*std::max_element(small->begin(), small->end()), roofline_tflops);
  EXPECT_LT(*std::max_element(small->begin(), small->end()), 0.1 * *fastest);
}

TEST(RuntimeOnlyTest, ScoresEachCandidateOnItsOwnAndDeterministically) {
  const Catalogue catalogue = LoadSnapshot();
  const StatusOr<Model> model = Model::Load(kDefaultModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto scores = model->Predict(Target::kTflops, catalogue.problem, catalogue.configs);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ(*model->Predict(Target::kTflops, catalogue.problem, catalogue.configs), *scores);

  // Reversed candidates get the reversed scores, and a few alone score as in the whole list.
  std::vector<KernelConfig> reversed(catalogue.configs.rbegin(), catalogue.configs.rend());
  auto reversed_scores = model->Predict(Target::kTflops, catalogue.problem, reversed);
  ASSERT_TRUE(reversed_scores.ok());
  std::reverse(reversed_scores->begin(), reversed_scores->end());
  EXPECT_EQ(*reversed_scores, *scores);
  const std::vector<KernelConfig> three(catalogue.configs.begin() + 100,
                                        catalogue.configs.begin() + 103);
  const auto three_scores = model->Predict(Target::kTflops, catalogue.problem, three);
  ASSERT_TRUE(three_scores.ok());
  EXPECT_EQ(*three_scores, std::vector<double>(scores->begin() + 100, scores->begin() + 103));

  // The model's extractor describes GEMMs: a convolution is refused, not scored.
  const Problem conv = ConvProblem{.c = 64, .k = 64, .hi = 56, .wi = 56, .y = 3, .x = 3};
  EXPECT_EQ(model->Predict(Target::kTflops, conv, catalogue.configs).status().code(),
            StatusCode::kInvalidArgument);

  // No candidates, no scores.
  const auto none = model->Predict(Target::kTflops, catalogue.problem, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(RuntimeOnlyTest, PeerRankerNeedsThePicksAndAgreesWithThem) {
  const Catalogue catalogue = LoadSnapshot();
  const StatusOr<Model> model = Model::Load(kPeerRanker);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE(model->UsesPeerRanks());
  ASSERT_TRUE(model->Ranks(Target::kTflops));

  const auto without = model->Predict(Target::kTflops, catalogue.problem, catalogue.configs);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), StatusCode::kFailedPrecondition);
  // A ranker has scores, not TFLOPS.
  EXPECT_EQ(model->PredictTflops(catalogue.problem, catalogue.configs, {}).status().code(),
            StatusCode::kFailedPrecondition);

  // The heuristic's picks: the default model's top 8 play cuBLASLt's own list here.
  const StatusOr<Model> regression = Model::Load(kDefaultModel);
  ASSERT_TRUE(regression.ok());
  const std::vector<double> tflops =
      regression->PredictTflops(catalogue.problem, catalogue.configs).value();
  std::vector<size_t> order(tflops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tflops[a] > tflops[b]; });
  std::vector<PeerPick> picks;
  for (int i = 0; i < 8; ++i) picks.push_back({catalogue.configs[order[i]], i + 1});

  const auto scores = model->Predict(Target::kTflops, catalogue.problem, catalogue.configs,
                                     std::span<const PeerPick>(picks));
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), catalogue.configs.size());
  // The ranker learnt that the heuristic's picks are good: its best-scored candidate is one of
  // them, and they score above the catalogue's median.
  const size_t best =
      static_cast<size_t>(std::max_element(scores->begin(), scores->end()) - scores->begin());
  EXPECT_NE(std::find(order.begin(), order.begin() + 8, best), order.begin() + 8);
  std::vector<double> sorted = *scores;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  for (int i = 0; i < 8; ++i) EXPECT_GT((*scores)[order[i]], median) << "pick " << i + 1;
}

}  // namespace
}  // namespace kselect
