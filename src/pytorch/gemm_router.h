// GemmRouter: kselect's decision for a framework's GEMM calls at a lookup's cost per call.
//
// A framework (PyTorch's operators in torch_ops.cpp) calls Run once per GEMM. The first call of
// a problem decides it through the selector (model, first-use timing of the top k beside the
// vendor's pick, the vendor guard) on the call's own operands, and keeps the prepared kernel of
// what won; every later call of that problem is a hash lookup and the kernel's launch. A problem
// no model covers, or met first while its stream is being captured into a CUDA graph, is left
// to the caller (which runs the framework's own kernel). Torch-free: the operands are pointers.
//
// Token-count buckets (share_across_n): a framework meets one weight at every token count (n),
// and timing each costs ~40 ms. With sharing, the first problem of an n bucket (1, 2, 3, 4, 6,
// 8, 12, 16, 24, ... : each bucket ends at a power of two or 1.5 times one) is decided and timed
// as above; the others of its bucket (same m, k, batch, layout, dtypes) run its winner when the
// provider prepares it for them (cuBLASLt checks the algo for the exact problem), untimed, and
// are decided afresh when it does not.
#pragma once

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

// Which model decides which GEMMs: the first rule whose dtype and layout match a problem.
struct GemmRouteRule {
  std::optional<DataType> dtype;     // unset: any
  std::optional<GemmLayout> layout;  // unset: any
  std::string model_dir;             // a model or cross-provider directory; ':' lists per device
};
// "bf16/rcc=DIR", "bf16=DIR", "*/ccc=DIR", "*=DIR".
StatusOr<GemmRouteRule> ParseGemmRouteRule(std::string_view text);

// What one decision settled, for the caller's summary.
struct GemmRouteDecision {
  std::string problem;  // GemmProblem::ToString
  std::string model_dir;
  std::string config;        // DescribeConfig of what runs ("" when nothing does)
  int timed_configs = 0;     // timed at first use (0: untimed)
  bool vendor_kept = false;  // the vendor's pick won the timing (or the guard kept it)
  double decide_ms = 0;      // selection, timing and the first launch
  std::string note;          // why nothing runs, or the dispatch note
  std::string shared_from;   // the problem whose timed winner this reuses ("" = decided itself)
};

enum class GemmRouteOutcome {
  kRan,               // kselect's choice was launched
  kNoRule,            // no rule covers the problem's dtype and layout
  kUndecidedCapture,  // first met during stream capture: nothing is timed or prepared then
  kNoDecision,        // the problem's decision failed earlier (see the decisions)
  kLaunchFailed,      // the kept kernel failed to launch; the problem is passed over from now
};
std::string_view GemmRouteOutcomeName(GemmRouteOutcome outcome);

// The last n of n's bucket: n itself up to 4, then the next power of two or 1.5 times one.
int64_t TokenBucketEnd(int64_t n);

class GemmRouter {
 public:
  // `options` apply to every selector the rules open (device, time_top_k, workspace limit).
  // Selectors open at a rule's first use.
  GemmRouter(std::vector<GemmRouteRule> rules, SelectorOptions options, bool share_across_n);
  ~GemmRouter();
  GemmRouter(const GemmRouter&) = delete;
  GemmRouter& operator=(const GemmRouter&) = delete;

  // C = op(A) op(B) for `problem` (alpha 1, beta 0) with `a`, `b`, `c` as the provider's GEMM
  // operands, on `stream`, with a workspace of `workspace_bytes`. `capturing` says whether
  // `stream` is being captured (asked of the driver by the caller only when Decided() is false,
  // so the steady state costs no driver query). Thread-safe.
  GemmRouteOutcome Run(const GemmProblem& problem, const void* a, const void* b, void* c,
                       void* workspace, int64_t workspace_bytes, void* stream, bool capturing);
  // Whether `problem` has a settled entry (a kernel or a failure).
  bool Decided(const GemmProblem& problem) const;

  std::vector<GemmRouteDecision> Decisions() const;
  // Errors met opening a rule's model (each once), for the summary.
  std::vector<std::string> OpenErrors() const;
  double DecideSeconds() const { return decide_ns_.load() * 1e-9; }
  const SelectorOptions& options() const { return options_; }

 private:
  struct ProblemKey {
    int64_t m, n, k, batch;
    uint32_t layout_and_dtypes;
    bool operator==(const ProblemKey&) const = default;
  };
  struct ProblemKeyHash {
    size_t operator()(const ProblemKey& key) const;
  };
  struct Entry {
    PreparedKernel* kernel = nullptr;  // owned by the rule's selector; null: nothing runs
    int64_t workspace_bytes = 0;
    std::atomic<bool> failed{false};
    GemmRouteOutcome without_kernel = GemmRouteOutcome::kNoDecision;  // what a null kernel means
  };
  struct Route;  // one rule's opened selector
  // A bucket's timed winner, for the other problems of its bucket.
  struct Winner {
    Route* route = nullptr;
    Selector* member = nullptr;  // the selector whose provider runs `config`
    KernelConfig config;
    std::string problem;
  };

  static ProblemKey KeyOf(const GemmProblem& problem);
  static ProblemKey BucketKeyOf(const GemmProblem& problem);
  Route* RouteFor(const GemmProblem& problem);
  // Decides `problem` and launches its choice once; returns the entry to keep and, when a
  // kernel was kept, what won in `winner`.
  std::unique_ptr<Entry> Decide(Route& route, const GemmProblem& problem, const void* a,
                                const void* b, void* c, void* workspace, int64_t workspace_bytes,
                                void* stream, GemmRouteDecision* decision, bool* launched,
                                Winner* winner);
  // The bucket's winner prepared for `problem`; null when it cannot run it.
  std::unique_ptr<Entry> Shared(const Winner& winner, const GemmProblem& problem,
                                int64_t workspace_bytes, GemmRouteDecision* decision);

  std::vector<GemmRouteRule> rules_;
  SelectorOptions options_;
  bool share_across_n_ = false;
  std::vector<std::unique_ptr<Route>> routes_;  // per rule, opened on first use
  std::unordered_map<ProblemKey, Winner, ProblemKeyHash> bucket_winners_;  // under decide_mutex_

  mutable std::shared_mutex entries_mutex_;
  std::unordered_map<ProblemKey, std::unique_ptr<Entry>, ProblemKeyHash> entries_;
  std::mutex decide_mutex_;  // one decision at a time (they time on the GPU)
  mutable std::mutex log_mutex_;
  std::vector<GemmRouteDecision> decisions_;
  std::vector<std::string> open_errors_;
  std::atomic<int64_t> decide_ns_{0};
};

}  // namespace kselect
