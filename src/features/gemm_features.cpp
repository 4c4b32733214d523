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

#include "features/feature_blocks.h"
#include "kselect/config_schema.h"
#include "kselect/features.h"

namespace kselect {
namespace {

using namespace feature_blocks;

void ProblemBlock(const GemmProblem& p, FeatureSink& s) {
  GemmSizeBlock(p, "", s);
  s.Cat("layout", Code("layout", p.layout.ToString()));
  s.Cat("dtype", Code("dtype", DataTypeName(p.dtype_a)));
  s.Num("bytes_per_element", DataTypeBits(p.dtype_a) / 8.0);
  s.Num("beta_nonzero", Flag(p.beta != 0.0));
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
  ProviderKernelBlock(c, {}, s);
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
  HardwareBlock(p.dtype_a, hw, s);
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
  const double peak = PeakFlops(p.dtype_a, hw);
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
  if (spec.conv_direction) {
    return SchemaMismatchError(
        "feature spec names a convolution direction, which GEMM specs "
        "never have");
  }
  // The runtime rebuilds the engine's own spec and checks the saved one against it, column by
  // column: a model trained with other formulas or encodings is refused, never silently fed.
  const FeatureSpec engine = GemmFeatureSpec(spec.provider, spec.hardware);
  KSELECT_RETURN_IF_ERROR(CheckEncodingVersion(spec, engine));
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
    KSELECT_ASSIGN_OR_RETURN(const int column, EngineColumnOf(f, spec, engine, "GEMM"));
    extractor.column_of_slot_.push_back(column);
  }
  return extractor;
}

Status GemmFeatureExtractor::CheckPeer(std::optional<std::span<const PeerPick>> peer) const {
  if (!UsesPeerRanks()) return Status::Ok();
  return CheckPeerPicks(spec_.provider, peer);
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
    if (pick.heuristic != PeerHeuristic::kFirst) continue;  // GEMM providers have one heuristic
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
  HardwareBlock(problem.dtype_a, spec_.hardware, s);
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
  HardwareBlock(problem.dtype_a, hw, hs);
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
