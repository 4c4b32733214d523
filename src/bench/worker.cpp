#include "bench/worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "core/json_codec.h"
#include "core/pipes.h"
#include "core/statistics.h"
#include "cuda/gpu_state.h"
#include "cuda/runtime.h"
#include "kselect/hardware.h"
#include "kselect/provider.h"
#include "kselect/timing.h"
#include "kselect/verify.h"
#include "timing/gated_regions.h"

namespace kselect::bench {
namespace {

using nlohmann::json;

using cuda::RuntimeErrorText;

// The GPU state of one worker: provider, stream, event timers and the rotated operand sets.
class WorkerDevice {
 public:
  WorkerDevice(const BenchOptions& options, int device) : options_(options), device_(device) {
    ProviderOptions po;
    po.device = device;
    po.max_workspace_bytes = options.max_workspace_bytes;
    // The file the bench loaded, so a generating provider reads the rule set the run records.
    po.rule_set = options.rules.path.empty() ? options.rules.name : options.rules.path;
    auto created = CreateProvider(options.provider, po);
    if (created.ok()) provider_ = std::move(created).value();
  }
  ~WorkerDevice() { FreeBuffers(); }

  KernelProvider* provider() { return provider_.get(); }

  Status Init() {
    if (provider_ == nullptr) return UnavailableError("no provider");
    if (stream_ != nullptr) return Status::Ok();
    cudaError_t e = cudaSetDevice(device_);
    if (e != cudaSuccess) return UnavailableError("cudaSetDevice: " + RuntimeErrorText(e));
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_);
    l2_bytes_ = l2;
    if ((e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)) != cudaSuccess)
      return UnavailableError("cudaStreamCreate: " + RuntimeErrorText(e));
    StatusOr<timing::GatedRegions> regions = timing::GatedRegions::Create(options_.repeats + 1);
    if (!regions.ok()) return UnavailableError(regions.status().message());
    regions_.emplace(std::move(regions).value());
    // Clocks, power and temperature per row where NVML is there; rows say 0 where it is not.
    if (auto sampler = cuda::GpuStateSampler::Open(device_); sampler.ok())
      state_sampler_ = std::move(sampler).value();
    return Status::Ok();
  }

  // Allocates and fills the operand sets for `p`, one buffer per operand the provider
  // described (kept while consecutive requests share the problem).
  Status Setup(const Problem& p, const std::vector<OperandSpec>& operands) {
    const std::string key = ProblemToString(p);
    if (key == problem_key_) return Status::Ok();
    FreeBuffers();
    const int64_t target = options_.rotate_bytes > 0 ? options_.rotate_bytes : 2 * l2_bytes_;
    KSELECT_ASSIGN_OR_RETURN(operands_,
                             verify::DeviceOperands::CreateRotating(
                                 operands, std::max<int64_t>(options_.max_workspace_bytes, 0),
                                 verify::OperandSeed(p), target));
    rotating_bytes_ = operands_->rotating_bytes();
    problem_key_ = key;
    return Status::Ok();
  }

  // Times one config; the reply object of a "time" request (the method: kselect/timing.h).
  //
  // Every timed region but the first launch starts behind a gate (timing::GatedRegions). Syncs: one
  // after the estimate, one after the first two batches (the early-abort check), one after the
  // rest.
  //
  // With a reference (drift control), every timed batch of `config` is followed at once by a
  // batch of `reference`, whose time `reference_ms` (its latest, for sizing) roughly gives: both
  // run in the same clock and power state, so config / reference compares across runs where
  // either alone drifts (docs/lab/drift.md).
  json Time(const Problem& p, const KernelConfig& config, double abort_bound_ms,
            const KernelConfig* reference = nullptr, double reference_ms = 0) {
    auto prepared = provider_->Prepare(p, config);
    if (!prepared.ok()) return Fail(prepared.status().ToString(), false);
    PreparedKernel& kernel = **prepared;
    std::unique_ptr<PreparedKernel> reference_kernel;
    if (reference != nullptr) {
      auto prepared_reference = provider_->Prepare(p, *reference);
      if (!prepared_reference.ok())
        return Fail("drift reference: " + prepared_reference.status().ToString(), false);
      reference_kernel = std::move(prepared_reference).value();
    }
    size_t next = 0;
    auto launch = [&]() -> Status { return kernel.Launch(operands_->set(next++), stream_); };
    auto launch_reference = [&]() -> Status {
      return reference_kernel->Launch(operands_->set(next++), stream_);
    };
    KSELECT_CHECK(regions_->count() >= options_.repeats + 1);
    // Region r: 0 = the estimate, 1.. = the timed batches (timing::GatedRegions).
    auto enqueue_region = [&](int r, int iters, bool gated = true,
                              int reference_iters = 0) -> Status {
      return regions_->Enqueue(r, stream_, iters, launch, gated, reference_iters, launch_reference);
    };
    auto region_ms = [&](int r, int iters, double* ms, int reference_iters = 0,
                         double* reference_batch_ms = nullptr) -> Status {
      return regions_->PerLaunchMs(r, iters, ms, reference_iters, reference_batch_ms);
    };
    // The first launch is timed without the gate: cuBLASLt loads the kernel's module lazily
    // inside it, and a module load can wait for the stream, which a shut gate would hold (seen
    // on the H200: ~40 ms per config). Ungated, the stream may idle while the host loads and
    // enqueues, so this time is an upper bound of the kernel's: when it is within the abort
    // bound it serves as the estimate; otherwise one gated launch decides. A clearly slow config
    // costs two launches, a fast one none extra.
    double estimate = 0;
    if (Status s = enqueue_region(0, 1, /*gated=*/false); !s.ok())
      return Fail(s.ToString(), IsSticky());
    if (Status s = region_ms(0, 1, &estimate); !s.ok()) return Fail(s.ToString(), IsSticky());
    // Without a bound yet (a problem's first config) the gated estimate sizes the batches; over
    // the bound, a gated launch decides. An ungated time is never trusted to abort on, even for
    // a config key launched before: one key can run another kernel variant on another problem
    // (alignment, split-K reduction), whose lazy module load (1-3 ms on the H200) the ungated
    // launch then times; trusting it recorded 0.01 ms kernels as 100x slow (session 6).
    if (abort_bound_ms <= 0 || estimate > abort_bound_ms) {
      if (Status s = enqueue_region(0, 1); !s.ok()) return Fail(s.ToString(), IsSticky());
      if (Status s = region_ms(0, 1, &estimate); !s.ok()) return Fail(s.ToString(), IsSticky());
    }
    // The GPU's state right after each synchronised region (a clock read just after the kernels
    // ran is the clock they ran at: the GPU does not drop it in microseconds).
    cuda::GpuStateSpan state;
    auto sample_state = [&] {
      if (state_sampler_ != nullptr) state.Add(state_sampler_->Sample());
    };
    sample_state();
    MeasurementMethod method = BaseMethod();
    method.warmup_iters = 1;
    method.repeats = 1;
    method.iters_per_repeat = 1;
    if (abort_bound_ms > 0 && estimate > abort_bound_ms) {
      RecordState(state, method);
      return Aborted(estimate, abort_bound_ms, 1, method);
    }
    // Warm-up: launches covering warmup_ms (none when the estimate alone covers it).
    const int warmup = estimate >= options_.warmup_ms
                           ? 0
                           : LaunchesPerBatch(options_.warmup_ms, estimate, options_.warmup_iters);
    for (int i = 0; i < warmup; ++i) {
      if (Status s = launch(); !s.ok()) return Fail(s.ToString(), IsSticky());
    }
    int iters = LaunchesPerBatch(options_.batch_ms, estimate, options_.max_iters_per_batch);
    int repeats = options_.repeats;
    const double per_batch = estimate * iters;
    if (per_batch * repeats > options_.config_budget_ms) {
      repeats =
          std::max(options_.min_repeats, static_cast<int>(options_.config_budget_ms / per_batch));
      if (per_batch * repeats > options_.config_budget_ms) {
        iters = std::max(1, static_cast<int>(options_.config_budget_ms / (estimate * repeats)));
      }
    }
    method.warmup_iters = warmup + 1;
    method.repeats = repeats;
    method.iters_per_repeat = iters;
    // The reference's batches last about as long as the config's (at least one launch).
    const int reference_iters =
        reference_kernel == nullptr
            ? 0
            : std::clamp(
                  static_cast<int>(std::lround(estimate * iters / std::max(reference_ms, 1e-4))), 1,
                  options_.max_iters_per_batch);
    std::vector<double> times(static_cast<size_t>(repeats));
    std::vector<double> reference_times(static_cast<size_t>(repeats));
    const int first_group = std::min(repeats, 2);
    for (int r = 0; r < first_group; ++r) {
      if (Status s = enqueue_region(r + 1, iters, true, reference_iters); !s.ok())
        return Fail(s.ToString(), IsSticky());
    }
    for (int r = 0; r < first_group; ++r) {
      if (Status s = region_ms(r + 1, iters, &times[static_cast<size_t>(r)], reference_iters,
                               &reference_times[static_cast<size_t>(r)]);
          !s.ok())
        return Fail(s.ToString(), IsSticky());
    }
    sample_state();
    // Early abort: two batches agree it is clearly slower than the best so far.
    if (abort_bound_ms > 0 && first_group == 2 && std::min(times[0], times[1]) > abort_bound_ms) {
      method.repeats = 2;
      RecordState(state, method);
      return Aborted(std::min(times[0], times[1]), abort_bound_ms, 2, method);
    }
    for (int r = first_group; r < repeats; ++r) {
      if (Status s = enqueue_region(r + 1, iters, true, reference_iters); !s.ok())
        return Fail(s.ToString(), IsSticky());
    }
    for (int r = first_group; r < repeats; ++r) {
      if (Status s = region_ms(r + 1, iters, &times[static_cast<size_t>(r)], reference_iters,
                               &reference_times[static_cast<size_t>(r)]);
          !s.ok())
        return Fail(s.ToString(), IsSticky());
    }
    if (repeats > first_group) sample_state();
    RecordState(state, method);
    const size_t n = times.size();
    const double median = Median(times);
    double mean = 0, var = 0;
    for (const double t : times) mean += t;
    mean /= static_cast<double>(n);
    for (const double t : times) var += (t - mean) * (t - mean);
    const double cv = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) / mean : 0;
    json reply{{"ok", true},       {"latency_ms", median},
               {"cv", cv},         {"samples", static_cast<int>(n)},
               {"aborted", false}, {"method", json_codec::MethodToJson(method)}};
    if (reference_iters > 0) reply["reference_latency_ms"] = Median(reference_times);
    return reply;
  }

 private:
  MeasurementMethod BaseMethod() const {
    MeasurementMethod m;
    m.name = "kselect.bench";
    m.timer = "cuda_events";
    m.statistic = "median";
    m.rotating_buffer_bytes = rotating_bytes_;
    return m;
  }

  static void RecordState(const cuda::GpuStateSpan& state, MeasurementMethod& method) {
    method.sm_clock_min_mhz = state.sm_clock_min_mhz;
    method.sm_clock_max_mhz = state.sm_clock_max_mhz;
    method.power_w = state.mean_power_w();
    method.temperature_c = state.temperature_max_c;
  }

  static bool IsSticky() {
    // Errors that survive cudaGetLastError's reset poison the context: the worker must go.
    const cudaError_t e = cudaDeviceSynchronize();
    return e != cudaSuccess;
  }

  static json Fail(const std::string& reason, bool fatal) {
    return json{{"ok", false}, {"reason", reason}, {"fatal", fatal}};
  }

  static json Aborted(double estimate, double bound, int samples, const MeasurementMethod& method) {
    return json{{"ok", true},
                {"latency_ms", estimate},
                {"cv", 0},
                {"samples", samples},
                {"aborted", true},
                {"abort_bound_ms", bound},
                {"method", json_codec::MethodToJson(method)}};
  }

  void FreeBuffers() {
    operands_.reset();
    problem_key_.clear();
  }

  const BenchOptions& options_;
  int device_;
  std::unique_ptr<KernelProvider> provider_;
  cudaStream_t stream_ = nullptr;
  std::optional<timing::GatedRegions> regions_;  // one per region of a config's timing
  int64_t l2_bytes_ = 0;
  std::unique_ptr<verify::DeviceOperands> operands_;  // the rotated operand sets
  int64_t rotating_bytes_ = 0;
  std::string problem_key_;
  std::unique_ptr<cuda::GpuStateSampler> state_sampler_;  // null without NVML
};

json Handle(WorkerDevice& timer, const BenchOptions& options, int device, const json& request) {
  const std::string cmd = request.value("cmd", "");
  if (cmd == "hello") {
    auto profile = QueryHardwareProfile(device);
    if (!profile.ok())
      return json{{"ok", false}, {"reason", profile.status().ToString()}, {"fatal", false}};
    return json{{"ok", true}, {"hardware", json::parse(HardwareProfileToJson(*profile, -1))}};
  }
  // Injected faults (KSELECT_BENCH_FAULT) act before any CUDA call, so the isolation machinery is
  // exercised the same way with or without a GPU.
  if (cmd == "time") {
    const std::string inject = request.value("inject", "");
    if (inject == "crash") ::raise(SIGSEGV);
    if (inject == "hang") {
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  if (Status s = timer.Init(); !s.ok())
    return json{{"ok", false}, {"reason", s.ToString()}, {"fatal", true}};
  auto problem = json_codec::ProblemFromJson(request.at("problem"), "request.problem");
  if (!problem.ok())
    return json{{"ok", false}, {"reason", problem.status().ToString()}, {"fatal", false}};
  if (cmd == "plan") {
    const double plan_start = NowSeconds();
    const RuleSet& rules = options.rules;
    auto configs = timer.provider()->Enumerate(
        *problem, SampledFilter(RuleSetFilter(rules, *problem), options.sample_fraction,
                                options.sample_seed));
    if (!configs.ok())
      return json{{"ok", false}, {"reason", configs.status().ToString()}, {"fatal", false}};
    const std::vector<KernelConfig>& kept = *configs;
    auto peers = timer.provider()->HeuristicPicks(*problem, options.heuristic_picks);
    // The provider's second heuristic (cuDNN's mode B), where it has one: its picks are timed
    // and ranked like the first's.
    auto peers_b = timer.provider()->SecondHeuristicPicks(*problem, options.heuristic_picks);
    json reply{{"ok", true},
               {"enumerated", configs->size()},
               {"seconds", NowSeconds() - plan_start},
               {"configs", json::array()},
               {"peers", json::array()},
               {"peers_b", json::array()}};
    for (const KernelConfig& c : kept)
      reply["configs"].push_back(json_codec::KernelConfigToJson(c));
    if (peers.ok()) {
      for (const KernelConfig& c : *peers)
        reply["peers"].push_back(json_codec::KernelConfigToJson(c));
    } else {
      reply["peers_error"] = peers.status().ToString();
    }
    if (peers_b.ok()) {
      for (const KernelConfig& c : *peers_b)
        reply["peers_b"].push_back(json_codec::KernelConfigToJson(c));
    } else {
      reply["peers_b_error"] = peers_b.status().ToString();
    }
    return reply;
  }
  if (cmd == "time") {
    auto config = json_codec::KernelConfigFromJson(request.at("config"), "request.config");
    if (!config.ok())
      return json{{"ok", false}, {"reason", config.status().ToString()}, {"fatal", false}};
    // The provider describes the problem's operands (CPU only); one it cannot describe is a
    // config that cannot run, not a broken worker.
    auto operands = timer.provider()->Operands(*problem);
    if (!operands.ok())
      return json{{"ok", false}, {"reason", operands.status().ToString()}, {"fatal", false}};
    if (Status s = timer.Setup(*problem, *operands); !s.ok())
      return json{{"ok", false}, {"reason", s.ToString()}, {"fatal", true}};
    std::optional<KernelConfig> reference;
    if (request.contains("reference")) {
      auto parsed = json_codec::KernelConfigFromJson(request.at("reference"), "request.reference");
      if (!parsed.ok())
        return json{{"ok", false}, {"reason", parsed.status().ToString()}, {"fatal", false}};
      reference = *parsed;
    }
    return timer.Time(*problem, *config, request.value("abort_bound_ms", 0.0),
                      reference ? &*reference : nullptr, request.value("reference_ms", 0.0));
  }
  return json{{"ok", false}, {"reason", "unknown request '" + cmd + "'"}, {"fatal", false}};
}

// The worker's loop; ends the child process with _exit (it is never the caller's process).
[[noreturn]] void WorkerMain(const BenchOptions& options, int device, int in_fd, int out_fd) {
  WorkerDevice timer(options, device);
  std::string buffer;
  char chunk[65536];
  while (true) {
    size_t newline;
    while ((newline = buffer.find('\n')) == std::string::npos) {
      const ssize_t n = ::read(in_fd, chunk, sizeof(chunk));
      if (n <= 0) _exit(0);
      buffer.append(chunk, static_cast<size_t>(n));
    }
    const std::string line = buffer.substr(0, newline);
    buffer.erase(0, newline + 1);
    json reply;
    try {
      reply = Handle(timer, options, device, json::parse(line));
    } catch (const std::exception& e) {
      reply = json{{"ok", false},
                   {"reason", std::string("worker exception: ") + e.what()},
                   {"fatal", false}};
    }
    if (!WriteAll(out_fd, reply.dump() + "\n")) _exit(1);
    if (reply.value("fatal", false)) _exit(2);
  }
}

}  // namespace

Status WorkerClient::Start() {
  int down[2], up[2];
  if (::pipe(down) != 0 || ::pipe(up) != 0)
    return IoError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) return IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(down[1]);
    ::close(up[0]);
    WorkerMain(options_, device_, down[0], up[1]);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_worker_ = down[1];
  from_worker_ = up[0];
  pending_.clear();
  if (started_once_) ++restarts_;
  started_once_ = true;
  return Status::Ok();
}

std::string WorkerClient::ReapReason() {
  int status = 0;
  std::string reason = "worker exited";
  if (pid_ > 0 && ::waitpid(pid_, &status, 0) == pid_) {
    if (WIFSIGNALED(status)) {
      reason = "worker died: signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    } else if (WIFEXITED(status)) {
      reason = "worker exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }
  pid_ = -1;
  ::close(to_worker_);
  ::close(from_worker_);
  to_worker_ = from_worker_ = -1;
  return reason;
}

void WorkerClient::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ReapReason();
}

StatusOr<json> WorkerClient::Request(const json& request, double timeout_s) {
  Send(request);
  return Receive(timeout_s);
}

void WorkerClient::Send(const json& request) {
  send_error_.clear();
  if (pid_ <= 0) {
    if (Status s = Start(); !s.ok()) {
      send_error_ = s.ToString();
      return;
    }
  }
  if (!WriteAllIgnoringSigpipe(to_worker_, request.dump() + "\n")) send_error_ = ReapReason();
}

StatusOr<json> WorkerClient::Receive(double timeout_s) {
  if (!send_error_.empty()) return InternalError(std::exchange(send_error_, std::string()));
  if (pid_ <= 0) return InternalError("no request in flight");
  const double deadline = NowSeconds() + timeout_s;
  char chunk[65536];
  while (pending_.find('\n') == std::string::npos) {
    const double left = deadline - NowSeconds();
    if (left <= 0) {
      Kill();
      return TimeoutError("no reply within " + std::to_string(static_cast<int>(timeout_s)) +
                          " s (watchdog killed the worker)");
    }
    pollfd fd{from_worker_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno != EINTR)
      return InternalError(std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) continue;
    const ssize_t n = ::read(from_worker_, chunk, sizeof(chunk));
    if (n <= 0) return InternalError(ReapReason());
    pending_.append(chunk, static_cast<size_t>(n));
  }
  const size_t newline = pending_.find('\n');
  const std::string line = pending_.substr(0, newline);
  pending_.erase(0, newline + 1);
  json reply = json::parse(line, nullptr, false);
  if (reply.is_discarded()) return InternalError("unreadable worker reply");
  if (reply.value("fatal", false)) ReapReason();
  return reply;
}

}  // namespace kselect::bench
