// The tile engine behind the provider interface: what `kselect bench --provider tile` drives.
// Enumeration compiles with NVRTC and so runs here without a GPU; launching needs one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "kselect/provider.h"

namespace kselect {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kselect_tile_provider_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(rand()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

GemmProblem Bf16Gemm(int64_t m, int64_t n, int64_t k) {
  GemmProblem p{.m = m, .n = n, .k = k};
  p.layout = *ParseGemmLayout("rcr");
  return p;
}

std::unique_ptr<KernelProvider> TinyTileProvider() {
  ProviderOptions options;
  options.rule_set = "tiny";
  auto provider = CreateProvider(Provider::kTile, options);
  KSELECT_CHECK_MSG(provider.ok(), provider.status().ToString());
  return std::move(provider).value();
}

TEST(TileProviderTest, RegisteredBesideCublasLt) {
  bool tile = false;
  for (const ProviderEntry& entry : ProviderRegistry()) tile |= entry.provider == Provider::kTile;
  EXPECT_TRUE(tile);
  EXPECT_EQ(TinyTileProvider()->id(), Provider::kTile);
}

TEST(TileProviderTest, EnumeratesCompiledTypedConfigsThatCanImplementTheProblem) {
  auto provider = TinyTileProvider();
  const Problem problem = Bf16Gemm(512, 384, 1000);  // K not a multiple of any tile_k
  auto configs = provider->Enumerate(problem);
  ASSERT_TRUE(configs.ok()) << configs.status().ToString();
  ASSERT_FALSE(configs->empty());
  for (const KernelConfig& config : *configs) {
    ASSERT_TRUE(std::holds_alternative<TileConfig>(config));
    EXPECT_TRUE(provider->CanImplement(problem, config).ok()) << ConfigKey(config);
    EXPECT_TRUE(provider->WorkspaceBytes(problem, config).ok());
  }
  // A filter narrows the list; the tile engine has no heuristic of its own.
  ConfigFilter only_multistage;
  only_multistage.keep = [](const KernelConfig& c) {
    return std::get<TileConfig>(c).pipeline == TilePipeline::kMultistage;
  };
  auto filtered = provider->Enumerate(problem, only_multistage);
  ASSERT_TRUE(filtered.ok());
  EXPECT_LT(filtered->size(), configs->size());
  EXPECT_TRUE(provider->HeuristicPicks(problem, 8)->empty());
}

TEST(TileProviderTest, RefusesWhatTheEngineDoesNotGenerate) {
  auto provider = TinyTileProvider();
  GemmProblem fp8 = Bf16Gemm(256, 256, 256);
  fp8.dtype_a = fp8.dtype_b = DataType::kF8E4M3;
  EXPECT_FALSE(provider->SupportsProblem(fp8));
  EXPECT_TRUE(provider->Enumerate(fp8)->empty());
  const Status lt = provider->CanImplement(Bf16Gemm(64, 64, 64), CublasLtConfig{.algo_id = 66});
  EXPECT_EQ(lt.code(), StatusCode::kCannotImplement);
  TileConfig broken;
  broken.tile_m = 100;  // not a multiple of the warp layout
  EXPECT_EQ(provider->CanImplement(Bf16Gemm(64, 64, 64), broken).code(),
            StatusCode::kCannotImplement);
}

// The provider parses its rule set once and compiles each spec once: after the first Enumerate the
// rule-set file and the on-disk cubin cache are deleted, and a second Enumerate (another problem
// with the same specs) still lists the same configs, without re-creating the cache.
TEST(TileProviderTest, KeepsItsRuleSetAndCompiledSpecsAcrossEnumerates) {
  TempDir dir;
  const fs::path rules = dir.path / "tiny_copy.json";
  fs::copy_file(fs::path(KSELECT_SOURCE_DIR) / "rules/tile/tiny.json", rules);
  const fs::path cache = dir.path / "cache";
  const ScopedEnv cache_env("KSELECT_CACHE_DIR", cache.string());
  ProviderOptions options;
  options.rule_set = rules.string();
  auto provider = CreateProvider(Provider::kTile, options);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  // The two one-row small-M configs: the quickest to compile.
  ConfigFilter one_row;
  one_row.keep = [](const KernelConfig& c) {
    const TileConfig& t = std::get<TileConfig>(c);
    return t.pipeline == TilePipeline::kSmallM && t.tile_m == 1;
  };
  auto first = (*provider)->Enumerate(Bf16Gemm(1, 384, 1024), one_row);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);
  ASSERT_TRUE(fs::is_directory(cache / "tile")) << "the first Enumerate compiled into the cache";

  fs::remove(rules);
  fs::remove_all(cache);
  auto second = (*provider)->Enumerate(Bf16Gemm(1, 512, 2048), one_row);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, *first);
  EXPECT_FALSE(fs::exists(cache)) << "the second Enumerate compiled again";

  // A new provider reads the file, which is gone.
  auto fresh = CreateProvider(Provider::kTile, options);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->Enumerate(Bf16Gemm(1, 384, 1024), one_row).status().code(),
            StatusCode::kNotFound);
}

// Datasets and models record what kernels came from; every provider says it without a GPU.
TEST(TileProviderTest, EveryProviderNamesItselfAndItsVersion) {
  for (const ProviderEntry& entry : ProviderRegistry()) {
    auto provider = CreateProvider(entry.provider);
    ASSERT_TRUE(provider.ok()) << provider.status().ToString();
    EXPECT_EQ((*provider)->name(), ProviderName(entry.provider));
    const char* prefix = entry.provider == Provider::kTile    ? "tile engine (nvrtc 13."
                         : entry.provider == Provider::kCudnn ? "cudnn "
                                                              : "cublaslt 13.";
    EXPECT_EQ((*provider)->version().rfind(prefix, 0), 0u) << (*provider)->version();
  }
}

TEST(TileProviderTest, PrepareNeedsAGpu) {
  auto provider = TinyTileProvider();
  const Problem problem = Bf16Gemm(256, 256, 256);
  auto configs = provider->Enumerate(problem);
  ASSERT_TRUE(configs.ok() && !configs->empty());
  auto prepared = provider->Prepare(problem, configs->front());
  if (prepared.ok()) GTEST_SKIP() << "a GPU is present: launch is covered by the GPU tests";
  EXPECT_EQ(prepared.status().code(), StatusCode::kUnavailable) << prepared.status().ToString();
}

}  // namespace
}  // namespace kselect
