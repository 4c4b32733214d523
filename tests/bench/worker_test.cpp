// The bench's process isolation, exercised for real (fork, pipes, signals, watchdog): an
// injected crash and an injected hang each cost one request and one worker restart, and the
// next request is served by a fresh worker. Runs the same with or without a GPU.
#include <gtest/gtest.h>

#include "bench/worker.h"
#include "core/json_codec.h"
#include "kselect/hardware.h"

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

// Without a GPU a "time" request is answered, not crashed on: a fatal unavailable reply (the
// worker exits after it, so the sweep records the pair invalid and starts a fresh one).
TEST(WorkerTest, TimeWithoutGpuIsAFatalUnavailableReply) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU is present; the reply is a measurement";
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
