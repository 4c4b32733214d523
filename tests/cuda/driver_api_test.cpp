#include <cuda_runtime_api.h>

#include <vector>

#include <gtest/gtest.h>

#include "cuda/driver_api.h"
#include "cuda/nvrtc_compile.h"

namespace kselect::cuda {
namespace {

bool DriverPresent() {
  int version = 0;
  return cudaDriverGetVersion(&version) == cudaSuccess && version > 0;
}

TEST(DriverApiTest, WithoutDriverReturnsUnavailable) {
  if (DriverPresent()) GTEST_SKIP() << "a CUDA driver is present";
  const StatusOr<const DriverApi*> api = GetDriverApi();
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable) << api.status().ToString();
  EXPECT_NE(api.status().message().find("driver"), std::string::npos);
  // The failure is cached and repeatable, not a crash on the second call.
  EXPECT_EQ(GetDriverApi().status().code(), StatusCode::kUnavailable);
}

TEST(DriverApiTest, WithDriverEveryFunctionIsResolved) {
  if (!DriverPresent()) GTEST_SKIP() << "no CUDA driver on this host";
  const StatusOr<const DriverApi*> api = GetDriverApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  const DriverApi& table = **api;
  EXPECT_NE(table.get_error_name, nullptr);
  EXPECT_NE(table.get_error_string, nullptr);
  EXPECT_NE(table.ctx_get_current, nullptr);
  EXPECT_NE(table.module_load_data, nullptr);
  EXPECT_NE(table.module_unload, nullptr);
  EXPECT_NE(table.module_get_function, nullptr);
  EXPECT_NE(table.func_set_attribute, nullptr);
  EXPECT_NE(table.launch_kernel_ex, nullptr);
  EXPECT_NE(table.tensor_map_encode_tiled, nullptr);
  EXPECT_EQ(GetDriverApi().value(), *api);  // cached: the same table
  EXPECT_EQ(DriverErrorText(table, CUDA_ERROR_INVALID_VALUE).rfind("CUDA_ERROR_INVALID_VALUE", 0),
            0u);
}

// End to end on a GPU: NVRTC cubin -> cuModuleLoadData -> cuLaunchKernelEx, checked on the host.
TEST(DriverApiTest, WithDriverLaunchesAnNvrtcKernel) {
  int devices = 0;
  if (!DriverPresent() || cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no CUDA device on this host";
  }
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major != 9 || prop.minor != 0) GTEST_SKIP() << "the cubin is built for sm_90a";
  const char* source = R"(
template <typename T, int kScale>
__global__ void Scale(T* out, const T* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * static_cast<T>(kScale);
}
)";
  const StatusOr<CompiledModule> compiled =
      CompileModule(source, "scale.cu", DefaultCompileOptions(), {"Scale<float, 3>"});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const StatusOr<const DriverApi*> api = GetDriverApi();
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  const DriverApi& d = **api;

  // The runtime makes the primary context current; the driver calls below use it.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  CUcontext context = nullptr;
  ASSERT_EQ(d.ctx_get_current(&context), CUDA_SUCCESS);
  ASSERT_NE(context, nullptr);

  CUmodule module = nullptr;
  CUresult result = d.module_load_data(&module, compiled->cubin.data());
  ASSERT_EQ(result, CUDA_SUCCESS) << DriverErrorText(d, result);
  CUfunction function = nullptr;
  result = d.module_get_function(&function, module,
                                 compiled->lowered_names.at("Scale<float, 3>").c_str());
  ASSERT_EQ(result, CUDA_SUCCESS) << DriverErrorText(d, result);

  constexpr int kN = 1000;
  std::vector<float> host_in(kN), host_out(kN, 0.0f);
  for (int i = 0; i < kN; ++i) host_in[i] = static_cast<float>(i);
  float* in = nullptr;
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&in), kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&out), kN * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, host_in.data(), kN * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);

  CUlaunchConfig config{};
  config.gridDimX = (kN + 127) / 128;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  int n = kN;
  void* params[] = {&out, &in, &n};
  result = d.launch_kernel_ex(&config, function, params, nullptr);
  ASSERT_EQ(result, CUDA_SUCCESS) << DriverErrorText(d, result);
  ASSERT_EQ(cudaMemcpy(host_out.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(host_out[i], 3.0f * i) << "at " << i;

  EXPECT_EQ(cudaFree(in), cudaSuccess);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
  EXPECT_EQ(d.module_unload(module), CUDA_SUCCESS);
}

}  // namespace
}  // namespace kselect::cuda
