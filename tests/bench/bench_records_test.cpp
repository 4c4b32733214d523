// The CPU side of kselect bench: shards, JSONL records (round trip through the ingestion
// parser) and resume state (torn last line repaired, finished pairs found).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "kselect/bench.h"
#include "kselect/dataset.h"
#include "kselect/ingest.h"

namespace kselect {
namespace {

TEST(ShardTest, ParsesAndRejects) {
  EXPECT_EQ(ParseShard("2/5").value(), (ShardSpec{2, 5}));
  EXPECT_FALSE(ParseShard("5/5").ok());
  EXPECT_FALSE(ParseShard("1").ok());
  EXPECT_FALSE(ParseShard("a/2").ok());
  EXPECT_FALSE(ParseShard("0/0").ok());
}

TEST(ShardTest, ShardsPartitionTheProblems) {
  for (const int count : {1, 2, 3, 7}) {
    std::multiset<size_t> seen;
    for (int i = 0; i < count; ++i) {
      for (const size_t index : ShardIndices(100, ShardSpec{i, count})) seen.insert(index);
    }
    ASSERT_EQ(seen.size(), 100u);
    for (size_t i = 0; i < 100; ++i) EXPECT_EQ(seen.count(i), 1u);
  }
}

TEST(ShardTest, ReadsSlurmThenOpenMpi) {
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_EQ(ShardFromEnvironment().value(), (ShardSpec{1, 4}));
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "8", 1);
  EXPECT_EQ(ShardFromEnvironment().value(), (ShardSpec{3, 8}));
  setenv("SLURM_PROCID", "9", 1);
  EXPECT_FALSE(ShardFromEnvironment().ok());
  for (const char* v :
       {"SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"})
    unsetenv(v);
  EXPECT_EQ(ShardFromEnvironment().value(), (ShardSpec{0, 1}));
}

RunInfo TestRun() {
  RunInfo run;
  run.run_id = "test-run";
  run.tool = "kselect test";
  run.started_at = "2026-11-22T00:00:00Z";
  run.hardware.vendor = "nvidia";
  run.hardware.device_name = "NVIDIA H200";
  run.hardware.device_kind = "nvidia-h200";
  run.hardware.arch = "sm_90";
  run.hardware.cc_major = 9;
  run.hardware.sm_count = 132;
  run.method.name = "kselect.bench";
  run.method.timer = "cuda_events";
  run.method.statistic = "median";
  run.method.repeats = 7;
  return run;
}

Measurement Row(int64_t m, int32_t tile, double latency) {
  Measurement r;
  r.run_id = "test-run";
  r.op_type = "gemm";
  GemmProblem p;
  p.m = m;
  p.n = p.k = 4096;
  p.layout = GemmLayoutFromBlasOps("TN").value();
  r.problem = p;
  CublasLtConfig c;
  c.algo_id = 66;
  c.tile_id = tile;
  r.config = c;
  r.kernel_name = DescribeConfig(r.config);
  r.latency_ms = latency;
  r.is_valid = latency > 0;
  if (!r.is_valid) r.invalid_reason = "internal: worker died: signal 11 (Segmentation fault)";
  r.cv = 0.01;
  r.samples = 7;
  r.method = TestRun().method;
  r.method.iters_per_repeat = 20;
  r.timestamp = "2026-11-22T00:00:01Z";
  DeriveRates(r);
  return r;
}

TEST(BenchRecordsTest, LinesRoundTripThroughTheIngestParser) {
  Measurement aborted = Row(8, 22, 0.5);
  aborted.is_valid = false;
  aborted.aborted = true;
  aborted.abort_bound_ms = 0.3;
  aborted.invalid_reason = "aborted: slower than 3x the best so far";
  Measurement peer = Row(1, 21, 0.02);
  peer.peer_rank = 3;
  const std::string text = RunRecordLine(TestRun()) + MeasurementLine(Row(1, 20, 0.01)) +
                           MeasurementLine(peer) + MeasurementLine(aborted) +
                           MeasurementLine(Row(1, 23, 0));
  auto parsed = ParseKselectJsonl(text, "rt.jsonl", IngestOptions{});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->runs.size(), 1u);
  EXPECT_EQ(parsed->runs[0].hardware.device_kind, "nvidia-h200");
  ASSERT_EQ(parsed->measurements.size(), 4u);
  const Measurement& first = parsed->measurements[0];
  EXPECT_TRUE(first.is_valid);
  EXPECT_EQ(first.config, Row(1, 20, 0.01).config);
  EXPECT_EQ(first.problem, Row(1, 20, 0.01).problem);
  EXPECT_DOUBLE_EQ(first.latency_ms, 0.01);
  EXPECT_EQ(first.method.iters_per_repeat, 20);
  EXPECT_FALSE(first.peer_rank.has_value());
  EXPECT_EQ(parsed->measurements[1].peer_rank.value_or(-1), 3);
  EXPECT_TRUE(parsed->measurements[2].aborted);
  EXPECT_DOUBLE_EQ(parsed->measurements[2].abort_bound_ms, 0.3);
  EXPECT_FALSE(parsed->measurements[3].is_valid);
  EXPECT_NE(parsed->measurements[3].invalid_reason.find("signal 11"), std::string::npos);
}

TEST(BenchRecordsTest, RowsOfAnotherGpuOfTheRunKeepTheirDeviceUuid) {
  RunInfo run = TestRun();
  run.hardware.uuid = "GPU-first";
  Measurement second_gpu = Row(1, 21, 0.02);
  second_gpu.device_uuid = "GPU-second";
  const std::string text =
      RunRecordLine(run) + MeasurementLine(Row(1, 20, 0.01)) + MeasurementLine(second_gpu);
  // A single-GPU row writes no device_uuid: its device is the run's.
  EXPECT_EQ(MeasurementLine(Row(1, 20, 0.01)).find("device_uuid"), std::string::npos);
  auto parsed = ParseKselectJsonl(text, "two_gpus.jsonl", IngestOptions{});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->measurements.size(), 2u);
  EXPECT_EQ(RowFromMeasurement(parsed->measurements[0], parsed->runs[0]).device_uuid.value_or(""),
            "GPU-first");
  EXPECT_EQ(RowFromMeasurement(parsed->measurements[1], parsed->runs[0]).device_uuid.value_or(""),
            "GPU-second");
}

ProblemDone DoneFor(int64_t m, int64_t rows) {
  ProblemDone done;
  done.run_id = "test-run";
  done.problem = Row(m, 20, 1).problem;
  done.configs = rows;
  done.rows = rows;
  done.enumerated = rows;
  done.plan_seconds = 0.25;
  done.seconds = 1.5;
  return done;
}

TEST(BenchRecordsTest, ProblemDoneMarksFinishedProblemsAndIngestCanKeepOnlyThose) {
  // Problem m=1 finished (two rows and its problem_done); m=2 was cut off after one row.
  const std::string text = RunRecordLine(TestRun()) + MeasurementLine(Row(1, 20, 0.01)) +
                           MeasurementLine(Row(1, 21, 0.02)) + ProblemDoneLine(DoneFor(1, 2)) +
                           MeasurementLine(Row(2, 20, 0.03));
  auto all = ParseKselectJsonl(text, "done.jsonl", IngestOptions{});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->measurements.size(), 3u);
  ASSERT_EQ(all->completed_problems.size(), 1u);
  EXPECT_EQ(all->completed_problems[0].run_id, "test-run");
  EXPECT_EQ(all->completed_problems[0].problem, ProblemToString(Row(1, 20, 1).problem));
  EXPECT_EQ(all->dropped_incomplete, 0);

  IngestOptions complete_only;
  complete_only.complete_problems_only = true;
  auto complete = ParseKselectJsonl(text, "done.jsonl", complete_only);
  ASSERT_TRUE(complete.ok()) << complete.status().ToString();
  ASSERT_EQ(complete->measurements.size(), 2u);
  for (const Measurement& m : complete->measurements) EXPECT_EQ(m.problem, Row(1, 20, 1).problem);
  EXPECT_EQ(complete->dropped_incomplete, 1);
}

TEST(BenchRecordsTest, ProblemDoneOfAnUnknownRunOrWithUnknownFieldsIsRefused) {
  ProblemDone stray = DoneFor(1, 2);
  stray.run_id = "another-run";
  EXPECT_FALSE(
      ParseKselectJsonl(RunRecordLine(TestRun()) + ProblemDoneLine(stray), "x", IngestOptions{})
          .ok());
  std::string line = ProblemDoneLine(DoneFor(1, 2));
  line.insert(1, "\"surprise\":1,");
  EXPECT_FALSE(ParseKselectJsonl(RunRecordLine(TestRun()) + line, "x", IngestOptions{}).ok());
}

TEST(BenchRecordsTest, ConfirmationSetIsTheFastestDistinctValidConfigsThenTheHeuristicPick) {
  const Problem p = Row(1, 20, 1).problem;
  std::vector<KernelConfig> configs;
  for (int tile = 20; tile < 30; ++tile) configs.push_back(Row(1, tile, 1).config);
  // The heuristic's rank-1 pick is the first config (timing order: peers first), and slow.
  const std::map<std::string, int32_t> peer_rank = {{ConfigKey(configs[0]), 1}};
  auto key = [&](int i) { return PairKey(p, configs[static_cast<size_t>(i)]); };
  std::vector<std::pair<double, std::string>> valid = {
      {0.9, key(0)}, {0.3, key(5)}, {0.1, key(7)}, {0.2, key(2)}, {0.15, key(7)}, {0.5, key(9)}};
  // Top 3 distinct: 7 (0.1), 2 (0.2), 5 (0.3); then the peer's pick 0.
  EXPECT_EQ(ConfirmationSet(p, configs, peer_rank, valid, 3), (std::vector<size_t>{7, 2, 5, 0}));
  // The pick is not repeated when it is among the fastest.
  EXPECT_EQ(ConfirmationSet(p, configs, peer_rank, valid, 6), (std::vector<size_t>{7, 2, 5, 9, 0}));
  // An invalid (unlisted) pick is not confirmed; rows of configs not in the list are ignored.
  valid.erase(valid.begin());
  valid.emplace_back(0.01, PairKey(Row(2, 20, 1).problem, configs[1]));
  EXPECT_EQ(ConfirmationSet(p, configs, peer_rank, valid, 2), (std::vector<size_t>{7, 2}));
  EXPECT_TRUE(ConfirmationSet(p, configs, peer_rank, {}, 8).empty());
}

// The second heuristic's rank (cuDNN's mode B) is written only where a row has one, reads back
// through ingest and the dataset row, and a line without it (every older file) has none.
TEST(BenchRecordsTest, SecondHeuristicRankRoundTripsThroughJsonlAndDatasetRows) {
  Measurement both = Row(1, 21, 0.02);
  both.peer_rank = 2;
  both.peer_rank_b = 1;
  Measurement only_b = Row(1, 22, 0.03);
  only_b.peer_rank_b = 5;
  EXPECT_EQ(MeasurementLine(Row(1, 20, 0.01)).find("peer_rank_b"), std::string::npos);
  const std::string text = RunRecordLine(TestRun()) + MeasurementLine(Row(1, 20, 0.01)) +
                           MeasurementLine(both) + MeasurementLine(only_b);
  auto parsed = ParseKselectJsonl(text, "b.jsonl", IngestOptions{});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->measurements.size(), 3u);
  EXPECT_FALSE(parsed->measurements[0].peer_rank_b.has_value());
  EXPECT_EQ(parsed->measurements[1].peer_rank.value_or(-1), 2);
  EXPECT_EQ(parsed->measurements[1].peer_rank_b.value_or(-1), 1);
  EXPECT_FALSE(parsed->measurements[2].peer_rank.has_value());
  EXPECT_EQ(parsed->measurements[2].peer_rank_b.value_or(-1), 5);
  // Dataset row and back.
  const DatasetRow row = RowFromMeasurement(parsed->measurements[2], parsed->runs[0]);
  EXPECT_EQ(row.peer_rank_b.value_or(-1), 5);
  EXPECT_FALSE(row.peer_rank.has_value());
  EXPECT_EQ(MeasurementFromRow(row).value().peer_rank_b.value_or(-1), 5);
  EXPECT_FALSE(RowFromMeasurement(parsed->measurements[0], parsed->runs[0]).peer_rank_b);
  // null is no rank, as for peer_rank.
  std::string null_rank = MeasurementLine(Row(1, 20, 0.01));
  null_rank.insert(1, "\"peer_rank_b\":null,");
  auto with_null = ParseKselectJsonl(RunRecordLine(TestRun()) + null_rank, "n", IngestOptions{});
  ASSERT_TRUE(with_null.ok()) << with_null.status().ToString();
  EXPECT_FALSE(with_null->measurements[0].peer_rank_b.has_value());
}

TEST(BenchRecordsTest, DriftReferenceAndGpuStateRoundTripThroughJsonlDatasetRowsAndMerges) {
  Measurement reference = Row(1, 20, 0.010);
  reference.is_drift_reference = true;
  reference.reference_latency_ms = 0.010;
  Measurement later = Row(1, 21, 0.012);
  later.reference_latency_ms = 0.0105;
  later.method.sm_clock_min_mhz = 1755;
  later.method.sm_clock_max_mhz = 1980;
  later.method.power_w = 412.5;
  later.method.temperature_c = 47;
  // Rows of runs without drift control write neither field.
  EXPECT_EQ(MeasurementLine(Row(1, 22, 0.01)).find("reference"), std::string::npos);
  const std::string text =
      RunRecordLine(TestRun()) + MeasurementLine(reference) + MeasurementLine(later);
  auto parsed = ParseKselectJsonl(text, "d.jsonl", IngestOptions{});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->measurements.size(), 2u);
  EXPECT_TRUE(parsed->measurements[0].is_drift_reference);
  EXPECT_FALSE(parsed->measurements[1].is_drift_reference);
  const Measurement& got = parsed->measurements[1];
  EXPECT_DOUBLE_EQ(got.reference_latency_ms, 0.0105);
  EXPECT_EQ(got.method.sm_clock_min_mhz, 1755);
  EXPECT_DOUBLE_EQ(got.method.power_w, 412.5);
  EXPECT_EQ(got.method.temperature_c, 47);
  const DatasetRow row = RowFromMeasurement(got, parsed->runs[0]);
  EXPECT_DOUBLE_EQ(row.reference_latency_ms.value_or(-1), 0.0105);
  EXPECT_DOUBLE_EQ(row.power_w.value_or(-1), 412.5);
  EXPECT_EQ(row.temperature_c.value_or(-1), 47);
  const Measurement back = MeasurementFromRow(row).value();
  EXPECT_DOUBLE_EQ(back.reference_latency_ms, 0.0105);
  EXPECT_DOUBLE_EQ(back.method.power_w, 412.5);
  // Repeats of a pair merge into the median latency and the median reference time.
  Measurement again = later;
  again.latency_ms = 0.014;
  again.reference_latency_ms = 0.0125;
  Measurement third = later;
  third.latency_ms = 0.013;
  third.reference_latency_ms = 0.0115;
  for (Measurement* m : {&again, &third}) DeriveRates(*m);
  const std::vector<Measurement> merged =
      MergeDuplicateMeasurements({later, again, third}, MergeScope::kWithinRun);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_DOUBLE_EQ(merged[0].latency_ms, 0.013);
  EXPECT_DOUBLE_EQ(merged[0].reference_latency_ms, 0.0115);
}

TEST(BenchRecordsTest, NegativeReferenceLatencyIsAClearError) {
  std::string line = MeasurementLine(Row(1, 20, 0.01));
  line.insert(1, "\"reference_latency_ms\":-0.5,");
  auto parsed = ParseKselectJsonl(RunRecordLine(TestRun()) + line, "neg.jsonl", IngestOptions{});
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("reference_latency_ms"), std::string::npos)
      << parsed.status().message();
}

TEST(BenchRecordsTest, NegativePowerIsAClearError) {
  Measurement row = Row(1, 20, 0.01);
  row.method.power_w = -3;
  auto parsed = ParseKselectJsonl(RunRecordLine(TestRun()) + MeasurementLine(row), "neg.jsonl",
                                  IngestOptions{});
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("power_w"), std::string::npos)
      << parsed.status().message();
}

TEST(BenchRecordsTest, SecondHeuristicRankOfAWrongTypeOrRangeIsAClearError) {
  for (const auto& [value, reason] : {std::pair<std::string, std::string>{"\"1\"", "peer_rank_b"},
                                      {"1.5", "peer_rank_b"},
                                      {"0", "is not between 1 and 2^31-1"},
                                      {"4294967297", "is not between 1 and 2^31-1"}}) {
    std::string line = MeasurementLine(Row(1, 20, 0.01));
    line.insert(1, "\"peer_rank_b\":" + value + ",");
    auto parsed = ParseKselectJsonl(RunRecordLine(TestRun()) + line, "bad.jsonl", IngestOptions{});
    ASSERT_FALSE(parsed.ok()) << value;
    EXPECT_NE(parsed.status().message().find("bad.jsonl:2"), std::string::npos)
        << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos)
        << value << ": " << parsed.status().message();
  }
}

// Both heuristics' picks are timed first, each ranked in its own list; a config only the second
// heuristic lists is timed too, and the catalogue follows without repeats.
TEST(BenchRecordsTest, TimingOrderRanksBothHeuristicsAndTimesConfigsOnlyTheSecondLists) {
  std::vector<KernelConfig> c;
  for (int tile = 20; tile < 30; ++tile) c.push_back(Row(1, tile, 1).config);
  const TimingOrder order =
      PlanTimingOrder({c[3], c[1]}, {c[1], c[7], c[7], c[4]}, {c[0], c[1], c[2], c[7], c[8]}, 0);
  EXPECT_EQ(order.configs, (std::vector<KernelConfig>{c[3], c[1], c[7], c[4], c[0], c[2], c[8]}));
  EXPECT_EQ(order.peer_rank,
            (std::map<std::string, int32_t>{{ConfigKey(c[3]), 1}, {ConfigKey(c[1]), 2}}));
  EXPECT_EQ(order.peer_rank_b,
            (std::map<std::string, int32_t>{
                {ConfigKey(c[1]), 1}, {ConfigKey(c[7]), 2}, {ConfigKey(c[4]), 3}}));
  // --max-configs caps the catalogue, never the heuristics' picks.
  EXPECT_EQ(PlanTimingOrder({c[3]}, {c[4]}, {c[0], c[1], c[2]}, 2).configs,
            (std::vector<KernelConfig>{c[3], c[4], c[0], c[1]}));
  // A provider with one heuristic: as before.
  const TimingOrder one = PlanTimingOrder({c[2]}, {}, {c[0], c[2]}, 0);
  EXPECT_EQ(one.configs, (std::vector<KernelConfig>{c[2], c[0]}));
  EXPECT_TRUE(one.peer_rank_b.empty());
}

TEST(BenchRecordsTest, ConfirmationSetAddsTheSecondHeuristicsPick) {
  const Problem p = Row(1, 20, 1).problem;
  std::vector<KernelConfig> configs;
  for (int tile = 20; tile < 30; ++tile) configs.push_back(Row(1, tile, 1).config);
  // Timing order: A's pick (0), then B's pick (1) that A did not list.
  const std::map<std::string, int32_t> peer_rank = {{ConfigKey(configs[0]), 1}};
  const std::map<std::string, int32_t> peer_rank_b = {{ConfigKey(configs[1]), 1}};
  auto key = [&](int i) { return PairKey(p, configs[static_cast<size_t>(i)]); };
  const std::vector<std::pair<double, std::string>> valid = {
      {0.9, key(0)}, {0.8, key(1)}, {0.1, key(7)}, {0.2, key(2)}};
  EXPECT_EQ(ConfirmationSet(p, configs, peer_rank, valid, 2, peer_rank_b),
            (std::vector<size_t>{7, 2, 0, 1}));
  EXPECT_EQ(ConfirmationSet(p, configs, peer_rank, valid, 2), (std::vector<size_t>{7, 2, 0}));
}

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("kselect_resume_" + std::to_string(::getpid()) + ".jsonl"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string path_;
};

TEST_F(ResumeTest, AbsentFileIsEmptyState) {
  auto state = LoadResumeState(path_, true);
  ASSERT_TRUE(state.ok());
  EXPECT_FALSE(state->has_run_record);
  EXPECT_TRUE(state->done.empty());
}

TEST_F(ResumeTest, RepairsATornLastLineAndListsFinishedPairs) {
  const std::string whole = RunRecordLine(TestRun()) + MeasurementLine(Row(1, 20, 0.02)) +
                            MeasurementLine(Row(1, 21, 0.01)) + MeasurementLine(Row(2, 20, 0));
  const std::string torn = MeasurementLine(Row(2, 21, 0.5));
  Write(whole + torn.substr(0, torn.size() / 2));
  auto state = LoadResumeState(path_, /*repair=*/true);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_TRUE(state->has_run_record);
  EXPECT_EQ(state->run.run_id, "test-run");
  EXPECT_EQ(state->torn_bytes, static_cast<int64_t>(torn.size() / 2));
  EXPECT_EQ(std::filesystem::file_size(path_), whole.size());
  EXPECT_EQ(state->measurements, 3);
  // Invalid rows count as done too: a config that crashed is not retried on resume.
  for (const auto& [m, tile] : {std::pair{1, 20}, std::pair{1, 21}, std::pair{2, 20}}) {
    const Measurement r = Row(m, tile, 1);
    EXPECT_EQ(state->done.count(PairKey(r.problem, r.config)), 1u) << m << " " << tile;
  }
  const Measurement missing = Row(2, 21, 1);
  EXPECT_EQ(state->done.count(PairKey(missing.problem, missing.config)), 0u);
  // The abort rule's best-so-far survives the restart.
  EXPECT_DOUBLE_EQ(state->best_ms.at(ProblemToString(Row(1, 20, 1).problem)), 0.01);
  EXPECT_EQ(state->best_ms.count(ProblemToString(Row(2, 20, 1).problem)), 0u);
  // Repaired: a second load sees nothing torn.
  EXPECT_EQ(LoadResumeState(path_, true)->torn_bytes, 0);
}

// RunBench's progress, runnable without a GPU: a resumed sweep counts the problem an earlier run
// finished at once, then every other problem as it ends (without a GPU its enumeration fails;
// with one it is timed), with one device and with several (the parent polls their count).
TEST_F(ResumeTest, ProgressCountsEveryProblemOfTheShardUpToTheTotal) {
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
    Write(RunRecordLine(TestRun()) + ProblemDoneLine(DoneFor(1, 1)));
    BenchOptions options;
    for (const int64_t m : {1, 2, 3}) options.problems.push_back(Row(m, 20, 1).problem);
    options.output_path = path_;
    options.resume = true;
    options.devices = devices;
    options.planners = 1;
    options.max_configs_per_problem = 1;
    options.confirm_rounds = 0;
    std::vector<ProgressCount> reports;
    options.progress = [&](const ProgressCount& p) { reports.push_back(p); };
    StatusOr<BenchSummary> summary = RunBench(options);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    EXPECT_EQ(summary->problems_skipped, 1);
    ASSERT_FALSE(reports.empty()) << devices.size() << " device(s)";
    int64_t previous = 0;
    for (const ProgressCount& p : reports) {
      EXPECT_EQ(p.total, 3);
      EXPECT_EQ(p.unit, "problems");
      EXPECT_GE(p.done, previous) << "the count went back";
      EXPECT_LE(p.done, p.total);
      previous = p.done;
    }
    EXPECT_EQ(reports.back().done, 3) << devices.size() << " device(s)";
  }
}

TEST_F(ResumeTest, FinishedProblemsAreListedForSkipping) {
  Write(RunRecordLine(TestRun()) + MeasurementLine(Row(1, 20, 0.02)) +
        ProblemDoneLine(DoneFor(1, 1)) + MeasurementLine(Row(2, 20, 0.5)));
  auto state = LoadResumeState(path_, true);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->completed, std::set<std::string>{ProblemToString(Row(1, 20, 1).problem)});
  EXPECT_EQ(state->measurements, 2);
  // Only the unfinished problem's valid rows are kept for its confirmation pass.
  ASSERT_EQ(state->unfinished_valid.size(), 1u);
  const auto& rows = state->unfinished_valid.at(ProblemToString(Row(2, 20, 1).problem));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].first, 0.5);
}

TEST_F(ResumeTest, WithoutRepairTheFileIsUntouched) {
  Write(RunRecordLine(TestRun()) + "{\"type\":\"measu");
  auto state = LoadResumeState(path_, false);
  ASSERT_TRUE(state.ok());
  EXPECT_GT(state->torn_bytes, 0);
  EXPECT_GT(std::filesystem::file_size(path_), RunRecordLine(TestRun()).size());
}

TEST_F(ResumeTest, MalformedCompleteLineIsAnError) {
  Write(RunRecordLine(TestRun()) + "{\"type\":\"measurement\"}\n");
  auto state = LoadResumeState(path_, true);
  EXPECT_FALSE(state.ok());
}

}  // namespace
}  // namespace kselect
