// KernelRouter: kselect's decision for a framework's GEMM and convolution calls at a lookup's
// cost per call.
//
// A framework (PyTorch's operators in torch_ops.cpp) calls Find, then Launch, once per call. The
// first call of a problem goes to Decide: the first rule covering it names the model, which
// decides through the selector (model, first-use timing of the top k beside the vendor's pick,
// the vendor guard) on the call's own operands, and the prepared kernel of what won is kept;
// every later call of that problem is a hash lookup and the kernel's launch. A problem no rule
// covers, or met first while its stream is being captured into a CUDA graph, is left to the
// caller (which runs the framework's own kernel), and so is one whose timing had no vendor's
// pick to guard against (cuDNN's heuristic lists no plan within the workspace limit for some
// layers, such as a VAE's 3-channel output convolution): the framework asks its library itself,
// with its own workspace, and kselect never runs an unguarded choice in its place. Torch-free:
// operands are pointers.
//
// Token-count buckets (share_across_n, GEMMs only): a framework meets one weight at every token
// count (n), and timing each costs ~40 ms. With sharing, the first problem of an n bucket (1, 2,
// 3, 4, 6, 8, 12, 16, 24, ...: each bucket ends at a power of two or 1.5 times one) is decided
// and timed; the others of its bucket (same m, k, batch, layout, dtypes) run its winner when the
// provider prepares it for them (cuBLASLt checks the algo for the exact problem), untimed, and
// are decided afresh when it does not.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/cross_provider.h"
#include "kselect/problem.h"
#include "kselect/selector.h"

namespace kselect {

// Which model decides which problems: the first rule matching a problem.
struct RouteRule {
  bool conv = false;                       // a convolution rule (else a GEMM rule)
  std::optional<DataType> dtype;           // GEMM: unset = any
  std::optional<GemmLayout> layout;        // GEMM: unset = any
  std::optional<ConvDirection> direction;  // convolution: unset = any
  std::string model_dir;  // a model or cross-provider directory; ':' lists one per device
};
// GEMM patterns "*", "bf16", "bf16/rcc", "*/ccc"; convolution patterns "conv", "conv/fwd",
// "conv/bwd_data", "conv/bwd_weight"; then "=MODEL_DIR".
StatusOr<RouteRule> ParseRouteRule(std::string_view text);

// What one decision settled, for the caller's summary.
struct RouteDecision {
  std::string problem;  // ProblemToString
  std::string model_dir;
  std::string config;           // DescribeConfig of what runs ("" when nothing does)
  int timed_configs = 0;        // timed at first use (0: untimed)
  bool vendor_kept = false;     // the vendor's pick won the timing (or the guard kept it)
  double decide_ms = 0;         // selection, timing and the first launch, of which:
  double select_ms = 0;         // the selector's ranking, of which:
  double heuristic_ms = 0;      //   asking the library's heuristics for the model's features
  double can_implement_ms = 0;  // CanImplement of the ranked configs (plan builds)
  double prepare_ms = 0;        // preparing the timed contenders (plan builds)
  double timing_ms = 0;         // timing them
  std::string note;             // why nothing runs, or the dispatch note
  std::string shared_from;      // the problem whose timed winner this reuses ("" = decided itself)
};

enum class RouteOutcome {
  kRan,               // kselect's choice was launched
  kNoRule,            // no rule covers the problem
  kUndecidedCapture,  // first met during stream capture: nothing is timed or prepared then
  kNoDecision,        // the problem's decision failed (see the decisions)
  kUnguarded,         // timed without the vendor's pick beside it: the framework's kernel runs
  kLaunchFailed,      // the kept kernel failed to launch; the problem is passed over from now
};

// The last n of n's bucket: n itself up to 4, then the next power of two or 1.5 times one.
int64_t TokenBucketEnd(int64_t n);

class KernelRouter {
 public:
  // What a decided problem runs: a kernel, or the reason nothing does.
  struct Entry {
    PreparedKernel* kernel = nullptr;  // owned by the rule's selector; null: nothing runs
    int64_t workspace_bytes = 0;
    mutable std::atomic<bool> failed{false};                  // set by Launch on a failed launch
    RouteOutcome without_kernel = RouteOutcome::kNoDecision;  // what a null kernel means
  };

  // `gemm_options` and `conv_options` apply to the selectors GEMM and convolution rules open
  // (device, time_top_k, workspace limit); selectors open at a rule's first use.
  KernelRouter(std::vector<RouteRule> rules, SelectorOptions gemm_options,
               SelectorOptions conv_options, bool share_across_n);
  ~KernelRouter();
  KernelRouter(const KernelRouter&) = delete;
  KernelRouter& operator=(const KernelRouter&) = delete;

  // The problem's entry once decided, else null. Thread-safe; entries live as long as the router.
  const Entry* Find(const Problem& problem) const;
  // Launches a found entry's kernel on `operands` (the provider's operand order; the workspace
  // at least entry.workspace_bytes).
  RouteOutcome Launch(const Entry& entry, const KernelOperands& operands, void* stream) const;
  // Decides a problem Find did not know and launches its choice on `operands` (a workspace of
  // the options' max_workspace_bytes for the timing). Nothing is decided (kUndecidedCapture)
  // while `stream` is being captured. Thread-safe: one decision at a time.
  RouteOutcome Decide(const Problem& problem, const KernelOperands& operands, void* stream,
                      bool capturing);
  // Find, Launch, and Decide when new: for callers whose workspace is known up front.
  RouteOutcome Run(const Problem& problem, const KernelOperands& operands, void* stream,
                   bool capturing);

  std::vector<RouteDecision> Decisions() const;
  // Errors met opening a rule's model (each once), for the summary.
  std::vector<std::string> OpenErrors() const;

  // Decision files, for a later process (Selector::SaveCache: the model's ranking of each problem
  // met and its first-use order, under the device, driver, library and model they were made
  // with). SaveDecisions writes
  // one per opened single-model route, DIR/route<i>-<model>.json, and returns how many.
  // Cross-provider routes (GEMMs over two providers) keep theirs in memory only.
  StatusOr<int> SaveDecisions(const std::string& dir);
  // Routes read their file from `dir` when they open (at once for those already open): problems
  // decided in an earlier process skip the ranking (for cuDNN, the plan builds of CanImplement)
  // and run the order its first-use timing settled on, untimed (the unguarded rule still holds).
  // A missing file is no error; one made under another model, device or library is refused, and
  // the refusal is in OpenErrors.
  void LoadDecisionsFrom(std::string dir);
  // What loading read: "route<i>-<model>.json: N decisions", one line a file read.
  std::vector<std::string> LoadedDecisionFiles() const;
  double DecideSeconds() const { return decide_ns_.load() * 1e-9; }

 private:
  // Every field of a problem that tells it apart, packed (GEMMs use the first few).
  struct ProblemKey {
    std::array<int64_t, 25> fields{};
    bool operator==(const ProblemKey&) const = default;
  };
  struct ProblemKeyHash {
    size_t operator()(const ProblemKey& key) const;
  };
  struct Route;  // one rule's opened selector
  // A bucket's timed winner, for the other problems of its bucket.
  struct Winner {
    Route* route = nullptr;
    Selector* member = nullptr;  // the selector whose provider runs `config`
    KernelConfig config;
    std::string problem;
  };

  static ProblemKey KeyOf(const Problem& problem);
  Route* RouteFor(const Problem& problem);
  // DIR/route<i>-<model>.json for rule i; reads it into the route's selector when present.
  std::string DecisionFile(const std::string& dir, size_t rule) const;
  void LoadDecisions(size_t rule);
  // Decides through `route` and launches the choice once; returns the entry to keep and, when
  // a kernel was kept, what won in `winner`.
  std::unique_ptr<Entry> DecideThrough(Route& route, const Problem& problem,
                                       const KernelOperands& operands, void* stream,
                                       RouteDecision* decision, bool* launched, Winner* winner);
  // The bucket's winner prepared for `problem`; null when it cannot run it.
  std::unique_ptr<Entry> Shared(const Winner& winner, const Problem& problem,
                                int64_t workspace_bytes, RouteDecision* decision);

  std::vector<RouteRule> rules_;
  SelectorOptions gemm_options_, conv_options_;
  bool share_across_n_ = false;
  std::vector<std::unique_ptr<Route>> routes_;  // per rule, opened on first use
  std::unordered_map<ProblemKey, Winner, ProblemKeyHash> bucket_winners_;  // under decide_mutex_

  mutable std::shared_mutex entries_mutex_;
  std::unordered_map<ProblemKey, std::unique_ptr<Entry>, ProblemKeyHash> entries_;
  std::mutex decide_mutex_;  // one decision at a time (they time on the GPU)
  mutable std::mutex log_mutex_;
  std::vector<RouteDecision> decisions_;
  std::vector<std::string> open_errors_;
  std::vector<std::string> loaded_files_;  // under log_mutex_
  std::string decisions_dir_;              // under decide_mutex_
  std::atomic<int64_t> decide_ns_{0};
};

}  // namespace kselect
