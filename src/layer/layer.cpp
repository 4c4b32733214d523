#include "layer/layer.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/text.h"
#include "kselect/hardware.h"
#include "kselect/provenance.h"
#include "kselect/selector.h"
#include "kselect/version.h"
#include "nlohmann/json.hpp"
#include "providers/cublaslt/cublaslt_algo.h"

namespace kselect::layer {
namespace {

using nlohmann::json;

std::atomic<uint64_t> g_generation{1};

// Decisions per thread: the fast path takes no lock. Dropped when the layer's generation changes.
struct ThreadCache {
  uint64_t generation = 0;
  std::unordered_map<LtCallKey, CallDecision, LtCallKeyHash> decisions;
};
thread_local ThreadCache t_cache;
// A program making descriptors per call with ever-changing contents (say a fresh bias pointer
// each time) would grow the cache without bound: past this many it starts again.
constexpr size_t kMaxCachedDecisions = 4096;

// cuBLASLt's default alignment preference, under which kselect's configs were enumerated and
// checked: a chosen config runs only on operands aligned so.
constexpr uintptr_t kOperandAlignment = 256;

// The layer's own workspace per stream, for cuBLAS calls whose handle's workspace is unknown:
// the limit the shipped catalogues were enumerated under.
constexpr size_t kLayerWorkspaceBytes = size_t{32} << 20;

std::string WithPid(std::string path) {
  const size_t at = path.find("%p");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  return path;
}

std::string CallKeyText(const LtCall& call) {
  std::string key = call.problem.ToString();
  // ToString leaves the scalars out; a library entry is per exact problem, scalars included.
  if (call.problem.alpha != 1.0 || call.problem.beta != 0.0) {
    char scalars[64];
    std::snprintf(scalars, sizeof(scalars), " alpha=%g beta=%g", call.problem.alpha,
                  call.problem.beta);
    key += scalars;
  }
  key += " lda=" + std::to_string(call.lda) + " ldb=" + std::to_string(call.ldb) +
         " ldc=" + std::to_string(call.ldc);
  if (call.ldd != call.ldc) key += " ldd=" + std::to_string(call.ldd);
  const std::string epilogue = EpilogueName(call.epilogue);
  if (!epilogue.empty()) key += " epilogue=" + epilogue;
  return key;
}

// Alpha and beta are not part of the call's key: a decision holds for the values it was made for
// (host pointers, as the readers checked).
bool SameScalars(const CallDecision& decision, const void* alpha, const void* beta) {
  if (!decision.host_scalars) return true;
  float alpha_value = 0, beta_value = 0;
  std::memcpy(&alpha_value, alpha, sizeof(float));
  std::memcpy(&beta_value, beta, sizeof(float));
  return alpha_value == decision.alpha && beta_value == decision.beta;
}

}  // namespace

std::string_view LayerModeName(LayerMode mode) {
  switch (mode) {
    case LayerMode::kOff:
      return "off";
    case LayerMode::kRecord:
      return "record";
    case LayerMode::kLibrary:
      return "library";
    case LayerMode::kSelect:
      return "select";
  }
  return "off";
}

StatusOr<LayerMode> ParseLayerMode(std::string_view name) {
  for (const LayerMode mode :
       {LayerMode::kOff, LayerMode::kRecord, LayerMode::kLibrary, LayerMode::kSelect}) {
    if (name == LayerModeName(mode)) return mode;
  }
  return InvalidArgumentError("unknown layer mode '" + std::string(name) +
                              "' (off, record, library, select)");
}

std::string_view PassReasonName(PassReason reason) {
  switch (reason) {
    case PassReason::kMode:
      return "mode";
    case PassReason::kNotUnderstood:
      return "not_understood";
    case PassReason::kNoDecision:
      return "no_decision";
    case PassReason::kWorkspace:
      return "workspace";
    case PassReason::kAlignment:
      return "alignment";
    case PassReason::kLaunchFailed:
      return "launch_failed";
    case PassReason::kCapture:
      return "capture";
    case PassReason::kVendorKept:
      return "vendor_kept";
    case PassReason::kCount:
      break;
  }
  return "unknown";
}

StatusOr<LayerSettings> LayerSettings::FromEnvironment(
    const std::function<const char*(const char*)>& get) {
  auto value = [&](const char* name) {
    const char* v = get(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  LayerSettings settings;
  settings.solutions = value("KSELECT_SOLUTIONS");
  settings.model = value("KSELECT_MODEL");
  settings.stats_path = WithPid(value("KSELECT_STATS"));
  settings.record_path = WithPid(value("KSELECT_RECORD"));
  settings.verbose = value("KSELECT_LAYER_VERBOSE") == "1";
  if (const std::string k = value("KSELECT_TIME_TOP_K"); !k.empty()) {
    auto parsed = text::ParseInt64(k);
    if (!parsed.ok() || *parsed < 0 || *parsed > 16) {
      return InvalidArgumentError("KSELECT_TIME_TOP_K: '" + k + "' is not a count from 0 to 16");
    }
    settings.time_top_k = static_cast<int>(*parsed);
  }
  const std::string mode = value("KSELECT_MODE");
  if (!mode.empty()) {
    auto parsed = ParseLayerMode(mode);
    if (!parsed.ok()) return InvalidArgumentError("KSELECT_MODE: " + parsed.status().message());
    settings.mode = *parsed;
  } else if (!settings.model.empty()) {
    settings.mode = LayerMode::kSelect;
  } else if (!settings.solutions.empty()) {
    settings.mode = LayerMode::kLibrary;
  } else if (!settings.record_path.empty()) {
    settings.mode = LayerMode::kRecord;
  }
  std::vector<std::string> inputs;
  if (!settings.solutions.empty()) inputs.push_back(settings.solutions);
  for (const auto& [path, name] : {std::pair{settings.stats_path, "KSELECT_STATS"},
                                   std::pair{settings.record_path, "KSELECT_RECORD"}}) {
    if (path.empty()) continue;
    KSELECT_RETURN_IF_ERROR(text::CheckOutputFile(path, name, inputs));
  }
  if (!settings.stats_path.empty() && settings.stats_path == settings.record_path) {
    return InvalidArgumentError("KSELECT_STATS and KSELECT_RECORD name one file: " +
                                settings.stats_path);
  }
  return settings;
}

Layer::Layer(LayerSettings settings)
    : settings_(std::move(settings)),
      mode_(settings_.mode),
      generation_(g_generation.fetch_add(1) + 1) {}

Layer::~Layer() = default;

void Layer::SetMode(LayerMode mode) {
  std::lock_guard lock(mutex_);
  mode_.store(mode, std::memory_order_relaxed);
  generation_.store(g_generation.fetch_add(1) + 1, std::memory_order_release);
}

GemmStats& Layer::StatsFor(const std::string& key) {
  std::unique_ptr<GemmStats>& slot = stats_[key];
  if (!slot) {
    slot = std::make_unique<GemmStats>();
    slot->key = key;
    slot->decision = "none";
  }
  return *slot;
}

void Layer::EnsureLoaded() {
  if (loaded_) return;
  loaded_ = true;
  const auto start = std::chrono::steady_clock::now();
  if (cudaGetDevice(&device_) != cudaSuccess) device_ = 0;
  auto hardware = QueryHardwareProfile(device_);
  if (hardware.ok()) provenance_json_ = ProvenanceToJson(ProvenanceOf(*hardware));
  if (!settings_.solutions.empty()) {
    auto library = LoadSolutionLibrary(settings_.solutions);
    if (!library.ok()) {
      library_status_ = library.status().message();
    } else if (!hardware.ok()) {
      library_status_ = "cannot check where it was tuned: " + hardware.status().message();
    } else if (Status same = CheckSolutionIdentity(*library, *hardware, settings_.solutions);
               !same.ok()) {
      library_status_ = same.message();
    } else {
      library_ = std::move(*library);
    }
    if (!library_status_.empty()) {
      std::fprintf(stderr, "kselect layer: the solution library is not used: %s\n",
                   library_status_.c_str());
    }
  }
  if (mode_.load() == LayerMode::kSelect || !settings_.model.empty()) {
    if (settings_.model.empty()) {
      model_status_ = "no model (KSELECT_MODEL is unset)";
    } else {
      SelectorOptions options;
      options.top_k = settings_.top_k;
      options.provider.device = device_;
      // The layer checks each config on the application's own descriptors.
      options.check_can_implement = false;
      options.predicted_times = 0;
      auto selector = Selector::Open(settings_.model, options);
      if (selector.ok()) {
        selector_ = std::move(*selector);
      } else {
        model_status_ = selector.status().message();
        std::fprintf(stderr, "kselect layer: the model is not used: %s\n", model_status_.c_str());
      }
    }
  }
  load_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::pair<CublasLtConfig, std::string>> Layer::CandidatesFor(const GemmProblem& problem,
                                                                         std::string& why) {
  std::vector<std::pair<CublasLtConfig, std::string>> candidates;
  const LayerMode mode = mode_.load(std::memory_order_relaxed);
  if (library_) {
    if (const auto at = library_->Find(problem)) {
      const KernelConfig& config = library_->solutions[*at].config;
      if (const auto* lt = std::get_if<CublasLtConfig>(&config)) {
        candidates.emplace_back(*lt, "library");
      } else {
        why = "the library's entry is a " + std::string(ProviderName(ProviderOf(config))) +
              " kernel (the layer runs cuBLASLt configs); ";
      }
    } else {
      why = "no library entry; ";
    }
  } else if (!settings_.solutions.empty()) {
    why = "library not used (" + library_status_ + "); ";
  }
  if (mode == LayerMode::kSelect) {
    if (selector_) {
      auto selection = selector_->Select(problem);
      if (selection.ok()) {
        const size_t before = candidates.size();
        for (const RankedConfig& ranked : (*selection)->ranked) {
          if (const auto* lt = std::get_if<CublasLtConfig>(&ranked.config)) {
            candidates.emplace_back(*lt, "model");
          }
        }
        if (candidates.size() == before) why += "the model ranked no cuBLASLt config; ";
      } else {
        why += "the model did not decide: " + selection.status().message() + "; ";
      }
    } else {
      why += "model not used (" + model_status_ + "); ";
    }
  }
  return candidates;
}

bool Layer::Begin(const StatusOr<LtCall>& read, std::string_view api, size_t workspace_bytes,
                  cudaStream_t stream, CallDecision& decision) {
  if (!read.ok()) {
    GemmStats& stats = StatsFor("not understood: " + read.status().message());
    stats.why = read.status().message();
    decision.stats = &stats;
    decision.reason = PassReason::kNotUnderstood;
    return true;
  }
  const LtCall& call = *read;
  decision.host_scalars = true;
  decision.alpha = static_cast<float>(call.problem.alpha);
  decision.beta = static_cast<float>(call.problem.beta);
  GemmStats& stats = StatsFor(CallKeyText(call) + std::string(api));
  decision.stats = &stats;
  stats.decisions.fetch_add(1, std::memory_order_relaxed);
  if (!stats.call) stats.call = call;
  stats.workspace_bytes = workspace_bytes;
  const LayerMode mode = mode_.load(std::memory_order_relaxed);
  if (mode == LayerMode::kOff || mode == LayerMode::kRecord) {
    decision.reason = PassReason::kMode;
    stats.why = std::string(LayerModeName(mode)) + " mode";
    return true;
  }
  if (!loaded_) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    // (Where the query itself fails there is no capture to protect.)
    if (cudaStreamIsCapturing(stream, &capture) == cudaSuccess &&
        capture != cudaStreamCaptureStatusNone) {
      decision.reason = PassReason::kCapture;
      decision.cacheable = false;
      stats.why = "first seen under stream capture, before the layer had loaded";
      return true;
    }
    EnsureLoaded();
  }
  return false;
}

std::vector<Layer::CheckedConfig> Layer::CheckCandidates(
    cublasLtHandle_t handle, const LtCall& call, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc,
    cublasLtMatrixLayout_t d_desc, size_t workspace_bytes, std::string& why) {
  std::vector<CheckedConfig> checked;
  const size_t wanted = static_cast<size_t>(std::max(settings_.time_top_k, 1));
  for (const auto& [config, source] : CandidatesFor(call.problem, why)) {
    if (checked.size() >= wanted || (!checked.empty() && checked.front().source == "library")) {
      break;
    }
    auto made = cublaslt::InitAlgoForConfig(handle, call.compute_type, call.scale_type, call.type_a,
                                            call.type_b, call.type_c, call.type_d, config);
    if (!made.ok()) {
      why += DescribeConfig(KernelConfig(config)) + ": " + made.status().message() + "; ";
      continue;
    }
    cublasLtMatmulHeuristicResult_t result{};
    const cublasStatus_t check =
        cublasLtMatmulAlgoCheck(handle, desc, a_desc, b_desc, c_desc, d_desc, &*made, &result);
    if (check != CUBLAS_STATUS_SUCCESS) {
      why += DescribeConfig(KernelConfig(config)) + ": cuBLASLt refuses it for this call (" +
             cublaslt::CublasStatusText(check) + "); ";
      continue;
    }
    if (result.workspaceSize > workspace_bytes) {
      why += DescribeConfig(KernelConfig(config)) + ": needs " +
             std::to_string(result.workspaceSize) + " bytes of workspace, the call gives " +
             std::to_string(workspace_bytes) + "; ";
      continue;
    }
    checked.push_back({config, *made, result.workspaceSize, source});
  }
  return checked;
}

void Layer::Settle(const std::vector<CheckedConfig>& checked, const TimeContenders& time,
                   std::string why, CallDecision& decision) {
  GemmStats& stats = *decision.stats;
  auto finish = [&](const CheckedConfig& chosen) {
    decision.run_choice = true;
    decision.algo = chosen.algo;
    decision.workspace = chosen.workspace;
    stats.decision = chosen.source;
    stats.config = DescribeConfig(KernelConfig(chosen.config));
  };
  auto trimmed = [](const std::string& text) {
    return text.size() >= 2 ? text.substr(0, text.size() - 2) : text;
  };
  if (checked.empty()) {
    decision.reason = PassReason::kNoDecision;
    stats.decision = "none";
    stats.config.clear();
    stats.why = why.empty() ? "nothing to decide with" : trimmed(why);
  } else if (checked.front().source == "library") {
    finish(checked.front());
    stats.why = trimmed(why);
  } else if (settings_.time_top_k < 2 || !time) {
    finish(checked.front());
    why += "the model's first, untimed (not guarded against the application's own choice); ";
    stats.why = trimmed(why);
  } else {
    auto outcome = time(checked);
    if (!outcome.ok()) {
      decision.reason = PassReason::kNoDecision;
      stats.decision = "none";
      stats.config.clear();
      stats.why = why + "first-use timing failed (" + outcome.status().message() +
                  "): the application's own choice runs";
    } else {
      char figures[160];
      std::snprintf(figures, sizeof(figures),
                    "timed at first use: %d contenders, the application's own %.4f ms, the "
                    "fastest model config %.4f ms",
                    outcome->timed, outcome->vendor_ms, outcome->winner_ms);
      if (outcome->winner == 0) {
        decision.reason = PassReason::kVendorKept;
        stats.decision = "vendor";
        stats.config.clear();
        stats.why = why + figures + ": the application's own kept";
      } else {
        finish(checked[outcome->winner - 1]);
        stats.why = why + figures;
      }
    }
  }
  if (settings_.verbose) {
    std::fprintf(stderr, "kselect layer: %s -> %s (%s) %s\n", stats.key.c_str(),
                 stats.config.empty() ? "its own call" : stats.config.c_str(),
                 stats.decision.c_str(), stats.why.c_str());
  }
}

CallDecision Layer::Decide(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                           cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                           const void* beta, cublasLtMatrixLayout_t c_desc,
                           cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                           size_t workspace_bytes, cudaStream_t stream,
                           const LtOperands& operands) {
  std::lock_guard lock(mutex_);
  CallDecision decision;
  auto read = ReadLtCall(desc, a_desc, b_desc, c_desc, d_desc, alpha, beta);
  if (Begin(read, "", workspace_bytes, stream, decision)) return decision;
  const LtCall& call = *read;
  GemmStats& stats = *decision.stats;
  if (algo != nullptr && stats.application_algo.empty()) {
    stats.application_algo = DescribeConfig(KernelConfig(cublaslt::ConfigOfAlgo(*algo)));
  }
  std::string why;
  const std::vector<CheckedConfig> checked =
      CheckCandidates(handle, call, desc, a_desc, b_desc, c_desc, d_desc, workspace_bytes, why);
  // First-use timing on the call's own operands: its output goes to a scratch copy, so the call
  // itself then runs as decided.
  const bool c_is_d = operands.c == operands.d;
  auto specs = CallOperandSpecs(call, c_is_d);
  TimeContenders time;
  if (specs.ok() && operands.real != nullptr) {
    time = [&](const std::vector<CheckedConfig>& configs) -> StatusOr<FirstUseOutcome> {
      std::vector<LayerContender> contenders;
      auto launch = [&, c_is_d](const cublasLtMatmulAlgo_t* with) {
        return [=, real = operands.real](const KernelOperands& o, cudaStream_t s) {
          void* c = o.buffers[2];
          void* d = c_is_d ? c : o.buffers[3];
          return real(handle, desc, alpha, o.buffers[0], a_desc, o.buffers[1], b_desc, beta, c,
                      c_desc, d, d_desc, with, o.workspace, static_cast<size_t>(o.workspace_bytes),
                      s);
        };
      };
      contenders.push_back({"the application's own", launch(algo)});
      for (const CheckedConfig& c : configs) {
        contenders.push_back({DescribeConfig(KernelConfig(c.config)), launch(&c.algo)});
      }
      KernelOperands buffers;
      buffers.buffers = {const_cast<void*>(operands.a), const_cast<void*>(operands.b),
                         const_cast<void*>(operands.c)};
      if (!c_is_d) buffers.buffers.push_back(operands.d);
      buffers.workspace = operands.workspace;
      buffers.workspace_bytes = static_cast<int64_t>(workspace_bytes);
      return TimeAtFirstUse(std::move(contenders), *specs, buffers, settings_.vendor_margin,
                            stream);
    };
  }
  Settle(checked, time, why, decision);
  return decision;
}

cublasStatus_t Layer::Matmul(RealMatmul real, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                             const void* alpha, const void* a, cublasLtMatrixLayout_t a_desc,
                             const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                             const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                             cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  auto pass = [&] {
    return real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo,
                workspace, workspace_bytes, stream);
  };
  if (mode_.load(std::memory_order_relaxed) == LayerMode::kOff || desc == nullptr ||
      a_desc == nullptr || b_desc == nullptr || c_desc == nullptr || d_desc == nullptr) {
    return pass();
  }
  ThreadCache& cache = t_cache;
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (cache.generation != generation) {
    cache.decisions.clear();
    cache.generation = generation;
  }
  const LtCallKey key = LtCallKey::Of(handle, desc, a_desc, b_desc, c_desc, d_desc);
  auto it = cache.decisions.find(key);
  if (it != cache.decisions.end() && !SameScalars(it->second, alpha, beta)) {
    cache.decisions.erase(it);
    it = cache.decisions.end();
  }
  if (it == cache.decisions.end()) {
    LtOperands operands{real, a, b, c, d, workspace};
    CallDecision fresh = Decide(handle, desc, alpha, a_desc, b_desc, beta, c_desc, d_desc, algo,
                                workspace_bytes, stream, operands);
    if (!fresh.cacheable) {
      fresh.stats->calls.fetch_add(1, std::memory_order_relaxed);
      fresh.stats->passed[static_cast<int>(fresh.reason)].fetch_add(1, std::memory_order_relaxed);
      return pass();
    }
    if (cache.decisions.size() >= kMaxCachedDecisions) cache.decisions.clear();
    it = cache.decisions.emplace(key, fresh).first;
  }
  CallDecision& decision = it->second;
  GemmStats& stats = *decision.stats;
  stats.calls.fetch_add(1, std::memory_order_relaxed);
  auto pass_for = [&](PassReason reason) {
    stats.passed[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
    return pass();
  };
  if (!decision.run_choice) return pass_for(decision.reason);
  if (workspace_bytes < decision.workspace) return pass_for(PassReason::kWorkspace);
  if (((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
        reinterpret_cast<uintptr_t>(c) | reinterpret_cast<uintptr_t>(d)) &
       (kOperandAlignment - 1)) != 0) {
    return pass_for(PassReason::kAlignment);
  }
  const cublasStatus_t status = real(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                                     d_desc, &decision.algo, workspace, workspace_bytes, stream);
  if (Launched(status, decision, stats)) return status;
  return pass_for(PassReason::kLaunchFailed);
}

bool Layer::Launched(cublasStatus_t status, CallDecision& decision, GemmStats& stats) {
  if (status == CUBLAS_STATUS_SUCCESS) {
    stats.overridden.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // The application's own call runs instead; this thread stops trying the choice.
  decision.run_choice = false;
  decision.reason = PassReason::kLaunchFailed;
  std::lock_guard lock(mutex_);
  stats.why = stats.config + " failed to launch (" + cublaslt::CublasStatusText(status) +
              "): the application's own call runs";
  return false;
}

cublasLtHandle_t Layer::LtHandle(int device) {
  auto [it, added] = lt_handles_.try_emplace(device, nullptr);
  if (added && cublasLtCreate(&it->second) != CUBLAS_STATUS_SUCCESS) it->second = nullptr;
  return it->second;
}

void* Layer::OwnWorkspace(int device, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  return OwnWorkspaceLocked(device, stream);
}

void* Layer::OwnWorkspaceLocked(int device, cudaStream_t stream) {
  constexpr size_t kMaxStreams = 64;
  const auto key = std::make_pair(device, stream);
  if (const auto it = workspaces_.find(key); it != workspaces_.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone || workspaces_.size() >= kMaxStreams) {
    return nullptr;
  }
  void* workspace = nullptr;
  if (cudaMalloc(&workspace, kLayerWorkspaceBytes) != cudaSuccess) {
    cudaGetLastError();
    workspace = nullptr;
  }
  workspaces_[key] = workspace;
  return workspace;
}

BlasDecision Layer::DecideBlas(const BlasFunctions& blas, const BlasArgs& args,
                               cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  BlasDecision decision;
  auto read = ReadBlasCall(args.call, args.alpha, args.beta);
  if (Begin(read, " (cublasGemmEx)", blas.workspace_bytes, stream, decision)) return decision;
  GemmStats& stats = *decision.stats;
  stats.application_algo = "cuBLAS's own choice";
  if (cudaGetDevice(&decision.device) != cudaSuccess) decision.device = device_;
  decision.lt = LtHandle(decision.device);
  auto fail = [&](const std::string& reason) {
    decision.reason = PassReason::kNoDecision;
    stats.decision = "none";
    stats.config.clear();
    stats.why = reason;
    return decision;
  };
  if (decision.lt == nullptr) return fail("cublasLtCreate failed");
  auto desc = MakeLtDescriptors(args.call, *read);
  if (!desc.ok()) return fail(desc.status().message());
  decision.desc = *desc;
  const LtDescriptors& d = **desc;
  const LtCall& call = *read;
  std::string why;
  const std::vector<CheckedConfig> checked =
      CheckCandidates(decision.lt, call, d.op, d.a, d.b, d.c, d.c, kLayerWorkspaceBytes, why);
  // The workspace the choice runs with when it needs one: the handle's, else the layer's own.
  void* workspace = blas.workspace;
  size_t workspace_bytes = blas.workspace_bytes;
  if (workspace == nullptr) {
    workspace = OwnWorkspaceLocked(decision.device, stream);
    workspace_bytes = workspace != nullptr ? kLayerWorkspaceBytes : 0;
  }
  auto specs = CallOperandSpecs(call, /*c_is_d=*/true);
  TimeContenders time;
  const bool can_run_own =
      args.call.batch == 1 ? blas.gemm_ex != nullptr : blas.gemm_strided != nullptr;
  if (specs.ok() && can_run_own) {
    time = [&](const std::vector<CheckedConfig>& configs) -> StatusOr<FirstUseOutcome> {
      std::vector<LayerContender> contenders;
      const BlasCall& c = args.call;
      contenders.push_back(
          {"cuBLAS's own", [&, c](const KernelOperands& o, cudaStream_t) {
             return blas.gemm_ex(
                 c.handle, c.trans_a, c.trans_b, static_cast<int>(c.m), static_cast<int>(c.n),
                 static_cast<int>(c.k), args.alpha, o.buffers[0], c.type_a, static_cast<int>(c.lda),
                 o.buffers[1], c.type_b, static_cast<int>(c.ldb), args.beta, o.buffers[2], c.type_c,
                 static_cast<int>(c.ldc), static_cast<cublasComputeType_t>(c.compute), args.algo);
           }});
      // (A config needing more workspace than there is fails its warm-up and is left out.)
      for (const CheckedConfig& config : configs) {
        contenders.push_back({DescribeConfig(KernelConfig(config.config)),
                              [&, algo = config.algo](const KernelOperands& o, cudaStream_t s) {
                                return blas.lt_matmul(
                                    decision.lt, d.op, args.alpha, o.buffers[0], d.a, o.buffers[1],
                                    d.b, args.beta, o.buffers[2], d.c, o.buffers[2], d.c, &algo,
                                    o.workspace, static_cast<size_t>(o.workspace_bytes), s);
                              }});
      }
      KernelOperands buffers;
      buffers.buffers = {const_cast<void*>(args.a), const_cast<void*>(args.b), args.c};
      buffers.workspace = workspace;
      buffers.workspace_bytes = static_cast<int64_t>(workspace_bytes);
      return TimeAtFirstUse(std::move(contenders), *specs, buffers, settings_.vendor_margin,
                            stream);
    };
  }
  Settle(checked, time, why, decision);
  // For a stream with no workspace (one first seen under capture): a checked config needing none.
  if (decision.run_choice && decision.workspace > 0) {
    for (const CheckedConfig& c : checked) {
      if (c.workspace == 0) {
        decision.has_no_workspace_algo = true;
        decision.no_workspace_algo = c.algo;
        break;
      }
    }
  }
  return decision;
}

namespace {
struct BlasCache {
  uint64_t generation = 0;
  std::unordered_map<BlasCall, BlasDecision, BlasCallHash> decisions;
  // The stream last run on and the layer's workspace for it.
  cudaStream_t stream = nullptr;
  int device = -1;
  void* workspace = nullptr;
};
thread_local BlasCache t_blas;
}  // namespace

cublasStatus_t Layer::Blas(const BlasFunctions& blas, BlasArgs args, BlasPassThrough pass,
                           const void* context) {
  if (mode_.load(std::memory_order_relaxed) == LayerMode::kOff) return pass(context);
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cudaStream_t stream = nullptr;
  if (blas.get_pointer_mode(args.call.handle, &pointer_mode) != CUBLAS_STATUS_SUCCESS ||
      blas.get_stream(args.call.handle, &stream) != CUBLAS_STATUS_SUCCESS) {
    return pass(context);
  }
  args.call.pointer_mode = pointer_mode;
  BlasCache& cache = t_blas;
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (cache.generation != generation) {
    cache.decisions.clear();
    cache.generation = generation;
  }
  auto it = cache.decisions.find(args.call);
  if (it != cache.decisions.end() && !SameScalars(it->second, args.alpha, args.beta)) {
    cache.decisions.erase(it);
    it = cache.decisions.end();
  }
  if (it == cache.decisions.end()) {
    BlasDecision fresh = DecideBlas(blas, args, stream);
    if (!fresh.cacheable) {
      fresh.stats->calls.fetch_add(1, std::memory_order_relaxed);
      fresh.stats->passed[static_cast<int>(fresh.reason)].fetch_add(1, std::memory_order_relaxed);
      return pass(context);
    }
    if (cache.decisions.size() >= kMaxCachedDecisions) cache.decisions.clear();
    it = cache.decisions.emplace(args.call, std::move(fresh)).first;
  }
  BlasDecision& decision = it->second;
  GemmStats& stats = *decision.stats;
  stats.calls.fetch_add(1, std::memory_order_relaxed);
  auto pass_for = [&](PassReason reason) {
    stats.passed[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
    return pass(context);
  };
  if (!decision.run_choice) return pass_for(decision.reason);
  if (((reinterpret_cast<uintptr_t>(args.a) | reinterpret_cast<uintptr_t>(args.b) |
        reinterpret_cast<uintptr_t>(args.c)) &
       (kOperandAlignment - 1)) != 0) {
    return pass_for(PassReason::kAlignment);
  }
  // The workspace: the application's for this handle (cuBLAS would have used it for this very
  // call, on this stream), else the layer's own for the stream.
  const cublasLtMatmulAlgo_t* algo = &decision.algo;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  if (decision.workspace > 0) {
    if (blas.workspace != nullptr && blas.workspace_bytes >= decision.workspace) {
      workspace = blas.workspace;
      workspace_bytes = blas.workspace_bytes;
    } else {
      if (cache.stream != stream || cache.device != decision.device || cache.workspace == nullptr) {
        cache.workspace = OwnWorkspace(decision.device, stream);
        cache.stream = stream;
        cache.device = decision.device;
      }
      if (cache.workspace != nullptr) {
        workspace = cache.workspace;
        workspace_bytes = kLayerWorkspaceBytes;
      } else if (decision.has_no_workspace_algo) {
        algo = &decision.no_workspace_algo;
      } else {
        return pass_for(PassReason::kWorkspace);
      }
    }
  }
  const LtDescriptors& d = *decision.desc;
  const cublasStatus_t status =
      blas.lt_matmul(decision.lt, d.op, args.alpha, args.a, d.a, args.b, d.b, args.beta, args.c,
                     d.c, args.c, d.c, algo, workspace, workspace_bytes, stream);
  if (Launched(status, decision, stats)) return status;
  return pass_for(PassReason::kLaunchFailed);
}

LayerTotals Layer::Totals() const {
  std::lock_guard lock(mutex_);
  LayerTotals totals;
  for (const auto& [key, stats] : stats_) {
    totals.calls += stats->calls.load();
    totals.overridden += stats->overridden.load();
    for (const auto& passed : stats->passed) totals.passed += passed.load();
  }
  return totals;
}

std::string Layer::StatsJson() const {
  std::lock_guard lock(mutex_);
  json out;
  out["format"] = "kselect.layer_stats";
  out["format_version"] = 1;
  out["tool_version"] = ToolVersion();
  out["pid"] = static_cast<int64_t>(getpid());
  out["mode"] = std::string(LayerModeName(mode_.load()));
  out["solutions"] = settings_.solutions;
  out["model"] = settings_.model;
  out["library_status"] = settings_.solutions.empty() ? "none given"
                          : library_status_.empty()   ? (loaded_ ? "used" : "not loaded yet")
                                                      : library_status_;
  out["model_status"] = settings_.model.empty() ? "none given"
                        : model_status_.empty() ? (selector_ ? "used" : "not loaded yet")
                                                : model_status_;
  out["load_ms"] = load_ms_;
  out["identity"] = provenance_json_.empty() ? json(nullptr) : json::parse(provenance_json_);
  int64_t calls = 0, overridden = 0;
  json reasons = json::object();
  json gemms = json::array();
  for (const auto& [key, stats] : stats_) {
    json g;
    g["gemm"] = key;
    g["calls"] = stats->calls.load();
    g["overridden"] = stats->overridden.load();
    g["decisions"] = stats->decisions.load();
    int64_t passed = 0;
    json why_passed = json::object();
    for (int r = 0; r < static_cast<int>(PassReason::kCount); ++r) {
      const int64_t n = stats->passed[r].load();
      if (n == 0) continue;
      passed += n;
      const std::string name(PassReasonName(static_cast<PassReason>(r)));
      why_passed[name] = n;
      reasons[name] = reasons.value(name, int64_t{0}) + n;
    }
    g["passed_through"] = passed;
    g["pass_reasons"] = why_passed;
    g["decision"] = stats->decision;
    g["config"] = stats->config;
    g["application_algo"] = stats->application_algo;
    g["application_workspace_bytes"] = stats->workspace_bytes;
    g["why"] = stats->why;
    calls += stats->calls.load();
    overridden += stats->overridden.load();
    gemms.push_back(std::move(g));
  }
  int64_t decisions = 0;
  for (const auto& [key, stats] : stats_) decisions += stats->decisions.load();
  out["calls"] = calls;
  out["overridden"] = overridden;
  out["decisions"] = decisions;
  out["passed_through"] = calls - overridden;
  out["pass_reasons"] = reasons;
  out["gemms"] = std::move(gemms);
  return out.dump(2) + "\n";
}

std::string Layer::RecordCsv() const {
  std::lock_guard lock(mutex_);
  // One row per GEMM: the same problem reached through cuBLASLt and through cuBLAS is one.
  std::map<std::string, int64_t> rows;
  std::vector<std::string> order;
  for (const auto& [key, stats] : stats_) {
    if (!stats->call) continue;
    const int64_t calls = stats->calls.load();
    if (calls == 0) continue;
    const LtCall& call = *stats->call;
    const GemmProblem& p = call.problem;
    auto op = [](MatrixOrder order) { return order == MatrixOrder::kRowMajor ? "T" : "N"; };
    char alpha[32], beta[32];
    std::snprintf(alpha, sizeof(alpha), "%.9g", p.alpha);
    std::snprintf(beta, sizeof(beta), "%.9g", p.beta);
    const std::string row =
        std::to_string(p.m) + "," + std::to_string(p.n) + "," + std::to_string(p.k) + "," +
        std::to_string(p.batch) + "," + op(p.layout.a) + "," + op(p.layout.b) + "," +
        std::string(DataTypeName(p.dtype_a)) + "," + std::string(DataTypeName(p.dtype_b)) + "," +
        std::string(DataTypeName(p.dtype_c)) + "," + std::string(DataTypeName(p.compute)) + "," +
        alpha + "," + beta + "," + std::to_string(call.lda) + "," + std::to_string(call.ldb) + "," +
        std::to_string(call.ldc) + "," + EpilogueName(call.epilogue) + ",";
    if (rows.find(row) == rows.end()) order.push_back(row);
    rows[row] += calls;
  }
  std::string csv =
      "m,n,k,batch,transa,transb,a,b,c,compute,alpha,beta,lda,ldb,ldc,epilogue,calls\n";
  for (const std::string& row : order) csv += row + std::to_string(rows[row]) + "\n";
  return csv;
}

Status Layer::Flush() const {
  if (!settings_.stats_path.empty()) {
    KSELECT_RETURN_IF_ERROR(text::WriteFileAtomically(settings_.stats_path, StatsJson()));
  }
  if (!settings_.record_path.empty()) {
    KSELECT_RETURN_IF_ERROR(text::WriteFileAtomically(settings_.record_path, RecordCsv()));
  }
  return Status::Ok();
}

}  // namespace kselect::layer
