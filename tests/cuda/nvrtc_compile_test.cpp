#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/nvrtc_compile.h"

namespace kselect::cuda {
namespace {

constexpr const char* kTemplatedKernel = R"(
template <typename T, int kScale>
__global__ void Scale(T* out, const T* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * static_cast<T>(kScale);
}
template __global__ void Scale<float, 3>(float*, const float*, int);
)";

bool IsElf(const std::vector<char>& image) {
  return image.size() > 4 && std::memcmp(image.data(),
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

TEST(NvrtcCompileTest, DefaultOptionsTargetSm90a) {
  const std::vector<std::string> options = DefaultCompileOptions();
  bool has_arch = false, has_include = false;
  for (const std::string& option : options) {
    has_arch |= option == "--gpu-architecture=sm_90a";
    has_include |= option.rfind("--include-path=", 0) == 0;
  }
  EXPECT_TRUE(has_arch);
  EXPECT_TRUE(has_include) << "no CUDA include folder found";
  EXPECT_FALSE(CudaIncludeDir().empty());
}

TEST(NvrtcCompileTest, TemplatedKernelCompilesToCubin) {
  const StatusOr<std::vector<char>> cubin = CompileToCubin(kTemplatedKernel, "scale.cu");
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_TRUE(IsElf(*cubin));
}

TEST(NvrtcCompileTest, NameExpressionsGiveLoweredNames) {
  const StatusOr<CompiledModule> module = CompileModule(
      kTemplatedKernel, "scale.cu", DefaultCompileOptions(), {"Scale<float, 3>", "Scale<int, 2>"});
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_TRUE(IsElf(module->cubin));
  ASSERT_EQ(module->lowered_names.size(), 2u);
  // Itanium-mangled names, as cuModuleGetFunction wants them.
  EXPECT_EQ(module->lowered_names.at("Scale<float, 3>").rfind("_Z", 0), 0u);
  EXPECT_EQ(module->lowered_names.at("Scale<int, 2>").rfind("_Z", 0), 0u);
}

TEST(NvrtcCompileTest, CudaHeadersAreFound) {
  // cuda/std comes from CCCL, which CUDA 13 keeps under include/cccl.
  const char* source = R"(
#include <cuda/std/cstdint>
#include <cuda_fp16.h>
extern "C" __global__ void Touch(cuda::std::uint32_t* p, __half h) { *p = __half2float(h); }
)";
  const StatusOr<std::vector<char>> cubin = CompileToCubin(source, "touch.cu");
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  EXPECT_TRUE(IsElf(*cubin));
}

TEST(NvrtcCompileTest, SyntaxErrorReturnsTheLog) {
  const char* source = "extern \"C\" __global__ void Broken(int* p) { *p = 1 +; }\n";
  const StatusOr<std::vector<char>> cubin = CompileToCubin(source, "broken.cu");
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), StatusCode::kInvalidArgument);
  // The log names the file and the offending line.
  EXPECT_NE(cubin.status().message().find("broken.cu(1)"), std::string::npos)
      << cubin.status().message();
  EXPECT_NE(cubin.status().message().find("error"), std::string::npos) << cubin.status().message();
}

TEST(NvrtcCompileTest, VirtualArchitectureIsRefusedWithAHint) {
  const StatusOr<std::vector<char>> cubin =
      CompileToCubin(kTemplatedKernel, "scale.cu", {"--gpu-architecture=compute_90a"});
  ASSERT_FALSE(cubin.ok());
  EXPECT_NE(cubin.status().message().find("real architecture"), std::string::npos)
      << cubin.status().message();
}

TEST(NvrtcCompileTest, BadOptionIsAnError) {
  const StatusOr<std::vector<char>> cubin =
      CompileToCubin(kTemplatedKernel, "scale.cu", {"--no-such-option"});
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.status().code(), StatusCode::kInvalidArgument) << cubin.status().ToString();
}

}  // namespace
}  // namespace kselect::cuda
