// The feature engine: one versioned feature spec, saved with every model and read back at
// inference, and the feature extractors that fill it from typed problems and kernel configs (an
// interface, FeatureExtractor, picked by the spec's extractor name: "gemm" or "conv").
//
// A GEMM feature vector has five blocks (gemm_features.cpp lists every formula):
//   problem      dims, logs, arithmetic intensity, aspect ratios, layout, dtype
//   kernel       shared typed fields (tile, split-K, stages, cluster, shared-memory estimate)
//                plus the provider's own columns (cuBLASLt ids, CK warps/pipeline, tile engine)
//   interaction  tiles per dim, tile fill, resident blocks per SM, waves and wave efficiency,
//                problem-to-tile ratios, padding needs
//   hardware     SMs, clock, L2, shared memory, memory bandwidth, peak tensor throughput
//   estimate     an analytical (Origami-like) compute/memory time per tile with wave quantisation
// A convolution feature vector (conv_features.cpp) has the problem, its implicit-GEMM view per
// group, the provider's config fields (cuDNN: engine id and one column per knob type the spec
// lists), tile interactions where the provider has tiles, hardware and a roofline estimate.
// Kernel features read KernelConfig's typed fields only, never kernel names.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/config_schema.h"
#include "kselect/hardware.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

// Bumped whenever a formula, an encoding or the column set of the extractor changes meaning; a
// model whose spec carries another version is refused.
inline constexpr int kFeatureEncodingVersion = 1;
// Major version of the feature_spec.json format itself.
inline constexpr int kFeatureSpecFormatMajor = 1;

// The hardware constants features are computed with. They are saved in the spec; a model is
// refused on hardware whose constants differ (features divide by them).
struct HardwareConstants {
  std::string arch;  // "sm_90", "gfx950"
  int32_t sm_count = 0;
  int32_t sm_clock_mhz = 0;
  int64_t l2_bytes = 0;
  int64_t smem_per_sm_bytes = 0;
  int64_t smem_per_block_bytes = 0;  // the opt-in maximum per block
  int32_t max_threads_per_sm = 0;
  int32_t max_blocks_per_sm = 0;
  double mem_bandwidth_gb_s = 0;
  // Dense tensor-core FLOPs per clock per SM for 16-bit inputs; other dtypes scale from it
  // (fp8/int8 x2, tf32 /2, fp32 /16).
  double flops_per_clock_per_sm_16bit = 0;

  bool operator==(const HardwareConstants&) const = default;
};

// Dense tensor-core throughput of `input` relative to 16-bit inputs: the scaling above.
constexpr double DtypeTensorThroughputScale(DataType input) {
  switch (input) {
    case DataType::kF8E4M3:
    case DataType::kF8E5M2:
    case DataType::kI8:
      return 2.0;
    case DataType::kTF32:
      return 0.5;
    case DataType::kF32:
    case DataType::kI32:
      return 1.0 / 16.0;
    case DataType::kF16:
    case DataType::kBF16:
      return 1.0;
  }
  return 1.0;
}

// Constants for a measured profile; fields the profile lacks (AMD rows carry only the arch) are
// filled from a small table of known parts (sm_90, sm_100, sm_80, gfx950, gfx942). Fails for an
// unknown arch whose profile lacks the SM count, clock or bandwidth.
StatusOr<HardwareConstants> HardwareConstantsFor(const HardwareProfile& profile);
// A one-line difference between two constant sets, "" when equal.
std::string DescribeHardwareDifference(const HardwareConstants& expected,
                                       const HardwareConstants& actual);

enum class FeatureKind { kNumeric, kCategorical };

struct FeatureInfo {
  std::string name;
  FeatureKind kind = FeatureKind::kNumeric;
  bool operator==(const FeatureInfo&) const = default;
};

// Everything inference needs to rebuild the training features exactly.
struct FeatureSpec {
  int format_major = kFeatureSpecFormatMajor;
  int encoding_version = kFeatureEncodingVersion;
  std::string extractor = "gemm";  // the extractor that fills it
  Provider provider = Provider::kCublasLt;
  // Conv specs: the direction the model was trained for (one model per direction: the implicit
  // GEMM view, and so every size feature, means something else in each). Unset for GEMM specs.
  std::optional<ConvDirection> conv_direction;
  std::vector<FeatureInfo> features;  // column order of the model's input
  // Categorical encodings: feature name -> values, code = index. A value outside the list
  // encodes as missing (NaN), never as a guess.
  std::map<std::string, std::vector<std::string>> encodings;
  HardwareConstants hardware;

  std::vector<std::string> Names() const;
  // Indices of the categorical features, in order.
  std::vector<int> CategoricalIndices() const;
  bool operator==(const FeatureSpec&) const = default;
};

// The provider heuristic's own answer for a problem, one pick: a config and its place in the
// heuristic's list (1 = its first choice). cuBLASLt's AlgoGetHeuristic answers on the GPU in
// microseconds; the bench records each pick's place as peer_rank.
// Which of the provider's heuristics listed a pick: cuBLASLt has one; cuDNN has two (heuristic
// modes A and B, recorded as peer_rank and peer_rank_b).
enum class PeerHeuristic : uint8_t { kFirst, kSecond };
struct PeerPick {
  KernelConfig config;
  int32_t rank = 0;
  PeerHeuristic heuristic = PeerHeuristic::kFirst;  // the GEMM peer block reads kFirst picks only
};

// The optional peer block: the heuristic's picks turned into features of each candidate, last in
// the spec. The candidate's own rank (peer_rank: 1-based, 0 when not listed), how it compares
// with the heuristic's first choice (same algo, same tile, same split-K, same cluster; log2
// ratios of tile m, tile n and split-K), that first choice's algo, tile and split-K (a problem-
// level hint: the heuristic's opinion of what the problem needs), and the picks sharing the
// candidate's family (algo, tile m, tile n): how many, and the best rank among them. NaN where
// the list is empty or a field is undefined. A model whose spec has it needs the picks at
// inference (from the library on a GPU host, or from a dataset that measured the problem).
inline constexpr std::string_view kPeerRankFeature = "peer_rank";
inline constexpr std::string_view kPeerFeatures[] = {
    kPeerRankFeature,         "peer_same_algo",          "peer_same_tile",
    "peer_same_split_k",      "peer_same_cluster",       "peer_log2_tile_m_ratio",
    "peer_log2_tile_n_ratio", "peer_log2_split_k_ratio", "peer_top_algo",
    "peer_top_tile_m",        "peer_top_tile_n",         "peer_top_split_k",
    "peer_family_picks",      "peer_family_best_rank"};

// The spec the GEMM extractor produces for `provider` on `hardware` (this build's version), with
// the peer block last when `with_peer_block`.
FeatureSpec GemmFeatureSpec(Provider provider, const HardwareConstants& hardware,
                            bool with_peer_block = false);
// True when the spec has the peer block.
bool SpecUsesPeerRanks(const FeatureSpec& spec);

// The convolution peer block, last in a conv spec trained with --peer-rank: the candidate's rank
// in each heuristic's list (peer_rank for the first, peer_rank_b for the second; 0 when not
// listed), whether it shares the engine of each list's first choice, that engine, how many picks
// of each list share the candidate's engine and the best rank among them, and whether the two
// lists agree on their first choice. NaN where a list is empty or the provider has no engine
// field. The engine is the family here: cuDNN's knobs tune within one.
inline constexpr std::string_view kConvPeerFeatures[] = {
    kPeerRankFeature,          "peer_rank_b",           "peer_same_engine",
    "peer_same_engine_b",      "peer_top_engine",       "peer_top_engine_b",
    "peer_engine_picks",       "peer_engine_best_rank", "peer_engine_picks_b",
    "peer_engine_best_rank_b", "peer_tops_agree",       "peer_list_size"};

// The spec the conv extractor produces for `provider` (a convolution provider: cudnn, ck_conv)
// and `direction` on `hardware`, with the conv peer block last when `with_peer_block`. A provider
// with a knob list (cuDNN) gets one numeric feature per entry of `knob_types` (cuDNN's
// cudnnBackendKnobType_t values, say those seen in the training data), sorted and deduplicated: the
// spec itself records which knob columns exist, so configs with other knob sets are scored without
// shifting columns (a knob the spec lacks is ignored, one the config lacks is missing). Fails for a
// GEMM provider.
StatusOr<FeatureSpec> ConvFeatureSpec(Provider provider, ConvDirection direction,
                                      const HardwareConstants& hardware,
                                      std::span<const int32_t> knob_types = {},
                                      bool with_peer_block = false);
// The knob types a spec has columns for, in column order (empty for specs without knobs).
std::vector<int32_t> SpecKnobTypes(const FeatureSpec& spec);
// The distinct knob types of `configs` (of a provider with a knob list), ascending.
std::vector<int32_t> KnobTypesOf(std::span<const KernelConfig> configs);

// OK when a model trained with `model` can be fed features built as `runtime`; otherwise a
// kSchemaMismatch naming the first difference (version, provider, feature order, encodings,
// hardware) and what to do.
Status CheckSpecCompatible(const FeatureSpec& model, const FeatureSpec& runtime);
// True when a model's category list is this kselect's or a prefix of it: lists grow only at the
// end (a new tile pipeline), so the model's codes keep their meaning and a value it never saw
// falls to the side of each split that no listed value takes.
bool CategoriesExtend(const std::vector<std::string>& model, const std::vector<std::string>& ours);

std::string FeatureSpecToJson(const FeatureSpec& spec);
// Strict: unknown keys, missing keys, wrong types, another format major or an unknown encoding
// version are errors naming `source`.
StatusOr<FeatureSpec> FeatureSpecFromJson(std::string_view text, std::string_view source);
Status SaveFeatureSpec(const FeatureSpec& spec, const std::string& path);
StatusOr<FeatureSpec> LoadFeatureSpec(const std::string& path);

// Fills feature vectors in a spec's column order from a problem and kernel configs. One
// implementation per problem kind; CreateFeatureExtractor picks it by the spec's `extractor`
// name, so a model, the trainer and the CLI never name the kind.
class FeatureExtractor {
 public:
  virtual ~FeatureExtractor() = default;

  virtual const FeatureSpec& spec() const = 0;
  virtual size_t NumFeatures() const = 0;
  // True when the spec has the peer block: Extract and ExtractBatch then need the peer picks.
  virtual bool UsesPeerRanks() const = 0;

  // One (problem, config) pair into `out` (resized to NumFeatures()). The config must belong to
  // the spec's provider and the problem to the extractor's kind (kInvalidArgument otherwise).
  // `peer` (the heuristic's picks for this problem, possibly none) is required when
  // UsesPeerRanks() and ignored otherwise; a missing one is a kFailedPrecondition saying where
  // picks come from.
  virtual Status Extract(const Problem& problem, const KernelConfig& config,
                         std::vector<double>* out,
                         std::optional<std::span<const PeerPick>> peer = std::nullopt) const = 0;
  // All candidates of one problem, row-major (candidates x NumFeatures()). Equal to calling
  // Extract per candidate.
  virtual Status ExtractBatch(
      const Problem& problem, std::span<const KernelConfig> candidates, std::vector<double>* out,
      std::optional<std::span<const PeerPick>> peer = std::nullopt) const = 0;
};

// The extractor named by `spec.extractor` ("gemm", "conv"), built from the spec; an unknown name is
// a kSchemaMismatch listing the known ones, and each implementation refuses specs it cannot fill.
StatusOr<std::unique_ptr<FeatureExtractor>> CreateFeatureExtractor(const FeatureSpec& spec);
// The names CreateFeatureExtractor knows, in its table's order.
std::vector<std::string_view> FeatureExtractorNames();

// The GEMM extractor ("gemm"). Built from a saved spec: it refuses specs of another encoding
// version or naming a feature this extractor cannot compute, and problems other than GEMMs.
class GemmFeatureExtractor final : public FeatureExtractor {
 public:
  static StatusOr<GemmFeatureExtractor> Create(const FeatureSpec& spec);

  const FeatureSpec& spec() const override { return spec_; }
  size_t NumFeatures() const override { return column_of_slot_.size(); }
  bool UsesPeerRanks() const override { return !peer_slots_.empty(); }

  Status Extract(const Problem& problem, const KernelConfig& config, std::vector<double>* out,
                 std::optional<std::span<const PeerPick>> peer = std::nullopt) const override;
  // The problem and hardware blocks are computed once per call.
  Status ExtractBatch(const Problem& problem, std::span<const KernelConfig> candidates,
                      std::vector<double>* out,
                      std::optional<std::span<const PeerPick>> peer = std::nullopt) const override;

 private:
  explicit GemmFeatureExtractor(FeatureSpec spec) : spec_(std::move(spec)) {}
  FeatureSpec spec_;
  size_t engine_width_ = 0;
  // spec slot -> engine column, or -1 - i for the i-th peer feature (kPeerFeatures order)
  std::vector<int> column_of_slot_;
  std::vector<int> peer_slots_;  // the slots of the peer block, empty without it
  Status CheckPeer(std::optional<std::span<const PeerPick>> peer) const;
  Status ExtractGemm(const GemmProblem& problem, const KernelConfig& config,
                     std::vector<double>* out, std::optional<std::span<const PeerPick>> peer) const;
  Status ExtractGemmBatch(const GemmProblem& problem, std::span<const KernelConfig> candidates,
                          std::vector<double>* out,
                          std::optional<std::span<const PeerPick>> peer) const;
  // Fills the row's peer features (kPeerFeatures order) for `config` (whose traits are
  // `traits`), given the picks and their traits (peer_traits[i] belongs to peer[i]).
  void PeerBlock(const KernelConfig& config, const GemmKernelTraits& traits,
                 std::span<const PeerPick> peer, std::span<const GemmKernelTraits> peer_traits,
                 double* values) const;
};

// The convolution extractor ("conv"). Built from a saved spec: it refuses specs of another
// encoding version, a GEMM provider, no direction, or a feature it cannot compute; it refuses
// GEMM problems and convolutions of another direction than the spec's.
class ConvFeatureExtractor final : public FeatureExtractor {
 public:
  static StatusOr<ConvFeatureExtractor> Create(const FeatureSpec& spec);

  const FeatureSpec& spec() const override { return spec_; }
  size_t NumFeatures() const override { return column_of_slot_.size(); }
  // True when the spec has the conv peer block (kConvPeerFeatures).
  bool UsesPeerRanks() const override { return uses_peer_; }

  Status Extract(const Problem& problem, const KernelConfig& config, std::vector<double>* out,
                 std::optional<std::span<const PeerPick>> peer = std::nullopt) const override;
  Status ExtractBatch(const Problem& problem, std::span<const KernelConfig> candidates,
                      std::vector<double>* out,
                      std::optional<std::span<const PeerPick>> peer = std::nullopt) const override;

 private:
  explicit ConvFeatureExtractor(FeatureSpec spec) : spec_(std::move(spec)) {}
  FeatureSpec spec_;
  std::vector<int32_t> knob_types_;  // the spec's knob types, ascending (the engine's columns)
  size_t engine_width_ = 0;
  // spec slot -> engine column (>= 0) or peer-block entry (-1 - index into kConvPeerFeatures)
  std::vector<int> column_of_slot_;
  bool uses_peer_ = false;
  StatusOr<const ConvProblem*> CheckInput(const Problem& problem,
                                          std::span<const KernelConfig> configs,
                                          std::optional<std::span<const PeerPick>> peer) const;
};

// A convolution as the implicit GEMM one group computes (batch = G groups), per direction:
//   fwd:        M = N*Do*Ho*Wo, N = K/G,         K = C/G*Z*Y*X
//   bwd_data:   M = N*Di*Hi*Wi, N = C/G,         K = K/G*Z*Y*X
//   bwd_weight: M = K/G,        N = C/G*Z*Y*X,   K = N*Do*Ho*Wo
// Dtypes are the convolution's; layout is the default (the view has no memory order).
GemmProblem ImplicitGemmOf(const ConvProblem& problem);

// The analytical estimate on its own (also a feature block): per-tile compute and memory time
// with wave quantisation. Times in microseconds.
struct AnalyticalEstimate {
  double compute_us = 0;
  double memory_us = 0;
  double time_us = 0;
  double tflops = 0;
};
// Tile fields the estimate needs; 0 where a provider leaves them undefined.
struct TileShape {
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;
  int64_t split_k = 1;
  int64_t stages = 0;
  int64_t threads = 0;  // threads per block, 0 when unknown
};
TileShape TileShapeOf(const KernelConfig& config);
TileShape TileShapeOf(const GemmKernelTraits& traits);
AnalyticalEstimate EstimateGemm(const GemmProblem& problem, const TileShape& tile,
                                const HardwareConstants& hardware);
// A convolution's estimate: compute as EstimateGemm's on the implicit-GEMM view (the padded
// work, wave-quantised where the tile is known), memory as the tensors' minimum bytes
// (ProblemMinBytes: input, weight, output once) at DRAM bandwidth, plus the 2 us launch;
// tflops counts the convolution's own FLOPs.
AnalyticalEstimate EstimateConv(const ConvProblem& problem, const TileShape& tile,
                                const HardwareConstants& hardware);

}  // namespace kselect
