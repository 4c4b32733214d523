#include "cuda/gpu_state.h"

#include <gtest/gtest.h>

#include "kselect/hardware.h"

namespace kselect::cuda {
namespace {

TEST(GpuStateTest, WithoutGpuOpeningIsUnavailableNotACrash) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU is present";
  const auto sampler = GpuStateSampler::Open(0);
  ASSERT_FALSE(sampler.ok());
  EXPECT_NE(sampler.status().code(), StatusCode::kOk);
}

TEST(GpuStateTest, OnAGpuTheClockPowerAndTemperatureArePlausible) {
  if (!QueryHardwareProfile(0).ok()) GTEST_SKIP() << "no GPU on this host";
  auto sampler = GpuStateSampler::Open(0);
  ASSERT_TRUE(sampler.ok()) << sampler.status().ToString();
  const GpuState s = (*sampler)->Sample();
  EXPECT_GT(s.sm_clock_mhz, 100);
  EXPECT_LT(s.sm_clock_mhz, 5000);
  EXPECT_GT(s.power_mw, 10'000);  // an idle H100/H200 draws 70 W and more
  EXPECT_LT(s.power_mw, 2'000'000);
  EXPECT_GT(s.temperature_c, 5);
  EXPECT_LT(s.temperature_c, 120);
}

TEST(GpuStateTest, SpanKeepsExtremesAndMeanAndIgnoresUnreadFields) {
  GpuStateSpan span;
  span.Add({1980, 400'000, 40});
  span.Add({1755, 600'000, 47});
  span.Add({0, 0, 0});  // NVML could not read: not a 0 MHz clock
  EXPECT_EQ(span.sm_clock_min_mhz, 1755);
  EXPECT_EQ(span.sm_clock_max_mhz, 1980);
  EXPECT_DOUBLE_EQ(span.mean_power_w(), 500.0);
  EXPECT_EQ(span.temperature_max_c, 47);
  EXPECT_DOUBLE_EQ(GpuStateSpan{}.mean_power_w(), 0.0);
}

}  // namespace
}  // namespace kselect::cuda
