// The feature blocks the GEMM and convolution extractors share (feature_blocks.h).
#include "features/feature_blocks.h"

#include <array>
#include <optional>

namespace kselect::feature_blocks {

const std::map<std::string, std::vector<std::string>>& Encodings() {
  static const std::map<std::string, std::vector<std::string>> encodings = [] {
    std::map<std::string, std::vector<std::string>> all = {
        {"layout", {"rrr", "rrc", "rcr", "rcc", "crr", "crc", "ccr", "ccc"}},
        {"dtype", {"fp32", "tf32", "fp16", "bf16", "fp8", "bf8", "int8", "int32"}},
        {"conv_layout", {"nhwgc", "ngchw"}},
    };
    for (auto& [feature, values] : ConfigFeatureEncodings()) all[feature] = std::move(values);
    return all;
  }();
  return encodings;
}

double Code(std::string_view feature, std::string_view value) {
  const auto& values = Encodings().at(std::string(feature));
  const auto it = std::find(values.begin(), values.end(), value);
  return it == values.end() ? kNaN : static_cast<double>(it - values.begin());
}

void GemmSizeBlock(const GemmProblem& p, std::string_view prefix, FeatureSink& s) {
  // A name costs a short string even in values mode; the block runs once per problem, not per
  // candidate, so that is not worth a second code path.
  auto name = [prefix](std::string_view n) { return std::string(prefix).append(n); };
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n);
  const double k = static_cast<double>(p.k), batch = static_cast<double>(p.batch);
  s.Num(name("m"), m);
  s.Num(name("n"), n);
  s.Num(name("k"), k);
  s.Num(name("batch"), batch);
  s.Num(name("log2_m"), Log2(m));
  s.Num(name("log2_n"), Log2(n));
  s.Num(name("log2_k"), Log2(k));
  s.Num(name("log2_mnk"), Log2(m * n * k * batch));
  s.Num(name("arithmetic_intensity"), Ratio(p.Flops(), p.MinBytes()));
  s.Num(name("aspect_ratio_mn"), Ratio(m, n));
  s.Num(name("aspect_ratio_mk"), Ratio(m, k));
  s.Num(name("aspect_ratio_nk"), Ratio(n, k));
}

double PeakFlops(DataType dtype, const HardwareConstants& hw) {
  return hw.flops_per_clock_per_sm_16bit * DtypeTensorThroughputScale(dtype) * hw.sm_clock_mhz *
         1e6 * hw.sm_count;
}

void HardwareBlock(DataType dtype, const HardwareConstants& hw, FeatureSink& s) {
  s.Num("hw_sm_count", hw.sm_count);
  s.Num("hw_sm_clock_mhz", hw.sm_clock_mhz);
  s.Num("hw_l2_mb", static_cast<double>(hw.l2_bytes) / (1 << 20));
  s.Num("hw_smem_per_sm_kb", static_cast<double>(hw.smem_per_sm_bytes) / 1024.0);
  s.Num("hw_smem_per_block_kb", static_cast<double>(hw.smem_per_block_bytes) / 1024.0);
  s.Num("hw_mem_bandwidth_gb_s", hw.mem_bandwidth_gb_s);
  s.Num("hw_peak_tflops", PeakFlops(dtype, hw) / 1e12);
}

int64_t ResidentBlocksPerSm(const TileShape& t, double smem_estimate, const HardwareConstants& hw) {
  int64_t r = std::max<int64_t>(hw.max_blocks_per_sm, 1);
  bool limited = false;
  if (smem_estimate > 0 && hw.smem_per_sm_bytes > 0) {
    r = std::min<int64_t>(
        r, static_cast<int64_t>(static_cast<double>(hw.smem_per_sm_bytes) / smem_estimate));
    limited = true;
  }
  if (t.threads > 0 && hw.max_threads_per_sm > 0) {
    r = std::min<int64_t>(r, hw.max_threads_per_sm / t.threads);
    limited = true;
  }
  // Unknown resources (cuBLASLt does not say): assume one large block per SM, the common case
  // for Hopper kernels.
  if (!limited) r = 1;
  return std::max<int64_t>(r, 1);
}

double SmemEstimate(const GemmProblem& p, const TileShape& t) {
  if (t.tile_m <= 0 || t.tile_n <= 0 || t.tile_k <= 0 || t.stages <= 0) return kNaN;
  return static_cast<double>(t.stages) * static_cast<double>(t.tile_m + t.tile_n) *
         static_cast<double>(t.tile_k) * DataTypeBits(p.dtype_a) / 8.0;
}

void ProviderKernelBlock(const KernelConfig& c, std::span<const int32_t> knob_types,
                         FeatureSink& s) {
  for (const ConfigField& field : SchemaOf(c).fields) {
    switch (field.encoding) {
      case FeatureEncoding::kNone:
        break;
      case FeatureEncoding::kNumber:
        s.Num(field.feature, static_cast<double>(field.get(c)));
        break;
      case FeatureEncoding::kDefinedNumber:
        s.Num(field.feature, Defined(field.get(c)));
        break;
      case FeatureEncoding::kFlag:
        s.Num(field.feature, Flag(field.get(c) != 0));
        break;
      case FeatureEncoding::kCategory:
        s.Cat(field.feature, static_cast<double>(field.get(c)));
        break;
      case FeatureEncoding::kNamedCategory:
        s.Cat(field.feature, Code(field.feature, FieldText(field, c)));
        break;
      case FeatureEncoding::kKnobValues: {
        // Columns come from the spec's knob types, never from this config's list, so configs
        // with other knob sets line up; a knob the config lacks is missing, not 0 (0 is a value).
        const auto& knobs = field.get_knobs(c);
        for (const int32_t type : knob_types) {
          const auto it = std::find_if(knobs.begin(), knobs.end(),
                                       [type](const auto& knob) { return knob.first == type; });
          s.Num(KnobFeatureName(field.feature, type),
                it == knobs.end() ? kNaN : static_cast<double>(it->second));
        }
        break;
      }
    }
  }
}

std::string KnobFeatureName(std::string_view prefix, int32_t type) {
  return std::string(prefix) + "_" + std::to_string(type);
}

void InteractionBlock(const GemmProblem& p, const GemmKernelTraits& traits, const TileShape& t,
                      const HardwareConstants& hw, FeatureSink& s) {
  const bool known = t.tile_m > 0 && t.tile_n > 0 && t.tile_k > 0;
  const int64_t split = std::max<int64_t>(t.split_k, 1);
  const int64_t k_split = CeilDiv(p.k, split);
  double tiles_m = kNaN, tiles_n = kNaN, tiles_k = kNaN, output_tiles = kNaN, blocks = kNaN;
  double fill_m = kNaN, fill_n = kNaN, fill_k = kNaN, fill_all = kNaN;
  double resident = kNaN, waves = kNaN, wave_eff = kNaN, coverage = kNaN;
  if (known) {
    const int64_t tm = CeilDiv(p.m, t.tile_m), tn = CeilDiv(p.n, t.tile_n);
    const int64_t tk = CeilDiv(k_split, t.tile_k);
    const int64_t out = tm * tn * p.batch;
    const int64_t nblocks = out * split;
    tiles_m = static_cast<double>(tm);
    tiles_n = static_cast<double>(tn);
    tiles_k = static_cast<double>(tk);
    output_tiles = static_cast<double>(out);
    blocks = static_cast<double>(nblocks);
    fill_m = static_cast<double>(p.m) / static_cast<double>(t.tile_m * tm);
    fill_n = static_cast<double>(p.n) / static_cast<double>(t.tile_n * tn);
    fill_k = static_cast<double>(k_split) / static_cast<double>(t.tile_k * tk);
    fill_all = fill_m * fill_n * fill_k;
    const int64_t r = ResidentBlocksPerSm(t, SmemEstimate(p, t), hw);
    resident = static_cast<double>(r);
    if (hw.sm_count > 0) {
      const int64_t slots = static_cast<int64_t>(hw.sm_count) * r;
      const int64_t w = CeilDiv(nblocks, slots);
      waves = static_cast<double>(w);
      wave_eff = blocks / (static_cast<double>(w) * static_cast<double>(slots));
      coverage = std::min(1.0, blocks / hw.sm_count);
    }
  }
  s.Num("tiles_m", tiles_m);
  s.Num("tiles_n", tiles_n);
  s.Num("tiles_k", tiles_k);
  s.Num("output_tiles", output_tiles);
  s.Num("blocks", blocks);
  s.Num("fill_m", fill_m);
  s.Num("fill_n", fill_n);
  s.Num("fill_k", fill_k);
  s.Num("fill_all", fill_all);
  s.Num("resident_blocks_per_sm", resident);
  s.Num("waves", waves);
  s.Num("wave_efficiency", wave_eff);
  s.Num("sm_coverage", coverage);
  const auto dims = std::array<std::pair<int64_t, int64_t>, 3>{
      {{p.m, t.tile_m}, {p.n, t.tile_n}, {p.k, t.tile_k}}};
  static constexpr const char* kRatio[] = {"ratio_m_to_tile", "ratio_n_to_tile", "ratio_k_to_tile"};
  static constexpr const char* kSmaller[] = {"m_smaller_than_tile", "n_smaller_than_tile",
                                             "k_smaller_than_tile"};
  static constexpr const char* kNeeds[] = {"needs_padding_m", "needs_padding_n", "needs_padding_k"};
  static constexpr const char* kMissing[] = {"missing_padding_m", "missing_padding_n",
                                             "missing_padding_k"};
  const std::optional<std::array<bool, 3>>& pads = traits.padding;
  const bool pad_flags[3] = {pads && (*pads)[0], pads && (*pads)[1], pads && (*pads)[2]};
  for (int d = 0; d < 3; ++d) {
    const auto [dim, tile] = dims[d];
    s.Num(kRatio[d], tile > 0 ? static_cast<double>(dim) / tile : kNaN);
    s.Num(kSmaller[d], tile > 0 ? Flag(dim < tile) : kNaN);
  }
  for (int d = 0; d < 3; ++d) {
    const auto [dim, tile] = dims[d];
    const bool needs = tile > 0 && dim % tile != 0;
    s.Num(kNeeds[d], tile > 0 ? Flag(needs) : kNaN);
    s.Num(kMissing[d], tile > 0 && pads ? Flag(needs && !pad_flags[d]) : kNaN);
  }
}

Status CheckEncodingVersion(const FeatureSpec& saved, const FeatureSpec& engine) {
  if (saved.encoding_version == engine.encoding_version) return Status::Ok();
  return SchemaMismatchError("feature encoding version " + std::to_string(saved.encoding_version) +
                             " was saved with the model, but this kselect computes version " +
                             std::to_string(engine.encoding_version) +
                             "; retrain the model with this kselect");
}

StatusOr<int> EngineColumnOf(const FeatureInfo& f, const FeatureSpec& saved,
                             const FeatureSpec& engine, std::string_view extractor) {
  const auto it = std::find_if(engine.features.begin(), engine.features.end(),
                               [&](const FeatureInfo& e) { return e.name == f.name; });
  if (it == engine.features.end()) {
    return SchemaMismatchError("the model's feature '" + f.name +
                               "' is not computed by this kselect's " + std::string(extractor) +
                               " extractor");
  }
  if (it->kind != f.kind) {
    return SchemaMismatchError("feature '" + f.name + "' changed kind (categorical/numeric)");
  }
  const auto enc = saved.encodings.find(f.name);
  const auto engine_enc = engine.encodings.find(f.name);
  if ((enc == saved.encodings.end()) != (engine_enc == engine.encodings.end()) ||
      (enc != saved.encodings.end() && !CategoriesExtend(enc->second, engine_enc->second))) {
    return SchemaMismatchError("categorical encoding of feature '" + f.name +
                               "' differs from this kselect's; retrain the model");
  }
  return static_cast<int>(it - engine.features.begin());
}

Status CheckPeerPicks(Provider provider, std::optional<std::span<const PeerPick>> peer) {
  if (!peer) {
    return FailedPreconditionError(
        "this model ranks with the " + std::string(ProviderName(provider)) +
        " heuristic's own picks as features (trained with --peer-rank) and needs them for the "
        "problem: kselect asks the library on a GPU host, or reads them from a dataset that "
        "measured the problem; otherwise use a model trained without --peer-rank");
  }
  for (const PeerPick& pick : *peer) {
    if (pick.rank < 1) {
      return InvalidArgumentError("a peer pick has rank " + std::to_string(pick.rank) +
                                  " (ranks start at 1)");
    }
    if (ProviderOf(pick.config) != provider) {
      return InvalidArgumentError("a peer pick is a " +
                                  std::string(ProviderName(ProviderOf(pick.config))) +
                                  " config, not a " + std::string(ProviderName(provider)) + " one");
    }
  }
  return Status::Ok();
}

}  // namespace kselect::feature_blocks
