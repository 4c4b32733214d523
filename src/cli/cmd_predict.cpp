// kselect predict: rank candidate configs for one GEMM with a trained model.
#include <algorithm>
#include <iostream>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "kselect/model.h"

namespace kselect::cli {
namespace {

struct PredictArgs {
  std::string model;
  std::string candidates;
  std::string hardware;  // a saved profile (kselect hw --save) of the device to predict for
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype = "bf16";
  std::string dtype_c;
  std::string layout = "rcr";
  int top = 10;
  bool json = false;
};

StatusOr<int> Run(const PredictArgs& args) {
  KSELECT_ASSIGN_OR_RETURN(Model model, Model::Load(args.model));
  if (!args.hardware.empty()) {
    KSELECT_ASSIGN_OR_RETURN(HardwareProfile profile, LoadHardwareProfile(args.hardware));
    KSELECT_ASSIGN_OR_RETURN(HardwareConstants constants, HardwareConstantsFor(profile));
    KSELECT_RETURN_IF_ERROR(model.CheckHardware(constants));
  }
  GemmProblem problem;
  problem.m = args.m;
  problem.n = args.n;
  problem.k = args.k;
  problem.batch = args.batch;
  KSELECT_ASSIGN_OR_RETURN(problem.layout, ParseGemmLayout(args.layout));
  KSELECT_ASSIGN_OR_RETURN(problem.dtype_a, ParseDataType(args.dtype));
  problem.dtype_b = problem.dtype_a;
  // 8-bit inputs write 16-bit outputs unless told otherwise.
  problem.dtype_c = DataTypeBits(problem.dtype_a) == 8 ? DataType::kBF16 : problem.dtype_a;
  if (!args.dtype_c.empty()) {
    KSELECT_ASSIGN_OR_RETURN(problem.dtype_c, ParseDataType(args.dtype_c));
  }
  KSELECT_RETURN_IF_ERROR(problem.Validate());

  // Candidates: the distinct configs the file measured for this provider and input dtype.
  KSELECT_ASSIGN_OR_RETURN(Dataset dataset, ReadDatasetChecked(args.candidates));
  const std::string provider(ProviderName(model.spec().provider));
  std::set<std::string> seen;
  std::vector<KernelConfig> configs;
  std::vector<std::string> keys;
  for (const DatasetRow& row : dataset.rows) {
    if (row.provider.value_or("") != provider || row.dtype.value_or(args.dtype) != args.dtype) {
      continue;
    }
    KSELECT_ASSIGN_OR_RETURN(Measurement meas, MeasurementFromRow(row));
    std::string key = ConfigKey(meas.config);
    if (!seen.insert(key).second) continue;
    configs.push_back(meas.config);
    keys.push_back(std::move(key));
  }
  if (configs.empty()) {
    return InvalidArgumentError(args.candidates + " has no " + provider + " configs for dtype " +
                                args.dtype);
  }
  KSELECT_ASSIGN_OR_RETURN(std::vector<double> tflops,
                           model.Predict(Target::kTflops, problem, configs));
  std::vector<size_t> order(configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tflops[a] > tflops[b]; });
  // A ranker orders candidates without predicting TFLOPS: print its scores as scores.
  const bool ranker = model.Ranks(Target::kTflops);
  const size_t top = std::min(order.size(), static_cast<size_t>(std::max(args.top, 1)));
  if (args.json) {
    nlohmann::json ranked = nlohmann::json::array();
    for (size_t r = 0; r < top; ++r) {
      ranked.push_back({{"rank", r + 1},
                        {"config", keys[order[r]]},
                        {"name", DescribeConfig(configs[order[r]])},
                        {ranker ? "score" : "predicted_tflops", tflops[order[r]]}});
    }
    std::cout << nlohmann::json{{"problem", problem.ToString()},
                                {"model", args.model},
                                {"candidates", configs.size()},
                                {"ranked", ranked}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << problem.ToString() << ": " << configs.size() << " candidates\n";
    for (size_t r = 0; r < top; ++r) {
      std::printf("%3zu  %9.2f %s  %s\n", r + 1, tflops[order[r]], ranker ? "score " : "TFLOPS",
                  DescribeConfig(configs[order[r]]).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

Command PredictCommand() {
  return {
      "predict", "rank configs for a problem with a trained model",
      [](CLI::App& app) -> RunFunction {
        auto args = std::make_shared<PredictArgs>();
        app.add_option("--model", args->model, "model directory")
            ->required()
            ->check(CLI::ExistingDirectory);
        app.add_option("--candidates", args->candidates,
                       "dataset whose distinct configs are the candidates")
            ->required()
            ->check(CLI::ExistingFile);
        app.add_option("--m", args->m, "rows of A and C")->required()->check(CLI::PositiveNumber);
        app.add_option("--n", args->n, "columns of B and C")
            ->required()
            ->check(CLI::PositiveNumber);
        app.add_option("--k", args->k, "reduction dimension")
            ->required()
            ->check(CLI::PositiveNumber);
        app.add_option("--batch", args->batch, "batch count")->capture_default_str();
        app.add_option("--dtype", args->dtype, "input dtype")->capture_default_str();
        app.add_option("--dtype-c", args->dtype_c, "output dtype (default: input, bf16 for 8-bit)");
        app.add_option("--layout", args->layout, "layout of A, B, C (rcr, rcc, ...)")
            ->capture_default_str();
        app.add_option("--top", args->top, "configs to print")->capture_default_str();
        app.add_flag("--json", args->json, "print JSON");
        return [args]() {
          auto rc = Run(*args);
          return rc.ok() ? *rc : ReportError("predict", rc.status());
        };
      }};
}

}  // namespace kselect::cli
