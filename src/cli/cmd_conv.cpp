// kselect conv: the cuDNN provider on one convolution problem. `list` enumerates its engine x
// knob space (each config's plan built), with cuDNN's heuristic modes A and B ranked in it.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "kselect/provider.h"
#include "providers/cudnn/cudnn_config.h"
#include "providers/cudnn/cudnn_provider.h"

namespace kselect::cli {
namespace {

struct ConvListOptions {
  ConvProblem problem;
  std::string direction = "fwd";
  std::string dtype = "bf16";
  int64_t stride = 1, pad = 0, dilation = 1;
  int device = 0;
  int64_t max_workspace_mib = 256;
  bool json = false;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string KnobText(const CudnnConfig& c) {
  std::string text;
  for (const auto& [type, value] : c.knobs) {
    if (!text.empty()) text += ",";
    text += std::to_string(type) + "=" + std::to_string(value);
  }
  return text;
}

int RunList(ConvListOptions& o) {
  ConvProblem& p = o.problem;
  StatusOr<ConvDirection> direction = ParseConvDirection(o.direction);
  if (!direction.ok()) return ReportError("conv list", direction.status());
  StatusOr<DataType> dtype = ParseDataType(o.dtype);
  if (!dtype.ok()) return ReportError("conv list", dtype.status());
  p.direction = *direction;
  p.dtype = *dtype;
  p.stride_h = p.stride_w = o.stride;
  p.pad_h = p.pad_w = o.pad;
  p.dilation_h = p.dilation_w = o.dilation;
  if (p.Is3d()) {
    p.stride_d = o.stride;
    p.pad_d = o.pad;
    p.dilation_d = o.dilation;
  }
  if (Status valid = p.Validate(); !valid.ok()) return ReportError("conv list", valid);

  ProviderOptions options;
  options.device = o.device;
  options.max_workspace_bytes = o.max_workspace_mib << 20;
  StatusOr<std::unique_ptr<KernelProvider>> provider = CreateProvider(Provider::kCudnn, options);
  if (!provider.ok()) return ReportError("conv list", provider.status());
  const Problem problem = p;

  auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<KernelConfig>> configs = (*provider)->Enumerate(problem);
  if (!configs.ok()) return ReportError("conv list", configs.status());
  const double enumerate_s = SecondsSince(start);
  // The survey of the enumeration just made (cached: no plan is built twice).
  StatusOr<std::vector<cudnn::EngineSurvey>> survey = cudnn::SurveyEngines(**provider, problem);
  if (!survey.ok()) return ReportError("conv list", survey.status());
  start = std::chrono::steady_clock::now();
  StatusOr<std::vector<KernelConfig>> mode_a = (*provider)->HeuristicPicks(problem, 8);
  StatusOr<std::vector<KernelConfig>> mode_b = (*provider)->SecondHeuristicPicks(problem, 8);
  const double heuristic_s = SecondsSince(start);
  if (!mode_a.ok()) return ReportError("conv list", mode_a.status());
  if (!mode_b.ok()) return ReportError("conv list", mode_b.status());

  std::map<int64_t, int64_t> per_engine;
  for (const KernelConfig& c : *configs) ++per_engine[std::get<CudnnConfig>(c).engine_id];
  auto rank_in = [](const std::vector<KernelConfig>& picks, const KernelConfig& c) {
    for (size_t i = 0; i < picks.size(); ++i) {
      if (picks[i] == c) return static_cast<int>(i + 1);
    }
    return 0;
  };
  if (o.json) {
    for (const KernelConfig& c : *configs) {
      const CudnnConfig& cudnn = std::get<CudnnConfig>(c);
      std::printf("{\"engine_id\":%lld,\"knobs\":\"%s\",\"mode_a_rank\":%d,\"mode_b_rank\":%d}\n",
                  static_cast<long long>(cudnn.engine_id), KnobText(cudnn).c_str(),
                  rank_in(*mode_a, c), rank_in(*mode_b, c));
    }
    return kExitOk;
  }
  std::printf("%s\n%s\n", ProblemToString(problem).c_str(), (*provider)->version().c_str());
  std::printf("configs that build: %zu in %.2f s (%zu engines); heuristics A and B: %.3f s\n",
              configs->size(), enumerate_s, per_engine.size(), heuristic_s);
  std::printf("  engine  knob product  tried  built  build s  compiled at build  first refusal\n");
  for (const cudnn::EngineSurvey& e : *survey) {
    if (e.tried == 0) continue;
    std::printf("  %6lld  %12lld  %5lld  %5lld  %7.2f  %-17s  %.60s\n",
                static_cast<long long>(e.engine_id), static_cast<long long>(e.knob_combinations),
                static_cast<long long>(e.tried), static_cast<long long>(e.built), e.build_seconds,
                e.runtime_compiled ? "yes" : "no", e.first_refusal.c_str());
  }
  auto print_picks = [&](const char* name, const std::vector<KernelConfig>& picks) {
    std::printf("%s:\n", name);
    for (size_t i = 0; i < picks.size(); ++i) {
      const CudnnConfig& c = std::get<CudnnConfig>(picks[i]);
      std::printf("  %zu. engine %lld knobs %s\n", i + 1, static_cast<long long>(c.engine_id),
                  KnobText(c).c_str());
    }
  };
  print_picks("heuristic mode A", *mode_a);
  print_picks("heuristic mode B", *mode_b);
  return kExitOk;
}

}  // namespace

Command ConvCommand() {
  return {"conv", "cuDNN grouped convolution: the engine x knob space of one problem",
          [](CLI::App& app) -> RunFunction {
            app.require_subcommand(1);
            auto o = std::make_shared<ConvListOptions>();
            CLI::App* list = app.add_subcommand(
                "list", "(GPU) every engine config whose plan builds, and cuDNN's heuristic picks");
            ConvProblem& p = o->problem;
            list->add_option("--n", p.n, "batch")->capture_default_str();
            list->add_option("--c", p.c, "input channels (all groups)")->required();
            list->add_option("--k", p.k, "output channels (all groups)")->required();
            list->add_option("--g", p.g, "groups")->capture_default_str();
            list->add_option("--di", p.di, "input depth (3D)")->capture_default_str();
            list->add_option("--hi", p.hi, "input height")->required();
            list->add_option("--wi", p.wi, "input width")->required();
            list->add_option("--z", p.z, "filter depth (3D)")->capture_default_str();
            list->add_option("--y", p.y, "filter height")->capture_default_str();
            list->add_option("--x", p.x, "filter width")->capture_default_str();
            list->add_option("--stride", o->stride, "stride (every spatial dim)")
                ->capture_default_str();
            list->add_option("--pad", o->pad, "padding (every spatial dim)")->capture_default_str();
            list->add_option("--dilation", o->dilation, "dilation (every spatial dim)")
                ->capture_default_str();
            list->add_option("--direction", o->direction, "fwd, bwd_data, bwd_weight")
                ->capture_default_str();
            list->add_option("--dtype", o->dtype, "bf16, fp16")->capture_default_str();
            list->add_option("--device", o->device, "CUDA device")->capture_default_str();
            list->add_option("--max-workspace-mib", o->max_workspace_mib, "workspace limit (MiB)")
                ->capture_default_str();
            list->add_flag("--json", o->json, "one JSON line per config");
            return [o] { return RunList(*o); };
          }};
}

}  // namespace kselect::cli
