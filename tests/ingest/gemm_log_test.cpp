// Application GEMM logs (gemm_log.h): every format read into kselect's orientation (a column-major
// C BLAS call), identical calls aggregated, bad lines warned about and skipped, the ranking.
#include <cmath>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kselect/gemm_log.h"
#include "kselect/hardware.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::Contains;
using testing_util::LinearGemm;

std::string Fixture(std::string_view name) {
  return testing_util::FixturePath("gemm_logs", name);
}

GemmLog Read(std::string_view name, GemmLogFormat format = GemmLogFormat::kAuto) {
  GemmLogReadOptions options;
  options.format = format;
  StatusOr<GemmLog> log = ReadGemmLog(Fixture(name), options);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : GemmLog{};
}

GemmLog Parse(std::string_view text, GemmLogFormat format = GemmLogFormat::kAuto) {
  GemmLogReadOptions options;
  options.format = format;
  StatusOr<GemmLog> log = ParseGemmLog(text, "mem.log", options);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? std::move(log).value() : GemmLog{};
}

GemmProblem WithTypes(GemmProblem p, DataType a, DataType c, DataType compute) {
  p.dtype_a = p.dtype_b = a;
  p.dtype_c = c;
  p.compute = compute;
  return p;
}

// The weight gradient of the traces: NT (layout "crc"), 4096 x 4096 x 16, fp32 with tf32.
GemmProblem WeightGradient() {
  GemmProblem p =
      WithTypes(LinearGemm(4096, 4096, 16), DataType::kF32, DataType::kF32, DataType::kTF32);
  p.layout = GemmLayout{MatrixOrder::kColMajor, MatrixOrder::kRowMajor, MatrixOrder::kColMajor};
  p.beta = 1;
  return p;
}

TEST(GemmLogFormats, NamesRoundTrip) {
  for (std::string_view name :
       {"auto", "hipblaslt_profile", "cublaslt_trace", "tunableop_csv", "csv", "problem_record"}) {
    StatusOr<GemmLogFormat> format = ParseGemmLogFormat(name);
    ASSERT_TRUE(format.ok()) << name;
    EXPECT_EQ(GemmLogFormatName(*format), name);
  }
  EXPECT_FALSE(ParseGemmLogFormat("yaml").ok());
}

// The workspace an application gives a GEMM is the smallest its calls logged; unknown is -1.
TEST(GemmLogCublasLt, KeepsTheSmallestLoggedWorkspace) {
  const std::string call =
      "[2026-03-02 10:15:01][cublasLt][1][Trace][cublasLtMatmul] A=0X1 Adesc=[type=R_16BF "
      "rows=4096 cols=1024 ld=4096] B=0X2 Bdesc=[type=R_16BF rows=4096 cols=8 ld=4096] C=0X3 "
      "Cdesc=[type=R_16BF rows=1024 cols=8 ld=1024] D=0X3 Ddesc=[type=R_16BF rows=1024 cols=8 "
      "ld=1024] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T] workSpace=0X4";
  const std::string text = call + " workSpaceSizeInBytes=33554432 beta=0\n" + call +
                           " workSpaceSizeInBytes=1048576 beta=0\n";
  auto log = ParseGemmLog(text, "inline");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->gemms.size(), 1u);
  EXPECT_EQ(log->gemms[0].workspace_bytes, 1048576);
  auto unknown = ParseGemmLog(call + " beta=0\n", "inline");
  ASSERT_TRUE(unknown.ok()) << unknown.status().ToString();
  EXPECT_EQ(unknown->gemms[0].workspace_bytes, -1);
}

TEST(GemmLogCublasLt, ReadsLinearTrace) {
  const GemmLog log = Read("cublaslt_trace.log");
  EXPECT_EQ(log.format, GemmLogFormat::kCublasLtTrace);
  ASSERT_EQ(log.gemms.size(), 6u);
  EXPECT_EQ(log.total_calls, 10);
  // nn.Linear: TN with m = out features, n = tokens, k = in features; repeats aggregated.
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(6144, 16, 4096));
  EXPECT_EQ(log.gemms[0].calls, 2);
  EXPECT_EQ(log.gemms[0].first_line, 3);
  EXPECT_EQ(log.gemms[0].lda, 4096);
  EXPECT_EQ(log.gemms[0].ldb, 4096);
  EXPECT_EQ(log.gemms[0].ldc, 6144);
  EXPECT_EQ(log.gemms[0].logged_algo,
            "algoId=66 tile=MATMUL_TILE_128x128 stages=MATMUL_STAGES_64xAUTO customOption=0 "
            "clusterShape=CLUSTER_SHAPE_1x1x1");
  EXPECT_EQ(log.gemms[0].workspace_bytes, 33554432);
  EXPECT_EQ(log.gemms[1].problem, LinearGemm(4096, 16, 4096));
  EXPECT_EQ(log.gemms[1].logged_algo, "");
  EXPECT_EQ(log.gemms[2].problem, LinearGemm(28672, 16, 4096));
  EXPECT_EQ(log.gemms[3].problem, LinearGemm(4096, 16, 14336));
  EXPECT_EQ(log.gemms[3].epilogue, "EPILOGUE_BIAS");
  EXPECT_EQ(log.gemms[3].calls, 2);
  // Batched attention scores: batchCount from the layout descriptors, alpha as logged.
  GemmProblem scores = LinearGemm(512, 512, 128);
  scores.batch = 32;
  scores.alpha = 0.0883883;
  EXPECT_EQ(log.gemms[4].problem, scores);
  // transb=OP_T (non-default) with A not transposed: K from Adesc.cols.
  EXPECT_EQ(log.gemms[5].problem, WeightGradient());
  EXPECT_EQ(log.gemms[5].problem.layout.BlasOps(), "NT");

  const std::vector<int32_t> order = {0, 1, 2, 3, 0, 1, 2, 3, 4, 5};
  EXPECT_EQ(log.sequence, order);
  // The torn line and the application's own output; descriptor creation and heuristics queries
  // pass silently.
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_TRUE(Contains(log.warnings[0], "cublaslt_trace.log:14: Bdesc=[ is never closed"));
  EXPECT_TRUE(Contains(log.warnings[1], "cublaslt_trace.log:11: passed over 1 line(s)"));
}

TEST(GemmLogCublasLt, ReadsGzip) {
  const GemmLog plain = Read("cublaslt_trace.log");
  const GemmLog gz = Read("cublaslt_trace.log.gz");
  ASSERT_EQ(gz.gemms.size(), plain.gemms.size());
  for (size_t i = 0; i < gz.gemms.size(); ++i) {
    EXPECT_EQ(gz.gemms[i].problem, plain.gemms[i].problem);
    EXPECT_EQ(gz.gemms[i].calls, plain.gemms[i].calls);
  }
}

TEST(GemmLogCublasLt, ReferenceLineAndBadDescriptors) {
  // The line of the tuning-workflow notes (section 5.1): M=512, N=1024, K=4096, any Matmul tag.
  const std::string line =
      "[2025-01-01 12:00:00][cublasLt][12345][Trace][cublasLtTSTMatmul] A=0X7F00A0000000 "
      "Adesc=[type=R_16BF rows=4096 cols=512 ld=4096] B=0X7F00B0000000 Bdesc=[type=R_16BF "
      "rows=4096 cols=1024 ld=4096] C=0X0 Cdesc=[type=R_16BF rows=512 cols=1024 ld=512] "
      "D=0X7F00C0000000 Ddesc=[type=R_16BF rows=512 cols=1024 ld=512] "
      "computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T] algo=[algoId=66 "
      "tile=MATMUL_TILE_128x128] workSpace=0X7F00D0000000 workSpaceSizeInBytes=33554432 beta=0 "
      "outOfPlace=1 stream=0X0\n";
  GemmLog log = Parse(line);
  ASSERT_EQ(log.gemms.size(), 1u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(512, 1024, 4096));

  // Descriptors that disagree, an unknown type, fp64: warnings, then no GEMM at all is an error.
  const std::string bad =
      "[x][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_16BF rows=4096 cols=512] "
      "Bdesc=[type=R_16BF rows=4000 cols=1024] Ddesc=[type=R_16BF rows=512 cols=1024] "
      "computeDesc=[transa=OP_T]\n"
      "[x][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_64F rows=4 cols=4] "
      "Bdesc=[type=R_64F rows=4 cols=4] Ddesc=[type=R_64F rows=4 cols=4]\n"
      "[x][cublasLt][1][Trace][cublasLtMatmul] Adesc=[type=R_WHAT rows=4 cols=4]\n";
  StatusOr<GemmLog> none = ParseGemmLog(bad, "bad.log");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "bad.log: no GEMM calls found"));
  EXPECT_TRUE(Contains(none.status().message(), "bad.log:1: descriptors disagree"));
}

// Spreadsheet tools put a UTF-8 byte-order mark before a CSV's header.
TEST(GemmLogFormats, AByteOrderMarkIsNotPartOfTheHeader) {
  for (const std::string& text :
       {std::string("\xEF\xBB\xBFm,n,k,calls\n4096,16,4096,3\n"),
        std::string("\xEF\xBB\xBFGemmTunableOp_BFloat16_TN,tn_4096_16_4096_ld_4096_4096_4096\n")}) {
    auto log = ParseGemmLog(text, "bom.csv");
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ(log->gemms.size(), 1u);
  }
}

TEST(GemmLogTunableOp, ReadsUntunedFile) {
  const GemmLog log = Read("tunableop_untuned.csv");
  EXPECT_EQ(log.format, GemmLogFormat::kTunableOpCsv);
  ASSERT_EQ(log.gemms.size(), 6u);
  EXPECT_EQ(log.total_calls, 7);
  // Params are the BLAS call's: m = out features (first size), ops transa, transb.
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(6144, 16, 4096));
  EXPECT_EQ(log.gemms[0].calls, 2);  // listed again with BLAS_PARAMS on line 7
  EXPECT_EQ(log.gemms[0].ldc, 6144);
  EXPECT_EQ(log.gemms[2].problem, LinearGemm(4096, 16, 14336));
  EXPECT_EQ(log.gemms[2].epilogue, "bias");  // GemmAndBias
  EXPECT_EQ(log.gemms[2].lda, 14336);
  GemmProblem batched = LinearGemm(512, 512, 128);
  batched.batch = 32;
  EXPECT_EQ(log.gemms[3].problem, batched);
  EXPECT_EQ(log.gemms[4].problem, WithTypes(LinearGemm(4096, 16, 4096), DataType::kF8E4M3,
                                            DataType::kBF16, DataType::kF32));
  GemmProblem nt = WeightGradient();
  nt.compute = DataType::kF32;  // "float": fp32 without tf32
  nt.beta = 0;
  EXPECT_EQ(log.gemms[5].problem, nt);

  ASSERT_EQ(log.warnings.size(), 3u);
  EXPECT_TRUE(Contains(log.warnings[0], "tunableop_untuned.csv:8: dtype 'double'"));
  EXPECT_TRUE(Contains(log.warnings[1],
                       "tunableop_untuned.csv:9: dtype 'Float8_e4m3fnuz' is "
                       "AMD's FNUZ"));
  EXPECT_TRUE(Contains(log.warnings[2], "tunableop_untuned.csv:10: params"));
}

TEST(GemmLogTunableOp, ReadsResultsWithValidators) {
  const GemmLog log = Read("tunableop_results.csv");
  ASSERT_EQ(log.gemms.size(), 4u);
  EXPECT_TRUE(log.warnings.empty());
  ASSERT_EQ(log.metadata.size(), 4u);
  EXPECT_EQ(log.metadata[0], (std::pair<std::string, std::string>{"PT_VERSION", "2.6.0"}));
  EXPECT_EQ(log.gemms[0].logged_algo, "Gemm_Cublaslt_66");
  EXPECT_EQ(log.gemms[1].logged_algo, "Default");
  GemmProblem nn = LinearGemm(4096, 16, 14336);
  nn.layout.a = MatrixOrder::kColMajor;
  EXPECT_EQ(log.gemms[3].problem, nn);
  EXPECT_EQ(log.gemms[3].problem.layout.BlasOps(), "NN");
}

TEST(GemmLogTunableOp, OpAndParamsMustAgree) {
  StatusOr<GemmLog> log = ParseGemmLog(
      "GemmTunableOp_Half_TN,nt_64_64_64_ld_64_64_64\nGemmTunableOp_Half_NN,nn_64_64_64_ld_64\n",
      "t.csv");
  ASSERT_FALSE(log.ok());
  EXPECT_TRUE(Contains(log.status().message(), "t.csv:1: params"));
  EXPECT_TRUE(Contains(log.status().message(), "disagree"));
}

TEST(GemmLogHipBlasLt, ReadsProfile) {
  const GemmLog log = Read("hipblaslt_profile.yaml");
  EXPECT_EQ(log.format, GemmLogFormat::kHipBlasLtProfile);
  ASSERT_EQ(log.gemms.size(), 5u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(6144, 16, 4096));
  EXPECT_EQ(log.gemms[0].calls, 65);  // call_count 64 and the bench line (mask 32)
  EXPECT_EQ(log.gemms[1].calls, 32);
  EXPECT_EQ(log.gemms[2].epilogue, "bias+gelu");
  EXPECT_TRUE(Contains(log.gemms[2].logged_algo, "Cijk_Alik_Bljk_BBS_BH_Bias"));
  GemmProblem fp8 =
      WithTypes(LinearGemm(512, 512, 128), DataType::kF8E4M3, DataType::kBF16, DataType::kF32);
  fp8.batch = 32;
  fp8.alpha = 0.0883883;
  EXPECT_EQ(log.gemms[3].problem, fp8);
  EXPECT_EQ(log.gemms[3].calls, 16);
  EXPECT_EQ(log.gemms[4].problem, WeightGradient());  // xf32 compute: tf32
  EXPECT_EQ(log.total_calls, 147);
  // Aggregated: each GEMM's calls follow one another.
  EXPECT_EQ(log.sequence.size(), 147u);
  EXPECT_EQ(log.sequence[63], 0);
  EXPECT_EQ(log.sequence[64], 1);
  EXPECT_EQ(log.sequence.back(), 0);
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_TRUE(Contains(log.warnings[0], "hipblaslt_profile.yaml:6: a_type 'f8_fnuz_r'"));
  EXPECT_TRUE(Contains(log.warnings[1], "hipblaslt_profile.yaml:7: expected a YAML flow"));
}

TEST(GemmLogHipBlasLt, SequenceGuard) {
  GemmLogReadOptions options;
  options.max_sequence = 100;
  StatusOr<GemmLog> log = ReadGemmLog(Fixture("hipblaslt_profile.yaml"), options);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->sequence.empty());
  EXPECT_EQ(log->total_calls, 147);
  EXPECT_TRUE(Contains(log->warnings[0], "call order not kept"));
}

TEST(GemmLogCsv, ReadsPlainCsv) {
  const GemmLog log = Read("plain.csv");
  EXPECT_EQ(log.format, GemmLogFormat::kPlainCsv);
  ASSERT_EQ(log.gemms.size(), 5u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(6144, 16, 4096));
  EXPECT_EQ(log.gemms[0].calls, 32);
  EXPECT_EQ(log.gemms[0].first_line, 3);
  GemmProblem fp8 =
      WithTypes(LinearGemm(512, 512, 128), DataType::kF8E4M3, DataType::kBF16, DataType::kF32);
  fp8.batch = 32;
  fp8.alpha = 0.0883883;
  EXPECT_EQ(log.gemms[3].problem, fp8);               // fp8 inputs write bf16
  EXPECT_EQ(log.gemms[4].problem, WeightGradient());  // dtype tf32: fp32 data, tf32 compute
  EXPECT_EQ(log.total_calls, 129);
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_TRUE(Contains(log.warnings[0], "plain.csv:8: m must be positive"));
  EXPECT_TRUE(Contains(log.warnings[1], "plain.csv:9: expected 10 fields, got 6"));
}

TEST(GemmLogCsv, RowMajorCBecomesColumnMajor) {
  // "rcr" 16 x 4096 x 4096 is the same call as "rcc" 4096 x 16 x 4096: the two rows aggregate.
  const GemmLog log = Read("plain_layout.csv");
  ASSERT_EQ(log.gemms.size(), 1u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(4096, 16, 4096));
  EXPECT_EQ(log.gemms[0].calls, 7);
}

TEST(GemmLogCsv, BadHeadersAreErrors) {
  for (const std::string_view text :
       {"m,n,q\n1,2,3\n", "m,n\n1,2\n", "m,n,k,transa\n1,2,3,N\n",
        "m,n,k,layout,transa,transb\n1,2,3,rcc,N,N\n", "m,n,k,m\n1,2,3,4\n"}) {
    StatusOr<GemmLog> log = ParseGemmLog(text, "h.csv", {.format = GemmLogFormat::kPlainCsv});
    ASSERT_FALSE(log.ok()) << text;
    EXPECT_TRUE(Contains(log.status().message(), "h.csv:1: CSV header")) << text;
  }
}

TEST(GemmLogRecord, ReadsProblemRecords) {
  const GemmLog log = Read("problem_record.jsonl");
  EXPECT_EQ(log.format, GemmLogFormat::kProblemRecord);
  ASSERT_EQ(log.gemms.size(), 2u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(4096, 16, 14336));
  EXPECT_EQ(log.gemms[1].problem, LinearGemm(6144, 16, 4096));
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_TRUE(Contains(log.warnings[0], "problem_record.jsonl:3: a convolution"));
  EXPECT_TRUE(Contains(log.warnings[1], "problem_record.jsonl:4: not a JSON object"));
}

TEST(GemmLogRecord, RowMajorCAndDeepNesting) {
  // A record without a layout holds kselect's default "rcr": read as the column-major-C call.
  const std::string deep = std::string(1000, '[') + std::string(1000, ']');
  const std::string text =
      "{\"format\":\"kselect.problem_record\",\"problem\":{\"kind\":\"gemm\",\"m\":16,"
      "\"n\":4096,\"k\":4096}}\n{\"x\":" +
      deep + "}\n";
  const GemmLog log = Parse(text);
  ASSERT_EQ(log.gemms.size(), 1u);
  EXPECT_EQ(log.gemms[0].problem, LinearGemm(4096, 16, 4096));
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_TRUE(Contains(log.warnings[0], "nested deeper"));
}

TEST(GemmLogErrors, EmptyUnknownAndMissing) {
  StatusOr<GemmLog> empty = ParseGemmLog("\n\n", "e.log");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "e.log: empty log"));
  StatusOr<GemmLog> unknown = ParseGemmLog("hello world\n", "u.log");
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(Contains(unknown.status().message(), "u.log: not a GEMM log kselect knows"));
  StatusOr<GemmLog> missing = ReadGemmLog(Fixture("no_such.log"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "no_such.log"));
  StatusOr<GemmLog> guarded =
      ReadGemmLog(Fixture("plain.csv"), {.format = GemmLogFormat::kAuto, .max_gemms = 2});
  ASSERT_FALSE(guarded.ok());
  EXPECT_TRUE(Contains(guarded.status().message(), "plain.csv:5: more than 2 distinct GEMMs"));
}

TEST(GemmLogErrors, OverflowingShapesAndCounts) {
  const GemmLog log = Parse(
      "m,n,k,calls\n"
      "4611686018427387904,4,4,1\n"
      "8,8,8,9223372036854775807\n"
      "8,8,8,1\n"
      "4,4,4,0\n");
  ASSERT_EQ(log.gemms.size(), 1u);
  EXPECT_EQ(log.gemms[0].calls, 9223372036854775807);
  ASSERT_EQ(log.warnings.size(), 4u);  // the sequence guard says so once too
  EXPECT_TRUE(Contains(log.warnings[0], "mem.log:2: GEMM"));
  EXPECT_TRUE(Contains(log.warnings[0], "overflows"));
  EXPECT_TRUE(Contains(log.warnings[2], "mem.log:4: call counts overflow"));
  EXPECT_TRUE(Contains(log.warnings[3], "mem.log:5: call count 0 must be positive"));
}

HardwareConstants H200() {
  StatusOr<HardwareProfile> profile =
      LoadHardwareProfile(std::string(KSELECT_SOURCE_DIR) + "/data/hardware/nvidia-h200.json");
  EXPECT_TRUE(profile.ok());
  StatusOr<HardwareConstants> hw = HardwareConstantsFor(*profile);
  EXPECT_TRUE(hw.ok());
  return *hw;
}

TEST(GemmLogEstimate, Roofline) {
  const HardwareConstants hw = H200();
  // 8192^3 bf16: compute-bound at 4096 FLOPs/clock/SM x 132 SMs x 1.98 GHz.
  const GemmProblem big = LinearGemm(8192, 8192, 8192);
  const double peak = 4096.0 * 132 * 1980e6;
  EXPECT_NEAR(EstimateGemmCallUs(big, hw), big.Flops() / peak * 1e6 + 2.0, 1e-6);
  // Decode: memory-bound on the weight.
  const GemmProblem decode = LinearGemm(4096, 1, 4096);
  EXPECT_NEAR(EstimateGemmCallUs(decode, hw), decode.MinBytes() / (4814.304e9) * 1e6 + 2.0, 1e-6);
  // fp8 runs twice as fast as bf16 when compute-bound; tf32 half as fast.
  const double bf16_us = EstimateGemmCallUs(big, hw) - 2.0;
  GemmProblem fp8 = WithTypes(big, DataType::kF8E4M3, DataType::kBF16, DataType::kF32);
  EXPECT_NEAR(EstimateGemmCallUs(fp8, hw) - 2.0, bf16_us / 2, 1e-6);
  GemmProblem tf32 = WithTypes(big, DataType::kF32, DataType::kF32, DataType::kTF32);
  EXPECT_NEAR(EstimateGemmCallUs(tf32, hw) - 2.0, bf16_us * 2, 1e-6);
}

TEST(GemmLogSummary, RanksAndThresholds) {
  const GemmLog log = Read("hipblaslt_profile.yaml");
  const HardwareConstants hw = H200();
  const GemmLogSummary all = SummarizeGemmLog(log, hw, 0);
  ASSERT_EQ(all.kept.size(), 5u);
  EXPECT_EQ(all.dropped, 0u);
  EXPECT_NEAR(all.kept_share, 1.0, 1e-12);
  EXPECT_EQ(all.kept[0].gemm, 1u);  // 28672 x 16 x 4096, 32 calls
  double total = 0;
  for (size_t i = 0; i < log.gemms.size(); ++i) {
    total += static_cast<double>(log.gemms[i].calls) * EstimateGemmCallUs(log.gemms[i].problem, hw);
  }
  EXPECT_NEAR(all.total_estimated_us, total, 1e-6);
  for (size_t r = 1; r < all.kept.size(); ++r) {
    EXPECT_GE(all.kept[r - 1].share, all.kept[r].share);
    EXPECT_NEAR(all.kept[r].cumulative_share, all.kept[r - 1].cumulative_share + all.kept[r].share,
                1e-12);
  }
  const GemmLogSummary top = SummarizeGemmLog(log, hw, 0.05);
  EXPECT_EQ(top.kept.size(), 3u);
  EXPECT_EQ(top.dropped, 2u);
  EXPECT_NEAR(top.kept_share, top.kept.back().cumulative_share, 1e-12);

  const nlohmann::json j = nlohmann::json::parse(GemmLogSummaryToJson(log, top));
  EXPECT_EQ(j["format"], "kselect.gemm_log_summary");
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["log_format"], "hipblaslt_profile");
  EXPECT_EQ(j["total_calls"], 147);
  EXPECT_EQ(j["warnings"], 2);
  ASSERT_EQ(j["gemms"].size(), 3u);
  const nlohmann::json& first = j["gemms"][0];
  EXPECT_EQ(first["m"], 28672);
  EXPECT_EQ(first["n"], 16);
  EXPECT_EQ(first["k"], 4096);
  EXPECT_EQ(first["layout"], "rcc");
  EXPECT_EQ(first["transa"], "T");
  EXPECT_EQ(first["transb"], "N");
  EXPECT_EQ(first["a"], "bf16");
  EXPECT_EQ(first["compute"], "fp32");
  EXPECT_EQ(first["calls"], 32);
  EXPECT_EQ(j["gemms"][1]["epilogue"], "bias+gelu");
}

}  // namespace
}  // namespace kselect
