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
#include "kselect/catalogue.h"
#include "providers/tile/tile_engine.h"

namespace kselect::tile {
namespace {

namespace fs = std::filesystem;

// The rules root (every provider's <provider>/<name>.json) and the tile rule sets' folder.
const std::string kRulesRoot = std::string(KSELECT_SOURCE_DIR) + "/rules";
const std::string kRulesDir = kRulesRoot + "/tile";

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

// A valid decode config: 16 weight rows x 8 tokens per block, 4 warps splitting K.
TileConfig DecodeConfig() {
  TileConfig c;
  c.pipeline = TilePipeline::kDecode;
  c.tile_m = 16, c.tile_n = 8, c.tile_k = 128;
  c.warps_m = 1, c.warps_n = 1, c.warps_k = 4;
  c.instr_m = 16, c.instr_n = 8, c.instr_k = 16;
  c.stages = 2;
  return c;
}

TEST(TileRulesTest, RuleNamesAreUniqueAndDocumented) {
  std::set<std::string> names;
  for (const ValidityRule& rule : ValidityRules()) {
    EXPECT_TRUE(names.insert(rule.name).second) << "duplicate rule " << rule.name;
    EXPECT_GT(std::string(rule.description).size(), 10u) << rule.name;
  }
  EXPECT_TRUE(CheckValid(DefaultSpec()).ok()) << CheckValid(DefaultSpec()).ToString();
}

// A warp_specialized 128 x tile_n x 64 tile: two consumer warpgroups, wgmma m64 n<tile_n> k16.
void WarpSpecialized128(TileKernelSpec& s, int32_t tile_n) {
  s.config.pipeline = TilePipeline::kWarpSpecialized;
  s.config.tile_m = 128, s.config.tile_n = tile_n, s.config.tile_k = 64;
  s.config.warps_m = 2, s.config.warps_n = 1;
  s.config.instr_m = 64, s.config.instr_n = tile_n, s.config.instr_k = 16;
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
         WarpSpecialized128(s, 96);
         s.layout.b = MatrixOrder::kRowMajor;
       }},
      {"ws_alignment",
       [](TileKernelSpec& s) {
         WarpSpecialized128(s, 128);
         s.align_b = 4;
       }},
      {"scheduler_data_parallel",
       [](TileKernelSpec& s) { s.config.scheduler = TileScheduler::kPersistent; }},
      {"pingpong_shape",
       [](TileKernelSpec& s) {
         // Each pingpong consumer holds a whole 128 x 256 tile: 256 accumulators per thread.
         WarpSpecialized128(s, 256);
         s.config.scheduler = TileScheduler::kPingPong;
       }},
      {"streamk_shape",
       [](TileKernelSpec& s) {
         WarpSpecialized128(s, 128);
         s.config.scheduler = TileScheduler::kStreamK;
         s.config.split_k = 2;
       }},
      {"cluster_shape", [](TileKernelSpec& s) { s.config.cluster_m = 2; }},
      {"cluster_pieces",
       [](TileKernelSpec& s) {
         // Row-major B arrives in 64-wide chunks: one chunk cannot be split over two CTAs.
         WarpSpecialized128(s, 64);
         s.config.cluster_m = 2;
         s.layout.b = MatrixOrder::kRowMajor;
       }},
      {"epilogue_kind", [](TileKernelSpec& s) { s.config.epilogue = TileEpilogue::kSharedStaged; }},
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
      {"decode_shape",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.config.tile_n = 24;  // whole n8 tiles, but not 8, 16, 32 or 64
       }},
      {"decode_k_major",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.layout = *ParseGemmLayout("rrr");
       }},
      {"decode_alignment",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.align_b = 4;
       }},
      {"decode_masked",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.config.mask_k = false;
       }},
      {"decode_registers",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.config.tile_m = 32, s.config.tile_n = 16, s.config.tile_k = 256;
       }},
      {"decode_shared",
       [](TileKernelSpec& s) {
         s.config = DecodeConfig();
         s.config.tile_m = 64, s.config.tile_n = 16, s.config.tile_k = 32, s.config.warps_k = 32;
         s.config.stages = 1;
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

TEST(TileRulesTest, DerivedFieldsMakeAWarpSpecializedConfigValid) {
  // The ws_instr case above, with warps and instr left stale: derived from the tile, it is valid.
  for (int32_t tile_m : {64, 128}) {
    for (int32_t tile_n : {32, 48, 128, 256}) {
      TileKernelSpec spec = DefaultSpec();
      spec.config.pipeline = TilePipeline::kWarpSpecialized;
      spec.config.tile_m = tile_m, spec.config.tile_n = tile_n, spec.config.tile_k = 64;
      spec.config.stages = 4;
      EXPECT_FALSE(CheckValid(spec).ok());
      spec.config = WithDerivedFields(spec.config);
      EXPECT_TRUE(CheckValid(spec).ok())
          << tile_m << "x" << tile_n << ": " << CheckValid(spec).ToString();
      EXPECT_EQ(spec.config.warps_m, tile_m / 64);
      EXPECT_EQ(spec.config.instr_n, tile_n);
    }
  }
  // Other pipelines' fields are independent: unchanged.
  const TileConfig decode = DecodeConfig();
  EXPECT_EQ(ConfigKey(KernelConfig(WithDerivedFields(decode))), ConfigKey(KernelConfig(decode)));
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

TEST(TileSpecTest, DecodeTakesTokensInNOrMAndNeedsKContiguousOperands) {
  GemmProblem p;
  p.m = 4096, p.n = 4, p.k = 4096;
  p.layout = *ParseGemmLayout("rcc");  // nn.Linear through cuBLAS TN: tokens in n
  StatusOr<TileKernelSpec> spec = SpecForProblem(DecodeConfig(), p);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(CheckValid(*spec).ok()) << CheckValid(*spec).ToString();
  EXPECT_TRUE(CanImplement(*spec, p).ok()) << CanImplement(*spec, p).ToString();
  EXPECT_EQ(LaunchShapeOf(*spec).threads, 128);

  GemmProblem tokens_in_m = p;
  tokens_in_m.m = 3, tokens_in_m.n = 14336;
  EXPECT_TRUE(CanImplement(*spec, tokens_in_m).ok());

  GemmProblem prefill = p;
  prefill.n = 9;  // more tokens than tile_n in both dimensions
  const Status too_many = CanImplement(*spec, prefill);
  EXPECT_EQ(too_many.code(), StatusCode::kCannotImplement);
  EXPECT_NE(too_many.message().find("tile_n 8 tokens"), std::string::npos) << too_many.ToString();

  GemmProblem odd_k = p;
  odd_k.k = 4100;  // K rows are no longer 16-byte aligned
  StatusOr<TileKernelSpec> odd = SpecForProblem(DecodeConfig(), odd_k);
  ASSERT_TRUE(odd.ok());
  EXPECT_NE(CheckValid(*odd).message().find("decode_alignment"), std::string::npos);
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

// Stream-K's split: the part-full wave's k iterations go to as many clusters as get
// kMinStreamKIterations k tiles each (below a wave every tile is split, over a grid no larger);
// the workspace WorkspaceBytes asks for covers the grid of any GPU.
TEST(TileSpecTest, StreamKSplitsTheTailByIterations) {
  TileConfig c;
  c.pipeline = TilePipeline::kWarpSpecialized;
  c.tile_m = 128, c.tile_n = 256, c.tile_k = 64;
  c.warps_m = 2, c.warps_n = 1;
  c.scheduler = TileScheduler::kStreamK;
  GemmProblem p;
  p.m = p.n = p.k = 8192;  // 64 x 32 = 2,048 tiles of 64 k tiles: 15.5 waves on 132 SMs
  EXPECT_EQ(StreamKClusters(c, p, 132), 132);
  StreamKLayout layout = StreamKLayoutOf(c, p, 132);
  EXPECT_EQ(layout.dp_tiles, 15 * 132);
  EXPECT_EQ(layout.sk_tiles, 2048 - 15 * 132);
  EXPECT_EQ(layout.sk_clusters, 132);  // 68 tiles x 64 k tiles: 33 each
  EXPECT_EQ(layout.flag_words, 1088);  // 132 CTAs x 2 warpgroups x 4 warps, rounded up to 64
  EXPECT_EQ(layout.workspace_bytes, 1088u * 4 + 132u * 128 * 256 * 4);
  // Even waves: nothing to split; nor a last wave more than three quarters full.
  layout = StreamKLayoutOf(c, p, 128);
  EXPECT_EQ(layout.dp_tiles, 2048);
  EXPECT_EQ(layout.sk_tiles, 0);
  layout = StreamKLayoutOf(c, p, 140);  // 2,048 = 14 x 140 + 88 (63 %): split
  EXPECT_EQ(layout.sk_tiles, 88);
  layout = StreamKLayoutOf(c, p, 135);  // 2,048 = 15 x 135 + 23: split
  EXPECT_EQ(layout.sk_tiles, 23);
  layout = StreamKLayoutOf(c, p, 137);  // 2,048 = 14 x 137 + 130 (95 %): whole
  EXPECT_EQ(layout.sk_tiles, 0);
  EXPECT_EQ(layout.dp_tiles, 2048);
  // A small remainder goes to fewer clusters: 4 tiles x 128 k tiles over 32.
  p.m = 8192 + 128, p.n = 4 * 256;  // 65 x 4 = 260 tiles on 128 clusters
  layout = StreamKLayoutOf(c, p, 128);
  EXPECT_EQ(layout.dp_tiles, 256);
  EXPECT_EQ(layout.sk_tiles, 4);
  EXPECT_EQ(layout.sk_clusters, 32);
  // Short K: still a cluster per split tile (4 k tiles each, not 16 on one cluster).
  p.k = 256;
  layout = StreamKLayoutOf(c, p, 128);
  EXPECT_EQ(layout.sk_tiles, 4);
  EXPECT_EQ(layout.sk_clusters, 4);
  p.k = 8192;
  // Below a wave: 8 tiles x 64 k tiles, each split in 4 parts of 16 k tiles (the same offsets).
  p.m = 1024, p.n = 128, p.k = 4096;
  EXPECT_EQ(StreamKClusters(c, p, 132), 32);
  p.k = 16384;  // 256 k tiles: 16 parts of 16 each on 128 of the 132 clusters
  EXPECT_EQ(StreamKClusters(c, p, 132), 8 * 16);
  p.m = 128 * 100;  // 100 tiles: one part each, as the persistent grid
  EXPECT_EQ(StreamKClusters(c, p, 132), 100);
  p.m = 1024, p.k = 4096;
  layout = StreamKLayoutOf(c, p, 32);
  EXPECT_EQ(layout.dp_tiles, 0);
  EXPECT_EQ(layout.sk_tiles, 8);
  EXPECT_EQ(layout.sk_clusters, 32);
  // Clusters of two CTAs: cluster tiles, and at most kMaxStreamKCtas CTAs.
  c.cluster_m = 2;
  p.m = p.n = p.k = 8192;
  EXPECT_EQ(StreamKClusters(c, p, 1000), kMaxStreamKCtas / 2);
  StatusOr<TileKernelSpec> spec = SpecForProblem(c, p);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (int64_t resident : {1, 33, 66, 80, 1000}) {
    EXPECT_LE(StreamKLayoutOf(c, p, StreamKClusters(c, p, resident)).workspace_bytes,
              WorkspaceBytes(*spec, p))
        << resident;
  }
  spec->config.split_k = 2;
  EXPECT_EQ(CheckValid(*spec).code(), StatusCode::kInvalidArgument);
}

// The committed snapshot rules/tile/snapshots/<name>.json is what `kselect tile list --snapshot`
// writes: the rule set's fingerprint and catalogue, config for config, in order.
TEST(TileCatalogueTest, SnapshotsMatchRuleSets) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kRulesDir)) {
    if (entry.path().extension() != ".json") continue;
    const std::string name = entry.path().stem().string();
    StatusOr<TileRuleSet> set = LoadRuleSet(name, kRulesRoot);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    const std::string path = kRulesDir + "/snapshots/" + name + ".json";
    StatusOr<std::string> text = text::ReadFile(path);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    StatusOr<CatalogueSnapshot> snapshot = ParseCatalogueSnapshot(*text, path);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    const std::string regenerate = "; if intended, run: kselect tile list --rules " + name +
                                   " --snapshot rules/tile/snapshots/" + name + ".json";
    EXPECT_EQ(snapshot->provider, Provider::kTile) << path;
    EXPECT_EQ(snapshot->rule_set, name) << path;
    EXPECT_EQ(FingerprintText(snapshot->rules_fingerprint), FingerprintText(set->rules.fingerprint))
        << "rule set '" << name << "' changed since its snapshot was made" << regenerate;
    std::string listed, recorded;
    for (const TileConfig& c : set->configs) listed += ConfigKey(c) + "\n";
    for (const KernelConfig& c : snapshot->configs) recorded += ConfigKey(c) + "\n";
    EXPECT_EQ(listed, recorded) << "catalogue of rule set '" << name
                                << "' drifted from its snapshot" << regenerate;
    ++checked;
  }
  EXPECT_GE(checked, 4);  // tiny, tests, default, full
}

TEST(TileCatalogueTest, RuleSetErrorsNameThePath) {
  TempDir dir;
  const std::string path = (dir.path / "bad.json").string();
  ASSERT_TRUE(text::WriteFileAtomically(path, R"({"format": "kselect.rules", "format_version": 1,
                  "name": "bad", "provider": "tile", "comment": "", "rules": [],
                  "generator": {"variants": [{"input": "bf16", "output": "bf16",
                  "layout": "rcr"}], "groups": [{"pipeline": "multistage", "tile": [[64, 64, 32]],
                  "stagez": [3]}]}})")
                  .ok());
  StatusOr<TileRuleSet> set = LoadRuleSet(path, "");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kParseError);
  EXPECT_NE(set.status().message().find("bad.json.generator.groups[0].stagez: unknown key"),
            std::string::npos)
      << set.status().ToString();
  // A missing set names the folder it was looked for in, never falls back to another.
  const Status missing = LoadRuleSet("no_such_set", kRulesRoot).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find(kRulesDir + "/no_such_set.json"), std::string::npos)
      << missing.ToString();
  // A tile rule set without a generator, or another provider's, is refused.
  const std::string no_generator = (dir.path / "no_generator.json").string();
  ASSERT_TRUE(text::WriteFileAtomically(no_generator,
                                        R"({"format": "kselect.rules", "format_version": 1,
                  "name": "x", "provider": "tile", "comment": "", "rules": []})")
                  .ok());
  EXPECT_NE(LoadRuleSet(no_generator, "").status().message().find("generator: required"),
            std::string::npos);
  EXPECT_EQ(LoadRuleSet(kRulesRoot + "/cublaslt/tiny.json", "").status().code(),
            StatusCode::kInvalidArgument);
}

// Generate, then filter: the rule set's rules drop generated configs as they drop cuBLASLt's
// enumerated ones; rules with a "when" condition wait for a problem (the provider's filter).
TEST(TileCatalogueTest, RulesFilterTheGeneratedConfigs) {
  TempDir dir;
  const std::string path = (dir.path / "filtered.json").string();
  ASSERT_TRUE(text::WriteFileAtomically(path, R"({"format": "kselect.rules", "format_version": 1,
      "name": "filtered", "provider": "tile", "comment": "",
      "generator": {"variants": [{"input": "bf16", "output": "bf16", "layout": "rcr"}],
                    "groups": [{"pipeline": "multistage", "tile": [[64, 64, 32]],
                                "warps": [[2, 2, 1]], "stages": [2, 3, 4], "split_k": [1, 2]}]},
      "rules": [{"name": "three_stages_or_more", "comment": "", "field": "stages", "min": 3},
                {"name": "no_split_k_on_short_k", "comment": "", "field": "split_k", "max": 1,
                 "when": {"k": {"max": 4096}}}]})")
                  .ok());
  StatusOr<TileRuleSet> set = LoadRuleSet(path, "");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->generated, 6);
  EXPECT_EQ(set->space.size(), 6u);
  ASSERT_EQ(set->configs.size(), 4u);  // stages 3 and 4, both split-K factors
  for (const TileConfig& c : set->configs) EXPECT_GE(c.stages, 3);
  ASSERT_EQ(set->rejected_by_rule.size(), 1u);
  EXPECT_EQ(set->rejected_by_rule[0].first, "rule three_stages_or_more");
  EXPECT_EQ(set->rejected_by_rule[0].second, 2);
  // The same rules as a provider's filter, on a problem with a short K: split-K goes too.
  GemmProblem short_k{.m = 1024, .n = 1024, .k = 1024};
  const Problem problem = short_k;
  std::vector<KernelConfig> space(set->space.begin(), set->space.end());
  EXPECT_EQ(ApplyRules(set->rules, problem, space).size(), 2u);
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
  StatusOr<TileRuleSet> set = LoadRuleSet("tiny", kRulesRoot);
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
      case TilePipeline::kDecode:  // the decode family's mma.sync, should `tiny` gain it
        EXPECT_NE(sass.find("HMMA.16816.F32"), std::string::npos) << SpecKey(specs[i]);
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
