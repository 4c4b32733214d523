// libFuzzer target: HardwareProfileFromJson must return a value or a status for any bytes, never
// crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kselect/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::HardwareProfile> profile =
      kselect::HardwareProfileFromJson(text, "fuzz.json");
  volatile bool ok = profile.ok();
  (void)ok;
  return 0;
}
