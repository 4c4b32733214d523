// The CPU side of verification: tolerances, element decoding, random inputs, the comparison and
// a host GEMM reference. No CUDA here, so all of it is unit-tested on any host.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kselect/verify.h"

namespace kselect::verify {
namespace {

double HalfToDouble(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1F) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);  // subnormal: m * 2^-14 / 2^10
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

double Bf16ToDouble(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

// OCP fp8 e4m3 ("fn": no infinities, S.1111.111 is NaN), bias 7.
double E4m3ToDouble(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF;
  const int mantissa = bits & 0x7;
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);  // m/8 * 2^-6
  return sign * std::ldexp(8 + mantissa, exponent - 10);
}

// OCP fp8 e5m2 (IEEE-like: exponent 31 is Inf or NaN), bias 15.
double E5m2ToDouble(uint8_t bits) {
  const int exponent = (bits >> 2) & 0x1F;
  const int mantissa = bits & 0x3;
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (exponent == 0x1F) {
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(mantissa, -16);  // m/4 * 2^-14
  return sign * std::ldexp(4 + mantissa, exponent - 17);
}

// Half an ulp relative to the value, the output rounding's worst relative error, per dtype.
Tolerance OutputTolerance(DataType output) {
  switch (output) {
    case DataType::kBF16:
      return {1e-2, 1.6e-2};
    case DataType::kF16:
      return {2e-3, 2e-3};
    case DataType::kF8E4M3:
      return {1.25e-1, 2.5e-1};
    case DataType::kF8E5M2:
      return {2.5e-1, 5e-1};
    default:  // fp32, tf32 storage, integers (exact but for accumulation order)
      return {5e-4, 5e-4};
  }
}

}  // namespace

Tolerance GemmTolerance(DataType input, DataType output) {
  Tolerance t = OutputTolerance(output);
  if (input == DataType::kF8E4M3 || input == DataType::kF8E5M2) {
    t.relative_rms = std::max(t.relative_rms, 2e-2);
    t.element = std::max(t.element, 6e-2);
  }
  return t;
}

StatusOr<Tolerance> ToleranceFor(const Problem& problem) {
  if (const auto* gemm = std::get_if<GemmProblem>(&problem)) {
    // The coarser of the two input types bounds the products' precision.
    const DataType input =
        DataTypeBits(gemm->dtype_a) <= DataTypeBits(gemm->dtype_b) ? gemm->dtype_a : gemm->dtype_b;
    return GemmTolerance(input, gemm->dtype_c);
  }
  const ConvProblem& conv = std::get<ConvProblem>(problem);
  KSELECT_RETURN_IF_ERROR(conv.Validate());
  return ConvTolerance(conv.dtype, ConvReductionLength(conv));
}

Tolerance ConvTolerance(DataType dtype, int64_t reduction_length) {
  // The unit of the roundings a correct engine may apply (verify.h): the output's half ulp, or
  // tf32's where fp32 inputs may be down-converted.
  double unit = std::ldexp(1.0, -11);
  switch (dtype) {
    case DataType::kBF16:
      unit = std::ldexp(1.0, -8);
      break;
    case DataType::kF8E4M3:
      unit = std::ldexp(1.0, -4);
      break;
    case DataType::kF8E5M2:
      unit = std::ldexp(1.0, -3);
      break;
    default:
      break;
  }
  const double levels =
      1.0 + std::log2(static_cast<double>(std::max<int64_t>(reduction_length, 1)));
  const Tolerance gemm = OutputTolerance(dtype);
  return {std::max(gemm.relative_rms, 1.5 * unit * std::sqrt(levels)),
          std::max(gemm.element, 4.0 * unit * std::sqrt(levels))};
}

int64_t ConvReductionLength(const ConvProblem& p) {
  switch (p.direction) {
    case ConvDirection::kForward:
      return p.c / p.g * p.z * p.y * p.x;
    case ConvDirection::kBackwardData:
      return p.k / p.g * p.z * p.y * p.x;
    case ConvDirection::kBackwardWeight:
      break;
  }
  return p.n * p.Do() * p.Ho() * p.Wo();
}

std::string CheckResult::ToString() const {
  char text[256];
  std::snprintf(text, sizeof(text), "max err %.1e (tol %.1e), rel rms %.1e (tol %.1e)", max_error,
                tolerance.element, relative_rms_error, tolerance.relative_rms);
  std::string out = text;
  if (non_finite > 0) out += ", " + std::to_string(non_finite) + " non-finite";
  if (first_bad_index >= 0) out += ", first bad element " + std::to_string(first_bad_index);
  return out;
}

StatusOr<std::vector<double>> DecodeElements(std::span<const uint8_t> bytes, DataType type) {
  const size_t width = static_cast<size_t>(DataTypeBits(type) / 8);
  if (bytes.size() % width != 0) {
    return InvalidArgumentError(std::to_string(bytes.size()) + " bytes are not whole " +
                                std::string(DataTypeName(type)) + " elements");
  }
  std::vector<double> out(bytes.size() / width);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = bytes.data() + i * width;
    switch (type) {
      case DataType::kF32:
      case DataType::kTF32: {
        float f;
        std::memcpy(&f, p, 4);
        out[i] = f;
        break;
      }
      case DataType::kI32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        out[i] = v;
        break;
      }
      case DataType::kF16:
      case DataType::kBF16: {
        uint16_t u;
        std::memcpy(&u, p, 2);
        out[i] = type == DataType::kF16 ? HalfToDouble(u) : Bf16ToDouble(u);
        break;
      }
      case DataType::kF8E4M3:
        out[i] = E4m3ToDouble(*p);
        break;
      case DataType::kF8E5M2:
        out[i] = E5m2ToDouble(*p);
        break;
      case DataType::kI8:
        out[i] = static_cast<int8_t>(*p);
        break;
    }
  }
  return out;
}

void FillRandomNonZero(std::span<uint8_t> bytes, DataType type, std::mt19937_64& rng) {
  // The bench's inputs since its first version: the draws are kept exactly as they were, so a
  // sweep's data does not change with this code's home.
  const int bits = DataTypeBits(type);
  if (bits == 16) {
    const size_t n = bytes.size() / 2;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      const uint16_t sign = static_cast<uint16_t>((r & 1) << 15);
      uint16_t v;
      if (type == DataType::kBF16) {  // exponent 123..127 (bias 127), 7 mantissa bits
        v = static_cast<uint16_t>(sign | ((123 + (r >> 1) % 5) << 7) | ((r >> 8) & 0x7F));
      } else {  // fp16: exponent 11..15 (bias 15), 10 mantissa bits
        v = static_cast<uint16_t>(sign | ((11 + (r >> 1) % 5) << 10) | ((r >> 8) & 0x3FF));
      }
      std::memcpy(bytes.data() + i * 2, &v, 2);
    }
  } else if (bits == 8) {  // e4m3: exponent 3..7 (bias 7), 3 mantissa bits; never NaN or zero
    for (size_t i = 0; i < bytes.size(); ++i) {
      const uint64_t r = rng();
      bytes[i] =
          static_cast<uint8_t>(((r & 1) << 7) | ((3 + (r >> 1) % 5) << 3) | ((r >> 8) & 0x7));
    }
  } else {  // fp32
    std::uniform_real_distribution<float> d(0.0625f, 2.0f);
    for (size_t i = 0; i < bytes.size() / 4; ++i) {
      const float v = (rng() & 1 ? -1.0f : 1.0f) * d(rng);
      std::memcpy(bytes.data() + i * 4, &v, 4);
    }
  }
}

CheckResult CompareWithReference(std::span<const uint8_t> output, DataType type,
                                 std::span<const double> reference, const Tolerance& tolerance) {
  CheckResult r;
  r.tolerance = tolerance;
  StatusOr<std::vector<double>> decoded = DecodeElements(output, type);
  KSELECT_CHECK_MSG(decoded.ok() && decoded->size() == reference.size(),
                    "output and reference sizes differ");
  const std::vector<double>& out = *decoded;
  r.elements = static_cast<int64_t>(out.size());
  double ref_sq = 0;
  for (const double v : reference) ref_sq += v * v;
  const double rms = out.empty() ? 0.0 : std::sqrt(ref_sq / static_cast<double>(out.size()));
  // Elements near zero are judged against the output's scale, not their own tiny magnitude.
  const double floor = std::max(rms, std::numeric_limits<double>::min());
  double err_sq = 0;
  auto mark_bad = [&](size_t i) {
    ++r.bad_elements;
    if (r.first_bad_index < 0) r.first_bad_index = static_cast<int64_t>(i);
  };
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]) || !std::isfinite(reference[i])) {
      ++r.non_finite;
      r.max_error = std::numeric_limits<double>::infinity();
      mark_bad(i);
      continue;
    }
    const double d = out[i] - reference[i];
    err_sq += d * d;
    const double e = std::abs(d) / std::max(std::abs(reference[i]), floor);
    r.max_error = std::max(r.max_error, e);
    if (e > tolerance.element) mark_bad(i);
  }
  r.relative_rms_error = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  r.passed = r.bad_elements == 0 && r.relative_rms_error <= tolerance.relative_rms;
  return r;
}

std::vector<double> HostGemmReference(const GemmProblem& p, std::span<const double> a,
                                      std::span<const double> b, std::span<const double> c0) {
  const int64_t m = p.m, n = p.n, k = p.k;
  KSELECT_CHECK(static_cast<int64_t>(a.size()) == p.batch * m * k);
  KSELECT_CHECK(static_cast<int64_t>(b.size()) == p.batch * k * n);
  KSELECT_CHECK(p.beta == 0.0 || static_cast<int64_t>(c0.size()) == p.batch * m * n);
  const bool a_row = p.layout.a == MatrixOrder::kRowMajor;
  const bool b_row = p.layout.b == MatrixOrder::kRowMajor;
  const bool c_row = p.layout.c == MatrixOrder::kRowMajor;
  std::vector<double> c(static_cast<size_t>(p.batch * m * n));
  for (int64_t z = 0; z < p.batch; ++z) {
    const double* az = a.data() + z * m * k;
    const double* bz = b.data() + z * k * n;
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          acc += az[a_row ? row * k + l : l * m + row] * bz[b_row ? l * n + col : col * k + l];
        }
        const int64_t o = z * m * n + (c_row ? row * n + col : col * m + row);
        c[static_cast<size_t>(o)] = p.alpha * acc + (p.beta != 0.0 ? p.beta * c0[o] : 0.0);
      }
    }
  }
  return c;
}

GemmProblem TransposedGemm(const GemmProblem& p) {
  auto flip = [](MatrixOrder order) {
    return order == MatrixOrder::kRowMajor ? MatrixOrder::kColMajor : MatrixOrder::kRowMajor;
  };
  GemmProblem t = p;
  t.m = p.n;
  t.n = p.m;
  t.dtype_a = p.dtype_b;
  t.dtype_b = p.dtype_a;
  t.layout.a = flip(p.layout.b);
  t.layout.b = flip(p.layout.a);
  t.layout.c = flip(p.layout.c);
  return t;
}

std::vector<GemmProblem> GemmCheckProblems(DataType input, DataType output, GemmLayout layout) {
  struct Shape {
    int64_t m, n, k, batch;
    double alpha, beta;
  };
  static constexpr Shape kShapes[] = {
      {1, 256, 1024, 1, 1.0, 0.0},
      // Few tiles, long K (stream-K splits each tile over several clusters), with alpha/beta.
      {13, 520, 4104, 1, 1.5, 0.5},
      {127, 257, 263, 1, 1.0, 0.0},
      {256, 512, 512, 1, 1.0, 0.0},
      {300, 200, 96, 1, 1.5, 0.5},
      {64, 96, 80, 3, 1.0, 0.0},
      // More output tiles (over two batch entries) than a GPU holds blocks at once: persistent
      // kernels walk several tiles per block, clusters get padded edges.
      {1032, 1000, 136, 2, 1.0, 0.0},
      // Tokens in n (nn.Linear through cuBLAS TN): decode, with batch and alpha/beta.
      {520, 1, 4104, 1, 1.0, 0.0},
      {300, 11, 96, 3, 1.5, 0.5},
  };
  std::vector<GemmProblem> problems;
  for (const Shape& s : kShapes) {
    GemmProblem p;
    p.m = s.m, p.n = s.n, p.k = s.k, p.batch = s.batch;
    p.layout = layout;
    p.dtype_a = p.dtype_b = input;
    p.dtype_c = output;
    p.alpha = s.alpha, p.beta = s.beta;
    problems.push_back(p);
  }
  return problems;
}

}  // namespace kselect::verify
