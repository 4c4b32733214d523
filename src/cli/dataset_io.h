// What the dataset subcommands share: a clear refusal when the binary was built without Arrow.
#pragma once

#include "kselect/dataset.h"

namespace kselect::cli {

#ifdef KSELECT_WITH_ARROW
inline constexpr bool kHaveArrow = true;
#else
inline constexpr bool kHaveArrow = false;
#endif

inline Status RequireArrow() {
  if (kHaveArrow) return Status::Ok();
  return UnavailableError(
      "this kselect was built without Arrow/Parquet (KSELECT_WITH_ARROW=OFF, the GPU-side "
      "build); write JSONL here and run this command on a full build");
}

#ifndef KSELECT_WITH_ARROW
// The GPU-side build links no Parquet code; these keep the CLI linkable and fail clearly.
inline Status WriteDatasetChecked(const Dataset&, const std::string&) {
  return RequireArrow();
}
inline StatusOr<Dataset> ReadDatasetChecked(const std::string&) {
  return RequireArrow();
}
#else
inline Status WriteDatasetChecked(const Dataset& d, const std::string& path) {
  return WriteDataset(d, path);
}
inline StatusOr<Dataset> ReadDatasetChecked(const std::string& path) {
  return ReadDataset(path);
}
#endif

}  // namespace kselect::cli
