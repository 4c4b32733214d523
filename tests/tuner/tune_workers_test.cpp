// The tuner's worker processes without a GPU: real forked processes speaking the real protocol
// (ServeTuneWorker), with the GPU work replaced by hooks that answer at once, die or hang on
// chosen GEMMs. Checks the balance over devices, that a dead worker's GEMMs finish on another and
// that nothing is lost or done twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "kselect/hardware.h"
#include "kselect/tuner.h"
#include "testing_util.h"

namespace kselect {
namespace {

using testing_util::LinearGemm;

GemmLog TwelveGemmLog() {
  GemmLog log;
  log.source = "test";
  for (int i = 0; i < 12; ++i) {
    LoggedGemm g;
    g.problem = LinearGemm(1024 * (i + 1), 8 * (i % 3 + 1), 4096);
    g.calls = 10 * (12 - i);
    log.gemms.push_back(g);
  }
  return log;
}

StatusOr<HardwareProfile> H200(int) {
  return LoadHardwareProfile(
      (std::filesystem::path(KSELECT_SOURCE_DIR) / "data" / "hardware" / "nvidia-h200.json")
          .string());
}

// A fake tuning: every GEMM 1.1x faster, on the device that tuned it. A worker kills itself when
// it reaches the GEMM with m = die_m (any worker), or its second GEMM on die_device.
TunedGemm FakeTune(const LoggedGemm& gemm, double budget_s, int device, int64_t die_m,
                   int die_device) {
  static int tuned_here = 0;  // per worker process
  if (gemm.problem.m == die_m || (device == die_device && ++tuned_here == 2)) ::raise(SIGKILL);
  TunedGemm t;
  t.gemm = gemm;
  t.device = device;
  t.budget_s = budget_s;
  t.outcome = "tuned";
  t.accepted = true;
  CublasLtConfig c;
  c.algo_id = 66;
  t.reference = {KernelConfig(c), 0.1, 1.0};
  c.tile_id = 20;
  t.tuned = InterleavedFigure{KernelConfig(c), 0.1 / 1.1, 1.1};
  t.wall_s = 0.01;
  return t;
}

// Starts a worker as a forked child running ServeTuneWorker with the fake tuning.
TuneWorkerLauncher ForkLauncher(int64_t die_m, int die_device) {
  return [=](int device) -> StatusOr<TuneWorkerProcess> {
    std::fflush(nullptr);  // no buffered output duplicated into the child
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return IoError("pipe");
    const pid_t pid = ::fork();
    if (pid < 0) return IoError("fork");
    if (pid == 0) {
      // Without exec, close-on-exec does not apply: drop every descriptor the parent holds (the
      // other workers' pipes among them) but this worker's two ends.
      for (int fd = 3; fd < 1024; ++fd) {
        if (fd != down[0] && fd != up[1]) ::close(fd);
      }
      TuneWorkerHooks hooks;
      hooks.hardware = H200;
      hooks.tune = [=](const LoggedGemm& g, double budget_s, int d) {
        return FakeTune(g, budget_s, d, die_m, die_device);
      };
      _exit(ServeTuneWorker(down[0], up[1], device, hooks));
    }
    ::close(down[0]);
    ::close(up[1]);
    return TuneWorkerProcess{pid, down[1], up[0]};
  };
}

TuneOptions TwoDevices(TuneWorkerLauncher launcher) {
  TuneOptions options;
  options.devices = {0, 1};
  options.total_budget_s = 30;
  options.worker_launcher = std::move(launcher);
  return options;
}

std::vector<size_t> AllOf(const GemmLog& log) {
  std::vector<size_t> all(log.gemms.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

TEST(TuneWorkersTest, BalancesTheGemmsOverTheDevicesByBudget) {
  const GemmLog log = TwelveGemmLog();
  auto result = TuneGemms(log, AllOf(log), TwoDevices(ForkLauncher(-1, -1)));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->gemms.size(), 12u);
  std::map<int, double> budget_of;
  for (size_t i = 0; i < 12; ++i) {
    const TunedGemm& t = result->gemms[i];
    EXPECT_EQ(t.gemm.problem, log.gemms[i].problem) << "result " << i << " out of place";
    EXPECT_EQ(t.outcome, "tuned");
    ASSERT_TRUE(t.tuned);
    EXPECT_DOUBLE_EQ(t.tuned->speedup, 1.1);
    budget_of[t.device] += t.budget_s;
  }
  // The run's budget is per device: 30 s each, split over the GEMMs by share.
  EXPECT_NEAR(budget_of[0] + budget_of[1], 60, 1e-6);
  // Longest first to the least loaded: the devices' loads differ by at most one GEMM's.
  double largest = 0;
  for (const TunedGemm& t : result->gemms) largest = std::max(largest, t.budget_s + 1.5);
  EXPECT_LE(std::abs(budget_of[0] - budget_of[1]), largest);
  ASSERT_EQ(result->workers.size(), 2u);
  for (const TuneWorkerRecord& w : result->workers) {
    EXPECT_GT(w.gemms_done, 0) << "device " << w.device;
    EXPECT_EQ(w.ended, "finished");
  }
  EXPECT_EQ(result->hardware.sm_count, 132);
  EXPECT_NEAR(WeightedUplift(*result, [](const TunedGemm& t) { return &*t.tuned; }), 0.1, 1e-9);
}

TEST(TuneWorkersTest, ADeadWorkersGemmsFinishOnTheOther) {
  const GemmLog log = TwelveGemmLog();
  // The worker on device 1 dies on its second GEMM.
  auto result = TuneGemms(log, AllOf(log), TwoDevices(ForkLauncher(-1, 1)));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  int64_t done = 0;
  for (const TunedGemm& t : result->gemms) {
    EXPECT_EQ(t.outcome, "tuned") << t.gemm.problem.ToString();
    done += t.outcome == "tuned";
  }
  EXPECT_EQ(done, 12);
  ASSERT_EQ(result->workers.size(), 2u);
  const TuneWorkerRecord& lost = result->workers[1];
  const TuneWorkerRecord& kept = result->workers[0];
  EXPECT_TRUE(testing_util::Contains(lost.ended, "signal 9")) << lost.ended;
  EXPECT_EQ(lost.gemms_done, 1);
  EXPECT_EQ(kept.gemms_done, 11);
  EXPECT_EQ(kept.ended, "finished");
}

TEST(TuneWorkersTest, AGemmThatKillsEveryWorkerFailsAlone) {
  const GemmLog log = TwelveGemmLog();
  auto result = TuneGemms(log, AllOf(log), TwoDevices(ForkLauncher(5120, -7)));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  int64_t failed = 0, tuned = 0;
  for (const TunedGemm& t : result->gemms) {
    if (t.gemm.problem.m == 5120) {
      EXPECT_TRUE(testing_util::Contains(t.outcome, "died twice")) << t.outcome;
      ++failed;
    } else if (t.outcome == "tuned") {
      ++tuned;
    } else {
      // Jobs still queued behind it on the second worker when both were gone.
      EXPECT_TRUE(testing_util::Contains(t.outcome, "no worker left")) << t.outcome;
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_GE(tuned, 4);  // the second worker's own share, before it took the retry
  for (const TuneWorkerRecord& w : result->workers) {
    EXPECT_TRUE(testing_util::Contains(w.ended, "signal 9")) << w.ended;
  }
}

TEST(TuneWorkersTest, WorkersThatCannotStartAreAnError) {
  const GemmLog log = TwelveGemmLog();
  TuneOptions options;
  options.devices = {0, 1};
  options.worker_command = {"/nonexistent/kselect", "tune"};
  auto result = TuneGemms(log, AllOf(log), options);
  EXPECT_FALSE(result.ok());
}

}  // namespace
}  // namespace kselect
