// The preloaded layer's logic without a GPU: reading calls from cuBLASLt descriptors (host
// objects), the settings from the environment, pass-through and its reasons, statistics and the
// record `kselect tune` reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "kselect/gemm_log.h"
#include "layer/layer.h"
#include "layer/lt_call.h"
#include "nlohmann/json.hpp"
#include "testing_util.h"

namespace kselect::layer {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;

// The descriptors of one cublasLtMatmul call, made as an application makes them.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;

  // D (m x n) = op(A) op(B) with A stored k x m (TN, as nn.Linear reaches cuBLASLt) when
  // trans_a, all of `type`, column order.
  Descriptors(int64_t m, int64_t n, int64_t k, bool trans_a = true, bool trans_b = false,
              cudaDataType_t type = CUDA_R_16BF, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
    EXPECT_EQ(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    Set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
    Set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
    EXPECT_EQ(
        cublasLtMatrixLayoutCreate(&a, type, trans_a ? k : m, trans_a ? m : k, trans_a ? k : m),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(
        cublasLtMatrixLayoutCreate(&b, type, trans_b ? n : k, trans_b ? k : n, trans_b ? n : k),
        CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&c, type, m, n, m), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cublasLtMatrixLayoutCreate(&d, type, m, n, m), CUBLAS_STATUS_SUCCESS);
  }
  ~Descriptors() {
    for (auto layout : {a, b, c, d}) cublasLtMatrixLayoutDestroy(layout);
    cublasLtMatmulDescDestroy(op);
  }
  template <typename T>
  void Set(cublasLtMatmulDescAttributes_t attr, T value) {
    EXPECT_EQ(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof(value)),
              CUBLAS_STATUS_SUCCESS);
  }
  template <typename T>
  static void SetLayout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                        T value) {
    EXPECT_EQ(cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof(value)),
              CUBLAS_STATUS_SUCCESS);
  }
};

const float kOne = 1.0f, kZero = 0.0f;

TEST(LtCallTest, ReadsLinearLayerCallsInFrameworkOrientation) {
  Descriptors desc(/*m=*/4096, /*n=*/8, /*k=*/14336);
  auto call = ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &kOne, &kZero);
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(call->problem, testing_util::LinearGemm(4096, 8, 14336));
  EXPECT_EQ(call->problem.layout.ToString(), "rcc");
  EXPECT_EQ(call->lda, 14336);
  EXPECT_EQ(call->ldb, 14336);
  EXPECT_EQ(call->ldc, 4096);
  EXPECT_EQ(EpilogueName(call->epilogue), "");

  desc.Set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  const float beta = 1.0f;
  call = ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &kOne, &beta);
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(EpilogueName(call->epilogue), "bias");
  EXPECT_EQ(call->problem.beta, 1.0);
}

TEST(LtCallTest, ReadsBatchesAndOtherLayouts) {
  Descriptors desc(256, 128, 64, /*trans_a=*/false, /*trans_b=*/true, CUDA_R_16F);
  for (auto layout : {desc.a, desc.b, desc.c, desc.d}) {
    Descriptors::SetLayout(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t{4});
  }
  auto call = ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &kOne, &kZero);
  ASSERT_TRUE(call.ok()) << call.status().ToString();
  EXPECT_EQ(call->problem.m, 256);
  EXPECT_EQ(call->problem.n, 128);
  EXPECT_EQ(call->problem.k, 64);
  EXPECT_EQ(call->problem.batch, 4);
  EXPECT_EQ(call->problem.layout.ToString(), "crc");
  EXPECT_EQ(call->problem.dtype_a, DataType::kF16);
}

TEST(LtCallTest, LeavesAloneWhatItDoesNotRun) {
  {
    Descriptors desc(64, 64, 64, true, false, CUDA_R_64F, CUBLAS_COMPUTE_64F);
    EXPECT_TRUE(Contains(
        ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &kOne, &kZero).status().message(),
        "compute type"));
  }
  {
    Descriptors desc(64, 64, 64);
    desc.Set(CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE);
    // Device pointers are never read: passing host ones here would be read if the check failed.
    EXPECT_TRUE(Contains(
        ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, nullptr, nullptr).status().message(),
        "host scalars"));
  }
  {
    Descriptors desc(64, 64, 64);
    Descriptors::SetLayout(desc.a, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW);
    EXPECT_TRUE(Contains(
        ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &kOne, &kZero).status().message(),
        "column order"));
  }
  {
    Descriptors desc(64, 64, 64);
    Descriptors other(64, 32, 64);
    EXPECT_TRUE(Contains(
        ReadLtCall(desc.op, desc.a, desc.b, other.c, desc.d, &kOne, &kZero).status().message(),
        "do not form one GEMM"));
  }
  {
    Descriptors desc(64, 64, 64);
    const float nan = std::nanf("");
    EXPECT_TRUE(Contains(
        ReadLtCall(desc.op, desc.a, desc.b, desc.c, desc.d, &nan, &kZero).status().message(),
        "not finite"));
  }
  EXPECT_FALSE(ReadLtCall(nullptr, nullptr, nullptr, nullptr, nullptr, &kOne, &kZero).ok());
}

TEST(LtCallTest, KeysAreEqualExactlyWhenTheDescriptorsAre) {
  Descriptors one(4096, 8, 4096), two(4096, 8, 4096), three(4096, 16, 4096);
  auto handle = reinterpret_cast<cublasLtHandle_t>(0x1000);
  const LtCallKey k1 = LtCallKey::Of(handle, one.op, one.a, one.b, one.c, one.d);
  const LtCallKey k2 = LtCallKey::Of(handle, two.op, two.a, two.b, two.c, two.d);
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(k1.Hash(), k2.Hash());
  EXPECT_FALSE(k1 == LtCallKey::Of(handle, three.op, three.a, three.b, three.c, three.d));
  EXPECT_FALSE(k1 == LtCallKey::Of(reinterpret_cast<cublasLtHandle_t>(0x2000), one.op, one.a, one.b,
                                   one.c, one.d));
  two.Set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  EXPECT_FALSE(k1 == LtCallKey::Of(handle, two.op, two.a, two.b, two.c, two.d));
}

// The environment as a table.
std::function<const char*(const char*)> Env(const std::map<std::string, std::string>& values) {
  return [values](const char* name) -> const char* {
    const auto it = values.find(name);
    return it == values.end() ? nullptr : it->second.c_str();
  };
}

class LayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() /
           ("kselect_layer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(tmp_);
    real_calls = 0;
    last_algo = nullptr;
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Stands in for cuBLASLt's cublasLtMatmul: counts and remembers the algo it was given.
  static cublasStatus_t FakeReal(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                                 cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t,
                                 const void*, const void*, cublasLtMatrixLayout_t, void*,
                                 cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t* algo, void*,
                                 size_t, cudaStream_t) {
    ++real_calls;
    last_algo = algo;
    return CUBLAS_STATUS_SUCCESS;
  }

  static cublasStatus_t Call(Layer& layer, const Descriptors& desc, const float* alpha = &kOne,
                             const float* beta = &kZero) {
    static cublasLtMatmulAlgo_t app_algo{};
    return layer.Matmul(&FakeReal, nullptr, desc.op, alpha, nullptr, desc.a, nullptr, desc.b, beta,
                        nullptr, desc.c, nullptr, desc.d, &app_algo, nullptr, 0, nullptr);
  }

  fs::path tmp_;
  static inline int real_calls = 0;
  static inline const cublasLtMatmulAlgo_t* last_algo = nullptr;
};

TEST_F(LayerTest, SettingsComeFromTheEnvironment) {
  auto none = LayerSettings::FromEnvironment(Env({}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mode, LayerMode::kOff);
  auto library = LayerSettings::FromEnvironment(Env({{"KSELECT_SOLUTIONS", "s.json"}}));
  ASSERT_TRUE(library.ok());
  EXPECT_EQ(library->mode, LayerMode::kLibrary);
  auto select = LayerSettings::FromEnvironment(
      Env({{"KSELECT_SOLUTIONS", "s.json"}, {"KSELECT_MODEL", "models/x"}}));
  ASSERT_TRUE(select.ok());
  EXPECT_EQ(select->mode, LayerMode::kSelect);
  auto record =
      LayerSettings::FromEnvironment(Env({{"KSELECT_RECORD", (tmp_ / "gemms_%p.csv").string()}}));
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->mode, LayerMode::kRecord);
  EXPECT_EQ(record->record_path,
            (tmp_ / ("gemms_" + std::to_string(::getpid()) + ".csv")).string());

  EXPECT_TRUE(
      Contains(LayerSettings::FromEnvironment(Env({{"KSELECT_MODE", "fast"}})).status().message(),
               "KSELECT_MODE"));
  EXPECT_EQ(select->time_top_k, 3);
  auto untimed = LayerSettings::FromEnvironment(Env({{"KSELECT_TIME_TOP_K", "0"}}));
  ASSERT_TRUE(untimed.ok());
  EXPECT_EQ(untimed->time_top_k, 0);
  for (const char* bad : {"-1", "x", "99"}) {
    EXPECT_TRUE(Contains(
        LayerSettings::FromEnvironment(Env({{"KSELECT_TIME_TOP_K", bad}})).status().message(),
        "KSELECT_TIME_TOP_K"));
  }
  EXPECT_TRUE(Contains(
      LayerSettings::FromEnvironment(Env({{"KSELECT_STATS", tmp_.string()}})).status().message(),
      "KSELECT_STATS"));
  const std::string same = (tmp_ / "same").string();
  EXPECT_FALSE(
      LayerSettings::FromEnvironment(Env({{"KSELECT_STATS", same}, {"KSELECT_RECORD", same}}))
          .ok());
  // The library the layer reads is never an output.
  const std::string solutions = (tmp_ / "solutions.json").string();
  std::ofstream(solutions) << "{}";
  EXPECT_FALSE(LayerSettings::FromEnvironment(
                   Env({{"KSELECT_SOLUTIONS", solutions}, {"KSELECT_STATS", solutions}}))
                   .ok());
}

TEST_F(LayerTest, OffPassesEverythingThroughAndCountsNothing) {
  Layer layer(LayerSettings{});
  Descriptors desc(4096, 8, 4096);
  ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(real_calls, 1);
  EXPECT_EQ(layer.Totals().calls, 0);
}

TEST_F(LayerTest, RecordModeWritesWhatTuneReads) {
  LayerSettings settings;
  settings.mode = LayerMode::kRecord;
  settings.record_path = (tmp_ / "gemms.csv").string();
  settings.stats_path = (tmp_ / "stats.json").string();
  Layer layer(settings);
  Descriptors qkv(6144, 8, 4096), down(4096, 8, 14336);
  down.Set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Call(layer, qkv), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Call(layer, down), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(real_calls, 4);
  EXPECT_NE(last_algo, nullptr);  // the application's own algo went through
  const LayerTotals totals = layer.Totals();
  EXPECT_EQ(totals.calls, 4);
  EXPECT_EQ(totals.overridden, 0);
  EXPECT_EQ(totals.passed, 4);
  ASSERT_TRUE(layer.Flush().ok());

  auto log = ReadGemmLog(settings.record_path);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->format, GemmLogFormat::kPlainCsv);
  ASSERT_EQ(log->gemms.size(), 2u);
  EXPECT_EQ(log->total_calls, 4);
  std::map<int64_t, const LoggedGemm*> by_m;
  for (const LoggedGemm& g : log->gemms) by_m[g.problem.m] = &g;
  ASSERT_TRUE(by_m.count(6144) && by_m.count(4096));
  EXPECT_EQ(by_m[6144]->problem, testing_util::LinearGemm(6144, 8, 4096));
  EXPECT_EQ(by_m[6144]->calls, 3);
  EXPECT_EQ(by_m[4096]->epilogue, "bias");
  EXPECT_EQ(by_m[4096]->lda, 14336);

  const auto stats = nlohmann::json::parse(testing_util::ReadAll(settings.stats_path));
  EXPECT_EQ(stats["format"], "kselect.layer_stats");
  EXPECT_EQ(stats["calls"], 4);
  EXPECT_EQ(stats["pass_reasons"]["mode"], 4);
  EXPECT_EQ(stats["gemms"].size(), 2u);
}

TEST_F(LayerTest, CallsItCannotReadPassThroughWithTheReason) {
  LayerSettings settings;
  settings.mode = LayerMode::kRecord;
  Layer layer(settings);
  Descriptors device_scalars(64, 64, 64);
  device_scalars.Set(CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE);
  ASSERT_EQ(layer.Matmul(&FakeReal, nullptr, device_scalars.op, nullptr, nullptr, device_scalars.a,
                         nullptr, device_scalars.b, nullptr, nullptr, device_scalars.c, nullptr,
                         device_scalars.d, nullptr, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(real_calls, 1);
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["pass_reasons"]["not_understood"], 1);
  ASSERT_EQ(stats["gemms"].size(), 1u);
  EXPECT_TRUE(Contains(stats["gemms"][0]["why"].get<std::string>(), "host scalars"));
  // Nothing unread reaches the record.
  EXPECT_EQ(layer.RecordCsv().find('\n'), layer.RecordCsv().size() - 1);
}

TEST_F(LayerTest, AMissingLibraryPassesThroughAndSaysWhy) {
  LayerSettings settings;
  settings.mode = LayerMode::kLibrary;
  settings.solutions = (tmp_ / "missing.json").string();
  Layer layer(settings);
  Descriptors desc(4096, 8, 4096);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(real_calls, 2);
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["overridden"], 0);
  EXPECT_EQ(stats["pass_reasons"]["no_decision"], 2);
  EXPECT_TRUE(Contains(stats["library_status"].get<std::string>(), "missing.json"));
}

TEST_F(LayerTest, ChangingTheModeDecidesAgain) {
  LayerSettings settings;
  settings.mode = LayerMode::kRecord;
  Layer layer(settings);
  Descriptors desc(4096, 8, 4096);
  ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  layer.SetMode(LayerMode::kOff);
  ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  layer.SetMode(LayerMode::kRecord);
  ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(real_calls, 3);
  EXPECT_EQ(layer.Totals().calls, 2);  // off counts nothing
}

TEST_F(LayerTest, NewAlphaOrBetaIsANewProblem) {
  LayerSettings settings;
  settings.mode = LayerMode::kRecord;
  Layer layer(settings);
  Descriptors desc(512, 16, 512);
  const float one = 1.0f;
  ASSERT_EQ(Call(layer, desc, &kOne, &kZero), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Call(layer, desc, &kOne, &one), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(Call(layer, desc, &kOne, &one), CUBLAS_STATUS_SUCCESS);
  const auto stats = nlohmann::json::parse(layer.StatsJson());
  ASSERT_EQ(stats["gemms"].size(), 2u);
  int64_t calls_beta_one = 0;
  for (const auto& g : stats["gemms"]) {
    if (g["gemm"].get<std::string>().find("beta=1") != std::string::npos) {
      calls_beta_one = g["calls"].get<int64_t>();
    }
  }
  EXPECT_EQ(calls_beta_one, 2) << stats.dump(2);
}

BlasCall LinearBlasCall(int64_t m, int64_t n, int64_t k) {
  BlasCall call;
  call.handle = reinterpret_cast<cublasHandle_t>(0x3000);
  call.trans_a = CUBLAS_OP_T;
  call.m = m;
  call.n = n;
  call.k = k;
  call.type_a = call.type_b = call.type_c = CUDA_R_16BF;
  call.lda = k;
  call.ldb = k;
  call.ldc = m;
  call.compute = CUBLAS_COMPUTE_32F;
  return call;
}

TEST(BlasCallTest, ReadsGemmExCalls) {
  const BlasCall call = LinearBlasCall(4096, 8, 14336);
  auto read = ReadBlasCall(call, &kOne, &kZero);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->problem, testing_util::LinearGemm(4096, 8, 14336));
  EXPECT_EQ(read->lda, 14336);
  // The legacy compute argument (a cudaDataType_t) reads as fp32 accumulation too.
  BlasCall legacy = call;
  legacy.compute = CUDA_R_32F;
  EXPECT_TRUE(ReadBlasCall(legacy, &kOne, &kZero).ok());

  BlasCall device = call;
  device.pointer_mode = CUBLAS_POINTER_MODE_DEVICE;
  EXPECT_TRUE(Contains(ReadBlasCall(device, nullptr, nullptr).status().message(), "host"));
  BlasCall half_compute = call;
  half_compute.compute = CUBLAS_COMPUTE_16F;
  EXPECT_FALSE(ReadBlasCall(half_compute, &kOne, &kZero).ok());
  BlasCall small_ld = call;
  small_ld.ldc = 100;
  EXPECT_TRUE(Contains(ReadBlasCall(small_ld, &kOne, &kZero).status().message(), "ldc 100"));
  BlasCall doubles = call;
  doubles.type_a = doubles.type_b = doubles.type_c = CUDA_R_64F;
  EXPECT_FALSE(ReadBlasCall(doubles, &kOne, &kZero).ok());

  // The descriptors that run the same product hold its sizes.
  auto desc = MakeLtDescriptors(call, *read);
  ASSERT_TRUE(desc.ok()) << desc.status().ToString();
  auto again =
      ReadLtCall((*desc)->op, (*desc)->a, (*desc)->b, (*desc)->c, (*desc)->c, &kOne, &kZero);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->problem, read->problem);
  EXPECT_EQ(again->lda, 14336);
}

// cuBLAS's handle queries and the application's own call, as stand-ins.
int g_blas_passes = 0;
cublasPointerMode_t g_pointer_mode = CUBLAS_POINTER_MODE_HOST;
cublasStatus_t FakeGetStream(cublasHandle_t, cudaStream_t* stream) {
  *stream = nullptr;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t FakeGetPointerMode(cublasHandle_t, cublasPointerMode_t* mode) {
  *mode = g_pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t FakeBlasPass(const void*) {
  ++g_blas_passes;
  return CUBLAS_STATUS_SUCCESS;
}

TEST_F(LayerTest, CublasCallsAreRecordedBesideCublasLtOnes) {
  LayerSettings settings;
  settings.mode = LayerMode::kRecord;
  Layer layer(settings);
  BlasFunctions blas;
  blas.get_stream = &FakeGetStream;
  blas.get_pointer_mode = &FakeGetPointerMode;
  g_blas_passes = 0;
  g_pointer_mode = CUBLAS_POINTER_MODE_HOST;
  BlasArgs args;
  args.call = LinearBlasCall(4096, 8, 4096);
  args.alpha = &kOne;
  args.beta = &kZero;
  for (int i = 0; i < 4; ++i) ASSERT_EQ(layer.Blas(blas, args, &FakeBlasPass, nullptr), 0);
  Descriptors desc(4096, 8, 4096);  // the same GEMM through cuBLASLt
  ASSERT_EQ(Call(layer, desc), CUBLAS_STATUS_SUCCESS);
  g_pointer_mode = CUBLAS_POINTER_MODE_DEVICE;
  ASSERT_EQ(layer.Blas(blas, args, &FakeBlasPass, nullptr), 0);
  EXPECT_EQ(g_blas_passes, 5);

  const auto stats = nlohmann::json::parse(layer.StatsJson());
  EXPECT_EQ(stats["calls"], 6);
  EXPECT_EQ(stats["pass_reasons"]["mode"], 5);
  EXPECT_EQ(stats["pass_reasons"]["not_understood"], 1);
  // One GEMM in the record, its calls through both APIs summed.
  auto log = ParseGemmLog(layer.RecordCsv(), "record");
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->gemms.size(), 1u);
  EXPECT_EQ(log->gemms[0].calls, 5);
}

}  // namespace
}  // namespace kselect::layer
