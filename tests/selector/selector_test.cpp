// The run-time selector on the shipped models, without a GPU: the decision order, the cache (in
// memory, on disk, from many threads), record mode, the solution library, bad input, and
// equivalence with `kselect eval`'s picks on committed data.
#include "kselect/selector.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/config_schema.h"
#include "kselect/dataset.h"
#include "kselect/eval.h"
#include "kselect/hardware.h"
#include "kselect/model.h"
#include "kselect/train.h"
#include "testing_util.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using testing_util::Contains;
using testing_util::LinearGemm;
using testing_util::ModelDir;
using testing_util::ReadAll;

class SelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ =
        fs::temp_directory_path() /
        ("kselect_selector_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  // A copy of a shipped model, to damage.
  std::string CopyModel(std::string_view name) {
    const fs::path to = tmp_ / name;
    fs::copy(ModelDir(name), to, fs::copy_options::recursive);
    return to.string();
  }
  fs::path tmp_;
};

TEST_F(SelectorTest, ModelDecidesThenTheCacheAnswers) {
  SelectorOptions options;
  options.top_k = 3;
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  auto first = (*selector)->Select(problem);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->path, DecisionPath::kModel);
  EXPECT_EQ((*first)->decided_by, DecisionPath::kModel);
  ASSERT_EQ((*first)->ranked.size(), 3u);
  EXPECT_EQ((*first)->candidates_scored, (*selector)->Candidates(problem).size());
  EXPECT_GE((*first)->ranked[0].score, (*first)->ranked[1].score);
  EXPECT_TRUE((*first)->ranked[0].predicted_tflops.has_value());
  EXPECT_TRUE((*first)->ranked[0].predicted_latency_ms.has_value());
  auto second = (*selector)->Select(problem);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->path, DecisionPath::kCache);
  EXPECT_EQ((*second)->decided_by, DecisionPath::kModel);
  EXPECT_EQ(ConfigKey((*second)->ranked[0].config), ConfigKey((*first)->ranked[0].config));
  EXPECT_EQ((*selector)->CachedDecisions(), 1u);
}

TEST_F(SelectorTest, SelectEqualsRankOverTheWholeTable) {
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  for (const GemmProblem& problem : {LinearGemm(4096, 1, 4096), LinearGemm(14336, 2048, 4096)}) {
    auto selected = (*selector)->Select(problem);
    ASSERT_TRUE(selected.ok()) << selected.status().ToString();
    auto ranked = (*selector)->Rank(problem, (*selector)->Candidates(problem));
    ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
    for (size_t i = 0; i < (*selected)->ranked.size(); ++i) {
      EXPECT_EQ(ConfigKey((*selected)->ranked[i].config), ConfigKey(ranked->ranked[i].config));
      EXPECT_EQ((*selected)->ranked[i].score, ranked->ranked[i].score);
    }
  }
}

// The peer ranker needs the heuristic's picks: given none on a host without a GPU, the
// analytical estimate decides and the note says why.
TEST_F(SelectorTest, PeerModelWithoutPicksFallsBackAndSaysWhy) {
  auto selector = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  auto selection = (*selector)->Select(LinearGemm(4096, 16, 4096));
  ASSERT_TRUE(selection.ok()) << selection.status().ToString();
  if ((*selection)->path == DecisionPath::kModel) GTEST_SKIP() << "a GPU answered the heuristic";
  EXPECT_EQ((*selection)->path, DecisionPath::kAnalytical);
  EXPECT_TRUE(Contains((*selection)->note, "heuristic's picks"));
  EXPECT_FALSE((*selection)->ranked.empty());
}

TEST_F(SelectorTest, PeerModelWithPicksUsesThem) {
  // Rank checks nothing: compare it with a selection that does not either (on a GPU host the
  // library may refuse the model's first choice for this shape).
  SelectorOptions unchecked;
  unchecked.check_can_implement = false;
  auto selector = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"), unchecked);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  auto table = (*selector)->Candidates(problem);
  ASSERT_GE(table.size(), 3u);
  const std::vector<PeerPick> picks = {{table[2], 1}, {table[0], 2}};
  auto selection = (*selector)->Select(problem, picks);
  ASSERT_TRUE(selection.ok()) << selection.status().ToString();
  EXPECT_EQ((*selection)->path, DecisionPath::kModel);
  auto ranked = (*selector)->Rank(problem, table, picks);
  ASSERT_TRUE(ranked.ok());
  EXPECT_EQ(ConfigKey((*selection)->ranked[0].config), ConfigKey(ranked->ranked[0].config));
}

// A dtype the table has no configs for: the model stage passes and says why; without a GPU no
// later stage can answer either, so the error lists every stage.
TEST_F(SelectorTest, UnknownGroupPassesTheModelStage) {
  auto selector = Selector::Open(ModelDir("h200_cublaslt_bf16_tn"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  GemmProblem problem = LinearGemm(4096, 16, 4096);
  problem.dtype_a = problem.dtype_b = problem.dtype_c = DataType::kF16;
  auto selection = (*selector)->Select(problem);
  if (selection.ok()) {
    EXPECT_NE((*selection)->path, DecisionPath::kModel);
    EXPECT_TRUE(Contains((*selection)->note, "no configs for gemm a=fp16"));
  } else {
    EXPECT_EQ(selection.status().code(), StatusCode::kCannotImplement);
    EXPECT_TRUE(
        Contains(selection.status().message(), "model: the candidate table has no configs"));
    EXPECT_TRUE(Contains(selection.status().message(), "heuristic:"));
  }
}

// One model per device: the selector opens the one whose feature spec names the hardware it
// selects for, whatever the order given, and with none for that device it says so in every
// selection's note instead of ranking with another device's model.
TEST_F(SelectorTest, PerDeviceModelsOpenTheOneTrainedForTheDevice) {
  const std::string h200 = ModelDir("h200_cublaslt_default_rank");
  const std::string h100 = ModelDir("h100_cublaslt_default_rank");
  auto h200_model = Model::Load(h200);
  auto h100_model = Model::Load(h100);
  ASSERT_TRUE(h200_model.ok() && h100_model.ok());
  const HardwareConstants h200_hw = h200_model->spec().hardware;
  const HardwareConstants h100_hw = h100_model->spec().hardware;
  ASSERT_NE(DescribeHardwareDifference(h200_hw, h100_hw), "");
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  for (const std::vector<std::string>& dirs :
       {std::vector<std::string>{h200, h100}, std::vector<std::string>{h100, h200}}) {
    for (const auto& [hardware, expected] : {std::pair{h200_hw, h200}, std::pair{h100_hw, h100}}) {
      SelectorOptions options;
      options.hardware = hardware;
      options.check_can_implement = false;
      auto selector = Selector::Open(dirs, options);
      ASSERT_TRUE(selector.ok()) << selector.status().ToString();
      EXPECT_EQ((*selector)->model_dir(), expected);
      const auto table = (*selector)->Candidates(problem);
      ASSERT_GE(table.size(), 2u);
      auto selection = (*selector)->Select(problem, std::vector<PeerPick>{{table[1], 1}});
      ASSERT_TRUE(selection.ok()) << selection.status().ToString();
      EXPECT_EQ((*selection)->path, DecisionPath::kModel) << (*selection)->note;
    }
  }
  // The C API's form: one string, ':'-separated.
  SelectorOptions on_h100;
  on_h100.hardware = h100_hw;
  auto joined = Selector::Open(h200 + ":" + h100, on_h100);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ((*joined)->model_dir(), h100);

  // A device neither was trained for: no model ranks, and the note says why.
  SelectorOptions other;
  other.hardware = h100_hw;
  other.hardware->sm_count = 114;  // an H100 PCIe
  auto none = Selector::Open({h200, h100}, other);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  const auto table = (*none)->Candidates(problem);
  ASSERT_FALSE(table.empty());
  auto fallback = (*none)->Select(problem, std::vector<PeerPick>{{table[0], 1}});
  ASSERT_TRUE(fallback.ok()) << fallback.status().ToString();
  EXPECT_NE((*fallback)->path, DecisionPath::kModel);
  EXPECT_TRUE(Contains((*fallback)->note, "none of the 2 models given was trained for this device"))
      << (*fallback)->note;

  // Every listed directory must be a model.
  auto missing = Selector::Open({h200, (tmp_ / "nope").string()}, other);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "nope")) << missing.status().ToString();
}

TEST_F(SelectorTest, ImpossibleProblemIsAnError) {
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok());
  auto selection = (*selector)->Select(LinearGemm(0, 16, 4096));
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SelectorTest, BadModelDirectoriesNameTheFile) {
  auto missing = Selector::Open((tmp_ / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "nope"));

  const std::string no_table = CopyModel("h200_tile_bf16_tn");
  fs::remove(fs::path(no_table) / kCandidateTableFile);
  auto without = Selector::Open(no_table);
  ASSERT_FALSE(without.ok());
  EXPECT_EQ(without.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(without.status().message(), "kselect model candidates"));

  std::ofstream(fs::path(no_table) / kCandidateTableFile) << "{\"format\": \"kselect.cand";
  auto corrupt = Selector::Open(no_table);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_TRUE(Contains(corrupt.status().message(), kCandidateTableFile));

  const std::string truncated = CopyModel("h200_cublaslt_bf16_tn");
  const fs::path trees = fs::path(truncated) / "model_tflops.lgbm.gz";
  const std::string bytes = ReadAll(trees.string());
  std::ofstream(trees, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto broken = Selector::Open(truncated);
  ASSERT_FALSE(broken.ok());
  EXPECT_TRUE(Contains(broken.status().message(), "model_tflops.lgbm.gz"));

  SelectorOptions zero;
  zero.top_k = 0;
  EXPECT_EQ(Selector::Open(ModelDir("h200_tile_bf16_tn"), zero).status().code(),
            StatusCode::kInvalidArgument);
  SelectorOptions negative_timing;
  negative_timing.time_top_k = -1;
  auto refused = Selector::Open(ModelDir("h200_tile_bf16_tn"), negative_timing);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "time_top_k"));
}

// The cache is never written over a device node, a FIFO or the model's own files.
TEST_F(SelectorTest, CacheIsNeverSavedOverAnInput) {
  const std::string model_dir = (tmp_ / "model").string();
  fs::copy(ModelDir("h200_tile_bf16_tn"), model_dir);
  auto selector = Selector::Open(model_dir);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  const std::string spec = model_dir + "/feature_spec.json";
  const std::string before = testing_util::ReadAll(spec);
  const Status over_model = (*selector)->SaveCache(spec);
  EXPECT_FALSE(over_model.ok());
  EXPECT_TRUE(Contains(over_model.message(), "cache path")) << over_model.ToString();
  EXPECT_EQ(testing_util::ReadAll(spec), before);
  const std::string fifo = (tmp_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE((*selector)->SaveCache(fifo).ok());
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_FALSE((*selector)->SaveCache("/dev/null").ok());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// A FIFO where a model file or the record should be is refused, not waited on forever; so is a
// model file past the reading limit once decompressed.
TEST_F(SelectorTest, FifosAndDevicesAreRefusedNotWaitedOn) {
  const std::string model_dir = (tmp_ / "model").string();
  fs::copy(ModelDir("h200_tile_bf16_tn"), model_dir);
  const std::string spec = model_dir + "/feature_spec.json";
  const std::string spec_copy = (tmp_ / "feature_spec.json").string();
  fs::rename(spec, spec_copy);
  ASSERT_EQ(::mkfifo(spec.c_str(), 0600), 0);
  auto opened = Selector::Open(model_dir);
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(Contains(opened.status().message(), "not a regular file"))
      << opened.status().ToString();
  fs::remove(spec);
  fs::rename(spec_copy, spec);
  const std::string fifo = (tmp_ / "record_fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  SelectorOptions options;
  options.record_path = fifo;
  auto recording = Selector::Open(model_dir, options);
  ASSERT_FALSE(recording.ok());
  EXPECT_TRUE(Contains(recording.status().message(), "record_path"))
      << recording.status().ToString();
  EXPECT_TRUE(Contains(ReadMaybeGzipFile("/dev/zero").status().message(), "/dev/zero"));
  auto capped = ReadMaybeGzipFile(model_dir + "/model_tflops.lgbm.gz", 1 << 16);
  ASSERT_FALSE(capped.ok());
  EXPECT_TRUE(Contains(capped.status().message(), "reading limit"));
}

TEST_F(SelectorTest, CacheSurvivesSaveAndLoadOnlyUnderTheSameModel) {
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok());
  const std::vector<GemmProblem> problems = {LinearGemm(4096, 1, 4096), LinearGemm(4096, 16, 4096),
                                             LinearGemm(14336, 2048, 4096)};
  std::vector<std::string> picks;
  for (const auto& p : problems) {
    auto s = (*selector)->Select(p);
    ASSERT_TRUE(s.ok());
    picks.push_back(ConfigKey((*s)->ranked[0].config));
  }
  const std::string path = (tmp_ / "cache.json").string();
  ASSERT_TRUE((*selector)->SaveCache(path).ok());

  auto reopened = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(reopened.ok());
  ASSERT_TRUE((*reopened)->LoadCache(path).ok());
  EXPECT_EQ((*reopened)->CachedDecisions(), problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    auto s = (*reopened)->Select(problems[i]);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->path, DecisionPath::kCache);
    EXPECT_EQ(ConfigKey((*s)->ranked[0].config), picks[i]);
  }

  // A cache saved before its identity was the provenance record (no device kind, runtime, cuDNN,
  // NVRTC or tool in it) still loads; one scored with another SM clock is refused naming it.
  {
    nlohmann::json old = nlohmann::json::parse(ReadAll(path));
    for (const char* key :
         {"device_kind", "runtime_version", "cudnn_version", "nvrtc_version", "tool_version"}) {
      ASSERT_EQ(old["identity"].erase(key), 1u) << key;
    }
    const std::string old_path = (tmp_ / "old_cache.json").string();
    std::ofstream(old_path) << old.dump(1);
    auto opened = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(opened.ok());
    const Status loaded = (*opened)->LoadCache(old_path);
    EXPECT_TRUE(loaded.ok()) << loaded.ToString();
    EXPECT_EQ((*opened)->CachedDecisions(), problems.size());

    old["identity"]["sm_clock_mhz"] = 1;
    std::ofstream(old_path) << old.dump(1);
    auto other_clock = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(other_clock.ok());
    const Status refused = (*other_clock)->LoadCache(old_path);
    EXPECT_EQ(refused.code(), StatusCode::kSchemaMismatch);
    EXPECT_TRUE(Contains(refused.message(), "made with sm_clock_mhz 1, this host has"))
        << refused.message();
  }

  // Another model (the same trees, another candidate table file) refuses the file.
  const std::string other = CopyModel("h200_tile_bf16_tn");
  auto table = LoadCandidateTable(other);
  ASSERT_TRUE(table.ok());
  table->tool_version = "another build";
  ASSERT_TRUE(WriteCandidateTable(*table, other).ok());
  auto changed = Selector::Open(other);
  ASSERT_TRUE(changed.ok());
  const Status refused = (*changed)->LoadCache(path);
  EXPECT_EQ(refused.code(), StatusCode::kSchemaMismatch);
  EXPECT_TRUE(Contains(refused.message(), "model_fingerprint"));
  EXPECT_EQ((*changed)->CachedDecisions(), 0u);

  // A damaged file is refused whole: nothing of it is loaded.
  std::string text = ReadAll(path);
  text.replace(text.rfind("\"ranked\""), 8, "\"rankeX\"");
  std::ofstream((tmp_ / "bad.json").string()) << text;
  auto fresh = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE((*fresh)->LoadCache((tmp_ / "bad.json").string()).ok());
  EXPECT_EQ((*fresh)->CachedDecisions(), 0u);
}

TEST_F(SelectorTest, RecordModeWritesEachProblemOnce) {
  SelectorOptions options;
  options.record_path = (tmp_ / "asked.jsonl").string();
  {
    auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
    ASSERT_TRUE(selector.ok());
    for (int repeat = 0; repeat < 3; ++repeat) {
      ASSERT_TRUE((*selector)->Select(LinearGemm(4096, 16, 4096)).ok());
      ASSERT_TRUE((*selector)->Select(LinearGemm(4096, 32, 4096)).ok());
    }
  }
  {  // a second run appends only what is new
    auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
    ASSERT_TRUE(selector.ok());
    ASSERT_TRUE((*selector)->Select(LinearGemm(4096, 16, 4096)).ok());
    ASSERT_TRUE((*selector)->Select(LinearGemm(8192, 64, 4096)).ok());
  }
  std::ifstream in(options.record_path);
  std::set<std::string> seen;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto row = nlohmann::json::parse(line);
    EXPECT_EQ(row["format"], "kselect.problem_record");
    auto problem = json_codec::ProblemFromJson(row["problem"], "record");
    ASSERT_TRUE(problem.ok()) << problem.status().ToString();
    seen.insert(ProblemToString(*problem));
  }
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(seen.size(), 3u);
}

// Issue 44, defect 4: a record that cannot be written (here a file-size limit cuts the second
// one short) does not fail the selection, is kept and retried, and the caller can see why.
TEST_F(SelectorTest, RecordWriteErrorsAreKeptRetriedAndReported) {
  SelectorOptions options;
  options.record_path = (tmp_ / "asked.jsonl").string();
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  ASSERT_TRUE((*selector)->Select(LinearGemm(4096, 16, 4096)).ok());
  EXPECT_TRUE((*selector)->RecordStatus().ok());
  const auto written = static_cast<rlim_t>(fs::file_size(options.record_path));

  rlimit unlimited{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &unlimited), 0);
  rlimit limited = unlimited;
  limited.rlim_cur = written + 10;  // 10 more bytes: the next line is cut short, then nothing
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  const bool second = (*selector)->Select(LinearGemm(4096, 32, 4096)).ok();
  const bool third = (*selector)->Select(LinearGemm(4096, 64, 4096)).ok();
  const Status while_full = (*selector)->FlushRecord();
  setrlimit(RLIMIT_FSIZE, &unlimited);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_TRUE(second);
  EXPECT_TRUE(third);
  EXPECT_EQ(while_full.code(), StatusCode::kIoError);
  EXPECT_TRUE(Contains(while_full.message(), options.record_path)) << while_full.message();
  EXPECT_TRUE(Contains(while_full.message(), "2 kept in memory")) << while_full.message();
  EXPECT_EQ((*selector)->RecordStatus().code(), StatusCode::kIoError);

  // Room again: the retry completes the cut line and writes the next; every line reads.
  const Status flushed = (*selector)->FlushRecord();
  EXPECT_TRUE(flushed.ok()) << flushed.ToString();
  EXPECT_TRUE((*selector)->RecordStatus().ok());
  std::ifstream in(options.record_path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    const auto row = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(row.is_object()) << line;
    EXPECT_TRUE(json_codec::ProblemFromJson(row["problem"], "record").ok());
  }
  EXPECT_EQ(lines, 3);
}

// Issue 44, defect 3: a tile model asked about a layout its table lacks (the CLI's default,
// rcr) on a host without a GPU answers at once, saying why each stage passed, instead of
// NVRTC-compiling the whole catalogue for a decision nothing here could check.
TEST_F(SelectorTest, TileModelWithoutTheLayoutAnswersAtOnceWithoutAGpu) {
  if (QueryHardwareProfile(0).ok()) GTEST_SKIP() << "a GPU is present: enumeration may run";
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  GemmProblem problem = LinearGemm(4096, 16, 4096);
  problem.layout = *ParseGemmLayout("rcr");
  const auto start = std::chrono::steady_clock::now();
  auto selection = (*selector)->Select(problem);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  ASSERT_FALSE(selection.ok());
  EXPECT_EQ(selection.status().code(), StatusCode::kCannotImplement);
  EXPECT_TRUE(Contains(selection.status().message(), "no configs for gemm a=bf16"))
      << selection.status().message();
  EXPECT_TRUE(Contains(selection.status().message(), "layout=rcr"));
  EXPECT_TRUE(Contains(selection.status().message(), "first_implementable: no GPU on this host"))
      << selection.status().message();
}

// Issue 44, defect 16: a candidate table holding a config no kernel can have (a 0x0x0 tile) is
// refused on opening, naming the file and the field, instead of being ranked.
TEST_F(SelectorTest, CandidateTablesWithImpossibleConfigsAreRefused) {
  const std::string dir = CopyModel("h200_tile_bf16_tn");
  auto table = LoadCandidateTable(dir);
  ASSERT_TRUE(table.ok());
  auto& configs = table->groups.begin()->second;
  TileConfig& tile = std::get<TileConfig>(configs[0]);
  tile.tile_m = tile.tile_n = tile.tile_k = 0;
  ASSERT_TRUE(WriteCandidateTable(*table, dir).ok());
  auto selector = Selector::Open(dir);
  ASSERT_FALSE(selector.ok());
  EXPECT_EQ(selector.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(Contains(selector.status().message(), "candidates.json.gz"))
      << selector.status().message();
  EXPECT_TRUE(Contains(selector.status().message(), "tile tile_m 0 is impossible"))
      << selector.status().message();

  // The same check reads every provider's configs: negative sizes, engine -1.
  const struct {
    const char* json;
    const char* says;
  } impossible[] = {
      {R"({"provider": "cudnn", "engine_id": -1})", "cudnn engine_id -1 is impossible"},
      {R"({"provider": "cublaslt", "algo_id": 6, "tile_m": -64})",
       "cublaslt tile_m -64 is impossible"},
      {R"({"provider": "tile", "tile": [128, -128, 32]})", "tile tile_n -128 is impossible"},
      {R"({"provider": "tile", "warps": [2, 0, 1]})", "tile warps_n 0 is impossible"},
  };
  for (const auto& c : impossible) {
    auto config = json_codec::KernelConfigFromJson(nlohmann::json::parse(c.json), "config");
    ASSERT_FALSE(config.ok()) << c.json;
    EXPECT_TRUE(Contains(config.status().message(), c.says)) << config.status().message();
  }
}

// Issue 44, defect 9: a loaded cache holds at most top_k configs per decision (a C caller sizes
// its buffers by top_k), and each config is one this selector could have returned.
TEST_F(SelectorTest, LoadedCacheKeepsTopKAndTheCandidateTable) {
  const std::string path = (tmp_ / "cache.json").string();
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  {
    SelectorOptions wide;
    wide.top_k = 8;
    auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), wide);
    ASSERT_TRUE(selector.ok());
    auto s = (*selector)->Select(problem);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ((*s)->ranked.size(), 8u);
    ASSERT_TRUE((*selector)->SaveCache(path).ok());
  }
  SelectorOptions narrow;
  narrow.top_k = 2;
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), narrow);
  ASSERT_TRUE(selector.ok());
  const Status loaded = (*selector)->LoadCache(path);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  auto cached = (*selector)->Select(problem);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ((*cached)->path, DecisionPath::kCache);
  EXPECT_EQ((*cached)->ranked.size(), 2u);

  // A config the table lacks in a model's decision, and another provider's config: refused,
  // naming the entry, and nothing of the file is loaded.
  nlohmann::json saved = nlohmann::json::parse(ReadAll(path));
  auto table = (*selector)->Candidates(problem);
  std::set<std::string> keys;
  for (const KernelConfig& c : table) keys.insert(ConfigKey(c));
  TileConfig outside;
  outside.tile_m = 16;
  outside.tile_n = 16;
  outside.tile_k = 16;
  outside.warps_m = outside.warps_n = 1;
  ASSERT_FALSE(keys.contains(ConfigKey(outside)));
  const struct {
    nlohmann::json config;
    StatusCode code;
    const char* says;
  } bad[] = {
      {json_codec::KernelConfigToJson(outside), StatusCode::kSchemaMismatch,
       "is not among the candidate table's configs"},
      {json_codec::KernelConfigToJson(CublasLtConfig{}), StatusCode::kSchemaMismatch,
       "a cublaslt config for a tile model"},
  };
  for (const auto& b : bad) {
    nlohmann::json edited = saved;
    edited["entries"][0]["ranked"][1]["config"] = b.config;
    const std::string edited_path = (tmp_ / "edited.json").string();
    std::ofstream(edited_path, std::ios::trunc) << edited.dump(1);
    auto fresh = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(fresh.ok());
    const Status refused = (*fresh)->LoadCache(edited_path);
    EXPECT_EQ(refused.code(), b.code) << refused.ToString();
    EXPECT_TRUE(Contains(refused.message(), b.says)) << refused.message();
    EXPECT_TRUE(Contains(refused.message(), "entries[0].ranked[1]")) << refused.message();
    EXPECT_EQ((*fresh)->CachedDecisions(), 0u);
  }
}

// A decision's first-use order travels with it (dispatch then runs it untimed; the GPU test
// DispatchGpuTest.DecisionFileCarriesTheFirstUseOrderToAFreshSelector): it survives load and
// save, loses the configs this selector could not run, and a malformed one refuses the file.
TEST_F(SelectorTest, FirstUseOrdersRoundTripThroughTheCacheFile) {
  const std::string path = (tmp_ / "cache.json").string();
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  {
    auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(selector.ok());
    ASSERT_TRUE((*selector)->Select(problem).ok());
    ASSERT_TRUE((*selector)->SaveCache(path).ok());
  }
  nlohmann::json saved = nlohmann::json::parse(ReadAll(path));
  ASSERT_FALSE(saved["entries"][0].contains("first_use"));  // nothing was dispatched
  ASSERT_GE(saved["entries"][0]["ranked"].size(), 2u);
  std::vector<std::string> keys;
  for (int r : {1, 0}) {
    auto config =
        json_codec::KernelConfigFromJson(saved["entries"][0]["ranked"][r]["config"], "ranked");
    ASSERT_TRUE(config.ok());
    keys.push_back(ConfigKey(*config));
  }
  auto write = [&](const nlohmann::json& first_use) {
    nlohmann::json edited = saved;
    edited["entries"][0]["first_use"] = first_use;
    const std::string edited_path = (tmp_ / "edited.json").string();
    std::ofstream(edited_path, std::ios::trunc) << edited.dump(1);
    return edited_path;
  };
  {
    auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(selector.ok());
    const Status loaded =
        (*selector)->LoadCache(write({{"order", {keys[0], "no such config", keys[1]}},
                                      {"vendor_timed", true},
                                      {"vendor_kept", false}}));
    ASSERT_TRUE(loaded.ok()) << loaded.ToString();
    const std::string again = (tmp_ / "again.json").string();
    ASSERT_TRUE((*selector)->SaveCache(again).ok());
    const nlohmann::json resaved = nlohmann::json::parse(ReadAll(again));
    ASSERT_TRUE(resaved["entries"][0].contains("first_use")) << resaved.dump(1);
    EXPECT_EQ(resaved["entries"][0]["first_use"]["order"], nlohmann::json(keys));
    EXPECT_EQ(resaved["entries"][0]["first_use"]["vendor_timed"], true);
    EXPECT_FALSE(resaved["entries"][0]["first_use"].contains("vendor_pick"));
    // Loaded orders were timed by another process: none counts as timed here.
    EXPECT_EQ((*selector)->first_use_guard_report().timed_problems, 0);
  }
  const struct {
    nlohmann::json first_use;
    StatusCode code;
    const char* says;
  } bad[] = {
      {{{"order", nlohmann::json::array()}, {"vendor_timed", false}, {"vendor_kept", false}},
       StatusCode::kParseError,
       "first_use.order: not a non-empty array"},
      {{{"order", {keys[0], 7}}, {"vendor_timed", false}, {"vendor_kept", false}},
       StatusCode::kParseError,
       "first_use.order[1]: not a config key"},
      {{{"order", {keys[0]}}, {"vendor_kept", false}}, StatusCode::kParseError, "vendor_timed"},
      {{{"order", {keys[0]}},
        {"vendor_timed", true},
        {"vendor_kept", true},
        {"vendor_pick", json_codec::KernelConfigToJson(CublasLtConfig{})}},
       StatusCode::kSchemaMismatch,
       "first_use.vendor_pick: a cublaslt config for a tile model"},
  };
  for (const auto& b : bad) {
    auto fresh = Selector::Open(ModelDir("h200_tile_bf16_tn"));
    ASSERT_TRUE(fresh.ok());
    const Status refused = (*fresh)->LoadCache(write(b.first_use));
    EXPECT_EQ(refused.code(), b.code) << refused.ToString();
    EXPECT_TRUE(Contains(refused.message(), b.says)) << refused.message();
    EXPECT_EQ((*fresh)->CachedDecisions(), 0u);
  }
}

TEST_F(SelectorTest, SolutionLibraryComesFirst) {
  auto probe = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(probe.ok());
  const GemmProblem problem = LinearGemm(4096, 16, 4096);
  auto table = (*probe)->Candidates(problem);
  const KernelConfig tuned = table.back();
  const nlohmann::json library = {{"format", "kselect.solutions"},
                                  {"version", 1},
                                  {"solutions",
                                   {{{"problem", json_codec::ProblemToJson(problem)},
                                     {"config", json_codec::KernelConfigToJson(tuned)},
                                     {"tflops", 12.5}}}}};
  SelectorOptions options;
  options.solution_library = (tmp_ / "solutions.json").string();
  std::ofstream(options.solution_library) << library.dump();
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  auto selection = (*selector)->Select(problem);
  ASSERT_TRUE(selection.ok());
  EXPECT_EQ((*selection)->path, DecisionPath::kSolutionLibrary);
  EXPECT_EQ(ConfigKey((*selection)->ranked[0].config), ConfigKey(tuned));
  EXPECT_GT((*selection)->ranked.size(), 1u);  // the model's ranking follows
  auto other = (*selector)->Select(LinearGemm(4096, 32, 4096));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->path, DecisionPath::kModel);

  std::ofstream(options.solution_library) << "{\"format\": \"kselect.solutions\", \"version\": 2}";
  auto refused = Selector::Open(ModelDir("h200_tile_bf16_tn"), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "solutions.json"));
}

// Eight threads asking for the same problems at once get one decision per problem.
TEST_F(SelectorTest, ManyThreadsShareOneDecisionPerProblem) {
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok());
  std::vector<GemmProblem> problems;
  for (int64_t n : {1, 2, 4, 8, 16, 32, 64, 128}) problems.push_back(LinearGemm(4096, n, 4096));
  std::vector<std::vector<std::string>> picks(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (const GemmProblem& p : problems) {
          auto s = (*selector)->Select(p);
          picks[t].push_back(s.ok() ? ConfigKey((*s)->ranked[0].config) : "error");
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < 8; ++t) EXPECT_EQ(picks[t], picks[0]);
  EXPECT_EQ((*selector)->CachedDecisions(), problems.size());
}

// The selector's ranking of a problem's measured candidates is `kselect eval`'s: the same pick
// on every problem of the committed data (the tile model on its data).
TEST_F(SelectorTest, RankAgreesWithEvalOnCommittedData) {
#ifndef KSELECT_WITH_ARROW
  GTEST_SKIP() << "needs the Parquet reader";
#else
  const std::string data_path =
      (fs::path(KSELECT_SOURCE_DIR) / "data/h200/tile_bf16_tn_wide.parquet").string();
  auto dataset = ReadDataset(data_path);
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  auto model = Model::Load(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(model.ok());
  auto data = BuildCandidateSet(*dataset, model->spec().provider);
  ASSERT_TRUE(data.ok());
  auto scores = PredictCandidateSet(*model, *data, Target::kTflops);
  ASSERT_TRUE(scores.ok());
  auto selector = Selector::Open(ModelDir("h200_tile_bf16_tn"));
  ASSERT_TRUE(selector.ok());
  size_t same = 0;
  for (size_t p = 0; p < data->problems.size(); ++p) {
    std::vector<KernelConfig> configs;
    for (const Candidate& c : data->problems[p].candidates) configs.push_back(c.config);
    auto ranked = (*selector)->Rank(data->problems[p].problem, configs);
    ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
    const ProblemOutcome outcome = EvaluateProblem(data->problems[p], (*scores)[p]);
    same += ConfigKey(ranked->ranked[0].config) == outcome.selected_config;
  }
  EXPECT_EQ(same, data->problems.size());
#endif
}

}  // namespace
}  // namespace kselect

namespace kselect {
namespace {

// ResNet-50's stage-2 3x3 convolution at batch 8, in `direction`.
ConvProblem ResNetConv(ConvDirection direction) {
  ConvProblem p;
  p.n = 8;
  p.c = p.k = 64;
  p.hi = p.wi = 56;
  p.y = p.x = 3;
  p.pad_h = p.pad_w = 1;
  p.direction = direction;
  return p;
}

TEST(ConvSelectorTest, ShippedConvModelsDecideTheirDirection) {
  for (const char* name :
       {"h200_cudnn_conv_fwd", "h200_cudnn_conv_bwd_data", "h200_cudnn_conv_bwd_weight"}) {
    SCOPED_TRACE(name);
    auto selector = Selector::Open(ModelDir(name));
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    const auto& direction = (*selector)->model().spec().conv_direction;
    ASSERT_TRUE(direction.has_value());
    EXPECT_TRUE((*selector)->model().UsesPeerRanks());
    const ConvProblem problem = ResNetConv(*direction);
    EXPECT_FALSE((*selector)->Candidates(problem).empty());
    auto selection = (*selector)->Select(problem);
    ASSERT_TRUE(selection.ok()) << selection.status().ToString();
    EXPECT_EQ((*selection)->path, DecisionPath::kModel);
    EXPECT_FALSE((*selection)->ranked.empty());
    for (const RankedConfig& r : (*selection)->ranked)
      EXPECT_EQ(ProviderOf(r.config), Provider::kCudnn);
    // Without a GPU the heuristics cannot be asked: the model ranks without picks and says so.
    if (!(*selection)->can_implement_checked) {
      EXPECT_TRUE(Contains((*selection)->note, "ranked without them")) << (*selection)->note;
    }
    // Picks given by the caller are used: the same as Rank over the table and the picks.
    SelectorOptions unchecked;
    unchecked.check_can_implement = false;
    auto plain = Selector::Open(ModelDir(name), unchecked);
    ASSERT_TRUE(plain.ok());
    const auto table = (*plain)->Candidates(problem);
    ASSERT_GE(table.size(), 3u);
    const std::vector<PeerPick> picks = {
        {table[1], 1}, {table[2], 2}, {table[2], 1, PeerHeuristic::kSecond}};
    auto with_picks = (*plain)->Select(problem, picks);
    ASSERT_TRUE(with_picks.ok()) << with_picks.status().ToString();
    EXPECT_EQ((*with_picks)->path, DecisionPath::kModel);
    EXPECT_TRUE((*with_picks)->note.empty()) << (*with_picks)->note;
    auto ranked = (*plain)->Rank(problem, table, picks);
    ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
    EXPECT_EQ(ConfigKey((*with_picks)->ranked[0].config), ConfigKey(ranked->ranked[0].config));

    // Another direction, a GEMM and an impossible convolution are refused with reasons.
    ConvProblem other = problem;
    other.direction = *direction == ConvDirection::kForward ? ConvDirection::kBackwardData
                                                            : ConvDirection::kForward;
    auto wrong = (*plain)->Rank(other, table, picks);
    EXPECT_FALSE(wrong.ok());
    ConvProblem impossible = problem;
    impossible.g = 3;  // divides neither C = 64 nor K = 64
    auto bad = (*selector)->Select(impossible);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  }
}

// R(2+1)D's temporal 3x1x1 convolution with 45 input channels: cuDNN's mode A lists no engine
// for it on an H200, yet engines build and run it (the validation data measured 7). The model
// still decides, from mode B's list on a GPU, without picks elsewhere.
TEST(ConvSelectorTest, ModelDecidesWhereModeAListsNothing) {
  auto selector = Selector::Open(ModelDir("h200_cudnn_conv_fwd"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  ConvProblem p;
  p.n = 8;
  p.c = 45;
  p.k = 64;
  p.di = 16;
  p.hi = p.wi = 56;
  p.z = 3;
  p.pad_d = 1;
  p.direction = ConvDirection::kForward;
  auto selection = (*selector)->Select(p);
  ASSERT_TRUE(selection.ok()) << selection.status().ToString();
  EXPECT_EQ((*selection)->decided_by, DecisionPath::kModel) << (*selection)->note;
  ASSERT_FALSE((*selection)->ranked.empty());
  EXPECT_NE(ConfigFieldValue((*selection)->ranked[0].config, "engine_id").value_or(0), 0)
      << "engine 0 is what the first-implementable fallback took";
}

TEST(ConvSelectorTest, ConvDispatchRefusesNullTensors) {
  auto selector = Selector::Open(ModelDir("h200_cudnn_conv_fwd"));
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  int tensor = 0;
  auto info = Conv(**selector, ResNetConv(ConvDirection::kForward), &tensor, nullptr, &tensor,
                   nullptr, 0, nullptr);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(info.status().message(), "x, w and y")) << info.status().ToString();
}

}  // namespace
}  // namespace kselect
