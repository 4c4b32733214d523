// The bench's process isolation, exercised for real (fork, pipes, signals, watchdog): an
// injected crash and an injected hang each cost one request and one worker restart, and the
// next request is served by a fresh worker. Runs the same with or without a GPU.
#include <gtest/gtest.h>

#include "bench/worker.h"
#include "core/json_codec.h"

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
