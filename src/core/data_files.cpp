// Shipped data lookup (data_files.h): environment, then the install prefix of the binary, then
// the source tree.
#include "core/data_files.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

// From the install's bin/ and lib/ to its share/kselect (set by CMakeLists.txt from
// GNUInstallDirs; these defaults are the usual layout).
#ifndef KSELECT_DATA_FROM_BINDIR
#define KSELECT_DATA_FROM_BINDIR "../share/kselect"
#endif
#ifndef KSELECT_DATA_FROM_LIBDIR
#define KSELECT_DATA_FROM_LIBDIR "../share/kselect"
#endif

namespace kselect {
namespace {

namespace fs = std::filesystem;

// The folders of the binaries this code may live in: the shared object or executable holding
// it (dladdr), and the running program (/proc/self/exe: dladdr may give the main program's name
// as typed, relative to a directory the process has since left).
std::vector<fs::path> BinaryDirs() {
  std::vector<fs::path> dirs;
  std::error_code error;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ShippedDataPath), &info) != 0 && info.dli_fname != nullptr &&
      fs::path(info.dli_fname).is_absolute()) {
    const fs::path real = fs::canonical(info.dli_fname, error);
    if (!error) dirs.push_back(real.parent_path());
  }
  const fs::path self = fs::canonical("/proc/self/exe", error);
  if (!error) dirs.push_back(self.parent_path());
  return dirs;
}

}  // namespace

std::string ShippedDataPath(std::string_view installed, std::string_view source) {
  if (const char* root = std::getenv(kDataDirVariable); root != nullptr && *root != '\0') {
    return (fs::path(root) / installed).string();
  }
  std::error_code error;
  for (const fs::path& dir : BinaryDirs()) {
    for (const char* relative : {KSELECT_DATA_FROM_BINDIR, KSELECT_DATA_FROM_LIBDIR}) {
      const fs::path candidate = (dir / relative / installed).lexically_normal();
      if (fs::exists(candidate, error)) return candidate.string();
    }
  }
  return std::string(source);
}

}  // namespace kselect
