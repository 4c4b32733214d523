// The bench's process isolation, exercised for real (fork, pipes, signals, watchdog): an
// injected crash and an injected hang each cost one request and one worker restart, and the
// next request is served by a fresh worker. Runs the same with or without a GPU.
#include <gtest/gtest.h>

#include <filesystem>

#include "bench/worker.h"
#include "core/json_codec.h"
#include "kselect/catalogue.h"
#include "kselect/hardware.h"
#include "kselect/provider.h"

namespace kselect::bench {
namespace {

nlohmann::json TimeRequest(const std::string& inject) {
  GemmProblem p;
  p.m = p.n = p.k = 64;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  return nlohmann::json{{"cmd", "time"},
                        {"problem", json_codec::ProblemToJson(Problem(p))},
                        {"config", json_codec::KernelConfigToJson(CublasLtConfig{})},
                        {"inject", inject}};
}

TEST(WorkerTest, CrashAndHangAreContainedAndTheWorkerRestarts) {
  BenchOptions options;
  WorkerClient worker(options, 0);
  auto crashed = worker.Request(TimeRequest("crash"), 30);
  ASSERT_FALSE(crashed.ok());
  EXPECT_EQ(crashed.status().code(), StatusCode::kInternal);
  EXPECT_NE(crashed.status().message().find("signal 11"), std::string::npos)
      << crashed.status().ToString();

  auto hung = worker.Request(TimeRequest("hang"), 1.0);
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.status().code(), StatusCode::kTimeout);
  EXPECT_NE(hung.status().message().find("watchdog"), std::string::npos);

  // A fresh worker answers the next request (with a GPU: a measurement or a cannot-implement;
  // without: a clean unavailable reply).
  auto next = worker.Request(nlohmann::json{{"cmd", "hello"}}, 60);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(next->contains("ok"));
  EXPECT_EQ(worker.restarts(), 2);
}

}  // namespace
}  // namespace kselect::bench

namespace kselect::bench {
namespace {

// Whether the host has an NVIDIA GPU, asked without the CUDA runtime: the worker is a fork of this
// process, and a CUDA initialised before the fork (cudaGetDeviceCount is enough) cannot initialise
// in the child (cudaErrorInitializationError), as the bench's parent never does.
bool NvidiaDevicePresent() {
  return std::filesystem::exists("/dev/nvidiactl");
}

// Without a GPU a "time" request is answered, not crashed on: a fatal unavailable reply (the
// worker exits after it, so the sweep records the pair invalid and starts a fresh one).
TEST(WorkerTest, TimeWithoutGpuIsAFatalUnavailableReply) {
  if (NvidiaDevicePresent()) GTEST_SKIP() << "a GPU is present; the reply is a measurement";
  BenchOptions options;
  WorkerClient worker(options, 0);
  auto reply = worker.Request(TimeRequest(""), 60);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_FALSE(reply->value("ok", true));
  EXPECT_TRUE(reply->value("fatal", false));
  EXPECT_NE(reply->value("reason", "").find("unavailable"), std::string::npos) << reply->dump();
}

}  // namespace
}  // namespace kselect::bench

namespace kselect::bench {
namespace {

// Drift control on a GPU: a config timed with the problem's reference interleaved comes back
// with the reference's time from the same batches, and (where NVML is there, as on every lent
// H100/H200) with the clocks, power and temperature it ran at.
TEST(WorkerTest, OnAGpuTheReferenceIsTimedInterleavedAndTheGpuStateRecorded) {
  if (!NvidiaDevicePresent()) GTEST_SKIP() << "no GPU on this host";
  GemmProblem p;
  p.m = p.n = p.k = 2048;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  // The heuristic's picks come from the worker's plan, as in the bench: a parent that had created
  // a CUDA context itself would hand its forked worker a CUDA that cannot initialise.
  BenchOptions options;
  auto rules = FindRuleSet(std::string(KSELECT_SOURCE_DIR) + "/rules", Provider::kCublasLt, "tiny");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  options.rules = *rules;
  options.heuristic_picks = 2;
  WorkerClient worker(options, 0);
  auto plan = worker.Request(
      nlohmann::json{{"cmd", "plan"}, {"problem", json_codec::ProblemToJson(Problem(p))}}, 120);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->value("ok", false)) << plan->dump();
  const nlohmann::json& peers = plan->at("peers");
  ASSERT_EQ(peers.size(), 2u) << plan->dump();
  std::vector<KernelConfig> picks;
  for (const nlohmann::json& peer : peers) {
    auto config = json_codec::KernelConfigFromJson(peer, "plan.peers");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    picks.push_back(*config);
  }
  nlohmann::json alone{{"cmd", "time"},
                       {"problem", json_codec::ProblemToJson(Problem(p))},
                       {"config", json_codec::KernelConfigToJson(picks[0])}};
  auto reference = worker.Request(alone, 60);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  ASSERT_TRUE(reference->value("ok", false)) << reference->dump();
  EXPECT_FALSE(reference->contains("reference_latency_ms"));
  const double reference_ms = reference->value("latency_ms", 0.0);
  ASSERT_GT(reference_ms, 0);

  nlohmann::json interleaved = alone;
  interleaved["config"] = json_codec::KernelConfigToJson(picks[1]);
  interleaved["reference"] = json_codec::KernelConfigToJson(picks[0]);
  interleaved["reference_ms"] = reference_ms;
  auto reply = worker.Request(interleaved, 60);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_TRUE(reply->value("ok", false)) << reply->dump();
  EXPECT_GT(reply->value("latency_ms", 0.0), 0);
  const double interleaved_reference_ms = reply->value("reference_latency_ms", 0.0);
  // The same kernel on the same operands, seconds apart: well within a factor of two.
  EXPECT_GT(interleaved_reference_ms, 0.5 * reference_ms) << reply->dump();
  EXPECT_LT(interleaved_reference_ms, 2.0 * reference_ms) << reply->dump();
  const nlohmann::json& method = reply->at("method");
  EXPECT_GT(method.value("sm_clock_min_mhz", 0), 100) << method.dump();
  EXPECT_GE(method.value("sm_clock_max_mhz", 0), method.value("sm_clock_min_mhz", 0));
  EXPECT_GT(method.value("power_w", 0.0), 10.0) << method.dump();
  EXPECT_GT(method.value("temperature_c", 0), 5) << method.dump();
}

}  // namespace
}  // namespace kselect::bench
