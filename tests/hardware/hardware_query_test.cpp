#include <cuda_runtime_api.h>

#include <string>

#include <gtest/gtest.h>

#include "kselect/hardware.h"

namespace kselect {
namespace {

// Asked of the runtime directly, so the test does not trust the code it checks.
bool GpuPresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(HardwareQueryTest, WithoutGpuReturnsUnavailable) {
  if (GpuPresent()) GTEST_SKIP() << "a GPU is present; the GPU-less path is not reachable";
  const StatusOr<HardwareProfile> profile = QueryHardwareProfile(0);
  ASSERT_FALSE(profile.ok());
  EXPECT_EQ(profile.status().code(), StatusCode::kUnavailable) << profile.status().ToString();
  // The runtime's reason and what to do instead.
  EXPECT_NE(profile.status().message().find("cudaGetDeviceCount"), std::string::npos)
      << profile.status().message();
  EXPECT_NE(profile.status().message().find("--load"), std::string::npos)
      << profile.status().message();
}

TEST(HardwareQueryTest, NegativeDeviceIsInvalidArgument) {
  EXPECT_EQ(QueryHardwareProfile(-1).status().code(), StatusCode::kInvalidArgument);
}

TEST(HardwareQueryTest, WithGpuFillsTheProfile) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA device on this host";
  const StatusOr<HardwareProfile> profile = QueryHardwareProfile(0);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_GT(profile->sm_count, 0);
  EXPECT_EQ(profile->arch.rfind("sm_", 0), 0u) << profile->arch;
  EXPECT_EQ(profile->arch,
            "sm_" + std::to_string(profile->cc_major) + std::to_string(profile->cc_minor));
  EXPECT_EQ(profile->uuid.rfind("GPU-", 0), 0u) << profile->uuid;
  EXPECT_EQ(profile->uuid.size(), 40u) << profile->uuid;
  EXPECT_FALSE(profile->device_name.empty());
  EXPECT_GT(profile->sm_clock_mhz, 0);
  EXPECT_GT(profile->mem_clock_mhz, 0);
  EXPECT_GT(profile->mem_bus_width_bits, 0);
  EXPECT_GT(profile->l2_bytes, 0);
  EXPECT_GT(profile->smem_per_block_optin_bytes, 48 * 1024);
  EXPECT_GT(profile->global_mem_bytes, 0);
  EXPECT_GT(profile->peak_mem_bandwidth_gb_s, 100.0);
  EXPECT_GT(profile->driver_version, 0);
  EXPECT_GT(profile->runtime_version, 0);
  EXPECT_GT(profile->cublaslt_version, 0);
  EXPECT_GT(profile->nvrtc_version, 0);

  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(QueryHardwareProfile(count).status().code(), StatusCode::kInvalidArgument);
}

TEST(HardwareQueryTest, LibraryVersionsNeedNoGpu) {
  const HardwareProfile versions = QueryLibraryVersions();
  EXPECT_GT(versions.runtime_version, 0);
  EXPECT_GT(versions.cublaslt_version, 0);
  EXPECT_GT(versions.nvrtc_version, 0);
  EXPECT_GE(versions.cudnn_version, 0);  // 0 where cuDNN is not installed
  EXPECT_GE(versions.driver_version, 0);
  // Device fields stay empty.
  EXPECT_EQ(versions.sm_count, 0);
  EXPECT_TRUE(versions.arch.empty());
}

}  // namespace
}  // namespace kselect
