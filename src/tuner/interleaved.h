// What the tuner, the head to head and the search share on the device: verifying a config against
// the reference, timing contenders interleaved against a reference (slot 0), and a timed figure as
// JSON.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kselect/hardware.h"
#include "kselect/provider.h"
#include "kselect/tuner.h"
#include "kselect/verify.h"
#include "tuner/graph_timer.h"

namespace kselect::tuner {

// The device side of a comparison of the tile engine with cuBLASLt (the head to head, the
// search's measurements): both providers, the graph timer, the verifier and the device's profile.
struct TileAndCublasLt {
  std::unique_ptr<KernelProvider> cublaslt, tile;
  std::unique_ptr<GraphTimer> timer;
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

// A config and the provider that runs it.
struct Contender {
  KernelProvider* provider = nullptr;
  KernelConfig config;
};

struct InterleavedRun {
  std::vector<std::vector<double>> rounds;  // per contender, the ms of one launch in each round
  // Per contender: its median ms and the median over rounds of contender 0's ms over its ms.
  std::vector<InterleavedFigure> figures;
  double gpu_ms = 0;  // GPU time spent timing
};

// Prepares every contender for `problem` and times them interleaved (GraphTimer::TimeInterleaved)
// on `operands`; contender 0 is the reference.
StatusOr<InterleavedRun> TimeContenders(GraphTimer& timer, const Problem& problem,
                                        std::span<const Contender> contenders,
                                        const verify::DeviceOperands& operands, double batch_ms,
                                        int rounds);

// {config, name, median_ms, tflops, hbm_fraction, speedup_over_pick}: one timed figure.
nlohmann::json FigureJson(const InterleavedFigure& figure, const GemmProblem& problem,
                          double peak_gb_s);

}  // namespace kselect::tuner
