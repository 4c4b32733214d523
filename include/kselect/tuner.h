// The tuner: from the GEMMs an application calls (gemm_log.h) to a verified exact-size solution
// library (solutions.h) that the selector reads first, with the uplift measured honestly.
//
// Per GEMM, inside the workspace the application gave it (the log's, when it says):
//   1. the seeds are timed first: the provider heuristic's top N (its first pick is the
//      reference: what the application ran) and the model's top k. Meanwhile CPU threads
//      enumerate the provider's config space (every config passes CanImplement);
//   2. a genetic search over the space (RunGeneticSearch) for the GEMM's budget: tournament
//      selection, uniform crossover over coupled field groups, neighbour mutation, elitism,
//      restarts with wider mutation on stagnation; no config is timed twice;
//   3. the final candidates (the fastest configs timed, the model's first pick, the best of the
//      top N) are checked against the reference GEMM on random data (NaN and Inf never pass) and
//      timed interleaved with the reference in one process (A B C A B C ..., rotated buffers,
//      CUDA graphs); the fastest verified one is chosen;
//   4. a second, separate interleaved run times the choice, the model's pick and the best of the
//      top N against the reference; the faster of them there is kept when at least min_speedup
//      faster than the reference. Every figure in the report comes from that run: measured
//      against the same reference at the same moment (clocks drift by up to 18 % between runs
//      minutes apart), and free of the bias of having picked the best of many noisy medians.
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
#include "kselect/search_space.h"
#include "kselect/solutions.h"
#include "kselect/status.h"
#include "kselect/timing.h"

namespace kselect {

// ---------------------------------------------------------------------------------------------
// The genetic algorithm over a SearchSpace (search_space.h; CPU only, the caller supplies the
// fitness).

struct GeneticOptions {
  int population = 24;
  int generations = 0;             // 0 = no cap: the budget or convergence ends the search
  int tournament = 2;              // contestants per parent choice
  double crossover_rate = 0.9;     // else the child copies its first parent
  double mutation_rate = 0.3;      // chance of each successive neighbour move of a child
  int elites = 2;                  // best individuals carried over unchanged
  int stagnation_generations = 4;  // generations without a 0.5 % gain before a restart
  // Restarts in a row that find nothing 0.5 % faster (each widens the mutation) before the
  // search stops as converged (what it leaves of its budget goes to the next GEMM).
  int max_restarts = 8;
  int64_t max_evaluations = 0;  // fitness calls; 0 = no cap
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

// A started worker process and the parent's ends of its pipes.
struct TuneWorkerProcess {
  int pid = -1;
  int to_worker = -1;    // its stdin
  int from_worker = -1;  // its protocol output
};
// Starts the worker for one device.
using TuneWorkerLauncher = std::function<StatusOr<TuneWorkerProcess>(int device)>;

struct TuneOptions {
  Provider provider = Provider::kCublasLt;
  ProviderOptions provider_options;  // workspace limit, tile rule set; device set per worker
  // A model directory (the selector's): its top-k seed the search and its pick is reported as
  // the model-only choice. "" = neither.
  std::string model_dir;
  int model_top_k = 8;
  int heuristic_picks = 8;  // the provider heuristic's top-N: seeds, and the best-of-top-N figure
  GeneticOptions genetic;
  double budget_s = 20;  // wall time of one GEMM's seeds and search (waiting for its space too)
  // When > 0: the search time of the whole run (per device), split over the GEMMs by
  // SplitSearchBudget; budget_s is then unused. A GEMM whose search converges early leaves the
  // rest of its budget to the next GEMM its device tunes.
  double total_budget_s = 0;
  int enumerate_threads = 0;  // CPU threads enumerating spaces (0 = the host's cores - 1, <= 15)
  double min_speedup = 1.01;
  int confirm_candidates = 4;   // the fastest timed configs verified and timed interleaved
  int interleaved_rounds = 21;  // rounds of the interleaved comparison
  double batch_ms = 0.2;        // GPU time per timed graph launch in the search
  double interleaved_batch_ms = 0.5;
  double abort_factor = 2.0;  // a config slower than this x the best so far is not timed further
  int64_t rotate_bytes = 0;   // operand bytes rotated through (0 = 2 x L2)
  std::vector<int> devices = {0};  // one worker per GPU
  // With more than one device: one worker process per device, `worker_command` with
  // "--worker-device D" appended (e.g. {"/proc/self/exe", "tune"}), speaking ServeTuneWorker's
  // protocol. Empty: one thread per device in this process. `worker_launcher`, when set, starts
  // the workers instead (tests), for any number of devices.
  std::vector<std::string> worker_command;
  TuneWorkerLauncher worker_launcher;
  double worker_timeout_s = 600;  // a worker silent this long past its GEMM's budget is killed
  ShardSpec shard;                // which of the log's kept GEMMs this process tunes
  std::string device_kind;        // lender's kind name, recorded ("nvidia-h200")
  std::string run_id;             // "" = derived from the start time
};

// The figures of one config in the interleaved comparison.

struct TunedGemm {
  LoggedGemm gemm;  // as logged (calls, leading dimensions)
  // "tuned" (a verified faster config), "default kept" (nothing ≥ min_speedup), "kept: the
  // application's own choice (why)" (the provider cannot run it: not measured), "failed: ...".
  std::string outcome;
  std::string note;                        // why a candidate was rejected, what was skipped
  InterleavedFigure reference;             // the heuristic's rank-1 pick
  std::optional<InterleavedFigure> tuned;  // the final choice (kept when accepted)
  std::string chosen_from;  // which sets the choice is in: "model", "top8", "search", joined by +
  double speedup_q1 = 0;    // 25th percentile over the confirming rounds of its speedup
  std::optional<InterleavedFigure> model_pick;    // the selector's top-1, untimed choice
  std::optional<InterleavedFigure> best_of_top8;  // fastest of the heuristic's top N in the search
  // Extra configs compared on request (TunableOp's choice, ...), by label.
  std::vector<std::pair<std::string, InterleavedFigure>> others;
  bool accepted = false;  // tuned->speedup >= min_speedup and verified
  std::string verification;
  int64_t workspace_limit = 0;  // bytes its configs may use
  int64_t configs_enumerated = 0;
  int64_t configs_timed = 0;  // distinct configs timed (seeds and search)
  int generations = 0;
  int restarts = 0;
  std::string stopped_by;
  double enumerate_s = 0;       // wall time of the enumeration (on a CPU thread, beside)
  double enumerate_wait_s = 0;  // time the GEMM waited for its space after timing the seeds
  // (an enumeration still running when the budget ends, or after 30 s, is cut short: see note)
  double budget_s = 0;          // the search's budget
  double search_s = 0;          // wall time of the seeds and the search
  double search_gpu_ms = 0;     // GPU time inside timed regions during the search
  double top8_gpu_ms = 0;       // GPU time the heuristic's top N needed to be timed
  double confirm_s = 0;         // verification and interleaved timing
  double wall_s = 0;            // the GEMM's whole tuning
  int device = 0;
};

// One worker process of a run, for the report.
struct TuneWorkerRecord {
  int device = 0;
  int pid = -1;
  int64_t gemms_done = 0;
  double busy_s = 0;  // sum of its GEMMs' wall time
  std::string ended;  // "finished", "died: signal 9 (Killed)", "failed to start: ..."
};

struct TuneResult {
  std::string run_id;
  std::string log_source;
  HardwareProfile hardware;
  std::string device_kind;
  std::string provider_version;
  TuneOptions options;
  std::vector<TunedGemm> gemms;           // in the log summary's rank order
  std::vector<TuneWorkerRecord> workers;  // worker processes, when the run used them
  double seconds = 0;
};

// 30 % of a run's search budget is split evenly over its GEMMs, the rest by their weights.
inline constexpr double kEvenBudgetFraction = 0.3;
// Per GEMM, its search budget out of `total_s`: kEvenBudgetFraction evenly, the rest in proportion
// to `weights` (calls x estimated time per call). CPU only.
std::vector<double> SplitSearchBudget(std::span<const double> weights, double total_s);

// Progress lines ("[3/12] m=... tuned 1.071x in 18.2 s"), or nullptr for silence.
using TuneProgress = std::function<void(const std::string& line)>;

// Tunes the log's GEMMs at `gemms` (indices into log.gemms, e.g. a summary's kept entries), this
// shard's share of them, over options.devices. kUnavailable without a GPU.
//
// With worker processes, the GEMMs go to the workers longest budget first, each to the least
// loaded; a worker that dies has its unfinished GEMMs sent to the others (the GEMM it died on
// fails alone when it kills a second worker), and how it ended is in TuneResult::workers.
StatusOr<TuneResult> TuneGemms(const GemmLog& log, std::span<const size_t> gemms,
                               const TuneOptions& options, const TuneProgress& progress = {});

// What a worker process does instead of the GPU work (tests); unset members do the real work.
struct TuneWorkerHooks {
  std::function<StatusOr<HardwareProfile>(int device)> hardware;
  std::function<TunedGemm(const LoggedGemm& gemm, double budget_s, int device)> tune;
};

// The worker's side of the protocol, one JSON object per line: it says
// {"event":"hello","ok":true,"hardware":{...}} (or "ok":false and "reason", then exits 1), then
// per {"cmd":"tune","options":{...},"jobs":[{"job":i,"gemm":{...},"budget_s":b},...]} read from
// `in_fd` it tunes the jobs on `device` and writes {"event":"done","job":i,"result":{...}} for
// each and {"event":"batch_end","provider_version":"..."}; returns 0 at the end of input.
int ServeTuneWorker(int in_fd, int out_fd, int device, const TuneWorkerHooks& hooks = {});

// The launcher for `command` (TuneOptions::worker_command): fork and exec with
// "--worker-device D" appended; the child's stdout is the protocol.
TuneWorkerLauncher ExecTuneWorkerLauncher(std::vector<std::string> command);

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
  int64_t calls = 0;  // replayed (the log's, less those left out)
  int64_t distinct = 0;
  int64_t from_library = 0;  // distinct GEMMs the library has a solution for
  double default_ms = 0;     // median of the whole sequence with the default picks
  double library_ms = 0;     // ... with the library's solutions
  double uplift = 0;         // median over rounds of default / library, minus 1
  // GEMMs the provider cannot run ("problem: why"), left out of both sequences, and their calls.
  std::vector<std::string> left_out;
  int64_t left_out_calls = 0;
  HardwareProfile hardware;
};

// Captures the log's call sequence twice as CUDA graphs (default picks; the library's solutions
// where it has one) and times them interleaved, each GEMM inside the workspace the log gave it.
// GEMMs the provider cannot run are left out of both and listed. kUnavailable without a GPU.
StatusOr<ReplayResult> ReplayGemmLog(const GemmLog& log, const SolutionLibrary& library,
                                     const ReplayOptions& options);

}  // namespace kselect
