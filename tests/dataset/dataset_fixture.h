// What the dataset tests share: a fresh folder per test, the kselect JSONL fixtures as datasets,
// and Parquet files written as a foreign tool would.
#pragma once

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>

#include <filesystem>
#include <string>

#include "kselect/dataset.h"
#include "kselect/ingest.h"

namespace kselect::testing {

class DatasetFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* unit = ::testing::UnitTest::GetInstance();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kselect_dataset_" + std::to_string(unit->random_seed()) + "_" +
            unit->current_test_info()->test_suite_name() + "_" + unit->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // tests/fixtures/kselect/<name> ingested: repeats merged, one row per (run, problem, config).
  static Dataset FromFixture(const std::string& name) {
    auto result = IngestFile(std::string(KSELECT_FIXTURE_DIR) + "/kselect/" + name, std::nullopt,
                             IngestOptions{});
    KSELECT_CHECK_MSG(result.ok(), result.status().ToString());
    Dataset d;
    for (const Measurement& m : MergeDuplicateMeasurements(result->measurements)) {
      d.rows.push_back(RowFromMeasurement(m, result->runs.front()));
    }
    return d;
  }

  // Writes a Parquet file with arbitrary columns and metadata, as a foreign tool would.
  static void WriteRaw(const std::string& path, const arrow::Table& table) {
    auto sink = arrow::io::FileOutputStream::Open(path);
    ASSERT_TRUE(sink.ok());
    auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    ASSERT_TRUE(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), *sink, 1024,
                                           parquet::default_writer_properties(), arrow_properties)
                    .ok());
    ASSERT_TRUE((*sink)->Close().ok());
  }
  static void WriteRaw(const std::string& path, std::shared_ptr<arrow::Schema> schema,
                       std::vector<std::shared_ptr<arrow::Array>> arrays) {
    WriteRaw(path, *arrow::Table::Make(schema, arrays));
  }

  std::filesystem::path dir_;
};

}  // namespace kselect::testing
