#include "layer/layer_timing.h"

#include <memory>

#include "kselect/selector.h"
#include "providers/cublaslt/cublaslt_algo.h"
#include "timing/first_use.h"

namespace kselect::layer {
namespace {

// A contender as the timing module's kernel.
class ContenderKernel final : public PreparedKernel {
 public:
  explicit ContenderKernel(LayerContender contender) : contender_(std::move(contender)) {}
  int64_t WorkspaceBytes() const override { return 0; }
  Status Launch(const KernelOperands& operands, void* stream) override {
    const cublasStatus_t status = contender_.launch(operands, static_cast<cudaStream_t>(stream));
    if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
    return InternalError(contender_.name + ": " + cublaslt::CublasStatusText(status));
  }

 private:
  LayerContender contender_;
};

}  // namespace

StatusOr<std::vector<OperandSpec>> CallOperandSpecs(const LtCall& call, bool c_is_d) {
  const GemmProblem& p = call.problem;
  if (p.batch != 1) return CannotImplementError("batched calls are not timed");
  const int64_t a_cols = p.layout.a == MatrixOrder::kRowMajor ? p.m : p.k;
  const int64_t b_cols = p.layout.b == MatrixOrder::kRowMajor ? p.k : p.n;
  auto bytes = [](DataType type, int64_t ld, int64_t cols) {
    return ld * cols * DataTypeBits(type) / 8;
  };
  constexpr int64_t kAlignment = 256;
  std::vector<OperandSpec> specs = {
      {"a", p.dtype_a, bytes(p.dtype_a, call.lda, a_cols), kAlignment, OperandAccess::kRead},
      {"b", p.dtype_b, bytes(p.dtype_b, call.ldb, b_cols), kAlignment, OperandAccess::kRead}};
  const OperandAccess output = p.beta != 0 ? OperandAccess::kReadWrite : OperandAccess::kWrite;
  if (c_is_d) {
    specs.push_back({"c", p.dtype_c, bytes(p.dtype_c, call.ldc, p.n), kAlignment, output});
  } else {
    specs.push_back(
        {"c", p.dtype_c, bytes(p.dtype_c, call.ldc, p.n), kAlignment, OperandAccess::kRead});
    specs.push_back(
        {"d", p.dtype_c, bytes(p.dtype_c, call.ldd, p.n), kAlignment, OperandAccess::kWrite});
  }
  return specs;
}

StatusOr<FirstUseOutcome> TimeAtFirstUse(std::vector<LayerContender> contenders,
                                         const std::vector<OperandSpec>& specs,
                                         const KernelOperands& operands, double vendor_margin,
                                         cudaStream_t stream) {
  std::vector<std::unique_ptr<ContenderKernel>> kernels;
  std::vector<timing::FirstUseContender> timed;
  for (size_t i = 0; i < contenders.size(); ++i) {
    kernels.push_back(std::make_unique<ContenderKernel>(contenders[i]));
    timed.push_back({std::to_string(i), kernels.back().get()});
  }
  KSELECT_ASSIGN_OR_RETURN(
      const std::vector<timing::TimedContender> results,
      timing::TimeContendersAtFirstUse(std::move(timed), specs, operands,
                                       /*cold_l2=*/true, /*graph_batches=*/true, stream));
  if (results.empty()) return FailedPreconditionError("fewer than two contenders could be timed");
  FirstUseOutcome outcome;
  outcome.timed = static_cast<int>(results.size());
  const auto vendor = std::find_if(results.begin(), results.end(),
                                   [](const timing::TimedContender& t) { return t.key == "0"; });
  if (vendor == results.end()) {
    return FailedPreconditionError("the application's own choice could not be timed");
  }
  outcome.vendor_ms = vendor->median_ms;
  outcome.winner_ms = vendor->median_ms;
  const timing::TimedContender& fastest = results.front();
  if (fastest.key != "0" &&
      ReplacesVendorPick(vendor->median_ms / std::max(fastest.median_ms, 1e-9), vendor_margin)) {
    outcome.winner = std::stoul(fastest.key);
    outcome.winner_ms = fastest.median_ms;
  }
  return outcome;
}

}  // namespace kselect::layer
