// ParseCkTileLog on documented streaming logs: good, truncated and malformed ones.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>

#include <gtest/gtest.h>

#include "kselect/ingest.h"
#include "testing_util.h"

namespace kselect {
namespace {

std::string ReadFixture(std::string_view name) {
  return testing_util::ReadFixture("ck", name);
}
using testing_util::Contains;

IngestOptions GfxOptions() {
  IngestOptions options;
  options.arch = "gfx950";
  options.device_kind = "mi355x";
  return options;
}

const GemmProblem& Gemm(const Measurement& m) {
  return std::get<GemmProblem>(m.problem);
}
const CkTileConfig& Config(const Measurement& m) {
  return std::get<CkTileConfig>(m.config);
}

TEST(CkTileLog, ParsesGoodLog) {
  StatusOr<IngestResult> result =
      ParseCkTileLog(ReadFixture("tile_good.log"), "data/tile_good.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 6u);
  EXPECT_EQ(result->lines_read, 110);
  EXPECT_TRUE(result->warnings.empty()) << result->warnings.front();

  const Measurement& first = result->measurements[0];
  EXPECT_EQ(first.op_type, "gemm_universal");
  EXPECT_EQ(first.kernel_name,
            "gemm_universal_fp8_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x128x128_"
            "1x4x1_16x16x128");
  EXPECT_EQ(Gemm(first).m, 1024);
  EXPECT_EQ(Gemm(first).n, 2048);
  EXPECT_EQ(Gemm(first).k, 512);
  EXPECT_EQ(Gemm(first).batch, 1);
  EXPECT_EQ(Gemm(first).layout.ToString(), "rcr");
  EXPECT_EQ(Gemm(first).dtype_a, DataType::kF8E4M3);
  EXPECT_EQ(Gemm(first).dtype_b, DataType::kF8E4M3);
  EXPECT_EQ(Gemm(first).dtype_c, DataType::kF16);
  EXPECT_EQ(Gemm(first).compute, DataType::kF32);
  EXPECT_DOUBLE_EQ(first.latency_ms, 0.0125);
  EXPECT_DOUBLE_EQ(first.tflops, 343.6);
  EXPECT_DOUBLE_EQ(first.bandwidth_gb_s, 671.1);
  EXPECT_TRUE(first.is_valid);
  EXPECT_EQ(first.invalid_reason, "");
  EXPECT_EQ(Config(first).tile_m, 128);
  EXPECT_EQ(Config(first).warp_n, 4);
  EXPECT_EQ(Config(first).warp_tile_k, 128);
  EXPECT_EQ(first.method.name, "ck_tile.streaming_log");
  EXPECT_EQ(first.method.statistic, "mean");

  // The mem-pipeline kernel gets CK's pad fix although its name says False.
  const Measurement& mem = result->measurements[1];
  EXPECT_EQ(Config(mem).pipeline, "mem");
  EXPECT_TRUE(Config(mem).pad_m);
  EXPECT_TRUE(Config(mem).pad_n);
  EXPECT_TRUE(Config(mem).pad_k);
  EXPECT_TRUE(Config(mem).persistent);
  EXPECT_EQ(Config(mem).scheduler, "interwave");
  EXPECT_TRUE(mem.is_valid);

  // Zero figures are kept, as invalid rows.
  const Measurement& zero = result->measurements[2];
  EXPECT_FALSE(zero.is_valid);
  EXPECT_FALSE(zero.invalid_reason.empty());
  EXPECT_EQ(Config(zero).pipeline, "compv4");
  EXPECT_FALSE(Config(zero).pad_m);

  // Second shape: a compact one-line block without "problem" takes the header's shape.
  const Measurement& header_only = result->measurements[4];
  EXPECT_EQ(Gemm(header_only).m, 1);
  EXPECT_EQ(Gemm(header_only).n, 4096);
  EXPECT_EQ(Gemm(header_only).k, 4096);
  EXPECT_EQ(Gemm(header_only).layout.ToString(), "rcr");
  EXPECT_EQ(Config(header_only).epilogue, "default");
  EXPECT_EQ(Config(header_only).vec_a, 16);
  EXPECT_EQ(Config(header_only).vec_b, 16);
  EXPECT_EQ(Config(header_only).vec_c, 8);
  EXPECT_TRUE(Config(header_only).pad_k);
  EXPECT_TRUE(header_only.is_valid);

  // NaN / -Infinity (as Python writes them) make an invalid row, not a lost block.
  const Measurement& nan_row = result->measurements[5];
  EXPECT_FALSE(nan_row.is_valid);
  EXPECT_TRUE(std::isnan(nan_row.latency_ms));
  EXPECT_FALSE(nan_row.invalid_reason.empty());

  // One run, id from md5 of the file name only (not the folder).
  ASSERT_EQ(result->runs.size(), 1u);
  const RunInfo& run = result->runs[0];
  EXPECT_EQ(run.run_id.size(), 12u);
  EXPECT_EQ(run.run_id, result->measurements[0].run_id);
  EXPECT_EQ(run.hardware.vendor, "amd");
  EXPECT_EQ(run.hardware.arch, "gfx950");
  EXPECT_EQ(run.hardware.device_kind, "mi355x");
  EXPECT_EQ(run.tool, "ck_tile streaming log");
  StatusOr<IngestResult> elsewhere =
      ParseCkTileLog(ReadFixture("tile_good.log"), "/other/dir/tile_good.log", GfxOptions());
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_EQ(elsewhere->runs[0].run_id, run.run_id);
}

TEST(CkTileLog, RunIdOptionOverrides) {
  IngestOptions options = GfxOptions();
  options.run_id = "my-run";
  StatusOr<IngestResult> result = ParseCkTileLog(ReadFixture("tile_good.log"), "x.log", options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->runs[0].run_id, "my-run");
  for (const Measurement& m : result->measurements) EXPECT_EQ(m.run_id, "my-run");
}

TEST(CkTileLog, SkipsTruncatedBlocksWithWarnings) {
  StatusOr<IngestResult> result =
      ParseCkTileLog(ReadFixture("tile_truncated.log"), "tile_truncated.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 2u);
  EXPECT_EQ(Gemm(result->measurements[0]).m, 256);
  EXPECT_EQ(Gemm(result->measurements[1]).m, 512);
  EXPECT_EQ(Gemm(result->measurements[1]).dtype_c, DataType::kF16);
  ASSERT_EQ(result->warnings.size(), 2u);
  EXPECT_TRUE(Contains(result->warnings[0], "tile_truncated.log:13: skipped truncated JSON block"));
  EXPECT_TRUE(Contains(result->warnings[0], "shape header at line 17"));
  EXPECT_TRUE(Contains(result->warnings[1], "tile_truncated.log:25: skipped truncated JSON block"));
  EXPECT_TRUE(Contains(result->warnings[1], "end of the file"));
}

TEST(CkTileLog, SkipsUndecodableBlockAndKeepsTheNext) {
  StatusOr<IngestResult> result =
      ParseCkTileLog(ReadFixture("tile_garbage_json.log"), "tile_garbage_json.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 1u);
  EXPECT_EQ(Gemm(result->measurements[0]).m, 64);
  EXPECT_EQ(Gemm(result->measurements[0]).dtype_a, DataType::kBF16);
  EXPECT_EQ(Gemm(result->measurements[0]).dtype_c, DataType::kBF16);
  ASSERT_EQ(result->warnings.size(), 1u);
  EXPECT_TRUE(
      Contains(result->warnings[0], "tile_garbage_json.log:5: skipped undecodable JSON block"));
}

TEST(CkTileLog, NumberOutOfRangeMakesTheBlockUndecodable) {
  const std::string text =
      "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n"
      "{\"name\": \"x\", \"perf_result\": {\"latency(ms)\": 1e99999}}\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "big.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->measurements.empty());
  ASSERT_EQ(result->warnings.size(), 2u);
  EXPECT_TRUE(Contains(result->warnings[0], "big.log:2: skipped undecodable JSON block"));
}

TEST(CkTileLog, NonNumericShapeHeaderIsAnErrorNamingTheLine) {
  StatusOr<IngestResult> result =
      ParseCkTileLog(ReadFixture("tile_bad_header.log"), "tile_bad_header.log", GfxOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(result.status().message(), "tile_bad_header.log:8:"));
  EXPECT_TRUE(Contains(result.status().message(), "M=abc"));
}

TEST(CkTileLog, BlockBeforeAnyHeaderNeedsDimensions) {
  const std::string text =
      "CK Tile Wide Coverage Benchmark Batch 1\n"
      "{\"name\": \"gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_"
      "64x64x64_1x4x1_16x16x16\", \"perf_result\": {\"latency(ms)\": 1, \"tflops(TFlops)\": 1}}\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "early.log", GfxOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status().message(), "early.log:2:"));
  EXPECT_TRUE(Contains(result.status().message(), "problem.m"));

  // With m/n/k in the block it is fine: dtype and layout come from the kernel name.
  const std::string with_dims =
      "{\"name\": \"gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_"
      "64x64x64_1x4x1_16x16x16\", \"problem\": {\"m\": 8, \"n\": 16, \"k\": 32},\n"
      " \"perf_result\": {\"latency(ms)\": 1, \"tflops(TFlops)\": 1}}\n";
  StatusOr<IngestResult> ok = ParseCkTileLog(with_dims, "early.log", GfxOptions());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->measurements.size(), 1u);
  EXPECT_EQ(Gemm(ok->measurements[0]).k, 32);
  EXPECT_EQ(Gemm(ok->measurements[0]).dtype_a, DataType::kF16);
}

TEST(CkTileLog, UnparsableKernelNameIsAnError) {
  const std::string text =
      "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n"
      "{\"name\": \"gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_"
      "64x64x64_1x4x1_16x16x16_vec8\", \"perf_result\": {\"latency(ms)\": 1, \"tflops(TFlops)\": "
      "1}}\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "names.log", GfxOptions());
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status().message(), "names.log:2:"));
  EXPECT_TRUE(Contains(result.status().message(), "vector-width"));
}

TEST(CkTileLog, WrongTypesAndInconsistentFieldsAreErrors) {
  const std::string name =
      "gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_64x64x64_1x4x1_"
      "16x16x16";
  const std::string header = "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n";
  struct Case {
    std::string block;
    std::string expected;
  };
  const Case cases[] = {
      {"{\"name\": \"" + name + "\", \"problem\": {\"m\": \"abc\"}}",
       "problem.m: expected an integer"},
      {"{\"name\": 12}", "name: expected a string"},
      {"{\"name\": \"" + name + "\", \"perf_result\": {\"latency(ms)\": \"fast\"}}",
       "perf_result.latency(ms): expected a number"},
      {"{\"name\": \"" + name + "\", \"problem\": {\"dtype_a\": \"bf16\"}}", "says dtype bf16"},
      {"{\"name\": \"" + name +
           "\", \"problem\": {\"layout_a\": \"col\", \"layout_b\": \"col\", \"layout_c\": "
           "\"row\"}}",
       "says layout ccr"},
      {"{\"name\": \"" + name + "\", \"problem\": {\"layout_a\": \"row\"}}", "only some of"},
  };
  for (const Case& c : cases) {
    StatusOr<IngestResult> result = ParseCkTileLog(header + c.block + "\n", "t.log", GfxOptions());
    ASSERT_FALSE(result.ok()) << c.block;
    EXPECT_EQ(result.status().code(), StatusCode::kParseError);
    EXPECT_TRUE(Contains(result.status().message(), "t.log:2: "));
    EXPECT_TRUE(Contains(result.status().message(), c.expected));
  }
}

TEST(CkTileLog, SplitKIsRecordedInTheConfig) {
  const std::string text =
      "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n"
      "{\"name\": \"gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_"
      "64x64x64_1x4x1_16x16x16\", \"problem\": {\"split_k\": 4}, \"perf_result\": "
      "{\"latency(ms)\": 1, \"tflops(TFlops)\": 1}}\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "sk.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->warnings.empty());
  ASSERT_EQ(result->measurements.size(), 1u);
  EXPECT_EQ(SplitKOf(result->measurements[0].config), 4);
  std::string zero = text;
  const std::string four = "\"split_k\": 4";
  zero.replace(zero.find(four), four.size(), "\"split_k\": 0");
  EXPECT_FALSE(ParseCkTileLog(zero, "sk.log", GfxOptions()).ok());
}

TEST(CkTileLog, RejectsEmptyNonLogAndInvalidUtf8) {
  StatusOr<IngestResult> empty = ParseCkTileLog(ReadFixture("empty.log"), "empty.log", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "empty.log"));

  StatusOr<IngestResult> prose = ParseCkTileLog("hello\nworld\n", "prose.txt", {});
  ASSERT_FALSE(prose.ok());
  EXPECT_TRUE(Contains(prose.status().message(), "not a CK Tile streaming log"));

  StatusOr<IngestResult> bad =
      ParseCkTileLog(ReadFixture("invalid_utf8.log"), "invalid_utf8.log", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(bad.status().message(), "invalid_utf8.log:2"));
}

TEST(CkTileLog, HeaderWithoutResultsIsOnlyAWarning) {
  StatusOr<IngestResult> result = ParseCkTileLog(
      "=====\nShape 1: M=1 N=1 K=1 dtype=fp8 layout=rcr\n=====\nFound 0 kernels\n", "none.log", {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->measurements.empty());
  EXPECT_TRUE(result->runs.empty());
  ASSERT_EQ(result->warnings.size(), 1u);
}

TEST(CkTileLog, DeepNestingSkipsTheBlockWithABoundedWarning) {
  const std::string text =
      "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n{\"name\": \"x\", \"v\": " +
      std::string(100000, '[') + std::string(100000, ']') + "}\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "deep.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->measurements.empty());
  ASSERT_FALSE(result->warnings.empty());
  EXPECT_TRUE(Contains(result->warnings[0], "deep.log:2"));
  EXPECT_TRUE(Contains(result->warnings[0], "nested deeper than"));
  for (const std::string& warning : result->warnings) EXPECT_LT(warning.size(), 1000u);
}

TEST(CkTileLog, StrayLinesBetweenBlocksWarnOnceWithACount) {
  const std::string block =
      "{\"name\": "
      "\"gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_128x128x128_"
      "1x4x1_16x16x128\", \"perf_result\": {\"latency(ms)\": 1.0}}\n";
  const std::string text =
      "CK Tile batch\nGPU ID: 0\n"  // the file's own header: no warning
      "Shape 1: M=64 N=64 K=64 dtype=fp16 layout=rcr\n=====\nFound 1 kernels\n" +
      block + "oops, not json\n" + block + "also stray\n";
  StatusOr<IngestResult> result = ParseCkTileLog(text, "stray.log", GfxOptions());
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  int stray_warnings = 0;
  for (const std::string& warning : result->warnings) {
    if (Contains(warning, "ignored")) {
      ++stray_warnings;
      EXPECT_TRUE(Contains(warning, "stray.log:7: ignored 2 line(s)")) << warning;
    }
  }
  EXPECT_EQ(stray_warnings, 1);
  const auto good = ParseCkTileLog(ReadFixture("tile_good.log"), "good.log", GfxOptions());
  ASSERT_TRUE(good.ok());
  for (const std::string& warning : good->warnings) EXPECT_FALSE(Contains(warning, "ignored"));
}

}  // namespace
}  // namespace kselect
