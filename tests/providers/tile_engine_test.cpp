// CPU-side tests of the tile engine: every `tiny` config compiles with NVRTC (no GPU), the cubin
// cache hits and misses as it should, named validity rules reject bad configs, the committed
// catalogue snapshots match the rule sets, and the SASS holds the instructions we meant.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.h"
#include "providers/tile/tile_engine.h"

namespace kselect::tile {
namespace {

namespace fs = std::filesystem;

const std::string kRulesDir = std::string(KSELECT_SOURCE_DIR) + "/rules/tile";

// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("kselect_tile_test_" + std::to_string(::getpid()) + "_" + std::to_string(rand()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TileKernelSpec DefaultSpec() {
  TileKernelSpec spec;
  spec.config.tile_m = 64;
  spec.config.tile_n = 64;
  spec.config.tile_k = 32;
  return spec;
}

TEST(TileRulesTest, RuleNamesAreUniqueAndDocumented) {
  std::set<std::string> names;
  for (const ValidityRule& rule : ValidityRules()) {
    EXPECT_TRUE(names.insert(rule.name).second) << "duplicate rule " << rule.name;
    EXPECT_GT(std::string(rule.description).size(), 10u) << rule.name;
  }
  EXPECT_TRUE(CheckValid(DefaultSpec()).ok()) << CheckValid(DefaultSpec()).ToString();
}

// Each bad config is rejected by the rule that names its fault.
TEST(TileRulesTest, InvalidConfigsAreRejectedByNamedRules) {
  struct Case {
    const char* rule;
    void (*edit)(TileKernelSpec&);
  };
  const Case cases[] = {
      {"operand_dtypes", [](TileKernelSpec& s) { s.input = DataType::kF32; }},
      {"ws_tile_shape",
       [](TileKernelSpec& s) { s.config.pipeline = TilePipeline::kWarpSpecialized; }},
      {"ws_instr",
       [](TileKernelSpec& s) {
         s.config.pipeline = TilePipeline::kWarpSpecialized;
         s.config.tile_m = 128, s.config.tile_n = 128, s.config.tile_k = 64;
         s.config.warps_m = 2, s.config.warps_n = 1;
       }},
      {"ws_mn_major_chunks",
       [](TileKernelSpec& s) {
         s.config.pipeline = TilePipeline::kWarpSpecialized;
         s.config.tile_m = 128, s.config.tile_n = 96, s.config.tile_k = 64;
         s.config.warps_m = 2, s.config.warps_n = 1;
         s.config.instr_m = 64, s.config.instr_n = 96, s.config.instr_k = 16;
         s.layout.b = MatrixOrder::kRowMajor;
       }},
      {"ws_alignment",
       [](TileKernelSpec& s) {
         s.config.pipeline = TilePipeline::kWarpSpecialized;
         s.config.tile_m = 128, s.config.tile_n = 128, s.config.tile_k = 64;
         s.config.warps_m = 2, s.config.warps_n = 1;
         s.config.instr_m = 64, s.config.instr_n = 128, s.config.instr_k = 16;
         s.align_b = 4;
       }},
      {"scheduler_data_parallel",
       [](TileKernelSpec& s) { s.config.scheduler = TileScheduler::kPersistent; }},
      {"cluster_1x1", [](TileKernelSpec& s) { s.config.cluster_m = 2; }},
      {"epilogue_direct",
       [](TileKernelSpec& s) { s.config.epilogue = TileEpilogue::kSharedStaged; }},
      {"split_k_range", [](TileKernelSpec& s) { s.config.split_k = 0; }},
      {"swizzle_range", [](TileKernelSpec& s) { s.config.swizzle = 17; }},
      {"alignment_values", [](TileKernelSpec& s) { s.align_a = 3; }},
      {"warps_k_one", [](TileKernelSpec& s) { s.config.warps_k = 2; }},
      {"mma_instr_m16n8k16", [](TileKernelSpec& s) { s.config.instr_k = 8; }},
      {"warp_tile_m_multiple_of_16", [](TileKernelSpec& s) { s.config.tile_m = 48; }},
      {"warp_tile_n_multiple_of_16", [](TileKernelSpec& s) { s.config.tile_n = 16; }},
      {"tile_k_multiple_of_16", [](TileKernelSpec& s) { s.config.tile_k = 24; }},
      {"threads_per_block",
       [](TileKernelSpec& s) {
         s.config.tile_m = s.config.tile_n = 256;
         s.config.warps_m = s.config.warps_n = 8;
       }},
      {"stages_range", [](TileKernelSpec& s) { s.config.stages = 1; }},
      {"shared_memory",
       [](TileKernelSpec& s) {
         s.config.tile_m = s.config.tile_n = 256;
         s.config.tile_k = 64;
         s.config.warps_m = s.config.warps_n = 4;
         s.config.stages = 4;
       }},
      {"accumulator_registers",
       [](TileKernelSpec& s) {
         s.config.tile_m = s.config.tile_n = 256;
         s.config.warps_m = s.config.warps_n = 2;
       }},
      {"small_m_shape",
       [](TileKernelSpec& s) {
         s.config.pipeline = TilePipeline::kSmallM;
         s.config.tile_m = 32;
       }},
  };
  for (const Case& c : cases) {
    TileKernelSpec spec = DefaultSpec();
    c.edit(spec);
    const Status status = CheckValid(spec);
    EXPECT_FALSE(status.ok()) << c.rule;
    EXPECT_NE(status.message().find(std::string("validity rule ") + c.rule + ":"),
              std::string::npos)
        << "expected rule " << c.rule << ", got: " << status.ToString();
    // Compile refuses it too, before NVRTC runs.
    CompilerOptions options;
    options.cache_dir.clear();
    EXPECT_FALSE(TileCompiler(options).Compile(spec).ok()) << c.rule;
  }
}

TEST(TileSpecTest, AlignmentsFollowTheProblem) {
  GemmProblem p;
  p.m = 127, p.n = 256, p.k = 263;  // layout rcr: A k-contiguous, B k-contiguous
  StatusOr<TileKernelSpec> spec = SpecForProblem(TileConfig{}, p);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->align_a, 1);
  EXPECT_EQ(spec->align_b, 1);
  p.k = 4100;
  EXPECT_EQ(SpecForProblem(TileConfig{}, p)->align_a, 4);
  p.layout.a = MatrixOrder::kColMajor;  // A m-contiguous: m = 127
  EXPECT_EQ(SpecForProblem(TileConfig{}, p)->align_a, 1);
  p.dtype_b = DataType::kF16;
  EXPECT_EQ(SpecForProblem(TileConfig{}, p).status().code(), StatusCode::kCannotImplement);
}

TEST(TileSpecTest, CanImplementChecksMasksAndLayouts) {
  GemmProblem p;
  p.m = 100, p.n = 128, p.k = 64;
  TileConfig config;
  config.tile_m = 64, config.tile_n = 64;
  config.mask_m = false;
  StatusOr<TileKernelSpec> spec = SpecForProblem(config, p);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(CanImplement(*spec, p).code(), StatusCode::kCannotImplement);  // 100 % 64 != 0
  p.m = 128;
  EXPECT_TRUE(CanImplement(*spec, p).ok());
  GemmProblem other = p;
  other.layout.b = MatrixOrder::kRowMajor;
  EXPECT_EQ(CanImplement(*spec, other).code(), StatusCode::kCannotImplement);
  EXPECT_EQ(WorkspaceBytes(*spec, p), 0u);
  spec->config.split_k = 4;
  EXPECT_EQ(WorkspaceBytes(*spec, p), 4u * 128 * 128 * sizeof(float));
}

// The committed snapshot rules/tile/<name>.catalogue.txt is what `kselect tile list` prints.
TEST(TileCatalogueTest, SnapshotsMatchRuleSets) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kRulesDir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    StatusOr<TileRuleSet> set = LoadRuleSet(name, kRulesDir);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    std::string listed;
    for (const TileConfig& c : set->configs) listed += ConfigKey(c) + "\n";
    StatusOr<std::string> snapshot = text::ReadFile(kRulesDir + "/" + name + ".catalogue.txt");
    ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    EXPECT_EQ(listed, *snapshot) << "catalogue of rule set '" << name
                                 << "' drifted from its snapshot; if intended, run: kselect tile "
                                    "list --rules "
                                 << name << " > rules/tile/" << name << ".catalogue.txt";
    ++checked;
  }
  EXPECT_GE(checked, 4);  // tiny, tests, default, full
}

TEST(TileCatalogueTest, RuleSetErrorsNameThePath) {
  TempDir dir;
  const std::string path = (dir.path / "bad.json").string();
  ASSERT_TRUE(text::WriteFileAtomically(
                  path, R"({"format_version": 1, "variants": [{"input": "bf16", "output": "bf16",
                  "layout": "rcr"}], "groups": [{"pipeline": "multistage", "tile": [[64, 64, 32]],
                  "stagez": [3]}]})")
                  .ok());
  StatusOr<TileRuleSet> set = LoadRuleSet(path, "");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kParseError);
  EXPECT_NE(set.status().message().find("groups[0].stagez: unknown key"), std::string::npos)
      << set.status().ToString();
  EXPECT_EQ(LoadRuleSet("no_such_set", kRulesDir).status().code(), StatusCode::kNotFound);
}

TEST(TileCompilerTest, CacheMissThenHit) {
  TempDir dir;
  CompilerOptions options;
  options.cache_dir = (dir.path / "cache").string();
  const TileCompiler compiler(options);
  const TileKernelSpec spec = DefaultSpec();
  StatusOr<TileBinary> first = compiler.Compile(spec);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  EXPECT_GT(first->compile_seconds, 0.0);
  EXPECT_EQ(first->cache_key.size(), 64u);
  EXPECT_TRUE(fs::is_regular_file(fs::path(options.cache_dir) / (first->cache_key + ".cubin")));

  StatusOr<TileBinary> second = compiler.Compile(spec);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->cubin, first->cubin);
  EXPECT_EQ(second->cache_key, first->cache_key);

  // Another spec, or other NVRTC options, is another key.
  TileKernelSpec other = spec;
  other.config.stages = 4;
  StatusOr<TileBinary> third = compiler.Compile(other);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
  EXPECT_NE(third->cache_key, first->cache_key);
  CompilerOptions with_lineinfo = options;
  with_lineinfo.extra_options = {"-lineinfo"};
  StatusOr<TileBinary> fourth = TileCompiler(with_lineinfo).Compile(spec);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(fourth->from_cache);
  EXPECT_NE(fourth->cache_key, first->cache_key);

  // An empty (broken) entry is rebuilt, not served.
  ASSERT_TRUE(text::WriteFileAtomically(
                  (fs::path(options.cache_dir) / (first->cache_key + ".cubin")).string(), "")
                  .ok());
  StatusOr<TileBinary> rebuilt = compiler.Compile(spec);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_FALSE(rebuilt->from_cache);
  EXPECT_EQ(rebuilt->cubin, first->cubin);
}

// Finds cuobjdump: $KSELECT_CUOBJDUMP, the set-up's pinned wheel (found at configure time), the
// toolkit's bin, or PATH. Empty when absent.
std::string FindCuobjdump() {
  if (const char* p = std::getenv("KSELECT_CUOBJDUMP"); p != nullptr && fs::exists(p)) return p;
#ifdef KSELECT_CUOBJDUMP_PATH
  if (fs::exists(KSELECT_CUOBJDUMP_PATH)) return KSELECT_CUOBJDUMP_PATH;
#endif
  if (fs::exists("/usr/local/cuda/bin/cuobjdump")) return "/usr/local/cuda/bin/cuobjdump";
  if (std::system("command -v cuobjdump > /dev/null 2>&1") == 0) return "cuobjdump";
  return {};
}

std::string Sass(const std::string& cuobjdump, const TileBinary& binary, const fs::path& dir) {
  const fs::path cubin = dir / (binary.cache_key + ".cubin");
  std::ofstream(cubin, std::ios::binary).write(binary.cubin.data(), binary.cubin.size());
  const std::string command =
      cuobjdump + " -sass -fun " + kGemmKernelName + " " + cubin.string() + " 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
    ::pclose(pipe);
  }
  return out;
}

// CI's compile gate: every (config, variant) spec of the `tiny` set compiles with NVRTC; the
// multistage SASS issues HMMA (tensor cores) and keeps cp.async (LDGSTS), small-M issues FFMA.
TEST(TileCompilerTest, TinyRuleSetCompilesAndSassHasTensorCoreInstructions) {
  StatusOr<TileRuleSet> set = LoadRuleSet("tiny", kRulesDir);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const std::vector<TileKernelSpec> specs = BuildSpecs(*set);
  ASSERT_GE(specs.size(), 10u);
  CompilerOptions options;
  options.cache_dir.clear();  // measure NVRTC, not the cache
  const std::vector<StatusOr<TileBinary>> binaries = TileCompiler(options).CompileAll(specs);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_TRUE(binaries[i].ok()) << SpecKey(specs[i]) << "\n" << binaries[i].status().ToString();
  }
  const std::string cuobjdump = FindCuobjdump();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: SASS not checked";
  TempDir dir;
  bool saw_multistage = false, saw_small_m = false, saw_wgmma = false;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!binaries[i].ok() || specs[i].align_a != 8 || specs[i].align_b != 8) continue;
    const std::string sass = Sass(cuobjdump, *binaries[i], dir.path);
    switch (specs[i].config.pipeline) {
      case TilePipeline::kMultistage:
        saw_multistage = true;
        EXPECT_NE(sass.find("HMMA.16816.F32"), std::string::npos) << SpecKey(specs[i]) << "\n"
                                                                  << sass.substr(0, 400);
        EXPECT_NE(sass.find("LDSM"), std::string::npos) << SpecKey(specs[i]);
        EXPECT_NE(sass.find("LDGSTS"), std::string::npos) << SpecKey(specs[i]);
        break;
      case TilePipeline::kWarpSpecialized:
        saw_wgmma = true;
        EXPECT_NE(sass.find("HGMMA.64x" + std::to_string(specs[i].config.tile_n) + "x16.F32"),
                  std::string::npos)
            << SpecKey(specs[i]);
        EXPECT_NE(sass.find("UTMALDG"), std::string::npos) << SpecKey(specs[i]);  // TMA loads
        EXPECT_EQ(sass.find("STL"), std::string::npos) << "spills: " << SpecKey(specs[i]);
        break;
      case TilePipeline::kSmallM:
        saw_small_m = true;
        EXPECT_NE(sass.find("FFMA"), std::string::npos) << SpecKey(specs[i]);
        EXPECT_EQ(sass.find("HMMA"), std::string::npos) << SpecKey(specs[i]);
        break;
    }
  }
  EXPECT_TRUE(saw_wgmma);
  EXPECT_TRUE(saw_multistage);
  EXPECT_TRUE(saw_small_m);
}

TEST(TileSourceTest, SourceIsSelfContainedAndNamesItsSpec) {
  const std::string source = GenerateSource(DefaultSpec());
  EXPECT_EQ(source.find("#include"), std::string::npos);
  EXPECT_NE(source.find(SpecKey(DefaultSpec())), std::string::npos);
  EXPECT_NE(source.find(kGemmKernelName), std::string::npos);
  EXPECT_NE(source.find(kSplitKReduceKernelName), std::string::npos);
}

}  // namespace
}  // namespace kselect::tile
