#include "kselect/problem.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace kselect {
namespace {

struct DataTypeEntry {
  DataType type;
  std::string_view name;
  int bits;
};
constexpr std::array<DataTypeEntry, 8> kDataTypes = {{
    {DataType::kF32, "fp32", 32},
    {DataType::kTF32, "tf32", 32},
    {DataType::kF16, "fp16", 16},
    {DataType::kBF16, "bf16", 16},
    {DataType::kF8E4M3, "fp8", 8},
    {DataType::kF8E5M2, "bf8", 8},
    {DataType::kI8, "int8", 8},
    {DataType::kI32, "int32", 32},
}};

// a*b fits in int64 (both positive)?
bool ProductFits(int64_t a, int64_t b) {
  return a <= std::numeric_limits<int64_t>::max() / b;
}

Status CheckPositive(std::string_view name, int64_t value) {
  if (value <= 0) {
    return InvalidArgumentError(std::string(name) + " must be positive, got " +
                                std::to_string(value));
  }
  return Status::Ok();
}

// Output extent of one spatial dimension; 0 when empty, -1 when it does not fit int64 (sizes
// from a file can be anything: computed in 128 bits so no input overflows).
int64_t OutputSize(int64_t in, int64_t filter, int64_t stride, int64_t pad, int64_t dilation) {
  if (stride <= 0) return 0;
  const __int128 span = static_cast<__int128>(filter - 1) * dilation + 1;
  const __int128 padded = static_cast<__int128>(in) + 2 * static_cast<__int128>(pad) - span;
  if (padded < 0) return 0;
  const __int128 out = padded / stride + 1;
  return out > std::numeric_limits<int64_t>::max() ? -1 : static_cast<int64_t>(out);
}

}  // namespace

std::string_view DataTypeName(DataType type) {
  for (const auto& e : kDataTypes) {
    if (e.type == type) return e.name;
  }
  return "unknown";
}

StatusOr<DataType> ParseDataType(std::string_view name) {
  for (const auto& e : kDataTypes) {
    if (e.name == name) return e.type;
  }
  if (name == "e4m3" || name == "fp8_e4m3" || name == "f8e4m3") return DataType::kF8E4M3;
  if (name == "e5m2" || name == "fp8_e5m2" || name == "f8e5m2") return DataType::kF8E5M2;
  if (name == "f32" || name == "float") return DataType::kF32;
  if (name == "f16" || name == "half") return DataType::kF16;
  return InvalidArgumentError("unknown data type '" + std::string(name) +
                              "' (expected fp32, tf32, fp16, bf16, fp8, bf8, int8 or int32)");
}

int DataTypeBits(DataType type) {
  for (const auto& e : kDataTypes) {
    if (e.type == type) return e.bits;
  }
  return 0;
}

std::string GemmLayout::ToString() const {
  auto letter = [](MatrixOrder o) { return o == MatrixOrder::kRowMajor ? 'r' : 'c'; };
  return {letter(a), letter(b), letter(c)};
}

std::string GemmLayout::BlasOps() const {
  if (c != MatrixOrder::kColMajor) return "";
  return {a == MatrixOrder::kRowMajor ? 'T' : 'N', b == MatrixOrder::kRowMajor ? 'T' : 'N'};
}

StatusOr<GemmLayout> ParseGemmLayout(std::string_view text) {
  if (text.size() != 3) {
    return InvalidArgumentError("layout '" + std::string(text) +
                                "' must be three letters r/c for A, B, C (e.g. rcr)");
  }
  std::array<MatrixOrder, 3> orders{};
  for (size_t i = 0; i < 3; ++i) {
    if (text[i] == 'r' || text[i] == 'R') {
      orders[i] = MatrixOrder::kRowMajor;
    } else if (text[i] == 'c' || text[i] == 'C') {
      orders[i] = MatrixOrder::kColMajor;
    } else {
      return InvalidArgumentError("layout '" + std::string(text) +
                                  "' must be three letters r/c for A, B, C (e.g. rcr)");
    }
  }
  return GemmLayout{orders[0], orders[1], orders[2]};
}

StatusOr<GemmLayout> GemmLayoutFromBlasOps(std::string_view ops) {
  if (ops.size() != 2) {
    return InvalidArgumentError("BLAS ops '" + std::string(ops) + "' must be two of N/T, e.g. TN");
  }
  GemmLayout layout;
  layout.c = MatrixOrder::kColMajor;
  MatrixOrder* targets[2] = {&layout.a, &layout.b};
  // Column-major convention: op 'N' keeps the operand column-major, 'T' means it is stored
  // transposed, i.e. row-major as seen from the product.
  for (int i = 0; i < 2; ++i) {
    const char op = ops[i];
    if (op == 'N' || op == 'n') {
      *targets[i] = MatrixOrder::kColMajor;
    } else if (op == 'T' || op == 't') {
      *targets[i] = MatrixOrder::kRowMajor;
    } else {
      return InvalidArgumentError("BLAS ops '" + std::string(ops) + "' must be two of N/T");
    }
  }
  return layout;
}

Status GemmProblem::Validate() const {
  KSELECT_RETURN_IF_ERROR(CheckPositive("m", m));
  KSELECT_RETURN_IF_ERROR(CheckPositive("n", n));
  KSELECT_RETURN_IF_ERROR(CheckPositive("k", k));
  KSELECT_RETURN_IF_ERROR(CheckPositive("batch", batch));
  if (!ProductFits(m, k) || !ProductFits(k, n) || !ProductFits(m, n)) {
    return InvalidArgumentError("GEMM " + ToString() + " overflows 64-bit element counts");
  }
  if (!ProductFits(std::max({m * k, k * n, m * n}), batch)) {
    return InvalidArgumentError("GEMM " + ToString() + " overflows 64-bit element counts");
  }
  // A NaN never equals itself: such a problem would miss every cache and decide again each time.
  if (!std::isfinite(alpha) || !std::isfinite(beta)) {
    return InvalidArgumentError("GEMM " + ToString() + ": alpha and beta must be finite");
  }
  return Status::Ok();
}

double GemmProblem::Flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

double GemmProblem::MinBytes() const {
  const double a_bytes = static_cast<double>(m) * k * DataTypeBits(dtype_a) / 8.0;
  const double b_bytes = static_cast<double>(k) * n * DataTypeBits(dtype_b) / 8.0;
  const double c_bytes = static_cast<double>(m) * n * DataTypeBits(dtype_c) / 8.0;
  return (a_bytes + b_bytes + c_bytes * (beta != 0.0 ? 2.0 : 1.0)) * static_cast<double>(batch);
}

std::string GemmProblem::ToString() const {
  std::string s = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
  if (batch != 1) s += " batch=" + std::to_string(batch);
  s += " layout=" + layout.ToString() + " a=" + std::string(DataTypeName(dtype_a)) +
       " b=" + std::string(DataTypeName(dtype_b)) + " c=" + std::string(DataTypeName(dtype_c)) +
       " acc=" + std::string(DataTypeName(compute));
  return s;
}

std::string_view ConvDirectionName(ConvDirection direction) {
  switch (direction) {
    case ConvDirection::kForward:
      return "fwd";
    case ConvDirection::kBackwardData:
      return "bwd_data";
    case ConvDirection::kBackwardWeight:
      return "bwd_weight";
  }
  return "unknown";
}

StatusOr<ConvDirection> ParseConvDirection(std::string_view name) {
  if (name == "fwd" || name == "forward") return ConvDirection::kForward;
  if (name == "bwd_data" || name == "backward_data") return ConvDirection::kBackwardData;
  if (name == "bwd_weight" || name == "backward_weight") return ConvDirection::kBackwardWeight;
  return InvalidArgumentError("unknown convolution direction '" + std::string(name) +
                              "' (expected fwd, bwd_data or bwd_weight)");
}

std::string_view ConvLayoutName(ConvLayout layout) {
  return layout == ConvLayout::kChannelsLast ? "nhwgc" : "ngchw";
}

StatusOr<ConvLayout> ParseConvLayout(std::string_view name) {
  if (name == "nhwgc" || name == "ndhwgc" || name == "channels_last") {
    return ConvLayout::kChannelsLast;
  }
  if (name == "ngchw" || name == "ngcdhw" || name == "channels_first") {
    return ConvLayout::kChannelsFirst;
  }
  return InvalidArgumentError("unknown convolution layout '" + std::string(name) +
                              "' (expected nhwgc or ngchw)");
}

int64_t ConvProblem::Do() const {
  return Is3d() ? OutputSize(di, z, stride_d, pad_d, dilation_d) : 1;
}
int64_t ConvProblem::Ho() const {
  return OutputSize(hi, y, stride_h, pad_h, dilation_h);
}
int64_t ConvProblem::Wo() const {
  return OutputSize(wi, x, stride_w, pad_w, dilation_w);
}

Status ConvProblem::Validate() const {
  const std::pair<std::string_view, int64_t> positive[] = {{"N", n},
                                                           {"C", c},
                                                           {"K", k},
                                                           {"G", g},
                                                           {"Di", di},
                                                           {"Hi", hi},
                                                           {"Wi", wi},
                                                           {"Z", z},
                                                           {"Y", y},
                                                           {"X", x},
                                                           {"stride_d", stride_d},
                                                           {"stride_h", stride_h},
                                                           {"stride_w", stride_w},
                                                           {"dilation_d", dilation_d},
                                                           {"dilation_h", dilation_h},
                                                           {"dilation_w", dilation_w}};
  for (const auto& [name, value] : positive) KSELECT_RETURN_IF_ERROR(CheckPositive(name, value));
  if (pad_d < 0 || pad_h < 0 || pad_w < 0) {
    return InvalidArgumentError("convolution padding must not be negative: " + ToString());
  }
  if (c % g != 0 || k % g != 0) {
    return InvalidArgumentError("C and K must be divisible by G: " + ToString());
  }
  if (Do() < 0 || Ho() < 0 || Wo() < 0) {
    return InvalidArgumentError("convolution output size overflows 64-bit integers: " + ToString());
  }
  if (Do() <= 0 || Ho() <= 0 || Wo() <= 0) {
    return InvalidArgumentError(
        "convolution has an empty output (filter larger than padded "
        "input): " +
        ToString());
  }
  // Element counts must fit: the largest tensor is one of input, output or weights.
  const double largest = std::max({static_cast<double>(n) * c * di * hi * wi,
                                   static_cast<double>(n) * k * Do() * Ho() * Wo(),
                                   static_cast<double>(k) * (c / g) * z * y * x});
  if (largest > 9.0e18) {
    return InvalidArgumentError("convolution " + ToString() + " overflows 64-bit element counts");
  }
  return Status::Ok();
}

double ConvProblem::Flops() const {
  return 2.0 * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(Do()) *
         static_cast<double>(Ho()) * static_cast<double>(Wo()) * static_cast<double>(c / g) *
         static_cast<double>(z) * static_cast<double>(y) * static_cast<double>(x);
}

double ConvProblem::MinBytes() const {
  const double elem = DataTypeBits(dtype) / 8.0;
  const double input = static_cast<double>(n) * c * di * hi * wi;
  const double output = static_cast<double>(n) * k * Do() * Ho() * Wo();
  const double weight = static_cast<double>(k) * (c / g) * z * y * x;
  return (input + output + weight) * elem;
}

std::string ConvProblem::ToString() const {
  auto s = [](int64_t v) { return std::to_string(v); };
  std::string out = std::string(ConvDirectionName(direction)) + " N=" + s(n) + " C=" + s(c) +
                    " K=" + s(k) + " G=" + s(g);
  if (Is3d()) {
    out += " DiHiWi=" + s(di) + "x" + s(hi) + "x" + s(wi) + " ZYX=" + s(z) + "x" + s(y) + "x" +
           s(x) + " stride=" + s(stride_d) + "x" + s(stride_h) + "x" + s(stride_w) +
           " pad=" + s(pad_d) + "x" + s(pad_h) + "x" + s(pad_w) + " dil=" + s(dilation_d) + "x" +
           s(dilation_h) + "x" + s(dilation_w);
  } else {
    out += " HiWi=" + s(hi) + "x" + s(wi) + " YX=" + s(y) + "x" + s(x) + " stride=" + s(stride_h) +
           "x" + s(stride_w) + " pad=" + s(pad_h) + "x" + s(pad_w) + " dil=" + s(dilation_h) + "x" +
           s(dilation_w);
  }
  out += " layout=" + std::string(ConvLayoutName(layout)) +
         " dtype=" + std::string(DataTypeName(dtype));
  return out;
}

Status ValidateProblem(const Problem& problem) {
  return std::visit([](const auto& p) { return p.Validate(); }, problem);
}
double ProblemFlops(const Problem& problem) {
  return std::visit([](const auto& p) { return p.Flops(); }, problem);
}
double ProblemMinBytes(const Problem& problem) {
  return std::visit([](const auto& p) { return p.MinBytes(); }, problem);
}
std::string ProblemToString(const Problem& problem) {
  return std::visit([](const auto& p) { return p.ToString(); }, problem);
}

}  // namespace kselect
