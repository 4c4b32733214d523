// kselect conv: the cuDNN provider on one convolution problem. `list` enumerates its engine x
// knob space (each config's plan built), with cuDNN's heuristic modes A and B ranked in it;
// `select` is `kselect predict` for a convolution: a conv model's decision for one problem, or
// for every row of a conv shape file (a network's layers).
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "cli/selection_report.h"
#include "kselect/model.h"
#include "kselect/provider.h"
#include "kselect/selector.h"
#include "kselect/shapes.h"
#include "providers/cudnn/cudnn_config.h"
#include "providers/cudnn/cudnn_provider.h"

namespace kselect::cli {
namespace {

// One convolution problem as the options give it (the same spatial stride, padding and dilation
// in every dimension).
struct ConvProblemOptions {
  ConvProblem problem;
  std::string direction = "fwd";
  std::string dtype = "bf16";
  int64_t stride = 1, pad = 0, dilation = 1;
};

struct ConvListOptions {
  ConvProblemOptions conv;
  int device = 0;
  int64_t max_workspace_mib = 256;
  bool json = false;
};

struct ConvSelectOptions {
  ConvProblemOptions conv;
  std::vector<std::string> models;  // one per device, as kselect predict
  std::string shapes;               // a conv shape file: select for each row instead
  std::string peer_data;            // a dataset whose recorded heuristic picks feed the model
  int top = 5;
  bool json = false;
};

// The problem the options describe, validated.
StatusOr<ConvProblem> ProblemOf(const ConvProblemOptions& o) {
  ConvProblem p = o.problem;
  KSELECT_ASSIGN_OR_RETURN(p.direction, ParseConvDirection(o.direction));
  KSELECT_ASSIGN_OR_RETURN(p.dtype, ParseDataType(o.dtype));
  p.stride_h = p.stride_w = o.stride;
  p.pad_h = p.pad_w = o.pad;
  p.dilation_h = p.dilation_w = o.dilation;
  if (p.Is3d()) {
    p.stride_d = o.stride;
    p.pad_d = o.pad;
    p.dilation_d = o.dilation;
  }
  KSELECT_RETURN_IF_ERROR(p.Validate());
  return p;
}

// The problem options on `app`; the sizes required unless `sizes_required` is false (select
// takes a shape file instead).
void AddProblemOptions(CLI::App* app, ConvProblemOptions* o, bool sizes_required) {
  ConvProblem& p = o->problem;
  auto size = [&](const char* name, int64_t& value, const char* what) {
    CLI::Option* option = app->add_option(name, value, what);
    if (sizes_required) option->required();
  };
  app->add_option("--n", p.n, "batch")->capture_default_str();
  size("--c", p.c, "input channels (all groups)");
  size("--k", p.k, "output channels (all groups)");
  app->add_option("--g", p.g, "groups")->capture_default_str();
  app->add_option("--di", p.di, "input depth (3D)")->capture_default_str();
  size("--hi", p.hi, "input height");
  size("--wi", p.wi, "input width");
  app->add_option("--z", p.z, "filter depth (3D)")->capture_default_str();
  app->add_option("--y", p.y, "filter height")->capture_default_str();
  app->add_option("--x", p.x, "filter width")->capture_default_str();
  app->add_option("--stride", o->stride, "stride (every spatial dim)")->capture_default_str();
  app->add_option("--pad", o->pad, "padding (every spatial dim)")->capture_default_str();
  app->add_option("--dilation", o->dilation, "dilation (every spatial dim)")->capture_default_str();
  app->add_option("--dtype", o->dtype, "bf16, fp16")->capture_default_str();
}

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

int RunList(const ConvListOptions& o) {
  StatusOr<ConvProblem> p = ProblemOf(o.conv);
  if (!p.ok()) return ReportError("conv list", p.status());

  ProviderOptions options;
  options.device = o.device;
  options.max_workspace_bytes = o.max_workspace_mib << 20;
  StatusOr<std::unique_ptr<KernelProvider>> provider = CreateProvider(Provider::kCudnn, options);
  if (!provider.ok()) return ReportError("conv list", provider.status());
  const Problem problem = *p;

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

// The model's decision for each problem: from the heuristic's picks recorded in --peer-data
// where the model uses them and the file measured the problem, else as the selector decides
// (asking cuDNN live on a GPU host).
StatusOr<int> RunSelect(const ConvSelectOptions& o, bool direction_given) {
  SelectorOptions options;
  options.top_k = std::max(o.top, 1);
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<Selector> selector, Selector::Open(o.models, options));
  const Model& model = selector->model();
  const std::optional<ConvDirection> direction = model.spec().conv_direction;
  if (!direction) {
    return FailedPreconditionError(selector->model_dir() +
                                   " is a GEMM model: kselect predict selects with it");
  }
  std::vector<ConvProblem> problems;
  if (!o.shapes.empty()) {
    KSELECT_ASSIGN_OR_RETURN(std::vector<ConvShapeRow> rows, LoadConvShapeFile(o.shapes));
    KSELECT_ASSIGN_OR_RETURN(const DataType dtype, ParseDataType(o.conv.dtype));
    for (const ConvShapeRow& row : rows) {
      ConvProblem p = row.shape;
      p.direction = *direction;
      p.dtype = dtype;
      problems.push_back(p);
    }
  } else {
    KSELECT_ASSIGN_OR_RETURN(ConvProblem p, ProblemOf(o.conv));
    if (direction_given && p.direction != *direction) {
      return InvalidArgumentError("--direction " + o.conv.direction + ": " + selector->model_dir() +
                                  " is a " + std::string(ConvDirectionName(*direction)) +
                                  " model (one model per direction)");
    }
    p.direction = *direction;
    problems.push_back(p);
  }
  std::optional<Dataset> peer_data;
  if (!o.peer_data.empty() && model.UsesPeerRanks()) {
    KSELECT_ASSIGN_OR_RETURN(peer_data, ReadDatasetChecked(o.peer_data));
  }
  const SelectionReport report{.top = o.top, .json = o.json, .several_models = o.models.size() > 1};
  for (const ConvProblem& problem : problems) {
    std::optional<std::vector<PeerPick>> peer;
    std::string peer_source;
    if (peer_data) {
      KSELECT_ASSIGN_OR_RETURN(peer, RecordedPeerPicks(*peer_data, model.spec().provider, problem));
      // As predict does: picks asked for and not there are an error, never a silent fallback to
      // another source of picks (issue 44, defect 18).
      if (!peer) {
        return FailedPreconditionError(
            o.peer_data + " did not measure " + ProblemToString(problem) +
            ": it has no heuristic picks recorded for it (leave --peer-data out to let the "
            "selector ask cuDNN, or give a file that measured the layer)");
      }
      peer_source = o.peer_data + " (the heuristic's picks recorded when it was measured)";
    }
    const auto ranks = peer ? std::optional<std::span<const PeerPick>>(*peer)
                            : std::optional<std::span<const PeerPick>>();
    KSELECT_ASSIGN_OR_RETURN(const Selection* selection, selector->Select(problem, ranks));
    PrintSelection(report, *selector, *selection, selection->candidates_considered, 0, peer_source);
  }
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
            AddProblemOptions(list, &o->conv, /*sizes_required=*/true);
            list->add_option("--direction", o->conv.direction, "fwd, bwd_data, bwd_weight")
                ->capture_default_str();
            list->add_option("--device", o->device, "CUDA device")->capture_default_str();
            list->add_option("--max-workspace-mib", o->max_workspace_mib, "workspace limit (MiB)")
                ->capture_default_str();
            list->add_flag("--json", o->json, "one JSON line per config");

            auto so = std::make_shared<ConvSelectOptions>();
            CLI::App* select = app.add_subcommand(
                "select",
                "a conv model's decision for one problem, or for each row of a conv shape file: "
                "the ranked engine configs with their predicted TFLOPS and latency");
            select
                ->add_option("--model", so->models,
                             "conv model directory (one direction); repeat to give one per device")
                ->required()
                ->check(CLI::ExistingDirectory);
            AddProblemOptions(select, &so->conv, /*sizes_required=*/false);
            CLI::Option* direction =
                select->add_option("--direction", so->conv.direction,
                                   "fwd, bwd_data, bwd_weight (default: the model's)");
            select
                ->add_option("--shapes", so->shapes,
                             "a conv shape file (shapes/conv_validation.csv's columns): select "
                             "for every row, in the model's direction and --dtype")
                ->check(CLI::ExistingFile);
            select
                ->add_option("--peer-data", so->peer_data,
                             "a conv dataset that measured the problems: its recorded heuristic "
                             "picks feed a model trained with them (default: asked live on a "
                             "GPU host)")
                ->check(CLI::ExistingFile);
            select->add_option("--top", so->top, "configs to print per problem")
                ->capture_default_str()
                ->check(CLI::PositiveNumber);
            select->add_flag("--json", so->json, "one JSON object per problem");
            return [o, so, list, select, direction]() {
              if (list->parsed()) return RunList(*o);
              const ConvProblem& p = so->conv.problem;
              const bool sizes = p.c != 0 || p.k != 0 || p.hi != 0 || p.wi != 0;
              if (so->shapes.empty() != sizes) {
                return ReportError("conv select",
                                   InvalidArgumentError("give either the problem (--c, --k, "
                                                        "--hi, --wi) or --shapes"));
              }
              auto rc = RunSelect(*so, direction->count() > 0);
              return rc.ok() ? *rc : ReportError("conv select", rc.status());
            };
          }};
}

}  // namespace kselect::cli
