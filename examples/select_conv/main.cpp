// Embedding kselect's convolution selection: open one model directory per direction (fwd,
// bwd_data, bwd_weight; each model says which it is), ask each for the cuDNN engine config of a
// few layers of real networks, and, where there is a GPU, run the choice through kselect::Conv
// and check the written tensor against the verify module's double-precision host reference on
// the same random inputs. With --time-top-k K, dispatch times the model's K best-ranked configs
// at each layer's first call and runs the fastest (SelectorOptions::time_top_k); the example
// then times what dispatch runs against cuDNN's own first pick (heuristic mode A) on the same
// buffers, interleaved, and prints the speedup.
//
//   select_conv [--time-top-k K] <model dir> [<model dir> ...]
//
// Exits 0 when every check passes (or there is no GPU to run on), 1 otherwise.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kselect/features.h"
#include "kselect/model.h"
#include "kselect/selector.h"
#include "kselect/verify.h"

namespace {

struct Layer {
  const char* what;
  kselect::ConvProblem problem;  // direction set per model
};

kselect::ConvProblem Conv2d(int64_t n, int64_t c, int64_t k, int64_t hw, int64_t filter,
                            int64_t stride, int64_t groups) {
  kselect::ConvProblem p;  // bf16, channels last, fp32 accumulation
  p.n = n;
  p.c = c;
  p.k = k;
  p.g = groups;
  p.hi = p.wi = hw;
  p.y = p.x = filter;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = filter / 2;
  return p;
}

std::vector<Layer> Layers() {
  std::vector<Layer> layers = {
      {"ResNet-50 stage 2, 3x3 conv, batch 8", Conv2d(8, 64, 64, 56, 3, 1, 1)},
      {"ResNet-50 stage 3 downsample, 1x1 stride 2, batch 8", Conv2d(8, 256, 512, 56, 1, 2, 1)},
      {"MobileNetV2 depthwise 3x3, batch 4", Conv2d(4, 144, 144, 56, 3, 1, 144)},
      {"ResNeXt-50 grouped 3x3 (32 groups), batch 2", Conv2d(2, 256, 256, 28, 3, 1, 32)},
  };
  kselect::ConvProblem video = Conv2d(2, 64, 64, 28, 3, 1, 1);  // R(2+1)D-style 3D
  video.di = 8;
  video.z = 3;
  video.pad_d = 1;
  layers.push_back({"3D conv 3x3x3, 8 frames, batch 2", video});
  return layers;
}

void PrintSelection(const Layer& layer, const kselect::Selection& selection) {
  std::printf("%s: %s\n", layer.what, kselect::ProblemToString(selection.problem).c_str());
  std::printf("  decided by: %s",
              std::string(kselect::DecisionPathName(selection.decided_by)).c_str());
  std::printf(", %zu of %zu candidates scored%s\n", selection.candidates_scored,
              selection.candidates_considered,
              selection.can_implement_checked ? ", checked on this GPU" : "");
  if (!selection.note.empty()) std::printf("  note: %s\n", selection.note.c_str());
  const size_t shown = std::min<size_t>(3, selection.ranked.size());
  for (size_t i = 0; i < shown; ++i) {
    const kselect::RankedConfig& ranked = selection.ranked[i];
    std::printf("  %zu. %-40s score %9.4g\n", i + 1, kselect::DescribeConfig(ranked.config).c_str(),
                ranked.score);
  }
}

// ------------------------------------------------------------------------------------ GPU part

#define CHECK_CUDA(call)                                                         \
  do {                                                                           \
    const cudaError_t error = (call);                                            \
    if (error != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(error)); \
      return false;                                                              \
    }                                                                            \
  } while (0)
#define CHECK_STATUS(expr)                                                       \
  do {                                                                           \
    const kselect::Status status = (expr);                                       \
    if (!status.ok()) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #expr, status.ToString().c_str()); \
      return false;                                                              \
    }                                                                            \
  } while (0)

struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};

constexpr int64_t kWorkspaceBytes = 256ll << 20;

// Median milliseconds per launch of `ran` and of `heuristic`, timed in alternating batches on
// the same buffers (so both see the same clocks), or false on an error.
bool TimeAgainstHeuristic(kselect::Selector& selector, const kselect::ConvProblem& problem,
                          const kselect::RankedConfig& ran, const kselect::RankedConfig& heuristic,
                          const kselect::KernelOperands& operands, double* ran_ms,
                          double* heuristic_ms) {
  constexpr int kLaunches = 20, kRounds = 9;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> times[2];
  const kselect::RankedConfig* configs[2] = {&ran, &heuristic};
  for (int round = 0; round < kRounds + 1; ++round) {  // round 0 warms up
    for (int which = 0; which < 2; ++which) {
      CHECK_CUDA(cudaEventRecord(start));
      for (int i = 0; i < kLaunches; ++i) {
        const auto launched =
            kselect::DispatchRanked(selector, problem, std::span(configs[which], 1),
                                    kselect::DecisionPath::kModel, operands, nullptr);
        CHECK_STATUS(launched.status());
      }
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (round > 0) times[which].push_back(ms / kLaunches);
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  for (auto& t : times) std::sort(t.begin(), t.end());
  *ran_ms = times[0][kRounds / 2];
  *heuristic_ms = times[1][kRounds / 2];
  return true;
}

// Runs the layer through kselect::Conv, checks the written tensor against the host reference
// and times the dispatch. False when anything failed or the result is wrong.
// Appends the speedup of what dispatch ran over cuDNN's first pick to `speedups`.
bool RunAndCheck(kselect::Selector& selector, const Layer& layer, std::mt19937_64& rng,
                 std::vector<double>& speedups) {
  const kselect::ConvProblem& problem = layer.problem;
  const std::vector<kselect::OperandSpec> specs = kselect::ConvOperandSpecs(problem, 16);
  DeviceBuffer buffers[3], workspace;
  std::vector<std::vector<uint8_t>> host(3);
  size_t written = 0;
  for (size_t i = 0; i < 3; ++i) {
    const kselect::OperandSpec& spec = specs[i];
    CHECK_CUDA(cudaMalloc(&buffers[i].ptr, static_cast<size_t>(spec.bytes)));
    if (spec.access == kselect::OperandAccess::kWrite) {
      written = i;
      // NaN bytes: an element the kernel leaves unwritten cannot pass.
      CHECK_CUDA(cudaMemset(buffers[i].ptr, kselect::verify::kPoisonByte,
                            static_cast<size_t>(spec.bytes)));
    } else {
      CHECK_STATUS(kselect::verify::FillDeviceRandom(buffers[i].ptr, spec.bytes, spec.dtype, rng));
    }
    host[i].resize(static_cast<size_t>(spec.bytes));
  }
  CHECK_CUDA(cudaMalloc(&workspace.ptr, kWorkspaceBytes));
  // The first call prepares the plans (and, with time_top_k, times the top k): its cost once.
  const auto first_call = std::chrono::steady_clock::now();
  const kselect::StatusOr<kselect::DispatchInfo> info =
      kselect::Conv(selector, problem, buffers[0].ptr, buffers[1].ptr, buffers[2].ptr,
                    workspace.ptr, kWorkspaceBytes, nullptr);
  if (!info.ok()) {
    std::fprintf(stderr, "  kselect::Conv failed: %s\n", info.status().ToString().c_str());
    return false;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  const double first_call_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first_call)
          .count();
  std::vector<std::vector<double>> decoded(3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK_CUDA(cudaMemcpy(host[i].data(), buffers[i].ptr, host[i].size(), cudaMemcpyDeviceToHost));
    if (i == written) continue;  // the reference does not read the written operand
    auto values = kselect::verify::DecodeElements(host[i], specs[i].dtype);
    if (!values.ok()) return false;
    decoded[i] = std::move(*values);
  }
  const auto reference =
      kselect::verify::HostConvReference(problem, decoded[0], decoded[1], decoded[2]);
  const auto tolerance = kselect::verify::ToleranceFor(problem);
  if (!reference.ok() || !tolerance.ok()) {
    std::fprintf(stderr, "  reference failed: %s\n",
                 (reference.ok() ? tolerance.status() : reference.status()).ToString().c_str());
    return false;
  }
  const kselect::verify::CheckResult check = kselect::verify::CompareWithReference(
      host[written], specs[written].dtype, *reference, *tolerance);

  // Time the dispatch as the application calls it (the plan is prepared and cached by now).
  constexpr int kRepeats = 20;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < kRepeats; ++i) {
    const auto timed = kselect::Conv(selector, problem, buffers[0].ptr, buffers[1].ptr,
                                     buffers[2].ptr, workspace.ptr, kWorkspaceBytes, nullptr);
    if (!timed.ok()) {
      std::fprintf(stderr, "  kselect::Conv failed: %s\n", timed.status().ToString().c_str());
      return false;
    }
  }
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float total_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&total_ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double ms = total_ms / kRepeats;
  std::printf("  ran rank %d (%s): %.4f ms, %.1f TFLOPS; %s (%s written): %s\n", info->rank,
              kselect::DescribeConfig(info->config).c_str(), ms,
              problem.Flops() / (ms * 1e-3) / 1e12, check.ToString().c_str(),
              specs[written].name.c_str(), check.passed ? "PASS" : "FAIL");
  if (!info->note.empty()) std::printf("  dispatch note: %s\n", info->note.c_str());
  std::printf("  first call (plans prepared%s): %.1f ms\n",
              selector.options().time_top_k >= 2 ? ", top k timed" : "", first_call_ms);

  // What dispatch runs against cuDNN's own first pick, on the same buffers, interleaved.
  const auto picks = selector.HeuristicPicks(problem, 1);
  if (picks.ok() && !picks->empty()) {
    kselect::KernelOperands operands;
    operands.buffers = {buffers[0].ptr, buffers[1].ptr, buffers[2].ptr};
    operands.workspace = workspace.ptr;
    operands.workspace_bytes = kWorkspaceBytes;
    const kselect::RankedConfig ran{info->config}, heuristic{picks->front()};
    double ran_ms = 0, heuristic_ms = 0;
    if (!TimeAgainstHeuristic(selector, problem, ran, heuristic, operands, &ran_ms,
                              &heuristic_ms)) {
      return false;
    }
    speedups.push_back(heuristic_ms / ran_ms);
    std::printf("  live A/B: %.4f ms vs cuDNN's first pick (%s) %.4f ms: %.3fx\n", ran_ms,
                kselect::DescribeConfig(heuristic.config).c_str(), heuristic_ms,
                heuristic_ms / ran_ms);
  } else {
    std::printf("  live A/B skipped: %s\n",
                picks.ok() ? "cuDNN listed no config" : picks.status().ToString().c_str());
  }
  return check.passed;
}

}  // namespace

int main(int argc, char** argv) {
  long time_top_k = 0;
  int first_model = 1;
  bool bad_k = false;
  if (argc > 2 && std::strcmp(argv[1], "--time-top-k") == 0) {
    char* end = nullptr;
    time_top_k = std::strtol(argv[2], &end, 10);
    bad_k = end == argv[2] || *end != '\0' || time_top_k < 0 || time_top_k > 64;
    first_model = 3;
  }
  if (argc <= first_model || bad_k) {
    std::fprintf(stderr, "usage: %s [--time-top-k K] <model dir> [<model dir> ...]\n", argv[0]);
    return 2;
  }
  int devices = 0;
  const bool have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  std::mt19937_64 rng(2024);
  int failed = 0;
  std::vector<double> speedups;  // over cuDNN's first pick, one per layer run
  for (int arg = first_model; arg < argc; ++arg) {
    kselect::SelectorOptions options;
    options.top_k = std::max(3, static_cast<int>(time_top_k));
    options.time_top_k = static_cast<int>(time_top_k);
    auto selector = kselect::Selector::Open(argv[arg], options);
    if (!selector.ok()) {
      std::fprintf(stderr, "cannot open %s: %s\n", argv[arg], selector.status().ToString().c_str());
      ++failed;
      continue;
    }
    const auto& direction = (*selector)->model().spec().conv_direction;
    if (!direction) {
      std::fprintf(stderr, "%s is not a convolution model\n", argv[arg]);
      ++failed;
      continue;
    }
    std::printf("== %s model: %s\n", std::string(kselect::ConvDirectionName(*direction)).c_str(),
                argv[arg]);
    for (Layer layer : Layers()) {
      layer.problem.direction = *direction;
      const auto selection = (*selector)->Select(layer.problem);
      if (!selection.ok()) {
        std::fprintf(stderr, "%s: %s\n", layer.what, selection.status().ToString().c_str());
        ++failed;
        continue;
      }
      PrintSelection(layer, **selection);
      if (have_gpu && !RunAndCheck(**selector, layer, rng, speedups)) ++failed;
    }
  }
  if (!have_gpu) std::printf("no GPU here: the dispatch part (kselect::Conv) was skipped\n");
  if (!speedups.empty()) {
    double log_sum = 0;
    for (double s : speedups) log_sum += std::log(s);
    std::printf(
        "live A/B over cuDNN's first pick: geomean %.4fx over %zu layers (time_top_k %ld)\n",
        std::exp(log_sum / static_cast<double>(speedups.size())), speedups.size(), time_top_k);
  }
  std::printf("%s\n", failed == 0 ? "PASS" : "FAIL");
  return failed == 0 ? 0 : 1;
}
