// First-use timing on the device (timing/first_use.h): a contender whose warm-up launch is far
// slower than the fastest's leaves after its warm-up instead of running every timed batch.
#include "timing/first_use.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kselect::timing {
namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// A kernel stand-in: each launch clears `bytes` of `buffer` (its time grows with the bytes) and
// is counted.
class MemsetKernel final : public PreparedKernel {
 public:
  MemsetKernel(void* buffer, int64_t bytes) : buffer_(buffer), bytes_(bytes) {}
  int64_t WorkspaceBytes() const override { return 0; }
  Status Launch(const KernelOperands&, void* stream) override {
    ++launches;
    if (cudaMemsetAsync(buffer_, launches & 0xff, static_cast<size_t>(bytes_),
                        static_cast<cudaStream_t>(stream)) != cudaSuccess) {
      return InternalError("cudaMemsetAsync failed");
    }
    return Status::Ok();
  }
  int launches = 0;

 private:
  void* buffer_;
  int64_t bytes_;
};

TEST(FirstUseTimingGpuTest, AHopelessContenderLeavesAfterItsWarmUp) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU on this host";
  const int64_t small = int64_t{1} << 20, large = int64_t{8} << 30;  // ~2-3 ms a launch
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, static_cast<size_t>(large)), cudaSuccess);
  void* operand = nullptr;
  ASSERT_EQ(cudaMalloc(&operand, 256), cudaSuccess);
  MemsetKernel fast(buffer, small), faster(buffer, small / 2), hopeless(buffer, large);
  const std::vector<OperandSpec> specs = {{"a", DataType::kBF16, 256, 256, OperandAccess::kRead}};
  KernelOperands operands;
  operands.buffers = {operand};
  StatusOr<std::vector<TimedContender>> order = TimeContendersAtFirstUse(
      {{"fast", &fast}, {"hopeless", &hopeless}, {"faster", &faster}}, specs, operands,
      /*cold_l2=*/false, /*graph_batches=*/false, nullptr);
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  ASSERT_EQ(order->size(), 3u);
  EXPECT_EQ(order->back().key, "hopeless");  // last, with its warm-up figure
  EXPECT_GT(order->back().median_ms, 0.5);
  EXPECT_EQ(hopeless.launches, 2);  // the warm-up alone
  EXPECT_GT(fast.launches, 2);      // timed batches too
  EXPECT_GT(faster.launches, 2);
  // Two left hopeless: the one that is not comes first, untimed further, with its warm-up figure.
  MemsetKernel alone(buffer, small), slow_a(buffer, large), slow_b(buffer, large);
  order = TimeContendersAtFirstUse({{"slow_a", &slow_a}, {"alone", &alone}, {"slow_b", &slow_b}},
                                   specs, operands, false, false, nullptr);
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  ASSERT_EQ(order->size(), 3u);
  EXPECT_EQ(order->front().key, "alone");
  EXPECT_EQ(alone.launches, 2);
  EXPECT_EQ(slow_a.launches + slow_b.launches, 4);
  cudaFree(operand);
  cudaFree(buffer);
}

}  // namespace
}  // namespace kselect::timing
