// Dataset operations over files in bounded memory: summary, merge and filter read record batches
// of the columns they need (arrow_dataset.h) and write batches, never one DatasetRow per row.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "dataset/arrow_dataset.h"
#include "dataset/dataset_ops.h"
#include "kselect/dataset.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

using arrow_dataset::Column;
using arrow_dataset::DatasetFileReader;
using arrow_dataset::DatasetFileWriter;

// Typed views of a batch's columns by name (null when the batch lacks the column).
const arrow::StringArray* Strings(const arrow::RecordBatch& batch, std::string_view name) {
  return static_cast<const arrow::StringArray*>(Column(batch, name));
}
const arrow::Int64Array* Ints(const arrow::RecordBatch& batch, std::string_view name) {
  return static_cast<const arrow::Int64Array*>(Column(batch, name));
}
const arrow::DoubleArray* Doubles(const arrow::RecordBatch& batch, std::string_view name) {
  return static_cast<const arrow::DoubleArray*>(Column(batch, name));
}
const arrow::BooleanArray* Bools(const arrow::RecordBatch& batch, std::string_view name) {
  return static_cast<const arrow::BooleanArray*>(Column(batch, name));
}

template <typename ArrayType>
auto At(const ArrayType* array, int64_t i) {
  using T = decltype(array->Value(i));
  if constexpr (std::is_same_v<ArrayType, arrow::StringArray>) {
    return array == nullptr || array->IsNull(i)
               ? std::optional<std::string_view>()
               : std::optional<std::string_view>(array->GetView(i));
  } else {
    return array == nullptr || array->IsNull(i) ? std::optional<T>()
                                                : std::optional<T>(array->Value(i));
  }
}

// Small ids for the distinct strings of a column (run ids, problem and config keys), so a merge
// key is four integers instead of a few hundred bytes of text.
class Interner {
 public:
  // The id of `text`, and whether it is new.
  std::pair<int32_t, bool> Intern(std::string_view text) {
    const auto it = ids_.find(text);
    if (it != ids_.end()) return {it->second, false};
    const auto id = static_cast<int32_t>(texts_.size());
    texts_.emplace_back(std::make_unique<std::string>(text));
    ids_.emplace(*texts_.back(), id);
    return {id, true};
  }

 private:
  std::vector<std::unique_ptr<std::string>> texts_;  // stable storage the views point into
  std::unordered_map<std::string_view, int32_t> ids_;
};

struct MergeKey {
  int32_t run, op, problem, config;
  bool operator==(const MergeKey&) const = default;
};
struct MergeKeyHash {
  size_t operator()(const MergeKey& k) const {
    uint64_t h = static_cast<uint32_t>(k.run);
    for (const int32_t part : {k.op, k.problem, k.config}) {
      h = (h ^ static_cast<uint32_t>(part)) * 0x9E3779B97F4A7C15ULL;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

constexpr uint32_t kSingleton = 1;

}  // namespace

StatusOr<DatasetFileInfo> InspectDatasetFile(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(auto file, DatasetFileReader::Open(path));
  return DatasetFileInfo{file->rows(), file->metadata()};
}

Status ForEachDatasetRow(const std::string& path,
                         const std::function<Status(const DatasetRow&)>& visit) {
  KSELECT_ASSIGN_OR_RETURN(auto file, DatasetFileReader::Open(path));
  // Rows are built a slice at a time: a DatasetRow is about 5 KB.
  constexpr int64_t kSliceRows = 4096;
  std::vector<DatasetRow> rows;
  return file->ForEachBatch({}, [&](const arrow::RecordBatch& batch, int64_t) -> Status {
    for (int64_t start = 0; start < batch.num_rows(); start += kSliceRows) {
      rows.clear();
      arrow_dataset::AppendRows(*batch.Slice(start, kSliceRows), rows);
      for (const DatasetRow& row : rows) KSELECT_RETURN_IF_ERROR(visit(row));
    }
    return Status::Ok();
  });
}

RowSource RowsOfFile(const std::string& path) {
  return [path](const std::function<Status(const DatasetRow&)>& visit) {
    return ForEachDatasetRow(path, visit);
  };
}

StatusOr<DatasetSummary> SummarizeDatasetFile(const std::string& path,
                                              std::map<std::string, std::string>* metadata) {
  KSELECT_ASSIGN_OR_RETURN(auto file, DatasetFileReader::Open(path));
  if (metadata != nullptr) *metadata = file->metadata();
  dataset_ops::SummaryBuilder builder;
  KSELECT_RETURN_IF_ERROR(file->ForEachBatch(
      dataset_ops::kSummaryColumns, [&](const arrow::RecordBatch& batch, int64_t) {
        const auto* is_valid = Bools(batch, "is_valid");
        const auto* high_cv = Bools(batch, "high_cv");
        const auto* aborted = Bools(batch, "aborted");
        const auto* cv = Doubles(batch, "cv");
        const auto* problem_key = Strings(batch, "problem_key");
        const auto* config_key = Strings(batch, "config_key");
        const auto* provider = Strings(batch, "provider");
        const auto* device_kind = Strings(batch, "device_kind");
        const auto* device_name = Strings(batch, "device_name");
        const auto* arch = Strings(batch, "arch");
        const auto* run_id = Strings(batch, "run_id");
        const auto* op_type = Strings(batch, "op_type");
        const auto* dtype = Strings(batch, "dtype");
        const auto* layout = Strings(batch, "layout");
        const auto* conv_direction = Strings(batch, "conv_direction");
        for (int64_t i = 0; i < batch.num_rows(); ++i) {
          builder.Add({.is_valid = At(is_valid, i),
                       .high_cv = At(high_cv, i),
                       .aborted = At(aborted, i),
                       .cv = At(cv, i),
                       .problem_key = At(problem_key, i),
                       .config_key = At(config_key, i),
                       .provider = At(provider, i),
                       .device_kind = At(device_kind, i),
                       .device_name = At(device_name, i),
                       .arch = At(arch, i),
                       .run_id = At(run_id, i),
                       .op_type = At(op_type, i),
                       .dtype = At(dtype, i),
                       .layout = At(layout, i),
                       .conv_direction = At(conv_direction, i)});
        }
        return Status::Ok();
      }));
  return builder.Finish();
}

StatusOr<int64_t> MergeDatasetFiles(const std::vector<std::string>& inputs,
                                    const std::string& output,
                                    const std::map<std::string, std::string>& metadata,
                                    bool allow_mixed, MergeScope scope,
                                    const ProgressCallback& progress) {
  // Up to three passes, so memory holds a few integers per row plus the repeats being merged:
  // 1. the key, device and run columns: each row's group (first occurrence order, as
  //    MergeDuplicateMeasurements keeps), each run's device and RunInfo, and the rows to parse
  //    (each distinct problem and config key's first: what MeasurementFromRow refuses is still
  //    refused);
  // 2. only the files holding repeated groups, every column of their rows: parsed and merged;
  // 3. every column: rows of one-row groups copied batch slice by slice (exactly what was read,
  //    after the reader's value rules), merged rows written at their group's first row. A row
  //    that does not parse stops the write; the temporary file is removed.
  std::vector<std::unique_ptr<DatasetFileReader>> files;
  int64_t input_rows = 0;
  for (const std::string& path : inputs) {
    KSELECT_ASSIGN_OR_RETURN(auto file, DatasetFileReader::Open(path));
    input_rows += file->rows();
    files.push_back(std::move(file));
  }
  // Every pass counts every input row once (pass 2 skips a file without repeats at once).
  int64_t rows_done = 0;
  auto advance = [&](int64_t rows) {
    rows_done += rows;
    if (progress) progress({.done = rows_done, .total = 3 * input_rows, .unit = "rows"});
  };
  std::vector<std::string> pass1_columns = {"run_id",      "op_type",      "problem_key",
                                            "config_key",  "tool_version", "device_kind",
                                            "device_name", "arch"};
  for (const ColumnSpec& column : DatasetColumns()) {
    if (column.group == "hardware") pass1_columns.emplace_back(column.name);
  }
  Interner runs, ops, problems, configs;
  std::unordered_map<MergeKey, uint32_t, MergeKeyHash> group_of_key;
  std::vector<uint32_t> group_size;
  std::vector<std::vector<uint32_t>> group_of_row(files.size());
  std::vector<std::vector<bool>> parse_row(files.size());
  std::vector<DatasetRow> device_of_runs;  // one per run: the columns CheckOneDevice reads
  std::unordered_map<std::string, RunInfo> run_infos;
  for (size_t f = 0; f < files.size(); ++f) {
    group_of_row[f].reserve(static_cast<size_t>(files[f]->rows()));
    parse_row[f].resize(static_cast<size_t>(files[f]->rows()));
    KSELECT_RETURN_IF_ERROR(files[f]->ForEachBatch(
        pass1_columns, [&](const arrow::RecordBatch& batch, int64_t first_row) {
          const auto* run_id = Strings(batch, "run_id");
          const auto* op_type = Strings(batch, "op_type");
          const auto* problem_key = Strings(batch, "problem_key");
          const auto* config_key = Strings(batch, "config_key");
          for (int64_t i = 0; i < batch.num_rows(); ++i) {
            const auto [run, new_run] = runs.Intern(run_id->GetView(i));
            const auto [problem, new_problem] = problems.Intern(problem_key->GetView(i));
            const auto [config, new_config] = configs.Intern(config_key->GetView(i));
            const int32_t op = ops.Intern(At(op_type, i).value_or("")).first;
            if (new_run) {
              // The run's columns only: RunOf and DeviceOf read no others.
              const DatasetRow row = arrow_dataset::RowOfBatch(batch, i);
              run_infos.try_emplace(std::string(run_id->GetView(i)), dataset_ops::RunOf(row));
              DatasetRow& device = device_of_runs.emplace_back();
              device.device_kind = row.device_kind;
              device.device_name = row.device_name;
              device.arch = row.arch;
            }
            if (new_problem || new_config) parse_row[f][static_cast<size_t>(first_row + i)] = true;
            const MergeKey key{scope == MergeScope::kWithinRun ? run : -1, op, problem, config};
            const auto [it, inserted] =
                group_of_key.try_emplace(key, static_cast<uint32_t>(group_size.size()));
            if (inserted) {
              group_size.push_back(1);
            } else {
              ++group_size[it->second];
            }
            group_of_row[f].push_back(it->second);
          }
          advance(batch.num_rows());
          return Status::Ok();
        }));
  }
  group_of_key = {};
  // Before merging: rows of several devices must not be averaged into one.
  KSELECT_RETURN_IF_ERROR(CheckOneDevice(device_of_runs, allow_mixed));

  auto parse = [&](const arrow::RecordBatch& batch, int64_t i, size_t f,
                   size_t row_index) -> StatusOr<Measurement> {
    auto read = MeasurementFromRow(arrow_dataset::RowOfBatch(batch, i));
    if (!read.ok()) {
      return read.status().WithContext(inputs[f] + " (input " + std::to_string(f + 1) + "), row " +
                                       std::to_string(row_index));
    }
    return read;
  };
  std::unordered_map<uint32_t, std::vector<Measurement>> repeats;
  for (size_t f = 0; f < files.size(); ++f) {
    const bool holds_repeats = std::any_of(group_of_row[f].begin(), group_of_row[f].end(),
                                           [&](uint32_t g) { return group_size[g] != kSingleton; });
    if (!holds_repeats) {
      advance(files[f]->rows());
      continue;
    }
    KSELECT_RETURN_IF_ERROR(files[f]->ForEachBatch(
        {}, [&](const arrow::RecordBatch& batch, int64_t first_row) -> Status {
          for (int64_t i = 0; i < batch.num_rows(); ++i) {
            const auto row_index = static_cast<size_t>(first_row + i);
            const uint32_t group = group_of_row[f][row_index];
            if (group_size[group] == kSingleton) continue;
            KSELECT_ASSIGN_OR_RETURN(Measurement m, parse(batch, i, f, row_index));
            repeats[group].push_back(std::move(m));
          }
          advance(batch.num_rows());
          return Status::Ok();
        }));
  }
  std::unordered_map<uint32_t, DatasetRow> merged;
  for (auto& [group, measurements] : repeats) {
    std::vector<Measurement> one = MergeDuplicateMeasurements(std::move(measurements), scope);
    KSELECT_CHECK_MSG(one.size() == 1, "a merge group holds measurements of several keys");
    merged.emplace(group, RowFromMeasurement(one.front(), dataset_ops::RunOfMerged(
                                                              one.front().run_id, run_infos)));
  }
  repeats = {};

  const auto output_rows = static_cast<int64_t>(group_size.size());
  KSELECT_ASSIGN_OR_RETURN(auto writer, DatasetFileWriter::Open(output, metadata, output_rows));
  uint32_t next_group = 0;  // groups are written in id order: the order of their first rows
  for (size_t f = 0; f < files.size(); ++f) {
    KSELECT_RETURN_IF_ERROR(files[f]->ForEachBatch(
        {}, [&](const arrow::RecordBatch& batch, int64_t first_row) -> Status {
          int64_t copy_from = 0;  // start of the current slice of one-row groups
          std::vector<DatasetRow> rows;
          for (int64_t i = 0; i <= batch.num_rows(); ++i) {
            const bool end = i == batch.num_rows();
            const auto row_index = static_cast<size_t>(first_row + i);
            const uint32_t group = end ? 0 : group_of_row[f][row_index];
            if (!end && group_size[group] == kSingleton) {
              if (parse_row[f][row_index]) {
                KSELECT_RETURN_IF_ERROR(parse(batch, i, f, row_index).status());
              }
              ++next_group;
              continue;
            }
            KSELECT_RETURN_IF_ERROR(writer->Write(*batch.Slice(copy_from, i - copy_from)));
            copy_from = i + 1;
            if (!end && group == next_group) {
              ++next_group;
              rows.assign(1, std::move(merged.at(group)));
              KSELECT_RETURN_IF_ERROR(writer->WriteRows(rows));
            }
          }
          advance(batch.num_rows());
          return Status::Ok();
        }));
  }
  KSELECT_RETURN_IF_ERROR(writer->Finish());
  return output_rows;
}

StatusOr<int64_t> FilterDatasetFile(
    const std::string& input, const std::string& output, const RowFilter& f,
    const RowPredicate& keep, const std::function<std::map<std::string, std::string>()>& metadata) {
  KSELECT_ASSIGN_OR_RETURN(auto file, DatasetFileReader::Open(input));
  // Pass 1 judges every row (a bit each), so the output's row count and metadata are known
  // before it is written; pass 2 copies the kept rows slice by slice.
  std::vector<bool> kept(static_cast<size_t>(file->rows()));
  int64_t kept_rows = 0;
  const std::vector<std::string> criteria = {
      "m",       "n",           "k",    "provider", "run_id",    "dtype",      "layout",
      "op_type", "device_kind", "arch", "is_valid", "peer_rank", "peer_rank_b"};
  KSELECT_RETURN_IF_ERROR(file->ForEachBatch(
      keep ? std::vector<std::string>{} : criteria,
      [&](const arrow::RecordBatch& batch, int64_t first_row) -> Status {
        auto matches = [](const auto& wanted, const auto& value) {
          return !wanted || (value && *value == *wanted);
        };
        auto in = [](const std::optional<DimRange>& range, const std::optional<int64_t>& value) {
          return !range || (value && range->Contains(*value));
        };
        const auto* m = Ints(batch, "m");
        const auto* n = Ints(batch, "n");
        const auto* k = Ints(batch, "k");
        const auto* provider = Strings(batch, "provider");
        const auto* run_id = Strings(batch, "run_id");
        const auto* dtype = Strings(batch, "dtype");
        const auto* layout = Strings(batch, "layout");
        const auto* op_type = Strings(batch, "op_type");
        const auto* device_kind = Strings(batch, "device_kind");
        const auto* arch = Strings(batch, "arch");
        const auto* is_valid = Bools(batch, "is_valid");
        const auto* peer_rank = Ints(batch, "peer_rank");
        const auto* peer_rank_b = Ints(batch, "peer_rank_b");  // null in files older than it
        for (int64_t i = 0; i < batch.num_rows(); ++i) {
          if (!in(f.m, At(m, i)) || !in(f.n, At(n, i)) || !in(f.k, At(k, i))) {
            continue;
          }
          if (!matches(f.provider, At(provider, i)) || !matches(f.run_id, At(run_id, i))) continue;
          if (!matches(f.dtype, At(dtype, i)) || !matches(f.layout, At(layout, i))) continue;
          if (!matches(f.op_type, At(op_type, i)) || !matches(f.device_kind, At(device_kind, i))) {
            continue;
          }
          if (!matches(f.arch, At(arch, i))) continue;
          if (f.valid_only && !At(is_valid, i).value_or(false)) continue;
          if (f.peer_picks_only && !(At(peer_rank, i).value_or(0) > 0) &&
              !(At(peer_rank_b, i).value_or(0) > 0)) {
            continue;
          }
          if (keep) {
            KSELECT_ASSIGN_OR_RETURN(const bool wanted, keep(arrow_dataset::RowOfBatch(batch, i)));
            if (!wanted) continue;
          }
          kept[static_cast<size_t>(first_row + i)] = true;
          ++kept_rows;
        }
        return Status::Ok();
      }));
  KSELECT_ASSIGN_OR_RETURN(auto writer, DatasetFileWriter::Open(output, metadata(), kept_rows));
  KSELECT_RETURN_IF_ERROR(
      file->ForEachBatch({}, [&](const arrow::RecordBatch& batch, int64_t first_row) -> Status {
        int64_t start = -1;
        for (int64_t i = 0; i <= batch.num_rows(); ++i) {
          const bool keep_row = i < batch.num_rows() && kept[static_cast<size_t>(first_row + i)];
          if (keep_row && start < 0) start = i;
          if (!keep_row && start >= 0) {
            KSELECT_RETURN_IF_ERROR(writer->Write(*batch.Slice(start, i - start)));
            start = -1;
          }
        }
        return Status::Ok();
      }));
  KSELECT_RETURN_IF_ERROR(writer->Finish());
  return kept_rows;
}

}  // namespace kselect
