// The convolution feature extractor: the implicit-GEMM view per direction on hand-computed
// problems, knob columns from the spec (absent = missing, other knob sets line up), the CK conv
// fields from its table, spec compatibility and the refusals.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "kselect/features.h"
#include "model/synthetic_gemm_data.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;

HardwareConstants H200() {
  return HardwareConstantsFor(testing_util::SyntheticH200()).value();
}

FeatureSpec CudnnSpec(ConvDirection direction, std::vector<int32_t> knobs = {}) {
  return ConvFeatureSpec(Provider::kCudnn, direction, H200(), knobs).value();
}

double Feature(const FeatureSpec& spec, const std::vector<double>& row, std::string_view name,
               size_t candidate = 0) {
  for (size_t i = 0; i < spec.features.size(); ++i) {
    if (spec.features[i].name == name) return row[candidate * spec.features.size() + i];
  }
  ADD_FAILURE() << "no feature " << name;
  return NAN;
}

bool HasFeature(const FeatureSpec& spec, std::string_view name) {
  for (const FeatureInfo& f : spec.features) {
    if (f.name == name) return true;
  }
  return false;
}

// N=2, C=64, K=128, G=2, 28x28, 3x3, stride 2, pad 1: Ho = Wo = (28 + 2 - 3) / 2 + 1 = 14.
ConvProblem Strided(ConvDirection direction) {
  ConvProblem p;
  p.n = 2;
  p.c = 64;
  p.k = 128;
  p.g = 2;
  p.hi = p.wi = 28;
  p.y = p.x = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  p.direction = direction;
  return p;
}

std::vector<double> ExtractOne(const FeatureSpec& spec, const ConvProblem& p,
                               const KernelConfig& config) {
  const auto e = CreateFeatureExtractor(spec);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  std::vector<double> row;
  const Status s = (*e)->Extract(p, config, &row);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(row.size(), spec.features.size());
  return row;
}

TEST(ConvFeatures, ImplicitGemmViewPerDirection) {
  struct Case {
    ConvDirection direction;
    int64_t m, n, k;
  };
  // fwd: M = N*Ho*Wo, N = K/G, K = C/G*Y*X; bwd_data: M = N*Hi*Wi, N = C/G, K = K/G*Y*X;
  // bwd_weight: M = K/G, N = C/G*Y*X, K = N*Ho*Wo.
  for (const Case& c : {Case{ConvDirection::kForward, 2 * 14 * 14, 64, 32 * 9},
                        Case{ConvDirection::kBackwardData, 2 * 28 * 28, 32, 64 * 9},
                        Case{ConvDirection::kBackwardWeight, 64, 32 * 9, 2 * 14 * 14}}) {
    SCOPED_TRACE(ConvDirectionName(c.direction));
    const ConvProblem p = Strided(c.direction);
    const GemmProblem view = ImplicitGemmOf(p);
    EXPECT_EQ(view.m, c.m);
    EXPECT_EQ(view.n, c.n);
    EXPECT_EQ(view.k, c.k);
    EXPECT_EQ(view.batch, 2);

    const FeatureSpec spec = CudnnSpec(c.direction);
    EXPECT_EQ(spec.extractor, "conv");
    EXPECT_EQ(spec.conv_direction, c.direction);
    const std::vector<double> row = ExtractOne(spec, p, CudnnConfig{.engine_id = 7});
    EXPECT_EQ(Feature(spec, row, "gemm_m"), c.m);
    EXPECT_EQ(Feature(spec, row, "gemm_n"), c.n);
    EXPECT_EQ(Feature(spec, row, "gemm_k"), c.k);
    EXPECT_EQ(Feature(spec, row, "gemm_batch"), 2);
    EXPECT_DOUBLE_EQ(Feature(spec, row, "gemm_log2_mnk"),
                     std::log2(static_cast<double>(c.m) * c.n * c.k * 2));
    // The convolution's own sizes do not depend on the direction.
    EXPECT_EQ(Feature(spec, row, "conv_ho"), 14);
    EXPECT_EQ(Feature(spec, row, "conv_wo"), 14);
    EXPECT_EQ(Feature(spec, row, "c_per_group"), 32);
    EXPECT_EQ(Feature(spec, row, "k_per_group"), 64);
    EXPECT_EQ(Feature(spec, row, "spatial_dims"), 2);
    EXPECT_EQ(Feature(spec, row, "flops"), 2.0 * 2 * 128 * 14 * 14 * 32 * 9);
    EXPECT_EQ(Feature(spec, row, "grouped"), 1);
    EXPECT_EQ(Feature(spec, row, "depthwise"), 0);
    EXPECT_EQ(Feature(spec, row, "stride_1"), 0);
    EXPECT_EQ(Feature(spec, row, "plain_gemm"), 0);
    EXPECT_EQ(Feature(spec, row, "cudnn_engine_id"), 7);
  }
}

TEST(ConvFeatures, FlagsFor3dDepthwiseAndOneByOneProblems) {
  ConvProblem vol;  // 3D: Do = Ho = Wo kept by pad 1
  vol.c = vol.k = 32;
  vol.di = 8;
  vol.hi = vol.wi = 16;
  vol.z = vol.y = vol.x = 3;
  vol.pad_d = vol.pad_h = vol.pad_w = 1;
  const FeatureSpec fwd = CudnnSpec(ConvDirection::kForward);
  std::vector<double> row = ExtractOne(fwd, vol, CudnnConfig{});
  EXPECT_EQ(Feature(fwd, row, "spatial_dims"), 3);
  EXPECT_EQ(Feature(fwd, row, "conv_do"), 8);
  EXPECT_EQ(Feature(fwd, row, "gemm_m"), 8 * 16 * 16);
  EXPECT_EQ(Feature(fwd, row, "gemm_k"), 32 * 27);
  EXPECT_EQ(Feature(fwd, row, "filter_volume"), 27);

  ConvProblem depthwise = Strided(ConvDirection::kForward);
  depthwise.c = depthwise.k = depthwise.g = 64;
  row = ExtractOne(fwd, depthwise, CudnnConfig{});
  EXPECT_EQ(Feature(fwd, row, "depthwise"), 1);
  EXPECT_EQ(Feature(fwd, row, "gemm_n"), 1);
  EXPECT_EQ(Feature(fwd, row, "gemm_batch"), 64);

  // A 1x1, stride-1, unpadded convolution is a plain GEMM: M = N*H*W, N = K, K = C.
  ConvProblem pointwise;
  pointwise.n = 4;
  pointwise.c = 256;
  pointwise.k = 512;
  pointwise.hi = pointwise.wi = 14;
  row = ExtractOne(fwd, pointwise, CudnnConfig{});
  EXPECT_EQ(Feature(fwd, row, "filter_1x1"), 1);
  EXPECT_EQ(Feature(fwd, row, "stride_1"), 1);
  EXPECT_EQ(Feature(fwd, row, "plain_gemm"), 1);
  EXPECT_EQ(Feature(fwd, row, "grouped"), 0);
  EXPECT_EQ(Feature(fwd, row, "gemm_m"), 4 * 14 * 14);
  EXPECT_EQ(Feature(fwd, row, "gemm_n"), 512);
  EXPECT_EQ(Feature(fwd, row, "gemm_k"), 256);
}

TEST(ConvFeatures, KnobColumnsComeFromTheSpecAndAbsentKnobsAreMissing) {
  // Unsorted and repeated knob types: one column each, ascending.
  const FeatureSpec spec = CudnnSpec(ConvDirection::kForward, {14, 3, 1, 3});
  EXPECT_EQ(SpecKnobTypes(spec), (std::vector<int32_t>{1, 3, 14}));
  for (const char* name : {"cudnn_knob_1", "cudnn_knob_3", "cudnn_knob_14"}) {
    EXPECT_TRUE(HasFeature(spec, name)) << name;
  }
  EXPECT_FALSE(HasFeature(spec, "cudnn_knob_7"));
  const auto engine =
      std::find_if(spec.features.begin(), spec.features.end(),
                   [](const FeatureInfo& f) { return f.name == "cudnn_engine_id"; });
  ASSERT_NE(engine, spec.features.end());
  EXPECT_EQ(engine->kind, FeatureKind::kCategorical);

  // Knob 3 set to 0 is a value; knob 14 is absent (missing); knob 99 has no column (ignored).
  const CudnnConfig config{.engine_id = 5, .knobs = {{3, 0}, {1, 4}, {99, 5}}};
  const std::vector<double> row = ExtractOne(spec, Strided(ConvDirection::kForward), config);
  EXPECT_EQ(Feature(spec, row, "cudnn_knob_1"), 4);
  EXPECT_EQ(Feature(spec, row, "cudnn_knob_3"), 0);
  EXPECT_TRUE(std::isnan(Feature(spec, row, "cudnn_knob_14")));
  EXPECT_EQ(Feature(spec, row, "cudnn_engine_id"), 5);

  // A model trained on knobs {1, 3} scores a config of another knob set column for column.
  const FeatureSpec narrow = CudnnSpec(ConvDirection::kForward, {1, 3});
  const std::vector<double> other =
      ExtractOne(narrow, Strided(ConvDirection::kForward), CudnnConfig{.knobs = {{14, 2}}});
  EXPECT_TRUE(std::isnan(Feature(narrow, other, "cudnn_knob_1")));
  EXPECT_TRUE(std::isnan(Feature(narrow, other, "cudnn_knob_3")));

  const std::vector<KernelConfig> configs = {CudnnConfig{.knobs = {{9, 1}, {2, 0}}},
                                             CudnnConfig{.knobs = {{2, 3}}}, CudnnConfig{}};
  EXPECT_EQ(KnobTypesOf(configs), (std::vector<int32_t>{2, 9}));
}

TEST(ConvFeatures, CkConvFieldsComeFromItsTableWithTileInteractions) {
  const FeatureSpec spec =
      ConvFeatureSpec(Provider::kCkConv, ConvDirection::kForward, H200()).value();
  EXPECT_FALSE(HasFeature(spec, "cudnn_engine_id"));
  EXPECT_TRUE(SpecKnobTypes(spec).empty());
  ASSERT_TRUE(spec.encodings.contains("ck_conv_pipeline"));
  EXPECT_EQ(spec.encodings.at("ck_conv_pipeline").front(), "compv3");
  const CkConvConfig config{.tile_m = 128,
                            .tile_n = 128,
                            .tile_k = 64,
                            .pipeline = "compv4",
                            .scheduler = "intrawave",
                            .double_smem_buffer = true};
  // fwd view M = 392, N = 64: ceil(392 / 128) = 4 tiles, 392 / 512 of them useful.
  const std::vector<double> row = ExtractOne(spec, Strided(ConvDirection::kForward), config);
  EXPECT_EQ(Feature(spec, row, "tile_m"), 128);
  EXPECT_EQ(Feature(spec, row, "tile_volume"), 128 * 128 * 64);
  EXPECT_EQ(Feature(spec, row, "ck_conv_pipeline"), 1);  // compv4
  EXPECT_EQ(Feature(spec, row, "ck_conv_scheduler"), 0);
  EXPECT_EQ(Feature(spec, row, "double_smem_buffer"), 1);
  EXPECT_EQ(Feature(spec, row, "split_image"), 0);
  EXPECT_EQ(Feature(spec, row, "tiles_m"), 4);
  EXPECT_EQ(Feature(spec, row, "tiles_n"), 1);
  EXPECT_DOUBLE_EQ(Feature(spec, row, "fill_m"), 392.0 / 512.0);
  EXPECT_EQ(Feature(spec, row, "output_tiles"), 4 * 1 * 2);  // x groups
  // A pipeline the list lacks is missing, not a guess.
  CkConvConfig unknown = config;
  unknown.pipeline = "comp_future";
  EXPECT_TRUE(std::isnan(Feature(spec, ExtractOne(spec, Strided(ConvDirection::kForward), unknown),
                                 "ck_conv_pipeline")));
}

TEST(ConvFeatures, EstimateIsTheRooflineOfTheViewAndTheTensors) {
  const HardwareConstants hw = H200();
  const ConvProblem p = Strided(ConvDirection::kBackwardData);
  const FeatureSpec spec = CudnnSpec(ConvDirection::kBackwardData);
  const std::vector<double> row = ExtractOne(spec, p, CudnnConfig{});
  const double peak = hw.flops_per_clock_per_sm_16bit * hw.sm_clock_mhz * 1e6 * hw.sm_count;
  // Untiled: compute is the view's (padded, strided) work at peak; memory the tensors once.
  const double compute_us = ImplicitGemmOf(p).Flops() / peak * 1e6;
  const double memory_us = p.MinBytes() / (hw.mem_bandwidth_gb_s * 1e9) * 1e6;
  EXPECT_NEAR(Feature(spec, row, "est_compute_us"), compute_us, 1e-9);
  EXPECT_NEAR(Feature(spec, row, "est_memory_us"), memory_us, 1e-9);
  const double time_us = std::max(compute_us, memory_us) + 2.0;
  EXPECT_NEAR(Feature(spec, row, "est_time_us"), time_us, 1e-9);
  EXPECT_NEAR(Feature(spec, row, "est_tflops"), p.Flops() / (time_us * 1e-6) / 1e12, 1e-9);
  EXPECT_NEAR(Feature(spec, row, "hw_peak_tflops"), peak / 1e12, 1e-9);
  // Strided bwd_data's view does 4x the useful work here (every fourth input pixel per tap).
  EXPECT_DOUBLE_EQ(ImplicitGemmOf(p).Flops(), 4 * p.Flops());
}

TEST(ConvFeatures, BatchEqualsSingleAndSpecOrderIsFollowed) {
  FeatureSpec spec = CudnnSpec(ConvDirection::kBackwardWeight, {0, 2, 5});
  const std::vector<KernelConfig> configs = {CudnnConfig{.engine_id = 1, .knobs = {{0, 2}}},
                                             CudnnConfig{.engine_id = 9, .knobs = {{5, 1}, {2, 8}}},
                                             CudnnConfig{.engine_id = 3}};
  const ConvProblem p = Strided(ConvDirection::kBackwardWeight);
  for (bool reversed : {false, true}) {
    if (reversed) std::reverse(spec.features.begin(), spec.features.end());
    const auto e = ConvFeatureExtractor::Create(spec);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    std::vector<double> batch, single;
    ASSERT_TRUE(e->ExtractBatch(p, configs, &batch).ok());
    ASSERT_EQ(batch.size(), configs.size() * spec.features.size());
    for (size_t i = 0; i < configs.size(); ++i) {
      ASSERT_TRUE(e->Extract(p, configs[i], &single).ok());
      for (size_t f = 0; f < single.size(); ++f) {
        const double b = batch[i * single.size() + f];
        EXPECT_EQ(std::memcmp(&single[f], &b, sizeof(double)), 0)
            << "config " << i << " feature " << spec.features[f].name;
      }
    }
    EXPECT_EQ(Feature(spec, batch, "cudnn_engine_id", 1), 9);
    EXPECT_EQ(Feature(spec, batch, "cudnn_knob_2", 1), 8);
    EXPECT_EQ(Feature(spec, batch, "gemm_m", 2), 64);
  }
}

TEST(ConvFeatures, SpecRoundTripsAndIncompatibleSpecsAreCaught) {
  const FeatureSpec spec = CudnnSpec(ConvDirection::kBackwardData, {1, 3});
  const auto back = FeatureSpecFromJson(FeatureSpecToJson(spec), "spec.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, spec);
  EXPECT_TRUE(Contains(FeatureSpecToJson(spec), "\"conv_direction\": \"bwd_data\""));
  // GEMM specs read and write as before: no direction.
  EXPECT_FALSE(
      Contains(FeatureSpecToJson(GemmFeatureSpec(Provider::kTile, H200())), "conv_direction"));
  std::string bad = FeatureSpecToJson(spec);
  bad.replace(bad.find("\"bwd_data\""), 10, "\"sideways\"");
  const auto refused = FeatureSpecFromJson(bad, "spec.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "conv_direction"));

  EXPECT_TRUE(CheckSpecCompatible(spec, spec).ok());
  Status s = CheckSpecCompatible(spec, CudnnSpec(ConvDirection::kBackwardData, {1, 14}));
  EXPECT_EQ(s.code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(s.message(), "knob types {1,14} here, {1,3} in the model"));
  s = CheckSpecCompatible(spec, CudnnSpec(ConvDirection::kBackwardData));
  EXPECT_TRUE(Contains(s.message(), "knob types {} here")) << s.ToString();
  s = CheckSpecCompatible(spec, CudnnSpec(ConvDirection::kForward, {1, 3}));
  EXPECT_EQ(s.code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(s.message(), "direction fwd here, bwd_data in the model"));
  s = CheckSpecCompatible(
      spec, ConvFeatureSpec(Provider::kCkConv, ConvDirection::kBackwardData, H200()).value());
  EXPECT_TRUE(Contains(s.message(), "provider"));
  s = CheckSpecCompatible(spec, GemmFeatureSpec(Provider::kCublasLt, H200()));
  EXPECT_EQ(s.code(), StatusCode::kSchemaMismatch);
}

TEST(ConvFeatures, RefusesWhatItCannotDescribe) {
  const FeatureSpec spec = CudnnSpec(ConvDirection::kForward, {1});
  const auto e = CreateFeatureExtractor(spec).value();
  std::vector<double> out;
  Status s = e->Extract(GemmProblem{.m = 64, .n = 64, .k = 64}, CudnnConfig{}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "convolutions only"));
  s = e->Extract(Strided(ConvDirection::kBackwardData), CudnnConfig{}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), "trained on fwd convolutions"));
  EXPECT_TRUE(Contains(s.message(), "one model per direction"));
  ConvProblem impossible = Strided(ConvDirection::kForward);
  impossible.c = 60;
  impossible.g = 8;  // groups do not divide C
  s = e->Extract(impossible, CudnnConfig{}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = e->Extract(Strided(ConvDirection::kForward), TileConfig{}, &out);
  EXPECT_TRUE(Contains(s.message(), "config was given"));

  FeatureSpec no_direction = spec;
  no_direction.conv_direction.reset();
  EXPECT_TRUE(Contains(CreateFeatureExtractor(no_direction).status().message(), "no direction"));
  FeatureSpec unknown = spec;
  unknown.features.push_back({"cudnn_knob_x", FeatureKind::kNumeric});
  EXPECT_TRUE(Contains(CreateFeatureExtractor(unknown).status().message(), "cudnn_knob_x"));
  FeatureSpec gemm_with_direction = GemmFeatureSpec(Provider::kTile, H200());
  gemm_with_direction.conv_direction = ConvDirection::kForward;
  EXPECT_FALSE(CreateFeatureExtractor(gemm_with_direction).ok());

  EXPECT_FALSE(ConvFeatureSpec(Provider::kCublasLt, ConvDirection::kForward, H200()).ok());
  const std::vector<int32_t> knobs = {1};
  const auto ck = ConvFeatureSpec(Provider::kCkConv, ConvDirection::kForward, H200(), knobs);
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(Contains(ck.status().message(), "has no knobs"));
}

}  // namespace
}  // namespace kselect

namespace kselect {
namespace {

TEST(ConvFeatures, PeerBlockReadsBothHeuristicsByEngine) {
  const std::vector<int32_t> knobs = {3};
  const FeatureSpec spec =
      ConvFeatureSpec(Provider::kCudnn, ConvDirection::kForward, H200(), knobs, true).value();
  EXPECT_TRUE(SpecUsesPeerRanks(spec));
  EXPECT_EQ(spec.features.back().name, "peer_list_size");
  const auto e = CreateFeatureExtractor(spec);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE((*e)->UsesPeerRanks());

  const CudnnConfig a1{.engine_id = 7, .knobs = {{3, 1}}};
  const CudnnConfig a2{.engine_id = 7, .knobs = {{3, 2}}};
  const CudnnConfig a3{.engine_id = 9, .knobs = {{3, 1}}};
  const CudnnConfig b1{.engine_id = 9, .knobs = {{3, 4}}};
  const CudnnConfig other{.engine_id = 11, .knobs = {{3, 1}}};
  // Mode A lists a1, a2, a3; mode B lists b1 then a2 (given out of order: ranks decide).
  const std::vector<PeerPick> peer = {
      {a2, 2}, {a1, 1}, {a3, 3}, {a2, 2, PeerHeuristic::kSecond}, {b1, 1, PeerHeuristic::kSecond}};
  const std::vector<KernelConfig> candidates = {a2, b1, other};
  std::vector<double> rows;
  ASSERT_TRUE((*e)->ExtractBatch(Strided(ConvDirection::kForward), candidates, &rows, peer).ok());
  // a2: rank 2 in A, 2 in B; shares engine 7 with A's top (two A picks, best rank 1), not with
  // B's top (engine 9); B has no other engine-7 pick.
  EXPECT_EQ(Feature(spec, rows, "peer_rank", 0), 2);
  EXPECT_EQ(Feature(spec, rows, "peer_rank_b", 0), 2);
  EXPECT_EQ(Feature(spec, rows, "peer_same_engine", 0), 1);
  EXPECT_EQ(Feature(spec, rows, "peer_same_engine_b", 0), 0);
  EXPECT_EQ(Feature(spec, rows, "peer_top_engine", 0), 7);
  EXPECT_EQ(Feature(spec, rows, "peer_top_engine_b", 0), 9);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_picks", 0), 2);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_best_rank", 0), 1);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_picks_b", 0), 1);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_best_rank_b", 0), 2);
  EXPECT_EQ(Feature(spec, rows, "peer_tops_agree", 0), 0);
  EXPECT_EQ(Feature(spec, rows, "peer_list_size", 0), 3);
  // b1: unlisted in A (0), B's pick; engine 9 has A's rank-3 pick.
  EXPECT_EQ(Feature(spec, rows, "peer_rank", 1), 0);
  EXPECT_EQ(Feature(spec, rows, "peer_rank_b", 1), 1);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_best_rank", 1), 3);
  EXPECT_EQ(Feature(spec, rows, "peer_same_engine_b", 1), 1);
  // other: listed nowhere, its engine nowhere.
  EXPECT_EQ(Feature(spec, rows, "peer_rank", 2), 0);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_picks", 2), 0);
  EXPECT_EQ(Feature(spec, rows, "peer_engine_best_rank_b", 2), 0);

  // Empty lists are missing, not "unlisted"; a model needing picks refuses to go without.
  ASSERT_TRUE((*e)->ExtractBatch(Strided(ConvDirection::kForward), candidates, &rows,
                                 std::span<const PeerPick>())
                  .ok());
  EXPECT_TRUE(std::isnan(Feature(spec, rows, "peer_rank", 0)));
  EXPECT_TRUE(std::isnan(Feature(spec, rows, "peer_tops_agree", 0)));
  EXPECT_EQ(Feature(spec, rows, "peer_list_size", 0), 0);
  const Status missing = (*e)->ExtractBatch(Strided(ConvDirection::kForward), candidates, &rows);
  EXPECT_EQ(missing.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(missing.message(), "--peer-rank")) << missing.ToString();
  const std::vector<PeerPick> bad = {{a1, 0}};
  EXPECT_EQ((*e)->ExtractBatch(Strided(ConvDirection::kForward), candidates, &rows, bad).code(),
            StatusCode::kInvalidArgument);

  // Single extraction equals the batch; the spec without the block has no peer columns.
  std::vector<double> one;
  ASSERT_TRUE((*e)->Extract(Strided(ConvDirection::kForward), a2, &one, peer).ok());
  ASSERT_TRUE((*e)->ExtractBatch(Strided(ConvDirection::kForward), candidates, &rows, peer).ok());
  for (size_t i = 0; i < one.size(); ++i) {
    if (std::isnan(one[i])) {
      EXPECT_TRUE(std::isnan(rows[i])) << spec.features[i].name;
    } else {
      EXPECT_EQ(one[i], rows[i]) << spec.features[i].name;
    }
  }
  EXPECT_FALSE(SpecUsesPeerRanks(CudnnSpec(ConvDirection::kForward, {3})));
}

}  // namespace
}  // namespace kselect
