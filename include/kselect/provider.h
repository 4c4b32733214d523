// KernelProvider: the one interface every source of GPU kernels implements (cuBLASLt now; the
// NVRTC tile engine and cuDNN later). A provider turns a Problem into typed KernelConfigs, says
// whether one config can run one problem (and why not), and prepares and launches a config on
// device buffers that the caller (kselect bench, later the dispatcher) owns.
//
// Lifecycle of one measurement, as the bench drives it:
//   provider = CreateProvider(Provider::kCublasLt, options)      // no GPU touched yet
//   provider->SupportsProblem(p)                                  // pure CPU check
//   configs  = provider->Enumerate(p)                             // every config that can run p
//   peers    = provider->HeuristicPicks(p, 8)                     // the library's own top picks
//   kernel   = provider->Prepare(p, configs[i])                   // kCannotImplement with reason
//   operands = provider->Operands(p)                              // buffers the caller allocates
//   kernel->Launch({buffers, workspace}, stream)                  // asynchronous, on `stream`
//
// Everything that needs a GPU returns kUnavailable on a host without one (binaries still start
// there). No CUDA type appears here: streams are opaque `void*` (a cudaStream_t), device
// pointers are `void*`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/kernel_config.h"
#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

// Settings shared by every provider instance; each provider reads what applies to it.
struct ProviderOptions {
  int device = 0;  // CUDA device ordinal the provider works on
  // Largest workspace a config may need; configs needing more cannot implement (bytes).
  int64_t max_workspace_bytes = 32ll << 20;
  // For providers that generate their configs from a rule set (the tile engine: a name looked up
  // under rules_dir/tile/, or a path); "" means the provider's default set.
  std::string rule_set;
  // The rules folder holding <provider>/<name>.json; "" means $KSELECT_RULES_DIR, else the
  // source tree's rules/.
  std::string rules_dir;
};

// How a launch uses one operand's memory.
enum class OperandAccess { kRead, kWrite, kReadWrite };
std::string_view OperandAccessName(OperandAccess access);  // "read", "write", "read_write"

// One device buffer a problem's launch takes, as the provider describes it: the caller (bench,
// verify, later the dispatcher) allocates and fills buffers from this alone, so a problem kind
// (GEMM, convolution) plugs in without the caller knowing its operands.
struct OperandSpec {
  std::string name;                  // role, unique within a problem: "a", "b", "c"
  DataType dtype = DataType::kBF16;  // element type (for filling and comparing)
  int64_t bytes = 0;                 // size of the buffer
  int64_t alignment = 1;             // required alignment of its device address (bytes)
  OperandAccess access = OperandAccess::kRead;
  bool operator==(const OperandSpec&) const = default;
};

// Device memory for one launch, owned by the caller: `buffers[i]` is the device address of the
// provider's OperandSpec i (same order), `workspace` at least the prepared kernel's
// WorkspaceBytes().
struct KernelOperands {
  std::vector<void*> buffers;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
};

// The operands of a GEMM, in launch order: A (m x k, read), B (k x n, read) and C (m x n),
// updated in place (C = alpha*A*B + beta*C: read and written when beta != 0, written otherwise).
// Batches are strided densely one after another; every address aligned to `alignment` bytes.
std::vector<OperandSpec> GemmOperandSpecs(const GemmProblem& problem, int64_t alignment);

// The operands of a convolution, in launch order, whatever the direction: "x" (input, n*di*hi*wi*c
// elements), "w" (weight, k*z*y*x*(c/g)) and "y" (output, n*do*ho*wo*k), channels innermost
// (NHWC / KYXC, or their 3D forms). The direction decides which one is written: y for fwd, x for
// bwd_data (dx from dy and w), w for bwd_weight (dw from x and dy).
std::vector<OperandSpec> ConvOperandSpecs(const ConvProblem& problem, int64_t alignment);

// OK when `operands` has one non-null, aligned buffer per spec and at least `workspace_bytes`
// of workspace; kInvalidArgument saying which operand is wrong otherwise.
Status CheckOperands(std::span<const OperandSpec> specs, const KernelOperands& operands,
                     int64_t workspace_bytes);

// A config bound to a problem, with every descriptor built once, ready to launch many times.
class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;
  // Workspace the launch needs (bytes); the caller passes at least this much.
  virtual int64_t WorkspaceBytes() const = 0;
  // Enqueues one launch on `stream` (a cudaStream_t) with the buffers of the provider's
  // Operands(problem), in that order; returns the launch error, if any. Asynchronous: faults
  // inside the kernel surface at the caller's next synchronisation.
  virtual Status Launch(const KernelOperands& operands, void* stream) = 0;
};

// Which configs a caller wants (a rule set, say: see RuleSetFilter in catalogue.h); an empty
// filter wants all. Enumerate skips the device checks of configs the filter rejects, which is
// what makes a small catalogue fast to enumerate.
struct ConfigFilter {
  // True when `config` is wanted.
  std::function<bool(const KernelConfig&)> keep;
  // Optional: false only when no config that equals `config` except in the fields named in
  // `varying` is wanted, so a provider can drop a whole family of variants (split-K factors,
  // swizzles) before checking any of them on the device.
  std::function<bool(const KernelConfig& config, std::span<const std::string_view> varying)>
      may_keep;

  bool empty() const { return !keep; }
};

class KernelProvider {
 public:
  virtual ~KernelProvider() = default;

  virtual Provider id() const = 0;
  // "cublaslt", "tile": the provider's name in datasets, models and messages.
  std::string_view name() const { return ProviderName(id()); }
  // What its kernels come from, for the records that datasets and models keep: the library's
  // version ("cublaslt 13.1.0"), or the engine's (NVRTC version and a fingerprint of the kernel
  // sources). Needs no GPU.
  virtual std::string version() const = 0;

  // Whether this provider can run problems of this kind, dtype and layout at all (CPU only, no
  // device query): the bench skips providers that answer false.
  virtual bool SupportsProblem(const Problem& problem) const = 0;

  // Every config this provider can run `problem` with on the device, each passing CanImplement,
  // in a stable order (the same device, library and problem give the same list). With `keep`,
  // only configs it accepts are returned (the order of the rest is unchanged).
  virtual StatusOr<std::vector<KernelConfig>> Enumerate(const Problem& problem,
                                                        const ConfigFilter& keep = {}) = 0;

  // OK when `config` runs `problem` on the device within the workspace limit; kCannotImplement
  // with the reason otherwise; kUnavailable without a GPU.
  virtual Status CanImplement(const Problem& problem, const KernelConfig& config) = 0;

  // Workspace `config` needs for `problem` (bytes); the same check as CanImplement.
  virtual StatusOr<int64_t> WorkspaceBytes(const Problem& problem, const KernelConfig& config) = 0;

  // The device buffers a launch of `problem` takes, in launch order (CPU only). kCannotImplement
  // for problems this provider does not run.
  virtual StatusOr<std::vector<OperandSpec>> Operands(const Problem& problem) const = 0;

  // Binds `config` to `problem`; kCannotImplement when CanImplement would refuse it.
  virtual StatusOr<std::unique_ptr<PreparedKernel>> Prepare(const Problem& problem,
                                                            const KernelConfig& config) = 0;

  // The provider's own heuristic ranking, best first, at most `count` configs (rank = index + 1).
  // Recorded as peers (Measurement::peer_rank). Providers without a heuristic return {}.
  virtual StatusOr<std::vector<KernelConfig>> HeuristicPicks(const Problem& problem, int count) = 0;

  // The provider's second heuristic, where the library has two (cuDNN: HeuristicPicks is mode A,
  // this mode B), best first, at most `count`; recorded as Measurement::peer_rank_b. {} when the
  // library has only one.
  virtual StatusOr<std::vector<KernelConfig>> SecondHeuristicPicks(const Problem& problem,
                                                                   int count) {
    (void)problem;
    (void)count;
    return std::vector<KernelConfig>{};
  }
};

// One row of the provider registry: the table CreateProvider looks providers up in.
struct ProviderEntry {
  Provider provider;
  const char* summary;
  std::unique_ptr<KernelProvider> (*create)(const ProviderOptions& options);
};

// Every provider that can run kernels in this build, in a fixed order.
std::span<const ProviderEntry> ProviderRegistry();

// The registry's provider for `provider`; kNotFound for providers that only ingest (ck_tile,
// ck_conv) or are not built yet. Creating touches no GPU.
StatusOr<std::unique_ptr<KernelProvider>> CreateProvider(Provider provider,
                                                         const ProviderOptions& options = {});

}  // namespace kselect
