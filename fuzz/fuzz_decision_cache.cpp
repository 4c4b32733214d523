// libFuzzer target: the decision cache reader (DecisionCacheFromJson, what Selector::LoadCache
// parses before checking the file against its selector) must return decisions or a status for
// any bytes, never crash, hang or trip a sanitizer; what it returns is never empty-handed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "selector/decision_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto file = kselect::selector_internal::DecisionCacheFromJson(text, "cache.json");
  if (!file.ok()) return 0;
  for (const kselect::Selection& s : file->decisions) {
    // Accepted decisions hold a valid problem and at least one config.
    if (s.ranked.empty() || !kselect::ValidateProblem(s.problem).ok()) __builtin_trap();
    if (s.decided_by == kselect::DecisionPath::kCache) __builtin_trap();
    volatile uint64_t hash = kselect::selector_internal::HashProblem(s.problem);
    (void)hash;
  }
  return 0;
}
