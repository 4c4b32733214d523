// The canonical dataset on Arrow/Parquet: reading and writing files, whole or batch by batch.
// With dataset_files.cpp, the only files that include Arrow headers.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/properties.h>

#include <cmath>
#include <filesystem>
#include <span>
#include <variant>

#include "core/text.h"
#include "dataset/arrow_dataset.h"
#include "kselect/dataset.h"
#include "kselect/version.h"

namespace kselect::arrow_dataset {
namespace {

template <typename T>
using Member = std::optional<T> DatasetRow::*;

struct ColumnAccess {
  std::string_view name;
  ColumnType type;
  std::variant<Member<std::string>, Member<int64_t>, Member<double>, Member<bool>> member;
};

const std::vector<ColumnAccess>& Accessors() {
  static const std::vector<ColumnAccess> accessors = {
#define KSELECT_COLUMN_ACCESS(name, type, group, doc) \
  {#name, ColumnType::k##type, &DatasetRow::name},
      KSELECT_DATASET_COLUMNS(KSELECT_COLUMN_ACCESS)
#undef KSELECT_COLUMN_ACCESS
  };
  return accessors;
}

bool AddedLater(std::string_view column) {
  return std::find(std::begin(kDatasetColumnsAddedLater), std::end(kDatasetColumnsAddedLater),
                   column) != std::end(kDatasetColumnsAddedLater);
}

std::shared_ptr<arrow::DataType> ArrowTypeOf(ColumnType type) {
  switch (type) {
    case ColumnType::kString:
      return arrow::utf8();
    case ColumnType::kInt:
      return arrow::int64();
    case ColumnType::kDouble:
      return arrow::float64();
    case ColumnType::kBool:
      return arrow::boolean();
  }
  return arrow::null();
}

Status FromArrow(const arrow::Status& s, std::string_view context) {
  if (s.ok()) return Status::Ok();
  return IoError(std::string(context) + ": " + s.ToString());
}

template <typename Builder, typename T>
arrow::Status AppendColumn(Builder& builder, std::span<const DatasetRow> rows, Member<T> member) {
  ARROW_RETURN_NOT_OK(builder.Reserve(static_cast<int64_t>(rows.size())));
  for (const DatasetRow& row : rows) {
    const auto& value = row.*member;
    if (value) {
      ARROW_RETURN_NOT_OK(builder.Append(*value));
    } else {
      ARROW_RETURN_NOT_OK(builder.AppendNull());
    }
  }
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Array>> BuildColumn(const ColumnAccess& column,
                                                         std::span<const DatasetRow> rows) {
  std::shared_ptr<arrow::Array> array;
  if (auto* m = std::get_if<Member<std::string>>(&column.member)) {
    arrow::StringBuilder builder;
    ARROW_RETURN_NOT_OK(AppendColumn(builder, rows, *m));
    ARROW_RETURN_NOT_OK(builder.Finish(&array));
  } else if (auto* m = std::get_if<Member<int64_t>>(&column.member)) {
    arrow::Int64Builder builder;
    ARROW_RETURN_NOT_OK(AppendColumn(builder, rows, *m));
    ARROW_RETURN_NOT_OK(builder.Finish(&array));
  } else if (auto* m = std::get_if<Member<double>>(&column.member)) {
    arrow::DoubleBuilder builder;
    ARROW_RETURN_NOT_OK(AppendColumn(builder, rows, *m));
    ARROW_RETURN_NOT_OK(builder.Finish(&array));
  } else {
    arrow::BooleanBuilder builder;
    ARROW_RETURN_NOT_OK(AppendColumn(builder, rows, std::get<Member<bool>>(column.member)));
    ARROW_RETURN_NOT_OK(builder.Finish(&array));
  }
  return array;
}

// Large row groups compress the measured figures about 12 % better than 64 Ki rows (zstd sees
// more of each column at once); a million rows of this schema is about 15 MB compressed.
constexpr int64_t kRowsPerGroup = 1 << 20;

// zstd level 9 and page checksums (CRC32 of every page, verified on reading): a flipped byte in
// a data page is an error, not a wrong figure.
std::shared_ptr<parquet::WriterProperties> WriterPropertiesForDatasets() {
  return parquet::WriterProperties::Builder()
      .compression(parquet::Compression::ZSTD)
      ->compression_level(9)
      ->enable_page_checksum()
      ->max_row_group_length(kRowsPerGroup)
      ->build();
}

Status WriteTableTo(const arrow::Table& table, const std::string& path) {
  auto sink = arrow::io::FileOutputStream::Open(path);
  if (!sink.ok()) return FromArrow(sink.status(), path);
  auto properties = WriterPropertiesForDatasets();
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  KSELECT_RETURN_IF_ERROR(
      FromArrow(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), *sink,
                                           kRowsPerGroup, properties, arrow_properties),
                path));
  return FromArrow((*sink)->Close(), path);
}

// An output's folder must exist: written through a temporary beside it.
Status RequireFolderOf(const std::string& path) {
  const std::filesystem::path target(path);
  std::error_code ec;
  const auto dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec)) {
    return IoError(path + ": folder " + dir.string() + " does not exist");
  }
  return Status::Ok();
}

// Writes beside the target and renames: readers never see a half-written file, and a failed
// write leaves an existing file untouched.
Status WriteTableAtomically(const arrow::Table& table, const std::string& path) {
  namespace fs = std::filesystem;
  KSELECT_RETURN_IF_ERROR(RequireFolderOf(path));
  const fs::path target(path);
  std::error_code ec;
  const std::string temp = text::TempPathBeside(path);
  Status status;
  try {
    status = WriteTableTo(table, temp);
  } catch (const parquet::ParquetException& e) {
    status = IoError(path + ": " + e.what());
  }
  if (status.ok()) {
    fs::rename(temp, target, ec);
    if (ec) status = IoError(path + ": rename from temporary file failed: " + ec.message());
  }
  if (!status.ok()) fs::remove(temp, ec);
  return status;
}

template <typename ArrayType, typename T>
void ReadChunk(const arrow::Array& chunk, std::vector<DatasetRow>& rows, size_t offset,
               Member<T> member) {
  const auto& typed = static_cast<const ArrayType&>(chunk);
  for (int64_t i = 0; i < typed.length(); ++i) {
    if (typed.IsNull(i)) continue;
    if constexpr (std::is_same_v<T, std::string>) {
      rows[offset + i].*member = std::string(typed.GetView(i));
    } else {
      rows[offset + i].*member = static_cast<T>(typed.Value(i));
    }
  }
}

}  // namespace

void AppendRows(const arrow::RecordBatch& batch, std::vector<DatasetRow>& rows) {
  const size_t offset = rows.size();
  rows.resize(offset + static_cast<size_t>(batch.num_rows()));
  for (const ColumnAccess& column : Accessors()) {
    const arrow::Array* chunk = Column(batch, column.name);
    if (chunk == nullptr) continue;  // a column the reader was not asked for: null
    std::visit(
        [&](auto member) {
          using T = typename std::remove_reference_t<decltype(DatasetRow{}.*member)>::value_type;
          if constexpr (std::is_same_v<T, std::string>) {
            ReadChunk<arrow::StringArray>(*chunk, rows, offset, member);
          } else if constexpr (std::is_same_v<T, int64_t>) {
            ReadChunk<arrow::Int64Array>(*chunk, rows, offset, member);
          } else if constexpr (std::is_same_v<T, double>) {
            ReadChunk<arrow::DoubleArray>(*chunk, rows, offset, member);
          } else {
            ReadChunk<arrow::BooleanArray>(*chunk, rows, offset, member);
          }
        },
        column.member);
  }
}

namespace {

// Arrow stores any bytes in a string column; a value that is not UTF-8 would fail much later, in
// a JSON dump that names neither file nor column. Refuse it on reading, naming both.
Status CheckUtf8Column(const arrow::Array& chunk, const std::string& path, std::string_view column,
                       int64_t offset) {
  const auto& typed = static_cast<const arrow::StringArray&>(chunk);
  for (int64_t i = 0; i < typed.length(); ++i) {
    if (typed.IsNull(i) || text::CheckUtf8(typed.GetView(i), "").ok()) continue;
    return SchemaMismatchError(path + ": column '" + std::string(column) + "', row " +
                               std::to_string(offset + i) + ": text that is not valid UTF-8");
  }
  return Status::Ok();
}

// Columns without which a row means nothing: what it ran, on what, in which collection.
constexpr std::string_view kRequiredColumns[] = {"provider", "problem_key", "config_key", "run_id"};
// Columns the value rules read, whatever a caller asked for.
constexpr std::string_view kRuleColumns[] = {"provider",
                                             "problem_key",
                                             "config_key",
                                             "run_id",
                                             "conv_direction",
                                             "m",
                                             "n",
                                             "k",
                                             "batch",
                                             "is_valid",
                                             "invalid_reason",
                                             "latency_ms",
                                             "measured_tflops",
                                             "bandwidth_gb_s",
                                             "cv",
                                             "power_w",
                                             "reference_latency_ms"};

// The value rules of ingest, applied to a batch read back (another tool or an edit may have
// written anything): see DatasetFileReader::ForEachBatch.
StatusOr<std::shared_ptr<arrow::RecordBatch>> ApplyValueRules(
    std::shared_ptr<arrow::RecordBatch> batch, const std::string& path, int64_t first_row) {
  auto where = [&](int64_t i) { return path + ": row " + std::to_string(first_row + i) + ": "; };
  for (const std::string_view name : kRequiredColumns) {
    const arrow::Array* column = Column(*batch, name);
    if (column == nullptr || column->null_count() == 0) continue;
    int64_t i = 0;
    while (!column->IsNull(i)) ++i;
    return SchemaMismatchError(where(i) + "column " + std::string(name) +
                               " is null: every row needs one (the file was not written by "
                               "kselect, or was edited)");
  }
  for (const auto& field : batch->schema()->fields()) {
    if (!field->type()->Equals(*arrow::utf8())) continue;
    KSELECT_RETURN_IF_ERROR(
        CheckUtf8Column(*batch->GetColumnByName(field->name()), path, field->name(), first_row));
  }
  const auto* conv = static_cast<const arrow::StringArray*>(Column(*batch, "conv_direction"));
  for (const std::string_view name : {"m", "n", "k", "batch"}) {
    const auto* dim = static_cast<const arrow::Int64Array*>(Column(*batch, name));
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      if (conv->IsValid(i)) continue;  // a convolution: its own columns
      if (dim->IsNull(i)) {
        if (name == "batch") continue;  // 1 when absent
        return SchemaMismatchError(where(i) + "column " + std::string(name) +
                                   " is null and the row has no conv_direction: it is neither a "
                                   "GEMM nor a convolution");
      }
      if (dim->Value(i) <= 0) {
        return SchemaMismatchError(where(i) + "column " + std::string(name) + " is " +
                                   std::to_string(dim->Value(i)) + ": must be positive");
      }
    }
  }
  // Figures of the method, not of the config (schema 1.2; absent from older files): ingest refuses
  // a record with them negative or not finite, so a file holding one was not written by kselect.
  for (const std::string_view name : {"power_w", "reference_latency_ms"}) {
    const auto* figure = static_cast<const arrow::DoubleArray*>(Column(*batch, name));
    if (figure == nullptr) continue;
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      if (figure->IsNull(i)) continue;
      const double v = figure->Value(i);
      if (v >= 0 && std::isfinite(v)) continue;
      return SchemaMismatchError(where(i) + "column " + std::string(name) + " is " +
                                 text::Fixed(v, 3) +
                                 ": must be finite and >= 0 (the file was not written by kselect, "
                                 "or was edited)");
    }
  }
  // A row claimed valid with impossible figures is marked invalid, never used as valid.
  const auto* valid = static_cast<const arrow::BooleanArray*>(Column(*batch, "is_valid"));
  const auto* latency = static_cast<const arrow::DoubleArray*>(Column(*batch, "latency_ms"));
  const auto* tflops = static_cast<const arrow::DoubleArray*>(Column(*batch, "measured_tflops"));
  const auto* bandwidth = static_cast<const arrow::DoubleArray*>(Column(*batch, "bandwidth_gb_s"));
  const auto* cv = static_cast<const arrow::DoubleArray*>(Column(*batch, "cv"));
  auto value = [](const arrow::DoubleArray* a, int64_t i, double absent) {
    return a->IsNull(i) ? absent : a->Value(i);
  };
  std::vector<std::pair<int64_t, std::string>> condemned;
  for (int64_t i = 0; i < batch->num_rows(); ++i) {
    if (valid->IsNull(i) || !valid->Value(i)) continue;
    std::string reason =
        ImplausibleFigures(value(latency, i, std::nan("")), value(tflops, i, std::nan("")),
                           value(bandwidth, i, 0.0), value(cv, i, 0.0));
    if (!reason.empty()) condemned.emplace_back(i, std::move(reason));
  }
  if (condemned.empty()) return batch;
  const auto* reasons = static_cast<const arrow::StringArray*>(Column(*batch, "invalid_reason"));
  arrow::BooleanBuilder valid_out;
  arrow::StringBuilder reason_out;
  size_t next = 0;
  for (int64_t i = 0; i < batch->num_rows(); ++i) {
    arrow::Status s;
    if (next < condemned.size() && condemned[next].first == i) {
      s = valid_out.Append(false);
      if (s.ok()) s = reason_out.Append(condemned[next++].second);
    } else {
      s = valid->IsNull(i) ? valid_out.AppendNull() : valid_out.Append(valid->Value(i));
      if (s.ok())
        s = reasons->IsNull(i) ? reason_out.AppendNull() : reason_out.Append(reasons->GetView(i));
    }
    if (!s.ok()) return FromArrow(s, path);
  }
  std::shared_ptr<arrow::Array> valid_array, reason_array;
  KSELECT_RETURN_IF_ERROR(FromArrow(valid_out.Finish(&valid_array), path));
  KSELECT_RETURN_IF_ERROR(FromArrow(reason_out.Finish(&reason_array), path));
  for (const auto& [name, array] :
       {std::pair{"is_valid", valid_array}, std::pair{"invalid_reason", reason_array}}) {
    const int index = batch->schema()->GetFieldIndex(name);
    auto replaced = batch->SetColumn(index, batch->schema()->field(index), array);
    if (!replaced.ok()) return FromArrow(replaced.status(), path);
    batch = *replaced;
  }
  return batch;
}

std::shared_ptr<arrow::Schema> DatasetSchema(const std::map<std::string, std::string>& metadata) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (const ColumnAccess& column : Accessors()) {
    fields.push_back(arrow::field(std::string(column.name), ArrowTypeOf(column.type), true));
  }
  std::vector<std::string> keys, values;
  for (const auto& [key, value] : metadata) {
    keys.push_back(key);
    values.push_back(value);
  }
  return arrow::schema(fields, arrow::key_value_metadata(keys, values));
}

}  // namespace

const arrow::Array* Column(const arrow::RecordBatch& batch, std::string_view name) {
  const int index = batch.schema()->GetFieldIndex(std::string(name));
  return index < 0 ? nullptr : batch.column(index).get();
}

DatasetRow RowOfBatch(const arrow::RecordBatch& batch, int64_t index) {
  std::vector<DatasetRow> rows;
  AppendRows(*batch.Slice(index, 1), rows);
  return std::move(rows.front());
}

StatusOr<std::unique_ptr<DatasetFileReader>> DatasetFileReader::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such file");
  auto input = arrow::io::ReadableFile::Open(path);
  if (!input.ok()) return FromArrow(input.status(), path);
  auto file = std::unique_ptr<DatasetFileReader>(new DatasetFileReader());
  file->path_ = path;
  std::shared_ptr<arrow::Schema> schema;
  try {
    parquet::ReaderProperties properties;
    properties.set_page_checksum_verification(true);
    parquet::ArrowReaderProperties arrow_properties;
    arrow_properties.set_batch_size(kBatchRows);
    // Columns decode in parallel: most of a streamed command's time on a machine of few cores.
    arrow_properties.set_use_threads(true);
    parquet::arrow::FileReaderBuilder builder;
    auto opened = builder.Open(*input, properties);
    if (opened.ok()) {
      opened = builder.properties(arrow_properties)->Build(&file->reader_);
    }
    if (!opened.ok()) {
      return ParseError(path + ": not a readable Parquet file: " + opened.ToString());
    }
    auto got = file->reader_->GetSchema(&schema);
    if (!got.ok()) return ParseError(path + ": not a readable Parquet file: " + got.ToString());
    file->rows_ = file->reader_->parquet_reader()->metadata()->num_rows();
  } catch (const parquet::ParquetException& e) {
    return ParseError(path + ": not a readable Parquet file: " + e.what());
  }
  if (const auto& kv = schema->metadata()) {
    for (int64_t i = 0; i < kv->size(); ++i) {
      if (kv->key(i).rfind("kselect.", 0) == 0) file->metadata_[kv->key(i)] = kv->value(i);
    }
  }
  const auto version = file->metadata_.find(std::string(kMetaSchemaVersion));
  if (version == file->metadata_.end()) {
    return SchemaMismatchError(path + ": not a kselect dataset (no " +
                               std::string(kMetaSchemaVersion) + " metadata)");
  }
  const std::string expected_major = std::to_string(kDatasetSchemaMajor);
  if (version->second.substr(0, version->second.find('.')) != expected_major) {
    return SchemaMismatchError(path + ": dataset schema version " + version->second +
                               " is not readable by this kselect (reads " + expected_major +
                               ".x); convert it with the kselect that wrote it");
  }
  // Exactly the documented columns with the documented types, each named when it differs.
  const auto& accessors = Accessors();
  for (const auto& field : schema->fields()) {
    const auto it = std::find_if(accessors.begin(), accessors.end(),
                                 [&](const ColumnAccess& c) { return c.name == field->name(); });
    if (it == accessors.end()) {
      return SchemaMismatchError(path + ": unknown column '" + field->name() +
                                 "' (not in dataset schema " + version->second + ")");
    }
    if (const size_t count = schema->GetAllFieldIndices(field->name()).size(); count > 1) {
      return SchemaMismatchError(path + ": column '" + field->name() + "' is duplicated (" +
                                 std::to_string(count) + " columns of that name)");
    }
    if (!field->type()->Equals(*ArrowTypeOf(it->type))) {
      return SchemaMismatchError(path + ": column '" + field->name() + "' has type " +
                                 field->type()->ToString() + ", expected " +
                                 std::string(ColumnTypeName(it->type)));
    }
  }
  for (const ColumnAccess& column : accessors) {
    if (schema->GetFieldIndex(std::string(column.name)) < 0 && !AddedLater(column.name)) {
      return SchemaMismatchError(path + ": column '" + std::string(column.name) + "' is missing");
    }
  }
  // The footer's count against what the writer recorded: a file cut or spliced elsewhere.
  if (const auto rows = file->metadata_.find(std::string(kMetaRows));
      rows != file->metadata_.end() && rows->second != std::to_string(file->rows_)) {
    return SchemaMismatchError(path + ": the metadata says " + rows->second +
                               " rows but the file holds " + std::to_string(file->rows_) +
                               ": it was altered after kselect wrote it");
  }
  return file;
}

Status DatasetFileReader::ForEachBatch(
    const std::vector<std::string>& columns,
    const std::function<Status(const arrow::RecordBatch&, int64_t)>& visit) {
  std::shared_ptr<arrow::Schema> schema;
  KSELECT_RETURN_IF_ERROR(FromArrow(reader_->GetSchema(&schema), path_));
  std::vector<int> indices;
  auto want = [&](std::string_view name) {
    const int index = schema->GetFieldIndex(std::string(name));
    if (index >= 0 && std::find(indices.begin(), indices.end(), index) == indices.end()) {
      indices.push_back(index);
    }
  };
  if (columns.empty()) {
    for (const ColumnAccess& column : Accessors()) want(column.name);
  }
  for (const std::string& name : columns) want(name);
  for (const std::string_view name : kRuleColumns) want(name);
  std::sort(indices.begin(), indices.end());
  std::vector<int> row_groups(static_cast<size_t>(reader_->num_row_groups()));
  for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
  auto damaged = [&](const std::string& what) {
    return ParseError(path_ +
                      ": cannot read the data (the file is damaged or was cut short: "
                      "restore it from its source): " +
                      what);
  };
  int64_t first_row = 0;
  try {
    auto stream = reader_->GetRecordBatchReader(row_groups, indices);
    if (!stream.ok()) return damaged(stream.status().ToString());
    while (true) {
      auto next = (*stream)->Next();
      if (!next.ok()) return damaged(next.status().ToString());
      if (*next == nullptr) break;
      KSELECT_ASSIGN_OR_RETURN(auto batch, ApplyValueRules(*next, path_, first_row));
      KSELECT_RETURN_IF_ERROR(visit(*batch, first_row));
      first_row += batch->num_rows();
    }
  } catch (const parquet::ParquetException& e) {
    return damaged(e.what());
  }
  if (first_row != rows_) {
    return damaged("read " + std::to_string(first_row) + " rows, the footer says " +
                   std::to_string(rows_));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<DatasetFileWriter>> DatasetFileWriter::Open(
    const std::string& path, std::map<std::string, std::string> metadata, int64_t rows) {
  KSELECT_RETURN_IF_ERROR(RequireFolderOf(path));
  metadata[std::string(kMetaSchemaVersion)] =
      std::to_string(kDatasetSchemaMajor) + "." + std::to_string(kDatasetSchemaMinor);
  metadata[std::string(kMetaRows)] = std::to_string(rows);
  if (!metadata.contains(std::string(kMetaTool))) {
    metadata[std::string(kMetaTool)] = ToolDescription();
  }
  if (!metadata.contains(std::string(kMetaCreatedAt))) {
    metadata[std::string(kMetaCreatedAt)] = text::UtcNowIso8601();
  }
  auto writer = std::unique_ptr<DatasetFileWriter>(new DatasetFileWriter());
  writer->path_ = path;
  writer->temp_ = text::TempPathBeside(path);
  writer->announced_rows_ = rows;
  writer->schema_ = DatasetSchema(metadata);
  auto sink = arrow::io::FileOutputStream::Open(writer->temp_);
  if (!sink.ok()) return FromArrow(sink.status(), path);
  try {
    auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    auto opened =
        parquet::arrow::FileWriter::Open(*writer->schema_, arrow::default_memory_pool(), *sink,
                                         WriterPropertiesForDatasets(), arrow_properties);
    if (!opened.ok()) return FromArrow(opened.status(), path);
    writer->writer_ = std::move(*opened);
  } catch (const parquet::ParquetException& e) {
    return IoError(path + ": " + e.what());
  }
  return writer;
}

DatasetFileWriter::~DatasetFileWriter() {
  if (finished_) return;
  if (writer_) {
    try {
      (void)writer_->Close();
    } catch (const parquet::ParquetException&) {
      // Closing only to remove the temporary: its error does not matter.
    }
  }
  std::error_code ec;
  std::filesystem::remove(temp_, ec);
}

Status DatasetFileWriter::Write(const arrow::RecordBatch& batch) {
  if (batch.num_rows() == 0) return Status::Ok();
  // The writer wants the columns in the file's order; a batch read from a foreign file may hold
  // them in another.
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (const auto& field : schema_->fields()) {
    const int index = batch.schema()->GetFieldIndex(field->name());
    if (index < 0 && AddedLater(field->name())) {
      // A batch of a file older than the column: null throughout.
      auto nulls = arrow::MakeArrayOfNull(field->type(), batch.num_rows());
      if (!nulls.ok()) return FromArrow(nulls.status(), path_);
      columns.push_back(*nulls);
      continue;
    }
    KSELECT_CHECK_MSG(index >= 0, "a dataset batch lacks a column");
    columns.push_back(batch.column(index));
  }
  auto ordered = arrow::RecordBatch::Make(schema_, batch.num_rows(), std::move(columns));
  try {
    KSELECT_RETURN_IF_ERROR(FromArrow(writer_->WriteRecordBatch(*ordered), path_));
  } catch (const parquet::ParquetException& e) {
    return IoError(path_ + ": " + e.what());
  }
  written_rows_ += batch.num_rows();
  return Status::Ok();
}

Status DatasetFileWriter::WriteRows(std::span<const DatasetRow> rows) {
  if (rows.empty()) return Status::Ok();
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const ColumnAccess& column : Accessors()) {
    auto array = BuildColumn(column, rows);
    if (!array.ok())
      return FromArrow(array.status(), path_ + ": column " + std::string(column.name));
    arrays.push_back(*array);
  }
  return Write(*arrow::RecordBatch::Make(schema_, static_cast<int64_t>(rows.size()), arrays));
}

Status DatasetFileWriter::Finish() {
  KSELECT_CHECK_MSG(written_rows_ == announced_rows_,
                    "a dataset writer got another number of rows than it announced");
  try {
    KSELECT_RETURN_IF_ERROR(FromArrow(writer_->Close(), path_));
  } catch (const parquet::ParquetException& e) {
    return IoError(path_ + ": " + e.what());
  }
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) return IoError(path_ + ": rename from temporary file failed: " + ec.message());
  finished_ = true;
  return Status::Ok();
}

}  // namespace kselect::arrow_dataset

namespace kselect {

Status WriteDataset(const Dataset& dataset, const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(auto writer,
                           arrow_dataset::DatasetFileWriter::Open(
                               path, dataset.metadata, static_cast<int64_t>(dataset.rows.size())));
  // Row blocks keep Arrow's copy small beside the rows themselves.
  const std::span<const DatasetRow> rows(dataset.rows);
  for (size_t start = 0; start < rows.size(); start += arrow_dataset::kBatchRows) {
    KSELECT_RETURN_IF_ERROR(writer->WriteRows(
        rows.subspan(start, std::min<size_t>(arrow_dataset::kBatchRows, rows.size() - start))));
  }
  return writer->Finish();
}

StatusOr<Dataset> ReadDataset(const std::string& path) {
  KSELECT_ASSIGN_OR_RETURN(auto file, arrow_dataset::DatasetFileReader::Open(path));
  Dataset dataset;
  dataset.metadata = file->metadata();
  dataset.rows.reserve(static_cast<size_t>(file->rows()));
  KSELECT_RETURN_IF_ERROR(file->ForEachBatch({}, [&](const arrow::RecordBatch& batch, int64_t) {
    arrow_dataset::AppendRows(batch, dataset.rows);
    return Status::Ok();
  }));
  return dataset;
}

namespace arrow_dataset {
namespace {

// Appends one non-null column of an export table.
template <typename Builder, typename Values>
Status AppendExportColumn(const std::string& name, const Values& values,
                          const std::shared_ptr<arrow::DataType>& type, const std::string& path,
                          std::vector<std::shared_ptr<arrow::Field>>* fields,
                          std::vector<std::shared_ptr<arrow::Array>>* arrays) {
  Builder builder;
  std::shared_ptr<arrow::Array> array;
  auto s = builder.AppendValues(values);
  if (s.ok()) s = builder.Finish(&array);
  if (!s.ok()) return FromArrow(s, path + ": column " + name);
  fields->push_back(arrow::field(name, type, false));
  arrays->push_back(array);
  return Status::Ok();
}

}  // namespace
}  // namespace arrow_dataset

Status WriteExportTable(const ExportTable& export_table, const std::string& path) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& [name, values] : export_table.string_columns) {
    KSELECT_CHECK(static_cast<int64_t>(values.size()) == export_table.rows);
    KSELECT_RETURN_IF_ERROR(arrow_dataset::AppendExportColumn<arrow::StringBuilder>(
        name, values, arrow::utf8(), path, &fields, &arrays));
  }
  for (const auto& [name, values] : export_table.double_columns) {
    KSELECT_CHECK(static_cast<int64_t>(values.size()) == export_table.rows);
    KSELECT_RETURN_IF_ERROR(arrow_dataset::AppendExportColumn<arrow::DoubleBuilder>(
        name, values, arrow::float64(), path, &fields, &arrays));
  }
  std::vector<std::string> keys, values;
  for (const auto& [key, value] : export_table.metadata) {
    keys.push_back(key);
    values.push_back(value);
  }
  auto schema = arrow::schema(fields, arrow::key_value_metadata(keys, values));
  return arrow_dataset::WriteTableAtomically(*arrow::Table::Make(schema, arrays, export_table.rows),
                                             path);
}

}  // namespace kselect
