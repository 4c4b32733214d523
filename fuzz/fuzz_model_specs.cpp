// libFuzzer target: the two feature-spec readers a model directory goes through, kselect's
// (FeatureSpecFromJson, feature_spec.json of a kselect model) and CK Tile's (CkTileSpecFromJson),
// must return a spec or a status for any bytes, never crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kselect/features.h"
#include "kselect/foreign_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const kselect::StatusOr<kselect::FeatureSpec> spec =
      kselect::FeatureSpecFromJson(text, "feature_spec.json");
  // A spec it accepts writes back to text it reads again.
  if (spec.ok() && !kselect::FeatureSpecFromJson(kselect::FeatureSpecToJson(*spec), "again").ok()) {
    __builtin_trap();
  }
  const kselect::StatusOr<kselect::CkTileSpec> ck = kselect::CkTileSpecFromJson(text, "ck.json");
  if (ck.ok() && ck->feature_names.empty()) __builtin_trap();  // refused, never returned empty
  return 0;
}
