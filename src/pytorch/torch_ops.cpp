// libkselect_torch.so: kselect's GEMM choice inside PyTorch, as operators.
//
//   torch.ops.kselect.{mm, bmm, addmm, linear}   explicit operators (autograd, torch.compile)
//   torch.ops.kselect._route_aten(True)          aten's CUDA mm / mm.out / bmm / bmm.out,
//                                                cudnn_convolution and convolution_backward run
//                                                through kselect: F.linear, matmul, F.conv2d/3d
//                                                and their backward, eager, compiled or graphed
// Each call costs what PyTorch's own does plus a hash lookup (KernelRouter): the decision, its
// first-use timing and the prepared kernel are made at a problem's first call and kept. Anything
// kselect does not run (dtypes, strides, alignment, a problem no model covers, a problem first
// met during graph capture) runs PyTorch's own CUDA kernel, called directly (at::cuda::*), and
// is counted by reason. python/kselect/torch.py is the Python face of these operators.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/addmm_cuda_dispatch.h>
#include <ATen/ops/bmm_cuda_dispatch.h>
#include <ATen/ops/convolution_backward_cuda_dispatch.h>
#include <ATen/ops/cudnn_convolution_cuda_dispatch.h>
#include <ATen/ops/cudnn_convolution_transpose_cuda_dispatch.h>
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

#include "pytorch/kernel_router.h"

namespace kselect {
namespace {

// Why a call ran PyTorch's kernel instead of kselect's; counted per reason.
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
  kUnguarded,  // timed without the vendor's pick beside it
  kLaunchFailed,
  kAddmm,              // addmm: PyTorch's fused bias epilogue
  kConvLayout,         // a convolution not channels-last contiguous 2-D or 3-D
  kConvDeterministic,  // deterministic algorithms asked for
  kConvTransposed,     // a transposed convolution
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
    {"unguarded",
     "a decision without the vendor's pick to guard it (the library's heuristic offered none "
     "within kselect's workspace limit)"},
    {"launch_failed", "kselect's kernel failed to launch"},
    {"addmm_bias_epilogue", "addmm (a bias): PyTorch's fused bias epilogue runs"},
    {"conv_layout",
     "a convolution whose tensors are not channels-last contiguous 2-D or 3-D (use "
     "model.to(memory_format=torch.channels_last))"},
    {"conv_deterministic", "a convolution under torch.use_deterministic_algorithms"},
    {"conv_transposed", "a transposed convolution"},
}};

constexpr int kMaxDevices = 64;
constexpr int64_t kAlignmentBytes = 256;

struct RoutingState {
  std::mutex mutex;  // configuration and router creation
  std::vector<RouteRule> rules;
  int time_top_k = 3;
  int conv_time_top_k = 5;
  bool share_across_n = true;
  std::atomic<bool> configured{false};
  std::array<std::atomic<KernelRouter*>, kMaxDevices> routers{};
  std::vector<std::unique_ptr<KernelRouter>> owned;  // every router made, kept until exit
  std::atomic<int64_t> routed{0};
  std::atomic<int64_t> routed_convs{0};
  std::array<std::atomic<int64_t>, static_cast<size_t>(PassReason::kCount)> passed{};
  std::unique_ptr<torch::Library> aten_routes;  // set while aten routing is on
  std::string decisions_dir;  // LoadDecisions: routers made from now read their files there
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

KernelRouter* RouterFor(int device) {
  RoutingState& s = State();
  if (device < 0 || device >= kMaxDevices) return nullptr;
  KernelRouter* router = s.routers[device].load(std::memory_order_acquire);
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
  // Convolutions: cuDNN's engines within the workspace the conv models were trained under.
  SelectorOptions conv_options;
  conv_options.provider.device = device;
  conv_options.top_k = std::max(s.conv_time_top_k, 1);
  conv_options.time_top_k = s.conv_time_top_k;
  conv_options.predicted_times = 0;
  s.owned.push_back(
      std::make_unique<KernelRouter>(s.rules, options, conv_options, s.share_across_n));
  router = s.owned.back().get();
  if (!s.decisions_dir.empty()) router->LoadDecisionsFrom(s.decisions_dir);
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

bool Capturing() {
  return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
}

// Counts a routed call in `routed`, or the pass-through's reason; true when kselect ran it.
bool Counted(RouteOutcome outcome, std::atomic<int64_t>& routed) {
  switch (outcome) {
    case RouteOutcome::kRan:
      routed.fetch_add(1, std::memory_order_relaxed);
      return true;
    case RouteOutcome::kNoRule:
      CountPass(PassReason::kNoRule);
      return false;
    case RouteOutcome::kUndecidedCapture:
      CountPass(PassReason::kUndecidedCapture);
      return false;
    case RouteOutcome::kNoDecision:
      CountPass(PassReason::kNoDecision);
      return false;
    case RouteOutcome::kUnguarded:
      CountPass(PassReason::kUnguarded);
      return false;
    case RouteOutcome::kLaunchFailed:
      CountPass(PassReason::kLaunchFailed);
      return false;
  }
  return false;
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
  KernelRouter* router = RouterFor(device);
  if (router == nullptr) {
    CountPass(PassReason::kNotConfigured);
    return false;
  }
  KernelOperands operands;
  operands.buffers = {b.data_ptr(), a.data_ptr(), out.data_ptr()};
  operands.workspace = at::cuda::getCUDABlasLtWorkspace();
  operands.workspace_bytes = static_cast<int64_t>(at::cuda::getCUDABlasLtWorkspaceSize());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream(device).stream();
  const Problem key = problem;
  const KernelRouter::Entry* entry = router->Find(key);
  const RouteOutcome outcome = entry != nullptr
                                   ? router->Launch(*entry, operands, stream)
                                   : router->Decide(key, operands, stream, Capturing());
  return Counted(outcome, s.routed);
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

// ----------------------------------------------------------------------- convolutions
at::MemoryFormat ChannelsLastOf(int64_t dims) {
  return dims == 5 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
}

// A 2-D or 3-D convolution of channels-last bf16/fp16 tensors as kselect's ConvProblem (the
// cuDNN provider's layout: NHWC input, KYXC weights, NHWK output); nullopt, counted, when it is
// not one kselect runs.
std::optional<ConvProblem> ConvProblemOf(const at::Tensor& input, const at::Tensor& weight,
                                         c10::SymIntArrayRef padding, c10::SymIntArrayRef stride,
                                         c10::SymIntArrayRef dilation, const c10::SymInt& groups,
                                         ConvDirection direction) {
  RoutingState& s = State();
  if (!s.configured.load(std::memory_order_relaxed)) {
    CountPass(PassReason::kNotConfigured);
    return std::nullopt;
  }
  const int64_t dims = input.dim();
  const at::MemoryFormat format = ChannelsLastOf(dims);
  if ((dims != 4 && dims != 5) || weight.dim() != dims ||
      static_cast<int64_t>(padding.size()) != dims - 2 ||
      static_cast<int64_t>(stride.size()) != dims - 2 ||
      static_cast<int64_t>(dilation.size()) != dims - 2 || !input.is_contiguous(format) ||
      !weight.is_contiguous(format)) {
    CountPass(PassReason::kConvLayout);
    return std::nullopt;
  }
  const at::ScalarType type = input.scalar_type();
  if (!IsRoutedDtype(type) || weight.scalar_type() != type) {
    CountPass(PassReason::kDtype);
    return std::nullopt;
  }
  if (input.device() != weight.device()) {
    CountPass(PassReason::kDevice);
    return std::nullopt;
  }
  if (input.numel() == 0 || weight.numel() == 0) {
    CountPass(PassReason::kEmpty);
    return std::nullopt;
  }
  auto at = [](c10::SymIntArrayRef v, size_t i) { return v[i].expect_int(); };
  const bool three = dims == 5;
  ConvProblem p;
  p.n = input.size(0);
  p.c = input.size(1);
  p.k = weight.size(0);
  p.g = groups.expect_int();
  p.di = three ? input.size(2) : 1;
  p.hi = input.size(dims - 2);
  p.wi = input.size(dims - 1);
  p.z = three ? weight.size(2) : 1;
  p.y = weight.size(dims - 2);
  p.x = weight.size(dims - 1);
  const size_t h = three ? 1 : 0;  // index of the height entry in padding/stride/dilation
  p.stride_d = three ? at(stride, 0) : 1;
  p.stride_h = at(stride, h);
  p.stride_w = at(stride, h + 1);
  p.pad_d = three ? at(padding, 0) : 0;
  p.pad_h = at(padding, h);
  p.pad_w = at(padding, h + 1);
  p.dilation_d = three ? at(dilation, 0) : 1;
  p.dilation_h = at(dilation, h);
  p.dilation_w = at(dilation, h + 1);
  p.direction = direction;
  p.layout = ConvLayout::kChannelsLast;
  p.dtype = KselectDtype(type);
  if (!p.Validate().ok() || weight.size(1) * p.g != p.c) {
    CountPass(PassReason::kConvLayout);
    return std::nullopt;
  }
  return p;
}

std::vector<int64_t> ConvOutputSizes(const ConvProblem& p) {
  if (p.Is3d()) return {p.n, p.k, p.Do(), p.Ho(), p.Wo()};
  return {p.n, p.k, p.Ho(), p.Wo()};
}

// The convolution through kselect on x, w, y (the forward pass's names, whatever the
// direction); `like` gives the device. False (counted) when PyTorch's kernel must run.
bool TryRouteConv(const ConvProblem& problem, void* x, void* w, void* y, const at::Tensor& like) {
  RoutingState& s = State();
  const c10::DeviceIndex device = like.device().index();
  c10::cuda::CUDAGuard guard(device);
  KernelRouter* router = RouterFor(device);
  if (router == nullptr) {
    CountPass(PassReason::kNotConfigured);
    return false;
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream(device).stream();
  KernelOperands operands;
  operands.buffers = {x, w, y};
  const Problem key = problem;
  // The workspace from torch's allocator on this stream (a graph's pool during capture).
  auto workspace = [&](int64_t bytes) {
    at::Tensor buffer;
    if (bytes > 0) buffer = at::empty({bytes}, like.options().dtype(at::kByte));
    operands.workspace = bytes > 0 ? buffer.data_ptr() : nullptr;
    operands.workspace_bytes = bytes;
    return buffer;
  };
  if (const KernelRouter::Entry* entry = router->Find(key)) {
    const at::Tensor held = workspace(entry->workspace_bytes);
    return Counted(router->Launch(*entry, operands, stream), s.routed_convs);
  }
  if (Capturing()) return Counted(RouteOutcome::kUndecidedCapture, s.routed_convs);
  const at::Tensor held = workspace(ProviderOptions{}.max_workspace_bytes);
  return Counted(router->Decide(key, operands, stream, false), s.routed_convs);
}

at::Tensor RoutedCudnnConvolution(const at::Tensor& input, const at::Tensor& weight,
                                  c10::SymIntArrayRef padding, c10::SymIntArrayRef stride,
                                  c10::SymIntArrayRef dilation, c10::SymInt groups, bool benchmark,
                                  bool deterministic, bool allow_tf32) {
  if (deterministic) {
    CountPass(PassReason::kConvDeterministic);
    return at::cuda::cudnn_convolution_symint(input, weight, padding, stride, dilation,
                                              std::move(groups), benchmark, deterministic,
                                              allow_tf32);
  }
  // As PyTorch's own cuDNN path: a channels-last weight makes the input channels-last (and
  // PyTorch's kernel, when it runs instead, gets that copy rather than making its own).
  const at::MemoryFormat format = ChannelsLastOf(input.dim());
  const at::Tensor x = weight.is_contiguous(format) ? input.contiguous(format) : input;
  if (auto problem =
          ConvProblemOf(x, weight, padding, stride, dilation, groups, ConvDirection::kForward)) {
    at::Tensor out = at::empty(ConvOutputSizes(*problem), x.options().memory_format(format));
    if (TryRouteConv(*problem, x.data_ptr(), weight.data_ptr(), out.data_ptr(), x)) return out;
  }
  return at::cuda::cudnn_convolution_symint(x, weight, padding, stride, dilation, std::move(groups),
                                            benchmark, deterministic, allow_tf32);
}

// d(input) through the bwd_data model, d(weight) through the bwd_weight model, d(bias) as
// PyTorch sums it; whatever kselect does not run comes from PyTorch's own backward.
std::tuple<at::Tensor, at::Tensor, at::Tensor> RoutedConvolutionBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::OptionalSymIntArrayRef bias_sizes, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
    c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  auto fallback = [&](std::array<bool, 3> mask) {
    return at::cuda::convolution_backward_symint(grad_output, input, weight, bias_sizes, stride,
                                                 padding, dilation, transposed, output_padding,
                                                 groups, mask);
  };
  if (transposed) {
    CountPass(PassReason::kConvTransposed);
    return fallback(output_mask);
  }
  if (at::globalContext().deterministicAlgorithms()) {
    CountPass(PassReason::kConvDeterministic);
    return fallback(output_mask);
  }
  const int64_t dims = input.dim();
  const at::MemoryFormat format = ChannelsLastOf(dims);
  // As PyTorch's own cuDNN path: operands made contiguous in the weight's channels-last format
  // (autograd hands expanded or strided gradients, a mean's for one).
  const bool channels_last = weight.is_contiguous(format);
  const at::Tensor go = channels_last ? grad_output.contiguous(format) : grad_output;
  const at::Tensor in = channels_last ? input.contiguous(format) : input;
  at::Tensor grad_input, grad_weight, grad_bias;
  std::array<bool, 3> rest = {false, false, false};
  for (int part = 0; part < 2; ++part) {
    if (!output_mask[part]) continue;
    const ConvDirection direction =
        part == 0 ? ConvDirection::kBackwardData : ConvDirection::kBackwardWeight;
    std::optional<ConvProblem> problem;
    if (go.dim() == dims && go.is_contiguous(format) && go.scalar_type() == in.scalar_type()) {
      problem = ConvProblemOf(in, weight, padding, stride, dilation, groups, direction);
    } else {
      CountPass(PassReason::kConvLayout);
    }
    if (problem && ConvOutputSizes(*problem) == go.sizes().vec()) {
      if (part == 0) {
        grad_input = at::empty_like(in, in.options(), format);
        if (TryRouteConv(*problem, grad_input.data_ptr(), weight.data_ptr(), go.data_ptr(), in)) {
          continue;
        }
      } else {
        grad_weight = at::empty_like(weight, weight.options(), format);
        if (TryRouteConv(*problem, in.data_ptr(), grad_weight.data_ptr(), go.data_ptr(), in)) {
          continue;
        }
      }
    }
    rest[part] = true;
  }
  if (output_mask[2]) grad_bias = dims == 5 ? go.sum({0, 2, 3, 4}) : go.sum({0, 2, 3});
  if (rest[0] || rest[1]) {
    auto [gi, gw, gb] = fallback(rest);
    if (rest[0]) grad_input = gi;
    if (rest[1]) grad_weight = gw;
  }
  return {grad_input, grad_weight, grad_bias};
}

at::Tensor CountedCudnnConvolutionTranspose(const at::Tensor& input, const at::Tensor& weight,
                                            c10::SymIntArrayRef padding,
                                            c10::SymIntArrayRef output_padding,
                                            c10::SymIntArrayRef stride,
                                            c10::SymIntArrayRef dilation, c10::SymInt groups,
                                            bool benchmark, bool deterministic, bool allow_tf32) {
  CountPass(PassReason::kConvTransposed);
  return at::cuda::cudnn_convolution_transpose_symint(input, weight, padding, output_padding,
                                                      stride, dilation, std::move(groups),
                                                      benchmark, deterministic, allow_tf32);
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

void Configure(std::vector<std::string> rule_texts, int64_t time_top_k, bool share_across_n,
               int64_t conv_time_top_k) {
  std::vector<RouteRule> rules;
  for (const std::string& text : rule_texts) {
    StatusOr<RouteRule> rule = ParseRouteRule(text);
    TORCH_CHECK(rule.ok(), "kselect: ", rule.status().message());
    rules.push_back(std::move(*rule));
  }
  TORCH_CHECK(time_top_k >= 0 && time_top_k <= 64, "kselect: time_top_k is ", time_top_k,
              " (0-64)");
  TORCH_CHECK(conv_time_top_k >= 0 && conv_time_top_k <= 64, "kselect: conv_time_top_k is ",
              conv_time_top_k, " (0-64)");
  RoutingState& s = State();
  std::lock_guard lock(s.mutex);
  s.rules = std::move(rules);
  s.time_top_k = static_cast<int>(time_top_k);
  s.share_across_n = share_across_n;
  s.conv_time_top_k = static_cast<int>(conv_time_top_k);
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
    lib->impl("cudnn_convolution", TORCH_FN(RoutedCudnnConvolution));
    lib->impl("convolution_backward", TORCH_FN(RoutedConvolutionBackward));
    lib->impl("cudnn_convolution_transpose", TORCH_FN(CountedCudnnConvolutionTranspose));
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
  j["routed_calls"] = s.routed.load() + s.routed_convs.load();
  j["routed_conv_calls"] = s.routed_convs.load();
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
  nlohmann::json decision_files = nlohmann::json::array();
  double decide_seconds = 0;
  std::lock_guard lock(s.mutex);
  j["rules"] = nlohmann::json::array();
  for (const RouteRule& rule : s.rules) {
    if (rule.conv) {
      j["rules"].push_back(
          {{"kind", "conv"},
           {"direction", rule.direction ? std::string(ConvDirectionName(*rule.direction)) : "*"},
           {"model", rule.model_dir}});
      continue;
    }
    j["rules"].push_back({{"kind", "gemm"},
                          {"dtype", rule.dtype ? std::string(DataTypeName(*rule.dtype)) : "*"},
                          {"layout", rule.layout ? rule.layout->ToString() : "*"},
                          {"model", rule.model_dir}});
  }
  j["time_top_k"] = s.time_top_k;
  j["share_across_n"] = s.share_across_n;
  j["conv_time_top_k"] = s.conv_time_top_k;
  for (int device = 0; device < kMaxDevices; ++device) {
    KernelRouter* router = s.routers[device].load();
    if (router == nullptr) continue;
    decide_seconds += router->DecideSeconds();
    for (const RouteDecision& d : router->Decisions()) {
      decisions.push_back({{"device", device},
                           {"problem", d.problem},
                           {"model", d.model_dir},
                           {"config", d.config},
                           {"timed_configs", d.timed_configs},
                           {"vendor_kept", d.vendor_kept},
                           {"decide_ms", d.decide_ms},
                           {"select_ms", d.select_ms},
                           {"heuristic_ms", d.heuristic_ms},
                           {"can_implement_ms", d.can_implement_ms},
                           {"prepare_ms", d.prepare_ms},
                           {"timing_ms", d.timing_ms},
                           {"shared_from", d.shared_from},
                           {"note", d.note}});
    }
    for (const std::string& e : router->OpenErrors()) errors.push_back(e);
    for (const std::string& f : router->LoadedDecisionFiles()) decision_files.push_back(f);
  }
  j["decisions"] = decisions;
  j["decision_files"] = decision_files;
  j["decide_seconds"] = decide_seconds;
  j["model_errors"] = errors;
  return j.dump();
}

// The routers in use (those of the current rules), under the state's lock.
std::vector<KernelRouter*> CurrentRouters(RoutingState& s) {
  std::vector<KernelRouter*> routers;
  for (auto& router : s.routers) {
    if (KernelRouter* r = router.load()) routers.push_back(r);
  }
  return routers;
}

int64_t SaveDecisions(std::string dir) {
  TORCH_CHECK(!dir.empty() && dir.find('\0') == std::string::npos,
              "kselect: save_decisions needs a folder");
  RoutingState& s = State();
  std::lock_guard lock(s.mutex);
  int64_t saved = 0;
  for (KernelRouter* router : CurrentRouters(s)) {
    StatusOr<int> files = router->SaveDecisions(dir);
    TORCH_CHECK(files.ok(), "kselect: ", files.status().message());
    saved += *files;
  }
  return saved;
}

// `dir` empty: routers made from now read none.
void LoadDecisions(std::string dir) {
  TORCH_CHECK(dir.find('\0') == std::string::npos, "kselect: load_decisions needs a folder");
  RoutingState& s = State();
  std::lock_guard lock(s.mutex);
  s.decisions_dir = dir;
  if (dir.empty()) return;
  for (KernelRouter* router : CurrentRouters(s)) router->LoadDecisionsFrom(dir);
}

void ResetCounts() {
  RoutingState& s = State();
  s.routed.store(0);
  s.routed_convs.store(0);
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
  m.def(
      "_configure(str[] rules, int time_top_k, bool share_across_n=True, "
      "int conv_time_top_k=5) -> ()",
      &kselect::Configure);
  m.def("_route_aten(bool on) -> bool", &kselect::RouteAten);
  m.def("_summary() -> str", &kselect::Summary);
  m.def("_reset_counts() -> ()", &kselect::ResetCounts);
  m.def("_save_decisions(str dir) -> int", &kselect::SaveDecisions);
  m.def("_load_decisions(str dir) -> ()", &kselect::LoadDecisions);
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
