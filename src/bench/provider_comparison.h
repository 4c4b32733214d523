// What the head to head, the search and the tuner share on the device: both providers with the
// graph timer (timing/graph_timer.h) and the verifier, verifying a config against the reference,
// and a timed figure as JSON.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kselect/hardware.h"
#include "kselect/provider.h"
#include "kselect/timing.h"
#include "kselect/verify.h"
#include "timing/graph_timer.h"

namespace kselect::bench {

// The device side of a comparison of the tile engine with cuBLASLt (the head to head, the
// search's measurements): both providers, the graph timer, the verifier and the device's profile.
struct TileAndCublasLt {
  std::unique_ptr<KernelProvider> cublaslt, tile;
  std::unique_ptr<timing::GraphTimer> timer;
  std::unique_ptr<verify::Verifier> verifier;
  HardwareProfile hardware;

  // kUnavailable without a GPU.
  static StatusOr<TileAndCublasLt> Create(const ProviderOptions& options);

  // The problem's operands as cuBLASLt describes them (the tile engine takes the same buffers),
  // in sets rotated past `rotate_bytes` (0 = 2 x L2), with `workspace_bytes` of workspace.
  struct Operands {
    std::vector<OperandSpec> specs;
    std::unique_ptr<verify::DeviceOperands> rotating;
  };
  StatusOr<Operands> RotatingOperands(const GemmProblem& problem, int64_t workspace_bytes,
                                      int64_t rotate_bytes) const;
};

// One config checked against the reference.
struct DeviceVerdict {
  bool checked = false;  // the comparison ran (false: the config failed to prepare or launch)
  bool passed = false;
  std::string detail;  // CheckResult::ToString(), or why the comparison did not run
};

// verify::CheckConfig, with the failure that leaves the CUDA context unusable (a fault) as the
// only error Status: callers stop there. Any other failure is a verdict that did not pass.
StatusOr<DeviceVerdict> VerifyConfig(KernelProvider& provider, const KernelConfig& config,
                                     verify::VerifyCase& check);

// {config, name, median_ms, tflops, hbm_fraction, speedup_over_pick}: one timed figure.
nlohmann::json FigureJson(const InterleavedFigure& figure, const GemmProblem& problem,
                          double peak_gb_s);

}  // namespace kselect::bench
