// The verify module's CPU side: tolerances, element decoding, the poison pattern, random inputs,
// the comparison, the host GEMM and convolution references and the providers' operand
// descriptions. Device parts are covered by consistency_gpu_test.cpp and
// conv_reference_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "kselect/provider.h"
#include "kselect/verify.h"

namespace kselect::verify {
namespace {

std::vector<uint8_t> Bytes(std::initializer_list<uint16_t> halves) {
  std::vector<uint8_t> out(halves.size() * 2);
  size_t i = 0;
  for (const uint16_t h : halves) std::memcpy(&out[2 * i++], &h, 2);
  return out;
}

std::vector<uint8_t> Floats(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  size_t i = 0;
  for (const float v : values) std::memcpy(&out[4 * i++], &v, 4);
  return out;
}

TEST(VerifyToleranceTest, PerDtypeBoundsAndFp8InputsLoosenThem) {
  EXPECT_EQ(GemmTolerance(DataType::kBF16, DataType::kBF16), (Tolerance{1e-2, 1.6e-2}));
  EXPECT_EQ(GemmTolerance(DataType::kF16, DataType::kF16), (Tolerance{2e-3, 2e-3}));
  EXPECT_EQ(GemmTolerance(DataType::kBF16, DataType::kF32), (Tolerance{5e-4, 5e-4}));
  const Tolerance fp8 = GemmTolerance(DataType::kF8E4M3, DataType::kBF16);
  EXPECT_DOUBLE_EQ(fp8.relative_rms, 2e-2);
  EXPECT_DOUBLE_EQ(fp8.element, 6e-2);
  EXPECT_GT(GemmTolerance(DataType::kF8E4M3, DataType::kF8E5M2).element,
            GemmTolerance(DataType::kF8E4M3, DataType::kF8E4M3).element);
  // Every element bound covers half an ulp of its output type with margin.
  EXPECT_GT(GemmTolerance(DataType::kBF16, DataType::kBF16).element, 2 * std::ldexp(1.0, -8));
  EXPECT_GT(GemmTolerance(DataType::kF16, DataType::kF16).element, 2 * std::ldexp(1.0, -11));
}

TEST(VerifyToleranceTest, ConvolutionBoundsGrowSlowlyWithTheReduction) {
  // One product per element: the GEMM's bounds (tf32's for fp32, whose inputs may be
  // down-converted).
  EXPECT_EQ(ConvTolerance(DataType::kBF16, 1), GemmTolerance(DataType::kBF16, DataType::kBF16));
  EXPECT_EQ(ConvTolerance(DataType::kF16, 1), GemmTolerance(DataType::kF16, DataType::kF16));
  EXPECT_GE(ConvTolerance(DataType::kF32, 1).element, std::ldexp(4.0, -11));
  // 3x3 over 256 channels and a bwd_weight sum over 32 images of 56x56: looser, but a wrong
  // element (off by O(1) of the output's scale) still fails by a wide margin.
  const Tolerance fwd = ConvTolerance(DataType::kBF16, 2304);
  EXPECT_NEAR(fwd.element, 5.45e-2, 1e-3);
  EXPECT_NEAR(fwd.relative_rms, 2.04e-2, 1e-3);
  const Tolerance wgrad = ConvTolerance(DataType::kBF16, 32 * 56 * 56);
  EXPECT_GT(wgrad.element, fwd.element);
  EXPECT_LT(wgrad.element, 0.1);
  EXPECT_LT(ConvTolerance(DataType::kF16, 32 * 56 * 56).element, 1e-2);
  EXPECT_LT(ConvTolerance(DataType::kF16, 2304).element, fwd.element);

  ConvProblem conv;
  conv.n = 2, conv.c = 64, conv.k = 32, conv.g = 4;
  conv.hi = conv.wi = 10, conv.y = conv.x = 3;
  conv.stride_h = conv.stride_w = 2;
  EXPECT_EQ(ConvReductionLength(conv), 16 * 9);
  EXPECT_EQ(*ToleranceFor(Problem(conv)), ConvTolerance(DataType::kBF16, 16 * 9));
  conv.direction = ConvDirection::kBackwardData;
  EXPECT_EQ(ConvReductionLength(conv), 8 * 9);
  conv.direction = ConvDirection::kBackwardWeight;
  EXPECT_EQ(ConvReductionLength(conv), 2 * 4 * 4);
  conv.g = 3;  // does not divide C
  EXPECT_EQ(ToleranceFor(Problem(conv)).status().code(), StatusCode::kInvalidArgument);
  GemmProblem gemm;
  gemm.dtype_c = DataType::kF16;
  EXPECT_EQ(*ToleranceFor(Problem(gemm)), GemmTolerance(DataType::kBF16, DataType::kF16));
}

TEST(VerifyDecodeTest, PoisonByteIsNanInEveryFloatType) {
  for (const DataType type :
       {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF8E4M3, DataType::kF8E5M2}) {
    const std::vector<uint8_t> poison(static_cast<size_t>(DataTypeBits(type) / 8) * 3, kPoisonByte);
    const std::vector<double> decoded = DecodeElements(poison, type).value();
    ASSERT_EQ(decoded.size(), 3u);
    for (const double v : decoded) EXPECT_TRUE(std::isnan(v)) << DataTypeName(type);
  }
}

TEST(VerifyDecodeTest, KnownValues) {
  // bf16 1.0 = 0x3F80, -2.5 = 0xC020; fp16 1.0 = 0x3C00, 65504 = 0x7BFF, smallest subnormal 1.
  EXPECT_EQ(DecodeElements(Bytes({0x3F80, 0xC020}), DataType::kBF16).value(),
            (std::vector<double>{1.0, -2.5}));
  EXPECT_EQ(DecodeElements(Bytes({0x3C00, 0x7BFF, 0x0001}), DataType::kF16).value(),
            (std::vector<double>{1.0, 65504.0, std::ldexp(1.0, -24)}));
  EXPECT_TRUE(std::isinf(DecodeElements(Bytes({0x7C00}), DataType::kF16).value()[0]));
  // e4m3: 0x38 = 1.0, 0x7E = 448 (largest), 0x01 = 2^-9; e5m2: 0x3C = 1.0, 0x7C = +Inf.
  const std::vector<uint8_t> e4m3 = {0x38, 0x7E, 0x01, 0xB8};
  EXPECT_EQ(DecodeElements(e4m3, DataType::kF8E4M3).value(),
            (std::vector<double>{1.0, 448.0, std::ldexp(1.0, -9), -1.0}));
  const std::vector<uint8_t> e5m2 = {0x3C, 0x7C};
  const std::vector<double> e5 = DecodeElements(e5m2, DataType::kF8E5M2).value();
  EXPECT_EQ(e5[0], 1.0);
  EXPECT_TRUE(std::isinf(e5[1]));
  EXPECT_EQ(DecodeElements(Floats({1.5f, -3.0f}), DataType::kF32).value(),
            (std::vector<double>{1.5, -3.0}));
  EXPECT_FALSE(DecodeElements(std::vector<uint8_t>(3), DataType::kF16).ok());
}

TEST(VerifyRandomTest, InputsAreFiniteNonZeroAndBounded) {
  for (const DataType type : {DataType::kF32, DataType::kF16, DataType::kBF16, DataType::kF8E4M3}) {
    std::vector<uint8_t> bytes(static_cast<size_t>(DataTypeBits(type) / 8) * 4096);
    std::mt19937_64 rng(3);
    FillRandomNonZero(bytes, type, rng);
    int negative = 0;
    const std::vector<double> values = DecodeElements(bytes, type).value();
    for (const double v : values) {
      ASSERT_TRUE(std::isfinite(v)) << DataTypeName(type);
      ASSERT_NE(v, 0.0) << DataTypeName(type);
      ASSERT_LE(std::abs(v), 2.0) << DataTypeName(type);
      ASSERT_GE(std::abs(v), 1.0 / 64) << DataTypeName(type);
      negative += v < 0;
    }
    EXPECT_GT(negative, 1500) << DataTypeName(type);
    EXPECT_LT(negative, 2600) << DataTypeName(type);
  }
}

TEST(VerifyRandomTest, TheBenchDrawsAreUnchanged) {
  // The first bf16 element the bench's generator makes from seed 1 (the draws may not move).
  std::vector<uint8_t> bytes(2);
  std::mt19937_64 rng(1);
  const uint64_t r = std::mt19937_64(1)();
  FillRandomNonZero(bytes, DataType::kBF16, rng);
  uint16_t v;
  std::memcpy(&v, bytes.data(), 2);
  EXPECT_EQ(
      v, static_cast<uint16_t>(((r & 1) << 15) | ((123 + (r >> 1) % 5) << 7) | ((r >> 8) & 0x7F)));
}

TEST(VerifyCompareTest, ExactOutputPasses) {
  const std::vector<double> ref = {1.0, -2.5, 0.0};
  const CheckResult r = CompareWithReference(Bytes({0x3F80, 0xC020, 0x0000}), DataType::kBF16, ref,
                                             GemmTolerance(DataType::kBF16, DataType::kBF16));
  EXPECT_TRUE(r.passed) << r.ToString();
  EXPECT_EQ(r.elements, 3);
  EXPECT_EQ(r.first_bad_index, -1);
  EXPECT_EQ(r.max_error, 0.0);
  EXPECT_EQ(r.relative_rms_error, 0.0);
}

TEST(VerifyCompareTest, UnwrittenPoisonedElementFailsWithItsIndex) {
  const std::vector<double> ref = {1.0, 1.0, 1.0, 1.0};
  const CheckResult r =
      CompareWithReference(Bytes({0x3F80, 0x3F80, 0xFFFF, 0x3F80}), DataType::kBF16, ref,
                           GemmTolerance(DataType::kBF16, DataType::kBF16));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.non_finite, 1);
  EXPECT_EQ(r.first_bad_index, 2);
  EXPECT_TRUE(std::isinf(r.max_error));
  EXPECT_NE(r.ToString().find("first bad element 2"), std::string::npos) << r.ToString();
}

TEST(VerifyCompareTest, InfinityNeverPasses) {
  const float inf = std::numeric_limits<float>::infinity();
  const CheckResult r = CompareWithReference(Floats({inf}), DataType::kF32,
                                             std::vector<double>{1e30}, Tolerance{1e9, 1e9});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.non_finite, 1);
}

TEST(VerifyCompareTest, OneWrongElementFailsThoughTheNormIsSmall) {
  std::vector<double> ref(10000, 1.0);
  std::vector<float> out(ref.begin(), ref.end());
  out[7777] = 1.5f;  // 50 % off: ||err|| / ||ref|| is only 0.5 %
  std::vector<uint8_t> bytes(out.size() * 4);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  const CheckResult r = CompareWithReference(bytes, DataType::kF32, ref, Tolerance{1e-2, 1e-2});
  EXPECT_LT(r.relative_rms_error, 1e-2);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.bad_elements, 1);
  EXPECT_EQ(r.first_bad_index, 7777);
  EXPECT_NEAR(r.max_error, 0.5, 1e-12);
}

TEST(VerifyCompareTest, ElementsNearZeroAreJudgedAgainstTheOutputsScale) {
  // 1e-3 off an element whose reference is 1e-6: relative to itself 1000x, to the rms 1e-3.
  const std::vector<double> ref = {1.0, -1.0, 1e-6, 1.0};
  const CheckResult r = CompareWithReference(Floats({1.0f, -1.0f, 1e-3f, 1.0f}), DataType::kF32,
                                             ref, Tolerance{1e-2, 2e-3});
  EXPECT_TRUE(r.passed) << r.ToString();
}

TEST(VerifyHostReferenceTest, LayoutsBatchAlphaBeta) {
  // A = [[1,2],[3,4]] (2x2), B = [[5,6],[7,8]]: A*B = [[19,22],[43,50]].
  GemmProblem p;
  p.m = p.n = p.k = 2;
  p.layout = ParseGemmLayout("rrr").value();
  EXPECT_EQ(
      HostGemmReference(p, std::vector<double>{1, 2, 3, 4}, std::vector<double>{5, 6, 7, 8}, {}),
      (std::vector<double>{19, 22, 43, 50}));
  // The same product with A and B stored column-major and C column-major.
  p.layout = ParseGemmLayout("ccc").value();
  EXPECT_EQ(
      HostGemmReference(p, std::vector<double>{1, 3, 2, 4}, std::vector<double>{5, 7, 6, 8}, {}),
      (std::vector<double>{19, 43, 22, 50}));
  // alpha = 2, beta = 1 over a batch of 2 (the second product is the identity times B).
  p.layout = ParseGemmLayout("rrr").value();
  p.batch = 2;
  p.alpha = 2;
  p.beta = 1;
  const std::vector<double> c = HostGemmReference(p, std::vector<double>{1, 2, 3, 4, 1, 0, 0, 1},
                                                  std::vector<double>{5, 6, 7, 8, 5, 6, 7, 8},
                                                  std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0});
  EXPECT_EQ(c, (std::vector<double>{39, 45, 87, 101, 10, 12, 14, 16}));
}

TEST(VerifyHostReferenceTest, TransposedGemmComputesTheSameProduct) {
  GemmProblem p;
  p.m = 3, p.n = 2, p.k = 4;
  p.layout = ParseGemmLayout("rcr").value();
  const GemmProblem t = TransposedGemm(p);
  EXPECT_EQ(t.m, 2);
  EXPECT_EQ(t.n, 3);
  EXPECT_EQ(t.layout.ToString(), "rcc");
  EXPECT_EQ(t.Flops(), p.Flops());
  std::vector<double> a(12), b(8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) - 5;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i * i) / 3;
  // C (row-major m x n) and C^T (column-major n x m) are the same bytes.
  EXPECT_EQ(HostGemmReference(p, a, b, {}), HostGemmReference(t, b, a, {}));
  EXPECT_EQ(TransposedGemm(t), p);
}

TEST(VerifyShapesTest, CheckProblemsCoverDecodeOddSizesBatchAlphaBetaAndManyTiles) {
  const std::vector<GemmProblem> problems =
      GemmCheckProblems(DataType::kF16, DataType::kF32, ParseGemmLayout("rrc").value());
  ASSERT_EQ(problems.size(), 9u);
  bool n1 = false, m1 = false, odd_k = false, batch = false, alpha_beta = false;
  bool many_tiles = false;  // more 128x128 tiles than an H200 has SMs: persistent kernels loop
  for (const GemmProblem& p : problems) {
    EXPECT_TRUE(p.Validate().ok());
    EXPECT_EQ(p.dtype_a, DataType::kF16);
    EXPECT_EQ(p.dtype_c, DataType::kF32);
    EXPECT_EQ(p.layout.ToString(), "rrc");
    m1 |= p.m == 1;
    n1 |= p.n == 1;
    odd_k |= p.k % 2 == 1;
    batch |= p.batch > 1;
    alpha_beta |= p.alpha != 1.0 && p.beta != 0.0;
    many_tiles |= (p.m + 127) / 128 * ((p.n + 127) / 128) * p.batch > 132;
  }
  EXPECT_TRUE(n1 && m1 && odd_k && batch && alpha_beta && many_tiles);
}

TEST(OperandSpecTest, GemmOperandsInLaunchOrder) {
  GemmProblem p;
  p.m = 3, p.n = 5, p.k = 7, p.batch = 2;
  p.dtype_a = p.dtype_b = DataType::kF8E4M3;
  p.dtype_c = DataType::kBF16;
  std::vector<OperandSpec> specs = GemmOperandSpecs(p, 256);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0], (OperandSpec{"a", DataType::kF8E4M3, 2 * 3 * 7, 256, OperandAccess::kRead}));
  EXPECT_EQ(specs[1], (OperandSpec{"b", DataType::kF8E4M3, 2 * 7 * 5, 256, OperandAccess::kRead}));
  EXPECT_EQ(specs[2],
            (OperandSpec{"c", DataType::kBF16, 2 * 3 * 5 * 2, 256, OperandAccess::kWrite}));
  p.beta = 0.5;
  EXPECT_EQ(GemmOperandSpecs(p, 16)[2].access, OperandAccess::kReadWrite);
  EXPECT_EQ(OperandAccessName(OperandAccess::kReadWrite), "read_write");
}

TEST(OperandSpecTest, CheckOperandsNamesWhatIsWrong) {
  GemmProblem p;
  p.m = p.n = p.k = 8;
  const std::vector<OperandSpec> specs = GemmOperandSpecs(p, 16);
  alignas(256) static uint8_t memory[1024];
  KernelOperands o{{memory, memory + 256, memory + 512}, nullptr, 0};
  EXPECT_TRUE(CheckOperands(specs, o, 0).ok());
  o.buffers[1] = memory + 8;
  EXPECT_NE(CheckOperands(specs, o, 0).message().find("operand b must be 16-byte aligned"),
            std::string::npos);
  o.buffers[1] = nullptr;
  EXPECT_NE(CheckOperands(specs, o, 0).message().find("operand b is null"), std::string::npos);
  o.buffers.pop_back();
  EXPECT_FALSE(CheckOperands(specs, o, 0).ok());
  KernelOperands full{{memory, memory + 256, memory + 512}, nullptr, 0};
  EXPECT_NE(CheckOperands(specs, full, 64).message().find("workspace"), std::string::npos);
  full.workspace = memory + 768;
  full.workspace_bytes = 64;
  EXPECT_TRUE(CheckOperands(specs, full, 64).ok());
}

// Every registered provider describes the problems it runs with the shared operand lists (a GEMM
// as A, B, C; a convolution as x, w, y), without a GPU, and refuses to describe the others.
TEST(OperandSpecTest, EveryProviderDescribesItsGemmOperands) {
  GemmProblem p;
  p.m = 64, p.n = 32, p.k = 16;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  ConvProblem conv;
  conv.c = conv.k = 8;
  conv.hi = conv.wi = 4;
  for (const ProviderEntry& entry : ProviderRegistry()) {
    const std::unique_ptr<KernelProvider> provider = entry.create(ProviderOptions{});
    if (entry.provider == Provider::kCudnn) {
      EXPECT_FALSE(provider->SupportsProblem(p));
      EXPECT_FALSE(provider->Operands(p).ok());
      ASSERT_TRUE(provider->SupportsProblem(Problem(conv))) << entry.summary;
      const std::vector<OperandSpec> specs = provider->Operands(Problem(conv)).value();
      const std::vector<OperandSpec> expected = ConvOperandSpecs(conv, specs[0].alignment);
      EXPECT_EQ(specs, expected);
      continue;
    }
    ASSERT_TRUE(provider->SupportsProblem(p)) << entry.summary;
    const std::vector<OperandSpec> specs = provider->Operands(p).value();
    ASSERT_EQ(specs.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const OperandSpec expected = GemmOperandSpecs(p, specs[i].alignment)[i];
      EXPECT_EQ(specs[i], expected) << entry.summary;
      EXPECT_GE(specs[i].alignment, 16) << entry.summary;
    }
    EXPECT_FALSE(provider->Operands(Problem(conv)).ok()) << entry.summary;
  }
}

// A 2D problem of `c` input and `k` output channels in `g` groups, unit strides, no padding.
ConvProblem Conv2d(int64_t n, int64_t c, int64_t k, int64_t g, int64_t hi, int64_t wi, int64_t y,
                   int64_t x) {
  ConvProblem p;
  p.n = n, p.c = c, p.k = k, p.g = g;
  p.hi = hi, p.wi = wi, p.y = y, p.x = x;
  return p;
}

std::vector<double> Convolve(ConvProblem p, ConvDirection direction, std::span<const double> x,
                             std::span<const double> w, std::span<const double> y) {
  p.direction = direction;
  StatusOr<std::vector<double>> out = HostConvReference(p, x, w, y);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<double>{};
}

using V = std::vector<double>;

TEST(HostConvReferenceTest, CrossCorrelationWithoutFlip) {
  // x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]]: y[0][0] = 1*1 + 2*2 + 4*3 + 5*4 = 37 (a
  // flipped filter would give 1*4 + 2*3 + 4*2 + 5*1 = 23).
  const ConvProblem p = Conv2d(1, 1, 1, 1, 3, 3, 2, 2);
  const V x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 2, 3, 4};
  EXPECT_EQ(Convolve(p, ConvDirection::kForward, x, w, {}), (V{37, 47, 67, 77}));
  // dx = sum of dy spread through the taps; dy = [[1,0],[0,0]] puts w at the top left.
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardData, {}, w, V{1, 0, 0, 0}),
            (V{1, 2, 0, 3, 4, 0, 0, 0, 0}));
  // dw[i][j] = sum over outputs of x[oh + i][ow + j] * dy[oh][ow]; dy = ones: window sums.
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardWeight, x, {}, V{1, 1, 1, 1}), (V{12, 16, 24, 28}));
}

TEST(HostConvReferenceTest, GroupsAndDepthwise) {
  // One pixel, C = 4, K = 4, G = 2: k0 and k1 read channels 0-1, k2 and k3 channels 2-3.
  const ConvProblem p = Conv2d(1, 4, 4, 2, 1, 1, 1, 1);
  const V x = {1, 2, 3, 4};
  const V w = {1, 10, 2, 20, 100, 1000, 200, 2000};  // (k, c/g)
  EXPECT_EQ(Convolve(p, ConvDirection::kForward, x, w, {}), (V{21, 42, 4300, 8600}));
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardData, {}, w, V{1, 0, 0, 1}), (V{1, 10, 200, 2000}));
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardWeight, x, {}, V{1, 0, 0, 1}),
            (V{1, 2, 0, 0, 0, 0, 3, 4}));
  // Depthwise (G = C = K = 2), one row of 3 pixels, a 1x2 filter: channels interleaved per pixel.
  const ConvProblem d = Conv2d(1, 2, 2, 2, 1, 3, 1, 2);
  const V dx = {1, 10, 2, 20, 3, 30};
  const V dw = {1, -1, 2, 1};  // (k, x, c/g = 1)
  EXPECT_EQ(Convolve(d, ConvDirection::kForward, dx, dw, {}), (V{-1, 40, -1, 70}));
}

TEST(HostConvReferenceTest, StridePaddingAndDilation) {
  // x[h][w] = 5h + w + 1 (5x5), w = [[1,2],[3,4]] dilated by 2 (a 3x3 footprint), stride 2,
  // pad 1: Ho = Wo = (5 + 2 - 3) / 2 + 1 = 3, and only odd rows and columns are ever read.
  ConvProblem p = Conv2d(1, 1, 1, 1, 5, 5, 2, 2);
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  p.dilation_h = p.dilation_w = 2;
  V x(25);
  for (int i = 0; i < 25; ++i) x[static_cast<size_t>(i)] = i + 1;
  const V w = {1, 2, 3, 4};
  // y[0][0]: only tap (1,1) lands inside, on x[1][1] = 7: 7 * 4.
  EXPECT_EQ(Convolve(p, ConvDirection::kForward, x, w, {}),
            (V{28, 57, 27, 82, 152, 66, 34, 55, 19}));
  const V dy = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  // dx[1][1] = dy[0][0]*w[1][1] + dy[0][1]*w[1][0] + dy[1][0]*w[0][1] + dy[1][1]*w[0][0] = 23.
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardData, {}, w, dy),
            (V{0, 0, 0, 0, 0, 0, 23, 0, 33, 0, 0, 0, 0, 0, 0, 0, 53, 0, 63, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardWeight, x, {}, dy), (V{396, 344, 240, 188}));
}

TEST(HostConvReferenceTest, ThreeDimensions) {
  // x (d, h, w) = 1..12 over 3x2x2, a 2x1x1 filter [1, 10] along depth.
  ConvProblem p = Conv2d(1, 1, 1, 1, 2, 2, 1, 1);
  p.di = 3, p.z = 2;
  V x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<size_t>(i)] = i + 1;
  const V w = {1, 10};
  // y[od] = x[od] + 10 x[od + 1], Do = 2.
  EXPECT_EQ(Convolve(p, ConvDirection::kForward, x, w, {}), (V{51, 62, 73, 84, 95, 106, 117, 128}));
  // Stride 2 and pad 1 in depth: Do = (3 + 2 - 2) / 2 + 1 = 2; y[0] = 10 x[0] (tap 0 in the
  // padding), y[1] = x[1] + 10 x[2].
  p.stride_d = 2, p.pad_d = 1;
  EXPECT_EQ(Convolve(p, ConvDirection::kForward, x, w, {}), (V{10, 20, 30, 40, 95, 106, 117, 128}));
  const V dy = {1, 1, 1, 1, 2, 2, 2, 2};
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardData, {}, w, dy),
            (V{10, 10, 10, 10, 2, 2, 2, 2, 20, 20, 20, 20}));
  // dw[0] = sum x[1] * dy[1] (od = 0 reads the padding) = 2 * (5+6+7+8); dw[1] = sum x[0] * 1 +
  // x[2] * 2 = (1+2+3+4) + 2 * (9+10+11+12).
  EXPECT_EQ(Convolve(p, ConvDirection::kBackwardWeight, x, {}, dy), (V{52, 94}));
}

double Dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

V Random(int64_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  V out(static_cast<size_t>(n));
  for (double& v : out) v = d(rng);
  return out;
}

// <fwd(x, w), dy> = <x, bwd_data(dy, w)> = <w, bwd_weight(x, dy)>: the three directions are the
// same bilinear form, so an index bug in any one of them breaks an identity.
TEST(HostConvReferenceTest, AdjointIdentitiesHoldOnRandomData) {
  std::vector<ConvProblem> problems;
  problems.push_back(Conv2d(2, 6, 4, 2, 7, 6, 3, 2));  // grouped, asymmetric filter
  {
    ConvProblem p = Conv2d(1, 4, 6, 1, 9, 8, 3, 3);  // stride, padding and dilation
    p.stride_h = 2, p.stride_w = 3, p.pad_h = 2, p.pad_w = 1, p.dilation_h = 2, p.dilation_w = 1;
    problems.push_back(p);
  }
  problems.push_back(Conv2d(3, 5, 5, 5, 6, 5, 3, 3));  // depthwise
  {
    ConvProblem p = Conv2d(2, 4, 4, 2, 5, 4, 2, 3);  // 3D, strided and dilated in depth
    p.di = 6, p.z = 2, p.stride_d = 2, p.pad_d = 1, p.dilation_d = 2, p.pad_w = 1;
    problems.push_back(p);
  }
  {
    ConvProblem p = Conv2d(1, 3, 2, 1, 4, 7, 1, 1);  // 1x1 with stride 3: dx has zero rows
    p.stride_h = p.stride_w = 3;
    problems.push_back(p);
  }
  std::mt19937_64 rng(7);
  for (const ConvProblem& p : problems) {
    ASSERT_TRUE(p.Validate().ok()) << p.ToString();
    const V x = Random(p.n * p.di * p.hi * p.wi * p.c, rng);
    const V w = Random(p.k * p.z * p.y * p.x * (p.c / p.g), rng);
    const V dy = Random(p.n * p.Do() * p.Ho() * p.Wo() * p.k, rng);
    const double forward = Dot(Convolve(p, ConvDirection::kForward, x, w, {}), dy);
    const double data = Dot(x, Convolve(p, ConvDirection::kBackwardData, {}, w, dy));
    const double weight = Dot(w, Convolve(p, ConvDirection::kBackwardWeight, x, {}, dy));
    EXPECT_NEAR(forward, data, 1e-12 * (1 + std::abs(forward))) << p.ToString();
    EXPECT_NEAR(forward, weight, 1e-12 * (1 + std::abs(forward))) << p.ToString();
    EXPECT_GT(std::abs(forward), 1e-3) << p.ToString();  // not vacuous
  }
}

TEST(HostConvReferenceTest, BadInputIsAStatus) {
  ConvProblem p = Conv2d(1, 4, 4, 1, 3, 3, 3, 3);
  const V x(36, 1.0), w(144, 1.0);
  EXPECT_TRUE(HostConvReference(p, x, w, {}).ok());
  EXPECT_EQ(HostConvReference(p, V(35), w, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HostConvReference(p, x, {}, {}).status().code(), StatusCode::kInvalidArgument);
  p.direction = ConvDirection::kBackwardData;  // reads y (1 element) and w
  EXPECT_EQ(HostConvReference(p, x, w, {}).status().code(), StatusCode::kInvalidArgument);
  p.y = 5;  // filter larger than the input
  EXPECT_EQ(HostConvReference(p, x, w, V(1)).status().code(), StatusCode::kInvalidArgument);
  p.y = 3;
  p.layout = ConvLayout::kChannelsFirst;
  EXPECT_EQ(HostConvReference(p, x, w, V(4)).status().code(), StatusCode::kUnimplemented);
}

// Rounds to the nearest bf16 (ties to even), as an output store does.
double RoundToBf16(double v) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

std::vector<uint8_t> Bf16Bytes(const V& values) {
  std::vector<uint8_t> out(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(RoundToBf16(values[i]));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const uint16_t half = static_cast<uint16_t>(bits >> 16);
    std::memcpy(&out[2 * i], &half, 2);
  }
  return out;
}

// What the tolerance is for: a bf16 bwd_weight whose sum over the batch is split per image, each
// split's partial rounded to bf16 and the partials added in bf16 (a reduced-precision split
// reduction) passes; the same output with one element off by a third fails on that element.
TEST(HostConvReferenceTest, Bf16ToleranceAcceptsSplitRoundingAndCatchesAWrongElement) {
  ConvProblem p = Conv2d(16, 32, 32, 2, 12, 12, 3, 3);
  p.pad_h = p.pad_w = 1;
  p.dtype = DataType::kBF16;
  p.direction = ConvDirection::kBackwardWeight;
  std::mt19937_64 rng(11);
  auto bf16_random = [&](int64_t n) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
    FillRandomNonZero(bytes, DataType::kBF16, rng);
    return DecodeElements(bytes, DataType::kBF16).value();
  };
  const V x = bf16_random(p.n * p.hi * p.wi * p.c);
  const V dy = bf16_random(p.n * p.Ho() * p.Wo() * p.k);
  const V reference = HostConvReference(p, x, {}, dy).value();
  ConvProblem one = p;
  one.n = 1;
  const size_t x_image = static_cast<size_t>(p.hi * p.wi * p.c);
  const size_t y_image = static_cast<size_t>(p.Ho() * p.Wo() * p.k);
  V split_sum(reference.size(), 0.0);
  for (int64_t image = 0; image < p.n; ++image) {
    const V partial = HostConvReference(one, std::span(x).subspan(image * x_image, x_image), {},
                                        std::span(dy).subspan(image * y_image, y_image))
                          .value();
    for (size_t i = 0; i < partial.size(); ++i)
      split_sum[i] = RoundToBf16(split_sum[i] + RoundToBf16(partial[i]));
  }
  const Tolerance tolerance = *ToleranceFor(Problem(p));
  const CheckResult split =
      CompareWithReference(Bf16Bytes(split_sum), DataType::kBF16, reference, tolerance);
  EXPECT_TRUE(split.passed) << split.ToString();
  // More than one output rounding's error: the split's roundings are real.
  EXPECT_GT(split.max_error, std::ldexp(1.0, -8));
  V wrong = split_sum;
  double rms = 0;
  for (const double v : reference) rms += v * v;
  rms = std::sqrt(rms / static_cast<double>(reference.size()));
  wrong[123] += rms / 3;
  const CheckResult bad =
      CompareWithReference(Bf16Bytes(wrong), DataType::kBF16, reference, tolerance);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.first_bad_index, 123);
  EXPECT_EQ(bad.bad_elements, 1);
}

}  // namespace
}  // namespace kselect::verify
