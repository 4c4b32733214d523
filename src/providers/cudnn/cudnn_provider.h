// The cuDNN provider: grouped convolution (fwd, bwd_data, bwd_weight; 2D and 3D; channels-last;
// bf16 and fp16) through cuDNN 9's graph API with cudnn-frontend. Its config space is every
// engine of the operation graph times the product of each engine's knob values (KNOB_INFO:
// minimum, maximum, stride); a config is implementable when its execution plan builds. Its two
// peers are cuDNN's heuristics: HeuristicPicks is mode A, SecondHeuristicPicks mode B, each the
// supported configs in the heuristic's order.
//
// cuDNN is loaded at run time (cudnn_library.h): without it, or without a GPU, every device call
// answers kUnavailable and the rest of kselect works.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kselect/provider.h"

namespace kselect::cudnn {

// The registry's factory. Touches no GPU and loads no library: both happen on first use.
std::unique_ptr<KernelProvider> CreateCudnnProvider(const ProviderOptions& options);

// Whether kselect runs this problem through cuDNN: a valid channels-last ConvProblem in bf16 or
// fp16 with fp32 accumulation. CPU only.
bool CudnnSupportsProblem(const Problem& problem);

// Most configs tried per engine. Engines whose knob product is larger are sampled evenly over
// the product (deterministically); the first kHeuristicConfigsInSpace configs each heuristic mode
// lists are always in the space. Engines that compile their kernels at plan build (cuDNN's
// RUNTIME_COMPILATION note) get one config beside the heuristics' own: each costs a compile of
// about a second, and on the H200 the evenly spread split-K slice counts of two such engines
// (bwd_weight 69, bwd_data 77) ran past the bench's 30 s watchdog on 12 small problems
// (docs/lab/cudnn_provider.md).
inline constexpr int64_t kMaxConfigsPerEngine = 64;
inline constexpr int64_t kMaxConfigsPerRuntimeCompiledEngine = 1;
inline constexpr int64_t kHeuristicConfigsInSpace = 16;

// The knob settings of one engine, every combination of its knobs' values in a fixed order
// (first knob slowest), evenly thinned to at most `limit` when there are more. Each knob is
// (type, minimum, maximum, stride); a stride below 1 counts as 1. CPU only.
struct KnobRange {
  int32_t type = 0;
  int64_t minimum = 0, maximum = 0, stride = 1;
};
std::vector<std::vector<std::pair<int32_t, int64_t>>> KnobCombinations(
    const std::vector<KnobRange>& knobs, int64_t limit);
// How many combinations the knobs have (saturating at 2^40).
int64_t KnobProduct(const std::vector<KnobRange>& knobs);

// What enumerating one problem found per engine: where the space and the build time come from.
struct EngineSurvey {
  int64_t engine_id = 0;
  bool runtime_compiled = false;
  int64_t knob_combinations = 0;  // the engine's whole knob product
  int64_t tried = 0;              // configs whose plan was built (after thinning)
  int64_t built = 0;              // of those, plans that built within the workspace limit
  double build_seconds = 0;       // wall time of making and building them
  std::string first_refusal;      // why the first refused config was refused
};
// Enumerates `problem` (as Enumerate does) and returns the survey of every engine the operation
// graph offers, in engine order, unsupported engines included (tried 0).
StatusOr<std::vector<EngineSurvey>> SurveyEngines(KernelProvider& provider, const Problem& problem);

// A built execution plan as bytes (cudnn-frontend's serialised form), so a run loads it with
// LoadSerializedPlan instead of building it again. The plan is tied to the cuDNN version and GPU
// that built it.
StatusOr<std::vector<uint8_t>> SerializePlan(KernelProvider& provider, const Problem& problem,
                                             const KernelConfig& config);
// A kernel from SerializePlan's bytes, launched like Prepare's; kInvalidArgument when the bytes
// are not a plan for `problem`, kUnavailable without cuDNN or a GPU.
StatusOr<std::unique_ptr<PreparedKernel>> LoadSerializedPlan(KernelProvider& provider,
                                                             const Problem& problem,
                                                             const std::vector<uint8_t>& bytes);

}  // namespace kselect::cudnn
