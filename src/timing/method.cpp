// The CPU-side rules of the timing method (kselect/timing.h): how many operand sets rotate past
// L2, how many launches fill a batch.
#include <algorithm>
#include <cmath>

#include "kselect/timing.h"

namespace kselect {

int64_t RotatingSetCount(std::span<const OperandSpec> operands, int64_t rotate_bytes,
                         int64_t max_sets) {
  int64_t set_bytes = 0;
  for (const OperandSpec& operand : operands) set_bytes += operand.bytes;
  set_bytes = std::max<int64_t>(set_bytes, 1);
  // One more than reaches the target when a set is smaller than it, so the set read next is
  // never one still in L2.
  const int64_t sets = std::max<int64_t>(
      1, (rotate_bytes + set_bytes - 1) / set_bytes + (set_bytes < rotate_bytes ? 1 : 0));
  return std::min(sets, std::max<int64_t>(max_sets, 1));
}

int LaunchesPerBatch(double target_ms, double estimate_ms, int max_launches) {
  return std::clamp(static_cast<int>(std::ceil(target_ms / std::max(estimate_ms, 1e-4))), 1,
                    max_launches);
}

}  // namespace kselect
