// The verify module's CPU side: tolerances, element decoding, the poison pattern, random inputs,
// the comparison, the host reference and the providers' operand descriptions. Device parts are
// covered by consistency_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

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

TEST(VerifyToleranceTest, ConvolutionHasNoReferenceYet) {
  ConvProblem conv;
  conv.c = conv.k = 8;
  conv.hi = conv.wi = 4;
  const StatusOr<Tolerance> t = ToleranceFor(Problem(conv));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
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

TEST(VerifyShapesTest, CheckProblemsCoverDecodeOddSizesBatchAndAlphaBeta) {
  const std::vector<GemmProblem> problems =
      GemmCheckProblems(DataType::kF16, DataType::kF32, ParseGemmLayout("rrc").value());
  ASSERT_EQ(problems.size(), 8u);
  bool n1 = false, m1 = false, odd_k = false, batch = false, alpha_beta = false;
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
  }
  EXPECT_TRUE(n1 && m1 && odd_k && batch && alpha_beta);
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

// Every registered provider describes a GEMM it runs as A, B, C with the GEMM's sizes, without a
// GPU, and refuses to describe a problem it does not run.
TEST(OperandSpecTest, EveryProviderDescribesItsGemmOperands) {
  GemmProblem p;
  p.m = 64, p.n = 32, p.k = 16;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  ConvProblem conv;
  conv.c = conv.k = 8;
  conv.hi = conv.wi = 4;
  for (const ProviderEntry& entry : ProviderRegistry()) {
    const std::unique_ptr<KernelProvider> provider = entry.create(ProviderOptions{});
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

}  // namespace
}  // namespace kselect::verify
