// The tuner: from the GEMMs an application calls (gemm_log.h) to a verified exact-size solution
// library (solutions.h) that the selector reads first, with the uplift measured honestly.
//
// Per GEMM:
//   1. enumerate the provider's config space for the problem (every config passes CanImplement);
//   2. a genetic search over it (RunGeneticSearch): the first population is the model's top-k and
//      the provider heuristic's top 8, then tournament selection, uniform crossover over coupled
//      field groups, neighbour mutation, elitism and restarts on stagnation; no config is timed
//      twice; a wall-time budget per GEMM;
//   3. the search's fastest configs are checked against the reference GEMM on random data (NaN and
//      Inf never pass), then timed interleaved with the heuristic's rank-1 pick in one process
//      (A B C A B C ..., rotated buffers, CUDA graphs) and kept only when at least min_speedup
//      faster. The model-only pick and the best of the heuristic's top 8 are timed in the same
//      interleaved rounds, so every uplift in the report is measured against the same reference
//      at the same moment (clocks drift by up to 18 % between runs minutes apart).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kselect/bench.h"
#include "kselect/gemm_log.h"
#include "kselect/hardware.h"
#include "kselect/kernel_config.h"
#include "kselect/provider.h"
#include "kselect/solutions.h"
#include "kselect/status.h"

namespace kselect {

// ---------------------------------------------------------------------------------------------
// The search space and the genetic algorithm (CPU only; the caller supplies the fitness).

// A finite config space as genes: one gene per searchable integer field of the provider's schema
// (SearchMove other than kFixed), each config's genes as indices into the sorted values its field
// takes in the space. Fields sharing a search group (ConfigField::search_group, else the key
// label) are crossed over together.
struct SearchSpace {
  std::vector<KernelConfig> configs;
  std::vector<std::string> gene_names;
  std::vector<std::vector<int>> groups;      // gene indices per coupled group
  std::vector<std::vector<int64_t>> values;  // per gene: the values the space uses, ascending
  std::vector<std::vector<int32_t>> genes;   // per config: a value index per gene
  std::unordered_map<std::string, size_t> by_genes;  // gene vector (as bytes) -> first config

  // The config with exactly these genes, if the space has one.
  std::optional<size_t> Find(std::span<const int32_t> config_genes) const;
};

// The space of `configs` (one provider's, no duplicates by ConfigKey). kInvalidArgument when empty
// or mixing providers.
StatusOr<SearchSpace> MakeSearchSpace(std::vector<KernelConfig> configs);

struct GeneticOptions {
  int population = 24;
  int generations = 40;
  int tournament = 2;              // contestants per parent choice
  double crossover_rate = 0.9;     // else the child copies its first parent
  double mutation_rate = 0.3;      // chance of each successive neighbour move of a child
  int elites = 2;                  // best individuals carried over unchanged
  int stagnation_generations = 4;  // generations without a 0.5 % gain before a restart
  int max_restarts = 3;            // then the search stops (converged)
  int64_t max_evaluations = 0;     // fitness calls; 0 = no cap
  uint64_t seed = 1;
};

// A config's time in ms (lower is better), or nullopt when it could not be timed (it is then
// never chosen). Called at most once per config.
using FitnessFunction = std::function<std::optional<double>(size_t config)>;

struct GeneticResult {
  std::vector<std::pair<size_t, double>> evaluated;  // (config, ms; +inf when failed), in order
  std::optional<size_t> best;                        // fastest timed config
  double best_ms = 0;
  int generations = 0;
  int restarts = 0;
  // "generations", "converged", "budget", "evaluations", "space exhausted".
  std::string stopped_by;
  // The `count` fastest timed configs, fastest first.
  std::vector<size_t> Fastest(size_t count) const;
};

// Runs the search. `seeds` (indices into the space) are evaluated first, in order; `stop` is
// asked before every fitness call (a time budget) and ends the search when true.
GeneticResult RunGeneticSearch(const SearchSpace& space, std::span<const size_t> seeds,
                               const FitnessFunction& fitness, const GeneticOptions& options,
                               const std::function<bool()>& stop = {});

// ---------------------------------------------------------------------------------------------
// Tuning the GEMMs of a log on the GPU.

struct TuneOptions {
  Provider provider = Provider::kCublasLt;
  ProviderOptions provider_options;  // workspace limit, tile rule set; device set per worker
  // A model directory (the selector's): its top-k seed the search and its pick is reported as
  // the model-only choice. "" = neither.
  std::string model_dir;
  int model_top_k = 8;
  int heuristic_picks = 8;  // the provider heuristic's top-N: seeds, and the best-of-top-N figure
  GeneticOptions genetic;
  double budget_s = 20;  // wall time of one GEMM's search (enumeration not counted)
  double min_speedup = 1.03;
  int confirm_candidates = 3;   // the search's fastest configs verified and timed interleaved
  int interleaved_rounds = 21;  // rounds of the interleaved comparison
  double batch_ms = 0.2;        // GPU time per timed graph launch in the search
  double interleaved_batch_ms = 0.5;
  double abort_factor = 2.0;  // a config slower than this x the best so far is not timed further
  int64_t rotate_bytes = 0;   // operand bytes rotated through (0 = 2 x L2)
  std::vector<int> devices = {0};  // one worker per GPU
  ShardSpec shard;                 // which of the log's kept GEMMs this process tunes
  std::string device_kind;         // lender's kind name, recorded ("nvidia-h200")
  std::string run_id;              // "" = derived from the start time
};

// The figures of one config in the interleaved comparison.
struct InterleavedFigure {
  KernelConfig config;
  double median_ms = 0;
  double speedup = 1;  // median over rounds of reference_ms / this config's ms in that round
};

struct TunedGemm {
  LoggedGemm gemm;  // as logged (calls, leading dimensions)
  // "tuned" (a verified faster config), "default kept" (nothing ≥ min_speedup), "failed: ...".
  std::string outcome;
  std::string note;                               // why a candidate was rejected, what was skipped
  InterleavedFigure reference;                    // the heuristic's rank-1 pick
  std::optional<InterleavedFigure> tuned;         // the search's best verified candidate
  std::optional<InterleavedFigure> model_pick;    // the selector's top-1, untimed choice
  std::optional<InterleavedFigure> best_of_top8;  // fastest of the heuristic's top N in the search
  // Extra configs compared on request (TunableOp's choice, ...), by label.
  std::vector<std::pair<std::string, InterleavedFigure>> others;
  bool accepted = false;  // tuned->speedup >= min_speedup and verified
  std::string verification;
  int64_t configs_enumerated = 0;
  int64_t configs_timed = 0;  // fitness calls of the search
  int generations = 0;
  int restarts = 0;
  std::string stopped_by;
  double enumerate_s = 0;    // wall time of the enumeration
  double search_s = 0;       // wall time of the search
  double search_gpu_ms = 0;  // GPU time inside timed regions during the search
  double top8_gpu_ms = 0;    // GPU time the heuristic's top N needed to be timed
  double confirm_s = 0;      // verification and interleaved timing
  int device = 0;
};

struct TuneResult {
  std::string run_id;
  std::string log_source;
  HardwareProfile hardware;
  std::string device_kind;
  std::string provider_version;
  TuneOptions options;
  std::vector<TunedGemm> gemms;  // in the log summary's rank order
  double seconds = 0;
};

// ---- Head to head: the tile engine against cuBLASLt, one timing module for both ----------------
// Per problem: cuBLASLt's heuristic top N (and optionally its whole enumerated space) and the tile
// rule set's configs are screened with the graph timer on operands rotated past L2; the fastest
// `finalists` of each provider (tile finalists verified against the reference first) and
// cuBLASLt's rank-1 pick are then timed interleaved, so drift between runs cannot favour either.
struct HeadToHeadOptions {
  ProviderOptions provider_options;  // device, workspace limit, tile rule set
  int cublaslt_picks = 16;           // cuBLASLt heuristic's top N screened
  bool cublaslt_space = false;       // also screen cuBLASLt's whole enumerated space (slow)
  int finalists = 3;                 // per provider, timed interleaved
  int rounds = 15;
  double screen_batch_ms = 0.2;  // GPU time per graph launch while screening
  double batch_ms = 0.5;         // and in the interleaved rounds
  int64_t rotate_bytes = 0;      // operand bytes rotated through (0 = 2 x L2)
  // A cross-provider model directory (cross_provider.h): its decision joins the finalists and is
  // reported as HeadToHead::cross_pick. "" = none.
  std::string cross_model;
  // The cross-provider selector's SelectorOptions::time_top_k: with >= 2 its decision is what
  // kselect::Gemm runs after timing the candidates of both providers at the problem's first use
  // (on the problem's first operand set), the same path an application takes.
  int cross_time_top_k = 0;
  // The cross-provider selector's SelectorOptions::first_use_cold_l2 (on by default, as there).
  bool cross_first_use_cold_l2 = true;
  // Time only cuBLASLt's pick and the cross-provider decision: no screening, no other finalists
  // (a fast live check of a cross-provider model over many shapes).
  bool cross_only = false;
  // Keep every screened config's time in HeadToHead::screened (an offline evaluation set for
  // cross-provider selection: both providers timed in one process, minutes of drift excluded).
  bool keep_screened = false;
};

// One config's screening time (graph timer, one measurement of 3 launches' median).
struct ScreenedTime {
  KernelConfig config;
  double ms = 0;
};

struct HeadToHead {
  GemmProblem problem;
  int64_t tile_screened = 0, cublaslt_screened = 0;
  // Speedups are over cuBLASLt's rank-1 pick (median of per-round ratios).
  InterleavedFigure cublaslt_pick;
  InterleavedFigure cublaslt_best;             // fastest cuBLASLt finalist (may be the pick)
  std::optional<InterleavedFigure> tile_best;  // fastest verified tile finalist
  // Median over rounds of cublaslt_best's ms / tile_best's ms (> 1: the tile kernel is faster).
  double tile_over_cublaslt_best = 0;
  double peak_gb_s = 0;  // the device's HBM peak, for bandwidth fractions
  std::string note;      // finalists that failed verification, configs that failed to time
  // With HeadToHeadOptions::keep_screened: every config screened, both providers, fastest first.
  std::vector<ScreenedTime> screened;
  // With HeadToHeadOptions::cross_model: the cross-provider decision, timed interleaved.
  std::optional<InterleavedFigure> cross_pick;
  double cross_predicted_gain = 0;
  int cross_timed_configs = 0;  // configs the decision timed at first use (cross_time_top_k)
  bool cross_first_use_cold_l2 = false;  // ... with the read operands rotated past 2 x L2
  // Every finalist as timed interleaved (the pick first, then cuBLASLt's, the tile engine's and
  // the cross-provider decision), so configs can be compared with each other in one run.
  std::vector<InterleavedFigure> finalists;
};

// Offline evaluation of a cross-provider decision on head-to-head files written with --screened:
// per problem, the decision over cuBLASLt's pick and the screened tile configs, scored with the
// screened times of the same process.
struct CrossEvaluationRow {
  GemmProblem problem;
  bool challenger_chosen = false;
  double predicted_gain = 0;
  double pick_ms = 0;            // cuBLASLt's pick, screened
  double decision_ms = 0;        // the decision, screened
  double challenger_top_ms = 0;  // the challenger model's top config, screened (0: none)
  double best_ms = 0;            // fastest screened config of either provider
  double reference_predicted_tflops = 0, reference_measured_tflops = 0;
  double challenger_predicted_tflops = 0, challenger_measured_tflops = 0;
};
struct CrossEvaluation {
  std::vector<CrossEvaluationRow> rows;
  double geomean_decision_over_pick = 0;        // the figure the issue asks for
  double geomean_challenger_top_over_pick = 0;  // always the tile model's top config
  double geomean_best_over_pick = 0;            // the ceiling (best of both, screened)
  double share_challenger_chosen = 0;
  double worst_decision_over_pick = 0;
};
class CrossProviderSelector;
StatusOr<CrossEvaluation> EvaluateCrossProvider(const CrossProviderSelector& selector,
                                                std::span<const std::string> head_to_head_files);
std::string CrossEvaluationJson(const CrossEvaluation& evaluation, const std::string& model_dir,
                                std::span<const std::string> sources);

class HeadToHeadRunner {
 public:
  // kUnavailable without a GPU.
  static StatusOr<std::unique_ptr<HeadToHeadRunner>> Create(const HeadToHeadOptions& options);
  virtual ~HeadToHeadRunner() = default;
  virtual StatusOr<HeadToHead> Run(const GemmProblem& problem) = 0;
  virtual const HardwareProfile& hardware() const = 0;
};

// Bytes a GEMM must move at least (A and B read, C written; C read too when beta != 0) over
// `ms`, as a fraction of `peak_gb_s`.
double HbmFraction(const GemmProblem& problem, double ms, double peak_gb_s);

// {"format": "kselect.head_to_head", "format_version": 1, device, versions, run_id, "results":
// [{problem, cublaslt_pick, cublaslt_best, tile_best: {config, median_ms, tflops, hbm_fraction,
// speedup_over_pick}, tile_over_cublaslt_best, finalists: [...]}], "summary": {...}}.
std::string HeadToHeadJson(std::span<const HeadToHead> results, const HardwareProfile& hardware,
                           const std::string& device_kind, const std::string& run_id);

// Progress lines ("[3/12] m=... tuned 1.071x in 18.2 s"), or nullptr for silence.
using TuneProgress = std::function<void(const std::string& line)>;

// Tunes the log's GEMMs at `gemms` (indices into log.gemms, e.g. a summary's kept entries), this
// shard's share of them, over options.devices. kUnavailable without a GPU.
StatusOr<TuneResult> TuneGemms(const GemmLog& log, std::span<const size_t> gemms,
                               const TuneOptions& options, const TuneProgress& progress = {});

// The result as a library with its identity: the accepted solutions, and for every other GEMM
// measured the default pick pinned (speedup 1), so dispatch never falls to an untimed choice for
// a problem the tuner saw.
SolutionLibrary SolutionLibraryOf(const TuneResult& result);

// The call-weighted uplift of a choice over the reference: sum(calls x reference_ms) /
// sum(calls x choice_ms) - 1, where `choice_ms` falls back to the reference for GEMMs without the
// choice (a rejected tuning keeps the default). `pick` selects the figure.
double WeightedUplift(const TuneResult& result,
                      const std::function<const InterleavedFigure*(const TunedGemm&)>& pick);

// The report: JSON ("kselect.tune_report" version 1; keys weighted_uplift,
// model_only_weighted_uplift, best_of_top8_weighted_uplift, and per GEMM every figure) and the
// same as Markdown.
std::string TuneReportJson(const TuneResult& result);
std::string TuneReportMarkdown(const TuneResult& result);
// One measured row per (GEMM, compared config) as CSV, for the raw results file.
std::string TuneResultsCsv(const TuneResult& result);

// ---------------------------------------------------------------------------------------------
// Replay: the application's GEMM sequence timed with the default picks and with a library.

struct ReplayOptions {
  int device = 0;
  Provider provider = Provider::kCublasLt;
  ProviderOptions provider_options;
  int rounds = 15;             // interleaved rounds (default sequence, tuned sequence)
  int64_t max_calls = 100000;  // refuse longer sequences
  int64_t rotate_bytes = 0;    // per GEMM, operand bytes rotated through (0 = 2 x L2)
};

struct ReplayResult {
  int64_t calls = 0;
  int64_t distinct = 0;
  int64_t from_library = 0;  // distinct GEMMs the library has a solution for
  double default_ms = 0;     // median of the whole sequence with the default picks
  double library_ms = 0;     // ... with the library's solutions
  double uplift = 0;         // median over rounds of default / library, minus 1
  HardwareProfile hardware;
};

// Captures the log's call sequence twice as CUDA graphs (default picks; the library's solutions
// where it has one) and times them interleaved. kUnavailable without a GPU.
StatusOr<ReplayResult> ReplayGemmLog(const GemmLog& log, const SolutionLibrary& library,
                                     const ReplayOptions& options);

}  // namespace kselect
