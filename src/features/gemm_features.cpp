// The GEMM feature extractor. Names and values come from one code path (FeatureSink in "names"
// or "values" mode), so the column list saved in a spec cannot drift from what is computed.
//
// Formulas (tm, tn, tk = block tile; S = split-K; bpe = bytes per input element; SMs, clock etc.
// from HardwareConstants). A feature that a provider leaves undefined (cuBLASLt tile id AUTO)
// is NaN, which LightGBM treats as missing.
//   problem:     m n k batch; log2 of m, n, k, m*n*k*batch; arithmetic_intensity =
//                flops / minimum bytes; aspect ratios m/n, m/k, n/k; layout, dtype (categorical);
//                bytes_per_element; beta_nonzero
//   kernel:      tile_m/n/k, split_k, stages, threads_per_block, tile_mn, tile_volume,
//                smem_estimate = stages*(tm+tn)*tk*bpe, smem_ratio = estimate / per-block limit,
//                cluster_m/n, then the provider's own typed fields
//   interaction: tiles_m/n = ceil(D/t), tiles_k = ceil(ceil(k/S)/tk), output_tiles (x batch),
//                blocks = output_tiles*S, fill_d = D/(t*tiles_d) (useful fraction of the padded
//                work, not CK's last-tile fraction), fill_all, resident_blocks_per_sm (limited by
//                the hardware block limit, shared memory and threads; 1 when neither is known),
//                waves = ceil(blocks/(SMs*resident)), wave_efficiency =
//                blocks/(waves*SMs*resident), sm_coverage = min(1, blocks/SMs), ratio_d = D/t,
//                d_smaller_than_tile, needs_padding_d = [D mod t != 0], missing_padding_d = needs
//                AND NOT masked (NaN where the provider has no padding flags)
//   hardware:    hw_sm_count, hw_sm_clock_mhz, hw_l2_mb, hw_smem_per_sm_kb, hw_smem_per_block_kb,
//                hw_mem_bandwidth_gb_s, hw_peak_tflops (dense tensor peak for the problem dtype)
//   estimate:    see EstimateGemm below.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

#include "kselect/config_schema.h"
#include "kselect/features.h"

namespace kselect {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Writes features in order. In names mode it records (name, kind); in values mode it writes
// values. Both modes run the same code, so names and values stay aligned.
class FeatureSink {
 public:
  explicit FeatureSink(std::vector<FeatureInfo>* names) : names_(names) {}
  explicit FeatureSink(double* values) : values_(values) {}

  void Num(std::string_view name, double value) { Put(name, FeatureKind::kNumeric, value); }
  void Cat(std::string_view name, double code) { Put(name, FeatureKind::kCategorical, code); }
  size_t count() const { return count_; }

 private:
  void Put(std::string_view name, FeatureKind kind, double value) {
    if (names_) names_->push_back({std::string(name), kind});
    if (values_) values_[count_] = value;
    ++count_;
  }
  std::vector<FeatureInfo>* names_ = nullptr;
  double* values_ = nullptr;
  size_t count_ = 0;
};

// String-valued categorical encodings (code = index): the problem's, then those the providers'
// field tables declare. Numeric ids (cuBLASLt algo ids) are their own codes and need no list.
const std::map<std::string, std::vector<std::string>>& Encodings() {
  static const std::map<std::string, std::vector<std::string>> encodings = [] {
    std::map<std::string, std::vector<std::string>> all = {
        {"layout", {"rrr", "rrc", "rcr", "rcc", "crr", "crc", "ccr", "ccc"}},
        {"dtype", {"fp32", "tf32", "fp16", "bf16", "fp8", "bf8", "int8", "int32"}},
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

double Log2(double x) {
  return std::log2(std::max(x, 1.0));
}
double Ratio(double a, double b) {
  return b > 0 ? a / b : kNaN;
}
double Flag(bool b) {
  return b ? 1.0 : 0.0;
}
// NaN for an undefined (0) field.
double Defined(int64_t v) {
  return v > 0 ? static_cast<double>(v) : kNaN;
}
int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

double PeakFlops(const GemmProblem& p, const HardwareConstants& hw) {
  return hw.flops_per_clock_per_sm_16bit * DtypeTensorThroughputScale(p.dtype_a) * hw.sm_clock_mhz *
         1e6 * hw.sm_count;
}

void ProblemBlock(const GemmProblem& p, FeatureSink& s) {
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n);
  const double k = static_cast<double>(p.k), batch = static_cast<double>(p.batch);
  s.Num("m", m);
  s.Num("n", n);
  s.Num("k", k);
  s.Num("batch", batch);
  s.Num("log2_m", Log2(m));
  s.Num("log2_n", Log2(n));
  s.Num("log2_k", Log2(k));
  s.Num("log2_mnk", Log2(m * n * k * batch));
  s.Num("arithmetic_intensity", Ratio(p.Flops(), p.MinBytes()));
  s.Num("aspect_ratio_mn", Ratio(m, n));
  s.Num("aspect_ratio_mk", Ratio(m, k));
  s.Num("aspect_ratio_nk", Ratio(n, k));
  s.Cat("layout", Code("layout", p.layout.ToString()));
  s.Cat("dtype", Code("dtype", DataTypeName(p.dtype_a)));
  s.Num("bytes_per_element", DataTypeBits(p.dtype_a) / 8.0);
  s.Num("beta_nonzero", Flag(p.beta != 0.0));
}

void HardwareBlock(const GemmProblem& p, const HardwareConstants& hw, FeatureSink& s) {
  s.Num("hw_sm_count", hw.sm_count);
  s.Num("hw_sm_clock_mhz", hw.sm_clock_mhz);
  s.Num("hw_l2_mb", static_cast<double>(hw.l2_bytes) / (1 << 20));
  s.Num("hw_smem_per_sm_kb", static_cast<double>(hw.smem_per_sm_bytes) / 1024.0);
  s.Num("hw_smem_per_block_kb", static_cast<double>(hw.smem_per_block_bytes) / 1024.0);
  s.Num("hw_mem_bandwidth_gb_s", hw.mem_bandwidth_gb_s);
  s.Num("hw_peak_tflops", PeakFlops(p, hw) / 1e12);
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

void SharedKernelBlock(const GemmProblem& p, const GemmKernelTraits& traits, const TileShape& t,
                       const HardwareConstants& hw, FeatureSink& s) {
  s.Num("tile_m", Defined(t.tile_m));
  s.Num("tile_n", Defined(t.tile_n));
  s.Num("tile_k", Defined(t.tile_k));
  s.Num("split_k", static_cast<double>(t.split_k));
  s.Num("stages", Defined(t.stages));
  s.Num("threads_per_block", Defined(t.threads));
  s.Num("tile_mn", Defined(t.tile_m * t.tile_n));
  s.Num("tile_volume", Defined(t.tile_m * t.tile_n * t.tile_k));
  const double smem = SmemEstimate(p, t);
  s.Num("smem_estimate_bytes", smem);
  s.Num("smem_ratio", hw.smem_per_block_bytes > 0 ? smem / hw.smem_per_block_bytes : kNaN);
  s.Num("cluster_m", Defined(traits.cluster_m));
  s.Num("cluster_n", Defined(traits.cluster_n));
}

// The provider's own columns, as its field table encodes them.
void ProviderKernelBlock(const KernelConfig& c, FeatureSink& s) {
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
    }
  }
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

constexpr size_t kEstimateWidth = 5;  // the features EstimateBlock writes

void EstimateBlock(const GemmProblem& p, const TileShape& t, const HardwareConstants& hw,
                   FeatureSink& s) {
  const AnalyticalEstimate e = EstimateGemm(p, t, hw);
  s.Num("est_compute_us", e.compute_us);
  s.Num("est_memory_us", e.memory_us);
  s.Num("est_time_us", e.time_us);
  s.Num("est_tflops", e.tflops);
  s.Num("est_compute_fraction", e.time_us > 0 ? e.compute_us / e.time_us : kNaN);
}

// Block layout: [problem][kernel: shared + provider][interaction][hardware][estimate].
struct BlockSizes {
  size_t problem = 0, per_config = 0, hardware = 0, estimate = 0;
};

void PerConfigBlocks(const GemmProblem& p, const KernelConfig& c, const GemmKernelTraits& traits,
                     const TileShape& t, const HardwareConstants& hw, FeatureSink& s) {
  SharedKernelBlock(p, traits, t, hw, s);
  ProviderKernelBlock(c, s);
  InteractionBlock(p, traits, t, hw, s);
}

// The engine's full column list for a provider (names mode).
std::vector<FeatureInfo> EngineColumns(Provider provider, const HardwareConstants& hw) {
  std::vector<FeatureInfo> names;
  FeatureSink s(&names);
  GemmProblem p;
  p.m = p.n = p.k = 128;
  const KernelConfig c = SchemaOf(provider).make_default();
  const GemmKernelTraits traits = GemmTraitsOf(c);
  const TileShape t = TileShapeOf(traits);
  ProblemBlock(p, s);
  PerConfigBlocks(p, c, traits, t, hw, s);
  HardwareBlock(p, hw, s);
  EstimateBlock(p, t, hw, s);
  return names;
}

bool IsGemmProvider(Provider p) {
  return SchemaOf(p).gemm_traits != nullptr;
}

}  // namespace

TileShape TileShapeOf(const GemmKernelTraits& traits) {
  TileShape t;
  t.tile_m = traits.tile_m;
  t.tile_n = traits.tile_n;
  t.tile_k = traits.tile_k;
  t.split_k = std::max<int64_t>(traits.split_k, 1);
  t.stages = traits.stages;
  t.threads = traits.threads;
  return t;
}

TileShape TileShapeOf(const KernelConfig& config) {
  return TileShapeOf(GemmTraitsOf(config));
}

// Origami-like estimate. Per SM, `resident` blocks share the tensor throughput, so one wave of
// blocks takes resident * tile_flops / peak_per_sm, where tile_flops counts the padded work
// 2*tm*tn*tk*tiles_k. Memory: DRAM bytes are the minimum traffic (A, B read once, C written;
// split-K adds fp32 partials written and read back) plus the operand re-reads that do not fit
// in L2; L2-to-SM traffic is every block's (tm+tn)*k_split operand panels at an assumed L2
// bandwidth of 2.5x DRAM. Time = max(compute, memory) + 2 us launch. Without tile sizes it is
// the plain roofline.
AnalyticalEstimate EstimateGemm(const GemmProblem& p, const TileShape& t,
                                const HardwareConstants& hw) {
  AnalyticalEstimate e;
  const double peak = PeakFlops(p, hw);
  const double bw = hw.mem_bandwidth_gb_s * 1e9;
  if (peak <= 0 || bw <= 0) {
    e.compute_us = e.memory_us = e.time_us = e.tflops = kNaN;
    return e;
  }
  const double bpe = DataTypeBits(p.dtype_a) / 8.0;
  const int64_t split = std::max<int64_t>(t.split_k, 1);
  double dram = p.MinBytes();
  if (split > 1) dram += 2.0 * 4.0 * p.m * p.n * p.batch * static_cast<double>(split);
  double l2_traffic = 0;
  if (t.tile_m > 0 && t.tile_n > 0 && t.tile_k > 0) {
    const int64_t k_split = CeilDiv(p.k, split);
    const int64_t tiles_k = CeilDiv(k_split, t.tile_k);
    const int64_t blocks = CeilDiv(p.m, t.tile_m) * CeilDiv(p.n, t.tile_n) * p.batch * split;
    const double tile_flops = 2.0 * t.tile_m * t.tile_n * static_cast<double>(t.tile_k * tiles_k);
    const int64_t r = ResidentBlocksPerSm(t, SmemEstimate(p, t), hw);
    const int64_t waves = CeilDiv(blocks, static_cast<int64_t>(hw.sm_count) * r);
    const double peak_sm = peak / hw.sm_count;
    e.compute_us = static_cast<double>(waves) * r * tile_flops / peak_sm * 1e6;
    l2_traffic = static_cast<double>(blocks) * static_cast<double>(t.tile_m + t.tile_n) *
                 static_cast<double>(t.tile_k * tiles_k) * bpe;
    const double ab_bytes = (static_cast<double>(p.m) * p.k + static_cast<double>(p.k) * p.n) *
                            bpe * static_cast<double>(p.batch);
    if (ab_bytes > 0 && hw.l2_bytes > 0) {
      const double miss = std::max(0.0, 1.0 - static_cast<double>(hw.l2_bytes) / ab_bytes);
      dram += std::max(0.0, l2_traffic - ab_bytes) * miss;
    }
  } else {
    e.compute_us = p.Flops() / peak * 1e6;
  }
  e.memory_us = std::max(dram / bw, l2_traffic / (2.5 * bw)) * 1e6;
  e.time_us = std::max(e.compute_us, e.memory_us) + 2.0;
  e.tflops = p.Flops() / (e.time_us * 1e-6) / 1e12;
  return e;
}

FeatureSpec GemmFeatureSpec(Provider provider, const HardwareConstants& hardware,
                            bool with_peer_block) {
  KSELECT_CHECK_MSG(IsGemmProvider(provider), "GemmFeatureSpec needs a GEMM provider");
  FeatureSpec spec;
  spec.provider = provider;
  spec.hardware = hardware;
  spec.features = EngineColumns(provider, hardware);
  if (with_peer_block) {
    for (std::string_view name : kPeerFeatures) {
      spec.features.push_back({std::string(name), FeatureKind::kNumeric});
    }
  }
  for (const FeatureInfo& f : spec.features) {
    const auto it = Encodings().find(f.name);
    if (it != Encodings().end()) spec.encodings[f.name] = it->second;
  }
  return spec;
}

bool SpecUsesPeerRanks(const FeatureSpec& spec) {
  return std::any_of(spec.features.begin(), spec.features.end(), [](const FeatureInfo& f) {
    return std::find(std::begin(kPeerFeatures), std::end(kPeerFeatures), f.name) !=
           std::end(kPeerFeatures);
  });
}

StatusOr<GemmFeatureExtractor> GemmFeatureExtractor::Create(const FeatureSpec& spec) {
  if (spec.extractor != "gemm") {
    return SchemaMismatchError("feature spec is for extractor '" + spec.extractor +
                               "', not the GEMM extractor");
  }
  if (!IsGemmProvider(spec.provider)) {
    return SchemaMismatchError("feature spec provider " + std::string(ProviderName(spec.provider)) +
                               " is not a GEMM provider");
  }
  // The runtime rebuilds the engine's own spec and checks the saved one against it, column by
  // column: a model trained with other formulas or encodings is refused, never silently fed.
  const FeatureSpec engine = GemmFeatureSpec(spec.provider, spec.hardware);
  if (spec.encoding_version != engine.encoding_version) {
    return SchemaMismatchError("feature encoding version " + std::to_string(spec.encoding_version) +
                               " was saved with the model, but this kselect computes version " +
                               std::to_string(engine.encoding_version) +
                               "; retrain the model with this kselect");
  }
  GemmFeatureExtractor extractor(spec);
  extractor.engine_width_ = engine.features.size();
  for (const FeatureInfo& f : spec.features) {
    const auto peer = std::find(std::begin(kPeerFeatures), std::end(kPeerFeatures), f.name);
    if (peer != std::end(kPeerFeatures)) {
      const int index = static_cast<int>(peer - std::begin(kPeerFeatures));
      if (f.kind != FeatureKind::kNumeric ||
          std::count(extractor.column_of_slot_.begin(), extractor.column_of_slot_.end(),
                     -1 - index) != 0) {
        return SchemaMismatchError("feature '" + f.name + "' must appear once, numeric");
      }
      extractor.peer_slots_.push_back(static_cast<int>(extractor.column_of_slot_.size()));
      extractor.column_of_slot_.push_back(-1 - index);
      continue;
    }
    const auto it = std::find_if(engine.features.begin(), engine.features.end(),
                                 [&](const FeatureInfo& e) { return e.name == f.name; });
    if (it == engine.features.end()) {
      return SchemaMismatchError("the model's feature '" + f.name +
                                 "' is not computed by this kselect's GEMM extractor");
    }
    if (it->kind != f.kind) {
      return SchemaMismatchError("feature '" + f.name + "' changed kind (categorical/numeric)");
    }
    const auto enc = spec.encodings.find(f.name);
    const auto engine_enc = engine.encodings.find(f.name);
    if ((enc == spec.encodings.end()) != (engine_enc == engine.encodings.end()) ||
        (enc != spec.encodings.end() && !CategoriesExtend(enc->second, engine_enc->second))) {
      return SchemaMismatchError("categorical encoding of feature '" + f.name +
                                 "' differs from this kselect's; retrain the model");
    }
    extractor.column_of_slot_.push_back(static_cast<int>(it - engine.features.begin()));
  }
  return extractor;
}

Status GemmFeatureExtractor::CheckPeer(std::optional<std::span<const PeerPick>> peer) const {
  if (!UsesPeerRanks()) return Status::Ok();
  if (!peer) {
    return FailedPreconditionError(
        "this model ranks with the " + std::string(ProviderName(spec_.provider)) +
        " heuristic's own picks as features (trained with --peer-rank) and needs them for the "
        "problem: kselect asks the library on a GPU host, or reads them from a dataset that "
        "measured the problem; otherwise use a model trained without --peer-rank");
  }
  for (const PeerPick& pick : *peer) {
    if (pick.rank < 1) {
      return InvalidArgumentError("a peer pick has rank " + std::to_string(pick.rank) +
                                  " (ranks start at 1)");
    }
    if (ProviderOf(pick.config) != spec_.provider) {
      return InvalidArgumentError(
          "a peer pick is a " + std::string(ProviderName(ProviderOf(pick.config))) +
          " config, not a " + std::string(ProviderName(spec_.provider)) + " one");
    }
  }
  return Status::Ok();
}

namespace {

double Log2RatioOrNaN(int64_t a, int64_t b) {
  return a > 0 && b > 0 ? std::log2(static_cast<double>(a) / static_cast<double>(b)) : kNaN;
}

}  // namespace

void GemmFeatureExtractor::PeerBlock(const KernelConfig& config, const GemmKernelTraits& c,
                                     std::span<const PeerPick> peer,
                                     std::span<const GemmKernelTraits> peer_traits,
                                     double* v) const {
  // The peer block compares GEMM traits (0 = undefined; algo_id -1 where a provider has none).
  // The picks' traits come computed once per problem (they are the same for every candidate).
  int32_t rank = 0, family_picks = 0, family_best = 0;
  const PeerPick* top = nullptr;
  const GemmKernelTraits* top_traits = nullptr;
  for (size_t i = 0; i < peer.size(); ++i) {
    const PeerPick& pick = peer[i];
    if (!top || pick.rank < top->rank) {
      top = &pick;
      top_traits = &peer_traits[i];
    }
    if (pick.config == config && (rank == 0 || pick.rank < rank)) rank = pick.rank;
    const GemmKernelTraits& p = peer_traits[i];
    if (p.algo_id == c.algo_id && p.tile_m == c.tile_m && p.tile_n == c.tile_n) {
      ++family_picks;
      if (family_best == 0 || pick.rank < family_best) family_best = pick.rank;
    }
  }
  v[0] = rank;
  if (top) {
    const GemmKernelTraits& t = *top_traits;
    v[1] = t.algo_id >= 0 ? Flag(c.algo_id == t.algo_id) : kNaN;
    v[2] = t.tile_m > 0 ? Flag(c.tile_m == t.tile_m && c.tile_n == t.tile_n) : kNaN;
    v[3] = Flag(c.split_k == t.split_k);
    v[4] = t.cluster_m > 0 && c.cluster_m > 0
               ? Flag(c.cluster_m == t.cluster_m && c.cluster_n == t.cluster_n)
               : kNaN;
    v[5] = Log2RatioOrNaN(c.tile_m, t.tile_m);
    v[6] = Log2RatioOrNaN(c.tile_n, t.tile_n);
    v[7] = Log2RatioOrNaN(c.split_k, t.split_k);
    v[8] = t.algo_id >= 0 ? static_cast<double>(t.algo_id) : kNaN;
    v[9] = Defined(t.tile_m);
    v[10] = Defined(t.tile_n);
    v[11] = static_cast<double>(t.split_k);
  } else {
    std::fill(v + 1, v + 12, kNaN);
  }
  v[12] = family_picks;
  v[13] = family_best;
}

Status GemmFeatureExtractor::ExtractGemm(const GemmProblem& problem, const KernelConfig& config,
                                         std::vector<double>* out,
                                         std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_RETURN_IF_ERROR(CheckPeer(peer));
  if (ProviderOf(config) != spec_.provider) {
    return InvalidArgumentError("a " + std::string(ProviderName(ProviderOf(config))) +
                                " config was given to a " +
                                std::string(ProviderName(spec_.provider)) + " feature extractor");
  }
  // Every block in one pass, with no shared state: the reference ExtractBatch is tested against.
  std::vector<double> row(engine_width_);
  FeatureSink s(row.data());
  const GemmKernelTraits traits = GemmTraitsOf(config);
  const TileShape t = TileShapeOf(traits);
  ProblemBlock(problem, s);
  PerConfigBlocks(problem, config, traits, t, spec_.hardware, s);
  HardwareBlock(problem, spec_.hardware, s);
  EstimateBlock(problem, t, spec_.hardware, s);
  KSELECT_CHECK(s.count() == engine_width_);
  std::array<double, std::size(kPeerFeatures)> peer_values{};
  if (UsesPeerRanks()) {
    std::vector<GemmKernelTraits> peer_traits;
    for (const PeerPick& pick : *peer) peer_traits.push_back(GemmTraitsOf(pick.config));
    PeerBlock(config, traits, *peer, peer_traits, peer_values.data());
  }
  out->resize(NumFeatures());
  for (size_t slot = 0; slot < NumFeatures(); ++slot) {
    const int column = column_of_slot_[slot];
    (*out)[slot] = column >= 0 ? row[static_cast<size_t>(column)]
                               : peer_values[static_cast<size_t>(-1 - column)];
  }
  return Status::Ok();
}

Status GemmFeatureExtractor::ExtractGemmBatch(const GemmProblem& problem,
                                              std::span<const KernelConfig> candidates,
                                              std::vector<double>* out,
                                              std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_RETURN_IF_ERROR(CheckPeer(peer));
  for (const KernelConfig& c : candidates) {
    if (ProviderOf(c) != spec_.provider) {
      return InvalidArgumentError("a " + std::string(ProviderName(ProviderOf(c))) +
                                  " config was given to a " +
                                  std::string(ProviderName(spec_.provider)) + " feature extractor");
    }
  }
  const HardwareConstants& hw = spec_.hardware;
  // Problem and hardware blocks once; the per-config blocks per candidate.
  const size_t engine_width = engine_width_;
  std::vector<double> problem_values(64), hardware_values(16);
  FeatureSink ps(problem_values.data());
  ProblemBlock(problem, ps);
  FeatureSink hs(hardware_values.data());
  HardwareBlock(problem, hw, hs);
  const size_t per_config_width = engine_width - ps.count() - hs.count() - kEstimateWidth;
  std::vector<double> row(engine_width);
  std::array<double, std::size(kPeerFeatures)> peer_values{};
  std::vector<GemmKernelTraits> peer_traits;
  if (UsesPeerRanks()) {
    for (const PeerPick& pick : *peer) peer_traits.push_back(GemmTraitsOf(pick.config));
  }
  const size_t width = NumFeatures();
  out->assign(candidates.size() * width, 0.0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const GemmKernelTraits traits = GemmTraitsOf(candidates[i]);
    const TileShape t = TileShapeOf(traits);
    std::copy_n(problem_values.begin(), ps.count(), row.begin());
    FeatureSink cs(row.data() + ps.count());
    PerConfigBlocks(problem, candidates[i], traits, t, hw, cs);
    KSELECT_CHECK(cs.count() == per_config_width);
    std::copy_n(hardware_values.begin(), hs.count(), row.begin() + ps.count() + cs.count());
    FeatureSink es(row.data() + ps.count() + cs.count() + hs.count());
    EstimateBlock(problem, t, hw, es);
    KSELECT_CHECK(es.count() == kEstimateWidth);
    if (UsesPeerRanks()) {
      PeerBlock(candidates[i], traits, *peer, peer_traits, peer_values.data());
    }
    double* dst = out->data() + i * width;
    for (size_t slot = 0; slot < width; ++slot) {
      const int column = column_of_slot_[slot];
      dst[slot] = column >= 0 ? row[static_cast<size_t>(column)]
                              : peer_values[static_cast<size_t>(-1 - column)];
    }
  }
  return Status::Ok();
}

namespace {

// The problem as a GEMM, or a kInvalidArgument naming what it is.
StatusOr<const GemmProblem*> AsGemm(const Problem& problem) {
  if (const auto* gemm = std::get_if<GemmProblem>(&problem)) return gemm;
  return InvalidArgumentError("the GEMM feature extractor cannot describe " +
                              ProblemToString(problem) +
                              ": it computes features of GEMM problems only");
}

}  // namespace

Status GemmFeatureExtractor::Extract(const Problem& problem, const KernelConfig& config,
                                     std::vector<double>* out,
                                     std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_ASSIGN_OR_RETURN(const GemmProblem* gemm, AsGemm(problem));
  return ExtractGemm(*gemm, config, out, peer);
}

Status GemmFeatureExtractor::ExtractBatch(const Problem& problem,
                                          std::span<const KernelConfig> candidates,
                                          std::vector<double>* out,
                                          std::optional<std::span<const PeerPick>> peer) const {
  KSELECT_ASSIGN_OR_RETURN(const GemmProblem* gemm, AsGemm(problem));
  return ExtractGemmBatch(*gemm, candidates, out, peer);
}

}  // namespace kselect
