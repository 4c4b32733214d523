// The tile engine: kselect's own GEMM kernels (the CK Tile analogue). A typed TileConfig plus the
// problem-side facts that change the code (dtypes, layouts, operand alignment) form a
// TileKernelSpec; the engine turns a spec into CUDA C++ source, compiles it with NVRTC into a cubin
// (cached on disk), and launches a compiled kernel on device pointers. Nothing here needs a GPU
// except TileKernel::Load and Launch.
//
// Families (TileConfig::pipeline):
//   multistage  cp.async -> shared-memory ring (stages deep) -> ldmatrix -> mma.sync m16n8k16,
//               any M/N/K through masking, split-K through an fp32 workspace and a reduce kernel.
//   small_m     memory-bound decode GEMMs (M <= tile_m <= 16): CUDA-core FMAs with 16-byte loads
//               along B's contiguous dimension, split-K as above.
//   decode      memory-bound GEMMs with <= tile_n tokens in n (nn.Linear through cuBLAS TN) or m:
//               16-byte streaming loads of k-contiguous weights, mma.sync with a K permutation
//               that makes each load a fragment, K split over warps and blocks, PDL launches.
//   warp_specialized  sm_90a: a producer warpgroup issues TMA loads into a stages-deep ring of
//               128-byte-swizzled tiles (mbarriers), 1-2 consumer warpgroups issue wgmma m64nNk16
//               (transpose bits for MN-major A/B, so all four layouts); contiguous extents must be
//               multiples of 8 (16-byte TMA strides); split-K as above. Clusters and the
//               persistent scheduler are not generated yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kselect/catalogue.h"
#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect::tile {

// Everything that changes a tile kernel's source: the config and the problem-side facts.
// Alignments are in elements (8, 4, 2 or 1) and bound the width of global loads and stores.
struct TileKernelSpec {
  TileConfig config;
  DataType input = DataType::kBF16;   // A and B (bf16 or fp16)
  DataType output = DataType::kBF16;  // C (bf16, fp16 or fp32); accumulation is always fp32
  GemmLayout layout;
  int32_t align_a = 8, align_b = 8, align_c = 1;

  bool operator==(const TileKernelSpec&) const = default;
};

// "tile:...|in=bf16,out=bf16,layout=rcr,align=8.8.1": the identity of a spec (cache keys, logs).
std::string SpecKey(const TileKernelSpec& spec);

// The spec that runs `problem` with `config`: the widest alignments that the problem's leading
// dimensions (packed: ld = the contiguous extent) allow. kCannotImplement for dtypes the engine
// does not generate (A and B must be one of bf16/fp16, C one of bf16/fp16/fp32, accumulate fp32).
StatusOr<TileKernelSpec> SpecForProblem(const TileConfig& config, const GemmProblem& problem);

// A named validity rule: a config (with its problem-side facts) that breaks it cannot be compiled
// or would not fit on the device. `description` says why the rule exists.
struct ValidityRule {
  const char* name;
  const char* description;
  // Empty when the spec passes, else what is wrong ("tile_m 100 is not a multiple of ...").
  std::function<std::string(const TileKernelSpec&)> check;
};
// Every rule, in the order they are checked.
const std::vector<ValidityRule>& ValidityRules();
// `config` with the fields its pipeline derives from others set as the validity rules require:
// warp_specialized's consumer warpgroups (tile_m / 64, warps_n 1) and wgmma shape (64 x tile_n x
// 16). A search that moves tile_n alone then proposes a kernel that exists instead of one with a
// stale instruction shape. Other pipelines' fields are independent: returned unchanged.
TileConfig WithDerivedFields(TileConfig config);
// OK, or kInvalidArgument "validity rule <name>: <what is wrong>" for the first rule broken.
Status CheckValid(const TileKernelSpec& spec);

// OK when the (valid) spec's kernel computes `problem` correctly: dtypes and layout match, the
// problem's sizes respect the spec's alignments and unmasked dimensions. kCannotImplement names
// the reason.
Status CanImplement(const TileKernelSpec& spec, const GemmProblem& problem);

// Launch resources of a spec's kernel.
struct LaunchShape {
  int32_t threads = 0;       // per block
  int32_t shared_bytes = 0;  // dynamic shared memory per block
};
LaunchShape LaunchShapeOf(const TileKernelSpec& spec);
// Bytes of fp32 workspace a launch of `problem` needs (0 without split-K or stream-K; stream-K's
// for the largest grid it may run, kMaxStreamKCtas).
size_t WorkspaceBytes(const TileKernelSpec& spec, const GemmProblem& problem);

// Stream-K (TileScheduler::kStreamK) over a grid of `clusters` clusters: work ids below dp_tiles
// (whole waves) run whole, the next sk_tiles (a last wave at most three quarters full, or all
// tiles below a wave) are split evenly by k iterations over the first sk_clusters clusters: one
// per split tile, more where each still gets kMinStreamKIterations k tiles
// (warp_specialized.cuh). The workspace holds flag_words int flags (zeroed before each launch),
// then one fp32 partial tile per CTA.
struct StreamKLayout {
  int32_t dp_tiles = 0, sk_tiles = 0, sk_clusters = 0, flag_words = 0;
  size_t workspace_bytes = 0;
};
StreamKLayout StreamKLayoutOf(const TileConfig& c, const GemmProblem& problem, int64_t clusters);
// Its grid, in clusters: every resident one, but at most kMaxStreamKCtas CTAs (which bounds the
// workspace); below a wave, the tiles times the parts each is split into (as many as fit, each
// of at least kMinStreamKIterations k tiles).
inline constexpr int64_t kMaxStreamKCtas = 160;
inline constexpr int64_t kMinStreamKIterations = 16;
int64_t StreamKClusters(const TileConfig& c, const GemmProblem& problem, int64_t resident_clusters);

// The kernels' entry points in every generated module.
inline constexpr const char* kGemmKernelName = "kselect_tile_gemm";
inline constexpr const char* kSplitKReduceKernelName = "kselect_tile_splitk_reduce";

// CUDA C++ source of the spec's module (no #include: the source is self-contained, so NVRTC
// compiles it without the toolkit headers). The spec must pass CheckValid.
std::string GenerateSource(const TileKernelSpec& spec);

// A compiled module.
struct TileBinary {
  TileKernelSpec spec;
  std::vector<char> cubin;
  std::string cache_key;  // sha256 hex of config key, source, options and arch
  bool from_cache = false;
  double compile_seconds = 0;  // NVRTC time (0 on a cache hit)
};

struct CompilerOptions {
  std::string arch = "sm_90a";  // NVRTC --gpu-architecture (a real architecture: a cubin is kept)
  // On-disk cubin cache; empty disables it. Default: $KSELECT_CACHE_DIR/tile, else
  // $XDG_CACHE_HOME/kselect/tile, else $HOME/.cache/kselect/tile.
  std::string cache_dir = DefaultCacheDir();
  int threads = 0;  // parallel compiles in CompileAll; 0 = hardware concurrency
  std::vector<std::string> extra_options;  // appended to NVRTC's options (e.g. "-lineinfo")

  static std::string DefaultCacheDir();
};

// NVRTC compilation with an on-disk cache keyed by sha256(spec key, source, options, arch);
// entries are written atomically, so concurrent processes may share a cache folder.
class TileCompiler {
 public:
  explicit TileCompiler(CompilerOptions options = {});

  // Checks validity, generates, and returns the cached cubin or compiles (and caches) it.
  StatusOr<TileBinary> Compile(const TileKernelSpec& spec) const;
  // Compile for each spec, `options.threads` at a time; results in the order of `specs`.
  std::vector<StatusOr<TileBinary>> CompileAll(const std::vector<TileKernelSpec>& specs) const;

  // The NVRTC options every tile module is compiled with.
  std::vector<std::string> NvrtcOptions() const;
  const CompilerOptions& options() const { return options_; }

 private:
  CompilerOptions options_;
};

// The pointers and scalars of one GEMM launch. Matrices are packed (leading dimension = the
// contiguous extent) and batches are contiguous.
struct GemmArguments {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;          // read when beta != 0, then written: C = alpha*A*B + beta*C
  void* workspace = nullptr;  // WorkspaceBytes() bytes, 16-byte aligned (nullptr when 0)
  void* stream = nullptr;     // a CUstream / cudaStream_t; nullptr = the legacy default stream
};

// A compiled module loaded into the current CUDA context (needs a GPU and the driver).
class TileKernel {
 public:
  ~TileKernel();
  TileKernel(const TileKernel&) = delete;
  TileKernel& operator=(const TileKernel&) = delete;

  // kUnavailable without a driver; kInvalidArgument when the cubin does not load (wrong arch).
  static StatusOr<std::unique_ptr<TileKernel>> Load(const TileBinary& binary);

  // Launches asynchronously on args.stream. Checks CanImplement and pointer alignment first.
  Status Launch(const GemmProblem& problem, const GemmArguments& args) const;
  const TileKernelSpec& spec() const { return spec_; }

 private:
  TileKernel() = default;
  TileKernelSpec spec_;
  void* module_ = nullptr;     // CUmodule
  void* gemm_ = nullptr;       // CUfunction
  void* reduce_ = nullptr;     // CUfunction
  int resident_clusters_ = 0;  // persistent scheduler: clusters of this kernel resident at once
};

// One problem-side variant `tile build` compiles each config for.
struct TileBuildVariant {
  DataType input = DataType::kBF16;
  DataType output = DataType::kBF16;
  GemmLayout layout;
  int32_t align_a = 8, align_b = 8, align_c = 1;
};

// A named rule set, rules/tile/<name>.json: a kselect.rules file (include/kselect/catalogue.h)
// whose "generator" holds the build variants and generator groups (lists of values per field):
//   "generator": {"variants": [{"input": "bf16", "output": "bf16", "layout": "rcr",
//                               "align": [8, 8, 1]}, ...],
//                 "groups": [{"pipeline": "multistage", "tile": [[128, 128, 32]],
//                             "warps": [[2, 2, 1]], "stages": [3, 4], ...}, ...]}
// The groups' cross product, keeping configs that pass the validity rules under at least one
// build variant, is what the provider enumerates; the rule set's "rules" filter it, as they
// filter cuBLASLt's enumeration, and the result is the catalogue.
struct TileRuleSet {
  std::string name;
  std::string path;
  RuleSet rules;                  // the file as read: filter rules, fingerprint, generator
  std::vector<TileConfig> space;  // generated and buildable, de-duplicated, in generation order
  // The catalogue: `space` less what the rules without a "when" condition drop (rules with one
  // apply per problem, in the provider's Enumerate filter).
  std::vector<TileConfig> configs;
  std::vector<TileBuildVariant> variants;
  int64_t generated = 0;  // before the validity rules
  // Validity rule name (or "rule <name>" for a filter rule) -> configs dropped.
  std::vector<std::pair<std::string, int64_t>> rejected_by_rule;
};

// The generator's groups, each expanded into its cross product (before de-duplication, the
// validity rules and the filter rules), in file order: what GenerateRuleSet starts from, and the
// field values a search over the rule set's space combines (include/kselect/search.h).
StatusOr<std::vector<std::vector<TileConfig>>> ExpandGeneratorGroups(const RuleSet& rules);
// Expands `rules.generator` and applies the rules. Unknown keys and bad values are ParseErrors
// naming the JSON path.
StatusOr<TileRuleSet> GenerateRuleSet(const RuleSet& rules);
// `name_or_path` is a file path (contains '/' or ends in .json) or a set name looked up as
// <rules_dir>/tile/<name>.json (FindRuleSetByNameOrPath), then generated.
StatusOr<TileRuleSet> LoadRuleSet(const std::string& name_or_path, const std::string& rules_dir);
// The rules folder (holding <provider>/<name>.json): $KSELECT_RULES_DIR, else
// $KSELECT_DATA_DIR/rules, else an installed binary's <prefix>/share/kselect/rules, else the
// source tree's rules/ (core/data_files.h).
std::string DefaultRulesRoot();
// Every valid (config, variant) spec of a rule set, configs outer.
std::vector<TileKernelSpec> BuildSpecs(const TileRuleSet& rules);

}  // namespace kselect::tile
