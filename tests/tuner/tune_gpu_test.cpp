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

GemmLog TwoGemmLog() {
  GemmLog log;
  log.source = "test";
  log.format = GemmLogFormat::kPlainCsv;
  for (const GemmProblem& p : {LinearGemm(4096, 8, 4096), LinearGemm(1024, 8, 4096)}) {
    LoggedGemm g;
    g.problem = p;
    g.calls = 3;
    log.gemms.push_back(g);
  }
  log.sequence = {0, 1, 0, 1, 0, 1};
  log.total_calls = 6;
  return log;
}

TEST(TuneGpuTest, TunesVerifiesAndReplays) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no GPU on this host";
  }
  const GemmLog log = TwoGemmLog();
  TuneOptions options;
  options.model_dir = ModelDir("h200_cublaslt_default_bf16_tn");
  options.budget_s = 3;
  options.interleaved_rounds = 9;
  const std::vector<size_t> gemms = {0, 1};
  auto result = TuneGemms(log, gemms, options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->gemms.size(), 2u);
  for (const TunedGemm& t : result->gemms) {
    std::printf("tune %s: %s, tuned %.3fx model %.3fx top8 %.3fx, %lld of %lld timed (%s), %s\n",
                t.gemm.problem.ToString().c_str(), t.outcome.c_str(),
                t.tuned ? t.tuned->speedup : 0.0, t.model_pick ? t.model_pick->speedup : 0.0,
                t.best_of_top8 ? t.best_of_top8->speedup : 0.0,
                static_cast<long long>(t.configs_timed),
                static_cast<long long>(t.configs_enumerated), t.stopped_by.c_str(), t.note.c_str());
    EXPECT_FALSE(t.outcome.starts_with("failed")) << t.outcome;
    EXPECT_GT(t.reference.median_ms, 0);
    EXPECT_DOUBLE_EQ(t.reference.speedup, 1.0);  // itself, round by round
    EXPECT_GT(t.configs_timed, 8);
    EXPECT_LE(t.configs_timed, t.configs_enumerated);
    ASSERT_TRUE(t.best_of_top8);
    ASSERT_TRUE(t.model_pick);
    // The search's best is at least as fast as what seeded it, give or take the timing noise.
    if (t.tuned) {
      EXPECT_GT(t.tuned->speedup, 0.9 * t.best_of_top8->speedup);
      EXPECT_FALSE(t.verification.empty());
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
  EXPECT_EQ(replayed->calls, 6);
  EXPECT_EQ(replayed->from_library, static_cast<int64_t>(library.solutions.size()));
  EXPECT_GT(replayed->default_ms, 0);
  EXPECT_TRUE(std::isfinite(replayed->uplift));
  EXPECT_EQ(library.solutions.size(), 2u);  // accepted, or the default pinned
  std::printf("replay: default %.4f ms, library %.4f ms, uplift %+.2f %%\n", replayed->default_ms,
              replayed->library_ms, 100 * replayed->uplift);
}

}  // namespace
}  // namespace kselect
