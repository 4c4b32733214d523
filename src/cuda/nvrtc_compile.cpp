#include "cuda/nvrtc_compile.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace kselect::cuda {
namespace {

bool IsDirectory(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

// The toolkit root derived from where libnvrtc was loaded from: <root>/lib or <root>/lib64, or
// <root>/targets/<triple>/lib with include beside it, after resolving symlinks. Those are the
// headers that match the compiler in use.
std::filesystem::path ToolkitRootOfNvrtc() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&nvrtcVersion), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  const std::filesystem::path library = std::filesystem::canonical(info.dli_fname, error);
  if (error) return {};
  return library.parent_path().parent_path();
}

// NVRTC owns the program handle; this frees it on every return path.
struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};
using ProgramHandle = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL NVRTC counts in the size
  return log;
}

std::string NvrtcErrorText(const char* call, nvrtcResult result) {
  return std::string(call) + " failed: " + nvrtcGetErrorString(result);
}

}  // namespace

std::string CudaIncludeDir() {
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home != nullptr && *cuda_home) {
    const std::filesystem::path include = std::filesystem::path(cuda_home) / "include";
    if (IsDirectory(include)) return include.string();
  }
  if (const std::filesystem::path root = ToolkitRootOfNvrtc(); !root.empty()) {
    if (IsDirectory(root / "include")) return (root / "include").string();
  }
  if (IsDirectory("/usr/local/cuda/include")) return "/usr/local/cuda/include";
  return {};
}

std::vector<std::string> DefaultCompileOptions() {
  std::vector<std::string> options = {"--gpu-architecture=sm_90a", "-std=c++17"};
  if (const std::string include = CudaIncludeDir(); !include.empty()) {
    options.push_back("--include-path=" + include);
    // CUDA 13 moved libcu++/CUB/Thrust under include/cccl; older toolkits have them in include.
    const std::filesystem::path cccl = std::filesystem::path(include) / "cccl";
    if (IsDirectory(cccl)) options.push_back("--include-path=" + cccl.string());
  }
  return options;
}

StatusOr<CompiledModule> CompileModule(std::string_view source, std::string_view name,
                                       const std::vector<std::string>& options,
                                       const std::vector<std::string>& name_expressions) {
  // NVRTC wants NUL-terminated strings.
  const std::string source_text(source);
  const std::string name_text(name);
  ProgramHandle program(new nvrtcProgram(nullptr));
  nvrtcResult result = nvrtcCreateProgram(program.get(), source_text.c_str(), name_text.c_str(), 0,
                                          nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    // The deleter must not destroy a program that was never created.
    delete program.release();
    return UnavailableError(NvrtcErrorText("nvrtcCreateProgram", result));
  }
  for (const std::string& expression : name_expressions) {
    result = nvrtcAddNameExpression(*program, expression.c_str());
    if (result != NVRTC_SUCCESS) {
      return InvalidArgumentError(NvrtcErrorText("nvrtcAddNameExpression", result) + " for \"" +
                                  expression + "\"");
    }
  }

  std::vector<const char*> option_pointers;
  option_pointers.reserve(options.size());
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  result = nvrtcCompileProgram(*program, static_cast<int>(option_pointers.size()),
                               option_pointers.data());
  CompiledModule module;
  module.log = ProgramLog(*program);
  if (result == NVRTC_ERROR_COMPILATION) {
    return InvalidArgumentError(name_text + ": NVRTC compilation failed:\n" + module.log);
  }
  if (result != NVRTC_SUCCESS) {
    // Bad options land here (NVRTC_ERROR_INVALID_OPTION), with the reason in the log.
    return InvalidArgumentError(name_text + ": " + NvrtcErrorText("nvrtcCompileProgram", result) +
                                (module.log.empty() ? "" : "\n" + module.log));
  }

  size_t cubin_size = 0;
  result = nvrtcGetCUBINSize(*program, &cubin_size);
  if (result != NVRTC_SUCCESS || cubin_size == 0) {
    // A virtual architecture (compute_90a) yields PTX only; a cubin needs a real one (sm_90a).
    return InvalidArgumentError(name_text +
                                ": NVRTC produced no cubin; pass a real architecture "
                                "(--gpu-architecture=sm_XX), not a virtual compute_XX one");
  }
  module.cubin.resize(cubin_size);
  result = nvrtcGetCUBIN(*program, module.cubin.data());
  if (result != NVRTC_SUCCESS) return InternalError(NvrtcErrorText("nvrtcGetCUBIN", result));

  for (const std::string& expression : name_expressions) {
    const char* lowered = nullptr;
    result = nvrtcGetLoweredName(*program, expression.c_str(), &lowered);
    if (result != NVRTC_SUCCESS || lowered == nullptr) {
      return InternalError(NvrtcErrorText("nvrtcGetLoweredName", result) + " for \"" + expression +
                           "\"");
    }
    module.lowered_names[expression] = lowered;
  }
  return module;
}

StatusOr<std::vector<char>> CompileToCubin(std::string_view source, std::string_view name,
                                           const std::vector<std::string>& options) {
  KSELECT_ASSIGN_OR_RETURN(CompiledModule module, CompileModule(source, name, options, {}));
  return std::move(module.cubin);
}

}  // namespace kselect::cuda
