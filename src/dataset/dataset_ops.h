// What the in-memory dataset operations (summary.cpp) and the streaming ones over files
// (dataset_files.cpp) share, so both give the same answers. Internal to src/dataset.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kselect/dataset.h"

namespace kselect::dataset_ops {

// The columns of one row a summary reads; absent optionals are nulls.
struct SummaryRow {
  std::optional<bool> is_valid, high_cv, aborted;
  std::optional<double> cv;
  std::optional<std::string_view> problem_key, config_key, provider, device_kind, device_name, arch,
      run_id, op_type, dtype, layout, conv_direction;
};
// The columns SummaryRow holds, for a reader that reads only those.
inline const std::vector<std::string> kSummaryColumns = {
    "is_valid",   "high_cv",  "aborted",     "cv",          "problem_key",
    "config_key", "provider", "device_kind", "device_name", "arch",
    "run_id",     "op_type",  "dtype",       "layout",      "conv_direction"};

// Accumulates DatasetSummary one row at a time.
class SummaryBuilder {
 public:
  void Add(const SummaryRow& row);
  DatasetSummary Finish();

 private:
  DatasetSummary summary_;
  std::set<std::string, std::less<>> shapes_, configs_;
  std::vector<double> cvs_;
};

// The device a row was measured on: its device kind, else its device name and arch.
std::string DeviceOf(std::optional<std::string_view> device_kind,
                     std::optional<std::string_view> device_name,
                     std::optional<std::string_view> arch);
// The run a row belongs to: id, tool and hardware columns.
RunInfo RunOf(const DatasetRow& row);
// The run of a merged measurement: `runs` holds it, or (merged across runs) it is made from the
// runs its id joins (their first's hardware, every tool) and added to `runs`.
const RunInfo& RunOfMerged(const std::string& run_id,
                           std::unordered_map<std::string, RunInfo>& runs);

}  // namespace kselect::dataset_ops
