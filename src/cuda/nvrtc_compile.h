// Run-time compilation of CUDA C++ to a cubin with NVRTC. Needs the CUDA toolkit's headers and
// libnvrtc, but no GPU and no driver, so kernels can be built (and checked) on any host.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/status.h"

namespace kselect::cuda {

// The toolkit's include folder: $CUDA_HOME/include, else the folder beside the libnvrtc this
// process loaded, else /usr/local/cuda/include. Empty when none of them exists.
std::string CudaIncludeDir();

// Options every kselect kernel is built with: Hopper with its architecture-specific features
// (sm_90a: wgmma, setmaxnreg), C++17, and the toolkit's include folders (CUDA 13 keeps the CCCL
// headers, cuda/ cub/ thrust/, in include/cccl).
std::vector<std::string> DefaultCompileOptions();

struct CompiledModule {
  std::vector<char> cubin;  // an ELF image for cuModuleLoadData
  std::string log;          // NVRTC's log (warnings), possibly empty
  // name expression (e.g. "gemm<128, 64>") -> its mangled name for cuModuleGetFunction.
  std::map<std::string, std::string> lowered_names;
};

// Compiles `source` (`name` is its file name in messages) to a cubin. `name_expressions` are
// kernels to instantiate and report in lowered_names (templates need this to be emitted). A
// compile error returns kInvalidArgument whose message holds the full compile log; NVRTC being
// unusable returns kUnavailable.
StatusOr<CompiledModule> CompileModule(std::string_view source, std::string_view name,
                                       const std::vector<std::string>& options,
                                       const std::vector<std::string>& name_expressions);

// CompileModule without name expressions, returning only the cubin.
StatusOr<std::vector<char>> CompileToCubin(
    std::string_view source, std::string_view name,
    const std::vector<std::string>& options = DefaultCompileOptions());

}  // namespace kselect::cuda
