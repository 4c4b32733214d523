// The canonical dataset on Arrow/Parquet, read and written in bounded memory: a reader that
// streams record batches of chosen columns, checked by the dataset's value rules, and a writer
// that takes batches or rows. Internal to src/dataset (it includes Arrow headers).
#pragma once

#include <arrow/api.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kselect/dataset.h"

namespace kselect::arrow_dataset {

// Rows per streamed batch: a few MB of decoded columns, small beside a whole file.
inline constexpr int64_t kBatchRows = 1 << 16;

// One opened dataset file: its footer, schema and metadata checked (schema major version, exact
// column set and types, the kselect.rows metadata against the footer's row count).
class DatasetFileReader {
 public:
  static StatusOr<std::unique_ptr<DatasetFileReader>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  // The file's kselect.* metadata.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  int64_t rows() const { return rows_; }

  // Streams `columns` (empty: every column, in the canonical order) batch by batch. The columns
  // the value rules need are always read too. Each batch has passed the rules: a null provider,
  // problem_key, config_key or run_id, or a null or non-positive GEMM dimension, is an error
  // naming the file, column and row; a row claimed valid whose figures are impossible comes
  // marked invalid with the reason (Measurement::Validate's rule). `visit` gets the batch and the
  // file row of its first row. Damaged pages (checksum), a stream shorter or longer than the
  // footer says, and unreadable data are errors naming the file.
  Status ForEachBatch(const std::vector<std::string>& columns,
                      const std::function<Status(const arrow::RecordBatch&, int64_t)>& visit);

 private:
  std::string path_;
  std::map<std::string, std::string> metadata_;
  int64_t rows_ = 0;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
};

// Writes a dataset file through a temporary beside `path`, renamed by Finish(); dropped without
// Finish(), the temporary is removed and `path` is untouched. `rows` is the number of rows that
// will be written (recorded as kselect.rows and checked by Finish()).
class DatasetFileWriter {
 public:
  static StatusOr<std::unique_ptr<DatasetFileWriter>> Open(
      const std::string& path, std::map<std::string, std::string> metadata, int64_t rows);
  ~DatasetFileWriter();

  // A batch holding every dataset column (in any order).
  Status Write(const arrow::RecordBatch& batch);
  Status WriteRows(std::span<const DatasetRow> rows);
  Status Finish();

 private:
  DatasetFileWriter() = default;
  std::string path_, temp_;
  int64_t announced_rows_ = 0, written_rows_ = 0;
  std::shared_ptr<arrow::Schema> schema_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
  bool finished_ = false;
};

// Row `index` of a batch; the columns the batch lacks are null.
DatasetRow RowOfBatch(const arrow::RecordBatch& batch, int64_t index);
// Appends every row of a batch, likewise.
void AppendRows(const arrow::RecordBatch& batch, std::vector<DatasetRow>& rows);

// The array of column `name` in `batch`, or nullptr.
const arrow::Array* Column(const arrow::RecordBatch& batch, std::string_view name);

}  // namespace kselect::arrow_dataset
