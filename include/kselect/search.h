// kselect search: a model-guided search over the tile engine's config space (the CK Tile
// heuristics' search.py, kept honest). The space is wider than any catalogue: per pipeline, the
// cross product of every value the rule set's generator lists for each TileConfig field. A
// proposal counts only when it passes the tile engine's named validity rules for the problem's
// spec, the provider's CanImplement and the rule set's filter rules; every rejected proposal is
// counted under the rule that rejected it (CK's search proposes kernels that do not exist: this
// says how often that would have happened). A trained model's predicted TFLOPS is the fitness.
//
// Per problem:
//   1. a strategy proposes configs: `random` (a pipeline, then each field, uniformly) or `de`
//      (differential evolution over the fields' value indices: mutant = a + F (b - c), rounded
//      and clamped per field, binomial crossover, greedy selection; an invalid trial has its
//      mutated fields re-drawn a few times before it is dropped);
//   2. the first `budget` distinct valid configs are scored by the model, in batches;
//   3. baselines: the model's best over whole catalogues (`default`, `full`) scored exhaustively,
//      and how many model calls the search needed to reach them;
//   4. on a GPU (SearchMeasurer), the best proposals are compiled, verified against the
//      reference and timed interleaved with cuBLASLt's heuristic pick on operands rotated past L2.
// Steps 1-3 need no GPU and no Arrow.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/catalogue.h"
#include "kselect/config_schema.h"
#include "kselect/hardware.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/progress.h"
#include "kselect/provider.h"
#include "kselect/search_space.h"
#include "kselect/status.h"
#include "kselect/tuner.h"

namespace kselect {

class Selector;

// ---------------------------------------------------------------------------------------------
// Validity.

// Why a proposal cannot run a problem: the rule's name (a validity rule of the tile engine,
// "spec" when no spec binds the problem, "can_implement" for the engine's problem check,
// "workspace_limit" for split-K workspace over the provider's limit, "provider" for the
// provider's CanImplement, "rule <name>" for the rule set's filter rules) and what is wrong.
struct Rejection {
  std::string rule;
  std::string reason;
};
// nullopt when the config can run the problem.
using ProposalCheck = std::function<std::optional<Rejection>(const TileConfig& config)>;

// The check for `problem`: the validity rules on SpecForProblem's spec, the engine's
// CanImplement (alignments, unmasked dimensions, grid limits), the workspace limit of `provider`,
// the tile provider's CanImplement, then `rules`' filter rules. CPU only. kCannotImplement for
// problems the tile engine does not run at all (dtypes), kInvalidArgument for an invalid problem.
StatusOr<ProposalCheck> MakeProposalCheck(const GemmProblem& problem, const RuleSet& rules,
                                          const ProviderOptions& provider = {});

// ---------------------------------------------------------------------------------------------
// The search (CPU; the caller supplies the fitness).

enum class SearchStrategy { kRandom, kDifferentialEvolution };
std::string_view SearchStrategyName(SearchStrategy strategy);  // "random", "de"
StatusOr<SearchStrategy> ParseSearchStrategy(std::string_view name);

struct SearchOptions {
  SearchStrategy strategy = SearchStrategy::kRandom;
  int64_t budget = 500;  // distinct valid configs scored by the model
  uint64_t seed = 1;
  int top = 8;     // best proposals kept in the result
  int batch = 64;  // random: configs per model call
  // Differential evolution: individuals (0 = budget / 10, clamped to 8..32), the differential
  // weight F, the crossover rate CR, re-draws of an invalid trial's mutated genes before the trial
  // is dropped, and generations without a better best before all but the best are re-drawn.
  int population = 0;
  double weight = 0.7;
  double crossover = 0.9;
  int repair_attempts = 8;
  int stagnation_generations = 12;
  // Proposals checked before the search gives up (a space with fewer valid configs than the
  // budget); 0 = 200 x budget, at least 100,000.
  int64_t max_proposals = 0;
  // Reports "configs" scored of `budget` after each model call (fewer at the end when the search
  // runs out of proposals).
  ProgressCallback progress;
};

// Scores of a batch of valid configs (higher is better), one per config, in order.
using BatchScore = std::function<StatusOr<std::vector<double>>(std::span<const TileConfig>)>;

struct RejectionCount {
  std::string rule;
  int64_t count = 0;
  std::string example;  // the first rejection's reason
};

struct ScoredConfig {
  TileConfig config;
  double score = 0;
  int64_t scored_at = 0;  // 1-based position in the scoring order
};

struct SearchTrace {
  std::vector<ScoredConfig> scored;  // every distinct valid config scored, in scoring order
  int64_t proposals = 0;             // configs proposed and checked (re-draws included)
  int64_t rejected = 0;              // of those, invalid for the problem
  int64_t duplicates = 0;            // valid, but scored before (no model call)
  std::vector<RejectionCount> rejected_by_rule;  // most frequent first
  int64_t model_calls = 0;                       // batches scored
  int generations = 0;                           // de
  int restarts = 0;                              // de: re-draws after stagnation
  std::string stopped_by;                        // "budget", "proposal cap"
  // The `count` best scored configs, best first (ties: the earlier scored first).
  std::vector<ScoredConfig> Best(size_t count) const;
};

// Runs the strategy until `budget` configs are scored or `max_proposals` are checked. The same
// space, check, scores and options give the same trace.
StatusOr<SearchTrace> RunTileSearch(const TileSearchSpace& space, const ProposalCheck& check,
                                    const BatchScore& score, const SearchOptions& options);

// ---------------------------------------------------------------------------------------------
// One problem searched with a model, beside the exhaustive baselines; optionally measured.

struct TileSearchOptions {
  std::string model_dir;          // a tile model (its feature spec's provider is tile)
  std::string rule_set = "full";  // the space (a name under rules_dir/tile/, or a path)
  std::string rules_dir;          // "" = tile::DefaultRulesRoot()
  std::vector<std::string> baselines = {"default", "full"};  // catalogues scored exhaustively
  ProviderOptions provider;  // workspace limit (CanImplement), device
  SearchOptions search;
};

struct SearchBaseline {
  std::string rule_set;
  int64_t configs = 0;  // catalogue configs that can run the problem, all scored
  std::optional<ScoredConfig> best;
  // Configs the search had scored when its best first reached this baseline's best score; nullopt
  // when it never did.
  std::optional<int64_t> search_scored_to_reach;
};

// One config timed on the device.
struct MeasuredConfig {
  std::string role;  // "proposal 1", ..., "default best", "full best"
  TileConfig config;
  double predicted = 0;  // the model's score
  bool verified = false;
  std::string verification;  // the comparison with the reference, or why it did not run
  // Timed only when verified: median ms, and the median over rounds of cuBLASLt's pick's ms over
  // this config's ms (> 1: faster than cuBLASLt's pick).
  std::optional<InterleavedFigure> figure;
  double measured_tflops = 0;
  double predicted_over_measured = 0;  // 0 when not timed, or the scores are not TFLOPS
};

struct SearchMeasurement {
  InterleavedFigure cublaslt_pick;  // cuBLASLt's heuristic rank 1, the reference
  double cublaslt_tflops = 0;
  std::vector<MeasuredConfig> configs;
  double peak_gb_s = 0;
  std::string note;
};

struct TileSearchResult {
  GemmProblem problem;
  SearchOptions options;
  std::string rule_set;
  uint64_t rules_fingerprint = 0;
  double space_size = 0;
  SearchTrace trace;
  std::vector<ScoredConfig> top;  // the best `options.top` proposals
  std::vector<SearchBaseline> baselines;
  std::optional<SearchMeasurement> measured;
  double seconds = 0;  // the search and the baselines, CPU
};

// A model opened once, and the space and baseline catalogues read once, for many problems.
class TileSearcher {
 public:
  // kInvalidArgument when the model is not a tile model; errors of Selector::Open and of the rule
  // sets otherwise.
  static StatusOr<std::unique_ptr<TileSearcher>> Open(const TileSearchOptions& options);
  ~TileSearcher();

  StatusOr<TileSearchResult> Run(const GemmProblem& problem) const;

  const TileSearchOptions& options() const;
  const TileSearchSpace& space() const;
  const std::string& model_fingerprint() const;
  // False for a ranker or a blend: its scores order configs but are not TFLOPS.
  bool ScoresAreTflops() const;

 private:
  struct Impl;
  explicit TileSearcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The device half: compiles (NVRTC, cubin cache), verifies and times the best proposals.
struct SearchMeasureOptions {
  ProviderOptions provider;  // device, workspace limit
  int top = 4;               // distinct proposals measured, best predicted first
  bool baselines = true;     // also the baselines' best configs (when not among the proposals)
  int rounds = 15;           // interleaved rounds
  double batch_ms = 0.5;     // GPU time per timed graph launch
  int64_t rotate_bytes = 0;  // operand bytes rotated through (0 = 2 x L2)
};

class SearchMeasurer {
 public:
  // kUnavailable without a GPU.
  static StatusOr<std::unique_ptr<SearchMeasurer>> Create(const SearchMeasureOptions& options);
  virtual ~SearchMeasurer() = default;
  // Fills result->measured. `scores_are_tflops` (TileSearcher::ScoresAreTflops) says whether
  // predicted / measured ratios mean anything.
  virtual Status Measure(TileSearchResult* result, bool scores_are_tflops) = 0;
  virtual const HardwareProfile& hardware() const = 0;
};

// {"format": "kselect.search", "format_version": 1, ...} (docs/formats.md). `hardware` is the
// measuring device's (nullptr when nothing was measured).
std::string SearchJson(std::span<const TileSearchResult> results, const TileSearcher& searcher,
                       const HardwareProfile* hardware, const std::string& device_kind,
                       const std::string& run_id);

}  // namespace kselect
