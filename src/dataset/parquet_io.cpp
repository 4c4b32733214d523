// The canonical dataset on Arrow/Parquet: the only file that includes Arrow headers.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/properties.h>

#include <filesystem>
#include <variant>

#include "core/text.h"
#include "kselect/dataset.h"
#include "kselect/version.h"

namespace kselect {
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
arrow::Status AppendColumn(Builder& builder, const std::vector<DatasetRow>& rows,
                           Member<T> member) {
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
                                                         const std::vector<DatasetRow>& rows) {
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

// Arrow stores any bytes in a string column; a value that is not UTF-8 would fail much later, in
// a JSON dump that names neither file nor column. Refuse it on reading, naming both.
Status CheckUtf8Column(const arrow::Array& chunk, const std::string& path, std::string_view column,
                       size_t offset) {
  const auto& typed = static_cast<const arrow::StringArray&>(chunk);
  for (int64_t i = 0; i < typed.length(); ++i) {
    if (typed.IsNull(i) || text::CheckUtf8(typed.GetView(i), "").ok()) continue;
    return SchemaMismatchError(path + ": column '" + std::string(column) + "', row " +
                               std::to_string(offset + static_cast<size_t>(i)) +
                               ": text that is not valid UTF-8");
  }
  return Status::Ok();
}

// Large row groups compress the measured figures about 12 % better than 64 Ki rows (zstd sees
// more of each column at once); a million rows of this schema is about 15 MB compressed.
constexpr int64_t kRowsPerGroup = 1 << 20;

Status WriteTableTo(const arrow::Table& table, const std::string& path) {
  auto sink = arrow::io::FileOutputStream::Open(path);
  if (!sink.ok()) return FromArrow(sink.status(), path);
  auto properties = parquet::WriterProperties::Builder()
                        .compression(parquet::Compression::ZSTD)
                        ->compression_level(9)
                        ->build();
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  KSELECT_RETURN_IF_ERROR(
      FromArrow(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), *sink,
                                           kRowsPerGroup, properties, arrow_properties),
                path));
  return FromArrow((*sink)->Close(), path);
}

// Writes beside the target and renames: readers never see a half-written file, and a failed
// write leaves an existing file untouched.
Status WriteTableAtomically(const arrow::Table& table, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return IoError(path + ": folder " + dir.string() + " does not exist");
  }
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

}  // namespace

Status WriteDataset(const Dataset& dataset, const std::string& path) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const ColumnAccess& column : Accessors()) {
    fields.push_back(arrow::field(std::string(column.name), ArrowTypeOf(column.type), true));
    auto array = BuildColumn(column, dataset.rows);
    if (!array.ok())
      return FromArrow(array.status(), path + ": column " + std::string(column.name));
    arrays.push_back(*array);
  }
  std::map<std::string, std::string> metadata = dataset.metadata;
  metadata[std::string(kMetaSchemaVersion)] =
      std::to_string(kDatasetSchemaMajor) + "." + std::to_string(kDatasetSchemaMinor);
  metadata[std::string(kMetaRows)] = std::to_string(dataset.rows.size());
  if (!metadata.contains(std::string(kMetaTool))) {
    metadata[std::string(kMetaTool)] = ToolDescription();
  }
  if (!metadata.contains(std::string(kMetaCreatedAt))) {
    metadata[std::string(kMetaCreatedAt)] = text::UtcNowIso8601();
  }
  std::vector<std::string> keys, values;
  for (const auto& [key, value] : metadata) {
    keys.push_back(key);
    values.push_back(value);
  }
  auto schema = arrow::schema(fields, arrow::key_value_metadata(keys, values));
  auto table = arrow::Table::Make(schema, arrays, static_cast<int64_t>(dataset.rows.size()));
  return WriteTableAtomically(*table, path);
}

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

Status WriteExportTable(const ExportTable& export_table, const std::string& path) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  for (const auto& [name, values] : export_table.string_columns) {
    KSELECT_CHECK(static_cast<int64_t>(values.size()) == export_table.rows);
    KSELECT_RETURN_IF_ERROR(AppendExportColumn<arrow::StringBuilder>(name, values, arrow::utf8(),
                                                                     path, &fields, &arrays));
  }
  for (const auto& [name, values] : export_table.double_columns) {
    KSELECT_CHECK(static_cast<int64_t>(values.size()) == export_table.rows);
    KSELECT_RETURN_IF_ERROR(AppendExportColumn<arrow::DoubleBuilder>(name, values, arrow::float64(),
                                                                     path, &fields, &arrays));
  }
  std::vector<std::string> keys, values;
  for (const auto& [key, value] : export_table.metadata) {
    keys.push_back(key);
    values.push_back(value);
  }
  auto schema = arrow::schema(fields, arrow::key_value_metadata(keys, values));
  return WriteTableAtomically(*arrow::Table::Make(schema, arrays, export_table.rows), path);
}

StatusOr<Dataset> ReadDataset(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return NotFoundError(path + ": no such file");
  auto input = arrow::io::ReadableFile::Open(path);
  if (!input.ok()) return FromArrow(input.status(), path);
  std::shared_ptr<arrow::Table> table;
  try {
    auto reader = parquet::arrow::OpenFile(*input, arrow::default_memory_pool());
    if (!reader.ok()) {
      return ParseError(path + ": not a readable Parquet file: " + reader.status().ToString());
    }
    auto read = (*reader)->ReadTable();
    if (!read.ok())
      return ParseError(path + ": cannot read the table: " + read.status().ToString());
    table = *read;
  } catch (const parquet::ParquetException& e) {
    return ParseError(path + ": not a readable Parquet file: " + e.what());
  }

  Dataset dataset;
  const auto& kv = table->schema()->metadata();
  if (kv) {
    for (int64_t i = 0; i < kv->size(); ++i) {
      if (kv->key(i).rfind("kselect.", 0) == 0) dataset.metadata[kv->key(i)] = kv->value(i);
    }
  }
  const auto version = dataset.metadata.find(std::string(kMetaSchemaVersion));
  if (version == dataset.metadata.end()) {
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
  for (const auto& field : table->schema()->fields()) {
    const auto it = std::find_if(accessors.begin(), accessors.end(),
                                 [&](const ColumnAccess& c) { return c.name == field->name(); });
    if (it == accessors.end()) {
      return SchemaMismatchError(path + ": unknown column '" + field->name() +
                                 "' (not in dataset schema " + version->second + ")");
    }
    if (const size_t count = table->schema()->GetAllFieldIndices(field->name()).size(); count > 1) {
      return SchemaMismatchError(path + ": column '" + field->name() + "' is duplicated (" +
                                 std::to_string(count) + " columns of that name)");
    }
    if (!field->type()->Equals(*ArrowTypeOf(it->type))) {
      return SchemaMismatchError(path + ": column '" + field->name() + "' has type " +
                                 field->type()->ToString() + ", expected " +
                                 std::string(ColumnTypeName(it->type)));
    }
  }
  dataset.rows.resize(static_cast<size_t>(table->num_rows()));
  for (const ColumnAccess& column : accessors) {
    const auto chunked = table->GetColumnByName(std::string(column.name));
    if (!chunked) {
      return SchemaMismatchError(path + ": column '" + std::string(column.name) + "' is missing");
    }
    size_t offset = 0;
    Status column_status;
    for (const auto& chunk : chunked->chunks()) {
      std::visit(
          [&](auto member) {
            using T = typename std::remove_reference_t<decltype(DatasetRow{}.*member)>::value_type;
            if constexpr (std::is_same_v<T, std::string>) {
              ReadChunk<arrow::StringArray>(*chunk, dataset.rows, offset, member);
              if (column_status.ok()) {
                column_status = CheckUtf8Column(*chunk, path, column.name, offset);
              }
            } else if constexpr (std::is_same_v<T, int64_t>) {
              ReadChunk<arrow::Int64Array>(*chunk, dataset.rows, offset, member);
            } else if constexpr (std::is_same_v<T, double>) {
              ReadChunk<arrow::DoubleArray>(*chunk, dataset.rows, offset, member);
            } else {
              ReadChunk<arrow::BooleanArray>(*chunk, dataset.rows, offset, member);
            }
          },
          column.member);
      offset += static_cast<size_t>(chunk->length());
    }
    KSELECT_RETURN_IF_ERROR(column_status);
  }
  return dataset;
}

}  // namespace kselect
