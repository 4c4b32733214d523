// kselect tune on the GPU: one worker per device takes GEMMs from a shared queue (largest
// estimated time first). Per GEMM it times the seeds (cuBLASLt's top N, the model's top k) while
// CPU threads enumerate the config space, runs the genetic search for the GEMM's share of the
// budget, verifies the fastest configs, picks the fastest in one interleaved run with the
// reference and confirms the pick in a second.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "bench/provider_comparison.h"
#include "core/statistics.h"
#include "core/text.h"
#include "kselect/selector.h"
#include "kselect/tuner.h"
#include "kselect/verify.h"
#include "timing/graph_timer.h"
#include "tuner/tune_internal.h"
#include "tuner/workspace_providers.h"

namespace kselect {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int64_t WorkspaceLimit(const TuneOptions& options, const LoggedGemm& gemm) {
  return WorkspaceLimit(options.provider_options.max_workspace_bytes, gemm);
}

// Enumerates the GEMMs' config spaces on CPU threads, one GEMM a thread in queue order, while the
// GPU workers time seeds and search: enumerating a 100k-config cuBLASLt space is seconds of host
// work per GEMM (minutes for some fp32 ones). (Sharing one GEMM's space over all threads was
// slower on the H200 host: cuBLASLt's checks did not scale across threads.) An enumeration is
// cut, keeping what it has, when its GEMM stops waiting for it, after kMaxEnumerateS, or when the
// run ends.
class SpaceEnumerator {
 public:
  using Space = StatusOr<std::vector<KernelConfig>>;
  static constexpr double kMaxEnumerateS = 30;

  SpaceEnumerator(const TuneOptions& options, std::vector<const LoggedGemm*> gemms, int threads)
      : options_(options),
        gemms_(std::move(gemms)),
        spaces_(gemms_.size()),
        seconds_(gemms_.size(), 0),
        cut_(std::make_unique<std::atomic<bool>[]>(gemms_.size())) {
    for (int t = 0; t < std::max(threads, 1); ++t) threads_.emplace_back([this] { Work(); });
  }
  ~SpaceEnumerator() {
    stop_ = true;
    for (size_t i = 0; i < gemms_.size(); ++i) cut_[i] = true;
    for (std::thread& t : threads_) t.join();
  }

  // The space of the i-th GEMM, waiting for it at most `wait_s` (then cut short); the seconds
  // waited in `waited_s`, those its enumeration took in `enumerate_s`, whether it was cut in `cut`.
  Space Take(size_t i, double wait_s, double* waited_s, double* enumerate_s, bool* cut) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    auto ready = [&] { return spaces_[i].has_value(); };
    if (!ready_.wait_for(lock, std::chrono::duration<double>(std::max(wait_s, 0.0)), ready)) {
      cut_[i] = true;
      ready_.wait(lock, ready);  // a cut enumeration ends within one family's check
    }
    *waited_s = Seconds(start);
    *enumerate_s = seconds_[i];
    *cut = cut_[i];
    Space space = std::move(*spaces_[i]);
    spaces_[i] = Space(std::vector<KernelConfig>{});  // taken: free the memory
    return space;
  }

 private:
  void Work() {
    ProvidersByWorkspace providers(options_.provider, options_.provider_options,
                                   options_.devices.front());
    for (size_t i = next_++; i < gemms_.size(); i = next_++) {
      const auto start = std::chrono::steady_clock::now();
      Space space = stop_ ? Space(UnavailableError("tuning ended")) : Enumerate(providers, i);
      std::lock_guard lock(mutex_);
      seconds_[i] = Seconds(start);
      spaces_[i] = std::move(space);
      ready_.notify_all();
    }
  }

  Space Enumerate(ProvidersByWorkspace& providers, size_t i) {
    KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider,
                             providers.For(WorkspaceLimit(options_, *gemms_[i])));
    const auto start = std::chrono::steady_clock::now();
    auto going = [&, i] {
      if (!cut_[i] && Seconds(start) > kMaxEnumerateS) cut_[i] = true;
      return !cut_[i];
    };
    ConfigFilter filter;
    filter.keep = [&](const KernelConfig&) { return going(); };
    filter.may_keep = [&](const KernelConfig&, std::span<const std::string_view>) {
      return going();
    };
    return provider->Enumerate(gemms_[i]->problem, filter);
  }

  const TuneOptions& options_;
  std::vector<const LoggedGemm*> gemms_;
  std::vector<std::optional<Space>> spaces_;
  std::vector<double> seconds_;
  std::unique_ptr<std::atomic<bool>[]> cut_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::thread> threads_;
};

// Which of the compared sets a config belongs to, for the report.
std::string Origins(bool search, bool model, bool top) {
  std::string out;
  for (const auto& [in, name] : {std::pair{model, "model"}, {top, "top8"}, {search, "search"}}) {
    if (!in) continue;
    if (!out.empty()) out += "+";
    out += name;
  }
  return out;
}

// One GPU's tuning state.
class TuneWorker {
 public:
  TuneWorker(const TuneOptions& options, int device, SpaceEnumerator* spaces)
      : options_(options),
        device_(device),
        providers_(options.provider, options.provider_options, device),
        spaces_(spaces) {}

  Status Init() {
    KSELECT_ASSIGN_OR_RETURN(timer_, timing::GraphTimer::Create(device_));
    verify::VerifyOptions vo;
    vo.device = device_;
    KSELECT_ASSIGN_OR_RETURN(verifier_, verify::Verifier::Create(vo));
    if (!options_.model_dir.empty()) {
      SelectorOptions so;
      so.top_k = std::max(options_.model_top_k, 1);
      so.provider = options_.provider_options;
      so.provider.device = device_;
      so.predicted_times = 0;
      KSELECT_ASSIGN_OR_RETURN(selector_, Selector::Open(options_.model_dir, so));
    }
    KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider,
                             providers_.For(options_.provider_options.max_workspace_bytes));
    provider_version_ = provider->version();
    return Status::Ok();
  }

  const std::string& provider_version() const { return provider_version_; }

  // Tunes the `job`-th GEMM of the queue with `budget_s` seconds of search.
  TunedGemm Tune(const LoggedGemm& logged, size_t job, double budget_s) {
    TunedGemm out;
    out.gemm = logged;
    out.device = device_;
    out.budget_s = budget_s;
    out.workspace_limit = WorkspaceLimit(options_, logged);
    Status status = TuneInto(logged, job, budget_s, out);
    if (!status.ok()) {
      out.accepted = false;
      out.tuned.reset();
      // What the provider cannot run stays on the application's own choice: not a failure.
      out.outcome = status.code() == StatusCode::kCannotImplement
                        ? "kept: the application's own choice (" + status.message() + ")"
                        : "failed: " + status.ToString();
    }
    return out;
  }

 private:
  Status TuneInto(const LoggedGemm& logged, size_t job, double budget_s, TunedGemm& out) {
    const GemmProblem& problem = logged.problem;
    KSELECT_RETURN_IF_ERROR(problem.Validate());
    KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, providers_.For(out.workspace_limit));
    if (!provider->SupportsProblem(problem)) {
      return CannotImplementError(std::string(ProviderName(options_.provider)) +
                                  " provider does not run " + problem.ToString());
    }
    KSELECT_ASSIGN_OR_RETURN(std::vector<KernelConfig> picks,
                             provider->HeuristicPicks(problem, options_.heuristic_picks));
    if (picks.empty()) {
      return CannotImplementError("the provider's heuristic has no pick for " + problem.ToString() +
                                  " within " + std::to_string(out.workspace_limit) +
                                  " bytes of workspace");
    }
    const KernelConfig reference = picks.front();
    const std::string reference_key = ConfigKey(reference);
    std::vector<KernelConfig> model_configs;
    if (selector_ != nullptr) {
      StatusOr<const Selection*> selection = selector_->Select(problem);
      if (selection.ok()) {
        for (const RankedConfig& r : (*selection)->ranked) {
          if (ProviderOf(r.config) != options_.provider) continue;
          if (provider->CanImplement(problem, r.config).ok()) model_configs.push_back(r.config);
        }
        if (model_configs.empty()) out.note += "none of the model's picks can run here; ";
      } else {
        out.note += "model: " + selection.status().message() + "; ";
      }
    }
    std::set<std::string> model_keys, top_keys;
    for (const KernelConfig& c : model_configs) model_keys.insert(ConfigKey(c));
    for (const KernelConfig& c : picks) top_keys.insert(ConfigKey(c));

    // Operands rotated past L2, shared by the search and the interleaved runs.
    KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs, provider->Operands(problem));
    KSELECT_ASSIGN_OR_RETURN(
        const std::unique_ptr<verify::DeviceOperands> operands,
        timer_->RotatingOperands(problem, specs, out.workspace_limit, options_.rotate_bytes));

    // Every config is timed at most once, by key; the seeds before the space exists.
    struct Timed {
      KernelConfig config;
      double ms = 0;  // +inf when it could not be timed
    };
    std::unordered_map<std::string, Timed> timed;
    std::string first_failure;
    double best_ms = 0;
    auto time_config = [&](const KernelConfig& config) -> std::optional<double> {
      const std::string key = ConfigKey(config);
      if (const auto it = timed.find(key); it != timed.end()) {
        return std::isfinite(it->second.ms) ? std::optional<double>(it->second.ms) : std::nullopt;
      }
      double gpu_ms = 0;
      StatusOr<std::unique_ptr<PreparedKernel>> kernel = provider->Prepare(problem, config);
      StatusOr<double> ms =
          kernel.ok() ? timer_->Time(**kernel, *operands, options_.batch_ms, 3,
                                     best_ms > 0 ? options_.abort_factor * best_ms : 0, &gpu_ms)
                      : StatusOr<double>(kernel.status());
      out.search_gpu_ms += gpu_ms;
      if (top_keys.contains(key)) out.top8_gpu_ms += gpu_ms;
      if (!ms.ok()) {
        if (first_failure.empty()) first_failure = key + ": " + ms.status().message();
        // A fault poisons the context: nothing more can be timed in it.
        if (cudaDeviceSynchronize() != cudaSuccess) sticky_ = ms.status();
        timed[key] = {config, std::numeric_limits<double>::infinity()};
        return std::nullopt;
      }
      timed[key] = {config, *ms};
      if (best_ms == 0 || *ms < best_ms) best_ms = *ms;
      return *ms;
    };

    const auto search_start = std::chrono::steady_clock::now();
    std::vector<KernelConfig> seeds{reference};
    for (const KernelConfig& c : model_configs) seeds.push_back(c);
    for (const KernelConfig& c : picks) seeds.push_back(c);
    for (const KernelConfig& seed : seeds) {
      time_config(seed);
      KSELECT_RETURN_IF_ERROR(sticky_);
    }
    if (!timed.contains(reference_key) || !std::isfinite(timed[reference_key].ms)) {
      return InternalError("the reference (the heuristic's first pick) could not be timed: " +
                           first_failure);
    }

    // The space (enumerated meanwhile), with the seeds in it, searched for the rest of the
    // budget; waiting for it counts against the budget, and it is cut short when the budget ends.
    double waited_s = 0;
    bool cut = false;
    SpaceEnumerator::Space enumerated = spaces_->Take(
        job, budget_s - Seconds(search_start), &waited_s, &out.enumerate_s, &cut);
    out.enumerate_wait_s = waited_s;
    std::vector<KernelConfig> configs;
    if (enumerated.ok()) {
      configs = std::move(*enumerated);
      if (cut) {
        out.note += "space cut short after " + std::to_string(configs.size()) + " configs (" +
                    std::to_string(static_cast<int>(out.enumerate_s)) + " s); ";
      }
    } else {
      out.note += "enumeration failed (" + enumerated.status().message() + "): the seeds only; ";
    }
    {
      std::set<std::string> keys;
      for (const KernelConfig& c : configs) keys.insert(ConfigKey(c));
      for (const KernelConfig& seed : seeds) {
        if (keys.insert(ConfigKey(seed)).second) configs.push_back(seed);
      }
    }
    out.configs_enumerated = static_cast<int64_t>(configs.size());
    KSELECT_ASSIGN_OR_RETURN(const SearchSpace space, MakeSearchSpace(std::move(configs)));
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < space.configs.size(); ++i) index[ConfigKey(space.configs[i])] = i;
    std::vector<size_t> seed_indices;
    for (const KernelConfig& seed : seeds) seed_indices.push_back(index.at(ConfigKey(seed)));
    const FitnessFunction fitness = [&](size_t i) { return time_config(space.configs[i]); };
    const GeneticResult result = RunGeneticSearch(
        space, seed_indices, fitness, options_.genetic,
        [&] { return !sticky_.ok() || Seconds(search_start) > budget_s; });
    out.search_s = Seconds(search_start);
    KSELECT_RETURN_IF_ERROR(sticky_);
    out.configs_timed = static_cast<int64_t>(timed.size());
    out.generations = result.generations;
    out.restarts = result.restarts;
    out.stopped_by = result.stopped_by;
    if (!first_failure.empty())
      out.note += "first config that failed to time: " + first_failure + "; ";

    // The final candidates: the fastest configs timed (the search's best; the seeds were timed
    // too), the model's first pick and the best of the heuristic's top N. Only verified configs
    // may be chosen; the reference needs no check.
    std::vector<const Timed*> by_speed;
    for (const auto& [key, t] : timed) {
      if (std::isfinite(t.ms)) by_speed.push_back(&t);
    }
    std::sort(by_speed.begin(), by_speed.end(), [](const Timed* a, const Timed* b) {
      return a->ms < b->ms || (a->ms == b->ms && ConfigKey(a->config) < ConfigKey(b->config));
    });
    std::optional<KernelConfig> model_pick, best_top;
    if (!model_configs.empty() && timed.contains(ConfigKey(model_configs.front())))
      model_pick = model_configs.front();
    for (const Timed* t : by_speed) {
      if (top_keys.contains(ConfigKey(t->config))) {
        best_top = t->config;
        break;
      }
    }

    const auto confirm_start = std::chrono::steady_clock::now();
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::VerifyCase> check,
                             verifier_->MakeCase(problem, specs));
    std::map<std::string, bool> verified;
    auto verify = [&](const KernelConfig& config) -> StatusOr<bool> {
      const std::string key = ConfigKey(config);
      if (key == reference_key) return true;
      if (const auto it = verified.find(key); it != verified.end()) return it->second;
      KSELECT_ASSIGN_OR_RETURN(const bench::DeviceVerdict verdict,
                               bench::VerifyConfig(*provider, config, *check));
      const bool passed = verdict.checked && verdict.passed;
      if (!verdict.checked) out.note += key + " not verified: " + verdict.detail + "; ";
      if (verdict.checked && !verdict.passed)
        out.note += key + " rejected: " + verdict.detail + "; ";
      if (passed && out.verification.empty()) out.verification = verdict.detail;
      verified[key] = passed;
      return passed;
    };
    std::vector<KernelConfig> compared{reference};
    auto slot_of = [&](const KernelConfig& config) {
      const std::string key = ConfigKey(config);
      for (size_t s = 0; s < compared.size(); ++s) {
        if (ConfigKey(compared[s]) == key) return s;
      }
      compared.push_back(config);
      return compared.size() - 1;
    };
    int from_search = 0;
    for (const Timed* t : by_speed) {
      if (from_search >= options_.confirm_candidates) break;
      if (ConfigKey(t->config) == reference_key) continue;
      KSELECT_ASSIGN_OR_RETURN(const bool passed, verify(t->config));
      if (!passed) continue;
      slot_of(t->config);
      ++from_search;
    }
    if (model_pick) slot_of(*model_pick);
    if (best_top) slot_of(*best_top);
    auto eligible = [&](size_t slot) -> StatusOr<bool> {
      if (slot == 0) return false;
      return verify(compared[slot]);
    };

    // Run 1 picks the fastest eligible config; run 2, separate, measures it with the reference,
    // the model's pick and the best of the top N, so the reported figures carry no winner's
    // curse from picking the best of many noisy medians.
    auto interleave = [&](const std::vector<KernelConfig>& configs) {
      std::vector<timing::Contender> contenders;
      for (const KernelConfig& c : configs) contenders.push_back({provider, c});
      return timing::TimeContenders(*timer_, problem, contenders, *operands,
                                    options_.interleaved_batch_ms, options_.interleaved_rounds);
    };
    KSELECT_ASSIGN_OR_RETURN(const timing::InterleavedRun pick_run, interleave(compared));
    std::optional<size_t> choice;
    for (size_t slot = 1; slot < compared.size(); ++slot) {
      KSELECT_ASSIGN_OR_RETURN(const bool ok, eligible(slot));
      if (ok && (!choice || pick_run.figures[slot].speedup > pick_run.figures[*choice].speedup))
        choice = slot;
    }
    std::vector<KernelConfig> finalists{reference};
    auto finalist = [&](const KernelConfig& config) {
      const std::string key = ConfigKey(config);
      for (size_t s = 0; s < finalists.size(); ++s) {
        if (ConfigKey(finalists[s]) == key) return s;
      }
      finalists.push_back(config);
      return finalists.size() - 1;
    };
    const std::optional<size_t> choice_slot =
        choice ? std::optional<size_t>(finalist(compared[*choice])) : std::nullopt;
    const std::optional<size_t> model_slot =
        model_pick ? std::optional<size_t>(finalist(*model_pick)) : std::nullopt;
    const std::optional<size_t> top_slot =
        best_top ? std::optional<size_t>(finalist(*best_top)) : std::nullopt;
    KSELECT_ASSIGN_OR_RETURN(const timing::InterleavedRun confirm_run, interleave(finalists));
    out.confirm_s = Seconds(confirm_start);
    const std::vector<InterleavedFigure>& figures = confirm_run.figures;
    out.reference = figures[0];
    if (model_slot) out.model_pick = figures[*model_slot];
    if (top_slot) out.best_of_top8 = figures[*top_slot];
    // The final choice: the faster, in the confirming run, of the pick and the eligible model
    // and top-N configs (at most three: little room for chance).
    std::optional<size_t> final_slot = choice_slot;
    for (size_t slot = 1; slot < finalists.size(); ++slot) {
      KSELECT_ASSIGN_OR_RETURN(const bool ok, verify(finalists[slot]));
      if (ok && (!final_slot || figures[slot].speedup > figures[*final_slot].speedup))
        final_slot = slot;
    }
    if (final_slot) {
      out.tuned = figures[*final_slot];
      const std::string key = ConfigKey(finalists[*final_slot]);
      out.chosen_from = Origins(!model_keys.contains(key) && !top_keys.contains(key),
                                model_keys.contains(key), top_keys.contains(key));
      out.speedup_q1 =
          Quantile(Ratios(confirm_run.rounds[0], confirm_run.rounds[*final_slot]), 0.25);
    }
    out.accepted = out.tuned && out.tuned->speedup >= options_.min_speedup;
    if (out.accepted) {
      out.outcome = "tuned";
    } else {
      out.outcome = "default kept";
      if (out.tuned) {
        char buffer[96];
        std::snprintf(buffer, sizeof(buffer), "best verified candidate %.3fx < %.3fx; ",
                      out.tuned->speedup, options_.min_speedup);
        out.note += buffer;
      } else {
        out.note += "no verified candidate; ";
      }
    }
    return Status::Ok();
  }

  const TuneOptions& options_;
  int device_;
  ProvidersByWorkspace providers_;
  SpaceEnumerator* spaces_;
  std::string provider_version_;
  std::unique_ptr<timing::GraphTimer> timer_;
  std::unique_ptr<verify::Verifier> verifier_;
  std::unique_ptr<Selector> selector_;
  Status sticky_;
};

std::string FormatSpeedup(const std::optional<InterleavedFigure>& f) {
  if (!f) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3fx", f->speedup);
  return buffer;
}

}  // namespace

std::string DefaultTuneRunId() {
  return "tune-" + text::UtcNowIso8601(/*compact=*/true);
}

std::vector<double> SplitSearchBudget(std::span<const double> weights, double total_s) {
  std::vector<double> budgets(weights.size(), 0);
  if (weights.empty() || total_s <= 0) return budgets;
  double sum = 0;
  for (const double w : weights) sum += std::isfinite(w) && w > 0 ? w : 0;
  const double n = static_cast<double>(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    const double w = std::isfinite(weights[i]) && weights[i] > 0 ? weights[i] : 0;
    const double share = sum > 0 ? w / sum : 1 / n;
    budgets[i] = total_s * (kEvenBudgetFraction / n + (1 - kEvenBudgetFraction) * share);
  }
  return budgets;
}

Status TuneQueueInProcess(std::span<const LoggedGemm* const> queue, std::span<const double> budgets,
                          const TuneOptions& options, const TunedCallback& done,
                          std::string* provider_version) {
  KSELECT_CHECK(queue.size() == budgets.size());
  const int threads =
      options.enumerate_threads > 0
          ? options.enumerate_threads
          : static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 2, 16)) - 1;
  SpaceEnumerator spaces(options, {queue.begin(), queue.end()}, threads);
  std::atomic<size_t> next{0};
  std::mutex done_mutex;
  std::vector<Status> worker_status(options.devices.size());
  std::vector<std::thread> workers;
  for (size_t w = 0; w < options.devices.size(); ++w) {
    workers.emplace_back([&, w] {
      TuneWorker worker(options, options.devices[w], &spaces);
      if (Status s = worker.Init(); !s.ok()) {
        worker_status[w] = s;
        return;
      }
      {
        std::lock_guard lock(done_mutex);
        if (provider_version->empty()) *provider_version = worker.provider_version();
      }
      // What a converged search leaves of its budget goes to this worker's next GEMM.
      double leftover_s = 0;
      for (size_t i = next++; i < queue.size(); i = next++) {
        const auto gemm_start = std::chrono::steady_clock::now();
        const double budget_s = budgets[i] + leftover_s;
        TunedGemm t = worker.Tune(*queue[i], i, budget_s);
        leftover_s = std::max(0.0, budget_s - t.search_s);
        t.wall_s = Seconds(gemm_start);
        std::lock_guard lock(done_mutex);
        done(i, std::move(t));
      }
    });
  }
  for (std::thread& t : workers) t.join();
  // A worker that could not start leaves its GEMMs to the others; only all failing is an error.
  for (const Status& s : worker_status) {
    if (s.ok()) return Status::Ok();
  }
  return worker_status.front();
}

std::string TuneProgressLine(const TunedGemm& t, size_t done, size_t total) {
  char line[768];
  std::snprintf(line, sizeof(line),
                "[%zu/%zu] gpu%d %s calls=%lld: %s, tuned %s (%s) model %s top8 %s, %lld of %lld "
                "configs timed in %.1f of %.1f s, %.1f s in all",
                done, total, t.device, t.gemm.problem.ToString().c_str(),
                static_cast<long long>(t.gemm.calls), t.outcome.c_str(),
                FormatSpeedup(t.tuned).c_str(), t.chosen_from.empty() ? "-" : t.chosen_from.c_str(),
                FormatSpeedup(t.model_pick).c_str(), FormatSpeedup(t.best_of_top8).c_str(),
                static_cast<long long>(t.configs_timed),
                static_cast<long long>(t.configs_enumerated), t.search_s, t.budget_s, t.wall_s);
  return line;
}

std::vector<double> SearchBudgets(std::span<const LoggedGemm* const> queue,
                                  const TuneOptions& options, const HardwareConstants& hardware) {
  if (options.total_budget_s <= 0) return std::vector<double>(queue.size(), options.budget_s);
  std::vector<double> weights;
  for (const LoggedGemm* g : queue) {
    weights.push_back(static_cast<double>(g->calls) * EstimateGemmCallUs(g->problem, hardware));
  }
  return SplitSearchBudget(weights,
                           options.total_budget_s * static_cast<double>(options.devices.size()));
}

StatusOr<TuneResult> TuneGemms(const GemmLog& log, std::span<const size_t> gemms,
                               const TuneOptions& options, const TuneProgress& progress) {
  if (options.devices.empty()) return InvalidArgumentError("tune: no devices");
  if (options.min_speedup < 1) return InvalidArgumentError("tune: min_speedup must be >= 1");
  if (options.budget_s <= 0 && options.total_budget_s <= 0) {
    return InvalidArgumentError("tune: the budget must be positive");
  }
  for (const size_t g : gemms) {
    if (g >= log.gemms.size()) return InvalidArgumentError("tune: GEMM index out of range");
  }
  const std::vector<size_t> mine = ShardIndices(gemms.size(), options.shard);
  std::vector<const LoggedGemm*> queue;
  for (const size_t i : mine) queue.push_back(&log.gemms[gemms[i]]);
  if (options.worker_launcher || (options.devices.size() > 1 && !options.worker_command.empty())) {
    return TuneInWorkerProcesses(log.source, queue, options, progress);
  }

  const auto start = std::chrono::steady_clock::now();
  TuneResult result;
  result.run_id = options.run_id.empty() ? DefaultTuneRunId() : options.run_id;
  result.log_source = log.source;
  result.device_kind = options.device_kind;
  result.options = options;
  KSELECT_ASSIGN_OR_RETURN(result.hardware, QueryHardwareProfile(options.devices.front()));
  result.hardware.device_kind = options.device_kind;
  KSELECT_ASSIGN_OR_RETURN(const HardwareConstants hardware, HardwareConstantsFor(result.hardware));
  const std::vector<double> budgets = SearchBudgets(queue, options, hardware);
  std::vector<TunedGemm> tuned(queue.size());
  size_t finished = 0;
  KSELECT_RETURN_IF_ERROR(TuneQueueInProcess(
      queue, budgets, options,
      [&](size_t i, TunedGemm t) {
        tuned[i] = std::move(t);
        if (progress) progress(TuneProgressLine(tuned[i], ++finished, queue.size()));
      },
      &result.provider_version));
  for (size_t i = 0; i < queue.size(); ++i) {
    if (tuned[i].outcome.empty()) {  // never taken (cannot happen with one worker running)
      tuned[i].gemm = *queue[i];
      tuned[i].outcome = "failed: no worker took it";
    }
  }
  result.gemms = std::move(tuned);
  result.seconds = Seconds(start);
  return result;
}

SolutionLibrary SolutionLibraryOf(const TuneResult& result) {
  SolutionLibrary library;
  library.identity = ProvenanceOf(result.hardware);
  for (const TunedGemm& t : result.gemms) {
    if (t.reference.median_ms <= 0) continue;    // not measured: the application's own choice
    if (library.Find(t.gemm.problem)) continue;  // one problem logged with two lds: first wins
    // A GEMM the search could not speed up keeps the library's default pick, pinned: dispatch
    // then runs exactly what the application ran before, not an untimed model choice.
    const InterleavedFigure& chosen = t.accepted ? *t.tuned : t.reference;
    Solution s;
    s.problem = t.gemm.problem;
    s.config = chosen.config;
    s.latency_ms = chosen.median_ms;
    s.reference_latency_ms = t.reference.median_ms;
    s.speedup = t.accepted ? chosen.speedup : 1.0;
    s.tflops = t.gemm.problem.Flops() / (chosen.median_ms * 1e-3) / 1e12;
    s.verification = t.accepted ? t.verification : "the default pick, kept";
    s.run_id = result.run_id;
    library.solutions.push_back(std::move(s));
  }
  return library;
}

double WeightedUplift(const TuneResult& result,
                      const std::function<const InterleavedFigure*(const TunedGemm&)>& pick) {
  double reference = 0, chosen = 0;
  for (const TunedGemm& t : result.gemms) {
    if (t.reference.median_ms <= 0) continue;  // not measured
    const double calls = static_cast<double>(t.gemm.calls);
    reference += calls * t.reference.median_ms;
    const InterleavedFigure* f = pick(t);
    // Each choice's time as its interleaved ratio to the reference says.
    chosen += calls * (f != nullptr ? t.reference.median_ms / f->speedup : t.reference.median_ms);
  }
  return chosen > 0 ? reference / chosen - 1 : 0;
}

}  // namespace kselect
