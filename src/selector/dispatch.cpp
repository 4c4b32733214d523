// kselect::Gemm and kselect::Conv: the selector's choice run on the caller's buffers, falling back
// down the ranking when a config cannot be prepared or launched; with time_top_k, the best-ranked
// few are timed at a problem's first dispatch and the fastest runs from then on.
#include <algorithm>
#include <mutex>
#include <numeric>

#include "core/statistics.h"
#include "cuda/runtime.h"
#include "kselect/selector.h"
#include "kselect/verify.h"
#include "selector/first_use_timing.h"

namespace kselect {
namespace {

// First-use timing: batches of launches at least this long (small kernels are batched so that
// the events' resolution and launch gaps do not decide), this many per config, interleaved.
constexpr double kTimedBatchMs = 0.3;
constexpr int kTimedBatches = 7;
constexpr int kMaxLaunchesPerBatch = 128;

// The prepared kernel of (problem, config), prepared on first use; the caller holds the
// selector's dispatch mutex.
StatusOr<PreparedKernel*> PreparedLocked(
    std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared,
    KernelProvider& provider, const Problem& problem, const std::string& problem_key,
    const KernelConfig& config) {
  const std::string key = problem_key + "|" + ConfigKey(config);
  auto it = prepared.find(key);
  if (it == prepared.end()) {
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> made,
                             provider.Prepare(problem, config));
    it = prepared.emplace(key, std::move(made)).first;
  }
  return it->second.get();
}

// Times the first `count` configs of `ranked` that prepare and fit the workspace (see
// TimeContendersAtFirstUse). The caller holds the dispatch mutex.
StatusOr<std::vector<std::string>> TimeFirstUse(
    std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared,
    KernelProvider& provider, const Problem& problem, const std::string& problem_key,
    std::span<const RankedConfig> ranked, size_t count, const KernelOperands& operands,
    bool cold_l2, cudaStream_t stream) {
  std::vector<FirstUseContender> contenders;
  for (size_t r = 0; r < ranked.size() && contenders.size() < count; ++r) {
    const KernelConfig& config = ranked[r].config;
    if (ProviderOf(config) != provider.id()) continue;
    auto kernel = PreparedLocked(prepared, provider, problem, problem_key, config);
    if (!kernel.ok() || (*kernel)->WorkspaceBytes() > operands.workspace_bytes) continue;
    contenders.push_back({ConfigKey(config), *kernel});
  }
  if (contenders.size() < 2) return std::vector<std::string>{};
  KSELECT_ASSIGN_OR_RETURN(std::vector<OperandSpec> specs, provider.Operands(problem));
  return TimeContendersAtFirstUse(std::move(contenders), specs, operands, cold_l2, stream);
}

// The operand sets first-use timing cycles through: set 0 = `operands` (with the written ones
// already replaced by scratch copies), then copies of the read operands, laid out one set after
// another in `copies`, as many as the bench's rotation past 2 x L2 has sets (RotatingSetCount).
// Only set 0 where the copies do not fit in device memory: timing warm is better than failing the
// call.
StatusOr<std::vector<KernelOperands>> ColdL2Sets(const std::vector<OperandSpec>& specs,
                                                 const KernelOperands& operands,
                                                 cuda::DeviceBuffer& copies, cudaStream_t stream) {
  constexpr int64_t kAlignment = 256;
  std::vector<int64_t> offset(specs.size(), -1);  // within a set; -1 = not copied
  std::vector<OperandSpec> read;
  int64_t set_bytes = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].access != OperandAccess::kRead) continue;
    read.push_back(specs[i]);
    offset[i] = set_bytes;
    set_bytes += (specs[i].bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  int device = 0;
  int l2 = 0;
  KSELECT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  KSELECT_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const int64_t count = read.empty() ? 1 : verify::RotatingSetCount(read, 2 * int64_t{l2});
  std::vector<KernelOperands> sets = {operands};
  if (count < 2 || !copies.Reserve((count - 1) * set_bytes).ok()) return sets;
  auto* base = static_cast<char*>(copies.data());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (offset[i] < 0) continue;
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + offset[i], operands.buffers[i],
                                                 static_cast<size_t>(specs[i].bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
  }
  // The other copies double from the first: log2(count) copies, not one per operand and set.
  for (int64_t made = 1; made < count - 1; made *= 2) {
    const int64_t more = std::min(made, count - 1 - made);
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + made * set_bytes, base,
                                                 static_cast<size_t>(more * set_bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
  }
  for (int64_t set = 1; set < count; ++set) {
    KernelOperands copy = operands;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (offset[i] >= 0) copy.buffers[i] = base + (set - 1) * set_bytes + offset[i];
    }
    sets.push_back(std::move(copy));
  }
  return sets;
}

}  // namespace

StatusOr<std::vector<std::string>> TimeContendersAtFirstUse(
    std::vector<FirstUseContender> contenders, const std::vector<OperandSpec>& specs,
    const KernelOperands& operands, bool cold_l2, void* stream_handle) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  struct Timed {
    std::string key;
    PreparedKernel* kernel = nullptr;
    int launches = 1;
    std::vector<double> ms_per_launch;
  };
  std::vector<Timed> timed;
  for (FirstUseContender& c : contenders) timed.push_back({std::move(c.key), c.kernel, 1, {}});
  if (timed.size() < 2) return std::vector<std::string>{};
  if (specs.size() != operands.buffers.size()) {
    return InvalidArgumentError("dispatch: " + std::to_string(operands.buffers.size()) +
                                " operands given, the problem has " + std::to_string(specs.size()));
  }
  KernelOperands scratch_operands = operands;
  std::vector<cuda::DeviceBuffer> scratch(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].access == OperandAccess::kRead) continue;
    KSELECT_RETURN_IF_ERROR(scratch[i].Reserve(specs[i].bytes));
    KSELECT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(scratch[i].data(), operands.buffers[i],
                                                 static_cast<size_t>(specs[i].bytes),
                                                 cudaMemcpyDeviceToDevice, stream));
    scratch_operands.buffers[i] = scratch[i].data();
  }
  cuda::DeviceBuffer read_copies;
  std::vector<KernelOperands> sets = {scratch_operands};
  if (cold_l2) {
    KSELECT_ASSIGN_OR_RETURN(sets, ColdL2Sets(specs, scratch_operands, read_copies, stream));
  }
  size_t next_set = 0;  // launches cycle through the sets across batches and contenders
  KSELECT_ASSIGN_OR_RETURN(cuda::EventTimer timer, cuda::EventTimer::Create());
  auto time_batch = [&](Timed& t) -> StatusOr<double> {
    KSELECT_RETURN_IF_ERROR(timer.Start(stream));
    for (int i = 0; i < t.launches; ++i) {
      KSELECT_RETURN_IF_ERROR(t.kernel->Launch(sets[next_set], stream));
      next_set = (next_set + 1) % sets.size();
    }
    KSELECT_RETURN_IF_ERROR(timer.Stop(stream));
    KSELECT_ASSIGN_OR_RETURN(double ms, timer.ElapsedMs());
    return ms / t.launches;
  };
  // Warm-up: two launches each; the second sizes its batches. A first launch can load the
  // kernel's module (lazy loading) or meet idle clocks: sized from it, a config got one launch
  // per batch and paid the launch gaps the others amortise, which made the timing pick
  // against it (seen on an H200 with cuDNN's runtime-compiled engines). A config that fails
  // here leaves the timing (the dispatch loop reports it if it comes to run it); a device in
  // error fails the batches below.
  std::vector<Timed> runnable;
  for (Timed& t : timed) {
    if (!time_batch(t).ok()) continue;
    auto ms = time_batch(t);
    if (!ms.ok()) continue;
    t.launches =
        std::clamp(static_cast<int>(kTimedBatchMs / std::max(*ms, 1e-4)), 1, kMaxLaunchesPerBatch);
    runnable.push_back(std::move(t));
  }
  if (runnable.size() < 2) return std::vector<std::string>{};
  // One untimed round of whole batches, so that the timed ones start at working clocks.
  for (Timed& t : runnable) KSELECT_RETURN_IF_ERROR(time_batch(t).status());
  for (int batch = 0; batch < kTimedBatches; ++batch) {
    // A rotated order each batch, so that no config always follows the same one.
    for (size_t i = 0; i < runnable.size(); ++i) {
      Timed& t = runnable[(i + static_cast<size_t>(batch)) % runnable.size()];
      KSELECT_ASSIGN_OR_RETURN(double ms, time_batch(t));
      t.ms_per_launch.push_back(ms);
    }
  }
  std::vector<std::pair<double, std::string>> medians;
  for (Timed& t : runnable) medians.emplace_back(Median(std::move(t.ms_per_launch)), t.key);
  // Stable: between equal medians the model's order decides.
  std::stable_sort(medians.begin(), medians.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> order;
  for (auto& [ms, key] : medians) order.push_back(std::move(key));
  return order;  // ElapsedMs waited for the last batch: the scratch and copies are free to go
}

StatusOr<const std::vector<std::string>*> FirstUseOrder(
    std::unordered_map<std::string, std::vector<std::string>>& orders,
    const std::string& problem_key, void* stream,
    const std::function<StatusOr<std::vector<std::string>>()>& time_now, int* timed,
    std::string* note) {
  *timed = 0;
  auto it = orders.find(problem_key);
  if (it != orders.end()) return &it->second;
  auto capture = cudaStreamCaptureStatusNone;
  KSELECT_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    *note = "not timed: the stream is being captured into a graph";
    return nullptr;
  }
  KSELECT_ASSIGN_OR_RETURN(std::vector<std::string> order, time_now());
  *timed = static_cast<int>(order.size());
  return &orders.emplace(problem_key, std::move(order)).first->second;
}

std::vector<size_t> TimedFirst(std::span<const RankedConfig> ranked,
                               std::span<const std::string> timed_order) {
  std::vector<size_t> order;
  for (const std::string& key : timed_order) {
    for (size_t r = 0; r < ranked.size(); ++r) {
      if (ConfigKey(ranked[r].config) == key) {
        order.push_back(r);
        break;
      }
    }
  }
  for (size_t r = 0; r < ranked.size(); ++r) {
    if (std::find(order.begin(), order.end(), r) == order.end()) order.push_back(r);
  }
  return order;
}

StatusOr<PreparedKernel*> PreparedForDispatch(Selector& selector, const Problem& problem,
                                              const KernelConfig& config) {
  KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.provider());
  if (ProviderOf(config) != provider->id()) {
    return InvalidArgumentError(DescribeConfig(config) + ": not a " +
                                std::string(ProviderName(provider->id())) + " config");
  }
  std::lock_guard lock(selector.dispatch_mutex());
  return PreparedLocked(selector.prepared_kernels(), *provider, problem, ProblemToString(problem),
                        config);
}

StatusOr<DispatchInfo> Gemm(Selector& selector, const GemmProblem& problem, const void* a,
                            const void* b, void* c, void* workspace, int64_t workspace_bytes,
                            void* stream) {
  KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector.Select(problem));
  return GemmRanked(selector, problem, selection->ranked, selection->path, a, b, c, workspace,
                    workspace_bytes, stream);
}

StatusOr<DispatchInfo> GemmRanked(Selector& selector, const GemmProblem& problem,
                                  std::span<const RankedConfig> ranked, DecisionPath path,
                                  const void* a, const void* b, void* c, void* workspace,
                                  int64_t workspace_bytes, void* stream) {
  if (a == nullptr || b == nullptr || c == nullptr) {
    return InvalidArgumentError("Gemm: A, B and C must be device pointers, not null");
  }
  KernelOperands operands;
  operands.buffers = {const_cast<void*>(a), const_cast<void*>(b), c};
  operands.workspace = workspace;
  operands.workspace_bytes = workspace_bytes;
  return DispatchRanked(selector, problem, ranked, path, operands, stream);
}

StatusOr<DispatchInfo> Conv(Selector& selector, const ConvProblem& problem, void* x, void* w,
                            void* y, void* workspace, int64_t workspace_bytes, void* stream) {
  if (x == nullptr || w == nullptr || y == nullptr) {
    return InvalidArgumentError("Conv: x, w and y must be device pointers, not null");
  }
  KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector.Select(problem));
  KernelOperands operands;
  operands.buffers = {x, w, y};  // ConvOperandSpecs' order
  operands.workspace = workspace;
  operands.workspace_bytes = workspace_bytes;
  return DispatchRanked(selector, problem, selection->ranked, selection->path, operands, stream);
}

StatusOr<DispatchInfo> DispatchRanked(Selector& selector, const Problem& problem,
                                      std::span<const RankedConfig> ranked, DecisionPath path,
                                      const KernelOperands& operands, void* stream) {
  const int64_t workspace_bytes = operands.workspace_bytes;
  if (workspace_bytes < 0 || (operands.workspace == nullptr && workspace_bytes > 0)) {
    return InvalidArgumentError("workspace_bytes must be >= 0, with a buffer when > 0");
  }
  KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, selector.provider());
  const std::string problem_key = ProblemToString(problem);
  // The order to try, as indices into `ranked`: with first-use timing, the timed configs
  // fastest first, then the rest as ranked.
  std::vector<size_t> order(ranked.size());
  std::iota(order.begin(), order.end(), size_t{0});
  int timed_configs = 0;
  std::string timing_note;
  const size_t time_top_k = static_cast<size_t>(std::max(selector.options().time_top_k, 0));
  if (time_top_k >= 2 && ranked.size() >= 2) {
    std::lock_guard lock(selector.dispatch_mutex());
    KSELECT_ASSIGN_OR_RETURN(const std::vector<std::string>* timed,
                             FirstUseOrder(
                                 selector.first_use_orders(), problem_key, stream,
                                 [&] {
                                   return TimeFirstUse(selector.prepared_kernels(), *provider,
                                                       problem, problem_key, ranked, time_top_k,
                                                       operands,
                                                       selector.options().first_use_cold_l2,
                                                       static_cast<cudaStream_t>(stream));
                                 },
                                 &timed_configs, &timing_note));
    if (timed != nullptr && !timed->empty()) order = TimedFirst(ranked, *timed);
  }
  std::string failures;
  for (size_t r : order) {
    const KernelConfig& config = ranked[r].config;
    if (ProviderOf(config) != provider->id()) {
      failures += (failures.empty() ? "" : "; ") + DescribeConfig(config) + ": not a " +
                  std::string(ProviderName(provider->id())) + " config";
      continue;
    }
    auto fail = [&](const std::string& why) {
      failures += (failures.empty() ? "" : "; ") + DescribeConfig(config) + ": " + why;
    };
    PreparedKernel* kernel = nullptr;
    {
      std::lock_guard lock(selector.dispatch_mutex());
      auto made =
          PreparedLocked(selector.prepared_kernels(), *provider, problem, problem_key, config);
      if (!made.ok()) {
        fail(made.status().message());
        continue;
      }
      kernel = *made;
    }
    if (kernel->WorkspaceBytes() > workspace_bytes) {
      fail("needs " + std::to_string(kernel->WorkspaceBytes()) + " bytes of workspace, given " +
           std::to_string(workspace_bytes));
      continue;
    }
    const Status launched = kernel->Launch(operands, stream);
    if (!launched.ok()) {
      fail(launched.message());
      continue;
    }
    DispatchInfo info;
    info.config = config;
    info.path = path;
    info.rank = static_cast<int>(r + 1);
    info.timed_configs = timed_configs;
    if (!failures.empty()) info.note = "fell back past " + failures;
    if (timed_configs > 0) {
      info.note += std::string(info.note.empty() ? "" : "; ") + "timed the top " +
                   std::to_string(timed_configs) + " at first use: rank " +
                   std::to_string(info.rank) + " was the fastest";
    }
    if (!timing_note.empty()) info.note += (info.note.empty() ? "" : "; ") + timing_note;
    return info;
  }
  return CannotImplementError("none of the " + std::to_string(ranked.size()) +
                              " selected configs for " + problem_key + " ran: " + failures);
}

}  // namespace kselect
