#include "providers/tile/tile_provider.h"

#include <cuda_runtime_api.h>

#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/text.h"
#include "kselect/catalogue.h"
#include "providers/tile/kernel_sources.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

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
  // Launches a kernel shared with the provider's module cache.
  PreparedTileKernel(GemmProblem problem, std::shared_ptr<const TileKernel> kernel,
                     int64_t workspace)
      : PreparedTileKernel(std::move(problem), *kernel, workspace) {
    shared_ = std::move(kernel);
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
  std::shared_ptr<const TileKernel> shared_;  // null when the kernel is borrowed
  const TileKernel* kernel_;
  int64_t workspace_;
};

// Loaded modules by SpecKey, least recently used evicted first: a bench worker prepares the same
// configs for problem after problem, and each load reads a cubin from disk and costs the driver
// milliseconds. Prepared kernels share their module, so eviction never unloads one in use.
class ModuleCache {
 public:
  explicit ModuleCache(size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const TileKernel> Find(const std::string& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, found->second);
    return found->second->second;
  }
  // Keeps `kernel` under `key` (or the one already there) and returns what is kept.
  std::shared_ptr<const TileKernel> Insert(const std::string& key,
                                           std::shared_ptr<const TileKernel> kernel) {
    if (std::shared_ptr<const TileKernel> kept = Find(key)) return kept;
    order_.emplace_front(key, std::move(kernel));
    index_.emplace(key, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const TileKernel>>;
  size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

// Modules a provider keeps loaded. A tile module is a few tens of KB of device memory; 1024 of
// them hold every config of the default rule set under several problem variants.
constexpr size_t kMaxLoadedModules = 1024;

// Caches, per instance: the rule set (parsed on first use, then kept: a rule-set file changed or
// removed later is not seen), which specs compiled (Enumerate compiles each spec once, not once
// per problem) and loaded modules (ModuleCache). Every method may be called from several threads
// at once: one mutex guards the caches and is held only to look up and insert, never while NVRTC
// compiles or the driver loads, so two threads may build the same spec and the first result is
// kept. Modules belong to the primary context of options.device; a caller that resets the device
// must create a new provider.
class TileProvider : public KernelProvider {
 public:
  explicit TileProvider(const ProviderOptions& options)
      : options_(options), compiler_(CompilerOptions{}), modules_(kMaxLoadedModules) {}

  Provider id() const override { return Provider::kTile; }
  std::string version() const override {
    uint64_t fingerprint = text::kFnv1a64Basis;
    for (const KernelSource* source : KernelSources()) {
      fingerprint = text::Fnv1a64(source->text, fingerprint);
    }
    return "tile engine (nvrtc " + NvrtcVersionText() + ", kernels " +
           FingerprintText(fingerprint) + ")";
  }

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
    KSELECT_ASSIGN_OR_RETURN(const TileRuleSet* rules, Rules());
    const GemmProblem& gemm = std::get<GemmProblem>(problem);
    std::vector<KernelConfig> configs;
    std::vector<std::string> spec_keys;
    std::vector<TileKernelSpec> to_compile;
    // The generated space, filtered by the caller (RuleSetFilter of the same rule set, as for
    // cuBLASLt's enumeration): the rules are applied once, in one place.
    for (const TileConfig& config : rules->space) {
      if (!keep.empty() && !keep.keep(KernelConfig(config))) continue;
      auto spec = BoundSpec(gemm, config);
      if (!spec.ok()) continue;  // cannot implement this problem: not in its catalogue
      configs.emplace_back(config);
      spec_keys.push_back(SpecKey(*spec));
      if (!CompiledBefore(spec_keys.back()).has_value()) to_compile.push_back(*spec);
    }
    // Compile every candidate not compiled before, in parallel: timing then only loads cached
    // cubins, and a config that does not compile is left out of the catalogue instead of failing
    // later.
    const auto binaries = compiler_.CompileAll(to_compile);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (size_t i = 0; i < to_compile.size(); ++i) {
        compiled_.emplace(SpecKey(to_compile[i]), binaries[i].ok());
      }
    }
    std::vector<KernelConfig> compiled;
    for (size_t i = 0; i < configs.size(); ++i) {
      if (CompiledBefore(spec_keys[i]).value_or(false)) compiled.push_back(configs[i]);
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
    KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<const TileKernel> kernel, LoadedKernel(spec));
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
  // The rule set, parsed on the first call.
  StatusOr<const TileRuleSet*> Rules() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (rules_.has_value()) return &*rules_;
    }
    // A failed parse is not kept: the next call reads the file again.
    KSELECT_ASSIGN_OR_RETURN(
        TileRuleSet rules,
        LoadRuleSet(options_.rule_set.empty() ? "default" : options_.rule_set,
                    options_.rules_dir.empty() ? DefaultRulesRoot() : options_.rules_dir));
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!rules_.has_value()) rules_ = std::move(rules);
    return &*rules_;
  }

  // Whether the spec compiled when Enumerate compiled it; nullopt when it has not yet.
  std::optional<bool> CompiledBefore(const std::string& spec_key) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = compiled_.find(spec_key);
    if (found == compiled_.end()) return std::nullopt;
    return found->second;
  }

  // The spec's module loaded in the device's primary context: from the module cache, else
  // compiled (or read from the on-disk cubin cache) and loaded.
  StatusOr<std::shared_ptr<const TileKernel>> LoadedKernel(const TileKernelSpec& spec) {
    const std::string key = SpecKey(spec);
    std::shared_ptr<const TileKernel> cached;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      cached = modules_.Find(key);
    }
    if (cached != nullptr) {
      // Launches need the module's context current on the calling thread, which may be new.
      KSELECT_RETURN_IF_ERROR(MakeContextCurrent());
      return cached;
    }
    KSELECT_ASSIGN_OR_RETURN(const TileBinary binary, compiler_.Compile(spec));
    KSELECT_RETURN_IF_ERROR(MakeContextCurrent());
    KSELECT_ASSIGN_OR_RETURN(std::unique_ptr<TileKernel> loaded, TileKernel::Load(binary));
    const std::lock_guard<std::mutex> lock(mutex_);
    return modules_.Insert(key, std::move(loaded));
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
  std::mutex mutex_;  // guards the members below
  std::optional<TileRuleSet> rules_;
  // SpecKey -> NVRTC succeeded; a spec that failed is not compiled again by this instance.
  std::unordered_map<std::string, bool> compiled_;
  ModuleCache modules_;
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
