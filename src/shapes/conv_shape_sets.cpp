// The generated conv shape sets (kselect/shapes.h): conv_train, a systematic and random cover of
// seed 003's regimes, conv_train_extra, more random draws, conv_train_networks, other networks'
// layers, conv_train_hard, draws in the regimes the models rank worst, and conv_validation, the
// conv layers of well-known networks. Deterministic: no std:: distributions, no clock.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "kselect/shapes.h"

namespace kselect {
namespace {

// What the generator aims for, below the hard caps of shapes.h: a sweep times every cuDNN engine
// config of every shape in three directions in minutes of GPU time, so shapes stay cheap to
// moderate. A shape over either is halved in batch until it fits (or dropped at batch 1).
constexpr double kTargetMaxFlops = 0.5e12;
constexpr double kTargetMaxTensorBytes = 256.0 * 1024 * 1024;
constexpr int64_t kBf16Bytes = 2;
constexpr size_t kTrainRows = 300;

double LargestTensorBytes(const ConvProblem& p) {
  const double x = static_cast<double>(p.n) * p.c * p.di * p.hi * p.wi;
  const double y = static_cast<double>(p.n) * p.k * p.Do() * p.Ho() * p.Wo();
  const double w = static_cast<double>(p.k) * (p.c / p.g) * p.z * p.y * p.x;
  return std::max({x, y, w}) * kBf16Bytes;
}

// A 2D convolution on a square input with a square filter.
ConvProblem Conv2d(int64_t n, int64_t c, int64_t k, int64_t hw, int64_t filter, int64_t stride,
                   int64_t pad, int64_t groups = 1, int64_t dilation = 1) {
  ConvProblem p;
  p.n = n;
  p.c = c;
  p.k = k;
  p.g = groups;
  p.hi = p.wi = hw;
  p.y = p.x = filter;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

// A 2D convolution with a y x x filter ("same" padding), for the factorised 1x7 / 7x1 kind.
ConvProblem Conv2dRect(int64_t n, int64_t c, int64_t k, int64_t hw, int64_t y, int64_t x) {
  ConvProblem p = Conv2d(n, c, k, hw, 1, 1, 0);
  p.y = y;
  p.x = x;
  p.pad_h = y / 2;
  p.pad_w = x / 2;
  return p;
}

struct Dims3 {
  int64_t d, h, w;
};

// A 3D convolution on a d x hw x hw input.
ConvProblem Conv3d(int64_t n, int64_t c, int64_t k, int64_t d, int64_t hw, Dims3 filter,
                   Dims3 stride, Dims3 pad, int64_t groups = 1, int64_t dilation = 1) {
  ConvProblem p;
  p.n = n;
  p.c = c;
  p.k = k;
  p.g = groups;
  p.di = d;
  p.hi = p.wi = hw;
  p.z = filter.d;
  p.y = filter.h;
  p.x = filter.w;
  p.stride_d = stride.d;
  p.stride_h = stride.h;
  p.stride_w = stride.w;
  p.pad_d = pad.d;
  p.pad_h = pad.h;
  p.pad_w = pad.w;
  p.dilation_d = p.dilation_h = p.dilation_w = dilation;
  return p;
}

// Collects distinct, valid shapes within the generator's caps, in order.
class ConvSetBuilder {
 public:
  explicit ConvSetBuilder(const std::set<std::string>* excluded = nullptr) : excluded_(excluded) {}

  // Adds `shape` (its batch halved until it fits the caps); false when it is invalid, does not
  // fit even at batch 1, repeats a row, or is excluded.
  bool Add(ConvProblem shape, const std::string& family) {
    if (alternate_) shape.n = batches_[added_calls_++ % 2];
    if (!shape.Validate().ok()) return false;
    while (shape.n > 1 &&
           (shape.Flops() > kTargetMaxFlops || LargestTensorBytes(shape) > kTargetMaxTensorBytes)) {
      shape.n /= 2;
    }
    if (shape.Flops() > kTargetMaxFlops || LargestTensorBytes(shape) > kTargetMaxTensorBytes) {
      return false;
    }
    const std::string key = shape.ToString();
    if (excluded_ != nullptr && excluded_->contains(key)) return false;
    if (!seen_.insert(key).second) return false;
    rows_.push_back(ConvShapeRow{shape, ConvShapeRegime(shape), family});
    return true;
  }
  size_t size() const { return rows_.size(); }
  std::vector<ConvShapeRow> Take() { return std::move(rows_); }

  // From now on, the layers added take batch sizes `a` and `b` in turn (whatever batch they
  // ask for): a network at two batch sizes in half the rows of both at each.
  void AlternateBatches(int64_t a, int64_t b) {
    alternate_ = true;
    batches_[0] = a;
    batches_[1] = b;
    added_calls_ = 0;
  }

 private:
  bool alternate_ = false;
  int64_t batches_[2] = {1, 1};
  size_t added_calls_ = 0;
  const std::set<std::string>* excluded_;
  std::set<std::string> seen_;
  std::vector<ConvShapeRow> rows_;
};

// A 64-bit LCG, as in shapes.cpp: the same rows on every platform.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 33;
  }
  template <typename T, size_t N>
  T Pick(const T (&values)[N]) {
    return values[Next() % N];
  }
  // Log-uniform in [lo, hi], rounded down to a multiple of `step` (at least `step`).
  int64_t LogUniform(int64_t lo, int64_t hi, int64_t step) {
    const double u = static_cast<double>(Next() % 1000000) / 1e6;
    const double v =
        static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo), u);
    return std::max(step, static_cast<int64_t>(v) / step * step);
  }
  bool Chance(int percent) { return static_cast<int>(Next() % 100) < percent; }

 private:
  uint64_t state_;
};

constexpr int64_t kBatches[] = {1, 2, 4, 8, 16, 32, 64, 128};

// ------------------------------------------------------------------------------- conv_train

void TrainDense2d(ConvSetBuilder& b, Lcg& rng) {
  // 3x3 "same" convolutions, channels typical of each resolution (C = K).
  const std::pair<int64_t, std::vector<int64_t>> by_size[] = {
      {224, {16, 32}},
      {112, {16, 32, 64}},
      {56, {32, 64, 128}},
      {28, {64, 128, 256}},
      {14, {128, 256, 512, 1024}},
      {7, {256, 512, 1024, 2048}},
      {64, {64, 320}},
      {32, {128, 640}},
      {16, {256, 1280}},
      {8, {512, 1280, 2048}},
  };
  for (const auto& [hw, channels] : by_size) {
    for (const int64_t c : channels)
      b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 1, 1), "train.dense3x3");
  }
  // 1x1 with asymmetric C/K (bottleneck expand and reduce), and square.
  const int64_t pointwise[][3] = {
      {112, 16, 96},    {112, 32, 16},   {56, 64, 256},   {56, 256, 64},  {56, 24, 144},
      {56, 144, 24},    {28, 128, 512},  {28, 512, 128},  {28, 32, 192},  {28, 192, 32},
      {28, 40, 240},    {14, 256, 1024}, {14, 1024, 256}, {14, 96, 576},  {14, 576, 96},
      {14, 80, 480},    {14, 672, 112},  {7, 512, 2048},  {7, 2048, 512}, {7, 160, 960},
      {7, 960, 160},    {7, 1280, 320},  {7, 320, 1280},  {64, 320, 320}, {32, 640, 640},
      {16, 1280, 1280}, {56, 128, 128},  {28, 256, 256},  {14, 512, 512}, {7, 1024, 1024},
      {128, 64, 128},   {96, 48, 192},   {48, 384, 96},   {24, 768, 192}, {12, 1536, 384},
  };
  for (const auto& [hw, c, k] : pointwise)
    b.Add(Conv2d(rng.Pick(kBatches), c, k, hw, 1, 1, 0), "train.pointwise");
}

void TrainStrided2d(ConvSetBuilder& b, Lcg& rng) {
  // 3x3 stride 2 (C -> C and C -> 2C) and 1x1 stride 2 projections.
  const int64_t strided[][2] = {{224, 16}, {112, 32}, {112, 64}, {56, 64},  {56, 128}, {28, 128},
                                {28, 256}, {14, 256}, {14, 512}, {64, 320}, {32, 640}, {16, 1280}};
  for (const auto& [hw, c] : strided) {
    const int64_t wider = std::min<int64_t>(2 * c, 2048);  // channels stay within 16-2048
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 2, 1), "train.stride2_3x3");
    b.Add(Conv2d(rng.Pick(kBatches), c, wider, hw, 3, 2, 1), "train.stride2_3x3");
    b.Add(Conv2d(rng.Pick(kBatches), c, wider, hw, 1, 2, 0), "train.stride2_1x1");
  }
  // Stems and patchify layers: few input channels, large strides.
  b.Add(Conv2d(rng.Pick(kBatches), 3, 64, 224, 7, 2, 3), "train.stem7x7");
  b.Add(Conv2d(rng.Pick(kBatches), 3, 32, 256, 3, 2, 1), "train.stem3x3");
  b.Add(Conv2d(rng.Pick(kBatches), 3, 24, 192, 3, 2, 1), "train.stem3x3");
  b.Add(Conv2d(rng.Pick(kBatches), 3, 128, 256, 4, 4, 0), "train.patchify");
  b.Add(Conv2d(rng.Pick(kBatches), 3, 64, 160, 4, 4, 0), "train.patchify");
  b.Add(Conv2d(rng.Pick(kBatches), 3, 768, 224, 16, 16, 0), "train.patchify");
  b.Add(Conv2d(rng.Pick(kBatches), 4, 64, 64, 3, 1, 1), "train.stem3x3");
  for (const int64_t c : {64, 128, 256, 512}) {
    b.Add(Conv2d(rng.Pick(kBatches), c, 2 * c, 448 / (c / 8), 2, 2, 0), "train.downsample2x2");
  }
}

void TrainLargeFilter2d(ConvSetBuilder& b, Lcg& rng) {
  const int64_t large[][3] = {{5, 56, 64},  {5, 28, 128}, {5, 14, 256}, {5, 7, 512},
                              {5, 64, 32},  {7, 56, 64},  {7, 28, 128}, {7, 14, 256},
                              {7, 112, 16}, {7, 7, 512},  {5, 32, 96},  {7, 32, 48}};
  for (const auto& [f, hw, c] : large)
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, f, 1, f / 2),
          "train.dense" + std::to_string(f) + "x" + std::to_string(f));
  const int64_t rect[][4] = {{17, 128, 1, 7}, {17, 128, 7, 1}, {17, 192, 1, 7},
                             {17, 160, 7, 1}, {35, 64, 1, 3},  {8, 384, 3, 1}};
  for (const auto& [hw, c, y, x] : rect)
    b.Add(Conv2dRect(rng.Pick(kBatches), c, c, hw, y, x), "train.rect_filter");
}

void TrainDilated2d(ConvSetBuilder& b, Lcg& rng) {
  const int64_t dilated[][3] = {{2, 64, 256},  {2, 33, 512}, {4, 33, 512}, {2, 28, 256},
                                {4, 64, 256},  {8, 64, 256}, {2, 97, 64},  {6, 65, 256},
                                {12, 65, 256}, {2, 14, 1024}};
  for (const auto& [d, hw, c] : dilated)
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 1, d, 1, d), "train.dilated3x3");
  b.Add(Conv2d(rng.Pick(kBatches), 128, 128, 56, 3, 1, 2, 8, 2), "train.dilated_grouped");
  b.Add(Conv2d(rng.Pick(kBatches), 256, 256, 28, 3, 1, 2, 256, 2), "train.dilated_depthwise");
  b.Add(Conv2d(rng.Pick(kBatches), 64, 64, 56, 5, 1, 4, 1, 2), "train.dilated5x5");
}

void TrainGrouped2d(ConvSetBuilder& b, Lcg& rng) {
  const int64_t grouped[][3] = {
      // hw, channels, groups
      {56, 64, 2},   {56, 128, 4},  {56, 128, 8}, {56, 128, 32}, {28, 256, 4},   {28, 256, 8},
      {28, 256, 32}, {28, 192, 12}, {14, 512, 8}, {14, 512, 32}, {14, 1024, 64}, {14, 384, 24},
      {7, 1024, 32}, {7, 2048, 64}, {7, 1024, 8}, {112, 48, 2},  {112, 64, 4},   {56, 96, 6},
      {28, 160, 10}, {14, 400, 25}, {32, 640, 2}, {16, 1280, 4}, {64, 256, 16},  {28, 512, 16}};
  for (const auto& [hw, c, g] : grouped) {
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 1, 1, g), "train.grouped3x3");
  }
  for (const auto& [hw, c, g] : {std::array<int64_t, 3>{56, 128, 32},
                                 {28, 256, 8},
                                 {14, 512, 4},
                                 {112, 64, 2},
                                 {28, 400, 25}}) {
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 2, 1, g), "train.grouped3x3_s2");
  }
  // Grouped 1x1 (ShuffleNet) and grouped with K != C.
  b.Add(Conv2d(rng.Pick(kBatches), 240, 240, 28, 1, 1, 0, 4), "train.grouped1x1");
  b.Add(Conv2d(rng.Pick(kBatches), 480, 960, 14, 1, 1, 0, 8), "train.grouped1x1");
  b.Add(Conv2d(rng.Pick(kBatches), 128, 256, 28, 3, 1, 1, 2), "train.grouped3x3_expand");
  b.Add(Conv2d(rng.Pick(kBatches), 256, 128, 28, 3, 1, 1, 4), "train.grouped3x3_reduce");
  b.Add(Conv2d(rng.Pick(kBatches), 512, 512, 14, 5, 1, 2, 8), "train.grouped5x5");
}

void TrainDepthwise2d(ConvSetBuilder& b, Lcg& rng) {
  const int64_t depthwise[][2] = {{112, 32}, {112, 64}, {56, 96},  {56, 128},  {56, 144}, {28, 192},
                                  {28, 240}, {28, 256}, {14, 384}, {14, 480},  {14, 576}, {14, 672},
                                  {7, 960},  {7, 1152}, {7, 1024}, {56, 96},   {28, 192}, {14, 384},
                                  {7, 768},  {64, 320}, {32, 640}, {16, 1280}, {160, 24}, {80, 48}};
  const int64_t filters[] = {3, 3, 5, 7};
  for (const auto& [hw, c] : depthwise) {
    const int64_t f = rng.Pick(filters);
    const int64_t s = rng.Chance(25) ? 2 : 1;
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, f, s, f / 2, c),
          "train.depthwise" + std::to_string(f) + "x" + std::to_string(f));
  }
  for (const auto& [hw, c] : {std::pair<int64_t, int64_t>{56, 96}, {28, 240}, {14, 672}}) {
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 3, 2, 1, c), "train.depthwise3x3_s2");
    b.Add(Conv2d(rng.Pick(kBatches), c, c, hw, 5, 2, 2, c), "train.depthwise5x5_s2");
  }
  // Channel multiplier 2 (K = 2C, one input channel per group).
  b.Add(Conv2d(rng.Pick(kBatches), 32, 64, 112, 3, 1, 1, 32), "train.depthwise_multiplier");
  b.Add(Conv2d(rng.Pick(kBatches), 128, 256, 28, 3, 1, 1, 128), "train.depthwise_multiplier");
}

void TrainNonPowerOfTwo2d(ConvSetBuilder& b, Lcg& rng) {
  const int64_t npot[][3] = {{17, 768, 192}, {35, 288, 64},  {73, 64, 80},   {150, 32, 24},
                             {19, 384, 384}, {38, 256, 256}, {75, 128, 128}, {9, 2048, 448},
                             {13, 384, 256}, {27, 96, 256},  {55, 48, 96},   {147, 32, 64},
                             {71, 192, 192}, {299, 3, 32},   {10, 1280, 640}};
  for (const auto& [hw, c, k] : npot) {
    b.Add(Conv2d(rng.Pick(kBatches), c, k, hw, 3, 1, 1), "train.npot3x3");
    b.Add(Conv2d(rng.Pick(kBatches), c, k, hw, 1, 1, 0), "train.npot1x1");
  }
  // "valid" padding: outputs smaller than inputs.
  b.Add(Conv2d(rng.Pick(kBatches), 64, 64, 57, 3, 1, 0), "train.valid3x3");
  b.Add(Conv2d(rng.Pick(kBatches), 192, 192, 35, 5, 1, 0), "train.valid5x5");
  b.Add(Conv2d(rng.Pick(kBatches), 32, 32, 149, 3, 2, 0), "train.valid3x3_s2");
}

void Train3d(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kBatches3d[] = {1, 1, 2, 4, 8, 16};
  constexpr Dims3 k333{3, 3, 3}, k133{1, 3, 3}, k311{3, 1, 1}, k111{1, 1, 1};
  constexpr Dims3 s111{1, 1, 1}, s222{2, 2, 2}, s122{1, 2, 2};
  constexpr Dims3 p111{1, 1, 1}, p011{0, 1, 1}, p100{1, 0, 0}, p000{0, 0, 0};
  // Dense 3x3x3 "same" at volumes of segmentation and video networks.
  const int64_t dense[][3] = {{16, 56, 64},  {8, 28, 128},  {4, 14, 256},  {2, 7, 512},
                              {32, 32, 32},  {16, 16, 128}, {8, 8, 256},   {64, 64, 16},
                              {48, 48, 32},  {24, 24, 64},  {12, 12, 128}, {6, 6, 320},
                              {16, 112, 16}, {8, 56, 64},   {4, 28, 256},  {96, 96, 16}};
  for (const auto& [d, hw, c] : dense)
    b.Add(Conv3d(rng.Pick(kBatches3d), c, c, d, hw, k333, s111, p111), "train3d.dense3x3x3");
  const int64_t asym[][4] = {
      {32, 32, 16, 32}, {16, 16, 64, 128}, {8, 28, 128, 256}, {64, 64, 4, 32}, {16, 56, 3, 64}};
  for (const auto& [d, hw, c, k] : asym)
    b.Add(Conv3d(rng.Pick(kBatches3d), c, k, d, hw, k333, s111, p111), "train3d.dense3x3x3");
  // Strided 3x3x3 and 1x1x1 downsampling.
  const int64_t strided[][3] = {{32, 32, 32}, {16, 16, 64}, {8, 8, 128},
                                {16, 56, 64}, {64, 64, 16}, {8, 28, 128}};
  for (const auto& [d, hw, c] : strided) {
    b.Add(Conv3d(rng.Pick(kBatches3d), c, 2 * c, d, hw, k333, s222, p111), "train3d.stride2");
    b.Add(Conv3d(rng.Pick(kBatches3d), c, 2 * c, d, hw, k111, s222, p000), "train3d.stride2_1x1");
  }
  // (2+1)D factorisation: 1x3x3 spatial, 3x1x1 temporal; 1x1x1 pointwise.
  const int64_t factorised[][4] = {{16, 56, 64, 144}, {8, 28, 128, 288}, {4, 14, 256, 576},
                                   {16, 112, 3, 45},  {32, 56, 64, 64},  {8, 56, 96, 96}};
  for (const auto& [d, hw, c, mid] : factorised) {
    b.Add(Conv3d(rng.Pick(kBatches3d), c, mid, d, hw, k133, s111, p011), "train3d.spatial1x3x3");
    b.Add(Conv3d(rng.Pick(kBatches3d), mid, c, d, hw, k311, s111, p100), "train3d.temporal3x1x1");
  }
  b.Add(Conv3d(rng.Pick(kBatches3d), 64, 128, 16, 56, k133, s122, p011), "train3d.spatial_s2");
  const int64_t pointwise[][4] = {{16, 56, 64, 256}, {8, 28, 256, 128}, {4, 14, 512, 1024},
                                  {32, 32, 32, 64},  {16, 16, 192, 96}, {2, 7, 832, 256}};
  for (const auto& [d, hw, c, k] : pointwise)
    b.Add(Conv3d(rng.Pick(kBatches3d), c, k, d, hw, k111, s111, p000), "train3d.pointwise");
  // Depthwise and grouped 3D (X3D, CSN), and dilated 3D.
  const int64_t depthwise[][2] = {{16, 56}, {16, 28}, {8, 14}, {4, 7}, {32, 32}};
  int64_t channels = 48;
  for (const auto& [d, hw] : depthwise) {
    b.Add(Conv3d(rng.Pick(kBatches3d), channels, channels, d, hw, k333, s111, p111, channels),
          "train3d.depthwise3x3x3");
    channels *= 2;
  }
  b.Add(Conv3d(rng.Pick(kBatches3d), 108, 108, 16, 56, k333, s122, p111, 108),
        "train3d.depthwise_s2");
  b.Add(Conv3d(rng.Pick(kBatches3d), 128, 128, 8, 28, k333, s111, p111, 4), "train3d.grouped");
  b.Add(Conv3d(rng.Pick(kBatches3d), 256, 256, 8, 14, k333, s111, p111, 8), "train3d.grouped");
  b.Add(Conv3d(rng.Pick(kBatches3d), 64, 64, 16, 32, k333, s111, p111, 2), "train3d.grouped");
  b.Add(Conv3d(rng.Pick(kBatches3d), 64, 64, 16, 32, k333, s111, {2, 2, 2}, 1, 2),
        "train3d.dilated");
  b.Add(Conv3d(rng.Pick(kBatches3d), 32, 32, 32, 32, {5, 5, 5}, s111, {2, 2, 2}),
        "train3d.dense5x5x5");
  b.Add(Conv3d(rng.Pick(kBatches3d), 3, 64, 16, 112, {3, 7, 7}, s122, {1, 3, 3}), "train3d.stem");
  b.Add(Conv3d(rng.Pick(kBatches3d), 1, 32, 64, 64, k333, s111, p111), "train3d.stem");
}

// Draws across every regime until the set holds kTrainRows shapes. With `odd_channel_percent`
// > 0, that share of draws takes any channel count from 3 to 512 (stems, R(2+1)D's 45, 230):
// channels off the engines' 8-element vector width.
void TrainRandom(ConvSetBuilder& b, Lcg& rng, int odd_channel_percent = 0,
                 const std::string& prefix = "train") {
  constexpr int64_t kFilters[] = {1, 1, 3, 3, 3, 5, 7};
  constexpr int64_t kGroups[] = {2, 4, 8, 16, 32};
  constexpr int64_t kRatios[][2] = {{1, 4}, {1, 2}, {1, 1}, {1, 1}, {2, 1}, {4, 1}};
  int attempts = 0;
  while (b.size() < kTrainRows && ++attempts < 100000) {
    const bool three_d = rng.Chance(20);
    const int64_t f = rng.Pick(kFilters);
    const int64_t stride = rng.Chance(25) ? 2 : 1;
    const int64_t dilation = f > 1 && rng.Chance(10) ? 2 : 1;
    const int64_t pad = rng.Chance(15) ? 0 : (f / 2) * dilation;
    const bool odd = odd_channel_percent > 0 && rng.Chance(odd_channel_percent);
    const int64_t c = odd ? rng.LogUniform(3, 512, 1) : rng.LogUniform(16, 2048, 8);
    const auto* ratio = kRatios[rng.Next() % std::size(kRatios)];
    const int64_t k = odd ? std::clamp(c * ratio[0] / ratio[1], int64_t{3}, int64_t{2048})
                          : std::clamp(c * ratio[0] / ratio[1] / 8 * 8, int64_t{16}, int64_t{2048});
    const int mode = static_cast<int>(rng.Next() % 10);  // 0-5 dense, 6-7 grouped, 8-9 depthwise
    int64_t g = 1;
    if (mode >= 8) {
      g = c;
    } else if (mode >= 6) {
      g = rng.Pick(kGroups);
    }
    const int64_t kk = g == c ? c : k;
    const int64_t batch = rng.Pick(kBatches);
    std::string family = prefix + (g == 1   ? ".random"
                                   : g == c ? ".random_depthwise"
                                            : ".random_grouped");
    if (three_d) {
      const int64_t d = rng.LogUniform(4, 32, 2);
      const int64_t hw = rng.LogUniform(7, 64, 1);
      b.Add(Conv3d(batch, c, kk, d, hw, {f, f, f}, {stride, stride, stride}, {pad, pad, pad}, g,
                   dilation),
            prefix + "3d.random");
    } else {
      const int64_t hw = rng.LogUniform(7, 160, 1);
      b.Add(Conv2d(batch, c, kk, hw, f, stride, pad, g, dilation), family);
    }
  }
}

std::vector<ConvShapeRow> ValidationSet();

std::vector<ConvShapeRow> TrainSet() {
  // Validation layers stay out of training, whatever the draws produce.
  std::set<std::string> validation;
  for (const ConvShapeRow& row : ValidationSet()) validation.insert(row.shape.ToString());
  ConvSetBuilder b(&validation);
  Lcg rng(20261126);
  TrainDense2d(b, rng);
  TrainStrided2d(b, rng);
  TrainLargeFilter2d(b, rng);
  TrainDilated2d(b, rng);
  TrainGrouped2d(b, rng);
  TrainDepthwise2d(b, rng);
  TrainNonPowerOfTwo2d(b, rng);
  Train3d(b, rng);
  TrainRandom(b, rng);
  return b.Take();
}

// A second training set of random draws only (another seed, a fifth of them with channel counts
// off the vector width), disjoint from conv_train and conv_validation: more training problems
// where 300 shapes per direction leave the models short.
std::vector<ConvShapeRow> TrainExtraSet() {
  std::set<std::string> excluded;
  for (const ConvShapeRow& row : ValidationSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainSet()) excluded.insert(row.shape.ToString());
  ConvSetBuilder b(&excluded);
  Lcg rng(20261127);
  TrainRandom(b, rng, /*odd_channel_percent=*/20, "extra");
  return b.Take();
}

// ------------------------------------------------------------------------ conv_train_networks

// Training layers of other well-known networks than conv_validation's: the stems, narrow and
// odd channel counts, batch-1 layers and 1x7 / 7x1 factorisations real models bring, which the
// regime draws cover thinly. Each network at two batch sizes taken by its layers in turn (as in
// conv_validation); a layer equal to a conv_validation, conv_train or conv_train_extra row is
// left out.

// torchvision vgg16, 224x224: two or three 3x3 convs per stage.
void Vgg16(ConvSetBuilder& b, int64_t n) {
  const int64_t stages[][3] = {
      {64, 224, 2}, {128, 112, 2}, {256, 56, 3}, {512, 28, 3}, {512, 14, 3}};
  int64_t in = 3;
  int stage = 1;
  for (const auto& [c, hw, convs] : stages) {
    for (int i = 0; i < convs && i < 2; ++i) {
      b.Add(Conv2d(n, i == 0 ? in : c, c, hw, 3, 1, 1),
            "vgg16.stage" + std::to_string(stage) + ".conv" + std::to_string(i + 1));
    }
    in = c;
    ++stage;
  }
}

// torchvision resnet18 (basic blocks: two 3x3 convs, a strided 1x1 projection), 224x224.
void ResNet18(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 64, 224, 7, 2, 3), "resnet18.conv1");
  const int64_t stages[][3] = {{64, 56, 1}, {128, 56, 2}, {256, 28, 2}, {512, 14, 2}};
  int64_t in = 64;
  int layer = 1;
  for (const auto& [c, hw, stride] : stages) {
    const std::string name = "resnet18.layer" + std::to_string(layer++);
    const int64_t hw_out = (hw - 1) / stride + 1;
    b.Add(Conv2d(n, in, c, hw, 3, stride, 1), name + ".0.conv1");
    b.Add(Conv2d(n, c, c, hw_out, 3, 1, 1), name + ".0.conv2");
    if (stride != 1) b.Add(Conv2d(n, in, c, hw, 1, stride, 0), name + ".0.downsample");
    in = c;
  }
}

// torchvision densenet121, 224x224 (growth 32, bottleneck 128): each dense layer's 1x1 takes
// the concatenation so far (C = 64 + 32 i in block 1), its 3x3 gives 32 channels; transitions
// halve the channels with a 1x1. Every fourth layer of a block.
void DenseNet121(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 64, 224, 7, 2, 3), "densenet121.conv0");
  const int64_t blocks[][2] = {{6, 56}, {12, 28}, {24, 14}, {16, 7}};
  int64_t in = 64;
  int index = 1;
  for (const auto& [layers, hw] : blocks) {
    const std::string name = "densenet121.denseblock" + std::to_string(index);
    for (int64_t i = 0; i < layers; i += 4) {
      b.Add(Conv2d(n, in + 32 * i, 128, hw, 1, 1, 0),
            name + ".layer" + std::to_string(i + 1) + ".conv1");
    }
    b.Add(Conv2d(n, 128, 32, hw, 3, 1, 1), name + ".conv2");
    in += 32 * layers;
    if (index < 4) {
      b.Add(Conv2d(n, in, in / 2, hw, 1, 1, 0), "densenet121.transition" + std::to_string(index));
      in /= 2;
    }
    ++index;
  }
}

// torchvision inception_v3, 299x299: the "valid" stem, then one block of each kind (5x5 and
// 3x3 branches, the 1x7 / 7x1 factorised ones, the reductions).
void InceptionV3(ConvSetBuilder& b, int64_t n) {
  const std::string v3 = "inception_v3.";
  b.Add(Conv2d(n, 3, 32, 299, 3, 2, 0), v3 + "Conv2d_1a_3x3");
  b.Add(Conv2d(n, 32, 32, 149, 3, 1, 0), v3 + "Conv2d_2a_3x3");
  b.Add(Conv2d(n, 32, 64, 147, 3, 1, 1), v3 + "Conv2d_2b_3x3");
  b.Add(Conv2d(n, 64, 80, 73, 1, 1, 0), v3 + "Conv2d_3b_1x1");
  b.Add(Conv2d(n, 80, 192, 73, 3, 1, 0), v3 + "Conv2d_4a_3x3");
  b.Add(Conv2d(n, 192, 64, 35, 1, 1, 0), v3 + "Mixed_5b.branch1x1");
  b.Add(Conv2d(n, 192, 48, 35, 1, 1, 0), v3 + "Mixed_5b.branch5x5_1");
  b.Add(Conv2d(n, 48, 64, 35, 5, 1, 2), v3 + "Mixed_5b.branch5x5_2");
  b.Add(Conv2d(n, 64, 96, 35, 3, 1, 1), v3 + "Mixed_5b.branch3x3dbl_2");
  b.Add(Conv2d(n, 96, 96, 35, 3, 1, 1), v3 + "Mixed_5b.branch3x3dbl_3");
  b.Add(Conv2d(n, 288, 384, 35, 3, 2, 0), v3 + "Mixed_6a.branch3x3");
  b.Add(Conv2d(n, 96, 96, 35, 3, 2, 0), v3 + "Mixed_6a.branch3x3dbl_3");
  b.Add(Conv2d(n, 768, 128, 17, 1, 1, 0), v3 + "Mixed_6b.branch7x7_1");
  b.Add(Conv2dRect(n, 128, 128, 17, 1, 7), v3 + "Mixed_6b.branch7x7_2");
  b.Add(Conv2dRect(n, 128, 192, 17, 7, 1), v3 + "Mixed_6b.branch7x7_3");
  b.Add(Conv2dRect(n, 160, 160, 17, 7, 1), v3 + "Mixed_6c.branch7x7dbl_2");
  b.Add(Conv2d(n, 192, 320, 17, 3, 2, 0), v3 + "Mixed_7a.branch3x3_2");
  b.Add(Conv2d(n, 1280, 448, 8, 1, 1, 0), v3 + "Mixed_7b.branch3x3dbl_1");
  b.Add(Conv2d(n, 448, 384, 8, 3, 1, 1), v3 + "Mixed_7b.branch3x3dbl_2");
  b.Add(Conv2dRect(n, 384, 384, 8, 1, 3), v3 + "Mixed_7b.branch3x3_2a");
  b.Add(Conv2dRect(n, 384, 384, 8, 3, 1), v3 + "Mixed_7b.branch3x3_2b");
  b.Add(Conv2d(n, 2048, 320, 8, 1, 1, 0), v3 + "Mixed_7c.branch1x1");
}

// torchvision shufflenet_v2_x1_0, 224x224: branch widths 58 / 116 / 232 (off the vector width),
// 3x3 depthwise (stride 2 on each stage's first unit), 1x1 pointwise.
void ShuffleNetV2(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 24, 224, 3, 2, 1), "shufflenet_v2.conv1");
  const int64_t stages[][3] = {{24, 58, 56}, {116, 116, 28}, {232, 232, 14}};
  int index = 2;
  for (const auto& [in, branch, hw] : stages) {
    const std::string name = "shufflenet_v2.stage" + std::to_string(index++);
    const int64_t hw_out = hw / 2;
    b.Add(Conv2d(n, in, in, hw, 3, 2, 1, in), name + ".0.branch1.depthwise");
    b.Add(Conv2d(n, in, branch, hw_out, 1, 1, 0), name + ".0.branch1.pointwise");
    b.Add(Conv2d(n, in, branch, hw, 1, 1, 0), name + ".0.branch2.pointwise1");
    b.Add(Conv2d(n, branch, branch, hw, 3, 2, 1, branch), name + ".0.branch2.depthwise");
    b.Add(Conv2d(n, branch, branch, hw_out, 1, 1, 0), name + ".1.branch2.pointwise");
    b.Add(Conv2d(n, branch, branch, hw_out, 3, 1, 1, branch), name + ".1.branch2.depthwise");
  }
  b.Add(Conv2d(n, 464, 1024, 7, 1, 1, 0), "shufflenet_v2.conv5");
}

// torchvision mobilenet_v3_large, 224x224: expansions 64-960 (72, 120, 200, 184 off powers of
// two), 3x3 and 5x5 depthwise, squeeze-excite's 1x1s on 1x1 maps left out.
void MobileNetV3Large(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 16, 224, 3, 2, 1), "mobilenet_v3_large.stem");
  struct Block {
    int64_t in, expand, out, kernel, stride, hw;
  };
  const Block blocks[] = {
      {16, 16, 16, 3, 1, 112},   {16, 64, 24, 3, 2, 112},   {24, 72, 24, 3, 1, 56},
      {24, 72, 40, 5, 2, 56},    {40, 120, 40, 5, 1, 28},   {40, 240, 80, 3, 2, 28},
      {80, 200, 80, 3, 1, 14},   {80, 184, 80, 3, 1, 14},   {80, 480, 112, 3, 1, 14},
      {112, 672, 112, 3, 1, 14}, {112, 672, 160, 5, 2, 14}, {160, 960, 160, 5, 1, 7}};
  int index = 1;
  for (const Block& k : blocks) {
    const std::string name = "mobilenet_v3_large.features" + std::to_string(index++);
    if (k.expand != k.in) b.Add(Conv2d(n, k.in, k.expand, k.hw, 1, 1, 0), name + ".expand");
    b.Add(Conv2d(n, k.expand, k.expand, k.hw, k.kernel, k.stride, k.kernel / 2, k.expand),
          name + ".depthwise");
    b.Add(Conv2d(n, k.expand, k.out, (k.hw - 1) / k.stride + 1, 1, 1, 0), name + ".project");
  }
  b.Add(Conv2d(n, 160, 960, 7, 1, 1, 0), "mobilenet_v3_large.head");
}

// torchvision squeezenet1_1, 224x224: fire modules, 1x1 squeeze to 16-64 channels, then 1x1 and
// 3x3 expands.
void SqueezeNet11(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 64, 224, 3, 2, 0), "squeezenet1_1.conv1");
  const int64_t fires[][4] = {
      {64, 16, 64, 55}, {128, 32, 128, 27}, {256, 48, 192, 13}, {384, 64, 256, 13}};
  int index = 2;
  for (const auto& [in, squeeze, expand, hw] : fires) {
    const std::string name = "squeezenet1_1.fire" + std::to_string(index++);
    b.Add(Conv2d(n, in, squeeze, hw, 1, 1, 0), name + ".squeeze");
    b.Add(Conv2d(n, squeeze, expand, hw, 1, 1, 0), name + ".expand1x1");
    b.Add(Conv2d(n, squeeze, expand, hw, 3, 1, 1), name + ".expand3x3");
  }
}

// The Stable Diffusion VAE decoder (diffusers AutoencoderKL, 64x64 latents to 512x512 images):
// conv_in from 4 channels, 3x3 ResNet convs at 512 / 256 / 128 channels, conv_out to 3.
void SdVaeDecoder(ConvSetBuilder& b, int64_t n) {
  const std::string vae = "sd_vae_decoder.";
  b.Add(Conv2d(n, 4, 512, 64, 3, 1, 1), vae + "conv_in");
  b.Add(Conv2d(n, 512, 512, 64, 3, 1, 1), vae + "mid.conv");
  b.Add(Conv2d(n, 512, 512, 128, 3, 1, 1), vae + "up1.conv");
  b.Add(Conv2d(n, 512, 256, 256, 3, 1, 1), vae + "up2.conv1");
  b.Add(Conv2d(n, 512, 256, 256, 1, 1, 0), vae + "up2.shortcut");
  b.Add(Conv2d(n, 256, 128, 512, 3, 1, 1), vae + "up3.conv1");
  b.Add(Conv2d(n, 128, 128, 512, 3, 1, 1), vae + "up3.conv2");
  b.Add(Conv2d(n, 128, 3, 512, 3, 1, 1), vae + "conv_out");
}

// YOLOv5s (Ultralytics), 640x640: 6x6/2 stem, 3x3/2 downsamplers, C3 blocks' 1x1 and 3x3 convs
// at half width, the 1x1 heads to 255 outputs (3 anchors x 85).
void YoloV5s(ConvSetBuilder& b, int64_t n) {
  const std::string y = "yolov5s.";
  b.Add(Conv2d(n, 3, 32, 640, 6, 2, 2), y + "stem");
  const int64_t stages[][2] = {{32, 320}, {64, 160}, {128, 80}, {256, 40}};
  int index = 1;
  for (const auto& [c, hw] : stages) {
    const std::string name = y + "stage" + std::to_string(index++);
    b.Add(Conv2d(n, c, 2 * c, hw, 3, 2, 1), name + ".down");
    b.Add(Conv2d(n, 2 * c, c, hw / 2, 1, 1, 0), name + ".c3.cv1");
    b.Add(Conv2d(n, c, c, hw / 2, 3, 1, 1), name + ".c3.m.cv2");
  }
  for (const auto& [c, hw] : {std::pair<int64_t, int64_t>{128, 80}, {256, 40}, {512, 20}}) {
    b.Add(Conv2d(n, c, 255, hw, 1, 1, 0), y + "detect" + std::to_string(hw));
  }
}

// torchvision r3d_18 on 16x112x112 clips: 3x7x7 stem, 3x3x3 basic blocks, strided 1x1x1
// projections.
void R3d18(ConvSetBuilder& b, int64_t n) {
  constexpr Dims3 k333{3, 3, 3}, k111{1, 1, 1}, s111{1, 1, 1}, p111{1, 1, 1}, p000{0, 0, 0};
  b.Add(Conv3d(n, 3, 64, 16, 112, {3, 7, 7}, {1, 2, 2}, {1, 3, 3}), "r3d_18.stem");
  const int64_t stages[][4] = {{64, 16, 56, 1}, {128, 16, 56, 2}, {256, 8, 28, 2}, {512, 4, 14, 2}};
  int64_t in = 64;
  int layer = 1;
  for (const auto& [c, d, hw, s] : stages) {
    const std::string name = "r3d_18.layer" + std::to_string(layer++);
    b.Add(Conv3d(n, in, c, d, hw, k333, {s, s, s}, p111), name + ".0.conv1");
    b.Add(Conv3d(n, c, c, (d - 1) / s + 1, (hw - 1) / s + 1, k333, s111, p111), name + ".0.conv2");
    if (s != 1) b.Add(Conv3d(n, in, c, d, hw, k111, {s, s, s}, p000), name + ".0.downsample");
    in = c;
  }
}

std::vector<ConvShapeRow> TrainNetworksSet() {
  std::set<std::string> excluded;
  for (const ConvShapeRow& row : ValidationSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainExtraSet()) excluded.insert(row.shape.ToString());
  ConvSetBuilder b(&excluded);
  struct Network {
    void (*add)(ConvSetBuilder&, int64_t);
    int64_t batch_a, batch_b;
  };
  const Network networks[] = {{Vgg16, 1, 8},         {ResNet18, 1, 64},
                              {DenseNet121, 1, 16},  {InceptionV3, 1, 16},
                              {ShuffleNetV2, 1, 64}, {MobileNetV3Large, 1, 64},
                              {SqueezeNet11, 1, 32}, {SdVaeDecoder, 1, 2},
                              {YoloV5s, 1, 16},      {R3d18, 1, 4}};
  for (const Network& net : networks) {
    b.AlternateBatches(net.batch_a, net.batch_b);
    net.add(b, net.batch_a);
  }
  return b.Take();
}

// ---------------------------------------------------------------------------- conv_train_hard

// Seeded draws over the regimes the shipped models rank worst on real layers (session 23): stems
// on 1-4 input channels, 3D layers whose kernel spans one frame, channel counts off the
// 8-element vector width, layers writing or reading a handful of channels, grouped 3x3 stride 2
// on narrow groups at small batch, and batch 1-8 on small maps. Each regime draws until it holds
// its quota (a draw equal to a row already taken or excluded is redrawn), so the set's make-up
// does not depend on what the other sets hold.

// Channel counts off the vector width: any count in [lo, hi] (log-uniform), nudged off a multiple
// of 8 when it lands on one.
int64_t OddChannels(Lcg& rng, int64_t lo, int64_t hi) {
  int64_t c = rng.LogUniform(lo, hi, 1);
  if (c % 8 == 0) c += 1 + static_cast<int64_t>(rng.Next() % 7);
  return std::min(c, hi);
}

// A channel count on the vector width or, `odd_percent` of the time, off it.
int64_t MixedChannels(Lcg& rng, int64_t lo, int64_t hi, int odd_percent) {
  return rng.Chance(odd_percent) ? OddChannels(rng, lo, hi) : rng.LogUniform(lo, hi, 8);
}

// Draws `quota` rows from `draw` (each call one candidate shape), giving up after 100 tries per
// row: the regimes are wide enough that it never comes to that.
template <typename Draw>
void DrawQuota(ConvSetBuilder& b, size_t quota, const std::string& family, Draw draw) {
  const size_t target = b.size() + quota;
  for (size_t attempts = 0; b.size() < target && attempts < 100 * quota; ++attempts) {
    b.Add(draw(), family);
  }
}

void HardStems2d(ConvSetBuilder& b, Lcg& rng) {
  // filter, stride, pad: 3x3/1-2, 5x5-7x7/2, and patchify (filter = stride).
  constexpr int64_t kStems[][3] = {{3, 1, 1}, {3, 2, 1}, {3, 2, 0}, {5, 2, 2}, {6, 2, 2},
                                   {7, 2, 3}, {2, 2, 0}, {4, 4, 0}, {8, 8, 0}, {16, 16, 0}};
  constexpr int64_t kInputs[] = {1, 3, 3, 3, 4};
  constexpr int64_t kStemBatches[] = {1, 1, 2, 4, 8, 16, 32};
  DrawQuota(b, 24, "hard.stem2d", [&] {
    const auto* stem = kStems[rng.Next() % std::size(kStems)];
    const int64_t hw = rng.LogUniform(64, 384, 8);
    const int64_t k = MixedChannels(rng, 16, 256, 25);
    return Conv2d(rng.Pick(kStemBatches), rng.Pick(kInputs), k, hw, stem[0], stem[1], stem[2]);
  });
}

void HardStems3d(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kInputs[] = {1, 3, 3, 4};
  constexpr int64_t kBatches3d[] = {1, 1, 2, 4};
  DrawQuota(b, 10, "hard.stem3d", [&] {
    const int64_t f = rng.Chance(50) ? 7 : rng.Chance(50) ? 5 : 3;
    const int64_t z = rng.Chance(60) ? 1 : 3;  // one-frame spatial stems ((2+1)D) and full 3D
    const int64_t sd = z == 1 || rng.Chance(50) ? 1 : 2;
    const int64_t d = rng.LogUniform(4, 32, 2);
    const int64_t hw = rng.LogUniform(48, 160, 8);
    const int64_t k = MixedChannels(rng, 16, 96, 40);
    return Conv3d(rng.Pick(kBatches3d), rng.Pick(kInputs), k, d, hw, {z, f, f}, {sd, 2, 2},
                  {z / 2, f / 2, f / 2});
  });
}

void HardOneFrame3d(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kBatches3d[] = {1, 1, 2, 4, 8};
  DrawQuota(b, 28, "hard.one_frame3d", [&] {
    const int64_t c = MixedChannels(rng, 16, 1024, 40);
    const int64_t k = MixedChannels(rng, 16, 1024, 50);
    const int64_t d = rng.LogUniform(2, 32, 1);
    const int64_t hw = rng.LogUniform(7, 64, 1);
    const int kind = static_cast<int>(rng.Next() % 4);
    if (kind <= 1) {  // 1x3x3 spatial, stride 1 or a 2x2 spatial stride
      const int64_t s = kind == 1 ? 2 : 1;
      return Conv3d(rng.Pick(kBatches3d), c, k, d, hw, {1, 3, 3}, {1, s, s}, {0, 1, 1});
    }
    if (kind == 2) {  // 1x1x1 projections, often strided in time and space
      const int64_t s = rng.Chance(60) ? 2 : 1;
      return Conv3d(rng.Pick(kBatches3d), c, k, d, hw, {1, 1, 1}, {s, s, s}, {0, 0, 0});
    }
    // 3x1x1 temporal on off-width channels (the other half of a (2+1)D pair)
    const int64_t s = rng.Chance(30) ? 2 : 1;
    return Conv3d(rng.Pick(kBatches3d), c, k, d, hw, {3, 1, 1}, {s, 1, 1}, {1, 0, 0});
  });
}

void HardOddChannels2d(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kFilters[] = {1, 1, 3, 3, 3, 5, 7};
  DrawQuota(b, 28, "hard.odd_channels", [&] {
    // Both off the width, or one on it and the other off.
    const int both = static_cast<int>(rng.Next() % 3);
    const int64_t c = both == 2 ? rng.LogUniform(16, 1536, 8) : OddChannels(rng, 5, 1536);
    const int64_t k = both == 1 ? rng.LogUniform(16, 1536, 8) : OddChannels(rng, 5, 1536);
    const int64_t f = rng.Pick(kFilters);
    const int64_t stride = rng.Chance(25) ? 2 : 1;
    return Conv2d(rng.Pick(kBatches), c, k, rng.LogUniform(7, 112, 1), f, stride, f / 2);
  });
}

void HardFewChannels(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kFew[] = {1, 2, 3, 4, 4, 6};
  constexpr int64_t kSmallBatches[] = {1, 1, 2, 4, 8};
  DrawQuota(b, 14, "hard.few_channels", [&] {
    const int64_t few = rng.Pick(kFew);
    const int64_t wide = rng.LogUniform(16, 512, 8);
    const bool out = rng.Chance(50);  // a head writing `few` channels, or an input layer
    const int64_t c = out ? wide : few, k = out ? few : wide;
    const int64_t f = rng.Chance(60) ? 3 : 1;
    if (rng.Chance(35)) {
      return Conv3d(rng.Pick(kSmallBatches), c, k, rng.LogUniform(8, 64, 4),
                    rng.LogUniform(16, 96, 8), {f, f, f}, {1, 1, 1}, {f / 2, f / 2, f / 2});
    }
    return Conv2d(rng.Pick(kSmallBatches), c, k, rng.LogUniform(32, 256, 8), f, 1, f / 2);
  });
}

void HardGroupedStrided(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kGroupWidths[] = {4, 8, 8, 16, 16, 24, 32};
  constexpr int64_t kGroups[] = {2, 2, 4, 4, 8, 16};
  constexpr int64_t kSmallBatches[] = {1, 1, 1, 2, 4};
  DrawQuota(b, 18, "hard.grouped3x3_s2", [&] {
    const int64_t g = rng.Pick(kGroups);
    const int64_t c = g * rng.Pick(kGroupWidths);
    const int64_t hw = rng.LogUniform(14, 128, 2);
    return Conv2d(rng.Pick(kSmallBatches), c, c, hw, 3, 2, 1, g);
  });
}

void HardSmallBatchSmallMaps(ConvSetBuilder& b, Lcg& rng) {
  constexpr int64_t kSmallBatches[] = {1, 1, 2, 4, 8};
  constexpr int64_t kFilters[] = {1, 1, 3, 3, 5};
  DrawQuota(b, 16, "hard.small_maps", [&] {
    const int64_t c = MixedChannels(rng, 32, 2048, 20);
    const int64_t k = MixedChannels(rng, 32, 2048, 20);
    const int64_t f = rng.Pick(kFilters);
    const int64_t stride = rng.Chance(25) ? 2 : 1;
    const int64_t g = rng.Chance(20) ? c : 1;  // some depthwise
    return Conv2d(rng.Pick(kSmallBatches), c, g == c ? c : k, rng.LogUniform(3, 14, 1), f, stride,
                  f / 2, g);
  });
  // 1x1 stride-2 projections on narrow channels at batch 1-2 (a few microseconds each).
  DrawQuota(b, 8, "hard.narrow_1x1_s2", [&] {
    const int64_t c = MixedChannels(rng, 8, 96, 25);
    const int64_t k = MixedChannels(rng, 8, 192, 25);
    return Conv2d(rng.Chance(70) ? 1 : 2, c, k, rng.LogUniform(14, 112, 2), 1, 2, 0);
  });
}

std::vector<ConvShapeRow> TrainHardSet() {
  std::set<std::string> excluded;
  for (const ConvShapeRow& row : ValidationSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainExtraSet()) excluded.insert(row.shape.ToString());
  for (const ConvShapeRow& row : TrainNetworksSet()) excluded.insert(row.shape.ToString());
  ConvSetBuilder b(&excluded);
  Lcg rng(20261128);
  HardStems2d(b, rng);
  HardStems3d(b, rng);
  HardOneFrame3d(b, rng);
  HardOddChannels2d(b, rng);
  HardFewChannels(b, rng);
  HardGroupedStrided(b, rng);
  HardSmallBatchSmallMaps(b, rng);
  return b.Take();
}

// --------------------------------------------------------------------------- conv_validation

// A bottleneck residual stage (ResNet-50 v1.5, ResNeXt, RegNetX): 1x1 in -> width, 3x3 width ->
// width (stride and groups here), 1x1 width -> out, and a 1x1 projection when the shape changes.
// Only the first two blocks: later blocks repeat the second's shapes.
void BottleneckStage(ConvSetBuilder& b, const std::string& name, int64_t n, int64_t in,
                     int64_t width, int64_t out, int64_t hw, int64_t stride, int64_t groups,
                     int blocks) {
  const int64_t hw_out = (hw - 1) / stride + 1;
  b.Add(Conv2d(n, in, width, hw, 1, 1, 0), name + ".0.conv1");
  b.Add(Conv2d(n, width, width, hw, 3, stride, 1, groups), name + ".0.conv2");
  b.Add(Conv2d(n, width, out, hw_out, 1, 1, 0), name + ".0.conv3");
  if (in != out || stride != 1) b.Add(Conv2d(n, in, out, hw, 1, stride, 0), name + ".0.downsample");
  if (blocks > 1) {
    b.Add(Conv2d(n, out, width, hw_out, 1, 1, 0), name + ".1.conv1");
    b.Add(Conv2d(n, width, width, hw_out, 3, 1, 1, groups), name + ".1.conv2");
  }
}

// torchvision resnet50 (v1.5: stride in the 3x3), 224x224.
void ResNet50(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 64, 224, 7, 2, 3), "resnet50.conv1");
  BottleneckStage(b, "resnet50.layer1", n, 64, 64, 256, 56, 1, 1, 3);
  BottleneckStage(b, "resnet50.layer2", n, 256, 128, 512, 56, 2, 1, 4);
  BottleneckStage(b, "resnet50.layer3", n, 512, 256, 1024, 28, 2, 1, 6);
  BottleneckStage(b, "resnet50.layer4", n, 1024, 512, 2048, 14, 2, 1, 3);
}

// torchvision resnext50_32x4d: width = planes * 2, 32 groups. Only its grouped 3x3s: its 1x1s
// are dense pointwise layers of the kind ResNet-50 already brings.
void ResNeXt50(ConvSetBuilder& b, int64_t n) {
  const int64_t stages[][3] = {{128, 56, 1}, {256, 56, 2}, {512, 28, 2}, {1024, 14, 2}};
  int layer = 1;
  for (const auto& [width, hw, stride] : stages) {
    const std::string name = "resnext50_32x4d.layer" + std::to_string(layer++);
    b.Add(Conv2d(n, width, width, hw, 3, stride, 1, 32), name + ".0.conv2");
    b.Add(Conv2d(n, width, width, (hw - 1) / stride + 1, 3, 1, 1, 32), name + ".1.conv2");
  }
}

// torchvision regnet_x_400mf: widths 32/64/160/400, depths 1/2/7/12, group width 16.
void RegNetX400mf(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 32, 224, 3, 2, 1), "regnet_x_400mf.stem");
  BottleneckStage(b, "regnet_x_400mf.s1", n, 32, 32, 32, 112, 2, 2, 1);
  BottleneckStage(b, "regnet_x_400mf.s2", n, 32, 64, 64, 56, 2, 4, 2);
  BottleneckStage(b, "regnet_x_400mf.s3", n, 64, 160, 160, 28, 2, 10, 7);
  BottleneckStage(b, "regnet_x_400mf.s4", n, 160, 400, 400, 14, 2, 25, 12);
}

// Inverted residual stages (MobileNetV2, EfficientNet-B0's MBConv without its squeeze-excite
// 1x1s on 1x1 maps): 1x1 expand (t != 1), k x k depthwise (stride on the first block), 1x1
// project. Returns the output size. The first block of a stage and, when the stage repeats and
// `with_repeat`, the second (later ones repeat the second's shapes).
int64_t InvertedResidualStage(ConvSetBuilder& b, const std::string& name, int64_t n, int64_t in,
                              int64_t out, int64_t t, int64_t kernel, int64_t stride, int repeats,
                              int64_t hw, bool with_repeat) {
  for (int i = 0; i < std::min(repeats, with_repeat ? 2 : 1); ++i) {
    const int64_t s = i == 0 ? stride : 1;
    const int64_t c = i == 0 ? in : out;
    const int64_t hidden = c * t;
    const std::string block = name + "." + std::to_string(i);
    if (t != 1) b.Add(Conv2d(n, c, hidden, hw, 1, 1, 0), block + ".expand");
    b.Add(Conv2d(n, hidden, hidden, hw, kernel, s, kernel / 2, hidden), block + ".depthwise");
    hw = (hw - 1) / s + 1;
    b.Add(Conv2d(n, hidden, out, hw, 1, 1, 0), block + ".project");
  }
  return hw;
}

// torchvision mobilenet_v2, 224x224.
void MobileNetV2(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 32, 224, 3, 2, 1), "mobilenet_v2.stem");
  const int64_t stages[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                               {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};  // t, c, n, s
  int64_t in = 32, hw = 112, index = 1;
  for (const auto& [t, c, repeats, s] : stages) {
    hw = InvertedResidualStage(b, "mobilenet_v2.features" + std::to_string(index++), n, in, c, t, 3,
                               s, static_cast<int>(repeats), hw, /*with_repeat=*/true);
    in = c;
  }
  b.Add(Conv2d(n, 320, 1280, 7, 1, 1, 0), "mobilenet_v2.head");
}

// torchvision efficientnet_b0, 224x224: the first block of each stage (its repeats are
// MobileNetV2-like blocks MobileNetV2 brings already).
void EfficientNetB0(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 32, 224, 3, 2, 1), "efficientnet_b0.stem");
  const int64_t stages[][5] = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2},
                               {6, 3, 2, 80, 3}, {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4},
                               {6, 3, 1, 320, 1}};  // t, kernel, stride, c, repeats
  int64_t in = 32, hw = 112, index = 1;
  for (const auto& [t, kernel, s, c, repeats] : stages) {
    hw = InvertedResidualStage(b, "efficientnet_b0.features" + std::to_string(index++), n, in, c, t,
                               kernel, s, static_cast<int>(repeats), hw,
                               /*with_repeat=*/false);
    in = c;
  }
  b.Add(Conv2d(n, 320, 1280, 7, 1, 1, 0), "efficientnet_b0.head");
}

// torchvision convnext_tiny: 4x4/4 patchify stem, 7x7 depthwise blocks, 2x2/2 downsampling (the
// blocks' pointwise layers are nn.Linear, not convolutions).
void ConvNeXtTiny(ConvSetBuilder& b, int64_t n) {
  b.Add(Conv2d(n, 3, 96, 224, 4, 4, 0), "convnext_tiny.stem");
  const int64_t dims[] = {96, 192, 384, 768};
  int64_t hw = 56;
  for (int i = 0; i < 4; ++i) {
    const std::string stage = "convnext_tiny.stage" + std::to_string(i + 1);
    if (i > 0) {
      b.Add(Conv2d(n, dims[i - 1], dims[i], hw, 2, 2, 0), stage + ".downsample");
      hw /= 2;
    }
    b.Add(Conv2d(n, dims[i], dims[i], hw, 7, 1, 3, dims[i]), stage + ".dwconv");
  }
}

// torchvision r2plus1d_18 on 16x112x112 clips: (2+1)D blocks, 1x3x3 spatial then 3x1x1 temporal
// through midplanes = in*out*27 / (in*9 + 3*out).
void R2Plus1D18(ConvSetBuilder& b, int64_t n) {
  constexpr Dims3 k133{1, 3, 3}, k311{3, 1, 1}, k111{1, 1, 1};
  constexpr Dims3 s111{1, 1, 1}, p011{0, 1, 1}, p100{1, 0, 0}, p000{0, 0, 0};
  b.Add(Conv3d(n, 3, 45, 16, 112, {1, 7, 7}, {1, 2, 2}, {0, 3, 3}), "r2plus1d_18.stem.spatial");
  b.Add(Conv3d(n, 45, 64, 16, 56, k311, s111, p100), "r2plus1d_18.stem.temporal");
  struct Block {
    int64_t in, planes, stride, d, hw;
    const char* name;
  };
  const Block blocks[] = {{64, 64, 1, 16, 56, "layer1.0"},  {64, 128, 2, 16, 56, "layer2.0"},
                          {128, 128, 1, 8, 28, "layer2.1"}, {128, 256, 2, 8, 28, "layer3.0"},
                          {256, 256, 1, 4, 14, "layer3.1"}, {256, 512, 2, 4, 14, "layer4.0"},
                          {512, 512, 1, 2, 7, "layer4.1"}};
  for (const Block& k : blocks) {
    const std::string name = std::string("r2plus1d_18.") + k.name;
    const int64_t mid = (k.in * k.planes * 27) / (k.in * 9 + 3 * k.planes);
    const int64_t s = k.stride;
    const int64_t d_out = (k.d - 1) / s + 1, hw_out = (k.hw - 1) / s + 1;
    b.Add(Conv3d(n, k.in, mid, k.d, k.hw, k133, {1, s, s}, p011), name + ".conv1.spatial");
    b.Add(Conv3d(n, mid, k.planes, k.d, hw_out, k311, {s, 1, 1}, p100), name + ".conv1.temporal");
    b.Add(Conv3d(n, k.planes, mid, d_out, hw_out, k133, s111, p011), name + ".conv2.spatial");
    b.Add(Conv3d(n, mid, k.planes, d_out, hw_out, k311, s111, p100), name + ".conv2.temporal");
    if (s != 1 || k.in != k.planes) {
      b.Add(Conv3d(n, k.in, k.planes, k.d, k.hw, k111, {s, s, s}, p000), name + ".downsample");
    }
  }
}

// A 3D U-Net as nnU-Net plans it for 4-modality MRI (BraTS): 128^3 patches, features
// 32/64/128/256/320/320, two 3x3x3 convs per stage (the first strided 2 from stage 1 on),
// decoder convs over the concatenated skip (transposed convs left out), a 1x1x1 head.
void UNet3d(ConvSetBuilder& b, int64_t n) {
  constexpr Dims3 k333{3, 3, 3}, s111{1, 1, 1}, s222{2, 2, 2}, p111{1, 1, 1};
  const int64_t features[] = {32, 64, 128, 256, 320, 320};
  int64_t in = 4, size = 128;
  for (int i = 0; i < 6; ++i) {
    const std::string stage = "unet3d.encoder" + std::to_string(i);
    const Dims3 stride = i == 0 ? s111 : s222;
    b.Add(Conv3d(n, in, features[i], size, size, k333, stride, p111), stage + ".conv1");
    if (i > 0) size /= 2;
    b.Add(Conv3d(n, features[i], features[i], size, size, k333, s111, p111), stage + ".conv2");
    in = features[i];
  }
  for (int i = 4; i >= 0; --i) {
    size *= 2;
    const std::string stage = "unet3d.decoder" + std::to_string(i);
    b.Add(Conv3d(n, 2 * features[i], features[i], size, size, k333, s111, p111), stage + ".conv1");
    // conv2 (features -> features) is the encoder's conv2 at this size: left out.
  }
  b.Add(Conv3d(n, 32, 4, 128, 128, {1, 1, 1}, s111, {0, 0, 0}), "unet3d.head");
}

// The Stable Diffusion 1.5 UNet on 64x64 latents (diffusers UNet2DConditionModel): ResNet
// blocks' 3x3 convs and 1x1 skips, 3x3/2 downsamplers, upsamplers' 3x3 convs after 2x nearest
// upsampling, conv_in and conv_out (the transformers' 1x1 proj_in/proj_out, C -> C pointwise
// layers like many already here, are left out to keep the set small).
void StableDiffusionUnet(ConvSetBuilder& b, int64_t n) {
  const std::string sd = "sd15_unet.";
  b.Add(Conv2d(n, 4, 320, 64, 3, 1, 1), sd + "conv_in");
  const int64_t channels[] = {320, 640, 1280, 1280};
  const int64_t sizes[] = {64, 32, 16, 8};
  // Down path: two ResNet blocks per level (the first may change channels), attention on the
  // first three levels, a strided conv between levels.
  std::vector<int64_t> skips = {320};
  int64_t in = 320;
  for (int level = 0; level < 4; ++level) {
    const std::string name = sd + "down" + std::to_string(level);
    const int64_t c = channels[level], hw = sizes[level];
    for (int block = 0; block < 2; ++block) {
      const std::string res = name + ".resnet" + std::to_string(block);
      // A block that keeps the channels has conv1 = conv2 (C -> C): once.
      if (in != c) b.Add(Conv2d(n, in, c, hw, 3, 1, 1), res + ".conv1");
      b.Add(Conv2d(n, c, c, hw, 3, 1, 1), res + ".conv2");
      if (in != c) b.Add(Conv2d(n, in, c, hw, 1, 1, 0), res + ".skip");
      in = c;
      skips.push_back(c);
    }
    if (level < 3) {
      b.Add(Conv2d(n, c, c, hw, 3, 2, 1), name + ".downsample");
      skips.push_back(c);
    }
  }
  // Up path: three ResNet blocks per level over the concatenated skip, an upsampler after each
  // level but the last.
  for (int level = 3; level >= 0; --level) {
    const std::string name = sd + "up" + std::to_string(3 - level);
    const int64_t c = channels[level], hw = sizes[level];
    for (int block = 0; block < 3; ++block) {
      const std::string res = name + ".resnet" + std::to_string(block);
      const int64_t cat = in + skips.back();
      skips.pop_back();
      b.Add(Conv2d(n, cat, c, hw, 3, 1, 1), res + ".conv1");
      // conv2 (C -> C) repeats the down path's: once per level.
      if (block == 0) b.Add(Conv2d(n, c, c, hw, 3, 1, 1), res + ".conv2");
      b.Add(Conv2d(n, cat, c, hw, 1, 1, 0), res + ".skip");
      in = c;
    }
    if (level > 0) b.Add(Conv2d(n, c, c, hw * 2, 3, 1, 1), name + ".upsample");
  }
  b.Add(Conv2d(n, 320, 4, 64, 3, 1, 1), sd + "conv_out");
}

std::vector<ConvShapeRow> ValidationSet() {
  ConvSetBuilder b;
  // Two batch sizes per network, a latency-bound one and a throughput one, taken by its layers in
  // turn: every network at both in half the rows (the sweep's budget is minutes).
  struct Network {
    void (*add)(ConvSetBuilder&, int64_t);
    int64_t batch_a, batch_b;
  };
  const Network networks[] = {
      {ResNet50, 1, 32},    {ResNeXt50, 1, 32},      {RegNetX400mf, 1, 64},
      {MobileNetV2, 1, 32}, {EfficientNetB0, 1, 16}, {ConvNeXtTiny, 1, 32},
      {R2Plus1D18, 1, 8},   {UNet3d, 1, 2},          {StableDiffusionUnet, 2, 8}};
  for (const Network& net : networks) {
    b.AlternateBatches(net.batch_a, net.batch_b);
    net.add(b, net.batch_a);
  }
  return b.Take();
}

}  // namespace

std::vector<std::string> ConvShapeSetSources(std::string_view set) {
  if (set == "conv_train") {
    return {"Training shapes over seed 003's regimes (ConvShapeRegime): 2D and 3D, small to large",
            "spatial sizes, channels 16-2048 (stems 3-4), asymmetric C/K, batch 1-128, groups 2-64",
            "and depthwise, stride 2, dilation 2-12, 1x1 to 7x7 filters, then deterministic random",
            "draws; no row equals a conv_validation row. Capped at 0.5 TFLOP per forward pass and",
            "256 MiB per bf16 tensor (batch halved to fit)."};
  }
  if (set == "conv_train_extra") {
    return {"More training shapes: deterministic random draws over seed 003's regimes as in",
            "conv_train's last part (seed 20261127), a fifth of them with channel counts 3-512 off",
            "the 8-element vector width; no row equals a conv_train or conv_validation row. Capped",
            "at 0.5 TFLOP per forward pass and 256 MiB per bf16 tensor (batch halved to fit)."};
  }
  if (set == "conv_train_networks") {
    return {
        "Training layers of other well-known networks than conv_validation's (stems, narrow and",
        "odd channel counts, batch-1 layers, 1x7 / 7x1 factorisations), each network at two batch",
        "sizes taken by its layers in turn; no row equals a conv_validation, conv_train or",
        "conv_train_extra row. Family = <network>.<layer>:",
        "vgg16: Simonyan and Zisserman 2015, torchvision vgg16, 224x224, batch 1 / 8",
        "resnet18: He et al. 2016, torchvision resnet18, 224x224, batch 1 / 64",
        "densenet121: Huang et al. 2017, torchvision densenet121 (every fourth dense layer),",
        "  batch 1 / 16",
        "inception_v3: Szegedy et al. 2016, torchvision inception_v3, 299x299, batch 1 / 16",
        "shufflenet_v2: Ma et al. 2018, torchvision shufflenet_v2_x1_0, batch 1 / 64",
        "mobilenet_v3_large: Howard et al. 2019, torchvision mobilenet_v3_large, batch 1 / 64",
        "squeezenet1_1: Iandola et al. 2016, torchvision squeezenet1_1, batch 1 / 32",
        "sd_vae_decoder: Rombach et al. 2022, the Stable Diffusion VAE decoder (diffusers",
        "  AutoencoderKL), 64x64 latents to 512x512, batch 1 / 2",
        "yolov5s: Ultralytics YOLOv5s, 640x640, batch 1 / 16",
        "r3d_18: Tran et al. 2018, torchvision r3d_18, 16x112x112 clips, batch 1 / 4",
        "Capped at 0.5 TFLOP per forward pass and 256 MiB per bf16 tensor (batch halved to fit)."};
  }
  if (set == "conv_train_hard") {
    return {"Training shapes in the regimes the models rank worst (seed 20261128): stems on 1-4",
            "input channels (2D 3x3-7x7 and patchify, 3D one-frame and full), 3D 1x3x3 / 1x1x1 /",
            "3x1x1 layers with channel counts on and off the 8-element vector width, 2D layers",
            "with odd C or K, heads and inputs with 1-6 channels, grouped 3x3 stride 2 on 4-32",
            "channels per group at batch 1-4, batch 1-8 on 3x3-14x14 maps, 1x1 stride-2",
            "projections on narrow channels; no row equals a conv_validation, conv_train,",
            "conv_train_extra or conv_train_networks row. Family = hard.<regime>. Capped at 0.5",
            "TFLOP per forward pass and 256 MiB per bf16 tensor (batch halved to fit)."};
  }
  if (set == "conv_validation") {
    return {
        "Validation shapes: the distinct conv layers of well-known networks, never trained on.",
        "Family = <network>.<layer> (the first layer of that shape; repeats are dropped).",
        "Each network at two batch sizes, taken by its layers in turn (half the rows of both):",
        "resnet50: He et al. 2016, torchvision resnet50 (v1.5), 224x224, batch 1 / 32",
        "resnext50_32x4d: Xie et al. 2017, torchvision resnext50_32x4d, batch 1 / 32",
        "regnet_x_400mf: Radosavovic et al. 2020, torchvision regnet_x_400mf, batch 1 / 64",
        "mobilenet_v2: Sandler et al. 2018, torchvision mobilenet_v2, batch 1 / 32",
        "efficientnet_b0: Tan and Le 2019, torchvision efficientnet_b0 (squeeze-excite 1x1s on",
        "  1x1 maps left out), batch 1 / 16",
        "convnext_tiny: Liu et al. 2022, torchvision convnext_tiny (7x7 depthwise), batch 1 / 32",
        "r2plus1d_18: Tran et al. 2018, torchvision r2plus1d_18, 16x112x112 clips, batch 1 / 8",
        "unet3d: Cicek et al. 2016 as planned by nnU-Net (Isensee et al. 2021) for 4-channel MRI,",
        "  128^3 patches, features 32-320, batch 1 / 2",
        "sd15_unet: Rombach et al. 2022, Stable Diffusion 1.5 UNet (diffusers",
        "  UNet2DConditionModel, attention 1x1 projections left out), 64x64 latents, batch 2 (one",
        "  image with guidance) / 8",
        "Capped at 0.5 TFLOP per forward pass and 256 MiB per bf16 tensor (batch halved to fit)."};
  }
  return {};
}

std::vector<std::string_view> ConvShapeSetNames() {
  return {"conv_train", "conv_train_extra", "conv_train_networks", "conv_train_hard",
          "conv_validation"};
}

StatusOr<std::vector<ConvShapeRow>> GenerateConvShapeSet(std::string_view set) {
  if (set == "conv_train") return TrainSet();
  if (set == "conv_train_extra") return TrainExtraSet();
  if (set == "conv_train_networks") return TrainNetworksSet();
  if (set == "conv_train_hard") return TrainHardSet();
  if (set == "conv_validation") return ValidationSet();
  return InvalidArgumentError(
      "unknown conv shape set '" + std::string(set) +
      "' (known: conv_train, conv_train_extra, conv_train_networks, conv_train_hard, "
      "conv_validation)");
}

}  // namespace kselect
