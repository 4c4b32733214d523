// libFuzzer target: the candidate table reader (CandidateTableFromJson, a model directory's
// candidates.json.gz once gunzipped) must return a table or a status for any bytes, never crash,
// hang or trip a sanitizer; a table it accepts writes back to text it reads again, equal.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kselect/candidates.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::CandidateTable> table =
      kselect::CandidateTableFromJson(text, "candidates.json");
  if (!table.ok()) return 0;
  const auto again =
      kselect::CandidateTableFromJson(kselect::CandidateTableToJson(*table), "again");
  if (!again.ok() || again->groups != table->groups) __builtin_trap();
  return 0;
}
