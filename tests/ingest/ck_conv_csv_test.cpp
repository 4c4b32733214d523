// ParseCkConvCsv: the grouped-conv benchmark CSV, good and malformed.
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

const ConvProblem& Conv(const Measurement& m) {
  return std::get<ConvProblem>(m.problem);
}
const CkConvConfig& Config(const Measurement& m) {
  return std::get<CkConvConfig>(m.config);
}

constexpr std::string_view kShortHeader = "kernel,N,C,K,G,Hi,Wi,Y,X,latency_ms,tflops\n";

TEST(CkConvCsv, ParsesGoodFile) {
  IngestOptions options;
  options.arch = "gfx950";
  StatusOr<IngestResult> result =
      ParseCkConvCsv(ReadFixture("conv_good.csv"), "conv_good.csv", options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 4u);
  EXPECT_EQ(result->lines_read, 5);

  const Measurement& first = result->measurements[0];
  EXPECT_EQ(first.op_type, "grouped_conv");
  EXPECT_EQ(first.kernel_name, "grouped_conv_fwd_bf16_2d_128x128x64_compv3_intrawave");
  const ConvProblem& p = Conv(first);
  EXPECT_EQ(p.n, 32);
  EXPECT_EQ(p.c, 256);
  EXPECT_EQ(p.k, 256);
  EXPECT_EQ(p.g, 1);
  EXPECT_EQ(p.hi, 56);
  EXPECT_EQ(p.wi, 56);
  EXPECT_EQ(p.y, 3);
  EXPECT_EQ(p.x, 3);
  EXPECT_EQ(p.pad_h, 1);
  EXPECT_EQ(p.dtype, DataType::kBF16);
  EXPECT_EQ(p.direction, ConvDirection::kForward);
  EXPECT_FALSE(p.Is3d());
  EXPECT_EQ(p.Ho(), 56);
  EXPECT_DOUBLE_EQ(first.latency_ms, 0.412);
  EXPECT_DOUBLE_EQ(first.tflops, 72.5);
  EXPECT_GT(first.bandwidth_gb_s, 0);
  EXPECT_TRUE(first.is_valid);
  EXPECT_EQ(Config(first).tile_m, 128);
  EXPECT_EQ(Config(first).tile_n, 128);
  EXPECT_EQ(Config(first).tile_k, 64);
  EXPECT_EQ(Config(first).pipeline, "compv3");
  EXPECT_EQ(Config(first).scheduler, "intrawave");

  // Quoted kernel field; depthwise with stride 2.
  const Measurement& depthwise = result->measurements[1];
  EXPECT_EQ(depthwise.kernel_name, "grouped_conv_forward_bf16_2d_64x64x64_compv4_intrawave_dsb");
  EXPECT_TRUE(Config(depthwise).double_smem_buffer);
  EXPECT_EQ(Conv(depthwise).g, 64);
  EXPECT_EQ(Conv(depthwise).stride_h, 2);
  EXPECT_EQ(Conv(depthwise).Ho(), 14);

  const Measurement& three_d = result->measurements[2];
  EXPECT_TRUE(Conv(three_d).Is3d());
  EXPECT_EQ(Conv(three_d).di, 8);
  EXPECT_EQ(Conv(three_d).z, 3);
  EXPECT_EQ(Conv(three_d).pad_d, 1);
  EXPECT_EQ(Conv(three_d).Do(), 8);
  EXPECT_TRUE(Config(three_d).split_image);
  EXPECT_TRUE(three_d.is_valid);

  const Measurement& zeros = result->measurements[3];
  EXPECT_FALSE(zeros.is_valid);
  EXPECT_EQ(zeros.invalid_reason, "output was all zeros");

  ASSERT_EQ(result->runs.size(), 1u);
  EXPECT_EQ(result->runs[0].hardware.vendor, "amd");
  EXPECT_EQ(result->runs[0].hardware.arch, "gfx950");
  EXPECT_EQ(first.run_id, result->runs[0].run_id);
}

TEST(CkConvCsv, TwoDimensionalFilesUseDefaults) {
  const std::string text =
      std::string(kShortHeader) +
      "grouped_conv_bwd_weight_bf16_2d_16x64x64_mem_interwave,4,64,64,1,7,7,1,1,0.01,0.2\r\n";
  StatusOr<IngestResult> result = ParseCkConvCsv(text, "short.csv", {});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->measurements.size(), 1u);
  const ConvProblem& p = Conv(result->measurements[0]);
  EXPECT_EQ(p.direction, ConvDirection::kBackwardWeight);
  EXPECT_EQ(p.di, 1);
  EXPECT_EQ(p.z, 1);
  EXPECT_EQ(p.stride_h, 1);
  EXPECT_EQ(p.pad_w, 0);
  EXPECT_EQ(p.dilation_w, 1);
  EXPECT_TRUE(result->measurements[0].is_valid);
}

// A header of 100,000 stray columns gets an error of a line, not of a megabyte.
TEST(CkConvCsv, ManyUnknownColumnsMakeAShortMessage) {
  std::string header = "NDimSpatial";
  for (int i = 0; i < 100000; ++i) header += ",column_" + std::to_string(i);
  const Status status = ParseCkConvCsv(header + "\n", "wide.csv", {}).status();
  ASSERT_FALSE(status.ok());
  EXPECT_LT(status.message().size(), 1000u) << status.message().size();
  EXPECT_NE(status.message().find("99993 more"), std::string::npos) << status.message();
}

TEST(CkConvCsv, MalformedFilesNameLineAndColumn) {
  struct Case {
    std::string fixture;
    std::string expected;
  };
  const Case cases[] = {
      {"conv_bad_number.csv", "conv_bad_number.csv:3: column 'Hi': 'abc' is not an integer"},
      {"conv_wrong_field_count.csv", "conv_wrong_field_count.csv:3: expected 24 fields, found 23"},
      {"conv_unknown_column.csv", "conv_unknown_column.csv:1: unknown column(s) 'gpu_temp'"},
      {"conv_missing_column.csv",
       "conv_missing_column.csv:1: missing required column(s) 'Wi', 'tflops'"},
      {"empty.log", "empty CSV"},
  };
  for (const Case& c : cases) {
    StatusOr<IngestResult> result = ParseCkConvCsv(ReadFixture(c.fixture), c.fixture, {});
    ASSERT_FALSE(result.ok()) << c.fixture;
    EXPECT_EQ(result.status().code(), StatusCode::kParseError);
    EXPECT_TRUE(Contains(result.status().message(), c.expected));
  }
}

TEST(CkConvCsv, BadFiguresAndNamesAreReported) {
  StatusOr<IngestResult> latency =
      ParseCkConvCsv(std::string(kShortHeader) +
                         "grouped_conv_fwd_bf16_2d_128x128x64_compv3,1,64,64,1,7,7,1,1,fast,0.2\n",
                     "l.csv", {});
  ASSERT_FALSE(latency.ok());
  EXPECT_TRUE(
      Contains(latency.status().message(), "l.csv:2: column 'latency_ms': 'fast' is not a number"));

  StatusOr<IngestResult> name = ParseCkConvCsv(
      std::string(kShortHeader) +
          "grouped_conv_fwd_bf16_2d_128x128x64_compv3_gm4,1,64,64,1,7,7,1,1,0.1,0.2\n",
      "n.csv", {});
  ASSERT_FALSE(name.ok());
  EXPECT_TRUE(Contains(name.status().message(), "n.csv:2: "));
  EXPECT_TRUE(Contains(name.status().message(), "'gm4'"));

  // A 2d kernel cannot have run a 3D problem.
  StatusOr<IngestResult> dims = ParseCkConvCsv(
      "kernel,N,C,K,G,Di,Hi,Wi,Z,Y,X,latency_ms,tflops\n"
      "grouped_conv_fwd_bf16_2d_128x128x64_compv3,1,64,64,1,4,7,7,3,1,1,0.1,0.2\n",
      "d.csv", {});
  ASSERT_FALSE(dims.ok());
  EXPECT_TRUE(Contains(dims.status().message(), "d.csv:2: "));
  EXPECT_TRUE(Contains(dims.status().message(), "is 2d"));

  // NaN latency parses but makes the row invalid.
  StatusOr<IngestResult> nan =
      ParseCkConvCsv(std::string(kShortHeader) +
                         "grouped_conv_fwd_bf16_2d_128x128x64_compv3,1,64,64,1,7,7,1,1,nan,0.2\n",
                     "nan.csv", {});
  ASSERT_TRUE(nan.ok()) << nan.status().ToString();
  EXPECT_FALSE(nan->measurements[0].is_valid);
  EXPECT_FALSE(nan->measurements[0].invalid_reason.empty());
}

TEST(CkConvCsv, DirectionFromNameOrOptions) {
  const std::string row = "grouped_conv_bf16_2d_128x128x64_compv3,1,64,64,1,7,7,1,1,0.1,0.2\n";
  StatusOr<IngestResult> none = ParseCkConvCsv(std::string(kShortHeader) + row, "x.csv", {});
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "x.csv:2: "));
  EXPECT_TRUE(Contains(none.status().message(), "does not name its direction"));

  IngestOptions options;
  options.conv_direction = ConvDirection::kBackwardData;
  StatusOr<IngestResult> given = ParseCkConvCsv(std::string(kShortHeader) + row, "x.csv", options);
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(Conv(given->measurements[0]).direction, ConvDirection::kBackwardData);
  EXPECT_EQ(Config(given->measurements[0]).pipeline, "compv3");

  // A name and an option that disagree are refused.
  StatusOr<IngestResult> conflict =
      ParseCkConvCsv(std::string(kShortHeader) +
                         "grouped_conv_fwd_bf16_2d_128x128x64_compv3,1,64,64,1,7,7,1,1,0.1,0.2\n",
                     "c.csv", options);
  ASSERT_FALSE(conflict.ok());
  EXPECT_TRUE(Contains(conflict.status().message(), "conv direction option says bwd_data"));
}

TEST(CkConvCsv, QuotedFieldsMayHoldCommasAndQuotes) {
  // A quoted field with a comma is one field; the kernel name itself is then rejected by name.
  StatusOr<IngestResult> comma =
      ParseCkConvCsv(std::string(kShortHeader) +
                         "\"grouped_conv_fwd_bf16_2d_1x1x1_mem,x\",1,64,64,1,7,7,1,1,0.1,0.2\n",
                     "q.csv", {});
  ASSERT_FALSE(comma.ok());
  EXPECT_TRUE(Contains(comma.status().message(), "q.csv:2: "));
  EXPECT_TRUE(Contains(comma.status().message(), "'mem,x'"));

  StatusOr<IngestResult> unclosed =
      ParseCkConvCsv(std::string(kShortHeader) + "\"grouped_conv_fwd,1,64\n", "u.csv", {});
  ASSERT_FALSE(unclosed.ok());
  EXPECT_TRUE(Contains(unclosed.status().message(), "u.csv:2: quoted field is never closed"));

  // Quoted numbers are numbers, and blank lines are ignored.
  StatusOr<IngestResult> quoted = ParseCkConvCsv(
      std::string(kShortHeader) +
          "\n\"grouped_conv_fwd_bf16_2d_128x128x64_compv3\",\"1\",64,64,1,7,7,1,1,0.1,0.2\n\n",
      "ok.csv", {});
  ASSERT_TRUE(quoted.ok()) << quoted.status().ToString();
  ASSERT_EQ(quoted->measurements.size(), 1u);
  EXPECT_EQ(Conv(quoted->measurements[0]).n, 1);
}

TEST(CkConvCsv, RejectsInvalidUtf8) {
  StatusOr<IngestResult> result = ParseCkConvCsv(ReadFixture("invalid_utf8.log"), "bad.csv", {});
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(Contains(result.status().message(), "bad.csv:2"));
}

}  // namespace
}  // namespace kselect
