// Cross-provider selection without a GPU: the shipped manifest, decisions on measured data (a
// head-to-head fixture with every config screened in one process), and bad manifests.
#include "kselect/cross_provider.h"
#include "kselect/eval.h"
#include "kselect/head_to_head.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kselect/model.h"
#include "kselect/tuner.h"
#include "testing_util.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;
using testing_util::FixturePath;
using testing_util::LinearGemm;
using testing_util::ModelDir;

SelectorOptions Offline() {
  SelectorOptions o;
  o.check_can_implement = false;
  o.query_heuristic = false;
  return o;
}

TEST(CrossProviderTest, DecisionsOnMeasuredDataBeatCublasLtsPick) {
  auto selector = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn"), Offline());
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  EXPECT_EQ((*selector)->manifest().reference_provider, Provider::kCublasLt);
  EXPECT_EQ((*selector)->manifest().challenger_provider, Provider::kTile);
  const std::string files[] = {FixturePath("cross", "head_to_head_3.json.gz")};
  auto e = EvaluateCrossProvider(**selector, files);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->rows.size(), 3u);
  for (const CrossEvaluationRow& r : e->rows) {
    // One token: the decode kernels; 64 tokens or a large GEMM: cuBLASLt's pick stays.
    EXPECT_EQ(r.challenger_chosen, r.problem.n == 1) << r.problem.ToString();
    EXPECT_GT(r.decision_ms, 0);
    if (r.challenger_chosen) {
      EXPECT_GT(r.predicted_gain, 1.0);
      EXPECT_LT(r.decision_ms, r.pick_ms) << "the decode kernel is faster, measured";
    } else {
      EXPECT_EQ(r.decision_ms, r.pick_ms);
    }
  }
  EXPECT_GT(e->geomean_decision_over_pick, 1.03);
  EXPECT_LE(e->geomean_decision_over_pick, e->geomean_best_over_pick);
  const std::string json = CrossEvaluationJson(*e, "m", files);
  EXPECT_TRUE(Contains(json, "\"format\": \"kselect.cross_evaluation\""));
}

TEST(CrossProviderTest, DecideNeedsAReferencePickOfTheReferenceProvider) {
  auto selector = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn"), Offline());
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  const GemmProblem p = LinearGemm(4096, 1, 4096);
  const std::span<const KernelConfig> tiles = (*selector)->challenger().Candidates(p);
  ASSERT_FALSE(tiles.empty());
  auto wrong = (*selector)->Decide(p, tiles[0], tiles);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  const std::span<const KernelConfig> lt = (*selector)->reference().Candidates(p);
  ASSERT_FALSE(lt.empty());
  auto alone = (*selector)->Decide(p, lt[0], {});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_FALSE(alone->challenger_chosen);
  EXPECT_EQ(ConfigKey(alone->config), ConfigKey(lt[0]));
  EXPECT_EQ(alone->note, "no challenger candidates");
  auto both = (*selector)->Decide(p, lt[0], tiles);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->ranked.size(), 2u);
  EXPECT_EQ(ConfigKey(both->ranked[0].config), ConfigKey(both->config));
}

TEST(CrossProviderTest, BadManifestsAreClearErrors) {
  const fs::path dir = fs::temp_directory_path() / "kselect_cross_provider_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& text) { std::ofstream(dir / "cross_provider.json") << text; };
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    write(text);
    auto s = CrossProviderSelector::Open(dir.string(), Offline());
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_TRUE(Contains(s.status().message(), needle)) << s.status().ToString();
  };
  const std::string members = R"("reference": {"provider": "cublaslt", "model": ")" +
                              ModelDir("h200_cublaslt_default_tflops") +
                              R"("}, "challenger": {"provider": "tile", "model": ")" +
                              ModelDir("h200_tile_default_bf16_tn") + R"("})";
  EXPECT_FALSE(CrossProviderSelector::Open((dir / "none").string(), Offline()).ok());
  expect_error("{not json", "not a JSON object");
  expect_error(R"({"format": "other", "format_version": 1, )" + members + "}", "expected");
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 9, )" + members + "}",
               "format_version 9");
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "min_predicted_gain": -1, )" +
                   members + "}",
               "min_predicted_gain");
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "tile", "model": "a"},
                   "challenger": {"provider": "tile", "model": "b"}})",
               "same provider");
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "cublaslt", "model": "missing_dir"},
                   "challenger": {"provider": "tile", "model": "b"}})",
               "reference model");
  // Members swapped: the manifest's providers do not match the models'.
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "tile", "model": ")" +
                   ModelDir("h200_cublaslt_default_tflops") + R"("},
                   "challenger": {"provider": "cublaslt", "model": ")" +
                   ModelDir("h200_tile_default_bf16_tn") + R"("}})",
               "another provider");
  // A member that needs the heuristic's picks cannot give a TFLOPS figure without them.
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "cublaslt", "model": ")" +
                   ModelDir("h200_cublaslt_default_rank") + R"("},
                   "challenger": {"provider": "tile", "model": ")" +
                   ModelDir("h200_tile_default_bf16_tn") + R"("}})",
               "heuristic's picks");
  // A ranker without the peer block orders configs; it predicts no TFLOPS.
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "cublaslt", "model": ")" +
                   ModelDir("h200_cublaslt_bf16_tn_rank") + R"("},
                   "challenger": {"provider": "tile", "model": ")" +
                   ModelDir("h200_tile_default_bf16_tn") + R"("}})",
               "ranks configs");
  // The shipped GPU-less cuBLASLt model is such a ranker: the decision reads the TFLOPS
  // regression beside it (h200_cublaslt_default_tflops).
  expect_error(R"({"format": "kselect.cross_provider", "format_version": 1,
                   "reference": {"provider": "cublaslt", "model": ")" +
                   ModelDir("h200_cublaslt_default") + R"("},
                   "challenger": {"provider": "tile", "model": ")" +
                   ModelDir("h200_tile_default_bf16_tn") + R"("}})",
               "ranks configs");
  fs::remove_all(dir);
}

// The shipped manifest with a reference ranker: it opens the ranker beside the regression, and
// the offline decision (no heuristic picks to rank with) still runs the pick.
TEST(CrossProviderTest, ReferenceRankerOpensAndOfflineDecisionsKeepThePick) {
  SelectorOptions options = Offline();
  options.time_top_k = 2;
  auto selector = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn_rank"), options);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  ASSERT_NE((*selector)->reference_ranker(), nullptr);
  EXPECT_TRUE((*selector)->reference_ranker()->model().UsesPeerRanks());
  EXPECT_EQ((*selector)->time_top_k(), 2);
  const GemmProblem p = LinearGemm(4096, 1, 4096);
  const std::span<const KernelConfig> lt = (*selector)->reference().Candidates(p);
  const std::span<const KernelConfig> tiles = (*selector)->challenger().Candidates(p);
  ASSERT_FALSE(lt.empty());
  ASSERT_FALSE(tiles.empty());
  auto d = (*selector)->Decide(p, lt[0], tiles);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(ConfigKey(d->reference_choice), ConfigKey(lt[0]));
  EXPECT_EQ(ConfigKey(d->ranked[0].config), ConfigKey(d->config));
  // Without a GPU the live path has no heuristic to ask: a clear error, not a guess.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    EXPECT_FALSE((*selector)->Select(p).ok());
  }
  // The manifest without a ranker opens none.
  auto plain = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn"), Offline());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ((*plain)->reference_ranker(), nullptr);
}

// A cross-provider directory listed with other devices' models: the one trained for the device
// is chosen, the cross directory counting as trained for its reference model's hardware.
TEST(CrossProviderTest, PerDeviceListsMayNameACrossProviderDirectory) {
  const std::string cross = ModelDir("h200_cross_bf16_tn_rank");
  const std::string h100 = ModelDir("h100_cublaslt_default_rank");
  auto manifest = LoadCrossProviderManifest(cross);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  auto h200_model = Model::Load(manifest->reference_model);
  auto h100_model = Model::Load(h100);
  ASSERT_TRUE(h200_model.ok() && h100_model.ok());
  for (const std::vector<std::string>& dirs :
       {std::vector<std::string>{cross, h100}, std::vector<std::string>{h100, cross}}) {
    for (const auto& [hardware, expected] : {std::pair{h200_model->spec().hardware, cross},
                                             std::pair{h100_model->spec().hardware, h100}}) {
      SelectorOptions options = Offline();
      options.hardware = hardware;
      auto chosen = ModelDirForDevice(dirs, options);
      ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
      EXPECT_EQ(*chosen, expected);
      // The C API's form, one ':'-separated string, chooses the same.
      auto joined = ModelDirForDevice(dirs[0] + ":" + dirs[1], options);
      ASSERT_TRUE(joined.ok()) << joined.status().ToString();
      EXPECT_EQ(*joined, expected);
    }
  }
  // A list without a cross-provider directory is left to Selector::Open, which chooses itself.
  const std::string plain = ModelDir("h200_cublaslt_default_rank") + ":" + h100;
  auto unchanged = ModelDirForDevice(plain, Offline());
  ASSERT_TRUE(unchanged.ok());
  EXPECT_EQ(*unchanged, plain);
  // A listed directory that is no model is an error naming it.
  auto missing = ModelDirForDevice(std::vector<std::string>{cross, "/nonexistent/nope"}, Offline());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "nope")) << missing.status().ToString();
}

TEST(CrossProviderTest, BadReferenceRankersAreClearErrors) {
  const fs::path dir = fs::temp_directory_path() / "kselect_cross_provider_ranker_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto expect_error = [&](const std::string& ranker, const std::string& needle) {
    std::ofstream(dir / "cross_provider.json")
        << R"({"format": "kselect.cross_provider", "format_version": 1,
              "reference": {"provider": "cublaslt", "model": ")" +
               ModelDir("h200_cublaslt_default_tflops") + R"(", "ranker": ")" + ranker +
               R"("}, "challenger": {"provider": "tile", "model": ")" +
               ModelDir("h200_tile_default_bf16_tn") + R"("}})";
    auto s = CrossProviderSelector::Open(dir.string(), Offline());
    ASSERT_FALSE(s.ok()) << ranker;
    EXPECT_TRUE(Contains(s.status().message(), needle)) << s.status().ToString();
  };
  expect_error("no_such_model", "reference ranker");
  // A tile model cannot rank cuBLASLt's configs.
  expect_error(ModelDir("h200_tile_bf16_tn"), "another provider");
  fs::remove_all(dir);
}

TEST(CrossProviderTest, EvaluationNeedsScreenedTimes) {
  auto selector = CrossProviderSelector::Open(ModelDir("h200_cross_bf16_tn"), Offline());
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  const fs::path file = fs::temp_directory_path() / "kselect_cross_no_screened.json";
  std::ofstream(file) << R"({"format": "kselect.head_to_head", "results": [{"problem": {}}]})";
  const std::string files[] = {file.string()};
  auto e = EvaluateCrossProvider(**selector, files);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), "--screened")) << e.status().ToString();
  // Hostile files: wrong types and missing fields are parse errors naming the result.
  for (const char* text :
       {R"({"format": "kselect.head_to_head", "results": {"a": 1}})",
        R"({"format": "kselect.head_to_head", "results": [{"screened": [], "problem": 3}]})",
        R"({"format": "kselect.head_to_head", "results": [{"screened": [{"ms": "fast"}],
            "problem": {"kind": "gemm", "m": 8, "n": 8, "k": 8}}]})"}) {
    std::ofstream(file) << text;
    auto bad = EvaluateCrossProvider(**selector, files);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().code(), StatusCode::kParseError) << bad.status().ToString();
  }
  fs::remove(file);
}

}  // namespace
}  // namespace kselect
