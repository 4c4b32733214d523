// The feature engine: spec round trip and strict reading, refusal of mismatched specs, the
// formulas on hand-computed cases, and single extraction equal to batch extraction.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kselect/features.h"
#include "kselect/ingest.h"
#include "model/synthetic_gemm_data.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

HardwareConstants H200() {
  return HardwareConstantsFor(testing_util::SyntheticH200()).value();
}

double Feature(const FeatureSpec& spec, const std::vector<double>& row, std::string_view name) {
  for (size_t i = 0; i < spec.features.size(); ++i) {
    if (spec.features[i].name == name) return row[i];
  }
  ADD_FAILURE() << "no feature " << name;
  return NAN;
}

// Bitwise equality, so NaN == NaN.
bool SameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

TEST(HardwareConstants, MeasuredValuesWinAndAmdRowsUseTheTable) {
  const HardwareConstants h = H200();
  EXPECT_EQ(h.arch, "sm_90");
  EXPECT_EQ(h.sm_count, 132);
  EXPECT_EQ(h.mem_bandwidth_gb_s, 4800);  // the profile's, not the H100 table's 3352
  EXPECT_EQ(h.flops_per_clock_per_sm_16bit, 4096);
  HardwareProfile amd;
  amd.vendor = "amd";
  amd.arch = "gfx950";
  const auto g = HardwareConstantsFor(amd);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->sm_count, 256);
  HardwareProfile unknown;
  unknown.arch = "sm_42";
  const auto u = HardwareConstantsFor(unknown);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(Contains(u.status().message(), "sm_42"));
}

TEST(FeatureSpec, RoundTripsThroughJson) {
  for (Provider p : {Provider::kCublasLt, Provider::kTile, Provider::kCkTile}) {
    const FeatureSpec spec = GemmFeatureSpec(p, H200());
    const auto back = FeatureSpecFromJson(FeatureSpecToJson(spec), "spec.json");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, spec);
    EXPECT_FALSE(spec.CategoricalIndices().empty());
  }
}

TEST(FeatureSpec, NamesAreUniqueAndProviderColumnsDiffer) {
  const FeatureSpec lt = GemmFeatureSpec(Provider::kCublasLt, H200());
  const FeatureSpec ck = GemmFeatureSpec(Provider::kCkTile, H200());
  const std::vector<std::string> lt_names = lt.Names();
  std::set<std::string> names(lt_names.begin(), lt_names.end());
  EXPECT_EQ(names.size(), lt.features.size());
  EXPECT_TRUE(names.count("cublaslt_algo_id"));
  EXPECT_FALSE(names.count("ck_pipeline"));
  const auto ck_names = ck.Names();
  EXPECT_NE(std::find(ck_names.begin(), ck_names.end(), "ck_pipeline"), ck_names.end());
  EXPECT_TRUE(ck.encodings.count("ck_pipeline"));
}

TEST(FeatureSpec, StrictReaderRefusesUnknownKeysVersionsAndKinds) {
  const std::string text = FeatureSpecToJson(GemmFeatureSpec(Provider::kTile, H200()));
  auto edit = [&](auto fn) {
    nlohmann::json j = nlohmann::json::parse(text);
    fn(j);
    return FeatureSpecFromJson(j.dump(), "m/feature_spec.json");
  };
  auto unknown = edit([](nlohmann::json& j) { j["surprise"] = 1; });
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(Contains(unknown.status().message(), "surprise"));
  auto major = edit([](nlohmann::json& j) { j["format_major"] = 2; });
  ASSERT_FALSE(major.ok());
  EXPECT_EQ(major.status().code(), StatusCode::kSchemaMismatch);
  auto kind = edit([](nlohmann::json& j) { j["features"][0]["kind"] = "ordinal"; });
  ASSERT_FALSE(kind.ok());
  EXPECT_TRUE(Contains(kind.status().message(), "ordinal"));
  auto missing = edit([](nlohmann::json& j) { j.erase("hardware"); });
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "hardware"));
  EXPECT_FALSE(FeatureSpecFromJson("{not json", "x.json").ok());
}

// Issue 44, defect 22: an error in the spec's hardware block names the file and the field, and
// says what was there ("null", not "null null"); a missing or zero figure is refused.
TEST(FeatureSpec, HardwareErrorsNameTheFileAndTheField) {
  const std::string text = FeatureSpecToJson(GemmFeatureSpec(Provider::kTile, H200()));
  auto edit = [&](auto fn) {
    nlohmann::json j = nlohmann::json::parse(text);
    fn(j);
    return FeatureSpecFromJson(j.dump(), "m/feature_spec.json");
  };
  const struct {
    const char* key;
    nlohmann::json value;
    const char* says;
  } cases[] = {
      {"sm_count", nullptr,
       "m/feature_spec.json: hardware.sm_count: expected an integer, got null"},
      {"sm_count", "many", "hardware.sm_count: expected an integer, got string"},
      {"sm_count", 0, "m/feature_spec.json: hardware.sm_count: must be a positive number"},
      {"mem_bandwidth_gb_s", nullptr, "hardware.mem_bandwidth_gb_s: missing (null)"},
      {"mem_bandwidth_gb_s", -1.5, "hardware.mem_bandwidth_gb_s: must be a positive number"},
      {"l2_bytes", -1, "m/feature_spec.json: hardware.l2_bytes: negative"},
  };
  for (const auto& c : cases) {
    auto spec = edit([&](nlohmann::json& j) { j["hardware"][c.key] = c.value; });
    ASSERT_FALSE(spec.ok()) << c.key;
    EXPECT_TRUE(Contains(spec.status().message(), c.says)) << spec.status().message();
    EXPECT_FALSE(Contains(spec.status().message(), "null null")) << spec.status().message();
  }
  auto not_object = edit([](nlohmann::json& j) { j["hardware"] = nullptr; });
  ASSERT_FALSE(not_object.ok());
  EXPECT_TRUE(Contains(not_object.status().message(),
                       "m/feature_spec.json: hardware: expected a JSON object, got null"))
      << not_object.status().message();
}

TEST(FeatureSpec, MismatchIsRefusedWithAClearMessage) {
  const FeatureSpec model = GemmFeatureSpec(Provider::kTile, H200());
  EXPECT_TRUE(CheckSpecCompatible(model, model).ok());

  FeatureSpec reordered = model;
  std::swap(reordered.features[0], reordered.features[1]);
  Status s = CheckSpecCompatible(model, reordered);
  EXPECT_EQ(s.code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(s.message(), "feature 0"));

  HardwareConstants other = H200();
  other.sm_count = 114;
  s = CheckSpecCompatible(model, GemmFeatureSpec(Provider::kTile, other));
  EXPECT_EQ(s.code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(s.message(), "sm_count"));

  FeatureSpec version = model;
  version.encoding_version = kFeatureEncodingVersion + 1;
  EXPECT_TRUE(Contains(CheckSpecCompatible(version, model).message(), "encoding version"));
  EXPECT_TRUE(
      Contains(CheckSpecCompatible(GemmFeatureSpec(Provider::kCublasLt, H200()), model).message(),
               "provider"));
}

TEST(FeatureExtractor, RefusesSpecsItCannotFill) {
  FeatureSpec spec = GemmFeatureSpec(Provider::kTile, H200());
  spec.features.push_back({"origami_magic", FeatureKind::kNumeric});
  auto e = GemmFeatureExtractor::Create(spec);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), "origami_magic"));

  spec = GemmFeatureSpec(Provider::kTile, H200());
  spec.encoding_version = 99;
  e = GemmFeatureExtractor::Create(spec);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), "retrain"));

  spec = GemmFeatureSpec(Provider::kTile, H200());
  spec.encodings["tile_pipeline"] = {"warp_specialized", "multistage", "small_m"};
  e = GemmFeatureExtractor::Create(spec);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), "tile_pipeline"));
}

TEST(FeatureExtractor, AcceptsAModelWhoseCategoriesThisKselectExtended) {
  // A model trained before the decode pipeline existed: its codes are a prefix of ours.
  FeatureSpec spec = GemmFeatureSpec(Provider::kTile, H200());
  ASSERT_EQ(spec.encodings["tile_pipeline"].back(), "decode");
  spec.encodings["tile_pipeline"] = {"multistage", "warp_specialized", "small_m"};
  const auto e = GemmFeatureExtractor::Create(spec);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  spec.encodings["tile_pipeline"] = {"multistage", "warp_specialized", "small_m", "decode", "x"};
  EXPECT_FALSE(GemmFeatureExtractor::Create(spec).ok());  // longer than ours: not ours
}

TEST(FeatureExtractor, TheRegistryPicksTheSpecsExtractorAndRefusesUnknownNames) {
  const FeatureSpec spec = GemmFeatureSpec(Provider::kCublasLt, H200());
  EXPECT_EQ(FeatureExtractorNames(), (std::vector<std::string_view>{"gemm", "conv"}));
  const auto created = CreateFeatureExtractor(spec);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_NE(dynamic_cast<const GemmFeatureExtractor*>(created->get()), nullptr);
  EXPECT_EQ((*created)->spec(), spec);
  EXPECT_EQ((*created)->NumFeatures(), spec.features.size());

  // Through the interface, the same features as the GEMM extractor itself.
  const GemmProblem p{.m = 300, .n = 4096, .k = 1024};
  const std::vector<KernelConfig> configs = {CublasLtConfig{.algo_id = 66, .tile_m = 128}};
  std::vector<double> direct, through;
  ASSERT_TRUE(GemmFeatureExtractor::Create(spec)->ExtractBatch(p, configs, &direct).ok());
  ASSERT_TRUE((*created)->ExtractBatch(p, configs, &through).ok());
  ASSERT_EQ(direct.size(), through.size());
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_TRUE(SameBits(direct[i], through[i])) << i;

  FeatureSpec other = spec;
  other.extractor = "origami";
  const auto unknown = CreateFeatureExtractor(other);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(unknown.status().message(), "'origami'"));
  EXPECT_TRUE(Contains(unknown.status().message(), "gemm, conv"));

  // "conv" is known now, and its extractor refuses a GEMM provider's spec.
  FeatureSpec conv = spec;
  conv.extractor = "conv";
  const auto refused = CreateFeatureExtractor(conv);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(refused.status().message(), "not a convolution provider"));
}

TEST(FeatureExtractor, TheGemmExtractorRefusesOtherProblems) {
  const auto e = CreateFeatureExtractor(GemmFeatureSpec(Provider::kTile, H200())).value();
  const Problem conv = ConvProblem{.c = 64, .k = 64, .hi = 56, .wi = 56, .y = 3, .x = 3};
  std::vector<double> out;
  const Status single = e->Extract(conv, TileConfig{}, &out);
  EXPECT_EQ(single.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(single.message(), "GEMM problems only"));
  const std::vector<KernelConfig> configs = {TileConfig{}};
  EXPECT_EQ(e->ExtractBatch(conv, configs, &out).code(), StatusCode::kInvalidArgument);
}

TEST(FeatureExtractor, ProjectsBySpecOrder) {
  FeatureSpec spec = GemmFeatureSpec(Provider::kTile, H200());
  std::reverse(spec.features.begin(), spec.features.end());
  const auto e = GemmFeatureExtractor::Create(spec).value();
  GemmProblem p;
  p.m = 1000;
  p.n = 777;
  p.k = 4096;
  std::vector<double> row;
  ASSERT_TRUE(e.Extract(p, TileConfig{}, &row).ok());
  EXPECT_EQ(row.back(), 1000);  // "m" is now last
  EXPECT_EQ(Feature(spec, row, "n"), 777);
}

TEST(FeatureExtractor, InteractionFormulasOnAHandComputedCase) {
  const FeatureSpec spec = GemmFeatureSpec(Provider::kTile, H200());
  const auto e = GemmFeatureExtractor::Create(spec).value();
  GemmProblem p;  // bf16
  p.m = 1000;
  p.n = 1000;
  p.k = 4000;
  TileConfig c;  // 128x128x32, 2x2 warps (128 threads), 3 stages, masks on
  std::vector<double> row;
  ASSERT_TRUE(e.Extract(p, c, &row).ok());
  EXPECT_EQ(Feature(spec, row, "tiles_m"), 8);
  EXPECT_EQ(Feature(spec, row, "tiles_k"), 125);
  EXPECT_EQ(Feature(spec, row, "blocks"), 64);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "fill_m"), 1000.0 / 1024.0);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "fill_k"), 1.0);
  // smem = 3 * (128+128) * 32 * 2 B = 49152 -> 4 blocks fit in 233472 B; threads allow 16.
  EXPECT_EQ(Feature(spec, row, "smem_estimate_bytes"), 49152);
  EXPECT_EQ(Feature(spec, row, "resident_blocks_per_sm"), 4);
  EXPECT_EQ(Feature(spec, row, "waves"), 1);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "wave_efficiency"), 64.0 / 528.0);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "sm_coverage"), 64.0 / 132.0);
  EXPECT_EQ(Feature(spec, row, "needs_padding_m"), 1);
  EXPECT_EQ(Feature(spec, row, "needs_padding_k"), 0);
  EXPECT_EQ(Feature(spec, row, "missing_padding_m"), 0);  // mask_m is on
  c.mask_m = false;
  ASSERT_TRUE(e.Extract(p, c, &row).ok());
  EXPECT_EQ(Feature(spec, row, "missing_padding_m"), 1);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "arithmetic_intensity"), p.Flops() / p.MinBytes());
  EXPECT_EQ(Feature(spec, row, "layout"), 2);  // rcr
  EXPECT_EQ(Feature(spec, row, "dtype"), 3);   // bf16
}

TEST(FeatureExtractor, UndefinedCublasLtTilesAreMissingNotZero) {
  const FeatureSpec spec = GemmFeatureSpec(Provider::kCublasLt, H200());
  const auto e = GemmFeatureExtractor::Create(spec).value();
  GemmProblem p;
  p.m = p.n = p.k = 4096;
  std::vector<double> row;
  ASSERT_TRUE(e.Extract(p, CublasLtConfig{}, &row).ok());
  EXPECT_TRUE(std::isnan(Feature(spec, row, "tile_m")));
  EXPECT_TRUE(std::isnan(Feature(spec, row, "waves")));
  // The roofline estimate still exists: 2*4096^3 flops at 132*4096*1.98e9 flop/s.
  const double est = Feature(spec, row, "est_compute_us");
  EXPECT_NEAR(est, 2.0 * 4096.0 * 4096 * 4096 / (132.0 * 4096 * 1.98e9) * 1e6, 1e-6);
  EXPECT_FALSE(e.Extract(p, TileConfig{}, &row).ok());  // wrong provider
}

TEST(FeatureExtractor, AnalyticalEstimateQuantisesWaves) {
  const HardwareConstants hw = H200();
  GemmProblem p;
  p.m = 128 * 132;  // exactly one wave of 128x128 tiles at one block per SM...
  p.n = 128;
  p.k = 8192;
  TileShape t{128, 128, 64, 1, 0, 0};  // unknown threads and stages: one block per SM
  const AnalyticalEstimate one = EstimateGemm(p, t, hw);
  p.m += 1;  // ...one more row needs a second wave
  const AnalyticalEstimate two = EstimateGemm(p, t, hw);
  EXPECT_NEAR(two.compute_us / one.compute_us, 2.0, 1e-9);
  EXPECT_GT(one.tflops, two.tflops);
  EXPECT_GE(one.time_us, std::max(one.compute_us, one.memory_us));
}

std::vector<KernelConfig> RandomConfigs(Provider provider, int count, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(0, 3);
  const int tiles[] = {16, 64, 128, 256};
  const char* pipelines[] = {"compv3", "compv4", "mem", "unheard_of"};
  std::vector<KernelConfig> out;
  for (int i = 0; i < count; ++i) {
    if (provider == Provider::kCublasLt) {
      CublasLtConfig c;
      c.algo_id = pick(rng) * 20;
      c.tile_id = pick(rng);
      c.tile_m = pick(rng) ? tiles[pick(rng)] : 0;  // sometimes undefined
      c.tile_n = tiles[pick(rng)];
      c.stage_k = 64;
      c.stages = pick(rng);
      c.split_k = 1 + pick(rng);
      c.cluster_m = 1 + pick(rng) % 2;
      c.cluster_n = 1;
      out.push_back(c);
    } else if (provider == Provider::kTile) {
      TileConfig c;
      c.tile_m = tiles[pick(rng)];
      c.tile_n = tiles[pick(rng)];
      c.tile_k = 32 * (1 + pick(rng) % 2);
      c.pipeline = pick(rng) == 0 ? TilePipeline::kWarpSpecialized : TilePipeline::kMultistage;
      c.mask_k = pick(rng) % 2;
      c.split_k = 1 + pick(rng);
      out.push_back(c);
    } else {
      CkTileConfig c;
      c.tile_m = tiles[pick(rng)];
      c.tile_n = tiles[pick(rng)];
      c.tile_k = 64;
      c.warp_m = 2;
      c.warp_n = 2;
      c.warp_k = 1;
      c.warp_tile_m = c.warp_tile_n = 32;
      c.warp_tile_k = 16;
      c.pipeline = pipelines[pick(rng)];
      c.scheduler = "intrawave";
      c.epilogue = "cshuffle";
      c.pad_m = pick(rng) % 2;
      out.push_back(c);
    }
  }
  return out;
}

TEST(FeatureExtractor, BatchEqualsSingleForEveryProvider) {
  std::mt19937 rng(7);
  const std::vector<int64_t> dims = {1, 7, 128, 1000, 4096, 12345};
  for (Provider provider : {Provider::kCublasLt, Provider::kTile, Provider::kCkTile}) {
    const auto e = GemmFeatureExtractor::Create(GemmFeatureSpec(provider, H200())).value();
    const std::vector<KernelConfig> configs = RandomConfigs(provider, 40, rng);
    for (int64_t m : dims) {
      for (int64_t k : {int64_t{1}, int64_t{4096}}) {
        GemmProblem p;
        p.m = m;
        p.n = dims[(m + k) % dims.size()];
        p.k = k;
        p.dtype_a = p.dtype_b = (m % 2) ? DataType::kF8E4M3 : DataType::kBF16;
        std::vector<double> batch, single;
        ASSERT_TRUE(e.ExtractBatch(p, configs, &batch).ok());
        ASSERT_EQ(batch.size(), configs.size() * e.NumFeatures());
        for (size_t i = 0; i < configs.size(); ++i) {
          ASSERT_TRUE(e.Extract(p, configs[i], &single).ok());
          for (size_t f = 0; f < single.size(); ++f) {
            ASSERT_TRUE(SameBits(single[f], batch[i * e.NumFeatures() + f]))
                << ProviderName(provider) << " " << p.ToString() << " config " << i << " feature "
                << e.spec().features[f].name << ": " << single[f] << " vs "
                << batch[i * e.NumFeatures() + f];
          }
        }
      }
    }
  }
}

TEST(FeatureExtractor, PeerBlockTurnsTheHeuristicsPicksIntoFeatures) {
  const FeatureSpec spec = GemmFeatureSpec(Provider::kCublasLt, H200(), /*with_peer_block=*/true);
  ASSERT_TRUE(SpecUsesPeerRanks(spec));
  EXPECT_FALSE(SpecUsesPeerRanks(GemmFeatureSpec(Provider::kCublasLt, H200())));
  const size_t block = std::size(kPeerFeatures);
  ASSERT_GT(spec.features.size(), block);
  for (size_t i = 0; i < block; ++i) {
    EXPECT_EQ(spec.features[spec.features.size() - block + i].name, kPeerFeatures[i]);
  }
  // The spec survives its JSON and the extractor built from it takes picks.
  const FeatureSpec read = FeatureSpecFromJson(FeatureSpecToJson(spec), "test").value();
  const auto e = GemmFeatureExtractor::Create(read).value();
  ASSERT_TRUE(e.UsesPeerRanks());
  std::mt19937 rng(3);
  std::vector<KernelConfig> configs = RandomConfigs(Provider::kCublasLt, 12, rng);
  // The heuristic's first choice is configs[3], its second configs[7]; configs[5] shares the
  // first choice's family (algo, tile) but not its split-K.
  CublasLtConfig first = std::get<CublasLtConfig>(configs[3]);
  first.algo_id = 66;
  first.tile_m = 128;
  first.tile_n = 256;
  first.split_k = 1;
  first.cluster_m = 2;
  first.cluster_n = 1;
  configs[3] = first;
  CublasLtConfig sibling = first;
  sibling.split_k = 4;
  sibling.custom_option = first.custom_option + 1;
  configs[5] = sibling;
  CublasLtConfig other = std::get<CublasLtConfig>(configs[7]);
  other.algo_id = 23;
  other.tile_m = 64;
  other.tile_n = 256;
  other.split_k = 2;
  configs[7] = other;
  const std::vector<PeerPick> picks = {{configs[7], 2}, {configs[3], 1}};  // any order
  GemmProblem p;
  p.m = 64;
  p.n = 4096;
  p.k = 7168;
  std::vector<double> batch, single;
  ASSERT_TRUE(e.ExtractBatch(p, configs, &batch, picks).ok());
  const size_t width = e.NumFeatures();
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_TRUE(e.Extract(p, configs[i], &single, picks).ok());
    for (size_t f = 0; f < width; ++f) ASSERT_TRUE(SameBits(single[f], batch[i * width + f]));
  }
  auto feature = [&](size_t candidate, std::string_view name) {
    const auto names = e.spec().Names();
    const size_t f =
        static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    return batch[candidate * width + f];
  };
  EXPECT_EQ(feature(3, kPeerRankFeature), 1);
  EXPECT_EQ(feature(7, kPeerRankFeature), 2);
  EXPECT_EQ(feature(0, kPeerRankFeature), 0);
  EXPECT_EQ(feature(5, "peer_same_algo"), 1);
  EXPECT_EQ(feature(5, "peer_same_tile"), 1);
  EXPECT_EQ(feature(5, "peer_same_split_k"), 0);
  EXPECT_DOUBLE_EQ(feature(5, "peer_log2_split_k_ratio"), 2);
  EXPECT_EQ(feature(7, "peer_same_algo"), 0);
  EXPECT_DOUBLE_EQ(feature(7, "peer_log2_tile_m_ratio"), -1);
  EXPECT_DOUBLE_EQ(feature(7, "peer_log2_tile_n_ratio"), 0);
  for (size_t i : {0u, 5u, 7u}) {
    EXPECT_EQ(feature(i, "peer_top_algo"), 66);
    EXPECT_EQ(feature(i, "peer_top_tile_m"), 128);
    EXPECT_EQ(feature(i, "peer_top_tile_n"), 256);
    EXPECT_EQ(feature(i, "peer_top_split_k"), 1);
  }
  // The first choice's family holds one pick (itself); its sibling shares it; the second
  // choice's family is its own.
  EXPECT_EQ(feature(5, "peer_family_picks"), 1);
  EXPECT_EQ(feature(5, "peer_family_best_rank"), 1);
  EXPECT_EQ(feature(7, "peer_family_best_rank"), 2);
  // An empty list (the heuristic had nothing) is an answer: rank 0, comparisons NaN.
  ASSERT_TRUE(e.ExtractBatch(p, configs, &batch, std::span<const PeerPick>()).ok());
  EXPECT_EQ(feature(3, kPeerRankFeature), 0);
  EXPECT_TRUE(std::isnan(feature(3, "peer_same_algo")));
  EXPECT_EQ(feature(3, "peer_family_picks"), 0);
  // The other columns are the plain spec's.
  const auto plain = GemmFeatureExtractor::Create(GemmFeatureSpec(Provider::kCublasLt, H200()));
  std::vector<double> plain_row;
  ASSERT_TRUE(plain->Extract(p, configs[0], &plain_row).ok());
  ASSERT_EQ(plain_row.size() + block, width);
  for (size_t f = 0; f < plain_row.size(); ++f) EXPECT_TRUE(SameBits(plain_row[f], batch[f]));
  // Missing picks or a bad rank are errors; a plain extractor ignores picks.
  const Status missing = e.ExtractBatch(p, configs, &batch);
  EXPECT_EQ(missing.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(missing.message(), "--peer-rank"));
  EXPECT_FALSE(e.Extract(p, configs[0], &single).ok());
  const std::vector<PeerPick> bad_rank = {{configs[0], 0}};
  EXPECT_FALSE(e.ExtractBatch(p, configs, &batch, bad_rank).ok());
  TileConfig tile;
  const std::vector<PeerPick> other_provider = {{tile, 1}};
  EXPECT_FALSE(e.ExtractBatch(p, configs, &batch, other_provider).ok());
  EXPECT_TRUE(plain->ExtractBatch(p, configs, &batch, picks).ok());
  // Twice in a spec is refused.
  FeatureSpec twice = spec;
  twice.features.push_back({std::string(kPeerRankFeature), FeatureKind::kNumeric});
  EXPECT_FALSE(GemmFeatureExtractor::Create(twice).ok());
}

TEST(FeatureExtractor, UnknownCategoryIsMissingNotAGuess) {
  const FeatureSpec spec = GemmFeatureSpec(Provider::kCkTile, H200());
  const auto e = GemmFeatureExtractor::Create(spec).value();
  GemmProblem p;
  p.m = p.n = p.k = 512;
  CkTileConfig c;
  c.tile_m = c.tile_n = c.tile_k = 64;
  c.pipeline = "compv9";
  std::vector<double> row;
  ASSERT_TRUE(e.Extract(p, c, &row).ok());
  EXPECT_TRUE(std::isnan(Feature(spec, row, "ck_pipeline")));
  c.pipeline = "mem";
  ASSERT_TRUE(e.Extract(p, c, &row).ok());
  EXPECT_EQ(Feature(spec, row, "ck_pipeline"), 3);
}

// Real CK Tile rows (the ingested fixture log): features from their typed configs on gfx950.
TEST(FeatureExtractor, ExtractsFeaturesForIngestedCkTileRows) {
  IngestOptions options;
  options.arch = "gfx950";
  const auto ingested = IngestFile(testing_util::FixturePath("ck", "tile_good.log"),
                                   InputFormat::kCkTileLog, options);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  ASSERT_FALSE(ingested->measurements.empty());
  HardwareProfile profile;
  profile.arch = "gfx950";
  const auto hw = HardwareConstantsFor(profile).value();
  const FeatureSpec spec = GemmFeatureSpec(Provider::kCkTile, hw);
  const auto e = GemmFeatureExtractor::Create(spec).value();
  for (const Measurement& m : ingested->measurements) {
    std::vector<double> row;
    ASSERT_TRUE(e.Extract(std::get<GemmProblem>(m.problem), m.config, &row).ok());
    const auto& c = std::get<CkTileConfig>(m.config);
    EXPECT_EQ(Feature(spec, row, "tile_m"), c.tile_m);
    EXPECT_EQ(Feature(spec, row, "warp_tile_k"), c.warp_tile_k);
    EXPECT_FALSE(std::isnan(Feature(spec, row, "ck_pipeline"))) << c.pipeline;
    EXPECT_EQ(Feature(spec, row, "hw_sm_count"), 256);
    EXPECT_EQ(Feature(spec, row, "dtype"), 4);  // fp8
    EXPECT_GT(Feature(spec, row, "est_tflops"), 0);
  }
}

}  // namespace
}  // namespace kselect
