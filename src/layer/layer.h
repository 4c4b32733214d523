// The preloaded layer's logic (include/kselect/layer.h says what it does for an application):
// settings from the environment, the decision per distinct call, the per-call fast path and the
// statistics and record it writes. The preloaded shim (preload_shim.cpp) reaches it through the
// C entry points in layer_entry.cpp.
#pragma once

#include <cublasLt.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/solutions.h"
#include "kselect/status.h"
#include "layer/blas_call.h"
#include "layer/entry_points.h"
#include "layer/layer_timing.h"
#include "layer/lt_call.h"

namespace kselect {
class Selector;
}

namespace kselect::layer {

enum class LayerMode { kOff, kRecord, kLibrary, kSelect };
std::string_view LayerModeName(LayerMode mode);  // "off", "record", "library", "select"
StatusOr<LayerMode> ParseLayerMode(std::string_view name);

struct LayerSettings {
  LayerMode mode = LayerMode::kOff;
  std::string solutions;    // KSELECT_SOLUTIONS
  std::string model;        // KSELECT_MODEL
  std::string stats_path;   // KSELECT_STATS, "%p" replaced
  std::string record_path;  // KSELECT_RECORD, "%p" replaced
  bool verbose = false;     // KSELECT_LAYER_VERBOSE
  // Configs of the model's ranking tried against the application's descriptors.
  int top_k = 8;
  // Select mode: the model's best this many configs are timed at a call's first use beside the
  // application's own choice, which keeps running unless one is faster by more than
  // vendor_margin (KSELECT_TIME_TOP_K; 0 or 1 = untimed: the model's first runs, unguarded).
  int time_top_k = 3;
  double vendor_margin = 0.01;

  // From the environment (`get` is getenv in the library, a table in tests). An unknown mode or
  // an output path that cannot be written (CheckOutputFile: a folder, a FIFO, an input) is an
  // error naming the variable.
  static StatusOr<LayerSettings> FromEnvironment(
      const std::function<const char*(const char*)>& get);
};

// One cuBLAS GEMM call's arguments; `call.pointer_mode` is filled by the layer.
struct BlasArgs {
  BlasCall call;
  cublasGemmAlgo_t algo = CUBLAS_GEMM_DEFAULT_TENSOR_OP;  // as the application passed it
  const void* alpha = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* beta = nullptr;
  void* c = nullptr;
};
// Runs the application's own call (`context` is the caller's).
using BlasPassThrough = cublasStatus_t (*)(const void* context);

// Why a call ran the application's own choice.
enum class PassReason {
  kMode,           // the mode decides nothing (off, record)
  kNotUnderstood,  // the descriptors hold something the layer does not run
  kNoDecision,     // no library entry (and no model decision) that cuBLASLt accepts here
  kWorkspace,      // the choice needs more workspace than the call gave
  kAlignment,      // an operand is not 256-byte aligned (the configs were checked so)
  kLaunchFailed,   // the choice's launch failed: the call ran the application's own
  kCapture,        // first seen while its stream was captured, before the layer had loaded
  kVendorKept,     // first-use timing: no model config beat the application's own by the margin
  kCount
};
std::string_view PassReasonName(PassReason reason);

// One distinct GEMM the application called (its problem, leading dimensions and epilogue).
struct GemmStats {
  std::optional<LtCall> call;    // unset for calls the layer could not read
  std::string key;               // the problem and extras, or the reason it was not read
  std::string decision;          // "library", "model" or "none"
  std::string config;            // what runs (DescribeConfig), "" when passing through
  std::string application_algo;  // the config the application passed (its heuristic's pick)
  std::string why;               // why the decision is what it is
  size_t workspace_bytes = 0;    // the workspace the application gave (at the decision)
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> overridden{0};
  // Decisions made for it (once per thread and mode when the per-thread cache works).
  std::atomic<int64_t> decisions{0};
  std::atomic<int64_t> passed[static_cast<int>(PassReason::kCount)] = {};
};

// What the layer does with one distinct call (kept per thread, keyed by LtCallKey or BlasCall).
struct CallDecision {
  GemmStats* stats = nullptr;
  bool run_choice = false;  // run `algo`; else pass through for `reason`
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;  // what `algo` needs
  PassReason reason = PassReason::kMode;
  // The host alpha and beta the decision was made for (a library entry is per exact problem).
  bool host_scalars = false;
  float alpha = 0, beta = 0;
  bool cacheable = true;  // false: decide again next time (first call under capture)
};

// The same for a cuBLAS call, which runs on the layer's own cuBLASLt handle and descriptors.
struct BlasDecision : CallDecision {
  std::shared_ptr<LtDescriptors> desc;
  cublasLtHandle_t lt = nullptr;
  int device = 0;
  // A choice needing no workspace, for streams with none (first seen under capture).
  bool has_no_workspace_algo = false;
  cublasLtMatmulAlgo_t no_workspace_algo{};
};

struct LayerTotals {
  int64_t calls = 0, overridden = 0, passed = 0;
};

class Layer {
 public:
  explicit Layer(LayerSettings settings);
  ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // The intercepted call: kselect's choice or `real` with the application's own arguments.
  cublasStatus_t Matmul(RealMatmul real, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                        const void* alpha, const void* a, cublasLtMatrixLayout_t a_desc,
                        const void* b, cublasLtMatrixLayout_t b_desc, const void* beta,
                        const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                        cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                        void* workspace, size_t workspace_bytes, cudaStream_t stream);

  // The intercepted cuBLAS call: kselect's choice through cuBLASLt, or `pass`.
  cublasStatus_t Blas(const BlasFunctions& blas, BlasArgs args, BlasPassThrough pass,
                      const void* context);

  // Every later call decides again under `mode`.
  void SetMode(LayerMode mode);
  LayerMode mode() const { return mode_.load(std::memory_order_relaxed); }
  const LayerSettings& settings() const { return settings_; }

  LayerTotals Totals() const;
  // "kselect.layer_stats" JSON.
  std::string StatsJson() const;
  // The record: the CSV `kselect tune` reads, one row per distinct GEMM read.
  std::string RecordCsv() const;
  // Writes the statistics and the record where the settings say (atomically).
  Status Flush() const;

 private:
  // The part of a decision both APIs share: the call's statistics entry (under `api`'s suffix),
  // then true with a pass-through decision where the call was not read, the mode decides nothing
  // or the layer cannot load yet (under capture); false where a choice is to be made.
  bool Begin(const StatusOr<LtCall>& read, std::string_view api, size_t workspace_bytes,
             cudaStream_t stream, CallDecision& decision);
  // The call's pointers, for first-use timing.
  struct LtOperands {
    RealMatmul real = nullptr;
    const void *a = nullptr, *b = nullptr, *c = nullptr;
    void* d = nullptr;
    void* workspace = nullptr;
  };
  CallDecision Decide(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                      cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                      const void* beta, cublasLtMatrixLayout_t c_desc,
                      cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo,
                      size_t workspace_bytes, cudaStream_t stream, const LtOperands& operands);
  // A config checked for the call: its algo, the workspace it needs, where it came from.
  struct CheckedConfig {
    CublasLtConfig config;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
    std::string source;  // "library" or "model"
  };
  // The candidates (CandidatesFor) cuBLASLt accepts for these descriptors within
  // `workspace_bytes`, best first: a library entry alone, else up to time_top_k (at least one)
  // of the model's. Why others were passed over is appended to `why`.
  std::vector<CheckedConfig> CheckCandidates(
      cublasLtHandle_t handle, const LtCall& call, cublasLtMatmulDesc_t desc,
      cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc,
      cublasLtMatrixLayout_t d_desc, size_t workspace_bytes, std::string& why);
  // Settles `decision` among `checked` (best first): a library entry runs as it is; the model's
  // configs are timed beside the application's own choice (`time`, which returns the index of
  // the winner, 0 for the application's) when time_top_k > 1 and `time` is given, else the first
  // runs unguarded.
  using TimeContenders =
      std::function<StatusOr<FirstUseOutcome>(const std::vector<CheckedConfig>&)>;
  void Settle(const std::vector<CheckedConfig>& checked, const TimeContenders& time,
              std::string why, CallDecision& decision);
  BlasDecision DecideBlas(const BlasFunctions& blas, const BlasArgs& args, cudaStream_t stream);
  // The configs to try for `problem`, best first, with where each came from; `why` collects
  // what the earlier stages said.
  std::vector<std::pair<CublasLtConfig, std::string>> CandidatesFor(const GemmProblem& problem,
                                                                    std::string& why);
  // The layer's own workspace for a stream the application gave none for (allocated outside
  // capture only; null under capture or past the limit).
  void* OwnWorkspace(int device, cudaStream_t stream);
  void* OwnWorkspaceLocked(int device, cudaStream_t stream);  // mutex_ held
  cublasLtHandle_t LtHandle(int device);
  // After a choice's launch: counted when it succeeded; otherwise the decision stops running it
  // (on this thread) and the statistics say why. True when it ran.
  bool Launched(cublasStatus_t status, CallDecision& decision, GemmStats& stats);
  GemmStats& StatsFor(const std::string& key);
  // Loads the library and the model once (outside stream capture); the reasons they are not
  // used are kept for the statistics.
  void EnsureLoaded();

  LayerSettings settings_;
  std::atomic<LayerMode> mode_;
  // Taken from a process-wide counter by SetMode and by every Layer: the per-thread decision
  // caches are dropped when it changes.
  std::atomic<uint64_t> generation_;

  mutable std::mutex mutex_;  // the rest, on the miss path only
  std::map<std::string, std::unique_ptr<GemmStats>> stats_;
  bool loaded_ = false;
  int device_ = -1;
  std::optional<SolutionLibrary> library_;
  std::string library_status_;  // "" when loaded and used, else why not
  std::unique_ptr<Selector> selector_;
  std::string model_status_;
  std::string provenance_json_;
  std::map<int, cublasLtHandle_t> lt_handles_;
  std::map<std::pair<int, cudaStream_t>, void*> workspaces_;
  double load_ms_ = 0;
};

}  // namespace kselect::layer
