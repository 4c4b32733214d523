#include <gtest/gtest.h>

#include <cmath>

#include "core/text.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(KSELECT_FIXTURE_DIR) + "/kselect/" + name;
}

StatusOr<IngestResult> Ingest(const std::string& name) {
  return IngestFile(Fixture(name), std::nullopt, IngestOptions{});
}

TEST(KselectJsonlTest, ParsesRunsAndEveryMeasurementKind) {
  auto result = Ingest("bench_small.jsonl");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->runs.size(), 1u);
  const RunInfo& run = result->runs[0];
  EXPECT_EQ(run.run_id, "h200-test-0001");
  EXPECT_EQ(run.hardware.device_kind, "nvidia-h200");
  EXPECT_EQ(run.hardware.sm_count, 132);
  EXPECT_EQ(run.method.rotating_buffer_bytes, 268435456);
  ASSERT_EQ(result->measurements.size(), 9u);

  const Measurement& first = result->measurements[0];
  EXPECT_TRUE(first.is_valid);
  const auto& gemm = std::get<GemmProblem>(first.problem);
  EXPECT_EQ(gemm.n, 4096);
  EXPECT_EQ(gemm.layout.BlasOps(), "TN");
  // TFLOPS and bandwidth derived from latency: 2*1*4096*4096 / 12 us.
  EXPECT_NEAR(first.tflops, 2.0 * 4096 * 4096 / 0.012e-3 / 1e12, 1e-9);
  EXPECT_EQ(first.peer_rank.value_or(-1), 1);
  EXPECT_EQ(std::get<CublasLtConfig>(first.config).cluster_shape_id, 2);
  EXPECT_EQ(first.method.name, "kselect.bench");

  EXPECT_FALSE(result->measurements[3].is_valid);  // latency null
  EXPECT_NE(result->measurements[3].invalid_reason.find("NaN"), std::string::npos);
  EXPECT_FALSE(result->measurements[4].is_valid);  // latency -1
  EXPECT_NE(result->measurements[4].invalid_reason.find("not positive"), std::string::npos);
  EXPECT_TRUE(result->measurements[5].is_valid);  // tile engine config
  EXPECT_EQ(ProviderOf(result->measurements[5].config), Provider::kTile);
  EXPECT_TRUE(std::holds_alternative<ConvProblem>(result->measurements[6].problem));
  EXPECT_EQ(std::get<CudnnConfig>(result->measurements[6].config).knobs.size(), 2u);
  EXPECT_TRUE(result->measurements[7].aborted);
  EXPECT_FALSE(result->measurements[7].is_valid);
  EXPECT_DOUBLE_EQ(result->measurements[7].abort_bound_ms, 0.5);
  EXPECT_EQ(result->measurements[8].invalid_reason, "cannot implement: workspace too large");
}

TEST(KselectJsonlTest, RunIdAndDeviceOverrides) {
  IngestOptions options;
  options.run_id = "renamed";
  auto result = IngestFile(Fixture("bench_small.jsonl"), InputFormat::kKselectJsonl, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (const auto& m : result->measurements) EXPECT_EQ(m.run_id, "renamed");
}

struct BadCase {
  const char* file;
  StatusCode code;
  const char* message_part;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.file;
}

class KselectJsonlBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(KselectJsonlBadInputTest, FailsWithFileLineAndReason) {
  const BadCase& c = GetParam();
  auto result = Ingest(c.file);
  ASSERT_FALSE(result.ok()) << c.file;
  EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();
  EXPECT_NE(result.status().message().find(c.file), std::string::npos)
      << result.status().ToString();
  EXPECT_NE(result.status().message().find(c.message_part), std::string::npos)
      << result.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, KselectJsonlBadInputTest,
    ::testing::Values(
        BadCase{"bench_truncated.jsonl", StatusCode::kParseError, ":4: truncated final record"},
        BadCase{"bench_bad_type.jsonl", StatusCode::kParseError,
                ":2.problem.m: expected an integer"},
        BadCase{"bench_no_run.jsonl", StatusCode::kParseError, "has no run record"},
        BadCase{"bench_bad_version.jsonl", StatusCode::kSchemaMismatch, "format_version 2"},
        BadCase{"bench_impossible_shape.jsonl", StatusCode::kParseError, "m must be positive"},
        BadCase{"bench_unknown_field.jsonl", StatusCode::kParseError, "latncy_ms: unknown field"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(KselectJsonlTest, EmptyAndNonUtf8FilesAreRejected) {
  auto empty = ParseKselectJsonl("", "empty.jsonl", {});
  EXPECT_FALSE(empty.ok());
  const std::string dir = ::testing::TempDir();
  ASSERT_TRUE(text::WriteFileAtomically(dir + "/bad.jsonl", "{\"type\":\"run\xff\"}\n").ok());
  auto bad = IngestFile(dir + "/bad.jsonl", std::nullopt, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.jsonl:1:"), std::string::npos);
  EXPECT_NE(bad.status().message().find("invalid UTF-8"), std::string::npos);
  ASSERT_TRUE(text::WriteFileAtomically(dir + "/blank.jsonl", "  \n\n").ok());
  auto blank = IngestFile(dir + "/blank.jsonl", std::nullopt, {});
  ASSERT_FALSE(blank.ok());
  EXPECT_NE(blank.status().message().find("empty"), std::string::npos);
}

TEST(KselectJsonlTest, FormatDetection) {
  EXPECT_EQ(*DetectInputFormat("{\"type\":\"run\",\"format\":\"kselect.bench.jsonl\"}", "x"),
            InputFormat::kKselectJsonl);
  EXPECT_EQ(*DetectInputFormat("{\"name\": \"gemm_universal_fp8\"}", "x"),
            InputFormat::kCkTileJson);
  EXPECT_EQ(*DetectInputFormat("CK Tile Wide Coverage Benchmark Batch 1\n", "x"),
            InputFormat::kCkTileLog);
  EXPECT_EQ(*DetectInputFormat("kernel,problem_idx,N,C\n", "x"), InputFormat::kCkConvCsv);
  EXPECT_FALSE(DetectInputFormat("hello world", "x").ok());
  EXPECT_EQ(*ParseInputFormat("ck-log"), InputFormat::kCkTileLog);
  EXPECT_FALSE(ParseInputFormat("xml").ok());
}

// A value nested 100,000 deep crashed nlohmann's recursive code; it is refused before parsing,
// and no error prints more than a bounded excerpt of the record.
TEST(KselectJsonlTest, DeepNestingIsAnErrorNamingTheLine) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto result = ParseKselectJsonl("\n" + deep + "\n", "deep.jsonl", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kParseError);
  EXPECT_NE(result.status().message().find("deep.jsonl:2:"), std::string::npos);
  EXPECT_NE(result.status().message().find("nested deeper than"), std::string::npos);
  EXPECT_LT(result.status().message().size(), 500u);

  const std::string long_bad =
      "{\"type\": \"run\", \"x\": \"" + std::string(50000, 'a') + "\" oops}";
  auto bad = ParseKselectJsonl(long_bad + "\n", "long.jsonl", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_LT(bad.status().message().size(), 600u) << bad.status().message().size();
}

}  // namespace
}  // namespace kselect
