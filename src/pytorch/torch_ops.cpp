// libkselect_torch.so: kselect's GEMM choice inside PyTorch, as operators.
//
//   torch.ops.kselect.{mm, bmm, addmm, linear}   explicit operators (autograd, torch.compile)
//   kselect._route_aten(True)                    aten::mm / mm.out / bmm / bmm.out on CUDA
//                                                run through kselect: F.linear, matmul and their
//                                                backward GEMMs, eager, compiled or graphed
// Each call costs what PyTorch's own does plus a hash lookup (GemmRouter): the decision, its
// first-use timing and the prepared kernel are made at a problem's first call and kept. Anything
// kselect does not run (dtypes, strides, alignment, a problem no model covers, a problem first
// met during graph capture) runs PyTorch's own CUDA kernel, called directly (at::cuda::*), and
// is counted by reason. python/kselect/torch.py is the Python face of these operators.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/addmm_cuda_dispatch.h>
#include <ATen/ops/bmm_cuda_dispatch.h>
#include <ATen/ops/mm_cuda_dispatch.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pytorch/gemm_router.h"

namespace kselect {
namespace {

// Why a GEMM ran PyTorch's kernel instead of kselect's; counted per reason.
enum class PassReason {
  kDtype,          // not bf16 or fp16, or mixed dtypes
  kStrides,        // an operand is neither row- nor column-packed, or the output not row-packed
  kAlignment,      // an operand not 256-byte aligned (the configs were checked so)
  kEmpty,          // a zero-size dimension
  kDevice,         // operands on different devices
  kNotConfigured,  // no models configured
  kNoRule,         // no configured model covers the dtype and layout
  kUndecidedCapture,
  kNoDecision,
  kLaunchFailed,
  kAddmm,  // addmm: PyTorch's fused bias epilogue
  kCount
};
struct PassReasonText {
  const char* name;  // the summary's key
  const char* why;   // the warning's words, said once per reason
};
constexpr std::array<PassReasonText, static_cast<size_t>(PassReason::kCount)> kPassReasons = {{
    {"dtype", "a dtype kselect does not route (bf16 and fp16 only, one dtype for all operands)"},
    {"strides", "an operand that is neither row- nor column-packed, or an output not row-packed"},
    {"alignment", "an operand not 256-byte aligned"},
    {"empty", "a zero-size dimension"},
    {"device", "operands on different devices"},
    {"not_configured", "no models configured (kselect.torch.configure)"},
    {"no_model", "no configured model covers the GEMM's dtype and layout"},
    {"undecided_during_capture",
     "a GEMM first met during CUDA graph capture (decide it before: kselect.torch.prepare)"},
    {"no_decision", "the GEMM's decision failed (kselect.torch.summary() says why)"},
    {"launch_failed", "kselect's kernel failed to launch"},
    {"addmm_bias_epilogue", "addmm (a bias): PyTorch's fused bias epilogue runs"},
}};

constexpr int kMaxDevices = 64;
constexpr int64_t kAlignmentBytes = 256;

struct RoutingState {
  std::mutex mutex;  // configuration and router creation
  std::vector<GemmRouteRule> rules;
  int time_top_k = 3;
  bool share_across_n = true;
  std::atomic<bool> configured{false};
  std::array<std::atomic<GemmRouter*>, kMaxDevices> routers{};
  std::vector<std::unique_ptr<GemmRouter>> owned;  // every router made, kept until exit
  std::atomic<int64_t> routed{0};
  std::array<std::atomic<int64_t>, static_cast<size_t>(PassReason::kCount)> passed{};
  std::unique_ptr<torch::Library> aten_routes;  // set while aten routing is on
};

RoutingState& State() {
  static RoutingState* state = new RoutingState();  // never destroyed: kernels outlive exit
  return *state;
}

// Counts a pass-through; the first of each reason is said once, as a warning.
void CountPass(PassReason reason) {
  const auto r = static_cast<size_t>(reason);
  if (State().passed[r].fetch_add(1, std::memory_order_relaxed) == 0) {
    TORCH_WARN("kselect.torch: ", kPassReasons[r].why,
               ": PyTorch's own kernel runs (kselect.torch.summary() counts these calls)");
  }
}

GemmRouter* RouterFor(int device) {
  RoutingState& s = State();
  if (device < 0 || device >= kMaxDevices) return nullptr;
  GemmRouter* router = s.routers[device].load(std::memory_order_acquire);
  if (router != nullptr) return router;
  std::lock_guard lock(s.mutex);
  router = s.routers[device].load(std::memory_order_acquire);
  if (router != nullptr || !s.configured.load()) return router;
  SelectorOptions options;
  options.provider.device = device;
  options.top_k = std::max(s.time_top_k, 1);
  options.time_top_k = s.time_top_k;
  options.predicted_times = 0;
  {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    options.provider.max_workspace_bytes =
        static_cast<int64_t>(at::cuda::getCUDABlasLtWorkspaceSize());
  }
  s.owned.push_back(std::make_unique<GemmRouter>(s.rules, options, s.share_across_n));
  router = s.owned.back().get();
  s.routers[device].store(router, std::memory_order_release);
  return router;
}

bool IsRoutedDtype(at::ScalarType type) {
  return type == at::kBFloat16 || type == at::kHalf;
}

DataType KselectDtype(at::ScalarType type) {
  return type == at::kBFloat16 ? DataType::kBF16 : DataType::kF16;
}

// A rows x cols matrix at the last two dims of `t`: row-packed (ld = cols), column-packed
// (ld = rows), or neither. A dimension of 1 packs both ways; row is preferred then.
enum class Packing { kRow, kCol, kNeither };
Packing PackingOf(const at::Tensor& t) {
  const int64_t d = t.dim();
  const int64_t rows = t.size(d - 2), cols = t.size(d - 1);
  const int64_t row_stride = t.stride(d - 2), col_stride = t.stride(d - 1);
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride == cols)) return Packing::kRow;
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride == rows)) return Packing::kCol;
  return Packing::kNeither;
}

bool BatchPacked(const at::Tensor& t) {
  return t.dim() == 2 || t.size(0) == 1 || t.stride(0) == t.size(1) * t.size(2);
}

bool Aligned(const at::Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % kAlignmentBytes == 0;
}

// out = a @ b (2-D, or 3-D batched) through kselect, `out` already shaped. False (and counted)
// when PyTorch's kernel must run instead.
bool TryRoute(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  RoutingState& s = State();
  if (!s.configured.load(std::memory_order_relaxed)) {
    CountPass(PassReason::kNotConfigured);
    return false;
  }
  const at::ScalarType type = a.scalar_type();
  if (!IsRoutedDtype(type) || b.scalar_type() != type || out.scalar_type() != type) {
    CountPass(PassReason::kDtype);
    return false;
  }
  if (a.device() != b.device() || a.device() != out.device()) {
    CountPass(PassReason::kDevice);
    return false;
  }
  if (a.numel() == 0 || b.numel() == 0 || out.numel() == 0) {
    CountPass(PassReason::kEmpty);
    return false;
  }
  const Packing pa = PackingOf(a), pb = PackingOf(b);
  if (pa == Packing::kNeither || pb == Packing::kNeither || PackingOf(out) != Packing::kRow ||
      !BatchPacked(a) || !BatchPacked(b) || !BatchPacked(out)) {
    CountPass(PassReason::kStrides);
    return false;
  }
  if (!Aligned(a) || !Aligned(b) || !Aligned(out)) {
    CountPass(PassReason::kAlignment);
    return false;
  }
  const int64_t d = a.dim();
  // Row-major out (M x N) = a (M x K) b (K x N) is, column-major, out^T = b^T a^T: cuBLAS's
  // m = N, n = M, with b as its A and a as its B. A row-packed torch operand is column-major
  // once transposed.
  GemmProblem problem;
  problem.m = b.size(d - 1);
  problem.n = a.size(d - 2);
  problem.k = a.size(d - 1);
  problem.batch = d == 3 ? a.size(0) : 1;
  problem.layout.a = pb == Packing::kRow ? MatrixOrder::kColMajor : MatrixOrder::kRowMajor;
  problem.layout.b = pa == Packing::kRow ? MatrixOrder::kColMajor : MatrixOrder::kRowMajor;
  problem.layout.c = MatrixOrder::kColMajor;
  problem.dtype_a = problem.dtype_b = problem.dtype_c = KselectDtype(type);
  const c10::DeviceIndex device = a.device().index();
  c10::cuda::CUDAGuard guard(device);
  GemmRouter* router = RouterFor(device);
  if (router == nullptr) {
    CountPass(PassReason::kNotConfigured);
    return false;
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream(device).stream();
  const bool capturing =
      !router->Decided(problem) &&
      c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
  const GemmRouteOutcome outcome = router->Run(
      problem, b.data_ptr(), a.data_ptr(), out.data_ptr(), at::cuda::getCUDABlasLtWorkspace(),
      static_cast<int64_t>(at::cuda::getCUDABlasLtWorkspaceSize()), stream, capturing);
  switch (outcome) {
    case GemmRouteOutcome::kRan:
      s.routed.fetch_add(1, std::memory_order_relaxed);
      return true;
    case GemmRouteOutcome::kNoRule:
      CountPass(PassReason::kNoRule);
      return false;
    case GemmRouteOutcome::kUndecidedCapture:
      CountPass(PassReason::kUndecidedCapture);
      return false;
    case GemmRouteOutcome::kNoDecision:
      CountPass(PassReason::kNoDecision);
      return false;
    case GemmRouteOutcome::kLaunchFailed:
      CountPass(PassReason::kLaunchFailed);
      return false;
  }
  return false;
}

bool MatricesFit(const at::Tensor& a, const at::Tensor& b, int64_t dims) {
  return a.dim() == dims && b.dim() == dims && a.size(dims - 1) == b.size(dims - 2) &&
         (dims == 2 || a.size(0) == b.size(0));
}

// ----------------------------------------------------------------------- CUDA kernels
at::Tensor RoutedMm(const at::Tensor& a, const at::Tensor& b) {
  if (MatricesFit(a, b, 2)) {
    at::Tensor out = at::empty({a.size(0), b.size(1)}, a.options());
    if (TryRoute(a, b, out)) return out;
  }
  return at::cuda::mm(a, b);
}

at::Tensor& RoutedMmOut(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (MatricesFit(a, b, 2) && out.dim() == 2 && out.size(0) == a.size(0) &&
      out.size(1) == b.size(1) && TryRoute(a, b, out)) {
    return out;
  }
  return at::cuda::mm_out(out, a, b);
}

at::Tensor RoutedBmm(const at::Tensor& a, const at::Tensor& b) {
  if (MatricesFit(a, b, 3)) {
    at::Tensor out = at::empty({a.size(0), a.size(1), b.size(2)}, a.options());
    if (TryRoute(a, b, out)) return out;
  }
  return at::cuda::bmm(a, b);
}

at::Tensor& RoutedBmmOut(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  if (MatricesFit(a, b, 3) && out.dim() == 3 && out.size(0) == a.size(0) &&
      out.size(1) == a.size(1) && out.size(2) == b.size(2) && TryRoute(a, b, out)) {
    return out;
  }
  return at::cuda::bmm_out(out, a, b);
}

at::Tensor CountedAddmm(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b,
                        const at::Scalar& beta, const at::Scalar& alpha) {
  CountPass(PassReason::kAddmm);
  return at::cuda::addmm(self, a, b, beta, alpha);
}

// ----------------------------------------------------------------------- explicit operators
const c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, const at::Tensor&)>& MmOp() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("kselect::mm", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}
const c10::TypedOperatorHandle<at::Tensor(const at::Tensor&, const at::Tensor&)>& BmmOp() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("kselect::bmm", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}

// d(a b) = da b + a db: grad_a = g b^T, grad_b = a^T g, both through kselect (NN and NT GEMMs
// of the forward's TN).
template <bool kBatched>
class MatmulFunction : public torch::autograd::Function<MatmulFunction<kBatched>> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                            const at::Tensor& b) {
    ctx->save_for_backward({a, b});
    at::AutoDispatchBelowADInplaceOrView guard;
    return kBatched ? BmmOp().call(a, b) : MmOp().call(a, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& a = saved[0];
    const at::Tensor& b = saved[1];
    const at::Tensor g = grads[0];
    auto mul = [](const at::Tensor& x, const at::Tensor& y) {
      return kBatched ? BmmOp().call(x, y) : MmOp().call(x, y);
    };
    at::Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0)) grad_a = mul(g, b.transpose(-2, -1));
    if (ctx->needs_input_grad(1)) grad_b = mul(a.transpose(-2, -1), g);
    return {grad_a, grad_b};
  }
};

at::Tensor MmAutograd(const at::Tensor& a, const at::Tensor& b) {
  return MatmulFunction<false>::apply(a, b);
}
at::Tensor BmmAutograd(const at::Tensor& a, const at::Tensor& b) {
  return MatmulFunction<true>::apply(a, b);
}

// CPU and other devices: PyTorch's own (the explicit operators work anywhere).
at::Tensor FallbackMm(const at::Tensor& a, const at::Tensor& b) {
  return at::mm(a, b);
}
at::Tensor FallbackBmm(const at::Tensor& a, const at::Tensor& b) {
  return at::bmm(a, b);
}

at::Tensor Addmm(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  at::Tensor product = MmOp().call(a, b);
  if (!alpha.equal(1)) product = product * alpha;
  if (beta.equal(0)) return product;
  return beta.equal(1) ? product + self : product + self * beta;
}

at::Tensor Linear(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(weight.dim() == 2, "kselect::linear: weight must be 2-D, got ", weight.dim(), "-D");
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) == weight.size(1), "kselect::linear: input ",
              input.sizes(), " and weight ", weight.sizes(), " do not make input @ weight.T");
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = weight.size(0);
  at::Tensor y = MmOp().call(input.reshape({-1, input.size(-1)}), weight.t());
  if (bias.has_value() && bias->defined()) y = y + *bias;
  return y.view(shape);
}

// ----------------------------------------------------------------------- control
// A warning handler that drops: overriding aten's CUDA kernels is what routing means, and
// PyTorch warns about every override.
class QuietWarnings : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

void Configure(std::vector<std::string> rule_texts, int64_t time_top_k, bool share_across_n) {
  std::vector<GemmRouteRule> rules;
  for (const std::string& text : rule_texts) {
    StatusOr<GemmRouteRule> rule = ParseGemmRouteRule(text);
    TORCH_CHECK(rule.ok(), "kselect: ", rule.status().message());
    rules.push_back(std::move(*rule));
  }
  TORCH_CHECK(time_top_k >= 0 && time_top_k <= 64, "kselect: time_top_k is ", time_top_k,
              " (0-64)");
  RoutingState& s = State();
  std::lock_guard lock(s.mutex);
  s.rules = std::move(rules);
  s.time_top_k = static_cast<int>(time_top_k);
  s.share_across_n = share_across_n;
  // Routers made under the old rules stay alive (a kernel may be running one) but are unused.
  for (auto& router : s.routers) router.store(nullptr);
  s.configured.store(!s.rules.empty());
}

bool RouteAten(bool on) {
  RoutingState& s = State();
  std::lock_guard lock(s.mutex);
  const bool was = s.aten_routes != nullptr;
  if (on == was) return was;
  QuietWarnings quiet;
  c10::WarningUtils::WarningHandlerGuard guard(&quiet);
  if (on) {
    auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                                c10::DispatchKey::CUDA, __FILE__, __LINE__);
    lib->impl("mm", TORCH_FN(RoutedMm));
    lib->impl("mm.out", TORCH_FN(RoutedMmOut));
    lib->impl("bmm", TORCH_FN(RoutedBmm));
    lib->impl("bmm.out", TORCH_FN(RoutedBmmOut));
    lib->impl("addmm", TORCH_FN(CountedAddmm));
    s.aten_routes = std::move(lib);
  } else {
    s.aten_routes.reset();  // PyTorch's own kernels are registered again
  }
  return was;
}

std::string Summary() {
  RoutingState& s = State();
  nlohmann::json j;
  j["format"] = "kselect.torch_summary";
  j["configured"] = s.configured.load();
  j["aten_routing"] = s.aten_routes != nullptr;
  j["routed_calls"] = s.routed.load();
  nlohmann::json passed = nlohmann::json::object();
  int64_t passed_total = 0;
  for (size_t r = 0; r < kPassReasons.size(); ++r) {
    const int64_t n = s.passed[r].load();
    passed_total += n;
    if (n > 0) passed[kPassReasons[r].name] = n;
  }
  j["passed_through_calls"] = passed_total;
  j["passed_through"] = passed;
  nlohmann::json decisions = nlohmann::json::array();
  nlohmann::json errors = nlohmann::json::array();
  double decide_seconds = 0;
  std::lock_guard lock(s.mutex);
  j["rules"] = nlohmann::json::array();
  for (const GemmRouteRule& rule : s.rules) {
    j["rules"].push_back({{"dtype", rule.dtype ? std::string(DataTypeName(*rule.dtype)) : "*"},
                          {"layout", rule.layout ? rule.layout->ToString() : "*"},
                          {"model", rule.model_dir}});
  }
  j["time_top_k"] = s.time_top_k;
  j["share_across_n"] = s.share_across_n;
  for (int device = 0; device < kMaxDevices; ++device) {
    GemmRouter* router = s.routers[device].load();
    if (router == nullptr) continue;
    decide_seconds += router->DecideSeconds();
    for (const GemmRouteDecision& d : router->Decisions()) {
      decisions.push_back({{"device", device},
                           {"problem", d.problem},
                           {"model", d.model_dir},
                           {"config", d.config},
                           {"timed_configs", d.timed_configs},
                           {"vendor_kept", d.vendor_kept},
                           {"decide_ms", d.decide_ms},
                           {"shared_from", d.shared_from},
                           {"note", d.note}});
    }
    for (const std::string& e : router->OpenErrors()) errors.push_back(e);
  }
  j["decisions"] = decisions;
  j["decide_seconds"] = decide_seconds;
  j["model_errors"] = errors;
  return j.dump();
}

void ResetCounts() {
  RoutingState& s = State();
  s.routed.store(0);
  for (auto& n : s.passed) n.store(0);
}

}  // namespace
}  // namespace kselect

TORCH_LIBRARY(kselect, m) {
  m.def("mm(Tensor self, Tensor mat2) -> Tensor");
  m.def("bmm(Tensor self, Tensor mat2) -> Tensor");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        TORCH_FN(kselect::Addmm));
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
        TORCH_FN(kselect::Linear));
  m.def("_configure(str[] rules, int time_top_k, bool share_across_n=True) -> ()",
        &kselect::Configure);
  m.def("_route_aten(bool on) -> bool", &kselect::RouteAten);
  m.def("_summary() -> str", &kselect::Summary);
  m.def("_reset_counts() -> ()", &kselect::ResetCounts);
}

TORCH_LIBRARY_IMPL(kselect, CUDA, m) {
  m.impl("mm", TORCH_FN(kselect::RoutedMm));
  m.impl("bmm", TORCH_FN(kselect::RoutedBmm));
}

TORCH_LIBRARY_IMPL(kselect, CPU, m) {
  m.impl("mm", TORCH_FN(kselect::FallbackMm));
  m.impl("bmm", TORCH_FN(kselect::FallbackBmm));
}

TORCH_LIBRARY_IMPL(kselect, Autograd, m) {
  m.impl("mm", TORCH_FN(kselect::MmAutograd));
  m.impl("bmm", TORCH_FN(kselect::BmmAutograd));
}
