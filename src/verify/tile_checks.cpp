// `kselect tile verify` and `kselect tile time` as library functions: the tile engine compiles
// and loads its kernels itself (parallel NVRTC, the CLI's cache options), binds them behind
// PreparedKernel and hands them to the verify module's cases and timer.
#include "kselect/tile_checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "cuda/runtime.h"
#include "kselect/provider.h"
#include "providers/tile/tile_provider.h"
#include "timing/graph_timer.h"

namespace kselect::tile {
namespace {

GemmProblem WithVariant(GemmProblem p, const TileBuildVariant& v) {
  p.layout = v.layout;
  p.dtype_a = p.dtype_b = v.input;
  p.dtype_c = v.output;
  return p;
}

// cuBLASLt's first heuristic pick for `problem`, through the cuBLASLt provider (TFLOP/s).
StatusOr<double> TimeCublasLtPick(const GemmProblem& problem, int repeats) {
  const GemmProblem p =
      problem.layout.c == MatrixOrder::kColMajor ? problem : verify::TransposedGemm(problem);
  ProviderOptions options;
  options.max_workspace_bytes = 64ll << 20;
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<KernelProvider> provider,
                           CreateProvider(Provider::kCublasLt, options));
  if (!provider->SupportsProblem(p)) {
    return CannotImplementError("the cuBLASLt provider does not run " + p.ToString());
  }
  KSELECT_ASSIGN_OR_RETURN(const std::vector<KernelConfig> picks, provider->HeuristicPicks(p, 1));
  if (picks.empty()) return CannotImplementError("cuBLASLt found no algorithm");
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<PreparedKernel> kernel,
                           provider->Prepare(p, picks.front()));
  KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs, provider->Operands(p));
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::DeviceOperands> operands,
                           verify::DeviceOperands::Create(specs, kernel->WorkspaceBytes(), 7));
  KSELECT_ASSIGN_OR_RETURN(const double ms,
                           timing::MedianLaunchMs(*kernel, operands->operands(), repeats));
  return p.Flops() / (ms * 1e-3) / 1e12;
}

}  // namespace

StatusOr<TileVerifySummary> VerifyTileRuleSet(const TileRuleSet& rules,
                                              const CompilerOptions& compiler_options,
                                              bool fail_fast,
                                              const TileVerifyCallbacks& callbacks) {
  KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::Verifier> verifier,
                           verify::Verifier::Create({.device = 0, .seed = 20261122}));
  const std::unique_ptr<KernelProvider> provider = CreateTileProvider(ProviderOptions{});
  const TileCompiler compiler(compiler_options);
  const std::vector<GemmProblem> shapes =
      verify::GemmCheckProblems(DataType::kBF16, DataType::kBF16, GemmLayout{});
  TileVerifySummary total;
  for (const TileBuildVariant& variant : rules.variants) {
    // Every (config, shape) spec of this variant, compiled in parallel up front.
    std::vector<TileKernelSpec> specs;
    std::map<std::string, size_t> index;
    std::vector<std::vector<int64_t>> spec_of(rules.configs.size());
    for (size_t ci = 0; ci < rules.configs.size(); ++ci) {
      for (const GemmProblem& shape : shapes) {
        StatusOr<TileKernelSpec> spec =
            SpecForProblem(rules.configs[ci], WithVariant(shape, variant));
        if (!spec.ok() || !CheckValid(*spec).ok()) {
          spec_of[ci].push_back(-1);
          continue;
        }
        auto [it, inserted] = index.emplace(SpecKey(*spec), specs.size());
        if (inserted) specs.push_back(*spec);
        spec_of[ci].push_back(static_cast<int64_t>(it->second));
      }
    }
    const std::vector<StatusOr<TileBinary>> binaries = compiler.CompileAll(specs);
    TileVariantSummary summary;
    summary.variant = variant;
    summary.specs = specs.size();
    std::vector<std::unique_ptr<TileKernel>> kernels(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!binaries[i].ok()) {
        if (callbacks.on_build_failure) callbacks.on_build_failure("compile", binaries[i].status());
        ++summary.failures;
        continue;
      }
      StatusOr<std::unique_ptr<TileKernel>> kernel = TileKernel::Load(*binaries[i]);
      if (!kernel.ok()) {
        if (callbacks.on_build_failure) callbacks.on_build_failure("load", kernel.status());
        ++summary.failures;
        continue;
      }
      kernels[i] = std::move(kernel).value();
    }
    for (size_t si = 0; si < shapes.size(); ++si) {
      const GemmProblem problem = WithVariant(shapes[si], variant);
      summary.tolerance = verify::GemmTolerance(problem.dtype_a, problem.dtype_c);
      KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> operands,
                               provider->Operands(problem));
      KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::VerifyCase> verify_case,
                               verifier->MakeCase(problem, operands));
      for (size_t ci = 0; ci < rules.configs.size(); ++ci) {
        const int64_t idx = spec_of[ci][si];
        if (idx < 0 || !kernels[idx] || !CanImplement(specs[idx], problem).ok()) {
          ++summary.skipped;
          continue;
        }
        ++summary.checks;
        const std::unique_ptr<PreparedKernel> bound = BindTileKernel(problem, *kernels[idx]);
        TileCheck check{problem, SpecKey(specs[idx]), verify_case->Check(*bound)};
        const bool passed = check.result.ok() && check.result->passed;
        if (check.result.ok() && check.result->non_finite == 0) {
          summary.worst_error = std::max(summary.worst_error, check.result->relative_rms_error);
        }
        if (callbacks.on_check) callbacks.on_check(check);
        if (!passed) {
          ++summary.failures;
          if (!check.result.ok()) return check.result.status();
          if (fail_fast) {
            total.stopped = true;
            total.checks += summary.checks;
            total.failures += summary.failures;
            total.skipped += summary.skipped;
            return total;
          }
        }
      }
    }
    if (callbacks.on_variant) callbacks.on_variant(summary);
    total.checks += summary.checks;
    total.failures += summary.failures;
    total.skipped += summary.skipped;
  }
  return total;
}

Status TimeTileRuleSet(const TileRuleSet& rules, const CompilerOptions& compiler_options, int64_t m,
                       int64_t n, int64_t k, int repeats,
                       const std::function<void(const TileTimeReport& report)>& on_variant) {
  KSELECT_RETURN_IF_ERROR(cuda::UseDevice(0));
  const std::unique_ptr<KernelProvider> provider = CreateTileProvider(ProviderOptions{});
  const TileCompiler compiler(compiler_options);
  for (const TileBuildVariant& variant : rules.variants) {
    GemmProblem shape;
    shape.m = m, shape.n = n, shape.k = k;
    const GemmProblem p = WithVariant(shape, variant);
    std::vector<TileKernelSpec> specs;
    int64_t workspace = 0;
    for (const auto& c : rules.configs) {
      StatusOr<TileKernelSpec> spec = SpecForProblem(c, p);
      if (spec.ok() && CheckValid(*spec).ok() && CanImplement(*spec, p).ok()) {
        specs.push_back(*spec);
        workspace = std::max(workspace, static_cast<int64_t>(WorkspaceBytes(*spec, p)));
      }
    }
    const std::vector<StatusOr<TileBinary>> binaries = compiler.CompileAll(specs);
    KSELECT_ASSIGN_OR_RETURN(const std::vector<OperandSpec> specs_of_operands,
                             provider->Operands(p));
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<verify::DeviceOperands> operands,
                             verify::DeviceOperands::Create(specs_of_operands, workspace, 7));
    TileTimeReport report;
    report.problem = p;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!binaries[i].ok()) continue;
      StatusOr<std::unique_ptr<TileKernel>> kernel = TileKernel::Load(*binaries[i]);
      if (!kernel.ok()) continue;
      const std::unique_ptr<PreparedKernel> bound = BindTileKernel(p, **kernel);
      KSELECT_ASSIGN_OR_RETURN(const double ms,
                               timing::MedianLaunchMs(*bound, operands->operands(), repeats));
      report.configs.push_back({SpecKey(specs[i]), p.Flops() / (ms * 1e-3) / 1e12});
    }
    std::sort(report.configs.begin(), report.configs.end(),
              [](const TileTiming& x, const TileTiming& y) { return x.tflops > y.tflops; });
    report.cublaslt_tflops = TimeCublasLtPick(p, repeats);
    if (on_variant) on_variant(report);
  }
  return Status::Ok();
}

}  // namespace kselect::tile
