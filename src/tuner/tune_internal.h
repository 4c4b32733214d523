// The tuner's pieces shared by its in-process run (tune.cpp), its worker processes
// (tune_workers.cpp) and its report (report.cpp).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kselect/features.h"
#include "kselect/tuner.h"

namespace kselect {

std::string DefaultTuneRunId();

// Called once per GEMM of the queue as it finishes (serialised by the caller).
using TunedCallback = std::function<void(size_t job, TunedGemm tuned)>;

// Tunes `queue` (budgets[i] seconds of search for queue[i]) with one thread per device of
// options.devices in this process, the spaces enumerated beside on CPU threads. An error only
// when no device could start.
Status TuneQueueInProcess(std::span<const LoggedGemm* const> queue, std::span<const double> budgets,
                          const TuneOptions& options, const TunedCallback& done,
                          std::string* provider_version);

// Per GEMM of `queue`, its search budget: options.budget_s, or the run's total split by
// SplitSearchBudget over calls x estimated time.
std::vector<double> SearchBudgets(std::span<const LoggedGemm* const> queue,
                                  const TuneOptions& options, const HardwareConstants& hardware);

// "[3/12] gpu0 ...: tuned, ..." for the progress callback.
std::string TuneProgressLine(const TunedGemm& t, size_t done, size_t total);

// TuneGemms with one worker process per device (tune_workers.cpp).
StatusOr<TuneResult> TuneInWorkerProcesses(const std::string& log_source,
                                           std::span<const LoggedGemm* const> queue,
                                           const TuneOptions& options,
                                           const TuneProgress& progress);

// A logged GEMM's fields (problem, calls, lds, epilogue, logged algo and workspace, first line),
// as the report's per-GEMM objects and the worker protocol's jobs hold them, and back.
nlohmann::json LoggedGemmToJson(const LoggedGemm& g);
StatusOr<LoggedGemm> LoggedGemmFromJson(const nlohmann::json& j);
// One GEMM's result as the report writes it, and back (the worker processes' replies).
nlohmann::json TunedGemmToJson(const TunedGemm& t);
StatusOr<TunedGemm> TunedGemmFromJson(const nlohmann::json& j);
// The options a worker process needs (devices excepted: a worker has one).
nlohmann::json TuneOptionsToJson(const TuneOptions& o);
StatusOr<TuneOptions> TuneOptionsFromJson(const nlohmann::json& j);

}  // namespace kselect
