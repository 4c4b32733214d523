// The device side of verification: the NVRTC-compiled reference (double accumulation over the
// exact inputs), the cases run through any provider's PreparedKernel, device operands for timing
// and the median of event-timed launches.
#include <algorithm>
#include <cstring>
#include <utility>

#include "cuda/driver_api.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/runtime.h"
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
    if (const CUresult r = api_->module_get_function(&gemm_, module_, "reference_gemm");
        r != CUDA_SUCCESS) {
      return InternalError("no reference_gemm in the reference module: " +
                           cuda::DriverErrorText(*api_, r));
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
    CUlaunchConfig config{};
    config.gridDimX = 1024;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 256;
    config.blockDimY = config.blockDimZ = 1;
    if (const CUresult r = api_->launch_kernel_ex(&config, gemm_, args, nullptr);
        r != CUDA_SUCCESS) {
      return InternalError("reference launch failed: " + cuda::DriverErrorText(*api_, r));
    }
    return cuda::RuntimeStatus(cudaDeviceSynchronize(), "reference kernel");
  }

 private:
  const cuda::DriverApi* api_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction gemm_ = nullptr;
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
    const auto* gemm = std::get_if<GemmProblem>(&problem);
    if (gemm == nullptr) return UnimplementedError("no reference for " + ProblemToString(problem));
    KSELECT_RETURN_IF_ERROR(gemm->Validate());
    auto c = std::make_unique<DeviceVerifyCase>(
        problem, std::vector<OperandSpec>(operands.begin(), operands.end()), tolerance);
    std::mt19937_64 rng(options_.seed + cases_made_++);
    for (CaseOperand& o : c->mutable_operands()) {
      if (o.spec.alignment > 256) {
        return InvalidArgumentError("operand " + o.spec.name + " needs " +
                                    std::to_string(o.spec.alignment) +
                                    "-byte alignment; device allocations give 256");
      }
      o.initial.assign(static_cast<size_t>(o.spec.bytes), kPoisonByte);
      if (o.spec.access != OperandAccess::kWrite) FillRandomNonZero(o.initial, o.spec.dtype, rng);
      KSELECT_RETURN_IF_ERROR(Upload(o.buffer, o.initial.data(), o.initial.size()));
    }
    KSELECT_RETURN_IF_ERROR(ComputeGemmReference(*gemm, c->mutable_operands()));
    return std::unique_ptr<VerifyCase>(std::move(c));
  }

 private:
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

int64_t RotatingSetCount(std::span<const OperandSpec> operands, int64_t rotate_bytes,
                         int64_t max_sets) {
  int64_t set_bytes = 0;
  for (const OperandSpec& operand : operands) set_bytes += operand.bytes;
  set_bytes = std::max<int64_t>(set_bytes, 1);
  // One more than reaches the target when a set is smaller than it, so the set read next is
  // never one still in L2.
  const int64_t sets = std::max<int64_t>(
      1, (rotate_bytes + set_bytes - 1) / set_bytes + (set_bytes < rotate_bytes ? 1 : 0));
  return std::min(sets, std::max<int64_t>(max_sets, 1));
}

StatusOr<std::unique_ptr<DeviceOperands>> DeviceOperands::CreateRotating(
    std::span<const OperandSpec> operands, int64_t workspace_bytes, uint64_t seed,
    int64_t rotate_bytes, int64_t max_sets) {
  auto owned = std::make_unique<OwnedDeviceOperands>();
  KSELECT_RETURN_IF_ERROR(owned->Allocate(operands, workspace_bytes, seed,
                                          RotatingSetCount(operands, rotate_bytes, max_sets)));
  return std::unique_ptr<DeviceOperands>(std::move(owned));
}

StatusOr<double> MedianLaunchMs(PreparedKernel& kernel, const KernelOperands& operands, int repeats,
                                int warmup) {
  KSELECT_CHECK(repeats >= 1);
  for (int i = 0; i < warmup; ++i) KSELECT_RETURN_IF_ERROR(kernel.Launch(operands, nullptr));
  KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  KSELECT_ASSIGN_OR_RETURN(cuda::EventTimer timer, cuda::EventTimer::Create());
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    KSELECT_RETURN_IF_ERROR(timer.Start(nullptr));
    KSELECT_RETURN_IF_ERROR(kernel.Launch(operands, nullptr));
    KSELECT_RETURN_IF_ERROR(timer.Stop(nullptr));
    KSELECT_ASSIGN_OR_RETURN(const double elapsed, timer.ElapsedMs());
    ms.push_back(elapsed);
  }
  KSELECT_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace kselect::verify
