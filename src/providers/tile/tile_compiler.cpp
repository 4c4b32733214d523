// NVRTC compilation of tile specs, with an on-disk cubin cache and a thread pool.
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/text.h"
#include "cuda/nvrtc_compile.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

namespace kselect::tile {

std::string NvrtcVersionText() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

std::string CachePath(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / (key + ".cubin")).string();
}

}  // namespace

std::string CompilerOptions::DefaultCacheDir() {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("KSELECT_CACHE_DIR"); dir != nullptr && *dir) {
    return (fs::path(dir) / "tile").string();
  }
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir) {
    return (fs::path(dir) / "kselect" / "tile").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    return (fs::path(home) / ".cache" / "kselect" / "tile").string();
  }
  return {};
}

TileCompiler::TileCompiler(CompilerOptions options) : options_(std::move(options)) {}

std::vector<std::string> TileCompiler::NvrtcOptions() const {
  // The generated source includes no header, so no include paths: they would only cost time.
  std::vector<std::string> options = {"--gpu-architecture=" + options_.arch, "-std=c++17",
                                      "--device-as-default-execution-space"};
  options.insert(options.end(), options_.extra_options.begin(), options_.extra_options.end());
  return options;
}

StatusOr<TileBinary> TileCompiler::Compile(const TileKernelSpec& spec) const {
  KSELECT_RETURN_IF_ERROR(CheckValid(spec));
  const std::string source = GenerateSource(spec);
  const std::vector<std::string> options = NvrtcOptions();

  TileBinary binary;
  binary.spec = spec;
  std::string key_text = SpecKey(spec) + "\n" + source + "\n";
  for (const std::string& option : options) key_text += option + "\n";
  key_text += "arch=" + options_.arch + "\nnvrtc=" + NvrtcVersionText() + "\n";
  binary.cache_key = text::Sha256Hex(key_text);

  const bool use_cache = !options_.cache_dir.empty();
  if (use_cache) {
    const std::string path = CachePath(options_.cache_dir, binary.cache_key);
    std::error_code error;
    if (std::filesystem::is_regular_file(path, error)) {
      StatusOr<std::string> bytes = text::ReadFile(path);
      // An unreadable or empty entry is rebuilt below rather than failing the compile.
      if (bytes.ok() && !bytes->empty()) {
        binary.cubin.assign(bytes->begin(), bytes->end());
        binary.from_cache = true;
        return binary;
      }
    }
  }

  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<char>> cubin =
      cuda::CompileToCubin(source, "tile_" + binary.cache_key.substr(0, 12) + ".cu", options);
  binary.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!cubin.ok()) return cubin.status().WithContext(SpecKey(spec));
  binary.cubin = std::move(cubin).value();

  if (use_cache) {
    std::error_code error;
    std::filesystem::create_directories(options_.cache_dir, error);
    if (error) {
      return IoError(options_.cache_dir +
                     ": cannot create the tile cache folder: " + error.message());
    }
    KSELECT_RETURN_IF_ERROR(
        text::WriteFileAtomically(CachePath(options_.cache_dir, binary.cache_key),
                                  std::string_view(binary.cubin.data(), binary.cubin.size())));
  }
  return binary;
}

std::vector<StatusOr<TileBinary>> TileCompiler::CompileAll(
    const std::vector<TileKernelSpec>& specs) const {
  std::vector<std::optional<StatusOr<TileBinary>>> results(specs.size());
  int threads = options_.threads > 0 ? options_.threads
                                     : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(specs.size())));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < specs.size(); i = next++) results[i].emplace(Compile(specs[i]));
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  std::vector<StatusOr<TileBinary>> out;
  out.reserve(specs.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

}  // namespace kselect::tile
