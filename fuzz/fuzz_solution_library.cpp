// libFuzzer target: the solution library reader (SolutionLibraryFromJson, the tuner's
// "kselect.solutions" files) must return a library or a status for any bytes, never crash, hang
// or trip a sanitizer; a library it accepts merges into itself unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kselect/solutions.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::SolutionLibrary> library =
      kselect::SolutionLibraryFromJson(text, "solutions.json");
  if (!library.ok()) return 0;
  kselect::SolutionLibrary base = *library;
  const auto merged = kselect::MergeSolutionLibraries(base, *library, /*force=*/false);
  if (!merged.ok() || merged->added != 0 || merged->replaced != 0 ||
      base.solutions.size() != library->solutions.size()) {
    __builtin_trap();
  }
  return 0;
}
