// The device convolution reference against the host one, through the verify module's own
// MakeCase/Check: a stand-in "kernel" computes the written operand on the host from the case's
// device inputs (HostConvReference) and stores it in the operand's dtype, so Check compares the
// host reference with the NVRTC one on the same random bytes. Also: poisoned outputs fail, bad
// operands are a status, and the reference is quick on a large bwd_weight. Skips, saying why,
// without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kselect/provider.h"
#include "kselect/verify.h"

namespace kselect::verify {
namespace {

bool HaveGpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

// `values` stored as `type` (round to nearest even), for the dtypes the tests use.
std::vector<uint8_t> Encode(const std::vector<double>& values, DataType type) {
  const size_t width = static_cast<size_t>(DataTypeBits(type) / 8);
  std::vector<uint8_t> out(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (type == DataType::kF32) {
      std::memcpy(&out[4 * i], &f, 4);
    } else if (type == DataType::kBF16) {
      const uint16_t h = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
      std::memcpy(&out[2 * i], &h, 2);
    } else {  // fp16: subnormals (zeros of strided dx among them) scaled to 2^-24 units
      const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
      const double magnitude = std::abs(static_cast<double>(f));
      uint16_t h;
      if (magnitude < std::ldexp(1.0, -14)) {
        h = static_cast<uint16_t>(sign |
                                  static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0)));
      } else {
        const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
        const uint32_t mantissa = bits & 0x7FFFFF;
        uint32_t v = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
        const uint32_t rest = mantissa & 0x1FFF;
        if (rest > 0x1000 || (rest == 0x1000 && (v & 1))) ++v;  // a carry rounds up the exponent
        h = static_cast<uint16_t>(sign | v);
      }
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

// Writes the host reference of the written operand, optionally with one element changed, or
// nothing at all.
class HostConvKernel final : public PreparedKernel {
 public:
  enum class Mode { kExact, kOneWrong, kNothing };
  HostConvKernel(ConvProblem problem, Mode mode) : problem_(problem), mode_(mode) {}
  int64_t WorkspaceBytes() const override { return 0; }
  Status Launch(const KernelOperands& operands, void*) override {
    if (mode_ == Mode::kNothing) return Status::Ok();
    const std::vector<OperandSpec> specs = ConvOperandSpecs(problem_, 1);
    std::vector<double> decoded[3];
    size_t written = 0;
    for (size_t i = 0; i < 3; ++i) {
      if (specs[i].access != OperandAccess::kRead) {
        written = i;
        continue;
      }
      std::vector<uint8_t> bytes(static_cast<size_t>(specs[i].bytes));
      if (cudaMemcpy(bytes.data(), operands.buffers[i], bytes.size(), cudaMemcpyDeviceToHost) !=
          cudaSuccess) {
        return InternalError("cudaMemcpy");
      }
      KSELECT_ASSIGN_OR_RETURN(decoded[i], DecodeElements(bytes, problem_.dtype));
    }
    KSELECT_ASSIGN_OR_RETURN(std::vector<double> out,
                             HostConvReference(problem_, decoded[0], decoded[1], decoded[2]));
    if (mode_ == Mode::kOneWrong) out[out.size() / 2] = out[out.size() / 2] * 2 + 1;
    const std::vector<uint8_t> bytes = Encode(out, problem_.dtype);
    if (cudaMemcpy(operands.buffers[written], bytes.data(), bytes.size(), cudaMemcpyHostToDevice) !=
        cudaSuccess) {
      return InternalError("cudaMemcpy");
    }
    return Status::Ok();
  }

 private:
  ConvProblem problem_;
  Mode mode_;
};

// Small problems covering groups, depthwise, stride/padding/dilation, asymmetric filters, 3D and
// a bwd_weight sum long enough to be split on the device.
std::vector<ConvProblem> SmallProblems() {
  std::vector<ConvProblem> problems;
  auto add = [&](int64_t n, int64_t c, int64_t k, int64_t g, int64_t hi, int64_t wi, int64_t y,
                 int64_t x, int64_t stride, int64_t pad, int64_t dilation) {
    ConvProblem p;
    p.n = n, p.c = c, p.k = k, p.g = g, p.hi = hi, p.wi = wi, p.y = y, p.x = x;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    p.dilation_h = p.dilation_w = dilation;
    problems.push_back(p);
    return &problems.back();
  };
  add(2, 16, 24, 1, 9, 7, 3, 3, 1, 1, 1);
  add(3, 32, 16, 4, 10, 11, 3, 2, 2, 1, 2);
  add(2, 24, 24, 24, 8, 8, 5, 5, 1, 2, 1);  // depthwise
  add(8, 8, 8, 2, 40, 40, 3, 3, 1, 1, 1);   // bwd_weight: 12,800 positions, split
  ConvProblem* p3 = add(2, 8, 16, 2, 6, 5, 3, 3, 1, 1, 1);
  p3->di = 5, p3->z = 3, p3->stride_d = 2, p3->pad_d = 1, p3->dilation_d = 1;
  return problems;
}

TEST(ConvReferenceGpuTest, DeviceReferenceMatchesTheHostReference) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  StatusOr<std::unique_ptr<Verifier>> verifier = Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  for (const DataType dtype : {DataType::kF32, DataType::kBF16, DataType::kF16}) {
    for (ConvProblem p : SmallProblems()) {
      for (const ConvDirection direction : {ConvDirection::kForward, ConvDirection::kBackwardData,
                                            ConvDirection::kBackwardWeight}) {
        p.dtype = dtype;
        p.direction = direction;
        auto c = (*verifier)->MakeCase(Problem(p), ConvOperandSpecs(p, 16));
        ASSERT_TRUE(c.ok()) << p.ToString() << ": " << c.status().ToString();
        HostConvKernel exact(p, HostConvKernel::Mode::kExact);
        const StatusOr<CheckResult> r = (*c)->Check(exact);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        EXPECT_TRUE(r->passed) << p.ToString() << ": " << r->ToString();
        // Both references are exact sums in double; what remains is the store's rounding.
        const double rounding = dtype == DataType::kF32    ? 1e-7
                                : dtype == DataType::kBF16 ? std::ldexp(1.0, -8)
                                                           : std::ldexp(1.0, -11);
        EXPECT_LE(r->max_error, rounding) << p.ToString();
      }
    }
  }
}

TEST(ConvReferenceGpuTest, UnwrittenAndWrongOutputsFail) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  StatusOr<std::unique_ptr<Verifier>> verifier = Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  ConvProblem p = SmallProblems()[1];
  for (const ConvDirection direction :
       {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardWeight}) {
    p.direction = direction;
    auto c = (*verifier)->MakeCase(Problem(p), ConvOperandSpecs(p, 16));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    HostConvKernel nothing(p, HostConvKernel::Mode::kNothing);
    const CheckResult unwritten = (*c)->Check(nothing).value();
    EXPECT_FALSE(unwritten.passed);
    EXPECT_EQ(unwritten.non_finite, unwritten.elements);
    HostConvKernel one_wrong(p, HostConvKernel::Mode::kOneWrong);
    const CheckResult wrong = (*c)->Check(one_wrong).value();
    EXPECT_FALSE(wrong.passed);
    EXPECT_EQ(wrong.bad_elements, 1);
    EXPECT_EQ(wrong.first_bad_index, wrong.elements / 2);
    // The output is poisoned again before each check: an exact kernel passes after both.
    HostConvKernel exact(p, HostConvKernel::Mode::kExact);
    EXPECT_TRUE((*c)->Check(exact).value().passed);
  }
}

TEST(ConvReferenceGpuTest, OperandsNotTheProblemsAreInvalidArguments) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  StatusOr<std::unique_ptr<Verifier>> verifier = Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  ConvProblem p = SmallProblems()[0];
  std::vector<OperandSpec> specs = ConvOperandSpecs(p, 16);
  auto code = [&](const Problem& problem, const std::vector<OperandSpec>& operands) {
    return (*verifier)->MakeCase(problem, operands).status().code();
  };
  EXPECT_EQ(code(p, {specs[0], specs[1]}), StatusCode::kInvalidArgument);
  std::vector<OperandSpec> wrong = specs;
  wrong[2].bytes -= 2;
  EXPECT_EQ(code(p, wrong), StatusCode::kInvalidArgument);
  wrong = specs;
  wrong[0].access = OperandAccess::kWrite;  // fwd writes y, not x
  EXPECT_EQ(code(p, wrong), StatusCode::kInvalidArgument);
  wrong = specs;
  wrong[1].name = "x";
  EXPECT_EQ(code(p, wrong), StatusCode::kInvalidArgument);
  GemmProblem gemm;
  gemm.m = gemm.n = gemm.k = 64;
  EXPECT_EQ(code(gemm, specs), StatusCode::kInvalidArgument);
  ConvProblem invalid = p;
  invalid.y = 20;  // larger than the padded input: an empty output
  EXPECT_EQ(code(invalid, specs), StatusCode::kInvalidArgument);
  ConvProblem first = p;
  first.layout = ConvLayout::kChannelsFirst;
  EXPECT_EQ(code(first, specs), StatusCode::kUnimplemented);
  // The verifier still works after the refusals.
  EXPECT_TRUE((*verifier)->MakeCase(p, specs).ok());
}

// A large bwd_weight (each of 590k weights sums 100k products) and the fwd and bwd_data of the
// same layer: the reference must stay a small part of a check's time.
TEST(ConvReferenceGpuTest, LargeLayerReferenceTimes) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  StatusOr<std::unique_ptr<Verifier>> verifier = Verifier::Create();
  ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
  ConvProblem p;
  p.n = 32, p.c = p.k = 256, p.hi = p.wi = 56, p.y = p.x = 3, p.pad_h = p.pad_w = 1;
  for (const ConvDirection direction :
       {ConvDirection::kBackwardWeight, ConvDirection::kForward, ConvDirection::kBackwardData}) {
    p.direction = direction;
    const auto start = std::chrono::steady_clock::now();
    auto c = (*verifier)->MakeCase(Problem(p), ConvOperandSpecs(p, 16));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    std::printf("conv reference %s: MakeCase %.3f s (fill, reference, copy back)\n",
                std::string(ConvDirectionName(direction)).c_str(), seconds);
    EXPECT_LT(seconds, 5.0) << p.ToString();
  }
}

}  // namespace
}  // namespace kselect::verify
