// Cross-provider selection: one decision over two providers' kernels, cuBLASLt's and the tile
// engine's. cuBLASLt is the reference: its own heuristic pick is what a program gets without
// kselect, so it is the default; the tile engine is the challenger, and its model's best config
// replaces the pick only where the two providers' TFLOPS models predict it faster by at least
// `min_predicted_gain`. Both predictions come from regression models trained on data of the same
// device, so they are in one unit.
//
// With a reference ranker (a model that orders the reference provider's own configs, such as the
// cuBLASLt peer ranker), the reference side runs the ranker's best config rather than the
// heuristic's pick, and the regression predicts that config's TFLOPS for the decision. With
// SelectorOptions::time_top_k >= 2, Gemm() times the ranker's top time_top_k and the challenger's
// top interleaved the first time it runs a problem and runs the fastest from then on: the
// decision settled by this GPU across both providers.
//
// A cross-provider model directory holds cross_provider.json (format "kselect.cross_provider"):
//   {"format": "kselect.cross_provider", "format_version": 1,
//    "reference": {"provider": "cublaslt", "model": "../h200_cublaslt_default_tflops",
//                  "ranker": "../h200_cublaslt_default_rank"},   (ranker: optional)
//    "challenger": {"provider": "tile", "model": "../h200_tile_bf16_tn"},
//    "min_predicted_gain": 1.0, "comment": "..."}
// Member model paths are relative to the directory. Runtime only: no Arrow, no LightGBM.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/selector.h"
#include "kselect/status.h"

namespace kselect {

struct CrossProviderManifest {
  Provider reference_provider = Provider::kCublasLt;
  std::string reference_model;   // resolved path: the TFLOPS regression the decision reads
  std::string reference_ranker;  // resolved path; "" = the reference side runs the heuristic's pick
  Provider challenger_provider = Provider::kTile;
  std::string challenger_model;  // resolved path
  double min_predicted_gain = 1.0;
  std::string comment;
};

// Whether `dir` is a cross-provider model directory (it holds cross_provider.json).
bool IsCrossProviderDir(const std::string& dir);

// Reads `dir`/cross_provider.json; errors name the file and field.
StatusOr<CrossProviderManifest> LoadCrossProviderManifest(const std::string& dir);

// Of several per-device model directories, plain or cross-provider, the one trained for the
// device `options` select for (Selector::ModelForDevice): a cross-provider directory counts as
// trained for its reference model's hardware. The first where none is (its selector then says so
// in every note), or with neither a GPU nor options.hardware.
StatusOr<std::string> ModelDirForDevice(const std::vector<std::string>& dirs,
                                        const SelectorOptions& options);
// The same for a ':'-separated list (as the C API takes them) that names a cross-provider
// directory; any other string is returned as it is, for Selector::Open to choose from.
StatusOr<std::string> ModelDirForDevice(const std::string& dirs, const SelectorOptions& options);

struct CrossDecision {
  KernelConfig config;  // what to run
  bool challenger_chosen = false;
  KernelConfig reference_pick;  // the reference provider heuristic's rank-1 pick
  // What the reference side runs: the reference ranker's best config, else the pick.
  KernelConfig reference_choice;
  double reference_predicted_tflops = 0;       // of reference_choice
  std::optional<KernelConfig> challenger_top;  // the challenger model's best candidate
  double challenger_predicted_tflops = 0;
  double predicted_gain = 0;  // challenger / reference predicted TFLOPS (0 without a challenger)
  // Best first: the decision, then the other provider's choice, then the reference ranker's next
  // configs (up to SelectorOptions::time_top_k from the reference side in all). Dispatch times
  // them at first use with time_top_k >= 2, else falls back down the list.
  std::vector<RankedConfig> ranked;
  std::string note;  // why the challenger had no candidate, why the ranker was passed over, ...
};

class CrossProviderSelector {
 public:
  // Opens the member models (Selector::Open with `options`; predicted_times is raised to 1 so
  // the challenger's top config carries its TFLOPS). The reference ranker must be a model of the
  // reference provider; it may rank (and need the heuristic's picks, asked live).
  static StatusOr<std::unique_ptr<CrossProviderSelector>> Open(const std::string& dir,
                                                               SelectorOptions options = {});

  // Live (GPU): the reference pick from the reference provider's heuristic, the reference
  // ranker's order where there is one, the challenger's top from its selector (candidate table,
  // CanImplement). Decisions are cached per problem (up to SelectorOptions::cache_capacity), so
  // a program's repeated calls cost a lookup. Thread-safe.
  StatusOr<CrossDecision> Select(const GemmProblem& problem);

  // The decision for a known reference pick and challenger candidates (offline evaluation; no
  // GPU): the challenger model ranks exactly `challenger_candidates` (none: no challenger). The
  // reference side runs the pick: the reference ranker is not consulted.
  StatusOr<CrossDecision> Decide(const GemmProblem& problem, const KernelConfig& reference_pick,
                                 std::span<const KernelConfig> challenger_candidates) const;

  const CrossProviderManifest& manifest() const { return manifest_; }
  Selector& reference() { return *reference_; }
  Selector& challenger() { return *challenger_; }
  Selector* reference_ranker() { return reference_ranker_.get(); }
  int time_top_k() const { return time_top_k_; }
  // The vendor guard's record over this selector's first-use timings so far.
  FirstUseGuardReport first_use_guard_report();

 private:
  friend StatusOr<DispatchInfo> Gemm(CrossProviderSelector& selector, const GemmProblem& problem,
                                     const void* a, const void* b, void* c, void* workspace,
                                     int64_t workspace_bytes, void* stream);
  CrossProviderSelector(CrossProviderManifest manifest, std::unique_ptr<Selector> reference,
                        std::unique_ptr<Selector> challenger,
                        std::unique_ptr<Selector> reference_ranker, int time_top_k,
                        size_t cache_capacity);
  // Select without the cache.
  StatusOr<CrossDecision> DecideLive(const GemmProblem& problem);
  // `reference_ranked`: the reference ranker's order (its first is the reference side's choice);
  // empty = the pick.
  StatusOr<CrossDecision> Combine(const GemmProblem& problem, const KernelConfig& reference_pick,
                                  std::span<const RankedConfig> reference_ranked,
                                  std::optional<RankedConfig> challenger_top) const;

  CrossProviderManifest manifest_;
  std::unique_ptr<Selector> reference_, challenger_, reference_ranker_;
  int time_top_k_ = 0;
  size_t cache_capacity_ = 0;
  std::mutex decisions_mutex_;
  std::unordered_map<std::string, CrossDecision> decisions_;
  // First-use timings across both providers: per problem, what the timing settled (the reference
  // provider heuristic's pick timed beside the candidates: the vendor guard).
  std::mutex first_use_mutex_;
  std::unordered_map<std::string, FirstUseRecord> first_use_orders_;
};

// Runs the decision (falling back to the other provider's config when it cannot prepare or
// launch), like Gemm() for one selector.
StatusOr<DispatchInfo> Gemm(CrossProviderSelector& selector, const GemmProblem& problem,
                            const void* a, const void* b, void* c, void* workspace,
                            int64_t workspace_bytes, void* stream);

}  // namespace kselect
