#include "kselect/dataset.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <cmath>
#include <filesystem>

#include "core/text.h"
#include "dataset/dataset_fixture.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;

class DatasetTest : public testing::DatasetFolderTest {};

TEST_F(DatasetTest, ParquetRoundTripKeepsEveryRowAndField) {
  const Dataset original = FromFixture("bench_small.jsonl");
  ASSERT_EQ(original.rows.size(), 8u);  // 9 records, one repeated pair merged
  ASSERT_TRUE(WriteDataset(original, Path("small.parquet")).ok());
  auto back = ReadDataset(Path("small.parquet"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->rows.size(), original.rows.size());
  for (size_t i = 0; i < original.rows.size(); ++i) {
#define KSELECT_EXPECT_FIELD(name, type, group, doc) \
  EXPECT_EQ(back->rows[i].name, original.rows[i].name) << "row " << i << " column " #name;
    KSELECT_DATASET_COLUMNS(KSELECT_EXPECT_FIELD)
#undef KSELECT_EXPECT_FIELD
    EXPECT_EQ(back->rows[i], original.rows[i]) << "row " << i;
  }
  EXPECT_EQ(back->metadata.at(std::string(kMetaSchemaVersion)), "1.2");
  EXPECT_EQ(back->metadata.at(std::string(kMetaRows)), "8");
  EXPECT_FALSE(back->metadata.at(std::string(kMetaTool)).empty());

  // Rows carry the typed config, the device and the method; the typed structs come back.
  const DatasetRow& row = back->rows[0];
  EXPECT_EQ(row.device_kind.value_or(""), "nvidia-h200");
  EXPECT_EQ(row.rotating_buffer_bytes.value_or(0), 268435456);
  EXPECT_EQ(row.duplicates_merged.value_or(0), 2);
  EXPECT_DOUBLE_EQ(row.latency_ms.value_or(0), 0.013);
  for (const DatasetRow& r : back->rows) {
    auto m = MeasurementFromRow(r);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(ConfigKey(m->config), r.config_key.value_or(""));
    EXPECT_EQ(ProblemToString(m->problem), r.problem_key.value_or(""));
  }
  EXPECT_TRUE(back->rows[1].high_cv.value_or(false));
  // Only the temporary-free final file remains.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), {}), 1);
}

// peer_rank_b (schema 1.1) round-trips; a 1.0 file without the column reads, merges and filters
// with every row's peer_rank_b null.
TEST_F(DatasetTest, SecondPeerRankRoundTripsAndFilesWithoutTheColumnStillRead) {
  Dataset d = FromFixture("bench_small.jsonl");
  ASSERT_GE(d.rows.size(), 3u);
  d.rows[0].peer_rank_b = 1;
  d.rows[2].peer_rank_b = 4;
  ASSERT_TRUE(WriteDataset(d, Path("b.parquet")).ok());
  auto back = ReadDataset(Path("b.parquet"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rows[0].peer_rank_b.value_or(-1), 1);
  EXPECT_FALSE(back->rows[1].peer_rank_b.has_value());
  EXPECT_EQ(back->rows[2].peer_rank_b.value_or(-1), 4);
  EXPECT_EQ(MeasurementFromRow(back->rows[2]).value().peer_rank_b.value_or(-1), 4);

  // The same file as kselect 1.0 wrote it: no peer_rank_b column.
  auto input = arrow::io::ReadableFile::Open(Path("b.parquet"));
  ASSERT_TRUE(input.ok());
  auto reader = parquet::arrow::OpenFile(*input, arrow::default_memory_pool());
  ASSERT_TRUE(reader.ok());
  auto read = (*reader)->ReadTable();
  ASSERT_TRUE(read.ok());
  const std::shared_ptr<arrow::Table> table = *read;
  const int column = table->schema()->GetFieldIndex("peer_rank_b");
  ASSERT_GE(column, 0);
  auto old_table = table->RemoveColumn(column);
  ASSERT_TRUE(old_table.ok());
  auto metadata = table->schema()->metadata()->Copy();
  ASSERT_TRUE(metadata->Set(std::string(kMetaSchemaVersion), "1.0").ok());
  WriteRaw(Path("old.parquet"), *(*old_table)->ReplaceSchemaMetadata(metadata));
  auto old = ReadDataset(Path("old.parquet"));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_EQ(old->rows.size(), d.rows.size());
  for (const DatasetRow& row : old->rows) EXPECT_FALSE(row.peer_rank_b.has_value());
  EXPECT_EQ(old->rows[0].peer_rank, back->rows[0].peer_rank);
  // Streaming writers copy its batches, filling the column with nulls.
  auto merged = MergeDatasetFiles({Path("old.parquet"), Path("b.parquet")}, Path("merged.parquet"),
                                  {}, false, MergeScope::kAcrossRuns);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  auto filtered = FilterDatasetFile(Path("old.parquet"), Path("filtered.parquet"), RowFilter{},
                                    nullptr, [] { return std::map<std::string, std::string>{}; });
  ASSERT_TRUE(filtered.ok()) << filtered.status().ToString();
  auto filtered_back = ReadDataset(Path("filtered.parquet"));
  ASSERT_TRUE(filtered_back.ok()) << filtered_back.status().ToString();
  EXPECT_EQ(filtered_back->rows.size(), d.rows.size());
  // --peer-picks-only keeps the rows either heuristic listed.
  RowFilter picks;
  picks.peer_picks_only = true;
  const Dataset kept = FilterDataset(*back, picks);
  for (const DatasetRow& row : kept.rows) {
    EXPECT_TRUE(row.peer_rank.value_or(0) > 0 || row.peer_rank_b.value_or(0) > 0);
  }
  int64_t listed = 0;
  for (const DatasetRow& row : back->rows) {
    listed += row.peer_rank.value_or(0) > 0 || row.peer_rank_b.value_or(0) > 0;
  }
  EXPECT_EQ(static_cast<int64_t>(kept.rows.size()), listed);
}

TEST_F(DatasetTest, WriteIntoAMissingFolderFailsAndLeavesNothing) {
  const Dataset d = FromFixture("bench_small.jsonl");
  const Status s = WriteDataset(d, Path("no/such/dir/x.parquet"));
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_FALSE(fs::exists(Path("no")));
}

TEST_F(DatasetTest, RefusesOtherSchemaVersionsUnknownMissingAndMistypedColumns) {
  const auto meta = [](const std::string& version) {
    return arrow::key_value_metadata({"kselect.schema_version"}, {version});
  };
  arrow::Int64Builder ints;
  ASSERT_TRUE(ints.Append(4).ok());
  std::shared_ptr<arrow::Array> int_array;
  ASSERT_TRUE(ints.Finish(&int_array).ok());
  arrow::StringBuilder strings;
  ASSERT_TRUE(strings.Append("4").ok());
  std::shared_ptr<arrow::Array> string_array;
  ASSERT_TRUE(strings.Finish(&string_array).ok());

  WriteRaw(Path("v2.parquet"), arrow::schema({arrow::field("m", arrow::int64())}, meta("2.0")),
           {int_array});
  auto v2 = ReadDataset(Path("v2.parquet"));
  EXPECT_EQ(v2.status().code(), StatusCode::kSchemaMismatch);
  EXPECT_NE(v2.status().message().find("schema version 2.0"), std::string::npos);

  WriteRaw(Path("foreign.parquet"), arrow::schema({arrow::field("m", arrow::int64())}),
           {int_array});
  EXPECT_NE(ReadDataset(Path("foreign.parquet")).status().message().find("not a kselect dataset"),
            std::string::npos);

  WriteRaw(Path("unknown.parquet"),
           arrow::schema({arrow::field("mm", arrow::int64())}, meta("1.0")), {int_array});
  EXPECT_NE(ReadDataset(Path("unknown.parquet")).status().message().find("unknown column 'mm'"),
            std::string::npos);

  WriteRaw(Path("typed.parquet"), arrow::schema({arrow::field("m", arrow::utf8())}, meta("1.0")),
           {string_array});
  EXPECT_NE(
      ReadDataset(Path("typed.parquet")).status().message().find("column 'm' has type string"),
      std::string::npos);

  WriteRaw(Path("missing.parquet"), arrow::schema({arrow::field("m", arrow::int64())}, meta("1.0")),
           {int_array});
  EXPECT_NE(ReadDataset(Path("missing.parquet")).status().message().find("is missing"),
            std::string::npos);

  ASSERT_TRUE(text::WriteFileAtomically(Path("text.parquet"), "m,n,k\n1,2,3\n").ok());
  EXPECT_EQ(ReadDataset(Path("text.parquet")).status().code(), StatusCode::kParseError);
  EXPECT_EQ(ReadDataset(Path("absent.parquet")).status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetTest, MergeRefusesMixedDevicesAndMergesRepeats) {
  const Dataset h200 = FromFixture("bench_small.jsonl");
  const Dataset h100 = FromFixture("bench_h100.jsonl");
  auto refused = MergeDatasets({h200, h100}, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--allow-mixed"), std::string::npos);
  auto mixed = MergeDatasets({h200, h100}, true);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->rows.size(), h200.rows.size() + h100.rows.size());

  // The same run merged twice: every (run, problem, config) appears once, counts add up.
  auto twice = MergeDatasets({h200, h200}, false);
  ASSERT_TRUE(twice.ok());
  ASSERT_EQ(twice->rows.size(), h200.rows.size());
  EXPECT_EQ(twice->rows[0].duplicates_merged.value_or(0), 4);
  EXPECT_DOUBLE_EQ(twice->rows[0].latency_ms.value_or(0), h200.rows[0].latency_ms.value_or(-1));
}

TEST_F(DatasetTest, MergeAcrossRunsAveragesIndependentCollections) {
  const Dataset first = FromFixture("bench_small.jsonl");
  // A second collection of the same pairs on another GPU of the kind: every latency 10 % longer,
  // one valid pair aborted there, one aborted-only pair.
  Dataset second = first;
  size_t valid_row = 0, aborted_row = 0;
  bool have_valid = false, have_aborted = false;
  for (size_t i = 0; i < second.rows.size(); ++i) {
    DatasetRow& row = second.rows[i];
    row.run_id = "second-run";
    row.device_uuid = "GPU-second";
    if (row.latency_ms) *row.latency_ms *= 1.1;
    if (row.measured_tflops) *row.measured_tflops /= 1.1;
    if (row.is_valid.value_or(false) && !have_valid) {
      have_valid = true;
      valid_row = i;
    }
    if (row.aborted.value_or(false) && !have_aborted) {
      have_aborted = true;
      aborted_row = i;
    }
  }
  ASSERT_TRUE(have_valid && have_aborted);

  // Within runs nothing merges; across runs every pair appears once.
  auto within = MergeDatasets({first, second}, false);
  ASSERT_TRUE(within.ok());
  EXPECT_EQ(within->rows.size(), 2 * first.rows.size());
  auto across = MergeDatasets({first, second}, false, MergeScope::kAcrossRuns);
  ASSERT_TRUE(across.ok()) << across.status().ToString();
  ASSERT_EQ(across->rows.size(), first.rows.size());
  const DatasetRow& valid = across->rows[valid_row];
  EXPECT_DOUBLE_EQ(*valid.latency_ms,
                   0.5 * (*first.rows[valid_row].latency_ms + *second.rows[valid_row].latency_ms));
  const std::string first_run = *first.rows[valid_row].run_id;
  EXPECT_EQ(*valid.run_id, std::min(first_run, std::string("second-run")) +
                               std::string(kMergedRunSeparator) +
                               std::max(first_run, std::string("second-run")));
  EXPECT_NE(valid.device_uuid.value_or("").find("GPU-second"), std::string::npos);
  EXPECT_NE(valid.tool_version.value_or("").find("kselect"), std::string::npos);
  // Aborted in both runs: still aborted, with the median of the two.
  const DatasetRow& aborted = across->rows[aborted_row];
  EXPECT_TRUE(aborted.aborted.value_or(false));
  EXPECT_FALSE(aborted.is_valid.value_or(true));
  EXPECT_DOUBLE_EQ(*aborted.latency_ms, 0.5 * (*first.rows[aborted_row].latency_ms +
                                               *second.rows[aborted_row].latency_ms));

  // A valid measurement wins over an aborted repeat of another run.
  Dataset third = second;
  for (DatasetRow& row : third.rows) row.run_id = "third-run";
  third.rows[valid_row].is_valid = false;
  third.rows[valid_row].aborted = true;
  *third.rows[valid_row].latency_ms *= 5;
  auto with_abort = MergeDatasets({first, third}, false, MergeScope::kAcrossRuns);
  ASSERT_TRUE(with_abort.ok());
  EXPECT_TRUE(with_abort->rows[valid_row].is_valid.value_or(false));
  EXPECT_DOUBLE_EQ(*with_abort->rows[valid_row].latency_ms, *first.rows[valid_row].latency_ms);

  // Never across device kinds.
  const Dataset h100 = FromFixture("bench_h100.jsonl");
  EXPECT_FALSE(MergeDatasets({first, h100}, false, MergeScope::kAcrossRuns).ok());
}

TEST_F(DatasetTest, FilterAndSummary) {
  const Dataset d = FromFixture("bench_small.jsonl");
  RowFilter big;
  big.m = 4096;
  EXPECT_EQ(FilterDataset(d, big).rows.size(), 5u);
  big.valid_only = true;
  EXPECT_EQ(FilterDataset(d, big).rows.size(), 1u);
  RowFilter cudnn;
  cudnn.provider = "cudnn";
  EXPECT_EQ(FilterDataset(d, cudnn).rows.size(), 1u);
  RowFilter other_run;
  other_run.run_id = "nope";
  EXPECT_TRUE(FilterDataset(d, other_run).rows.empty());

  const DatasetSummary s = SummarizeDataset(d);
  EXPECT_EQ(s.rows, 8);
  EXPECT_EQ(s.valid_rows, 4);
  EXPECT_EQ(s.invalid_rows, 4);
  EXPECT_EQ(s.high_cv_rows, 2);  // the noisy config, and the merged pair whose repeats disagree
  EXPECT_EQ(s.aborted_rows, 1);
  EXPECT_EQ(s.shapes, 3);
  EXPECT_EQ(s.providers.at("cublaslt"), 6);
  EXPECT_EQ(s.devices.at("nvidia-h200"), 8);
}

// A Parquet file may claim rows valid that are not: MeasurementFromRow applies ingest's rule
// again, and a row with an impossible or missing dimension is an error naming the column.
TEST_F(DatasetTest, RowsReadBackAreValidatedAgain) {
  const Dataset d = FromFixture("bench_small.jsonl");
  const DatasetRow* valid = nullptr;
  for (const DatasetRow& row : d.rows) {
    if (row.is_valid.value_or(false) && row.m) valid = &row;
  }
  ASSERT_NE(valid, nullptr);
  ASSERT_TRUE(MeasurementFromRow(*valid)->is_valid);
  for (const double tflops : {std::nan(""), 1e308, -1.0}) {
    DatasetRow row = *valid;
    row.measured_tflops = tflops;
    auto m = MeasurementFromRow(row);
    ASSERT_TRUE(m.ok());
    EXPECT_FALSE(m->is_valid) << tflops;
    EXPECT_NE(m->invalid_reason.find("tflops"), std::string::npos) << m->invalid_reason;
  }
  DatasetRow negative = *valid;
  negative.m = -5;
  auto bad = MeasurementFromRow(negative);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("column m is -5"), std::string::npos)
      << bad.status().message();
  DatasetRow null_m = *valid;
  null_m.m.reset();
  bad = MeasurementFromRow(null_m);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("column m is null"), std::string::npos);
}

TEST_F(DatasetTest, DuplicatedColumnsAndNonUtf8TextAreNamed) {
  arrow::Int64Builder ints;
  ASSERT_TRUE(ints.Append(4).ok());
  std::shared_ptr<arrow::Array> int_array;
  ASSERT_TRUE(ints.Finish(&int_array).ok());
  WriteRaw(Path("twice.parquet"),
           arrow::schema({arrow::field("m", arrow::int64()), arrow::field("m", arrow::int64())},
                         arrow::key_value_metadata({"kselect.schema_version"}, {"1.0"})),
           {int_array, int_array});
  const Status twice = ReadDataset(Path("twice.parquet")).status();
  EXPECT_EQ(twice.code(), StatusCode::kSchemaMismatch);
  EXPECT_NE(twice.message().find("column 'm' is duplicated"), std::string::npos) << twice.message();

  Dataset d = FromFixture("bench_small.jsonl");
  d.rows[1].run_id = std::string("bad\xff");
  ASSERT_TRUE(WriteDataset(d, Path("latin1.parquet")).ok());
  const Status latin1 = ReadDataset(Path("latin1.parquet")).status();
  EXPECT_NE(latin1.message().find("latin1.parquet: column 'run_id', row 1: text that is not "
                                  "valid UTF-8"),
            std::string::npos)
      << latin1.message();
}

}  // namespace
}  // namespace kselect
