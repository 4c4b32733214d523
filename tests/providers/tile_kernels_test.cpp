// The tile engine's kernel files (src/providers/tile/kernels/*.cuh) as sources: the binary embeds
// them byte for byte, a generated module is the spec's constants followed by them, and nvcc
// compiles each family after a representative constants block for sm_90a (no GPU needed), so a
// syntax error in a .cuh fails here with the file and line.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.h"
#include "providers/tile/kernel_sources.h"
#include "providers/tile/tile_engine.h"
#include "providers/tile/tile_internal.h"

#ifndef KSELECT_NVCC
#define KSELECT_NVCC ""
#endif

namespace kselect::tile {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceRoot = KSELECT_SOURCE_DIR;

// A fresh folder under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kselect_tile_kernels_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(rand()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(TileKernelSourcesTest, EmbeddedTextsAreTheKernelFiles) {
  std::set<std::string> embedded;
  for (const KernelSource* source : KernelSources()) {
    StatusOr<std::string> file = text::ReadFile((kSourceRoot / source->path).string());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_TRUE(*file == source->text) << source->path << " differs from its embedded copy";
    EXPECT_TRUE(embedded.insert(source->path).second) << "embedded twice: " << source->path;
  }
  // A .cuh added to the folder but not to sources.cmake would never reach NVRTC.
  for (const auto& entry : fs::directory_iterator(kSourceRoot / "src/providers/tile/kernels")) {
    if (entry.path().extension() != ".cuh") continue;
    const std::string path = fs::relative(entry.path(), kSourceRoot).string();
    EXPECT_TRUE(embedded.count(path)) << path << " is not listed in KSELECT_TILE_KERNELS";
  }
  EXPECT_EQ(embedded.size(), 5u);  // the prelude and four families
}

TileKernelSpec MultistageSpec() {
  TileKernelSpec spec;
  spec.config.tile_m = 64, spec.config.tile_n = 64, spec.config.tile_k = 32;
  return spec;
}

// The representative specs nvcc compiles: each family, both input types, K-major and MN-major
// operands (the ldmatrix .trans paths, small-M's row-major B path, wgmma's transpose bits).
struct FamilyCase {
  const char* name;
  TileKernelSpec spec;
  const KernelSource* family;
  std::vector<std::string> ptx_has;  // lines the PTX must contain
};

std::vector<FamilyCase> FamilyCases() {
  std::vector<FamilyCase> cases;
  {
    TileKernelSpec spec = MultistageSpec();
    spec.config.split_k = 2;
    cases.push_back(
        {"multistage_rcr_bf16",
         spec,
         &kMultistageSource,
         {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "cp.async.cg.shared"}});
  }
  {
    TileKernelSpec spec = MultistageSpec();
    spec.input = DataType::kF16, spec.output = DataType::kF32;
    spec.layout = *ParseGemmLayout("crr");
    spec.align_a = 2, spec.align_b = 4;
    cases.push_back({"multistage_crr_f16",
                     spec,
                     &kMultistageSource,
                     {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                      "ldmatrix.sync.aligned."
                      "m8n8.x4.trans"}});
  }
  {
    TileKernelSpec spec;
    spec.config.pipeline = TilePipeline::kSmallM;
    spec.config.tile_m = 8, spec.config.tile_n = 64, spec.config.tile_k = 64;
    spec.config.warps_m = 1, spec.config.warps_n = 4;
    spec.config.instr_m = spec.config.instr_n = spec.config.instr_k = 1;
    spec.config.stages = 1;
    FamilyCase column_major_b{"small_m_rcr_bf16", spec, &kSmallMSource, {"shfl.sync.bfly"}};
    cases.push_back(column_major_b);
    spec.layout = *ParseGemmLayout("rrr");
    spec.output = DataType::kF16;
    cases.push_back({"small_m_rrr_bf16", spec, &kSmallMSource, {"atom.shared.add.f32"}});
  }
  {
    TileKernelSpec spec;
    spec.config.pipeline = TilePipeline::kDecode;
    spec.config.tile_m = 32, spec.config.tile_n = 16, spec.config.tile_k = 64;
    spec.config.warps_m = 2, spec.config.warps_n = 1, spec.config.warps_k = 4;
    spec.config.stages = 2;
    spec.layout = *ParseGemmLayout("rcc");
    cases.push_back({"decode_rcc_bf16",
                     spec,
                     &kDecodeSource,
                     {"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                      "ld.global.nc.L1::no_allocate.L2::256B.v4.u32", "bar.sync"}});
  }
  {
    TileKernelSpec spec;
    spec.config.pipeline = TilePipeline::kWarpSpecialized;
    spec.config.tile_m = 128, spec.config.tile_n = 128, spec.config.tile_k = 64;
    spec.config.warps_m = 2, spec.config.warps_n = 1;
    spec.config.instr_m = 64, spec.config.instr_n = 128, spec.config.instr_k = 16;
    spec.config.stages = 4;
    cases.push_back({"warp_specialized_rcr_bf16",
                     spec,
                     &kWarpSpecializedSource,
                     {"wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", "p, 1, 1, 0, 0;",
                      "cp.async.bulk.tensor.3d"}});
    spec.config.tile_m = 64, spec.config.warps_m = 1;
    spec.config.tile_n = spec.config.instr_n = 192;
    spec.input = DataType::kF16;
    spec.layout = *ParseGemmLayout("ccr");  // A MN-major: transpose A only
    cases.push_back({"warp_specialized_ccr_f16",
                     spec,
                     &kWarpSpecializedSource,
                     {"wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16", "p, 1, 1, 1, 0;"}});
    // A 2x1 cluster (B multicast, stages released across the cluster), persistent, with the
    // transposed column-major epilogue; and a 1x2 cluster with MN-major A and B.
    spec.config.tile_m = 128, spec.config.warps_m = 2;
    spec.config.tile_n = spec.config.instr_n = 256;
    spec.config.stages = 3;
    spec.config.cluster_m = 2;
    spec.config.scheduler = TileScheduler::kPersistent;
    spec.config.epilogue = TileEpilogue::kTransposed;
    spec.input = spec.output = DataType::kBF16;
    spec.layout = *ParseGemmLayout("rcc");
    cases.push_back(
        {"warp_specialized_rcc_cluster2x1_persistent",
         spec,
         &kWarpSpecializedSource,
         {".multicast::cluster", "mapa.shared::cluster.u32", "mbarrier.arrive.shared::cluster.b64",
          "movmatrix.sync.aligned.m8n8.trans.b16", "barrier.cluster.arrive"}});
    spec.config.tile_n = spec.config.instr_n = 128;
    spec.config.scheduler = TileScheduler::kPingPong;  // named barriers order the consumers
    cases.push_back(
        {"warp_specialized_rcc_cluster2x1_pingpong",
         spec,
         &kWarpSpecializedSource,
         {".multicast::cluster", "bar.arrive", "movmatrix.sync.aligned.m8n8.trans.b16"}});
    // Stream-K in a 2x1 cluster: partials through L2, flags with release / acquire.
    spec.config.tile_n = spec.config.instr_n = 256;
    spec.config.scheduler = TileScheduler::kStreamK;
    cases.push_back({"warp_specialized_rcc_cluster2x1_streamk",
                     spec,
                     &kWarpSpecializedSource,
                     {".multicast::cluster", "st.global.cg.v4.f32", "ld.global.cg.v4.f32",
                      "st.release.gpu.global.b32", "ld.acquire.gpu.global.b32"}});
    spec.config.tile_n = spec.config.instr_n = 128;
    spec.config.cluster_m = 1, spec.config.cluster_n = 2;
    spec.config.scheduler = TileScheduler::kDataParallel;
    spec.config.epilogue = TileEpilogue::kDirect;
    spec.layout = *ParseGemmLayout("crr");
    cases.push_back({"warp_specialized_crr_cluster1x2",
                     spec,
                     &kWarpSpecializedSource,
                     {".multicast::cluster", "p, 1, 1, 1, 1;"}});
  }
  return cases;
}

TEST(TileKernelSourcesTest, GeneratedSourceIsConstantsThenPreludeThenFamily) {
  for (const FamilyCase& c : FamilyCases()) {
    ASSERT_TRUE(CheckValid(c.spec).ok()) << c.name << ": " << CheckValid(c.spec).ToString();
    const std::string expected = GenerateConstants(c.spec) + "#line 1 \"" + kPreludeSource.path +
                                 "\"\n" + kPreludeSource.text + "#line 1 \"" + c.family->path +
                                 "\"\n" + c.family->text;
    EXPECT_EQ(GenerateSource(c.spec), expected) << c.name;
    EXPECT_EQ(expected.find("#include"), std::string::npos) << c.name;
  }
}

// nvcc from the build's toolkit, else the usual install, else PATH; empty when absent.
std::string FindNvcc() {
  if (fs::exists(KSELECT_NVCC)) return KSELECT_NVCC;
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return {};
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Writes <dir>/<name>.cu: the spec's constants, then the prelude and the family file included
// by path (nvcc reads the .cuh files themselves, not the embedded copies), and compiles it to PTX.
CommandResult CompileWithNvcc(const std::string& nvcc, const fs::path& dir, const std::string& name,
                              const TileKernelSpec& spec, const fs::path& family_path) {
  const fs::path cu = dir / (name + ".cu");
  std::ofstream(cu) << GenerateConstants(spec) << "#include \""
                    << (kSourceRoot / kPreludeSource.path).string() << "\"\n#include \""
                    << family_path.string() << "\"\n";
  return RunCommand(nvcc + " -arch=sm_90a -std=c++17 --ptx -o " + (dir / (name + ".ptx")).string() +
                    " " + cu.string());
}

TEST(TileKernelsNvccTest, EachFamilyCompilesForSm90a) {
  const std::string nvcc = FindNvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: the kernel files were not compiled";
  TempDir dir;
  const std::vector<FamilyCase> cases = FamilyCases();
  // Two at a time: each nvcc run takes seconds on one core.
  std::vector<CommandResult> results(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      results[i] = CompileWithNvcc(nvcc, dir.path, cases[i].name, cases[i].spec,
                                   kSourceRoot / cases[i].family->path);
    }
  };
  std::thread second(worker);
  worker();
  second.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    const CommandResult& result = results[i];
    ASSERT_EQ(result.exit_code, 0) << cases[i].name << ":\n" << result.output;
    StatusOr<std::string> ptx =
        text::ReadFile((dir.path / (cases[i].name + std::string(".ptx"))).string());
    ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
    EXPECT_NE(ptx->find(std::string(".entry ") + kGemmKernelName), std::string::npos)
        << cases[i].name;
    EXPECT_NE(ptx->find(std::string(".entry ") + kSplitKReduceKernelName), std::string::npos)
        << cases[i].name;
    for (const std::string& line : cases[i].ptx_has) {
      EXPECT_NE(ptx->find(line), std::string::npos) << cases[i].name << ": no " << line;
    }
  }
}

// The check above can fail: a kernel file with a syntax error does not compile, and nvcc names
// the file.
TEST(TileKernelsNvccTest, AKernelFileWithASyntaxErrorFails) {
  const std::string nvcc = FindNvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found: the kernel files were not compiled";
  TempDir dir;
  const fs::path broken = dir.path / "broken_small_m.cuh";
  std::ofstream(broken) << kSmallMSource.text << "constexpr int kNotCuda = ;\n";
  const FamilyCase c = FamilyCases()[2];
  const CommandResult result = CompileWithNvcc(nvcc, dir.path, "broken", c.spec, broken);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("broken_small_m.cuh"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace kselect::tile
