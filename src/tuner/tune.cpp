// kselect tune on the GPU: one worker per device takes GEMMs from a shared queue (largest
// estimated time first), searches each GEMM's config space with the genetic algorithm, verifies
// the fastest configs and times them interleaved with the reference.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "bench/provider_comparison.h"
#include "core/text.h"
#include "kselect/selector.h"
#include "kselect/tuner.h"
#include "kselect/verify.h"
#include "timing/graph_timer.h"

namespace kselect {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string DefaultRunId() {
  return "tune-" + text::UtcNowIso8601(/*compact=*/true);
}

// One GPU's tuning state.
class TuneWorker {
 public:
  TuneWorker(const TuneOptions& options, int device) : options_(options), device_(device) {}

  Status Init() {
    ProviderOptions po = options_.provider_options;
    po.device = device_;
    KSELECT_ASSIGN_OR_RETURN(provider_, CreateProvider(options_.provider, po));
    KSELECT_ASSIGN_OR_RETURN(timer_, timing::GraphTimer::Create(device_));
    verify::VerifyOptions vo;
    vo.device = device_;
    KSELECT_ASSIGN_OR_RETURN(verifier_, verify::Verifier::Create(vo));
    if (!options_.model_dir.empty()) {
      SelectorOptions so;
      so.top_k = std::max(options_.model_top_k, 1);
      so.provider = po;
      so.predicted_times = 0;
      KSELECT_ASSIGN_OR_RETURN(selector_, Selector::Open(options_.model_dir, so));
    }
    return Status::Ok();
  }

  std::string provider_version() const { return provider_->version(); }

  TunedGemm Tune(const LoggedGemm& logged) {
    TunedGemm out;
    out.gemm = logged;
    out.device = device_;
    Status status = TuneInto(logged.problem, out);
    if (!status.ok()) {
      out.outcome = "failed: " + status.ToString();
      out.accepted = false;
    }
    return out;
  }

 private:
  Status TuneInto(const GemmProblem& problem, TunedGemm& out) {
    KSELECT_RETURN_IF_ERROR(problem.Validate());
    // The space and the library's own picks.
    const auto enumerate_start = std::chrono::steady_clock::now();
    KSELECT_ASSIGN_OR_RETURN(std::vector<KernelConfig> configs, provider_->Enumerate(problem));
    KSELECT_ASSIGN_OR_RETURN(std::vector<KernelConfig> picks,
                             provider_->HeuristicPicks(problem, options_.heuristic_picks));
    out.enumerate_s = Seconds(enumerate_start);
    std::set<std::string> keys;
    for (const KernelConfig& c : configs) keys.insert(ConfigKey(c));
    for (const KernelConfig& pick : picks) {
      if (keys.insert(ConfigKey(pick)).second) configs.push_back(pick);
    }
    if (configs.empty()) return CannotImplementError("no config can run " + problem.ToString());
    out.configs_enumerated = static_cast<int64_t>(configs.size());
    KSELECT_ASSIGN_OR_RETURN(const SearchSpace space, MakeSearchSpace(std::move(configs)));
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < space.configs.size(); ++i) index[ConfigKey(space.configs[i])] = i;
    auto index_of = [&](const KernelConfig& c) -> std::optional<size_t> {
      const auto it = index.find(ConfigKey(c));
      return it == index.end() ? std::nullopt : std::optional<size_t>(it->second);
    };

    // The reference: the heuristic's rank-1 pick (what cuBLASLt runs untuned), or the first config.
    const size_t reference = picks.empty() ? 0 : *index_of(picks.front());
    std::vector<size_t> seeds{reference};
    std::optional<size_t> model_pick;
    if (selector_ != nullptr) {
      StatusOr<const Selection*> selection = selector_->Select(problem);
      if (selection.ok()) {
        for (const RankedConfig& r : (*selection)->ranked) {
          if (const auto i = index_of(r.config)) {
            if (!model_pick) model_pick = *i;
            seeds.push_back(*i);
          }
        }
        if (!model_pick) out.note += "the model's picks are not in the enumerated space; ";
      } else {
        out.note += "model: " + selection.status().message() + "; ";
      }
    }
    std::vector<size_t> top_picks;
    for (const KernelConfig& pick : picks) top_picks.push_back(*index_of(pick));
    seeds.insert(seeds.end(), top_picks.begin(), top_picks.end());

    // Operands rotated past L2, shared by the search and the interleaved comparison.
    KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs, provider_->Operands(problem));
    KSELECT_ASSIGN_OR_RETURN(
        const std::unique_ptr<verify::DeviceOperands> operands,
        timer_->RotatingOperands(problem, specs, options_.provider_options.max_workspace_bytes,
                                 options_.rotate_bytes));

    // The search.
    std::map<size_t, double> gpu_ms_of;
    std::string first_failure;
    double best_ms = 0;
    const FitnessFunction fitness = [&](size_t i) -> std::optional<double> {
      double gpu_ms = 0;
      StatusOr<std::unique_ptr<PreparedKernel>> kernel =
          provider_->Prepare(problem, space.configs[i]);
      StatusOr<double> ms =
          kernel.ok() ? timer_->Time(**kernel, *operands, options_.batch_ms, 3,
                                     best_ms > 0 ? options_.abort_factor * best_ms : 0, &gpu_ms)
                      : StatusOr<double>(kernel.status());
      gpu_ms_of[i] = gpu_ms;
      out.search_gpu_ms += gpu_ms;
      if (!ms.ok()) {
        if (first_failure.empty())
          first_failure = ConfigKey(space.configs[i]) + ": " + ms.status().message();
        // A fault poisons the context: nothing more can be timed in it.
        if (cudaDeviceSynchronize() != cudaSuccess) sticky_ = ms.status();
        return std::nullopt;
      }
      if (best_ms == 0 || *ms < best_ms) best_ms = *ms;
      return *ms;
    };
    const auto search_start = std::chrono::steady_clock::now();
    const GeneticResult result = RunGeneticSearch(space, seeds, fitness, options_.genetic, [&] {
      return !sticky_.ok() || Seconds(search_start) > options_.budget_s;
    });
    out.search_s = Seconds(search_start);
    KSELECT_RETURN_IF_ERROR(sticky_);
    out.configs_timed = static_cast<int64_t>(result.evaluated.size());
    out.generations = result.generations;
    out.restarts = result.restarts;
    out.stopped_by = result.stopped_by;
    if (!first_failure.empty())
      out.note += "first config that failed to time: " + first_failure + "; ";
    std::map<size_t, double> search_ms(result.evaluated.begin(), result.evaluated.end());

    // The best of the heuristic's top N, as the search timed them.
    std::optional<size_t> best_pick;
    for (const size_t i : top_picks) {
      out.top8_gpu_ms += gpu_ms_of.contains(i) ? gpu_ms_of[i] : 0;
      const auto it = search_ms.find(i);
      if (it == search_ms.end() || !std::isfinite(it->second)) continue;
      if (!best_pick || it->second < search_ms[*best_pick]) best_pick = i;
    }

    // Verification of the search's fastest configs (the reference needs none).
    const auto confirm_start = std::chrono::steady_clock::now();
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::VerifyCase> check,
                             verifier_->MakeCase(problem, specs));
    std::vector<size_t> candidates;
    for (const size_t i : result.Fastest(static_cast<size_t>(options_.confirm_candidates) + 1)) {
      if (i == reference || static_cast<int>(candidates.size()) >= options_.confirm_candidates) {
        continue;
      }
      KSELECT_ASSIGN_OR_RETURN(const bench::DeviceVerdict verdict,
                               bench::VerifyConfig(*provider_, space.configs[i], *check));
      if (!verdict.checked) {
        out.note += ConfigKey(space.configs[i]) + " not verified: " + verdict.detail + "; ";
        continue;
      }
      if (!verdict.passed) {
        out.note += ConfigKey(space.configs[i]) + " rejected: " + verdict.detail + "; ";
        continue;
      }
      if (out.verification.empty()) out.verification = verdict.detail;
      candidates.push_back(i);
    }

    // The interleaved comparison: reference, verified candidates, model pick, best of top N.
    std::vector<size_t> compared{reference};
    auto add = [&](size_t i) {
      const auto at = std::find(compared.begin(), compared.end(), i);
      if (at != compared.end()) return static_cast<size_t>(at - compared.begin());
      compared.push_back(i);
      return compared.size() - 1;
    };
    std::vector<size_t> candidate_slots;
    for (const size_t i : candidates) candidate_slots.push_back(add(i));
    constexpr size_t kNone = static_cast<size_t>(-1);
    const size_t model_slot = model_pick ? add(*model_pick) : kNone;
    const size_t pick_slot = best_pick ? add(*best_pick) : kNone;
    std::vector<timing::Contender> contenders;
    for (const size_t i : compared) contenders.push_back({provider_.get(), space.configs[i]});
    KSELECT_ASSIGN_OR_RETURN(
        const timing::InterleavedRun run,
        timing::TimeContenders(*timer_, problem, contenders, *operands,
                               options_.interleaved_batch_ms, options_.interleaved_rounds));
    out.confirm_s = Seconds(confirm_start);
    const std::vector<InterleavedFigure>& figures = run.figures;
    out.reference = figures[0];
    if (model_slot != kNone) out.model_pick = figures[model_slot];
    if (pick_slot != kNone) out.best_of_top8 = figures[pick_slot];
    std::optional<size_t> best_slot;
    for (const size_t slot : candidate_slots) {
      if (!best_slot || figures[slot].speedup > figures[*best_slot].speedup) best_slot = slot;
    }
    if (best_slot) out.tuned = figures[*best_slot];
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
        out.note += "no verified candidate faster than the reference in the search; ";
      }
    }
    return Status::Ok();
  }

  const TuneOptions& options_;
  int device_;
  std::unique_ptr<KernelProvider> provider_;
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

StatusOr<TuneResult> TuneGemms(const GemmLog& log, std::span<const size_t> gemms,
                               const TuneOptions& options, const TuneProgress& progress) {
  if (options.devices.empty()) return InvalidArgumentError("tune: no devices");
  if (options.min_speedup < 1) return InvalidArgumentError("tune: min_speedup must be >= 1");
  if (options.budget_s <= 0) return InvalidArgumentError("tune: the budget must be positive");
  for (const size_t g : gemms) {
    if (g >= log.gemms.size()) return InvalidArgumentError("tune: GEMM index out of range");
  }
  const auto start = std::chrono::steady_clock::now();
  TuneResult result;
  result.run_id = options.run_id.empty() ? DefaultRunId() : options.run_id;
  result.log_source = log.source;
  result.device_kind = options.device_kind;
  result.options = options;
  KSELECT_ASSIGN_OR_RETURN(result.hardware, QueryHardwareProfile(options.devices.front()));
  result.hardware.device_kind = options.device_kind;

  const std::vector<size_t> mine = ShardIndices(gemms.size(), options.shard);
  std::vector<TunedGemm> tuned(mine.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  std::vector<Status> worker_status(options.devices.size());
  std::vector<std::thread> threads;
  for (size_t w = 0; w < options.devices.size(); ++w) {
    threads.emplace_back([&, w] {
      TuneWorker worker(options, options.devices[w]);
      if (Status s = worker.Init(); !s.ok()) {
        worker_status[w] = s;
        return;
      }
      if (w == 0) result.provider_version = worker.provider_version();
      for (size_t i = next++; i < mine.size(); i = next++) {
        const LoggedGemm& logged = log.gemms[gemms[mine[i]]];
        const auto gemm_start = std::chrono::steady_clock::now();
        tuned[i] = worker.Tune(logged);
        if (progress) {
          const TunedGemm& t = tuned[i];
          char line[512];
          std::snprintf(line, sizeof(line),
                        "[%zu/%zu] gpu%d %s calls=%lld: %s, tuned %s model %s top8 %s, "
                        "%lld of %lld configs timed, %.1f s",
                        i + 1, mine.size(), options.devices[w], logged.problem.ToString().c_str(),
                        static_cast<long long>(logged.calls), t.outcome.c_str(),
                        FormatSpeedup(t.tuned).c_str(), FormatSpeedup(t.model_pick).c_str(),
                        FormatSpeedup(t.best_of_top8).c_str(),
                        static_cast<long long>(t.configs_timed),
                        static_cast<long long>(t.configs_enumerated), Seconds(gemm_start));
          std::lock_guard lock(progress_mutex);
          progress(line);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : worker_status) {
    if (!s.ok()) return s;
  }
  result.gemms = std::move(tuned);
  result.seconds = Seconds(start);
  return result;
}

SolutionLibrary SolutionLibraryOf(const TuneResult& result) {
  SolutionLibrary library;
  library.identity = ProvenanceOf(result.hardware);
  for (const TunedGemm& t : result.gemms) {
    if (t.reference.median_ms <= 0) continue;    // failed: nothing measured
    if (library.Find(t.gemm.problem)) continue;  // one problem logged with two lds: first wins
    // A GEMM the search could not speed up keeps the library's default pick, pinned: dispatch
    // then runs exactly what the application ran before, not an untimed model choice.
    const InterleavedFigure& chosen = t.accepted ? *t.tuned : t.reference;
    Solution s;
    s.problem = t.gemm.problem;
    s.config = chosen.config;
    s.latency_ms = chosen.median_ms;
    s.reference_latency_ms = t.reference.median_ms;
    s.speedup = chosen.speedup;
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
    if (t.reference.median_ms <= 0) continue;  // failed: not measured
    const double calls = static_cast<double>(t.gemm.calls);
    reference += calls * t.reference.median_ms;
    const InterleavedFigure* f = pick(t);
    // Each choice's time as its interleaved ratio to the reference says.
    chosen += calls * (f != nullptr ? t.reference.median_ms / f->speedup : t.reference.median_ms);
  }
  return chosen > 0 ? reference / chosen - 1 : 0;
}

}  // namespace kselect
