// libFuzzer target: ParseCkTileLog must return a value or a status for any bytes, never crash, hang
// or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kselect/ingest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kselect::IngestOptions options;
  options.arch = "gfx950";
  const kselect::StatusOr<kselect::IngestResult> result =
      kselect::ParseCkTileLog(text, "fuzz.input", options);
  if (result.ok()) {
    // Touch the result so the parser's output is part of what is checked.
    volatile size_t rows = result->measurements.size() + result->warnings.size();
    (void)rows;
  }
  return 0;
}
