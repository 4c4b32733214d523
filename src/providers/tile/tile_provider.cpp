#include "providers/tile/tile_provider.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "providers/tile/tile_engine.h"

namespace kselect::tile {
namespace {

// The tile engine reports broken validity rules as kInvalidArgument; for a provider they mean
// "this config cannot run this problem".
Status AsCannotImplement(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kCannotImplement) return s;
  return CannotImplementError(s.message());
}

// The tile kernels read A and B 16 bytes at a time (cp.async) and need that alignment
// (TileKernel::Launch checks it); C and the workspace need less, 16 covers them all.
constexpr int64_t kOperandAlignment = 16;

class PreparedTileKernel : public PreparedKernel {
 public:
  PreparedTileKernel(GemmProblem problem, std::unique_ptr<TileKernel> kernel, int64_t workspace)
      : PreparedTileKernel(std::move(problem), *kernel, workspace) {
    owned_ = std::move(kernel);
  }
  // Launches `kernel`, which the caller keeps alive as long as this object.
  PreparedTileKernel(GemmProblem problem, const TileKernel& kernel, int64_t workspace)
      : problem_(std::move(problem)),
        operands_(GemmOperandSpecs(problem_, kOperandAlignment)),
        kernel_(&kernel),
        workspace_(workspace) {}

  int64_t WorkspaceBytes() const override { return workspace_; }

  Status Launch(const KernelOperands& operands, void* stream) override {
    KSELECT_RETURN_IF_ERROR(CheckOperands(operands_, operands, workspace_));
    // Operands are A, B and C (GemmOperandSpecs); the tile kernels update C in place.
    GemmArguments args;
    args.a = operands.buffers[0];
    args.b = operands.buffers[1];
    args.c = operands.buffers[2];
    args.workspace = workspace_ > 0 ? operands.workspace : nullptr;
    args.stream = stream;
    return kernel_->Launch(problem_, args);
  }

 private:
  GemmProblem problem_;
  std::vector<OperandSpec> operands_;
  std::unique_ptr<TileKernel> owned_;  // null when the kernel is borrowed
  const TileKernel* kernel_;
  int64_t workspace_;
};

class TileProvider : public KernelProvider {
 public:
  explicit TileProvider(const ProviderOptions& options)
      : options_(options), compiler_(CompilerOptions{}) {}

  Provider id() const override { return Provider::kTile; }

  bool SupportsProblem(const Problem& problem) const override {
    const auto* g = std::get_if<GemmProblem>(&problem);
    if (g == nullptr) return false;
    const bool input =
        (g->dtype_a == DataType::kBF16 || g->dtype_a == DataType::kF16) && g->dtype_b == g->dtype_a;
    const bool output = g->dtype_c == DataType::kBF16 || g->dtype_c == DataType::kF16 ||
                        g->dtype_c == DataType::kF32;
    return input && output && g->compute == DataType::kF32;
  }

  StatusOr<std::vector<KernelConfig>> Enumerate(const Problem& problem,
                                                const ConfigFilter& keep) override {
    if (!SupportsProblem(problem)) return std::vector<KernelConfig>{};
    KSELECT_ASSIGN_OR_RETURN(const TileRuleSet rules, Rules());
    const GemmProblem& gemm = std::get<GemmProblem>(problem);
    std::vector<KernelConfig> configs;
    std::vector<TileKernelSpec> specs;
    // The generated space, filtered by the caller (RuleSetFilter of the same rule set, as for
    // cuBLASLt's enumeration): the rules are applied once, in one place.
    for (const TileConfig& config : rules.space) {
      if (!keep.empty() && !keep.keep(KernelConfig(config))) continue;
      auto spec = BoundSpec(gemm, config);
      if (!spec.ok()) continue;  // cannot implement this problem: not in its catalogue
      configs.emplace_back(config);
      specs.push_back(*spec);
    }
    // Compile every candidate up front, in parallel: timing then only loads cached cubins, and
    // a config that does not compile is left out of the catalogue instead of failing later.
    const auto binaries = compiler_.CompileAll(specs);
    std::vector<KernelConfig> compiled;
    for (size_t i = 0; i < configs.size(); ++i) {
      if (binaries[i].ok()) compiled.push_back(configs[i]);
    }
    return compiled;
  }

  Status CanImplement(const Problem& problem, const KernelConfig& config) override {
    return BoundSpecOf(problem, config).status();
  }

  StatusOr<int64_t> WorkspaceBytes(const Problem& problem, const KernelConfig& config) override {
    KSELECT_ASSIGN_OR_RETURN(const TileKernelSpec spec, BoundSpecOf(problem, config));
    return static_cast<int64_t>(tile::WorkspaceBytes(spec, std::get<GemmProblem>(problem)));
  }

  StatusOr<std::unique_ptr<PreparedKernel>> Prepare(const Problem& problem,
                                                    const KernelConfig& config) override {
    KSELECT_ASSIGN_OR_RETURN(const TileKernelSpec spec, BoundSpecOf(problem, config));
    const GemmProblem& gemm = std::get<GemmProblem>(problem);
    KSELECT_ASSIGN_OR_RETURN(const TileBinary binary, compiler_.Compile(spec));
    KSELECT_RETURN_IF_ERROR(MakeContextCurrent());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<TileKernel> kernel, TileKernel::Load(binary));
    return std::unique_ptr<PreparedKernel>(std::make_unique<PreparedTileKernel>(
        gemm, std::move(kernel), static_cast<int64_t>(tile::WorkspaceBytes(spec, gemm))));
  }

  StatusOr<std::vector<OperandSpec>> Operands(const Problem& problem) const override {
    if (!SupportsProblem(problem)) {
      return CannotImplementError("the tile engine runs bf16/fp16 GEMMs only");
    }
    return GemmOperandSpecs(std::get<GemmProblem>(problem), kOperandAlignment);
  }

  // The tile engine has no heuristic of its own: the model is what ranks its configs.
  StatusOr<std::vector<KernelConfig>> HeuristicPicks(const Problem&, int) override {
    return std::vector<KernelConfig>{};
  }

 private:
  StatusOr<TileRuleSet> Rules() const {
    return LoadRuleSet(options_.rule_set.empty() ? "default" : options_.rule_set,
                       options_.rules_dir.empty() ? DefaultRulesRoot() : options_.rules_dir);
  }

  // Loading a module needs a current context: make the device's primary context current, as
  // the CUDA runtime would on its first call (callers that already use the runtime have one).
  Status MakeContextCurrent() const {
    cudaError_t e = cudaSetDevice(options_.device);
    if (e == cudaSuccess) e = cudaFree(nullptr);
    if (e != cudaSuccess) {
      return UnavailableError("CUDA device " + std::to_string(options_.device) + ": " +
                              cudaGetErrorString(e));
    }
    return Status::Ok();
  }

  // The spec that runs `problem` with `config`, or why none does (validity rules, problem facts,
  // the workspace limit).
  StatusOr<TileKernelSpec> BoundSpec(const GemmProblem& problem, const TileConfig& config) const {
    auto spec = SpecForProblem(config, problem);
    if (!spec.ok()) return AsCannotImplement(spec.status());
    KSELECT_RETURN_IF_ERROR(AsCannotImplement(CheckValid(*spec)));
    KSELECT_RETURN_IF_ERROR(AsCannotImplement(tile::CanImplement(*spec, problem)));
    const auto workspace = static_cast<int64_t>(tile::WorkspaceBytes(*spec, problem));
    if (workspace > options_.max_workspace_bytes) {
      return CannotImplementError("needs " + std::to_string(workspace) +
                                  " bytes of workspace, the limit is " +
                                  std::to_string(options_.max_workspace_bytes));
    }
    return *spec;
  }

  StatusOr<TileKernelSpec> BoundSpecOf(const Problem& problem, const KernelConfig& config) const {
    const auto* gemm = std::get_if<GemmProblem>(&problem);
    const auto* tile = std::get_if<TileConfig>(&config);
    if (gemm == nullptr || tile == nullptr || !SupportsProblem(problem)) {
      return CannotImplementError("the tile engine runs bf16/fp16 GEMMs with tile configs only");
    }
    return BoundSpec(*gemm, *tile);
  }

  ProviderOptions options_;
  TileCompiler compiler_;
};

}  // namespace

std::unique_ptr<PreparedKernel> BindTileKernel(const GemmProblem& problem,
                                               const TileKernel& kernel) {
  const auto workspace = static_cast<int64_t>(tile::WorkspaceBytes(kernel.spec(), problem));
  return std::make_unique<PreparedTileKernel>(problem, kernel, workspace);
}

std::unique_ptr<KernelProvider> CreateTileProvider(const ProviderOptions& options) {
  return std::make_unique<TileProvider>(options);
}

}  // namespace kselect::tile
