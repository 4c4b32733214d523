// libFuzzer target: both AMD kernel-name parsers must return a value or a status for any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kselect/ingest.h"
#include "providers/ck/ck_kernel_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::CkTileKernelName> tile = kselect::ParseCkTileKernelName(name);
  const kselect::StatusOr<kselect::CkConvKernelName> conv = kselect::ParseCkConvKernelName(name);
  volatile bool any = tile.ok() || conv.ok();
  (void)any;
  return 0;
}
