// First-use timing for the layer's model decisions (select mode): the model's top configs and
// the application's own choice (the vendor's pick) timed interleaved on the call's operands,
// through the timing module (timing/first_use.h: scratch copies of the written operands, reads
// rotated past 2 x L2, medians of 7 batches), and the vendor guard's rule (selector.h,
// ReplacesVendorPick): a config replaces the vendor's pick only when faster by more than the
// margin.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "kselect/provider.h"
#include "kselect/status.h"
#include "layer/lt_call.h"

namespace kselect::layer {

// One contender: a launch of the call on given buffers (the call's operand order).
struct LayerContender {
  std::string name;
  std::function<cublasStatus_t(const KernelOperands&, cudaStream_t)> launch;
};

struct FirstUseOutcome {
  size_t winner = 0;  // index into the contenders; 0 (the vendor's pick) when it was kept
  double vendor_ms = 0;
  double winner_ms = 0;
  int timed = 0;  // contenders that ran in the timed rounds
};

// The operands of `call` in launch order: A and B read; C and D as one buffer ("c", written, and
// read when beta != 0) when the call updates in place, else C read and D written. Sizes follow
// the leading dimensions. Batched calls are not timed (kCannotImplement).
StatusOr<std::vector<OperandSpec>> CallOperandSpecs(const LtCall& call, bool c_is_d);

// Times `contenders` (index 0: the vendor's pick) on `operands`, returns the one to run.
// Capture-unsafe: the caller checks the stream is not being captured.
StatusOr<FirstUseOutcome> TimeAtFirstUse(std::vector<LayerContender> contenders,
                                         const std::vector<OperandSpec>& specs,
                                         const KernelOperands& operands, double vendor_margin,
                                         cudaStream_t stream);

}  // namespace kselect::layer
