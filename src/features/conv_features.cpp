// The convolution feature extractor ("conv"). Names and values come from one code path
// (FeatureSink, feature_blocks.h), as in the GEMM extractor, so a spec cannot drift from what is
// computed. One model per direction: the spec records its direction and the extractor refuses
// problems of another.
//
// Formulas (G groups, Cg = C/G, Kg = K/G, Do/Ho/Wo output sizes; 2D problems have Di = Do = Z = 1):
//   problem:        conv_n c k g, c_per_group, k_per_group, conv_di hi wi, conv_do ho wo,
//                   conv_z y x, stride_d/h/w, pad_d/h/w, dilation_d/h/w, spatial_dims (2 or 3),
//                   conv_layout, dtype (categorical), bytes_per_element, filter_volume = Z*Y*X;
//                   log2 of N, Cg, Kg, Di*Hi*Wi, Do*Ho*Wo; c_per_group_align and
//                   k_per_group_align (largest power of two dividing Cg, Kg, at most 64); flags
//                   grouped (G > 1), depthwise
//                   (G > 1 and Cg = 1), filter_1x1, stride_1, unit_dilation, padded, plain_gemm
//                   (1x1, stride 1, no padding: the convolution is a GEMM); flops (the same in
//                   every direction), log2_flops, min_bytes (input, weight, output once),
//                   log2_min_bytes, arithmetic_intensity = flops / min_bytes
//   implicit GEMM:  ImplicitGemmOf (features.h: M, N, K per group by direction, batch G), as the
//                   GEMM extractor's size features with a gemm_ prefix: gemm_m gemm_n gemm_k
//                   gemm_batch, gemm_log2_m/n/k/mnk, gemm_aspect_ratio_mn/mk/nk and
//                   gemm_arithmetic_intensity = the view's flops / its operands' bytes (im2col
//                   operands: the reuse an implicit-GEMM kernel sees, not the tensors' own)
//   kernel:         where the provider's field table has tile_m/n/k (ck_conv): tile_m/n/k,
//                   tile_mn, tile_volume; then the provider's own columns from its field table
//                   (cuDNN: cudnn_engine_id categorical, cudnn_knob_<type> per knob type the
//                   spec lists, NaN where a config lacks the knob; CK: pipeline, scheduler, dsb,
//                   split image)
//   interaction:    tiled providers only: the GEMM interaction block on the implicit-GEMM view
//   hardware:       the GEMM extractor's hw_* block (peak for the convolution's dtype)
//   estimate:       EstimateConv: est_compute_us, est_memory_us, est_time_us, est_tflops,
//                   est_compute_fraction
//   peer (optional, last): kConvPeerFeatures (features.h), from the heuristics' picks
#include <algorithm>
#include <array>
#include <set>

#include "core/text.h"
#include "features/feature_blocks.h"
#include "kselect/config_schema.h"
#include "kselect/features.h"

namespace kselect {
namespace {

using namespace feature_blocks;

bool IsConvProvider(Provider p) {
  return SchemaOf(p).gemm_traits == nullptr;
}

// The provider's knob-list field that writes knob features, or nullptr.
const ConfigField* KnobField(Provider provider) {
  for (const ConfigField& field : SchemaOf(provider).fields) {
    if (field.type == FieldType::kKnobList && field.encoding == FeatureEncoding::kKnobValues) {
      return &field;
    }
  }
  return nullptr;
}

// The knob type of a feature named <prefix>_<type>, or nullopt.
std::optional<int32_t> KnobTypeOfFeature(std::string_view prefix, std::string_view name) {
  if (!name.starts_with(prefix) || name.size() <= prefix.size() + 1 || name[prefix.size()] != '_') {
    return std::nullopt;
  }
  auto value = text::ParseInt64(name.substr(prefix.size() + 1));
  if (!value.ok() || *value < INT32_MIN || *value > INT32_MAX) return std::nullopt;
  // Only the canonical spelling: "cudnn_knob_07" is no column this extractor writes.
  if (KnobFeatureName(prefix, static_cast<int32_t>(*value)) != name) return std::nullopt;
  return static_cast<int32_t>(*value);
}

// Tiled convolution providers name their implicit-GEMM tile in the field table (ck_conv).
bool HasTile(Provider provider) {
  return FindConfigField(provider, "tile_m") && FindConfigField(provider, "tile_n") &&
         FindConfigField(provider, "tile_k");
}

TileShape TileOf(const KernelConfig& config) {
  TileShape t;
  t.tile_m = ConfigFieldValue(config, "tile_m").value_or(0);
  t.tile_n = ConfigFieldValue(config, "tile_n").value_or(0);
  t.tile_k = ConfigFieldValue(config, "tile_k").value_or(0);
  return t;
}

// The largest power of two dividing `value`, at most `cap`.
int64_t PowerOfTwoFactor(int64_t value, int64_t cap) {
  int64_t factor = 1;
  while (factor < cap && value % (factor * 2) == 0) factor *= 2;
  return factor;
}

void ProblemBlock(const ConvProblem& p, FeatureSink& s) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  const int64_t cg = p.c / p.g, kg = p.k / p.g, filter = p.z * p.y * p.x;
  const int64_t out_spatial = p.Do() * p.Ho() * p.Wo();
  s.Num("conv_n", d(p.n));
  s.Num("conv_c", d(p.c));
  s.Num("conv_k", d(p.k));
  s.Num("conv_g", d(p.g));
  s.Num("c_per_group", d(cg));
  s.Num("k_per_group", d(kg));
  s.Num("conv_di", d(p.di));
  s.Num("conv_hi", d(p.hi));
  s.Num("conv_wi", d(p.wi));
  s.Num("conv_do", d(p.Do()));
  s.Num("conv_ho", d(p.Ho()));
  s.Num("conv_wo", d(p.Wo()));
  s.Num("conv_z", d(p.z));
  s.Num("conv_y", d(p.y));
  s.Num("conv_x", d(p.x));
  s.Num("stride_d", d(p.stride_d));
  s.Num("stride_h", d(p.stride_h));
  s.Num("stride_w", d(p.stride_w));
  s.Num("pad_d", d(p.pad_d));
  s.Num("pad_h", d(p.pad_h));
  s.Num("pad_w", d(p.pad_w));
  s.Num("dilation_d", d(p.dilation_d));
  s.Num("dilation_h", d(p.dilation_h));
  s.Num("dilation_w", d(p.dilation_w));
  s.Num("spatial_dims", p.SpatialDims());
  s.Cat("conv_layout", Code("conv_layout", ConvLayoutName(p.layout)));
  s.Cat("dtype", Code("dtype", DataTypeName(p.dtype)));
  s.Num("bytes_per_element", DataTypeBits(p.dtype) / 8.0);
  s.Num("filter_volume", d(filter));
  s.Num("log2_n", Log2(d(p.n)));
  s.Num("log2_c_per_group", Log2(d(cg)));
  s.Num("log2_k_per_group", Log2(d(kg)));
  // Vector width the channels allow: engines need C/G and K/G to be multiples of 8 elements (16
  // bytes) for their fast paths; odd channel counts (stems, R(2+1)D's 45) fall off them.
  s.Num("c_per_group_align", d(PowerOfTwoFactor(cg, 64)));
  s.Num("k_per_group_align", d(PowerOfTwoFactor(kg, 64)));
  s.Num("log2_input_spatial", Log2(d(p.di * p.hi * p.wi)));
  s.Num("log2_output_spatial", Log2(d(out_spatial)));
  const bool stride_1 = p.stride_d == 1 && p.stride_h == 1 && p.stride_w == 1;
  const bool padded = p.pad_d > 0 || p.pad_h > 0 || p.pad_w > 0;
  s.Num("grouped", Flag(p.g > 1));
  s.Num("depthwise", Flag(p.g > 1 && cg == 1));
  s.Num("filter_1x1", Flag(filter == 1));
  s.Num("stride_1", Flag(stride_1));
  s.Num("unit_dilation", Flag(p.dilation_d == 1 && p.dilation_h == 1 && p.dilation_w == 1));
  s.Num("padded", Flag(padded));
  s.Num("plain_gemm", Flag(filter == 1 && stride_1 && !padded));
  const double flops = p.Flops(), bytes = p.MinBytes();
  s.Num("flops", flops);
  s.Num("log2_flops", Log2(flops));
  s.Num("min_bytes", bytes);
  s.Num("log2_min_bytes", Log2(bytes));
  s.Num("arithmetic_intensity", Ratio(flops, bytes));
}

// The per-config blocks: tile, provider columns, interaction (tiled providers), estimate.
void ConfigBlocks(const ConvProblem& p, const GemmProblem& view, const KernelConfig& c,
                  std::span<const int32_t> knob_types, const HardwareConstants& hw,
                  FeatureSink& s) {
  const bool tiled = HasTile(ProviderOf(c));
  const TileShape t = tiled ? TileOf(c) : TileShape{};
  if (tiled) {
    s.Num("tile_m", Defined(t.tile_m));
    s.Num("tile_n", Defined(t.tile_n));
    s.Num("tile_k", Defined(t.tile_k));
    s.Num("tile_mn", Defined(t.tile_m * t.tile_n));
    s.Num("tile_volume", Defined(t.tile_m * t.tile_n * t.tile_k));
  }
  ProviderKernelBlock(c, knob_types, s);
  if (tiled) {
    GemmKernelTraits traits;
    traits.tile_m = t.tile_m;
    traits.tile_n = t.tile_n;
    traits.tile_k = t.tile_k;
    InteractionBlock(view, traits, t, hw, s);
  }
  const AnalyticalEstimate e = EstimateConv(p, t, hw);
  s.Num("est_compute_us", e.compute_us);
  s.Num("est_memory_us", e.memory_us);
  s.Num("est_time_us", e.time_us);
  s.Num("est_tflops", e.tflops);
  s.Num("est_compute_fraction", e.time_us > 0 ? e.compute_us / e.time_us : kNaN);
}

// Block layout: [problem][implicit GEMM][hardware][per config: tile, provider, interaction,
// estimate]. The first three are the same for every candidate of a problem.
void ProblemBlocks(const ConvProblem& p, const GemmProblem& view, const HardwareConstants& hw,
                   FeatureSink& s) {
  ProblemBlock(p, s);
  GemmSizeBlock(view, "gemm_", s);
  HardwareBlock(p.dtype, hw, s);
}

constexpr size_t kConvPeerWidth = std::size(kConvPeerFeatures);

// The family a peer pick shares with a candidate: the provider's engine (cuDNN), else none.
std::optional<int64_t> EngineOf(const KernelConfig& config) {
  return ConfigFieldValue(config, "engine_id");
}

// One heuristic's list, summarised once per problem.
struct PeerList {
  std::vector<const PeerPick*> picks;           // rank order; picks[0] is the list's first choice
  std::vector<std::optional<int64_t>> engines;  // each pick's engine, read once per problem
};

PeerList ListOf(std::span<const PeerPick> peer, PeerHeuristic heuristic) {
  PeerList list;
  for (const PeerPick& pick : peer) {
    if (pick.heuristic == heuristic) list.picks.push_back(&pick);
  }
  std::stable_sort(list.picks.begin(), list.picks.end(),
                   [](const PeerPick* a, const PeerPick* b) { return a->rank < b->rank; });
  for (const PeerPick* pick : list.picks) list.engines.push_back(EngineOf(pick->config));
  return list;
}

// The candidate's rank, engine match, top engine, engine picks and best engine rank in `list`
// (NaN for an empty list; the engine fields NaN where the provider has no engine field).
void ListFeatures(const KernelConfig& config, std::optional<int64_t> engine, const PeerList& list,
                  double* rank, double* same_engine, double* top_engine, double* engine_picks,
                  double* engine_best) {
  if (list.picks.empty()) {
    *rank = *same_engine = *top_engine = *engine_picks = *engine_best = kNaN;
    return;
  }
  int32_t own = 0, picks = 0, best = 0;
  for (size_t i = 0; i < list.picks.size(); ++i) {
    const PeerPick& pick = *list.picks[i];
    if (own == 0 && pick.config == config) own = pick.rank;
    if (engine && list.engines[i] == engine) {
      ++picks;
      if (best == 0) best = pick.rank;
    }
  }
  *rank = own;
  const std::optional<int64_t>& top = list.engines.front();
  *same_engine = engine && top ? Flag(*engine == *top) : kNaN;
  *top_engine = top ? static_cast<double>(*top) : kNaN;
  *engine_picks = engine ? static_cast<double>(picks) : kNaN;
  *engine_best = engine ? static_cast<double>(best) : kNaN;
}

// kConvPeerFeatures of one candidate into v.
void ConvPeerBlock(const KernelConfig& config, const PeerList& a, const PeerList& b, double* v) {
  const std::optional<int64_t> engine = EngineOf(config);
  ListFeatures(config, engine, a, &v[0], &v[2], &v[4], &v[6], &v[7]);
  ListFeatures(config, engine, b, &v[1], &v[3], &v[5], &v[8], &v[9]);
  v[10] = !a.picks.empty() && !b.picks.empty()
              ? Flag(a.picks.front()->config == b.picks.front()->config)
              : kNaN;
  v[11] = static_cast<double>(a.picks.size());
}

}  // namespace

GemmProblem ImplicitGemmOf(const ConvProblem& p) {
  const int64_t g = std::max<int64_t>(p.g, 1);
  const int64_t cg = p.c / g, kg = p.k / g, filter = p.z * p.y * p.x;
  const int64_t output_pixels = p.n * p.Do() * p.Ho() * p.Wo();
  const int64_t input_pixels = p.n * p.di * p.hi * p.wi;
  GemmProblem v;
  switch (p.direction) {
    case ConvDirection::kForward:
      v.m = output_pixels, v.n = kg, v.k = cg * filter;
      break;
    case ConvDirection::kBackwardData:
      v.m = input_pixels, v.n = cg, v.k = kg * filter;
      break;
    case ConvDirection::kBackwardWeight:
      v.m = kg, v.n = cg * filter, v.k = output_pixels;
      break;
  }
  v.batch = g;
  v.dtype_a = v.dtype_b = v.dtype_c = p.dtype;
  v.compute = p.compute;
  return v;
}

AnalyticalEstimate EstimateConv(const ConvProblem& p, const TileShape& tile,
                                const HardwareConstants& hw) {
  AnalyticalEstimate e;
  const AnalyticalEstimate view = EstimateGemm(ImplicitGemmOf(p), tile, hw);
  const double bw = hw.mem_bandwidth_gb_s * 1e9;
  if (!(bw > 0) || std::isnan(view.compute_us)) {
    e.compute_us = e.memory_us = e.time_us = e.tflops = kNaN;
    return e;
  }
  // The view's own memory term counts im2col operands (the input once per filter tap), which an
  // implicit-GEMM kernel never reads from DRAM: the tensors' minimum bytes stand in for it.
  e.compute_us = view.compute_us;
  e.memory_us = p.MinBytes() / bw * 1e6;
  e.time_us = std::max(e.compute_us, e.memory_us) + 2.0;
  e.tflops = p.Flops() / (e.time_us * 1e-6) / 1e12;
  return e;
}

std::vector<int32_t> KnobTypesOf(std::span<const KernelConfig> configs) {
  std::set<int32_t> types;
  for (const KernelConfig& c : configs) {
    for (const ConfigField& field : SchemaOf(c).fields) {
      if (field.type != FieldType::kKnobList) continue;
      for (const auto& [type, value] : field.get_knobs(c)) types.insert(type);
    }
  }
  return {types.begin(), types.end()};
}

std::vector<int32_t> SpecKnobTypes(const FeatureSpec& spec) {
  std::vector<int32_t> types;
  const ConfigField* field = KnobField(spec.provider);
  if (field == nullptr) return types;
  for (const FeatureInfo& f : spec.features) {
    if (auto type = KnobTypeOfFeature(field->feature, f.name)) types.push_back(*type);
  }
  return types;
}

StatusOr<FeatureSpec> ConvFeatureSpec(Provider provider, ConvDirection direction,
                                      const HardwareConstants& hardware,
                                      std::span<const int32_t> knob_types, bool with_peer_block) {
  if (!IsConvProvider(provider)) {
    return InvalidArgumentError("provider " + std::string(ProviderName(provider)) +
                                " is a GEMM provider: convolution features need cudnn or ck_conv");
  }
  const std::set<int32_t> unique(knob_types.begin(), knob_types.end());
  if (!unique.empty() && KnobField(provider) == nullptr) {
    return InvalidArgumentError("provider " + std::string(ProviderName(provider)) +
                                " has no knobs, but knob types were given");
  }
  const std::vector<int32_t> knobs(unique.begin(), unique.end());
  FeatureSpec spec;
  spec.extractor = "conv";
  spec.provider = provider;
  spec.conv_direction = direction;
  spec.hardware = hardware;
  // Names mode over a sample problem and the provider's default config: the columns depend on
  // the provider, the knob list and nothing else.
  ConvProblem p;
  p.c = p.k = 64;
  p.hi = p.wi = 56;
  p.y = p.x = 3;
  p.direction = direction;
  FeatureSink s(&spec.features);
  const GemmProblem view = ImplicitGemmOf(p);
  ProblemBlocks(p, view, hardware, s);
  ConfigBlocks(p, view, SchemaOf(provider).make_default(), knobs, hardware, s);
  if (with_peer_block) {
    for (std::string_view name : kConvPeerFeatures) {
      spec.features.push_back({std::string(name), FeatureKind::kNumeric});
    }
  }
  for (const FeatureInfo& f : spec.features) {
    const auto it = Encodings().find(f.name);
    if (it != Encodings().end()) spec.encodings[f.name] = it->second;
  }
  return spec;
}

StatusOr<ConvFeatureExtractor> ConvFeatureExtractor::Create(const FeatureSpec& spec) {
  if (spec.extractor != "conv") {
    return SchemaMismatchError("feature spec is for extractor '" + spec.extractor +
                               "', not the convolution extractor");
  }
  if (!IsConvProvider(spec.provider)) {
    return SchemaMismatchError("feature spec provider " + std::string(ProviderName(spec.provider)) +
                               " is not a convolution provider");
  }
  if (!spec.conv_direction) {
    return SchemaMismatchError(
        "the convolution feature spec names no direction (conv_direction); retrain the model");
  }
  ConvFeatureExtractor extractor(spec);
  // The engine computes the spec's knob columns (ascending); the slots below pick them by name,
  // in whatever order the spec lists them.
  KSELECT_ASSIGN_OR_RETURN(
      const FeatureSpec engine,
      ConvFeatureSpec(spec.provider, *spec.conv_direction, spec.hardware, SpecKnobTypes(spec)));
  KSELECT_RETURN_IF_ERROR(CheckEncodingVersion(spec, engine));
  extractor.knob_types_ = SpecKnobTypes(engine);
  extractor.engine_width_ = engine.features.size();
  for (const FeatureInfo& f : spec.features) {
    const auto peer = std::find(std::begin(kConvPeerFeatures), std::end(kConvPeerFeatures), f.name);
    if (peer != std::end(kConvPeerFeatures)) {
      const int index = static_cast<int>(peer - std::begin(kConvPeerFeatures));
      if (f.kind != FeatureKind::kNumeric ||
          std::count(extractor.column_of_slot_.begin(), extractor.column_of_slot_.end(),
                     -1 - index) != 0) {
        return SchemaMismatchError("feature '" + f.name + "' must appear once, numeric");
      }
      extractor.column_of_slot_.push_back(-1 - index);
      extractor.uses_peer_ = true;
      continue;
    }
    KSELECT_ASSIGN_OR_RETURN(const int column, EngineColumnOf(f, spec, engine, "convolution"));
    extractor.column_of_slot_.push_back(column);
  }
  return extractor;
}

StatusOr<const ConvProblem*> ConvFeatureExtractor::CheckInput(
    const Problem& problem, std::span<const KernelConfig> configs,
    std::optional<std::span<const PeerPick>> peer) const {
  const auto* conv = std::get_if<ConvProblem>(&problem);
  if (conv == nullptr) {
    return InvalidArgumentError("the convolution feature extractor cannot describe " +
                                ProblemToString(problem) +
                                ": it computes features of convolutions only");
  }
  if (conv->direction != *spec_.conv_direction) {
    return InvalidArgumentError(
        "this model was trained on " + std::string(ConvDirectionName(*spec_.conv_direction)) +
        " convolutions and cannot score " + conv->ToString() + ": use a " +
        std::string(ConvDirectionName(conv->direction)) + " model (one model per direction)");
  }
  // Sizes feed divisions and products below: an impossible problem is refused, not computed.
  KSELECT_RETURN_IF_ERROR(conv->Validate());
  for (const KernelConfig& c : configs) {
    if (ProviderOf(c) != spec_.provider) {
      return InvalidArgumentError("a " + std::string(ProviderName(ProviderOf(c))) +
                                  " config was given to a " +
                                  std::string(ProviderName(spec_.provider)) + " feature extractor");
    }
  }
  if (uses_peer_) KSELECT_RETURN_IF_ERROR(CheckPeerPicks(spec_.provider, peer));
  return conv;
}

Status ConvFeatureExtractor::Extract(const Problem& problem, const KernelConfig& config,
                                     std::vector<double>* out,
                                     std::optional<std::span<const PeerPick>> peer) const {
  return ExtractBatch(problem, std::span<const KernelConfig>(&config, 1), out, peer);
}

Status ConvFeatureExtractor::ExtractBatch(const Problem& problem,
                                          std::span<const KernelConfig> candidates,
                                          std::vector<double>* out,
                                          std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_ASSIGN_OR_RETURN(const ConvProblem* conv, CheckInput(problem, candidates, peer));
  PeerList list_a, list_b;
  if (uses_peer_) {
    list_a = ListOf(*peer, PeerHeuristic::kFirst);
    list_b = ListOf(*peer, PeerHeuristic::kSecond);
  }
  std::array<double, kConvPeerWidth> peer_values{};
  const GemmProblem view = ImplicitGemmOf(*conv);
  std::vector<double> row(engine_width_);
  FeatureSink shared(row.data());
  ProblemBlocks(*conv, view, spec_.hardware, shared);
  const size_t width = NumFeatures();
  out->assign(candidates.size() * width, 0.0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    FeatureSink s(row.data() + shared.count());
    ConfigBlocks(*conv, view, candidates[i], knob_types_, spec_.hardware, s);
    KSELECT_CHECK(shared.count() + s.count() == engine_width_);
    if (uses_peer_) ConvPeerBlock(candidates[i], list_a, list_b, peer_values.data());
    double* dst = out->data() + i * width;
    for (size_t slot = 0; slot < width; ++slot) {
      const int column = column_of_slot_[slot];
      dst[slot] = column >= 0 ? row[static_cast<size_t>(column)]
                              : peer_values[static_cast<size_t>(-1 - column)];
    }
  }
  return Status::Ok();
}

}  // namespace kselect
