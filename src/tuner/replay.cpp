// kselect replay: the application's GEMM sequence, in call order, as two CUDA graphs (default
// picks; the library's solutions) timed interleaved on one device.
#include <algorithm>

#include "core/statistics.h"
#include "kselect/tuner.h"
#include "timing/graph_timer.h"
#include "tuner/workspace_providers.h"

namespace kselect {

StatusOr<ReplayResult> ReplayGemmLog(const GemmLog& log, const SolutionLibrary& library,
                                     const ReplayOptions& options) {
  if (log.sequence.empty()) return InvalidArgumentError(log.source + ": no calls to replay");
  if (static_cast<int64_t>(log.sequence.size()) > options.max_calls) {
    return InvalidArgumentError(log.source + ": " + std::to_string(log.sequence.size()) +
                                " calls, more than the replay limit of " +
                                std::to_string(options.max_calls));
  }
  if (options.rounds < 1) return InvalidArgumentError("replay: rounds must be at least 1");
  ReplayResult result;
  KSELECT_ASSIGN_OR_RETURN(result.hardware, QueryHardwareProfile(options.device));
  KSELECT_RETURN_IF_ERROR(CheckSolutionIdentity(library, result.hardware, "the library"));
  ProvidersByWorkspace providers(options.provider, options.provider_options, options.device);
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<timing::GraphTimer> timer,
                           timing::GraphTimer::Create(options.device));

  // Per distinct GEMM: operands, the default pick and the library's solution. A GEMM the
  // provider cannot run is left out of both sequences and reported.
  struct Distinct {
    std::unique_ptr<verify::DeviceOperands> operands;
    std::unique_ptr<PreparedKernel> reference, tuned;
  };
  std::vector<Distinct> distinct(log.gemms.size());
  for (size_t g = 0; g < log.gemms.size(); ++g) {
    const GemmProblem& problem = log.gemms[g].problem;
    const int64_t limit =
        WorkspaceLimit(options.provider_options.max_workspace_bytes, log.gemms[g]);
    KSELECT_ASSIGN_OR_RETURN(KernelProvider * provider, providers.For(limit));
    StatusOr<std::vector<KernelConfig>> picks =
        provider->SupportsProblem(problem)
            ? provider->HeuristicPicks(problem, 1)
            : StatusOr<std::vector<KernelConfig>>(CannotImplementError(
                  std::string(ProviderName(options.provider)) + " does not run it"));
    if (picks.ok() && picks->empty()) picks = CannotImplementError("no default pick");
    if (!picks.ok()) {
      if (picks.status().code() != StatusCode::kCannotImplement) return picks.status();
      result.left_out.push_back(problem.ToString() + ": " + picks.status().message());
      result.left_out_calls += log.gemms[g].calls;
      continue;
    }
    KernelConfig tuned = picks->front();
    if (const auto at = library.Find(problem);
        at && ProviderOf(library.solutions[*at].config) == options.provider) {
      tuned = library.solutions[*at].config;
      ++result.from_library;
    }
    KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs, provider->Operands(problem));
    KSELECT_ASSIGN_OR_RETURN(distinct[g].operands,
                             timer->RotatingOperands(problem, specs, limit, options.rotate_bytes,
                                                     /*max_sets=*/32));
    KSELECT_ASSIGN_OR_RETURN(distinct[g].reference, provider->Prepare(problem, picks->front()));
    KSELECT_ASSIGN_OR_RETURN(distinct[g].tuned, provider->Prepare(problem, tuned));
    // Module loads happen outside the capture.
    for (PreparedKernel* kernel : {distinct[g].reference.get(), distinct[g].tuned.get()}) {
      KSELECT_ASSIGN_OR_RETURN(const double ms,
                               timer->EagerLaunchMs(*kernel, distinct[g].operands->set(0)));
      (void)ms;
    }
  }
  auto capture = [&](bool tuned) {
    return timing::CapturedGraph::Capture(timer->stream(), [&](cudaStream_t stream) -> Status {
      std::vector<size_t> next(distinct.size(), 0);
      for (const int32_t g : log.sequence) {
        Distinct& d = distinct[static_cast<size_t>(g)];
        if (d.reference == nullptr) continue;  // left out: the provider cannot run it
        PreparedKernel& kernel = tuned ? *d.tuned : *d.reference;
        KSELECT_RETURN_IF_ERROR(
            kernel.Launch(d.operands->set(next[static_cast<size_t>(g)]++), stream));
      }
      return Status::Ok();
    });
  };
  KSELECT_ASSIGN_OR_RETURN(const timing::CapturedGraph reference_graph, capture(false));
  KSELECT_ASSIGN_OR_RETURN(const timing::CapturedGraph tuned_graph, capture(true));
  // One launch of each to warm up.
  KSELECT_RETURN_IF_ERROR(timer->TimeGraph(reference_graph).status());
  KSELECT_RETURN_IF_ERROR(timer->TimeGraph(tuned_graph).status());
  std::vector<double> reference_ms, tuned_ms, ratios;
  for (int r = 0; r < options.rounds; ++r) {
    double a = 0, b = 0;
    if (r % 2 == 0) {
      KSELECT_ASSIGN_OR_RETURN(a, timer->TimeGraph(reference_graph));
      KSELECT_ASSIGN_OR_RETURN(b, timer->TimeGraph(tuned_graph));
    } else {
      KSELECT_ASSIGN_OR_RETURN(b, timer->TimeGraph(tuned_graph));
      KSELECT_ASSIGN_OR_RETURN(a, timer->TimeGraph(reference_graph));
    }
    reference_ms.push_back(a);
    tuned_ms.push_back(b);
    ratios.push_back(a / b);
  }
  result.calls = static_cast<int64_t>(log.sequence.size()) - result.left_out_calls;
  result.distinct = static_cast<int64_t>(log.gemms.size());
  result.default_ms = Median(reference_ms);
  result.library_ms = Median(tuned_ms);
  result.uplift = Median(ratios) - 1;
  return result;
}

}  // namespace kselect
