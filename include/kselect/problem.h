// Problems kselect selects kernels for: a (batched) GEMM and a grouped convolution.
// Dimensions are element counts; Flops() counts a multiply-add as two operations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "kselect/status.h"

namespace kselect {

// Element types of operands and of the accumulator.
enum class DataType { kF32, kTF32, kF16, kBF16, kF8E4M3, kF8E5M2, kI8, kI32 };

// Canonical short names: fp32 tf32 fp16 bf16 fp8 bf8 int8 int32 ("fp8" is e4m3, "bf8" is e5m2,
// as in CK Tile's naming; "e4m3"/"e5m2" are accepted on parse).
std::string_view DataTypeName(DataType type);
StatusOr<DataType> ParseDataType(std::string_view name);
// Storage size of one element in bits.
int DataTypeBits(DataType type);

// Memory order of one matrix operand.
enum class MatrixOrder { kRowMajor, kColMajor };

// Memory orders of A (m x k), B (k x n) and C (m x n). Written as three letters, 'r' or 'c',
// in the order A B C: "rcr" is CK Tile's usual layout (A row-major, B column-major, C row-major).
struct GemmLayout {
  MatrixOrder a = MatrixOrder::kRowMajor;
  MatrixOrder b = MatrixOrder::kColMajor;
  MatrixOrder c = MatrixOrder::kRowMajor;

  std::string ToString() const;
  // The BLAS transpose pair ("TN", "NN", ...) of a column-major-C call in cuBLAS's convention,
  // where 'T' on A means A is stored m x k row-major. Empty when C is row-major.
  std::string BlasOps() const;
  bool operator==(const GemmLayout&) const = default;
};
StatusOr<GemmLayout> ParseGemmLayout(std::string_view text);
// Layout of a column-major-C cuBLAS call from its transpose pair, "TN" -> "rcc".
StatusOr<GemmLayout> GemmLayoutFromBlasOps(std::string_view ops);

// C = alpha * op(A) op(B) + beta * C, `batch` independent products of one size.
struct GemmProblem {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  GemmLayout layout;
  DataType dtype_a = DataType::kBF16;
  DataType dtype_b = DataType::kBF16;
  DataType dtype_c = DataType::kBF16;
  DataType compute = DataType::kF32;
  double alpha = 1.0;
  double beta = 0.0;

  // Rejects non-positive or overflowing dimensions (m*k, k*n, m*n must fit in int64 elements).
  Status Validate() const;
  double Flops() const;
  // Fewest bytes the product must move: A and B read once, C written once (and read when beta!=0).
  double MinBytes() const;
  // "m=.. n=.. k=.. batch=.. layout=rcr a=bf16 b=bf16 c=bf16 acc=fp32", for messages and keys.
  std::string ToString() const;
  bool operator==(const GemmProblem&) const = default;
};

enum class ConvDirection { kForward, kBackwardData, kBackwardWeight };
// "fwd", "bwd_data", "bwd_weight"; "forward" is accepted on parse.
std::string_view ConvDirectionName(ConvDirection direction);
StatusOr<ConvDirection> ParseConvDirection(std::string_view name);

// Tensor layouts of a grouped convolution: channels-last with groups (CK's NHWGC/GKYXC/NHWGK and
// their 3D forms), or channels-first (NGCHW).
enum class ConvLayout { kChannelsLast, kChannelsFirst };
std::string_view ConvLayoutName(ConvLayout layout);  // "nhwgc" / "ngchw"
StatusOr<ConvLayout> ParseConvLayout(std::string_view name);

// A grouped 2D or 3D convolution. c and k are total channels (C/G and K/G per group). For 2D
// problems the depth fields stay at di = z = 1, stride_d = dilation_d = 1, pad_d = 0.
struct ConvProblem {
  int64_t n = 1;
  int64_t c = 0;
  int64_t k = 0;
  int64_t g = 1;
  int64_t di = 1, hi = 0, wi = 0;  // input spatial sizes
  int64_t z = 1, y = 1, x = 1;     // filter sizes (depth, height, width)
  int64_t stride_d = 1, stride_h = 1, stride_w = 1;
  int64_t pad_d = 0, pad_h = 0, pad_w = 0;
  int64_t dilation_d = 1, dilation_h = 1, dilation_w = 1;
  ConvDirection direction = ConvDirection::kForward;
  ConvLayout layout = ConvLayout::kChannelsLast;
  DataType dtype = DataType::kBF16;
  DataType compute = DataType::kF32;

  bool Is3d() const { return di > 1 || z > 1 || pad_d > 0; }
  int SpatialDims() const { return Is3d() ? 3 : 2; }
  // Output sizes: (in + 2*pad - ((filter-1)*dilation + 1)) / stride + 1.
  int64_t Do() const;
  int64_t Ho() const;
  int64_t Wo() const;
  // Rejects non-positive sizes, channels not divisible by groups and empty outputs.
  Status Validate() const;
  // 2 * N * K * Do*Ho*Wo * (C/G) * Z*Y*X, the same for all three directions.
  double Flops() const;
  double MinBytes() const;
  std::string ToString() const;
  bool operator==(const ConvProblem&) const = default;
};

using Problem = std::variant<GemmProblem, ConvProblem>;

Status ValidateProblem(const Problem& problem);
double ProblemFlops(const Problem& problem);
double ProblemMinBytes(const Problem& problem);
std::string ProblemToString(const Problem& problem);

}  // namespace kselect
