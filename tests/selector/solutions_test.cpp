// Solution libraries: the file round trip, the identity check the selector applies, bad files,
// and the merge rules.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kselect/hardware.h"
#include "kselect/selector.h"
#include "kselect/solutions.h"
#include "testing_util.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;
using testing_util::LinearGemm;
using testing_util::ModelDir;

class SolutionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() /
           ("kselect_solutions_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  static Solution Make(const GemmProblem& problem, int tile, double speedup) {
    Solution s;
    s.problem = problem;
    CublasLtConfig c;
    c.algo_id = 66;
    c.tile_id = tile;
    s.config = c;
    s.latency_ms = 0.1 / speedup;
    s.reference_latency_ms = 0.1;
    s.speedup = speedup;
    s.tflops = 100;
    s.verification = "max err 1e-3";
    s.run_id = "test";
    return s;
  }

  static SolutionLibrary Library(std::vector<Solution> solutions) {
    SolutionLibrary library;
    library.identity.device_name = "NVIDIA H200";
    library.identity.arch = "sm_90";
    library.identity.sm_count = 132;
    library.identity.cublaslt_version = QueryLibraryVersions().cublaslt_version;
    library.identity.nvrtc_version = QueryLibraryVersions().nvrtc_version;
    library.solutions = std::move(solutions);
    return library;
  }

  fs::path tmp_;
};

TEST_F(SolutionsTest, RoundTripsPlainAndGzip) {
  const SolutionLibrary library = Library(
      {Make(LinearGemm(4096, 1, 4096), 3, 1.12), Make(LinearGemm(1024, 16, 4096), 5, 1.05)});
  for (const char* name : {"lib.json", "lib.json.gz"}) {
    const std::string path = (tmp_ / name).string();
    ASSERT_TRUE(SaveSolutionLibrary(library, path).ok());
    auto loaded = LoadSolutionLibrary(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_EQ(loaded->identity, library.identity);
    ASSERT_EQ(loaded->solutions.size(), 2u);
    EXPECT_EQ(loaded->solutions[1].config, library.solutions[1].config);
    EXPECT_DOUBLE_EQ(loaded->solutions[0].speedup, 1.12);
    EXPECT_EQ(loaded->Find(LinearGemm(1024, 16, 4096)), std::optional<size_t>(1));
    EXPECT_FALSE(loaded->Find(LinearGemm(1024, 32, 4096)));
  }
}

TEST_F(SolutionsTest, RefusesBadFiles) {
  const std::string path = (tmp_ / "bad.json").string();
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "not a JSON object"},
      {R"({"format": "kselect.solutions", "version": 3, "solutions": []})", "version 3"},
      {R"({"format": "kselect.solutions", "version": 2, "solutions": []})", "identity"},
      {R"({"format": "other", "version": 1, "solutions": []})", "format other"},
      {R"({"format": "kselect.solutions", "version": 2, "identity": {"arch": "sm_90",
          "sm_count": 132}, "solutions": []})",
       "identity.device_name: required field is missing"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(path) << text;
    auto loaded = LoadSolutionLibrary(path);
    ASSERT_FALSE(loaded.ok()) << text;
    EXPECT_NE(loaded.status().message().find(expected), std::string::npos)
        << loaded.status().message();
  }
  // Two solutions for one problem: which to run would be arbitrary.
  SolutionLibrary twice = Library({Make(LinearGemm(64, 1, 64), 3, 1.1)});
  ASSERT_TRUE(SaveSolutionLibrary(twice, path).ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  twice.solutions.push_back(Make(LinearGemm(64, 1, 64), 4, 1.2));
  ASSERT_TRUE(SaveSolutionLibrary(twice, path).ok());
  auto loaded = LoadSolutionLibrary(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("a second solution"), std::string::npos);
}

TEST_F(SolutionsTest, IdentityChecksDeviceAndLibraryVersion) {
  const SolutionLibrary library = Library({Make(LinearGemm(4096, 1, 4096), 3, 1.12)});
  HardwareProfile here = QueryLibraryVersions();
  EXPECT_TRUE(CheckSolutionIdentity(library, here, "lib").ok());  // no device: not compared
  here.device_name = "NVIDIA H200";
  here.sm_count = 132;
  EXPECT_TRUE(CheckSolutionIdentity(library, here, "lib").ok());
  here.device_name = "NVIDIA H100 80GB HBM3";
  Status other_device = CheckSolutionIdentity(library, here, "lib");
  EXPECT_EQ(other_device.code(), StatusCode::kSchemaMismatch);
  EXPECT_NE(other_device.message().find("NVIDIA H100"), std::string::npos);
  here.device_name = "NVIDIA H200";
  here.cublaslt_version += 1;
  EXPECT_EQ(CheckSolutionIdentity(library, here, "lib").code(), StatusCode::kSchemaMismatch);
}

TEST_F(SolutionsTest, SelectorRefusesALibraryFromAnotherLibraryVersion) {
  auto probe = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"));
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  const GemmProblem problem = LinearGemm(4096, 1, 4096);
  auto table = (*probe)->Candidates(problem);
  ASSERT_FALSE(table.empty());
  SolutionLibrary library = Library({Make(problem, 3, 1.1)});
  library.solutions[0].config = table.back();
  // The device this host has (compared), or the H200 where there is none (not compared).
  if (auto device = QueryHardwareProfile(0); device.ok()) {
    library.identity.device_name = device->device_name;
    library.identity.sm_count = device->sm_count;
  }
  SelectorOptions options;
  options.solution_library = (tmp_ / "lib.json").string();
  ASSERT_TRUE(SaveSolutionLibrary(library, options.solution_library).ok());
  auto selector = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"), options);
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  auto selection = (*selector)->Select(problem);
  ASSERT_TRUE(selection.ok());
  EXPECT_EQ((*selection)->path, DecisionPath::kSolutionLibrary);
  EXPECT_EQ((*selection)->ranked[0].config, table.back());

  library.identity.cublaslt_version = 100;
  ASSERT_TRUE(SaveSolutionLibrary(library, options.solution_library).ok());
  auto refused = Selector::Open(ModelDir("h200_cublaslt_default_bf16_tn"), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("made with cublaslt_version 100"), std::string::npos)
      << refused.status().message();
}

TEST_F(SolutionsTest, MergeReplacesOnlyWhenFasterOrForced) {
  const GemmProblem a = LinearGemm(4096, 1, 4096), b = LinearGemm(4096, 2, 4096),
                    c = LinearGemm(4096, 4, 4096);
  SolutionLibrary base = Library({Make(a, 3, 1.10), Make(b, 4, 1.20)});
  const SolutionLibrary incoming = Library({Make(a, 7, 1.15), Make(b, 8, 1.05), Make(c, 9, 1.04)});
  auto merged = MergeSolutionLibraries(base, incoming, /*force=*/false);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->added, 1);
  EXPECT_EQ(merged->replaced, 1);
  EXPECT_EQ(merged->kept, 1);
  EXPECT_EQ(std::get<CublasLtConfig>(base.solutions[*base.Find(a)].config).tile_id, 7);
  EXPECT_EQ(std::get<CublasLtConfig>(base.solutions[*base.Find(b)].config).tile_id, 4);
  auto forced = MergeSolutionLibraries(base, incoming, /*force=*/true);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->unchanged, 2);  // a and c are the incoming configs already
  EXPECT_EQ(forced->replaced, 1);
  EXPECT_EQ(std::get<CublasLtConfig>(base.solutions[*base.Find(b)].config).tile_id, 8);

  SolutionLibrary elsewhere = incoming;
  elsewhere.identity.device_name = "NVIDIA H100 80GB HBM3";
  const Status refused = MergeSolutionLibraries(base, elsewhere, false).status();
  EXPECT_EQ(refused.code(), StatusCode::kSchemaMismatch);
  // The message names the field that differs, not two descriptions.
  EXPECT_NE(refused.message().find("made with device_name \"NVIDIA H100 80GB HBM3\", the base "
                                   "library has \"NVIDIA H200\""),
            std::string::npos)
      << refused.message();
  // Which kselect or model tuned them does not matter.
  SolutionLibrary newer = incoming;
  newer.identity.tool_version = "9.9.9";
  newer.identity.model_fingerprint = "0123456789abcdef";
  EXPECT_TRUE(MergeSolutionLibraries(base, newer, false).ok());
}

// Issue 44, defect 12: a version 1 library (no identity) is never merged with one that records a
// device, whichever side it is on: its solutions would be written under that device unchecked.
TEST_F(SolutionsTest, VersionOneSolutionsAreNotStampedWithAnotherLibrarysDevice) {
  const GemmProblem a = LinearGemm(4096, 1, 4096), b = LinearGemm(4096, 2, 4096);
  SolutionLibrary unverified;
  unverified.solutions = {Make(b, 5, 1.3)};
  for (const bool base_is_old : {false, true}) {
    SolutionLibrary base = base_is_old ? unverified : Library({Make(a, 3, 1.1)});
    const SolutionLibrary incoming = base_is_old ? Library({Make(a, 3, 1.1)}) : unverified;
    const SolutionLibrary before = base;
    const Status refused = MergeSolutionLibraries(base, incoming, false).status();
    EXPECT_EQ(refused.code(), StatusCode::kSchemaMismatch);
    EXPECT_NE(refused.message().find(base_is_old ? "the base library records no device"
                                                 : "the incoming library records no device"),
              std::string::npos)
        << refused.message();
    EXPECT_NE(refused.message().find("tuned on NVIDIA H200"), std::string::npos);
    EXPECT_EQ(base.solutions.size(), before.solutions.size());
    EXPECT_EQ(base.identity, before.identity);
  }
  SolutionLibrary old_base = unverified;  // two version 1 libraries merge as they are
  SolutionLibrary old_incoming;
  old_incoming.solutions = {Make(a, 3, 1.1)};
  ASSERT_TRUE(MergeSolutionLibraries(old_base, old_incoming, false).ok());
  EXPECT_TRUE(old_base.identity.device_name.empty());
}

// Issue 44, defect 12: entries no kernel could have run are refused on reading, naming the entry.
TEST_F(SolutionsTest, ImpossibleEntriesAreRefused) {
  const std::string good = (tmp_ / "good.json").string();
  ASSERT_TRUE(SaveSolutionLibrary(Library({Make(LinearGemm(4096, 1, 4096), 3, 1.1)}), good).ok());
  std::ifstream in(good);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const struct {
    const char* from;
    const char* to;
    const char* says;
  } edits[] = {
      {"\"m\": 4096", "\"m\": -4096", "solutions[0].problem: m must be"},
      {"\"algo_id\": 66", "\"algo_id\": -1", "cublaslt algo_id -1 is impossible"},
      {"\"tile_id\": 3", "\"tile_id\": -3", "cublaslt tile_id -3 is impossible"},
  };
  for (const auto& e : edits) {
    std::string edited = text;
    const size_t at = edited.find(e.from);
    ASSERT_NE(at, std::string::npos) << e.from;
    edited.replace(at, std::string(e.from).size(), e.to);
    const std::string path = (tmp_ / "edited.json").string();
    std::ofstream(path, std::ios::trunc) << edited;
    const auto loaded = LoadSolutionLibrary(path);
    ASSERT_FALSE(loaded.ok()) << e.to;
    EXPECT_NE(loaded.status().message().find(e.says), std::string::npos)
        << loaded.status().message();
  }
}

// Issue 44, defect 21: two identities that differ only past the excerpt's length, or in a
// character that prints alike, are told apart in the message.
TEST_F(SolutionsTest, IdentityMismatchShowsTheDifference) {
  const GemmProblem a = LinearGemm(4096, 1, 4096);
  const std::string long_name = "NVIDIA H200 " + std::string(300, 'x');
  for (const auto& [ours, theirs] :
       {std::pair<std::string, std::string>{long_name + "a", long_name + "b"},
        {"NVIDIA H200", "NVIDIA H200 "},
        {"NVIDIA H200", "NVIDIA\tH200"}}) {
    SolutionLibrary base = Library({Make(a, 3, 1.1)});
    base.identity.device_name = ours;
    SolutionLibrary incoming = Library({Make(a, 4, 1.2)});
    incoming.identity.device_name = theirs;
    const Status refused = MergeSolutionLibraries(base, incoming, false).status();
    ASSERT_EQ(refused.code(), StatusCode::kSchemaMismatch);
    const std::string& m = refused.message();
    const size_t made = m.find("made with device_name ");
    const size_t has = m.find(", the base library has ");
    ASSERT_NE(made, std::string::npos) << m;
    ASSERT_NE(has, std::string::npos) << m;
    const std::string shown_theirs = m.substr(made + 22, has - made - 22);
    const size_t end = m.find(": libraries tuned", has);
    const std::string shown_ours = m.substr(has + 23, end - has - 23);
    EXPECT_NE(shown_theirs, shown_ours) << m;
  }
}

// Identities written before the record held cuDNN, tool and model still load, the file's writer
// standing in for the tool; the next save writes the whole record.
TEST_F(SolutionsTest, LoadsIdentitiesWithoutTheNewerKeys) {
  const std::string path = (tmp_ / "old.json").string();
  std::ofstream(path) << R"({"format": "kselect.solutions", "version": 2, "tool_version": "0.0.9",
    "identity": {"device_name": "NVIDIA H200", "device_kind": "nvidia-h200", "arch": "sm_90",
                 "sm_count": 132, "driver_version": 13000, "runtime_version": 13000,
                 "cublaslt_version": 130100, "nvrtc_version": 13000},
    "solutions": []})";
  auto loaded = LoadSolutionLibrary(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->identity.cublaslt_version, 130100);
  EXPECT_EQ(loaded->identity.cudnn_version, 0);
  EXPECT_EQ(loaded->identity.tool_version, "0.0.9");
  ASSERT_TRUE(SaveSolutionLibrary(*loaded, path).ok());
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"cudnn_version\""), std::string::npos);
  EXPECT_NE(text.find("\"model_fingerprint\""), std::string::npos);
  auto again = LoadSolutionLibrary(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->identity, loaded->identity);
}

}  // namespace
}  // namespace kselect
