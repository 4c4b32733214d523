// What the dataset subcommands share: a clear refusal when the binary was built without Arrow.
#pragma once

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "kselect/dataset.h"
#include "kselect/eval.h"

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
inline Status WriteExportTableChecked(const ExportTable&, const std::string&) {
  return RequireArrow();
}
inline StatusOr<DatasetFileInfo> InspectDatasetFileChecked(const std::string&) {
  return RequireArrow();
}
inline RowSource RowsOfFileChecked(const std::string&) {
  return [](const std::function<Status(const DatasetRow&)>&) { return RequireArrow(); };
}
inline StatusOr<DatasetSummary> SummarizeDatasetFileChecked(const std::string&,
                                                            std::map<std::string, std::string>*) {
  return RequireArrow();
}
inline StatusOr<int64_t> MergeDatasetFilesChecked(const std::vector<std::string>&,
                                                  const std::string&,
                                                  const std::map<std::string, std::string>&, bool,
                                                  MergeScope, const ProgressCallback&) {
  return RequireArrow();
}
inline StatusOr<int64_t> FilterDatasetFileChecked(
    const std::string&, const std::string&, const RowFilter&, const RowPredicate&,
    const std::function<std::map<std::string, std::string>()>&) {
  return RequireArrow();
}
#else
inline Status WriteDatasetChecked(const Dataset& d, const std::string& path) {
  return WriteDataset(d, path);
}
inline StatusOr<Dataset> ReadDatasetChecked(const std::string& path) {
  return ReadDataset(path);
}
inline Status WriteExportTableChecked(const ExportTable& t, const std::string& path) {
  return WriteExportTable(t, path);
}
inline StatusOr<DatasetFileInfo> InspectDatasetFileChecked(const std::string& path) {
  return InspectDatasetFile(path);
}
inline RowSource RowsOfFileChecked(const std::string& path) {
  return RowsOfFile(path);
}
inline StatusOr<DatasetSummary> SummarizeDatasetFileChecked(
    const std::string& path, std::map<std::string, std::string>* metadata) {
  return SummarizeDatasetFile(path, metadata);
}
inline StatusOr<int64_t> MergeDatasetFilesChecked(
    const std::vector<std::string>& inputs, const std::string& output,
    const std::map<std::string, std::string>& metadata, bool allow_mixed, MergeScope scope,
    const ProgressCallback& progress) {
  return MergeDatasetFiles(inputs, output, metadata, allow_mixed, scope, progress);
}
inline StatusOr<int64_t> FilterDatasetFileChecked(
    const std::string& input, const std::string& output, const RowFilter& filter,
    const RowPredicate& keep, const std::function<std::map<std::string, std::string>()>& metadata) {
  return FilterDatasetFile(input, output, filter, keep, metadata);
}
#endif

// The candidates of one provider from one or more dataset files (say every layout of a dtype),
// whose rows must come from one device. The rows are freed once the candidates are built, so
// the caller holds one copy of the data. With `file_fingerprints`, each file's own candidate
// fingerprint (what `kselect eval` computes when given that file alone) is appended to it.
inline StatusOr<CandidateSet> ReadCandidateSet(
    const std::vector<std::string>& paths, std::optional<Provider> provider,
    std::vector<std::string>* file_fingerprints = nullptr) {
  // The files are streamed: only the candidates are held, never their rows. Their devices come
  // first, from a pass over the summary's columns.
  std::vector<DatasetRow> devices;
  for (const std::string& path : paths) {
    auto summary = SummarizeDatasetFileChecked(path, nullptr);
    if (!summary.ok()) return summary.status();
    for (const auto& [device, rows] : summary->devices) devices.emplace_back().device_kind = device;
  }
  // Before the duplicate check: the same pair measured on two devices is no duplicate.
  KSELECT_RETURN_IF_ERROR(CheckOneDevice(devices, /*allow_mixed=*/false,
                                         "A model learns one device: train one per device"));
  // One file's fingerprint is the whole set's, taken below without building it twice.
  if (file_fingerprints != nullptr && paths.size() > 1) {
    for (const std::string& path : paths) {
      auto own = BuildCandidateSet(RowsOfFileChecked(path), provider);
      if (!own.ok()) return own.status().WithContext(path);
      file_fingerprints->push_back(own->fingerprint);
    }
  }
  const RowSource all = [&paths](const std::function<Status(const DatasetRow&)>& visit) {
    for (const std::string& path : paths) KSELECT_RETURN_IF_ERROR(RowsOfFileChecked(path)(visit));
    return Status::Ok();
  };
  auto set = BuildCandidateSet(all, provider);
  if (set.ok() && file_fingerprints != nullptr && paths.size() == 1) {
    file_fingerprints->push_back(set->fingerprint);
  }
  return set;
}

}  // namespace kselect::cli
