// The tuner and replay on the GPU (skipped without one): two decode-size GEMMs tuned with a short
// budget; every figure checked for what it must be (the reference is 1x itself, an accepted
// solution is verified and at least the threshold faster, interleaved), the library built from
// the result loads in the selector, and replay runs the log's sequence with it.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "kselect/selector.h"
#include "kselect/tuner.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::LinearGemm;
using testing_util::ModelDir;

// Two decode GEMMs (the second with the 1 MiB workspace PyTorch gives cuBLASLt), a rotary
// table's fp32 outer product (k = 1) and an fp8 NN GEMM the cuBLASLt provider does not run.
GemmLog FourGemmLog() {
  GemmLog log;
  log.source = "test";
  log.format = GemmLogFormat::kPlainCsv;
  GemmProblem rotary = LinearGemm(64, 8, 1);
  rotary.layout = GemmLayoutFromBlasOps("NN").value();
  rotary.dtype_a = rotary.dtype_b = rotary.dtype_c = DataType::kF32;
  GemmProblem fp8_nn = LinearGemm(1024, 8, 4096);
  fp8_nn.layout = GemmLayoutFromBlasOps("NN").value();
  fp8_nn.dtype_a = fp8_nn.dtype_b = DataType::kF8E4M3;
  for (const GemmProblem& p :
       {LinearGemm(4096, 8, 4096), LinearGemm(1024, 8, 4096), rotary, fp8_nn}) {
    LoggedGemm g;
    g.problem = p;
    g.calls = 3;
    log.gemms.push_back(g);
  }
  log.gemms[1].workspace_bytes = 1 << 20;
  log.sequence = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  log.total_calls = 12;
  return log;
}

TEST(TuneGpuTest, TunesVerifiesAndReplays) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU on this host";
  }
  const GemmLog log = FourGemmLog();
  TuneOptions options;
  options.model_dir = ModelDir("h200_cublaslt_default_bf16_tn");
  options.total_budget_s = 6;
  options.interleaved_rounds = 9;
  const std::vector<size_t> gemms = {0, 1, 2, 3};
  auto result = TuneGemms(log, gemms, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->gemms.size(), 4u);
  // The budget is split by time share, and every GEMM gets some.
  EXPECT_GT(result->gemms[0].budget_s, result->gemms[2].budget_s);
  EXPECT_NEAR(result->gemms[0].budget_s + result->gemms[1].budget_s + result->gemms[2].budget_s +
                  result->gemms[3].budget_s,
              6.0, 1e-9);
  EXPECT_EQ(result->gemms[1].workspace_limit, 1 << 20);
  const TunedGemm& unsupported = result->gemms[3];
  EXPECT_TRUE(unsupported.outcome.starts_with("kept: the application's own choice"))
      << unsupported.outcome;
  EXPECT_EQ(unsupported.reference.median_ms, 0);
  for (size_t i = 0; i < 3; ++i) {
    const TunedGemm& t = result->gemms[i];
    std::printf("tune %s: %s, tuned %.3fx model %.3fx top8 %.3fx, %lld of %lld timed (%s), %s\n",
                t.gemm.problem.ToString().c_str(), t.outcome.c_str(),
                t.tuned ? t.tuned->speedup : 0.0, t.model_pick ? t.model_pick->speedup : 0.0,
                t.best_of_top8 ? t.best_of_top8->speedup : 0.0,
                static_cast<long long>(t.configs_timed),
                static_cast<long long>(t.configs_enumerated), t.stopped_by.c_str(), t.note.c_str());
    EXPECT_FALSE(t.outcome.starts_with("failed")) << t.outcome;
    EXPECT_GT(t.reference.median_ms, 0);
    EXPECT_DOUBLE_EQ(t.reference.speedup, 1.0);  // itself, round by round
    EXPECT_GT(t.configs_timed, 1);
    EXPECT_LE(t.configs_timed, t.configs_enumerated);
    ASSERT_TRUE(t.best_of_top8);
    if (i < 2) {
      EXPECT_GT(t.configs_timed, 8);
      ASSERT_TRUE(t.model_pick);  // the model covers bf16 only
    }
    // The final choice is the fastest, in the confirming run, of the verified finalists: never
    // behind the model's pick or the best of the top N there.
    if (t.tuned) {
      EXPECT_FALSE(t.chosen_from.empty());
    }
    if (t.accepted) {
      EXPECT_FALSE(t.verification.empty());
      if (t.model_pick && t.note.find("rejected") == std::string::npos) {
        EXPECT_GE(t.tuned->speedup, t.model_pick->speedup);
      }
      EXPECT_GE(t.tuned->speedup, t.best_of_top8->speedup);
    }
    if (t.accepted) {
      EXPECT_GE(t.tuned->speedup, options.min_speedup);
    }
  }
  const SolutionLibrary library = SolutionLibraryOf(*result);
  EXPECT_EQ(library.identity.device_name, result->hardware.device_name);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kselect_tune_gpu_" + std::to_string(::getpid()) + ".json"))
                               .string();
  ASSERT_TRUE(SaveSolutionLibrary(library, path).ok());
  SelectorOptions so;
  so.solution_library = path;
  auto selector = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"), so);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  for (const Solution& s : library.solutions) {
    auto selection = (*selector)->Select(s.problem);
    ASSERT_TRUE(selection.ok());
    EXPECT_EQ((*selection)->path, DecisionPath::kSolutionLibrary);
  }

  ReplayOptions replay;
  replay.rounds = 5;
  auto replayed = ReplayGemmLog(log, library, replay);
  std::filesystem::remove(path);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  // The fp8 NN GEMM is left out of replay, not an error.
  EXPECT_EQ(replayed->calls, 9);
  EXPECT_EQ(replayed->left_out_calls, 3);
  EXPECT_EQ(replayed->left_out.size(), 1u);
  EXPECT_EQ(replayed->from_library, static_cast<int64_t>(library.solutions.size()));
  EXPECT_GT(replayed->default_ms, 0);
  EXPECT_TRUE(std::isfinite(replayed->uplift));
  EXPECT_EQ(library.solutions.size(), 3u);  // accepted, or the default pinned
  std::printf("replay: default %.4f ms, library %.4f ms, uplift %+.2f %%\n", replayed->default_ms,
              replayed->library_ms, 100 * replayed->uplift);
}

}  // namespace
}  // namespace kselect
