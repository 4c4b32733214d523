// ParseCkTileJson: one binary's output, an array of them, and generate_benchmark_data.py's
// batch file.
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

const GemmProblem& Gemm(const Measurement& m) {
  return std::get<GemmProblem>(m.problem);
}
const CkTileConfig& Config(const Measurement& m) {
  return std::get<CkTileConfig>(m.config);
}

constexpr std::string_view kName =
    "gemm_universal_fp16_rcr_compv3_cshuffle_intrawave_False_False_False_False_64x64x64_1x4x1_"
    "16x16x16";

TEST(CkTileJson, ParsesSingleBinaryOutput) {
  IngestOptions options;
  options.arch = "gfx942";
  StatusOr<IngestResult> result =
      ParseCkTileJson(ReadFixture("tile_single.json"), "tile_single.json", options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 1u);
  const Measurement& m = result->measurements[0];
  EXPECT_EQ(m.op_type, "gemm_universal");
  EXPECT_EQ(Gemm(m).m, 1024);
  EXPECT_EQ(Gemm(m).n, 1024);
  EXPECT_EQ(Gemm(m).k, 1024);
  EXPECT_EQ(Gemm(m).layout.ToString(), "rcr");
  EXPECT_EQ(Gemm(m).dtype_a, DataType::kF8E4M3);
  EXPECT_EQ(Gemm(m).dtype_c, DataType::kF16);
  EXPECT_DOUBLE_EQ(m.latency_ms, 0.04);
  EXPECT_DOUBLE_EQ(m.tflops, 204.60);
  EXPECT_DOUBLE_EQ(m.bandwidth_gb_s, 624.39);
  EXPECT_TRUE(m.is_valid);
  EXPECT_EQ(Config(m).warp_tile_k, 128);
  EXPECT_EQ(m.method.name, "ck_tile.benchmark_json");
  ASSERT_EQ(result->runs.size(), 1u);
  EXPECT_EQ(result->runs[0].hardware.vendor, "amd");
  EXPECT_EQ(result->runs[0].hardware.arch, "gfx942");
  EXPECT_EQ(result->runs[0].run_id.size(), 12u);
  EXPECT_EQ(result->lines_read, 21);
}

TEST(CkTileJson, ParsesAnArrayAndNamesItsPathInErrors) {
  const std::string good = "{\"name\": \"" + std::string(kName) +
                           "\", \"problem\": {\"m\": 64, \"n\": 64, \"k\": 64}, \"perf_result\": "
                           "{\"latency(ms)\": 0.002, \"tflops(TFlops)\": 0.26}}";
  StatusOr<IngestResult> result = ParseCkTileJson("[" + good + ", " + good + "]", "a.json", {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 2u);
  EXPECT_EQ(Gemm(result->measurements[1]).dtype_a, DataType::kF16);
  EXPECT_EQ(Gemm(result->measurements[1]).layout.ToString(), "rcr");
  EXPECT_DOUBLE_EQ(result->measurements[1].bandwidth_gb_s, 0);  // not reported, not invented

  const std::string bad =
      "{\"name\": \"" + std::string(kName) + "\", \"problem\": {\"m\": 64, \"n\": [1], \"k\": 64}}";
  StatusOr<IngestResult> error = ParseCkTileJson("[" + good + ", " + bad + "]", "a.json", {});
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(error.status().message(), "a.json: [1].problem.n: expected an integer"));

  // Without problem dims there is no header to fall back on.
  StatusOr<IngestResult> no_dims =
      ParseCkTileJson("{\"name\": \"" + std::string(kName) + "\"}", "b.json", {});
  ASSERT_FALSE(no_dims.ok());
  EXPECT_TRUE(Contains(no_dims.status().message(), "problem.m: missing"));
}

TEST(CkTileJson, ParsesBatchFile) {
  StatusOr<IngestResult> result =
      ParseCkTileJson(ReadFixture("tile_batch.json"), "tile_batch.json", {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 4u);
  EXPECT_TRUE(result->warnings.empty());

  const Measurement& ok = result->measurements[0];
  EXPECT_TRUE(ok.is_valid);
  EXPECT_EQ(Gemm(ok).m, 1024);
  EXPECT_EQ(ok.method.name, "ck_tile.generate_benchmark_data");
  EXPECT_EQ(ok.method.warmup_iters, 10);
  EXPECT_EQ(ok.method.repeats, 50);
  EXPECT_EQ(ok.timestamp, "2025-11-20T10:15:00");
  // Bandwidth with real element sizes: fp8 A and B (1 byte), fp16 C (2 bytes). CK's formula,
  // (mk + kn + mn) * 2 bytes, would give 3 * 2^21 * 2 / 0.04e-3 = 314.6 GB/s.
  const double bytes = 1024.0 * 1024 + 1024.0 * 1024 + 1024.0 * 1024 * 2;
  EXPECT_NEAR(ok.bandwidth_gb_s, bytes / 0.04e-3 / 1e9, 1e-6);

  // A failure is kept, invalid, with CK's error text as the reason.
  const Measurement& failed = result->measurements[1];
  EXPECT_FALSE(failed.is_valid);
  EXPECT_EQ(failed.invalid_reason, "Kernel does not support this problem size");
  EXPECT_EQ(Gemm(failed).m, 16);
  EXPECT_DOUBLE_EQ(failed.bandwidth_gb_s, 0);

  // mem kernels get the pad fix.
  const Measurement& mem = result->measurements[2];
  EXPECT_EQ(Config(mem).pipeline, "mem");
  EXPECT_EQ(Config(mem).epilogue, "default");
  EXPECT_TRUE(Config(mem).pad_m);
  EXPECT_TRUE(Config(mem).pad_n);
  EXPECT_TRUE(Config(mem).pad_k);
  EXPECT_TRUE(Config(mem).persistent);
  EXPECT_TRUE(mem.is_valid);

  ASSERT_EQ(result->runs.size(), 1u);
  EXPECT_EQ(result->runs[0].started_at, "2025-11-20T10:15:00");
  EXPECT_EQ(result->runs[0].method.repeats, 50);
}

TEST(CkTileJson, BatchWrongTypeNamesThePath) {
  StatusOr<IngestResult> result =
      ParseCkTileJson(ReadFixture("tile_batch_wrong_type.json"), "wrong.json", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(result.status().message(),
                       "wrong.json: results[0].benchmarks[1].m: expected an integer, got string"));
  EXPECT_TRUE(Contains(result.status().message(), "abc"));
}

TEST(CkTileJson, BatchInconsistenciesAreErrors) {
  const std::string bench = "{\"kernel_name\": \"" + std::string(kName) +
                            "\", \"m\": 64, \"n\": 64, \"k\": 64, \"avg_time_ms\": 0.01, "
                            "\"tflops\": 0.05, \"is_valid\": true, \"error\": \"\"}";
  auto batch = [&](const std::string& metadata, const std::string& kernel_config) {
    return "{\"metadata\": " + metadata + ", \"results\": [{\"kernel_config\": " + kernel_config +
           ", \"benchmarks\": [" + bench + "]}]}";
  };
  StatusOr<IngestResult> dtype = ParseCkTileJson(batch("{\"dtype\": \"fp8\"}", "{}"), "d.json", {});
  ASSERT_FALSE(dtype.ok());
  EXPECT_TRUE(Contains(dtype.status().message(), "metadata.dtype is fp8"));

  StatusOr<IngestResult> tile =
      ParseCkTileJson(batch("{\"dtype\": \"fp16\"}", "{\"tile_m\": 128}"), "t.json", {});
  ASSERT_FALSE(tile.ok());
  EXPECT_TRUE(Contains(tile.status().message(), "results[0].kernel_config.tile_m is 128"));

  StatusOr<IngestResult> warmup =
      ParseCkTileJson(batch("{\"warmup\": \"three\"}", "{}"), "w.json", {});
  ASSERT_FALSE(warmup.ok());
  EXPECT_TRUE(Contains(warmup.status().message(), "metadata.warmup: expected an integer"));

  StatusOr<IngestResult> counts =
      ParseCkTileJson(batch("{\"num_kernels\": 3}", "{}"), "c.json", {});
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  ASSERT_EQ(counts->warnings.size(), 1u);
  EXPECT_TRUE(Contains(counts->warnings[0], "num_kernels is 3"));
}

TEST(CkTileJson, RejectsSyntaxErrorsWithLineAndColumn) {
  StatusOr<IngestResult> result = ParseCkTileJson("{\n  \"name\": \"x\",,\n}", "s.json", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(result.status().message(), "s.json:2:"));

  // A number beyond double range is an error, not an exception (found by fuzzing).
  StatusOr<IngestResult> huge = ParseCkTileJson("{\"name\": \"x\", \"m\": 2e33472}", "h.json", {});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(huge.status().message(), "h.json:1: invalid JSON"));

  StatusOr<IngestResult> other = ParseCkTileJson("{\"hello\": 1}", "o.json", {});
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(Contains(other.status().message(), "not a CK Tile JSON file"));

  StatusOr<IngestResult> empty = ParseCkTileJson(ReadFixture("empty.log"), "empty.json", {});
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "empty.json"));

  StatusOr<IngestResult> utf8 =
      ParseCkTileJson(ReadFixture("invalid_utf8.log"), "invalid_utf8.json", {});
  ASSERT_FALSE(utf8.ok());
  EXPECT_TRUE(Contains(utf8.status().message(), "invalid_utf8.json:2"));
}

TEST(CkTileJson, DeepNestingIsAnErrorNamingTheLine) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  StatusOr<IngestResult> result = ParseCkTileJson("\n" + deep, "deep.json", {});
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status().message(), "deep.json:2:"));
  EXPECT_TRUE(Contains(result.status().message(), "nested deeper than"));
  EXPECT_LT(result.status().message().size(), 500u);
}

}  // namespace
}  // namespace kselect
