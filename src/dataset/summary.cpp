// Dataset-level operations that need no Parquet: summaries, merging and filtering rows.
#include <algorithm>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "dataset/dataset_ops.h"
#include "kselect/dataset.h"
#include "kselect/ingest.h"

namespace kselect {
namespace dataset_ops {

std::string DeviceOf(std::optional<std::string_view> device_kind,
                     std::optional<std::string_view> device_name,
                     std::optional<std::string_view> arch) {
  if (device_kind && !device_kind->empty()) return std::string(*device_kind);
  std::string device(device_name.value_or(""));
  if (arch) device += (device.empty() ? "" : " ") + std::string(*arch);
  return device.empty() ? "unknown" : device;
}

RunInfo RunOf(const DatasetRow& row) {
  RunInfo run;
  run.run_id = row.run_id.value_or("");
  run.tool = row.tool_version.value_or("");
  run.hardware = HardwareFromRow(row);
  return run;
}

const RunInfo& RunOfMerged(const std::string& run_id,
                           std::unordered_map<std::string, RunInfo>& runs) {
  auto run = runs.find(run_id);
  if (run != runs.end()) return run->second;
  // A row merged from several runs: its run names them all, and their tools.
  RunInfo merged;
  std::string tools;
  size_t start = 0;
  while (start <= run_id.size()) {
    const size_t end = std::min(run_id.find(kMergedRunSeparator, start), run_id.size());
    const RunInfo& part = runs.at(run_id.substr(start, end - start));
    if (merged.run_id.empty()) merged = part;
    if (tools.find(part.tool) == std::string::npos) {
      tools += (tools.empty() ? "" : std::string(kMergedRunSeparator)) + part.tool;
    }
    start = end + kMergedRunSeparator.size();
  }
  merged.run_id = run_id;
  merged.tool = tools;
  return runs.emplace(run_id, std::move(merged)).first->second;
}

void SummaryBuilder::Add(const SummaryRow& row) {
  DatasetSummary& s = summary_;
  ++s.rows;
  if (row.is_valid.value_or(false)) {
    ++s.valid_rows;
    if (row.cv) cvs_.push_back(*row.cv);
  } else {
    ++s.invalid_rows;
  }
  if (row.high_cv.value_or(false)) ++s.high_cv_rows;
  if (row.aborted.value_or(false)) ++s.aborted_rows;
  // Transparent lookups: a key is copied only the first time it is seen.
  auto insert = [](std::set<std::string, std::less<>>& set, std::string_view key) {
    if (!set.contains(key)) set.emplace(key);
  };
  insert(shapes_, row.problem_key.value_or(""));
  insert(configs_, row.config_key.value_or(""));
  auto count = [](std::map<std::string, int64_t>& counts, std::string_view key) {
    auto it = counts.find(std::string(key));
    if (it == counts.end()) it = counts.emplace(std::string(key), 0).first;
    ++it->second;
  };
  count(s.providers, row.provider.value_or("unknown"));
  count(s.devices, DeviceOf(row.device_kind, row.device_name, row.arch));
  count(s.runs, row.run_id.value_or("unknown"));
  count(s.archs, row.arch.value_or("unknown"));
  count(s.op_types, row.op_type.value_or("unknown"));
  count(s.dtype_layouts, std::string(row.dtype.value_or("?")) + " " +
                             std::string(row.layout.value_or(row.conv_direction.value_or("?"))));
}

DatasetSummary SummaryBuilder::Finish() {
  summary_.shapes = static_cast<int64_t>(shapes_.size());
  summary_.configs = static_cast<int64_t>(configs_.size());
  if (!cvs_.empty()) {
    std::nth_element(cvs_.begin(), cvs_.begin() + static_cast<std::ptrdiff_t>(cvs_.size() / 2),
                     cvs_.end());
    summary_.median_cv = cvs_[cvs_.size() / 2];
  }
  return summary_;
}

}  // namespace dataset_ops

namespace {

std::optional<std::string_view> View(const std::optional<std::string>& value) {
  return value ? std::optional<std::string_view>(*value) : std::nullopt;
}

}  // namespace

RowSource RowsOf(const Dataset& dataset) {
  return [&dataset](const std::function<Status(const DatasetRow&)>& visit) {
    for (const DatasetRow& row : dataset.rows) KSELECT_RETURN_IF_ERROR(visit(row));
    return Status::Ok();
  };
}

DatasetSummary SummarizeDataset(const Dataset& dataset) {
  dataset_ops::SummaryBuilder builder;
  for (const DatasetRow& row : dataset.rows) {
    builder.Add({.is_valid = row.is_valid,
                 .high_cv = row.high_cv,
                 .aborted = row.aborted,
                 .cv = row.cv,
                 .problem_key = View(row.problem_key),
                 .config_key = View(row.config_key),
                 .provider = View(row.provider),
                 .device_kind = View(row.device_kind),
                 .device_name = View(row.device_name),
                 .arch = View(row.arch),
                 .run_id = View(row.run_id),
                 .op_type = View(row.op_type),
                 .dtype = View(row.dtype),
                 .layout = View(row.layout),
                 .conv_direction = View(row.conv_direction)});
  }
  return builder.Finish();
}

std::string SummaryToJson(const DatasetSummary& s, const Dataset& dataset) {
  nlohmann::json j = {{"rows", s.rows},
                      {"valid_rows", s.valid_rows},
                      {"invalid_rows", s.invalid_rows},
                      {"high_cv_rows", s.high_cv_rows},
                      {"aborted_rows", s.aborted_rows},
                      {"shapes", s.shapes},
                      {"configs", s.configs},
                      {"median_cv", s.median_cv},
                      {"providers", s.providers},
                      {"devices", s.devices},
                      {"runs", s.runs},
                      {"archs", s.archs},
                      {"op_types", s.op_types},
                      {"dtype_layouts", s.dtype_layouts},
                      {"metadata", dataset.metadata}};
  return j.dump(2);
}

std::string SummaryToText(const DatasetSummary& s, const Dataset& dataset) {
  auto counts = [](const std::map<std::string, int64_t>& m) {
    std::string out;
    for (const auto& [name, count] : m) {
      out += (out.empty() ? "" : ", ") + name + " (" + std::to_string(count) + ")";
    }
    return out;
  };
  std::string out;
  out += "rows        " + std::to_string(s.rows) + " (" + std::to_string(s.valid_rows) +
         " valid, " + std::to_string(s.invalid_rows) + " invalid, " +
         std::to_string(s.high_cv_rows) + " with CV > 10 %, " + std::to_string(s.aborted_rows) +
         " aborted)\n";
  out += "shapes      " + std::to_string(s.shapes) + "\n";
  out += "configs     " + std::to_string(s.configs) + "\n";
  out += "median CV   " + std::to_string(s.median_cv * 100.0) + " %\n";
  out += "providers   " + counts(s.providers) + "\n";
  out += "ops         " + counts(s.op_types) + "\n";
  out += "dtype/layout " + counts(s.dtype_layouts) + "\n";
  out += "devices     " + counts(s.devices) + "\n";
  out += "archs       " + counts(s.archs) + "\n";
  out += "runs        " + counts(s.runs) + "\n";
  for (const auto& [key, value] : dataset.metadata) {
    if (key.rfind("kselect.", 0) == 0) out += key + " = " + value + "\n";
  }
  return out;
}

Status CheckOneDevice(const std::vector<DatasetRow>& rows, bool allow_mixed,
                      std::string_view remedy) {
  std::set<std::string> devices;
  for (const DatasetRow& row : rows) {
    devices.insert(
        dataset_ops::DeviceOf(View(row.device_kind), View(row.device_name), View(row.arch)));
  }
  if (devices.size() <= 1 || allow_mixed) return Status::Ok();
  std::string list;
  for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
  return FailedPreconditionError("the inputs come from more than one device (" + list +
                                 "); one dataset should come from one device kind. " +
                                 std::string(remedy));
}

StatusOr<Dataset> MergeDatasets(const std::vector<Dataset>& inputs, bool allow_mixed,
                                MergeScope scope) {
  // Rows of one (run, problem, config) merge into their median, exactly as ingestion does;
  // across runs, rows of one (problem, config) do.
  std::vector<Measurement> measurements;
  std::unordered_map<std::string, RunInfo> runs;
  std::vector<DatasetRow> first_row_of_runs;
  for (size_t input = 0; input < inputs.size(); ++input) {
    const Dataset& d = inputs[input];
    for (size_t index = 0; index < d.rows.size(); ++index) {
      const DatasetRow& row = d.rows[index];
      auto read = MeasurementFromRow(row);
      if (!read.ok()) {
        return read.status().WithContext("input " + std::to_string(input + 1) + ", row " +
                                         std::to_string(index));
      }
      Measurement m = std::move(*read);
      if (runs.try_emplace(m.run_id, dataset_ops::RunOf(row)).second)
        first_row_of_runs.push_back(row);
      measurements.push_back(std::move(m));
    }
  }
  // Before merging: rows of several devices must not be averaged into one.
  KSELECT_RETURN_IF_ERROR(CheckOneDevice(first_row_of_runs, allow_mixed));
  Dataset out;
  for (Measurement& m : MergeDuplicateMeasurements(std::move(measurements), scope)) {
    out.rows.push_back(RowFromMeasurement(m, dataset_ops::RunOfMerged(m.run_id, runs)));
  }
  return out;
}

Dataset FilterDataset(const Dataset& dataset, const RowFilter& f) {
  auto matches = [](const auto& wanted, const auto& value) {
    return !wanted || (value && *value == *wanted);
  };
  auto in = [](const std::optional<DimRange>& range, const std::optional<int64_t>& value) {
    return !range || (value && range->Contains(*value));
  };
  Dataset out;
  out.metadata = dataset.metadata;
  for (const DatasetRow& row : dataset.rows) {
    if (!in(f.m, row.m) || !in(f.n, row.n) || !in(f.k, row.k)) continue;
    if (!matches(f.provider, row.provider) || !matches(f.run_id, row.run_id)) continue;
    if (!matches(f.dtype, row.dtype) || !matches(f.layout, row.layout)) continue;
    if (!matches(f.op_type, row.op_type) || !matches(f.device_kind, row.device_kind)) continue;
    if (!matches(f.arch, row.arch)) continue;
    if (f.valid_only && !row.is_valid.value_or(false)) continue;
    if (f.peer_picks_only && !(row.peer_rank.value_or(0) > 0) &&
        !(row.peer_rank_b.value_or(0) > 0)) {
      continue;
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace kselect
