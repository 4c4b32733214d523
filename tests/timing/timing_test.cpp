// The CPU-side rules of the timing method (kselect/timing.h); the device side runs in the GPU
// tests of its callers (dispatch, tuner, bench worker, verify).
#include "kselect/timing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kselect {
namespace {

// The bench's rotation, which cold-L2 first-use timing sizes its copies of the read operands
// by too: sets past the rotation bytes (one more than reaches them), never more than the cap,
// one set when a set alone is past them.
TEST(RotatingSetCountTest, SetsExceedTheRotationBytes) {
  const int64_t mb = 1 << 20;
  const int64_t rotate = 2 * 60 * mb;  // 2 x an H200's L2
  auto read = [](int64_t a, int64_t b) {
    return std::vector<OperandSpec>{{"a", DataType::kBF16, a, 256, OperandAccess::kRead},
                                    {"b", DataType::kBF16, b, 256, OperandAccess::kRead}};
  };
  // 4096x4096 bf16 weights (32 MiB) with a 1-token activation: 4 sets reach 120 MiB, 5 pass it.
  EXPECT_EQ(RotatingSetCount(read(32 * mb, 8192), rotate), 5);
  for (const int64_t a : {int64_t{1}, 3 * mb, 7 * mb, 32 * mb, 59 * mb, 61 * mb, 120 * mb}) {
    const int64_t sets = RotatingSetCount(read(a, 1), rotate);
    EXPECT_GE(sets, 1) << a;
    EXPECT_LE(sets, 512) << a;
    if (sets < 512) {
      EXPECT_GT(sets * (a + 1), rotate) << a;
    }
  }
  EXPECT_EQ(RotatingSetCount(read(1, 1), rotate), 512);      // tiny operands: the cap
  EXPECT_EQ(RotatingSetCount(read(3 * mb, 0), rotate), 41);  // 123 MiB
  EXPECT_EQ(RotatingSetCount(read(rotate, 1), rotate), 1);   // already past: no copies
  EXPECT_EQ(RotatingSetCount(read(1, 1), rotate, 16), 16);   // a caller's cap
}

// Batches reach the target GPU time, rounded up, within [1, max].
TEST(LaunchesPerBatchTest, FillsTheTargetWithinBounds) {
  EXPECT_EQ(LaunchesPerBatch(0.5, 0.125, 256), 4);
  EXPECT_EQ(LaunchesPerBatch(0.5, 0.3, 256), 2);     // 1.67 rounds up
  EXPECT_EQ(LaunchesPerBatch(0.5, 2.0, 256), 1);     // a slow kernel: one launch
  EXPECT_EQ(LaunchesPerBatch(0.5, 0.0, 256), 256);   // no estimate: the cap
  EXPECT_EQ(LaunchesPerBatch(0.5, -1.0, 16), 16);    // a bad estimate never divides by <= 0
  EXPECT_EQ(LaunchesPerBatch(0.2, 0.001, 128), 128);
}

}  // namespace
}  // namespace kselect
