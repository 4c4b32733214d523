// Verification of kernels on the device, for every provider alike (the ggml
// test-backend-ops idea): one reference per operation, random non-zero inputs, outputs poisoned
// (NaN bytes) before each launch so an element left unwritten fails, NaN/Inf never passing, a
// tolerance per dtype (timing is kselect/timing.h's). Any provider's config is checked
// through KernelProvider (Operands, Prepare, Launch). Both problem kinds have a reference (MakeCase
// dispatches on the Problem variant): the GEMM, and the grouped 2D/3D convolution in all three
// directions over the channels-last operands ConvOperandSpecs describes.
//
// The library neither prints nor exits: results are structs, failures Status. No CUDA type
// appears here. CPU-only parts (tolerances, element decoding, comparison, random fill) work on
// any host; the device parts return kUnavailable without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kselect/problem.h"
#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect::verify {

// Bounds one comparison with the reference must meet (both, and every element finite).
struct Tolerance {
  // Bound on ||out - ref||_2 / ||ref||_2 over the whole output.
  double relative_rms = 0;
  // Bound on |out_i - ref_i| / max(|ref_i|, rms(ref)) for every element: catches a few wrong
  // elements (one bad tile edge) that the whole-output norm would average away.
  double element = 0;
  bool operator==(const Tolerance&) const = default;
};

// GEMM tolerance by dtype (float accumulation; the reference is exact on the same inputs, so
// what remains is the output's rounding and the accumulation order):
//   bf16 out: rms 1e-2, element 1.6e-2 (half an ulp is up to 2^-8 = 3.9e-3 relative; 4x margin)
//   fp16 out: rms 2e-3, element 2e-3   (half an ulp 2^-11 = 4.9e-4; 4x margin)
//   fp32 out: rms 5e-4, element 5e-4   (fp32 accumulation in another order: ~1e-6 at K = 4k)
//   fp8 out:  rms 1.25e-1 (e4m3) / 2.5e-1 (e5m2), element 2x that (3 or 2 mantissa bits)
// fp8 inputs raise both bounds to at least rms 2e-2, element 6e-2: Hopper's fp8 tensor cores
// accumulate with fewer than fp32's mantissa bits between promotions.
// The rms bounds for bf16/fp16/fp32 are those `kselect tile verify` has always used.
Tolerance GemmTolerance(DataType input, DataType output);
// Convolution tolerance for `dtype` outputs whose elements each sum L = `reduction_length`
// products (ConvReductionLength). cuDNN accumulates in fp32, but engines with the
// REDUCED_PRECISION_REDUCTION note may round partial sums (split reductions) to the output type,
// and DOWN_CONVERT_INPUTS engines round fp32 inputs to tf32. With u the unit of that rounding
// (half an ulp: bf16 2^-8, fp16 and tf32 2^-11, e4m3 2^-4, e5m2 2^-3) and a reduction split
// pairwise with every partial sum rounded, level d holds 2^d partials of about rms/2^(d/2) each
// (random signs), so each of the levels = 1 + log2(L) levels adds about u * rms in quadrature:
//   element = max(GEMM's element bound, 4 u sqrt(levels))  (a 6-sigma tail, rounded up)
//   rms     = max(GEMM's rms bound,     1.5 u sqrt(levels)) (2.6x the modelled rms)
// bf16 at L = 2304 (3x3, C/G = 256): element 5.5e-2, rms 2.0e-2; at L = 1e5 (bwd_weight, N = 32
// at 56x56): 6.6e-2 and 2.5e-2. A wrong element (a missed tap, a wrong channel group or tile) is
// off by O(1) of the output's scale, 5x or more above these. fp32 outputs get tf32's bounds. An
// engine accumulating a long reduction sequentially in 16 bits (error ~ u sqrt(L)) is not
// covered: no bound passes it and still fails wrong elements.
Tolerance ConvTolerance(DataType dtype, int64_t reduction_length);
// Products summed into one element of the written operand: (C/G)*Z*Y*X for fwd, (K/G)*Z*Y*X for
// bwd_data (an upper bound: strides skip taps), N*Do*Ho*Wo for bwd_weight. The problem must be
// valid.
int64_t ConvReductionLength(const ConvProblem& problem);
// The tolerance for `problem`'s output; kInvalidArgument for an invalid problem.
StatusOr<Tolerance> ToleranceFor(const Problem& problem);

// The outcome of comparing one output with the reference.
struct CheckResult {
  bool passed = false;
  int64_t elements = 0;
  int64_t bad_elements = 0;       // outside the element bound, or not finite
  int64_t non_finite = 0;         // NaN or Inf elements (an unwritten, poisoned element is NaN)
  int64_t first_bad_index = -1;   // flat index of the first bad element in the output; -1: none
  double max_error = 0;           // largest element error (Tolerance::element's measure); inf
                                  // when an element is not finite
  double relative_rms_error = 0;  // ||out - ref|| / ||ref|| over the finite elements
  Tolerance tolerance;
  // "max err 2.1e-03 (tol 1.6e-02), rel rms 1.2e-03 (tol 1.0e-02)[, 3 non-finite, first bad
  // element 17]".
  std::string ToString() const;
};

// The byte every output is filled with before a launch: NaN in fp32, fp16, bf16, e4m3 and e5m2.
inline constexpr uint8_t kPoisonByte = 0xFF;

// `bytes` as elements of `type`, widened to double (fp32, fp16, bf16, e4m3, e5m2, int8, int32;
// tf32 is stored as fp32). kInvalidArgument when the size is not a whole number of elements.
StatusOr<std::vector<double>> DecodeElements(std::span<const uint8_t> bytes, DataType type);

// Fills `bytes` with random elements of `type`, never zero (zeros can run faster than real data)
// and magnitudes about 1/16 to 2 with random signs, so products stay far from overflow at any K.
// Integer types get random non-zero values in [-4, 4].
void FillRandomNonZero(std::span<uint8_t> bytes, DataType type, std::mt19937_64& rng);

// Compares `output` (elements of `type`) with `reference` (same count). Pure CPU.
CheckResult CompareWithReference(std::span<const uint8_t> output, DataType type,
                                 std::span<const double> reference, const Tolerance& tolerance);

// The GEMM on the host in double precision, over decoded operands (a: batch*m*k, b: batch*k*n,
// c0: C's initial values, batch*m*n; empty when beta == 0), laid out as the problem says. Returns
// C (batch*m*n) in the problem's C order. For tests and cross-checks of the device reference.
std::vector<double> HostGemmReference(const GemmProblem& problem, std::span<const double> a,
                                      std::span<const double> b, std::span<const double> c0);

// The grouped convolution on the host in double precision (cross-correlation: no filter flip, as
// cuDNN's CROSS_CORRELATION mode and PyTorch compute it), over decoded operands laid out as
// ConvOperandSpecs describes them: x (n, di, hi, wi, c), w (k, z, y, x, c/g), y (n, do, ho, wo, k),
// channel c of group c / (c/g), output channel k of group k / (k/g). Returns the operand the
// direction writes (fwd: y from x and w; bwd_data: x from y and w; bwd_weight: w from x and y);
// that operand's input is not read and may be empty. kInvalidArgument for an invalid problem or
// an operand of the wrong size; kUnimplemented for channels-first problems. For tests and
// cross-checks of the device reference.
StatusOr<std::vector<double>> HostConvReference(const ConvProblem& problem,
                                                std::span<const double> x,
                                                std::span<const double> w,
                                                std::span<const double> y);

// The GEMM shapes a config is checked on, as problems of the given dtypes and layout: M = 1 and
// M < 16 (decode), sizes prime to every tile, K not a multiple of any tile_k and odd K (alignment
// 1), exact multiples, alpha/beta != 1/0, and a batch of 3.
std::vector<GemmProblem> GemmCheckProblems(DataType input, DataType output, GemmLayout layout);

// The same product with C's order flipped: C^T = B^T A^T, so m and n swap, A' is B with the
// other order, B' is A with the other order (operands a' = b, b' = a). Lets a provider that
// writes only column-major C time a row-major-C problem: same bytes, same FLOPs.
GemmProblem TransposedGemm(const GemmProblem& problem);

// Fills `bytes` bytes of device memory at `device_address` with FillRandomNonZero elements: one
// random block of at most 8 MiB, repeated (fast even for multi-GiB operands). Needs a GPU.
Status FillDeviceRandom(void* device_address, int64_t bytes, DataType type, std::mt19937_64& rng);

// Inputs, outputs and the reference result of one problem on the device, reused across configs.
class VerifyCase {
 public:
  virtual ~VerifyCase() = default;
  virtual const Problem& problem() const = 0;
  // The operands the case allocated, as the provider described them.
  virtual std::span<const OperandSpec> operands() const = 0;
  // Restores every written operand (poison, or C's initial values when it is also read),
  // launches `kernel` on the case's buffers, waits, and compares each written operand with the
  // reference. An error Status: the launch failed or the kernel faulted (a fault can leave the
  // CUDA context unusable: callers stop there).
  virtual StatusOr<CheckResult> Check(PreparedKernel& kernel) = 0;
};

// Where and how to verify.
struct VerifyOptions {
  int device = 0;     // CUDA device ordinal
  uint64_t seed = 1;  // inputs of the n-th case come from seed + n
};

// The reference kernels (compiled once with NVRTC, double accumulation) and the cases made with
// them. One per thread; it uses the CUDA runtime's current device.
class Verifier {
 public:
  virtual ~Verifier() = default;
  // kUnavailable without a GPU or driver.
  static StatusOr<std::unique_ptr<Verifier>> Create(const VerifyOptions& options = {});
  // Allocates `operands` (a provider's Operands(problem)), fills the inputs with random non-zero
  // data and computes the reference (a convolution's inputs are filled on the device with
  // FillDeviceRandom, as the bench fills them). kInvalidArgument for an invalid problem or
  // operands that are not the problem's; kUnimplemented for a channels-first convolution (the
  // operands are described channels-last).
  virtual StatusOr<std::unique_ptr<VerifyCase>> MakeCase(const Problem& problem,
                                                         std::span<const OperandSpec> operands) = 0;
};

// provider.Prepare(case.problem(), config), then case.Check. Prepare's kCannotImplement (the
// config cannot run this problem) is returned as is, so callers can count it as skipped.
StatusOr<CheckResult> CheckConfig(KernelProvider& provider, const KernelConfig& config,
                                  VerifyCase& c);

// Device buffers for timing: one per operand, random non-zero data, and a workspace. Rotating
// operands hold several copies ("sets") of every operand, so launches cycling through them read
// memory no earlier launch left in L2 (METHOD.md: rotate past L2); every set shares one
// workspace.
class DeviceOperands {
 public:
  virtual ~DeviceOperands() = default;
  static StatusOr<std::unique_ptr<DeviceOperands>> Create(std::span<const OperandSpec> operands,
                                                          int64_t workspace_bytes, uint64_t seed);
  // Sets enough that together they hold at least `rotate_bytes` (RotatingSetCount).
  static StatusOr<std::unique_ptr<DeviceOperands>> CreateRotating(
      std::span<const OperandSpec> operands, int64_t workspace_bytes, uint64_t seed,
      int64_t rotate_bytes, int64_t max_sets = 512);
  virtual const KernelOperands& operands() const = 0;  // the first set
  virtual size_t set_count() const = 0;
  virtual const KernelOperands& set(size_t i) const = 0;  // i modulo the count
  virtual int64_t rotating_bytes() const = 0;             // bytes of all sets' operands
};

// The seed of a problem's operand data, fixed so every run times the same bytes: for a GEMM the
// one the bench has always used, for other problems FNV-1a over the problem's text. CPU only.
uint64_t OperandSeed(const Problem& problem);

}  // namespace kselect::verify
