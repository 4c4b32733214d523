// Selector: the run-time half of kselect, what an application embeds. Opened once on a model
// directory, it answers "which kernel config for this problem?" in microseconds, and Gemm() runs
// the answer on the caller's buffers. Nothing here reads Parquet or links LightGBM: the
// candidates ship with the model (candidates.json.gz, written by `kselect train` or
// `kselect model candidates`), the trees are scored by kselect's own evaluator.
//
// Decision order for a problem (each Selection says which stage decided, and why a stage was
// passed over):
//   1. the tuner's exact-size solution library (SelectorOptions::solution_library), when given;
//   2. the decision cache: every earlier decision for the same problem (lock-free reads);
//   3. the model, over the candidate table's configs for the problem's dtypes and layout;
//   4. when no model fits (another device, a dtype or layout the table lacks, a model needing the
//      heuristic's picks where none can be had): the analytical estimate over the table's
//      configs, then the provider library's own heuristic, then the first config the provider
//      can run. A problem some kernel can run never gets an empty answer.
// Candidates are checked with the provider's CanImplement before they are returned, where the
// host has the GPU to ask (Selection::can_implement_checked says whether it did).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kselect/candidates.h"
#include "kselect/features.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect {

class Model;
struct DispatchInfo;

// The stage of the decision order that produced a selection.
enum class DecisionPath {
  kSolutionLibrary,     // the tuner's measured winner for exactly this problem
  kCache,               // an earlier decision (Selection::decided_by says which stage made it)
  kModel,               // the trained model ranked the candidate table
  kAnalytical,          // fallback: the analytical estimate ranked the candidate table
  kHeuristic,           // fallback: the provider library's own heuristic
  kFirstImplementable,  // fallback: the provider's first config that runs the problem
};
// "solution_library", "cache", "model", "analytical", "heuristic", "first_implementable".
std::string_view DecisionPathName(DecisionPath path);

struct SelectorOptions {
  // Configs returned per selection (best first); at least 1.
  int top_k = 8;
  // The device the selection is for, and the provider's settings (device ordinal, workspace
  // limit, tile rule set).
  ProviderOptions provider;
  // The hardware to select for. Unset: the GPU provider.device when this host has one, else the
  // hardware the model was trained for (a GPU-less host ranks for the model's device).
  std::optional<HardwareConstants> hardware;
  // Ask the provider's CanImplement before returning a candidate (needs the GPU for cuBLASLt;
  // skipped, and said so, where the host has none).
  bool check_can_implement = true;
  // A model trained with the heuristic's picks as features needs them: when Select is given
  // none, ask the provider library live (GPU) when true; otherwise fall back.
  bool query_heuristic = true;
  // First stage of the model path: at most this many candidates are scored with the whole model,
  // picked by the heuristic's families and the analytical estimate (0 = score every candidate).
  int first_stage_candidates = 0;
  // How many of the ranked configs get predicted TFLOPS and latency (from the regression and
  // latency models; a ranker's scores are not times). Each costs a pass over those models' trees
  // (2,998 latency trees for the shipped bf16 TN ranker, ~45 us a config): 0 leaves them unset.
  int predicted_times = 8;
  // Path of a solution library (format "kselect.solutions"); "" = none.
  std::string solution_library;
  // Record mode: every distinct problem asked for is appended to this file (format
  // "kselect.problem_record", one JSON object per line) for offline tuning; "" = off. A write
  // that fails (a full disk, a file-size limit) does not fail the selection: the line is kept in
  // memory (up to 4,096) and retried before the next one, and Selector::RecordStatus says so.
  std::string record_path;
  // Decisions the cache holds; further decisions are made but not cached.
  size_t cache_capacity = 1 << 16;
  // Dispatch (Gemm, Conv, DispatchRanked) times this many of the best-ranked configs the first
  // time it runs a problem, on the caller's inputs with a scratch copy of the written operand,
  // interleaved, the median of 7 batches, and runs the fastest from then on: the model's few
  // best guesses settled by this GPU (`kselect eval` reports what it gains as "timed at first
  // use"). Costs a few milliseconds once per problem; skipped while the stream is being captured
  // into a graph. 0 or 1 = off.
  int time_top_k = 0;
  // First-use timing with the read operands rotated past 2 x L2: the launches cycle through
  // copies of them (a little over 2 x L2 bytes in all, for the timing only; the caller's buffers
  // stay as they are), so each launch reads them from memory, as the bench times every config and
  // as a layer called once per step meets its weights. Off, every launch reuses the caller's
  // operands, and weights that fit in L2 stay there between launches, which favours kernels
  // that reread them. On by default: every dataset and eval times configs this way, and on the
  // 174 held-out LLM shapes it lifted the cross-provider decision's geomean over cuBLASLt's pick
  // from 1.0402x to 1.0423x and its worst shape from 0.865x to 0.950x (same process; notes in
  // docs/lab/selector.md). The copies (about 2 x L2 plus one set: ~130 MB on an H200) live
  // only during the timing; where they cannot be allocated, the timing runs without them.
  bool first_use_cold_l2 = true;
  // First-use timing with each batch run as a CUDA graph of the config's launches (captured once
  // on a stream of the timing's own), as an application's graph runs them; off, batches are
  // eager launches on the caller's stream. Eager batches add launch gaps that decide among
  // kernels of a few microseconds: on decode GEMMs they ranked configs 2-3 % apart from the
  // CUDA-graph timing the head-to-head bench uses (docs/lab/selector.md, the vendor guard).
  bool first_use_graphs = true;
  // The guard against losing to the vendor: first-use timing always times the provider
  // heuristic's own first pick (cuBLASLt's rank 1, cuDNN's mode A first) beside the model's top
  // k, in the same interleaved rounds, and runs it unless the fastest candidate's median is
  // faster by more than this fraction. 0.01, measured on the H200 (docs/lab/selector.md, the
  // vendor guard): with batches in graph form (first_use_graphs), the cross-provider decision on
  // 174 held-out shapes ran 1.0425x cuBLASLt's pick in geomean, its worst shape 0.9992x, none
  // below 0.98x (eager batches: 1.0398-1.0427x, worst 0.976-0.981x). Untimed decisions
  // (time_top_k < 2) are not guarded, and their dispatch note says so.
  double first_use_vendor_margin = 0.01;
};

// The vendor guard's rule, for dispatch (timed medians) and eval (measured efficiencies) alike:
// a candidate replaces the vendor's pick only when its speedup over the pick (pick ms / its ms)
// exceeds 1 + `margin`.
inline bool ReplacesVendorPick(double speedup_over_pick, double margin) {
  return speedup_over_pick > 1 + margin;
}

struct RankedConfig {
  KernelConfig config;
  // What the deciding stage ordered by (higher = better): the model's score (TFLOPS for a
  // regression, a ranking or blend score otherwise), the estimate's TFLOPS, or -rank.
  double score = 0;
  std::optional<double> predicted_tflops;
  std::optional<double> predicted_latency_ms;
};

// What first-use timing settled for one problem (SelectorOptions::time_top_k).
struct FirstUseRecord {
  std::vector<std::string> order;           // ConfigKeys of the timed configs, the one to run first
  std::optional<KernelConfig> vendor_pick;  // the provider heuristic's first pick, timed beside
  bool vendor_timed = false;                // the pick ran in the timed rounds
  bool vendor_kept = false;                 // it runs: no candidate beat it by more than the margin
  // What the timing cost on the host: preparing the contenders (plan builds) and timing them
  // (first launches included).
  double prepare_ms = 0;
  double timing_ms = 0;
  // Read from a decision file (Selector::LoadCache): timed by an earlier process, not this one.
  bool from_file = false;
};

// How often first-use timing kept the vendor's pick, over the problems a selector timed.
struct FirstUseGuardReport {
  int64_t timed_problems = 0;  // problems timed at first use
  int64_t vendor_timed = 0;    // ... with the vendor's pick among the timed configs
  int64_t vendor_kept = 0;     // ... where it stayed the choice
};

struct Selection {
  Problem problem;
  DecisionPath path = DecisionPath::kModel;
  // The stage that made the decision: equal to `path` except for cached decisions.
  DecisionPath decided_by = DecisionPath::kModel;
  // Why earlier stages were passed over, where the heuristic's picks came from; "" when plain.
  std::string note;
  bool can_implement_checked = false;
  size_t candidates_considered = 0;  // configs in the table (or enumerated) for the problem
  size_t candidates_scored = 0;      // of those, scored by the deciding stage
  std::vector<RankedConfig> ranked;  // best first, at most top_k, never empty
  // Host time the decision spent in the provider library: asking its heuristics for the model's
  // peer features, and CanImplement over the ranked configs (plan builds, for cuDNN).
  double heuristic_query_ms = 0;
  double can_implement_ms = 0;
};

class Selector {
 public:
  // Loads the model, its candidate table and (when given) the solution library; queries the
  // device when the host has one. Errors name the file or field at fault.
  // `model_dir` may list one model per device, ':'-separated (as the C API passes them).
  static StatusOr<std::unique_ptr<Selector>> Open(const std::string& model_dir,
                                                  const SelectorOptions& options = {});
  // One model per device, e.g. {models/h200_cublaslt_default_rank,
  // models/h100_cublaslt_default_rank}: opens the one trained for the hardware it selects for
  // (SelectorOptions::hardware, else the GPU of provider.device), matched on the hardware in
  // each model's feature spec, never on its name. Where none was trained for it, the first is
  // opened and its model stage is passed over with that reason in every selection's note (the
  // fallbacks decide), so another device's model is never served silently. With neither a GPU
  // nor SelectorOptions::hardware, the first is opened.
  static StatusOr<std::unique_ptr<Selector>> Open(const std::vector<std::string>& model_dirs,
                                                  const SelectorOptions& options = {});
  // The matching Open(model_dirs) does: the index of the model trained for the hardware
  // `options` select for (0 where none is, or with neither a GPU nor options.hardware).
  static StatusOr<size_t> ModelForDevice(const std::vector<std::string>& model_dirs,
                                         const SelectorOptions& options = {});
  ~Selector();
  Selector(const Selector&) = delete;
  Selector& operator=(const Selector&) = delete;

  // The decision for `problem`, through the decision order above. `peer` = the provider
  // heuristic's picks for the problem, best first, when the caller has them (a model trained
  // with them needs them; otherwise they are asked for live, see query_heuristic). Thread-safe;
  // the returned selection lives as long as the selector. A problem that no stage can answer is
  // an error (kCannotImplement) saying what each stage found.
  StatusOr<const Selection*> Select(const Problem& problem,
                                    std::optional<std::span<const PeerPick>> peer = std::nullopt);

  // The model's ranking of exactly `candidates` (no cache, no fallback, no CanImplement): what
  // `kselect eval` scores, and `kselect predict --candidates`. All candidates are returned.
  StatusOr<Selection> Rank(const Problem& problem, std::span<const KernelConfig> candidates,
                           std::optional<std::span<const PeerPick>> peer = std::nullopt) const;

  // The candidate table's configs for the problem's dtypes and layout (empty when it has none).
  std::span<const KernelConfig> Candidates(const Problem& problem) const;

  // The decision cache on disk: saved with the provenance record (kselect/provenance.h: device,
  // driver, library versions, the model's fingerprint) and the SM clock and memory bandwidth the
  // features read; loading refuses (kSchemaMismatch, naming the field) a file made under any other
  // of them. Each decision carries its first-use timing's order where dispatch timed it, and a
  // loaded one is dispatched in that order without timing again.
  Status SaveCache(const std::string& path) const;
  Status LoadCache(const std::string& path);
  size_t CachedDecisions() const;

  // Record mode (SelectorOptions::record_path): OK while every problem asked for is in the file;
  // otherwise kIoError naming the file, why the last write failed and how many records wait in
  // memory (or were dropped). FlushRecord retries the waiting records first. OK when off.
  Status RecordStatus() const;
  Status FlushRecord();

  const Model& model() const;
  // The model directory opened (of several given, the one chosen for the device).
  const std::string& model_dir() const;
  const SelectorOptions& options() const;
  const HardwareConstants& hardware() const;
  // FNV-1a 64 over the model directory's model files, spec and candidate table (hex).
  const std::string& model_fingerprint() const;

  // The provider library's own top `count` picks for `problem` (GPU), taken under the lock that
  // guards the provider for selection and dispatch; kUnavailable without a provider.
  StatusOr<std::vector<KernelConfig>> HeuristicPicks(const Problem& problem, int count);

  // The provider the model's configs run on (dispatch prepares kernels through it); kUnavailable
  // in builds or on hosts without one.
  StatusOr<KernelProvider*> provider();
  // The vendor guard's record over this selector's first-use timings so far.
  FirstUseGuardReport first_use_guard_report();
  struct Impl;

 private:
  friend StatusOr<DispatchInfo> DispatchRanked(Selector& selector, const Problem& problem,
                                               std::span<const RankedConfig> ranked,
                                               DecisionPath path, const KernelOperands& operands,
                                               void* stream);
  friend StatusOr<PreparedKernel*> PreparedForDispatch(Selector& selector, const Problem& problem,
                                                       const KernelConfig& config);
  // Dispatch's prepared kernels per (problem, config), under the provider's mutex.
  std::mutex& dispatch_mutex();
  std::unordered_map<std::string, std::unique_ptr<PreparedKernel>>& prepared_kernels();
  // Dispatch's first-use timings (SelectorOptions::time_top_k): per problem, what the timing
  // settled; under the same mutex.
  std::unordered_map<std::string, FirstUseRecord>& first_use_orders();

  explicit Selector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What Gemm() ran.
struct DispatchInfo {
  KernelConfig config;
  DecisionPath path = DecisionPath::kModel;
  int rank = 1;      // 1-based rank of the config run in the selection
  std::string note;  // the configs that failed to prepare or launch before it, and why
  // Configs this call timed before running (SelectorOptions::time_top_k; the problem's first
  // dispatch), 0 otherwise.
  int timed_configs = 0;
  // On the call that timed: whether the vendor's pick was timed beside the candidates and stayed
  // the choice (SelectorOptions::first_use_vendor_margin); unset when it was not timed.
  std::optional<bool> vendor_kept;
  // On the call that timed: the timing's cost (FirstUseRecord's prepare_ms, timing_ms).
  double prepare_ms = 0;
  double timing_ms = 0;
  // The order dispatch follows came from a decision file (Selector::LoadCache): an earlier
  // process timed it, timed_configs is 0 and vendor_kept is the file's.
  bool order_from_file = false;
};

// C = alpha * op(A) op(B) + beta * C with the selector's choice for `problem` (alpha and beta
// from the problem), on `stream` (a cudaStream_t; nullptr = the default stream). `workspace`
// may be null when `workspace_bytes` is 0: configs needing more are skipped. A config that fails
// to prepare or launch falls back to the next ranked one and says so in the info. Asynchronous
// like any launch. Prepared kernels are kept per (problem, config) for the next call.
StatusOr<DispatchInfo> Gemm(Selector& selector, const GemmProblem& problem, const void* a,
                            const void* b, void* c, void* workspace, int64_t workspace_bytes,
                            void* stream);

// The same for a ranking the caller decided (a cross-provider decision, a tuner's list): the
// configs, all of the selector's provider, tried in order until one prepares and launches.
StatusOr<DispatchInfo> GemmRanked(Selector& selector, const GemmProblem& problem,
                                  std::span<const RankedConfig> ranked, DecisionPath path,
                                  const void* a, const void* b, void* c, void* workspace,
                                  int64_t workspace_bytes, void* stream);

// A convolution with the selector's choice for `problem` (a model of the problem's direction,
// cuDNN configs), on `stream`. The tensors are named as in the forward pass, channels last
// (NHWC / NDHWC, weights KYXC / KZYXC with C/G channels), whatever the direction: fwd reads x
// and w and writes y; bwd_data reads y (dy) and w and writes x (dx); bwd_weight reads x and y
// (dy) and writes w (dw). Fallback, workspace and prepared kernels as for Gemm().
StatusOr<DispatchInfo> Conv(Selector& selector, const ConvProblem& problem, void* x, void* w,
                            void* y, void* workspace, int64_t workspace_bytes, void* stream);

// The kernel dispatch launches for (problem, config): prepared through the selector's provider
// the first time and kept as long as the selector (what a caller timing configs of two
// selectors side by side needs). Thread-safe.
StatusOr<PreparedKernel*> PreparedForDispatch(Selector& selector, const Problem& problem,
                                              const KernelConfig& config);

// The launch behind Gemm, GemmRanked and Conv, for any problem kind: `ranked` tried in order
// until one config prepares and launches on `operands` (the provider's Operands order).
StatusOr<DispatchInfo> DispatchRanked(Selector& selector, const Problem& problem,
                                      std::span<const RankedConfig> ranked, DecisionPath path,
                                      const KernelOperands& operands, void* stream);

}  // namespace kselect
