// NVRTC compile time of one CUDA C++ file: compiles it `repeats` times and prints each wall time,
// for comparing kernel building blocks (docs/tile_engine.md: the lean template vs CuTe).
//   kselect_tile_compile_time FILE.cu REPEATS [NVRTC options...]
// e.g. kselect_tile_compile_time bench/tile/cute_gemm_sm80.cu 3 --include-path=<cutlass>/include
//          --device-as-default-execution-space
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/text.h"
#include "cuda/nvrtc_compile.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE.cu REPEATS [NVRTC options...]\n", argv[0]);
    return 2;
  }
  const kselect::StatusOr<std::string> source = kselect::text::ReadFile(argv[1]);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().ToString().c_str());
    return 1;
  }
  const int repeats = std::atoi(argv[2]);
  std::vector<std::string> options = kselect::cuda::DefaultCompileOptions();
  for (int i = 3; i < argc; ++i) options.push_back(argv[i]);
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto cubin = kselect::cuda::CompileToCubin(*source, argv[1], options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!cubin.ok()) {
      std::fprintf(stderr, "%s\n", cubin.status().ToString().c_str());
      return 1;
    }
    std::printf("%.3f s  cubin %zu bytes\n", seconds, cubin->size());
  }
  return 0;
}
