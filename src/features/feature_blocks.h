// Feature blocks the extractors share (internal to src/features): the sink that writes names and
// values from one code path, the categorical encodings, the hardware block, the provider's own
// columns from its field table, and the tile interaction block of a GEMM (or of a convolution's
// implicit-GEMM view).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/config_schema.h"
#include "kselect/features.h"

namespace kselect::feature_blocks {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

// String-valued categorical encodings (code = index): the problems', then those the providers'
// field tables declare. Numeric ids (cuBLASLt algo ids) are their own codes and need no list.
const std::map<std::string, std::vector<std::string>>& Encodings();
// The code of `value` in `feature`'s list; NaN when the list lacks it.
double Code(std::string_view feature, std::string_view value);

inline double Log2(double x) {
  return std::log2(std::max(x, 1.0));
}
inline double Ratio(double a, double b) {
  return b > 0 ? a / b : kNaN;
}
inline double Flag(bool b) {
  return b ? 1.0 : 0.0;
}
// NaN for an undefined (0) field.
inline double Defined(int64_t v) {
  return v > 0 ? static_cast<double>(v) : kNaN;
}
inline int64_t CeilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// A GEMM's sizes: m n k batch, log2 of m, n, k and m*n*k*batch, arithmetic_intensity = flops /
// minimum bytes, aspect ratios m/n, m/k, n/k; each name with `prefix` before it (the conv
// extractor's implicit-GEMM view writes gemm_m, ...).
void GemmSizeBlock(const GemmProblem& p, std::string_view prefix, FeatureSink& s);

// Dense tensor peak in FLOP/s for inputs of `dtype`.
double PeakFlops(DataType dtype, const HardwareConstants& hw);
// hw_* features; hw_peak_tflops is the peak for `dtype`.
void HardwareBlock(DataType dtype, const HardwareConstants& hw, FeatureSink& s);

int64_t ResidentBlocksPerSm(const TileShape& t, double smem_estimate, const HardwareConstants& hw);
// stages * (tm + tn) * tk * bytes per element; NaN where a field is unknown.
double SmemEstimate(const GemmProblem& p, const TileShape& t);

// The provider's own columns, as its field table encodes them. A knob-list field writes one
// feature per entry of `knob_types` (FeatureEncoding::kKnobValues).
void ProviderKernelBlock(const KernelConfig& c, std::span<const int32_t> knob_types,
                         FeatureSink& s);
// The feature name of knob type `type` of a knob-list field whose feature prefix is `prefix`.
std::string KnobFeatureName(std::string_view prefix, int32_t type);

// Tiles, fill, waves and padding needs of `p` under the tile `t` (the formulas in
// gemm_features.cpp's header comment); NaN where the tile is unknown.
void InteractionBlock(const GemmProblem& p, const GemmKernelTraits& traits, const TileShape& t,
                      const HardwareConstants& hw, FeatureSink& s);

// A saved spec against the one this kselect computes: kSchemaMismatch when the saved encoding
// version differs (the formulas changed; retrain).
Status CheckEncodingVersion(const FeatureSpec& saved, const FeatureSpec& engine);
// The engine column of the saved spec's feature `f`: refused when the engine does not compute
// it (`extractor` names the extractor in the message), its kind changed, or its categories are
// not the engine's or a prefix of them. The runtime thus checks a saved spec column by column:
// a model trained with other formulas or encodings is refused, never silently fed.
StatusOr<int> EngineColumnOf(const FeatureInfo& f, const FeatureSpec& saved,
                             const FeatureSpec& engine, std::string_view extractor);
// The peer picks a model with a peer block is given: kFailedPrecondition when there are none
// (saying where picks come from), kInvalidArgument for a rank under 1 or a pick of another
// provider than `provider`.
Status CheckPeerPicks(Provider provider, std::optional<std::span<const PeerPick>> peer);

}  // namespace kselect::feature_blocks
