// kselect bench: times (problem, config) pairs on the GPU into streaming JSONL
// (docs/formats.md, "kselect.bench.jsonl" version 1), following the measurement method of
// docs/lab/cublaslt_bench.md: warm-up, CUDA-event timing of batches of launches, median of the
// batches with their CV, inputs rotated past L2, random non-zero data, early abort of configs
// clearly slower than the best so far, a time budget per config, and the provider heuristic's
// top picks recorded with their ranks.
//
// Isolation: the process that writes the JSONL never touches CUDA. Each device gets a
// coordinator process that forks a worker; the worker owns the CUDA context, enumerates and
// times. A worker that crashes or exceeds the watchdog is killed, the config it was timing is
// recorded invalid with the reason, and a fresh worker continues the sweep.
//
// Each problem's configs are timed best-guess first (the heuristic's picks in rank order, then
// the catalogue), so the early-abort bound is tight from the start; a second worker (the
// planner) enumerates the next problem while this one is timed; a "problem_done" record closes
// each finished problem.
//
// Resume: every record is one write(2) of a whole line (flushed per record); --resume repairs a
// torn last line and skips every (problem, config) pair already in the file, so a killed run
// continues with nothing lost and nothing duplicated.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kselect/catalogue.h"
#include "kselect/measurement.h"
#include "kselect/problem.h"
#include "kselect/progress.h"
#include "kselect/status.h"

namespace kselect {

// Which slice of the problem list this process runs: problems whose index % count == index.
struct ShardSpec {
  int index = 0;
  int count = 1;
  bool operator==(const ShardSpec&) const = default;
};
// "i/N" with 0 <= i < N.
StatusOr<ShardSpec> ParseShard(std::string_view text);
// SLURM_PROCID/SLURM_NTASKS, else OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, else 0/1.
StatusOr<ShardSpec> ShardFromEnvironment();
// "0,1,3": distinct non-negative CUDA device ordinals, at least one.
StatusOr<std::vector<int>> ParseDeviceList(std::string_view text);
// Indices of `total` problems that `shard` runs, ascending.
std::vector<size_t> ShardIndices(size_t total, const ShardSpec& shard);

// The identity of one (problem, config) pair in a bench file: the resume key.
std::string PairKey(const Problem& problem, const KernelConfig& config);

// The configs a sweep times again after a problem (BenchOptions::confirm_top): indices into
// `configs` (the problem's timing order, heuristic picks first) of the `top` fastest distinct
// valid configs in `valid_rows` ((latency_ms, PairKey) in any order, repeats allowed), then the
// heuristic's rank-1 pick (`peer_rank`: ConfigKey -> rank) and the second heuristic's
// (`peer_rank_b`) when valid and not among them.
std::vector<size_t> ConfirmationSet(const Problem& problem,
                                    const std::vector<KernelConfig>& configs,
                                    const std::map<std::string, int32_t>& peer_rank,
                                    std::vector<std::pair<double, std::string>> valid_rows, int top,
                                    const std::map<std::string, int32_t>& peer_rank_b = {});

// The order a sweep times one problem's configs in, and the heuristics' ranks (ConfigKey ->
// 1-based rank in that heuristic's list, repeats in a list ignored).
struct TimingOrder {
  std::vector<KernelConfig> configs;
  std::map<std::string, int32_t> peer_rank;    // the provider's heuristic (cuDNN: mode A)
  std::map<std::string, int32_t> peer_rank_b;  // its second heuristic (cuDNN: mode B), if any
};
// The first heuristic's picks by rank (so the abort bound is tight from the first configs on),
// then the second heuristic's picks the first did not list (a config only the second lists is
// timed too), then the first `max_catalogue_configs` catalogue configs (0 = all) not listed yet.
TimingOrder PlanTimingOrder(const std::vector<KernelConfig>& peers,
                            const std::vector<KernelConfig>& peers_b,
                            const std::vector<KernelConfig>& catalogue,
                            int64_t max_catalogue_configs);

// One JSONL line (with its trailing '\n') of a run record and of a measurement record.
std::string RunRecordLine(const RunInfo& run);
std::string MeasurementLine(const Measurement& m);
// The record that closes one problem's sweep (ingest --complete-problems-only keeps only
// problems that have one).
struct ProblemDone {
  std::string run_id;
  Problem problem;
  int64_t configs = 0;     // configs in the problem's list (catalogue + heuristic picks)
  int64_t rows = 0;        // measurement records this invocation wrote for it
  int64_t skipped = 0;     // pairs already in the file (--resume)
  int64_t enumerated = 0;  // configs the rule set kept from the enumeration
  int64_t confirmed = 0;   // fastest configs timed again (BenchOptions::confirm_top)
  int32_t confirm_rounds = 0;
  double plan_seconds = 0, seconds = 0;
};
std::string ProblemDoneLine(const ProblemDone& done);

// What an existing bench file already holds, for --resume.
struct ResumeState {
  bool has_run_record = false;
  RunInfo run;                            // the file's run record when present
  std::set<std::string> done;             // PairKey of every measurement record
  std::map<std::string, double> best_ms;  // per ProblemToString: fastest valid latency so far
  std::set<std::string> completed;        // ProblemToString of problems with a problem_done
  // Per unfinished problem (no problem_done): (latency_ms, PairKey) of its valid rows, so a
  // resumed sweep confirms its fastest configs over the whole sweep, not only the last part.
  std::map<std::string, std::vector<std::pair<double, std::string>>> unfinished_valid;
  int64_t measurements = 0;
  int64_t torn_bytes = 0;  // bytes of an incomplete last line (removed when repairing)
};
// Reads `path` (absent or empty: an empty state). With `repair`, truncates a torn last line
// in place. A malformed complete line is a ParseError naming the line.
StatusOr<ResumeState> LoadResumeState(const std::string& path, bool repair);

struct BenchOptions {
  // The whole list (GEMMs or convolutions; each provider describes its operands); the shard
  // picks its slice.
  std::vector<Problem> problems;
  Provider provider = Provider::kCublasLt;
  RuleSet rules;  // filters each problem's enumerated configs
  std::string output_path;
  bool resume = false;
  ShardSpec shard;
  std::vector<int> devices = {0};
  std::string device_kind;  // lender's kind name, recorded in the run record ("nvidia-h200")
  std::string run_id;       // "" = derived from the start time and shard
  // Method (docs/lab/cublaslt_bench.md). The defaults time a config in about 0.6 ms of GPU
  // time when its kernel is short, in 4 launches when it is long, and abort a clearly slow one
  // after 1 launch. 0.1 ms warm-up and batches (session 3) against 0.25 / 0.15 ms before: the
  // same configs timed both ways on an H200 differ by a uniform +0.8 % (median), 1.2x the rate.
  int warmup_iters = 10;   // at most this many warm-up launches (fewer for slow configs)
  double warmup_ms = 0.1;  // ... enough to cover this much GPU time
  int repeats = 5;         // timed batches; the median is reported
  int min_repeats = 3;     // fewest batches the time budget may cut to
  double batch_ms = 0.1;   // launches per batch chosen to fill this much GPU time
  int max_iters_per_batch = 100;
  // GPU time budget for the timed batches of one config: repeats are cut (not below
  // min_repeats) when batches of a long kernel would exceed it.
  double config_budget_ms = 3;
  double abort_factor = 2.0;  // abort a config whose estimate exceeds factor x best so far
  // After a problem's sweep its `confirm_top` fastest valid configs, and the heuristic's rank-1
  // pick, are timed `confirm_rounds` more times, round robin, each a whole measurement of its
  // own. Ingestion merges repeats of a (run, problem, config) into their median, so the oracle
  // (and the peer's pick) is not the one lucky draw among thousands of near-ties.
  int confirm_top = 8;
  int confirm_rounds = 2;
  // The provider heuristic's top-N (and its second heuristic's, where it has one), timed first,
  // ranked as peers.
  int heuristic_picks = 8;
  // Drift control: every config timed after the problem's reference (its first valid config,
  // the heuristic's pick where there is one) is timed batch by batch interleaved with it, and
  // its row records the reference's time from those batches (Measurement::reference_latency_ms):
  // both ran in the same clock and power state, so their ratio compares across runs.
  bool interleave_reference = false;
  int64_t max_workspace_bytes = 32ll << 20;
  int64_t rotate_bytes = 0;             // bytes of inputs to rotate through (0 = 2 x L2, at least)
  int64_t max_configs_per_problem = 0;  // 0 = all (a cap for smoke runs; the order is kept)
  // A deterministic random sample of the rule set's configs (the same configs for every problem):
  // 1 = all. With the `full` rules this measures what a smaller catalogue loses.
  double sample_fraction = 1.0;
  uint64_t sample_seed = 1;
  // Stop starting configs after this many seconds (0 = no limit); the problem in progress gets
  // no problem_done record, and --resume continues it.
  double time_limit_s = 0;
  // Planner workers per device: each enumerates a problem ahead while the timer times (cuBLASLt
  // enumeration is seconds of CPU work per problem, longer than timing a small problem).
  int planners = 4;
  double watchdog_s = 30;        // a worker silent this long on one config is killed
  double plan_watchdog_s = 300;  // ... while enumerating one problem
  // Reports "problems" of the shard finished (timed, failed, or finished by an earlier run),
  // after each problem; with one device also as each problem starts, its detail saying how many
  // configs it times. With several devices the count is polled about once a second, without
  // details.
  ProgressCallback progress;
};

struct BenchSummary {
  int64_t problems = 0;
  int64_t problems_failed = 0;  // enumeration failed (reason on stderr)
  int64_t rows = 0;             // measurement records written by this invocation
  int64_t valid = 0, invalid = 0, aborted = 0;
  int64_t skipped = 0;           // pairs already in the file (--resume)
  int64_t worker_restarts = 0;   // crashes and watchdog kills
  int64_t problems_done = 0;     // problem_done records written by this invocation
  int64_t problems_skipped = 0;  // finished in an earlier invocation (--resume)
  bool time_limited = false;     // stopped by time_limit_s before the end
  double seconds = 0;
};

// Runs the sweep. Writes the run record first when the file has none (a fresh file refuses an
// existing non-empty one unless resume is set).
StatusOr<BenchSummary> RunBench(const BenchOptions& options);

}  // namespace kselect
