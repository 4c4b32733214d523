// The device side of verification: the NVRTC-compiled reference (double accumulation over the
// exact inputs), the cases run through any provider's PreparedKernel, device operands for timing
// and the median of event-timed launches.
#include <algorithm>
#include <cstring>
#include <utility>

#include "cuda/driver_api.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/runtime.h"
#include "kselect/timing.h"
#include "kselect/verify.h"

namespace kselect::verify {
namespace {

// One thread per output element (grid-stride), inputs as floats (every dtype kselect runs is
// exactly a float), products accumulated in double: the reference is exact to ~1e-16 for the
// checked sizes, so a comparison measures the kernel's own error alone.
constexpr const char* kReferenceSource = R"CUDA(
extern "C" __global__ void reference_gemm(const float* a, const float* b, const double* c0,
    double* c, long long m, long long n, long long k, long long batch, int a_row, int b_row,
    int c_row, double alpha, double beta) {
  const long long total = m * n * batch;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long z = i / (m * n);
    const long long rc = i % (m * n);
    const long long row = rc / n, col = rc % n;
    const float* az = a + z * m * k;
    const float* bz = b + z * k * n;
    double acc = 0.0;
    for (long long l = 0; l < k; ++l) {
      const double x = az[a_row ? row * k + l : l * m + row];
      const double y = bz[b_row ? l * n + col : col * k + l];
      acc = fma(x, y, acc);
    }
    const long long o = z * m * n + (c_row ? row * n + col : col * m + row);
    c[o] = alpha * acc + (beta != 0.0 ? beta * c0[o] : 0.0);
  }
}

// The convolution references read the operands as stored (the bench's own device-filled bytes),
// decoding each element to double, so no widened copy of a multi-GB input is made.
// Dtype codes: ConvTypeCode in device_checks.cpp.
__device__ double decode_float(unsigned bits, int exponent_bits, int mantissa_bits, int bias,
                               bool finite_only) {
  const unsigned e = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const unsigned m = bits & ((1u << mantissa_bits) - 1);
  const bool negative = (bits >> (exponent_bits + mantissa_bits)) & 1;
  double v;
  if (finite_only ? (e == (1u << exponent_bits) - 1 && m == (1u << mantissa_bits) - 1)
                  : e == (1u << exponent_bits) - 1) {
    v = (finite_only || m != 0) ? __longlong_as_double(0x7ff8000000000000ll)
                                : __longlong_as_double(0x7ff0000000000000ll);
  } else if (e == 0) {
    v = ldexp((double)m, 1 - bias - mantissa_bits);
  } else {
    v = ldexp((double)((1u << mantissa_bits) + m), (int)e - bias - mantissa_bits);
  }
  return negative ? -v : v;
}

__device__ double load(const void* p, long long i, int type) {
  switch (type) {
    case 0: return ((const float*)p)[i];
    case 1: return decode_float(((const unsigned short*)p)[i], 5, 10, 15, false);
    case 2: return __uint_as_float((unsigned)((const unsigned short*)p)[i] << 16);
    case 3: return decode_float(((const unsigned char*)p)[i], 4, 3, 7, true);
    case 4: return decode_float(((const unsigned char*)p)[i], 5, 2, 15, false);
    case 5: return ((const signed char*)p)[i];
    default: return ((const int*)p)[i];
  }
}

// Every size of a convolution problem (ConvShape in device_checks.cpp, field for field).
struct ConvShape {
  long long n, c, k, g, di, hi, wi, z, y, x, d_o, ho, wo;
  long long sd, sh, sw, pd, ph, pw, dd, dh, dw;
};

__device__ long long x_index(const ConvShape& s, long long n, long long d, long long h, long long w,
                             long long c) {
  return (((n * s.di + d) * s.hi + h) * s.wi + w) * s.c + c;
}
__device__ long long w_index(const ConvShape& s, long long k, long long z, long long y, long long x,
                             long long c) {
  return (((k * s.z + z) * s.y + y) * s.x + x) * (s.c / s.g) + c;
}
__device__ long long y_index(const ConvShape& s, long long n, long long d, long long h, long long w,
                             long long k) {
  return (((n * s.d_o + d) * s.ho + h) * s.wo + w) * s.k + k;
}
// The output position reading input `in` through tap `tap`, or -1 (between strides, outside).
__device__ long long output_of(long long in, long long tap, long long stride, long long pad,
                              long long dilation, long long out_size) {
  const long long t = in + pad - tap * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out_size) return -1;
  return t / stride;
}

// y from x and w: one thread per y element (k innermost, so a warp shares its x reads).
extern "C" __global__ void reference_conv_fwd(const void* x, const void* w, int type, ConvShape s,
                                              double* y) {
  const long long cg = s.c / s.g, kg = s.k / s.g;
  const long long total = s.n * s.d_o * s.ho * s.wo * s.k;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i;
    const long long k = r % s.k; r /= s.k;
    const long long ow = r % s.wo; r /= s.wo;
    const long long oh = r % s.ho; r /= s.ho;
    const long long od = r % s.d_o;
    const long long n = r / s.d_o;
    const long long c0 = k / kg * cg;
    double acc = 0.0;
    for (long long fz = 0; fz < s.z; ++fz) {
      const long long id = od * s.sd - s.pd + fz * s.dd;
      if (id < 0 || id >= s.di) continue;
      for (long long fy = 0; fy < s.y; ++fy) {
        const long long ih = oh * s.sh - s.ph + fy * s.dh;
        if (ih < 0 || ih >= s.hi) continue;
        for (long long fx = 0; fx < s.x; ++fx) {
          const long long iw = ow * s.sw - s.pw + fx * s.dw;
          if (iw < 0 || iw >= s.wi) continue;
          const long long xb = x_index(s, n, id, ih, iw, c0), wb = w_index(s, k, fz, fy, fx, 0);
          for (long long cc = 0; cc < cg; ++cc) {
            acc = fma(load(x, xb + cc, type), load(w, wb + cc, type), acc);
          }
        }
      }
    }
    y[i] = acc;
  }
}

// dx from dy and w: one thread per dx element (c innermost, so a warp reads w contiguously).
extern "C" __global__ void reference_conv_bwd_data(const void* dy, const void* w, int type,
                                                   ConvShape s, double* dx) {
  const long long cg = s.c / s.g, kg = s.k / s.g;
  const long long total = s.n * s.di * s.hi * s.wi * s.c;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    long long r = i;
    const long long c = r % s.c; r /= s.c;
    const long long iw = r % s.wi; r /= s.wi;
    const long long ih = r % s.hi; r /= s.hi;
    const long long id = r % s.di;
    const long long n = r / s.di;
    const long long k0 = c / cg * kg, cc = c % cg;
    double acc = 0.0;
    for (long long fz = 0; fz < s.z; ++fz) {
      const long long od = output_of(id, fz, s.sd, s.pd, s.dd, s.d_o);
      if (od < 0) continue;
      for (long long fy = 0; fy < s.y; ++fy) {
        const long long oh = output_of(ih, fy, s.sh, s.ph, s.dh, s.ho);
        if (oh < 0) continue;
        for (long long fx = 0; fx < s.x; ++fx) {
          const long long ow = output_of(iw, fx, s.sw, s.pw, s.dw, s.wo);
          if (ow < 0) continue;
          const long long yb = y_index(s, n, od, oh, ow, k0);
          for (long long kk = 0; kk < kg; ++kk) {
            const long long wk = w_index(s, k0 + kk, fz, fy, fx, cc);
            acc = fma(load(dy, yb + kk, type), load(w, wk, type), acc);
          }
        }
      }
    }
    dx[i] = acc;
  }
}

// dw from x and dy. The sum over N*Do*Ho*Wo can be 1e5 terms or more while dw has few elements
// (depthwise), so the sum is split: thread (split, element) sums `chunk` consecutive output
// positions into partial[split * elements + element], and reference_sum_splits adds the splits
// in order (deterministic; with one split the partial is dw itself).
extern "C" __global__ void reference_conv_bwd_weight(const void* x, const void* dy, int type,
                                                     ConvShape s, long long splits, long long chunk,
                                                     double* partial) {
  const long long cg = s.c / s.g, kg = s.k / s.g;
  const long long elements = s.k * s.z * s.y * s.x * cg;
  const long long positions = s.n * s.d_o * s.ho * s.wo;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < elements * splits;
       i += (long long)gridDim.x * blockDim.x) {
    const long long e = i % elements, split = i / elements;
    long long r = e;
    const long long cc = r % cg; r /= cg;
    const long long fx = r % s.x; r /= s.x;
    const long long fy = r % s.y; r /= s.y;
    const long long fz = r % s.z;
    const long long k = r / s.z;
    const long long c = k / kg * cg + cc;
    const long long begin = split * chunk;
    const long long end = min(positions, begin + chunk);
    // The position's coordinates advance with carries: no divisions in the loop.
    long long ow = begin % s.wo, oh = begin / s.wo % s.ho, od = begin / (s.wo * s.ho) % s.d_o;
    long long n = begin / (s.wo * s.ho * s.d_o);
    double acc = 0.0;
    for (long long q = begin; q < end; ++q) {
      const long long id = od * s.sd - s.pd + fz * s.dd;
      const long long ih = oh * s.sh - s.ph + fy * s.dh;
      const long long iw = ow * s.sw - s.pw + fx * s.dw;
      if (id >= 0 && id < s.di && ih >= 0 && ih < s.hi && iw >= 0 && iw < s.wi) {
        acc = fma(load(x, x_index(s, n, id, ih, iw, c), type), load(dy, q * s.k + k, type), acc);
      }
      if (++ow == s.wo) {
        ow = 0;
        if (++oh == s.ho) {
          oh = 0;
          if (++od == s.d_o) {
            od = 0;
            ++n;
          }
        }
      }
    }
    partial[i] = acc;
  }
}

extern "C" __global__ void reference_sum_splits(const double* partial, long long splits,
                                                long long elements, double* out) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < elements;
       i += (long long)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (long long split = 0; split < splits; ++split) acc += partial[split * elements + i];
    out[i] = acc;
  }
}
)CUDA";

// Owns the loaded reference module.
class ReferenceModule {
 public:
  ReferenceModule() = default;
  ReferenceModule(const ReferenceModule&) = delete;
  ReferenceModule& operator=(const ReferenceModule&) = delete;
  ~ReferenceModule() {
    if (module_ != nullptr) api_->module_unload(module_);
  }

  Status Load() {
    KSELECT_ASSIGN_OR_RETURN(api_, cuda::GetDriverApi());
    KSELECT_ASSIGN_OR_RETURN(
        const cuda::CompiledModule compiled,
        cuda::CompileModule(kReferenceSource, "reference.cu", cuda::DefaultCompileOptions(), {}));
    if (const CUresult r = api_->module_load_data(&module_, compiled.cubin.data());
        r != CUDA_SUCCESS) {
      module_ = nullptr;
      return InternalError("cannot load the reference kernel: " + cuda::DriverErrorText(*api_, r));
    }
    const std::pair<CUfunction*, const char*> functions[] = {
        {&gemm_, "reference_gemm"},
        {&conv_fwd_, "reference_conv_fwd"},
        {&conv_bwd_data_, "reference_conv_bwd_data"},
        {&conv_bwd_weight_, "reference_conv_bwd_weight"},
        {&sum_splits_, "reference_sum_splits"}};
    for (const auto& [function, name] : functions) {
      if (const CUresult r = api_->module_get_function(function, module_, name);
          r != CUDA_SUCCESS) {
        return InternalError(std::string("no ") + name +
                             " in the reference module: " + cuda::DriverErrorText(*api_, r));
      }
    }
    return Status::Ok();
  }

  // c = alpha * op(a) op(b) + beta * c0 on the device (c0 read only when beta != 0); waits.
  Status Gemm(const GemmProblem& p, const void* a, const void* b, const void* c0, void* c) const {
    long long m = p.m, n = p.n, k = p.k, batch = p.batch;
    int a_row = p.layout.a == MatrixOrder::kRowMajor;
    int b_row = p.layout.b == MatrixOrder::kRowMajor;
    int c_row = p.layout.c == MatrixOrder::kRowMajor;
    double alpha = p.alpha, beta = p.beta;
    void* args[] = {&a, &b, &c0, &c, &m, &n, &k, &batch, &a_row, &b_row, &c_row, &alpha, &beta};
    KSELECT_RETURN_IF_ERROR(LaunchGridStride(gemm_, args, 1024 * 256));
    return cuda::RuntimeStatus(cudaDeviceSynchronize(), "reference kernel");
  }

  // The operand `p.direction` writes, as doubles in `out` (its ConvOperandSpecs layout), from
  // the two operands it reads (`x`, `w`, `y` as stored, elements of p.dtype; the written one is
  // not read); waits.
  Status Conv(const ConvProblem& p, const void* x, const void* w, const void* y,
              double* out) const {
    ConvShape shape{p.n,     p.c,          p.k,          p.g,         p.di,    p.hi,
                    p.wi,    p.z,          p.y,          p.x,         p.Do(),  p.Ho(),
                    p.Wo(),  p.stride_d,   p.stride_h,   p.stride_w,  p.pad_d, p.pad_h,
                    p.pad_w, p.dilation_d, p.dilation_h, p.dilation_w};
    int type = ConvTypeCode(p.dtype);
    switch (p.direction) {
      case ConvDirection::kForward: {
        void* args[] = {&x, &w, &type, &shape, &out};
        KSELECT_RETURN_IF_ERROR(
            LaunchGridStride(conv_fwd_, args, p.n * p.Do() * p.Ho() * p.Wo() * p.k));
        break;
      }
      case ConvDirection::kBackwardData: {
        void* args[] = {&y, &w, &type, &shape, &out};
        KSELECT_RETURN_IF_ERROR(
            LaunchGridStride(conv_bwd_data_, args, p.n * p.di * p.hi * p.wi * p.c));
        break;
      }
      case ConvDirection::kBackwardWeight: {
        long long elements = p.k * p.z * p.y * p.x * (p.c / p.g);
        const long long positions = p.n * p.Do() * p.Ho() * p.Wo();
        // Enough (split, element) threads to fill the GPU, each summing at least 256 positions.
        constexpr long long kThreads = 1 << 21, kMinChunk = 256;
        long long splits = std::clamp((kThreads + elements - 1) / elements, 1ll,
                                      std::max(1ll, positions / kMinChunk));
        long long chunk = (positions + splits - 1) / splits;
        splits = (positions + chunk - 1) / chunk;  // no empty split
        cuda::DeviceBuffer partial;
        double* target = out;
        if (splits > 1) {
          KSELECT_RETURN_IF_ERROR(
              partial.Reserve(static_cast<int64_t>(splits * elements * sizeof(double))));
          target = static_cast<double*>(partial.data());
        }
        void* args[] = {&x, &y, &type, &shape, &splits, &chunk, &target};
        KSELECT_RETURN_IF_ERROR(LaunchGridStride(conv_bwd_weight_, args, splits * elements));
        if (splits > 1) {
          const double* summed = target;
          void* sum_args[] = {&summed, &splits, &elements, &out};
          KSELECT_RETURN_IF_ERROR(LaunchGridStride(sum_splits_, sum_args, elements));
        }
        // Waits here: `partial` is freed on return.
        return cuda::RuntimeStatus(cudaDeviceSynchronize(), "convolution reference kernel");
      }
    }
    return cuda::RuntimeStatus(cudaDeviceSynchronize(), "convolution reference kernel");
  }

 private:
  // The kernel's layout of ConvShape (every field a long long: no padding to disagree on).
  struct ConvShape {
    long long n, c, k, g, di, hi, wi, z, y, x, d_o, ho, wo;
    long long sd, sh, sw, pd, ph, pw, dd, dh, dw;
  };

  // The kernels' dtype codes (load() in kReferenceSource).
  static int ConvTypeCode(DataType type) {
    switch (type) {
      case DataType::kF32:
      case DataType::kTF32:
        return 0;
      case DataType::kF16:
        return 1;
      case DataType::kBF16:
        return 2;
      case DataType::kF8E4M3:
        return 3;
      case DataType::kF8E5M2:
        return 4;
      case DataType::kI8:
        return 5;
      case DataType::kI32:
        return 6;
    }
    return 6;
  }

  // Launches a grid-stride kernel with enough 256-thread blocks for `threads` (at most 8192
  // blocks: the loops cover the rest).
  Status LaunchGridStride(CUfunction function, void** args, int64_t threads) const {
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(std::clamp<int64_t>((threads + 255) / 256, 1, 8192));
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    if (const CUresult r = api_->launch_kernel_ex(&config, function, args, nullptr);
        r != CUDA_SUCCESS) {
      return InternalError("reference launch failed: " + cuda::DriverErrorText(*api_, r));
    }
    return Status::Ok();
  }

  const cuda::DriverApi* api_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction gemm_ = nullptr;
  CUfunction conv_fwd_ = nullptr;
  CUfunction conv_bwd_data_ = nullptr;
  CUfunction conv_bwd_weight_ = nullptr;
  CUfunction sum_splits_ = nullptr;
};

Status Upload(cuda::DeviceBuffer& buffer, const void* host, size_t bytes) {
  KSELECT_RETURN_IF_ERROR(buffer.Reserve(static_cast<int64_t>(bytes)));
  if (bytes == 0) return Status::Ok();
  return cuda::RuntimeStatus(cudaMemcpy(buffer.data(), host, bytes, cudaMemcpyHostToDevice),
                             "cudaMemcpy(host to device)");
}

// The index of the operand named `name`, checked against what the problem implies.
StatusOr<size_t> FindOperand(std::span<const OperandSpec> operands, const OperandSpec& expected) {
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].name != expected.name) continue;
    if (operands[i].bytes != expected.bytes || operands[i].dtype != expected.dtype ||
        operands[i].access != expected.access) {
      return InvalidArgumentError("operand " + expected.name + " is described as " +
                                  std::to_string(operands[i].bytes) + " bytes of " +
                                  std::string(DataTypeName(operands[i].dtype)) + ", " +
                                  std::string(OperandAccessName(operands[i].access)) +
                                  "; the problem needs " + std::to_string(expected.bytes) +
                                  " bytes of " + std::string(DataTypeName(expected.dtype)) + ", " +
                                  std::string(OperandAccessName(expected.access)));
    }
    return i;
  }
  return InvalidArgumentError("the operands have no '" + expected.name + "'");
}

// One operand of a case: its device buffer and the host bytes it starts each check with.
struct CaseOperand {
  OperandSpec spec;
  cuda::DeviceBuffer buffer;
  std::vector<uint8_t> initial;   // inputs: the random data; outputs: poison or C's initial values
  std::vector<double> reference;  // written operands: the expected result
};

class DeviceVerifyCase final : public VerifyCase {
 public:
  DeviceVerifyCase(Problem problem, std::vector<OperandSpec> specs, Tolerance tolerance)
      : problem_(std::move(problem)), specs_(std::move(specs)), tolerance_(tolerance) {
    operands_.resize(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) operands_[i].spec = specs_[i];
  }

  const Problem& problem() const override { return problem_; }
  std::span<const OperandSpec> operands() const override { return specs_; }
  std::vector<CaseOperand>& mutable_operands() { return operands_; }

  StatusOr<CheckResult> Check(PreparedKernel& kernel) override {
    KernelOperands launch;
    for (CaseOperand& o : operands_) {
      if (o.spec.access != OperandAccess::kRead) {
        KSELECT_RETURN_IF_ERROR(Upload(o.buffer, o.initial.data(), o.initial.size()));
      }
      launch.buffers.push_back(o.buffer.data());
    }
    const int64_t workspace = kernel.WorkspaceBytes();
    if (workspace > 0) {
      KSELECT_RETURN_IF_ERROR(workspace_.Reserve(workspace));
      launch.workspace = workspace_.data();
      launch.workspace_bytes = workspace_.bytes();
    }
    KSELECT_RETURN_IF_ERROR(kernel.Launch(launch, nullptr));
    KSELECT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
    CheckResult combined;
    combined.passed = true;
    combined.tolerance = tolerance_;
    int64_t offset = 0;  // flat index of an output's first element among all outputs
    for (const CaseOperand& o : operands_) {
      if (o.spec.access == OperandAccess::kRead) continue;
      std::vector<uint8_t> out(o.initial.size());
      KSELECT_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(out.data(), o.buffer.data(), out.size(), cudaMemcpyDeviceToHost));
      const CheckResult r = CompareWithReference(out, o.spec.dtype, o.reference, tolerance_);
      combined.passed = combined.passed && r.passed;
      if (combined.first_bad_index < 0 && r.first_bad_index >= 0)
        combined.first_bad_index = offset + r.first_bad_index;
      combined.elements += r.elements;
      combined.bad_elements += r.bad_elements;
      combined.non_finite += r.non_finite;
      combined.max_error = std::max(combined.max_error, r.max_error);
      combined.relative_rms_error = std::max(combined.relative_rms_error, r.relative_rms_error);
      offset += r.elements;
    }
    return combined;
  }

 private:
  Problem problem_;
  std::vector<OperandSpec> specs_;
  Tolerance tolerance_;
  std::vector<CaseOperand> operands_;
  cuda::DeviceBuffer workspace_;
};

class DeviceVerifier final : public Verifier {
 public:
  explicit DeviceVerifier(const VerifyOptions& options) : options_(options) {}

  Status Init() {
    KSELECT_RETURN_IF_ERROR(cuda::UseDevice(options_.device));
    return reference_.Load();
  }

  StatusOr<std::unique_ptr<VerifyCase>> MakeCase(const Problem& problem,
                                                 std::span<const OperandSpec> operands) override {
    KSELECT_ASSIGN_OR_RETURN(const Tolerance tolerance, ToleranceFor(problem));
    KSELECT_RETURN_IF_ERROR(ValidateProblem(problem));
    for (const OperandSpec& spec : operands) {
      if (spec.alignment > 256) {
        return InvalidArgumentError("operand " + spec.name + " needs " +
                                    std::to_string(spec.alignment) +
                                    "-byte alignment; device allocations give 256");
      }
    }
    auto c = std::make_unique<DeviceVerifyCase>(
        problem, std::vector<OperandSpec>(operands.begin(), operands.end()), tolerance);
    std::mt19937_64 rng(options_.seed + cases_made_++);
    if (const auto* conv = std::get_if<ConvProblem>(&problem)) {
      KSELECT_RETURN_IF_ERROR(ComputeConvReference(*conv, c->mutable_operands(), rng));
      return std::unique_ptr<VerifyCase>(std::move(c));
    }
    const GemmProblem& gemm = std::get<GemmProblem>(problem);
    for (CaseOperand& o : c->mutable_operands()) {
      o.initial.assign(static_cast<size_t>(o.spec.bytes), kPoisonByte);
      if (o.spec.access != OperandAccess::kWrite) FillRandomNonZero(o.initial, o.spec.dtype, rng);
      KSELECT_RETURN_IF_ERROR(Upload(o.buffer, o.initial.data(), o.initial.size()));
    }
    KSELECT_RETURN_IF_ERROR(ComputeGemmReference(gemm, c->mutable_operands()));
    return std::unique_ptr<VerifyCase>(std::move(c));
  }

 private:
  // Checks the operands against ConvOperandSpecs before anything is allocated, fills x, w, y
  // (inputs random on the device, the written one poisoned), then computes the reference of the
  // written one.
  Status ComputeConvReference(const ConvProblem& p, std::vector<CaseOperand>& operands,
                              std::mt19937_64& rng) {
    if (p.layout != ConvLayout::kChannelsLast) {
      return UnimplementedError(
          "the convolution reference reads channels-last operands (ConvOperandSpecs) only: " +
          p.ToString());
    }
    const std::vector<OperandSpec> expected = ConvOperandSpecs(p, 1);
    std::vector<OperandSpec> specs;
    for (const CaseOperand& o : operands) specs.push_back(o.spec);
    if (specs.size() != expected.size()) {
      return InvalidArgumentError("a convolution takes 3 operands (x, w, y), got " +
                                  std::to_string(specs.size()));
    }
    size_t index[3];  // x, w, y
    for (size_t i = 0; i < expected.size(); ++i) {
      KSELECT_ASSIGN_OR_RETURN(index[i], FindOperand(specs, expected[i]));
    }
    CaseOperand* written = nullptr;
    for (CaseOperand& o : operands) {
      if (o.spec.access == OperandAccess::kRead) {
        KSELECT_RETURN_IF_ERROR(o.buffer.Reserve(o.spec.bytes));
        KSELECT_RETURN_IF_ERROR(FillDeviceRandom(o.buffer.data(), o.spec.bytes, o.spec.dtype, rng));
      } else {
        written = &o;
        o.initial.assign(static_cast<size_t>(o.spec.bytes), kPoisonByte);
        KSELECT_RETURN_IF_ERROR(Upload(o.buffer, o.initial.data(), o.initial.size()));
      }
    }
    const size_t elements = static_cast<size_t>(written->spec.bytes / (DataTypeBits(p.dtype) / 8));
    cuda::DeviceBuffer out;
    KSELECT_RETURN_IF_ERROR(out.Reserve(static_cast<int64_t>(elements * sizeof(double))));
    KSELECT_RETURN_IF_ERROR(
        reference_.Conv(p, operands[index[0]].buffer.data(), operands[index[1]].buffer.data(),
                        operands[index[2]].buffer.data(), static_cast<double*>(out.data())));
    written->reference.resize(elements);
    return cuda::RuntimeStatus(cudaMemcpy(written->reference.data(), out.data(),
                                          elements * sizeof(double), cudaMemcpyDeviceToHost),
                               "cudaMemcpy(reference)");
  }

  Status ComputeGemmReference(const GemmProblem& p, std::vector<CaseOperand>& operands) {
    const std::vector<OperandSpec> expected = GemmOperandSpecs(p, 1);
    std::vector<OperandSpec> specs;
    for (const CaseOperand& o : operands) specs.push_back(o.spec);
    KSELECT_ASSIGN_OR_RETURN(const size_t ia, FindOperand(specs, expected[0]));
    KSELECT_ASSIGN_OR_RETURN(const size_t ib, FindOperand(specs, expected[1]));
    KSELECT_ASSIGN_OR_RETURN(const size_t ic, FindOperand(specs, expected[2]));
    if (specs.size() != 3) {
      return InvalidArgumentError("a GEMM takes 3 operands, got " + std::to_string(specs.size()));
    }
    auto as_floats = [](const CaseOperand& o) -> StatusOr<std::vector<float>> {
      KSELECT_ASSIGN_OR_RETURN(const std::vector<double> wide,
                               DecodeElements(o.initial, o.spec.dtype));
      return std::vector<float>(wide.begin(), wide.end());
    };
    KSELECT_ASSIGN_OR_RETURN(const std::vector<float> a, as_floats(operands[ia]));
    KSELECT_ASSIGN_OR_RETURN(const std::vector<float> b, as_floats(operands[ib]));
    std::vector<double> c0;
    if (p.beta != 0.0) {
      KSELECT_ASSIGN_OR_RETURN(c0, DecodeElements(operands[ic].initial, p.dtype_c));
    }
    const size_t elements_c = static_cast<size_t>(p.batch * p.m * p.n);
    cuda::DeviceBuffer da, db, dc0, dc;
    KSELECT_RETURN_IF_ERROR(Upload(da, a.data(), a.size() * sizeof(float)));
    KSELECT_RETURN_IF_ERROR(Upload(db, b.data(), b.size() * sizeof(float)));
    KSELECT_RETURN_IF_ERROR(Upload(dc0, c0.data(), c0.size() * sizeof(double)));
    KSELECT_RETURN_IF_ERROR(dc.Reserve(static_cast<int64_t>(elements_c * sizeof(double))));
    KSELECT_RETURN_IF_ERROR(reference_.Gemm(p, da.data(), db.data(), dc0.data(), dc.data()));
    std::vector<double>& reference = operands[ic].reference;
    reference.resize(elements_c);
    return cuda::RuntimeStatus(cudaMemcpy(reference.data(), dc.data(), elements_c * sizeof(double),
                                          cudaMemcpyDeviceToHost),
                               "cudaMemcpy(reference)");
  }

  VerifyOptions options_;
  ReferenceModule reference_;
  uint64_t cases_made_ = 0;
};

class OwnedDeviceOperands final : public DeviceOperands {
 public:
  const KernelOperands& operands() const override { return sets_.front().view; }
  size_t set_count() const override { return sets_.size(); }
  const KernelOperands& set(size_t i) const override { return sets_[i % sets_.size()].view; }
  int64_t rotating_bytes() const override { return rotating_bytes_; }

  // `count` copies of every operand (one random stream over them all, set by set), one workspace.
  Status Allocate(std::span<const OperandSpec> specs, int64_t workspace_bytes, uint64_t seed,
                  int64_t count) {
    std::mt19937_64 rng(seed);
    int64_t set_bytes = 0;
    for (const OperandSpec& spec : specs) {
      // cudaMalloc aligns to 256 bytes; a provider asking for more cannot be served.
      if (spec.alignment > 256) {
        return InvalidArgumentError("operand " + spec.name + " needs " +
                                    std::to_string(spec.alignment) + "-byte alignment");
      }
      set_bytes += spec.bytes;
    }
    if (workspace_bytes > 0) KSELECT_RETURN_IF_ERROR(workspace_.Reserve(workspace_bytes));
    for (int64_t s = 0; s < count; ++s) {
      OperandSet& set = sets_.emplace_back();
      for (const OperandSpec& spec : specs) {
        cuda::DeviceBuffer& buffer = set.buffers.emplace_back();
        KSELECT_RETURN_IF_ERROR(buffer.Reserve(spec.bytes));
        KSELECT_RETURN_IF_ERROR(FillDeviceRandom(buffer.data(), spec.bytes, spec.dtype, rng));
        set.view.buffers.push_back(buffer.data());
      }
      if (workspace_bytes > 0) {
        set.view.workspace = workspace_.data();
        set.view.workspace_bytes = workspace_bytes;
      }
    }
    rotating_bytes_ = count * set_bytes;
    return Status::Ok();
  }

 private:
  struct OperandSet {
    std::vector<cuda::DeviceBuffer> buffers;
    KernelOperands view;
  };
  std::vector<OperandSet> sets_;
  cuda::DeviceBuffer workspace_;
  int64_t rotating_bytes_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Verifier>> Verifier::Create(const VerifyOptions& options) {
  auto verifier = std::make_unique<DeviceVerifier>(options);
  KSELECT_RETURN_IF_ERROR(verifier->Init());
  return std::unique_ptr<Verifier>(std::move(verifier));
}

StatusOr<CheckResult> CheckConfig(KernelProvider& provider, const KernelConfig& config,
                                  VerifyCase& c) {
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> kernel,
                           provider.Prepare(c.problem(), config));
  return c.Check(*kernel);
}

Status FillDeviceRandom(void* device_address, int64_t bytes, DataType type, std::mt19937_64& rng) {
  constexpr int64_t kBlock = 8ll << 20;
  std::vector<uint8_t> host(static_cast<size_t>(std::min(bytes, kBlock)));
  FillRandomNonZero(host, type, rng);
  for (int64_t offset = 0; offset < bytes; offset += kBlock) {
    const int64_t n = std::min(kBlock, bytes - offset);
    KSELECT_RETURN_IF_ERROR(
        cuda::RuntimeStatus(cudaMemcpy(static_cast<uint8_t*>(device_address) + offset, host.data(),
                                       static_cast<size_t>(n), cudaMemcpyHostToDevice),
                            "cudaMemcpy"));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<DeviceOperands>> DeviceOperands::Create(
    std::span<const OperandSpec> operands, int64_t workspace_bytes, uint64_t seed) {
  auto owned = std::make_unique<OwnedDeviceOperands>();
  KSELECT_RETURN_IF_ERROR(owned->Allocate(operands, workspace_bytes, seed, 1));
  return std::unique_ptr<DeviceOperands>(std::move(owned));
}

uint64_t OperandSeed(const Problem& problem) {
  if (const auto* p = std::get_if<GemmProblem>(&problem)) {
    return 0x5eed ^ static_cast<uint64_t>(p->m * 31 + p->n * 17 + p->k);
  }
  uint64_t hash = 0x5eed;  // FNV-1a over the problem's text
  for (const char c : ProblemToString(problem))
    hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return hash;
}

StatusOr<std::unique_ptr<DeviceOperands>> DeviceOperands::CreateRotating(
    std::span<const OperandSpec> operands, int64_t workspace_bytes, uint64_t seed,
    int64_t rotate_bytes, int64_t max_sets) {
  auto owned = std::make_unique<OwnedDeviceOperands>();
  KSELECT_RETURN_IF_ERROR(owned->Allocate(operands, workspace_bytes, seed,
                                          RotatingSetCount(operands, rotate_bytes, max_sets)));
  return std::unique_ptr<DeviceOperands>(std::move(owned));
}

}  // namespace kselect::verify
