#include "providers/tile/tile_config.h"

#include <string>

#include "providers/config_table.h"

namespace kselect {
namespace {

using config_table::Field;
using E = FeatureEncoding;
using S = SearchMove;
using C = TileConfig;

constexpr EnumName kPipelines[] = {
    {static_cast<int64_t>(TilePipeline::kMultistage), "multistage"},
    {static_cast<int64_t>(TilePipeline::kWarpSpecialized), "warp_specialized"},
    {static_cast<int64_t>(TilePipeline::kSmallM), "small_m"},
    {static_cast<int64_t>(TilePipeline::kDecode), "decode"}};
constexpr EnumName kSchedulers[] = {
    {static_cast<int64_t>(TileScheduler::kDataParallel), "data_parallel"},
    {static_cast<int64_t>(TileScheduler::kPersistent), "persistent"},
    {static_cast<int64_t>(TileScheduler::kPingPong), "pingpong"},
    {static_cast<int64_t>(TileScheduler::kStreamK), "streamk"}};
constexpr EnumName kEpilogues[] = {{static_cast<int64_t>(TileEpilogue::kDirect), "direct"},
                                   {static_cast<int64_t>(TileEpilogue::kSharedStaged), "smem"},
                                   {static_cast<int64_t>(TileEpilogue::kTransposed), "transposed"}};

// Where a search may move each field (the generator's own groups in rules/tile/ stay the
// catalogue; these are the steps a mutation takes from a config).
constexpr int64_t kTileMN[] = {16, 32, 64, 128, 192, 256};
constexpr int64_t kTileK[] = {16, 32, 64, 128};
constexpr int64_t kWarps[] = {1, 2, 4};
constexpr int64_t kStages[] = {2, 3, 4, 5, 6, 7};
constexpr int64_t kPipelineValues[] = {0, 1, 2, 3};
constexpr int64_t kTwoValues[] = {0, 1};
constexpr int64_t kEpilogueValues[] = {0, 2};  // direct, transposed (smem is not generated)
constexpr int64_t kSplitK[] = {1, 2, 3, 4, 6, 8, 16};
constexpr int64_t kCluster[] = {1, 2};
constexpr int64_t kSwizzle[] = {1, 2, 4, 8};

constexpr ConfigField kFields[] = {
    Field<&C::tile_m>("tile_m").AtLeast(1).Key("tile").Json("tile").Column("tile_m").Search(
        S::kValues, kTileMN),
    Field<&C::tile_n>("tile_n").AtLeast(1).Key("tile").Json("tile").Column("tile_n").Search(
        S::kValues, kTileMN),
    Field<&C::tile_k>("tile_k").AtLeast(1).Key("tile").Json("tile").Column("tile_k").Search(
        S::kValues, kTileK),
    Field<&C::warps_m>("warps_m")
        .AtLeast(1)
        .Key("warps")
        .Json("warps")
        .Column("warp_m")
        .Feature("warps_m", E::kNumber)
        .Search(S::kValues, kWarps),
    Field<&C::warps_n>("warps_n")
        .AtLeast(1)
        .Key("warps")
        .Json("warps")
        .Column("warp_n")
        .Feature("warps_n", E::kNumber)
        .Search(S::kValues, kWarps),
    Field<&C::warps_k>("warps_k").AtLeast(1).Key("warps").Json("warps").Column("warp_k").Feature(
        "warps_k", E::kNumber),
    // The instruction shape follows the pipeline and dtype.
    Field<&C::instr_m>("instr_m").AtLeast(1).Key("instr").Json("instr").Column("instr_m").Feature(
        "instr_m", E::kNumber),
    Field<&C::instr_n>("instr_n").AtLeast(1).Key("instr").Json("instr").Column("instr_n").Feature(
        "instr_n", E::kNumber),
    Field<&C::instr_k>("instr_k").AtLeast(1).Key("instr").Json("instr").Column("instr_k").Feature(
        "instr_k", E::kNumber),
    Field<&C::stages>("stages").AtLeast(1).Key("stages").Json("stages").Column("stages").Search(
        S::kValues, kStages),
    Field<&C::pipeline>("pipeline")
        .Key("pipeline")
        .Json("pipeline")
        .Column("pipeline")
        .Names(kPipelines)
        .Feature("tile_pipeline", E::kNamedCategory)
        .Search(S::kValues, kPipelineValues),
    Field<&C::scheduler>("scheduler")
        .Key("scheduler")
        .Json("scheduler")
        .Column("scheduler")
        .Names(kSchedulers)
        .Feature("tile_scheduler", E::kNamedCategory)
        .Search(S::kValues, kTwoValues),
    Field<&C::epilogue>("epilogue")
        .Key("epilogue")
        .Json("epilogue")
        .Column("epilogue")
        .Names(kEpilogues)
        .Feature("tile_epilogue", E::kNamedCategory)
        .Search(S::kValues, kEpilogueValues),
    // Bounds checks follow the problem's divisibility.
    Field<&C::mask_m>("mask_m").Key("mask_m").Json("mask").Column("pad_m").Feature("mask_m",
                                                                                   E::kFlag),
    Field<&C::mask_n>("mask_n").Key("mask_n").Json("mask").Column("pad_n").Feature("mask_n",
                                                                                   E::kFlag),
    Field<&C::mask_k>("mask_k").Key("mask_k").Json("mask").Column("pad_k").Feature("mask_k",
                                                                                   E::kFlag),
    Field<&C::split_k>("split_k").AtLeast(1).Key("splitk").Json("split_k").Column("split_k").Search(
        S::kValues, kSplitK),
    Field<&C::cluster_m>("cluster_m")
        .AtLeast(1)
        .Key("cluster")
        .Json("cluster")
        .Column("cluster_m")
        .Search(S::kValues, kCluster),
    Field<&C::cluster_n>("cluster_n")
        .AtLeast(1)
        .Key("cluster")
        .Json("cluster")
        .Column("cluster_n")
        .Search(S::kValues, kCluster),
    Field<&C::swizzle>("swizzle")
        .AtLeast(1)
        .Key("swizzle")
        .Json("swizzle")
        .Column("swizzle")
        .Feature("swizzle", E::kNumber)
        .Search(S::kValues, kSwizzle),
    config_table::DerivedColumn("persistent", FieldType::kBool,
                                [](const KernelConfig& c) -> int64_t {
                                  return std::get<C>(c).scheduler != TileScheduler::kDataParallel;
                                }),
    config_table::DerivedColumn("cluster_k", FieldType::kInt,
                                [](const KernelConfig&) -> int64_t { return 1; }),
};

std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  using config_table::Dims;
  return "tile " + std::string(TilePipelineName(c.pipeline)) + " " +
         Dims(c.tile_m, c.tile_n, c.tile_k) + " w" + Dims(c.warps_m, c.warps_n, c.warps_k) + " s" +
         std::to_string(c.stages) + (c.split_k > 1 ? " splitk" + std::to_string(c.split_k) : "") +
         (c.cluster_m * c.cluster_n > 1
              ? " cluster" + std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n)
              : "") +
         (c.scheduler != TileScheduler::kDataParallel
              ? " " + std::string(TileSchedulerName(c.scheduler))
              : "");
}

GemmKernelTraits Traits(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  GemmKernelTraits t;
  t.tile_m = c.tile_m;
  t.tile_n = c.tile_n;
  t.tile_k = c.tile_k;
  t.split_k = std::max(c.split_k, 1);
  t.stages = c.stages;
  const int64_t warps = int64_t{c.warps_m} * c.warps_n * c.warps_k;
  // Warp-specialised kernels count warpgroups (128 threads) plus one producer warpgroup.
  t.threads = c.pipeline == TilePipeline::kWarpSpecialized ? (warps + 1) * 128 : warps * 32;
  t.cluster_m = c.cluster_m;
  t.cluster_n = c.cluster_n;
  t.padding = std::array<bool, 3>{c.mask_m, c.mask_n, c.mask_k};
  return t;
}

template <typename Enum, size_t N>
std::string_view NameIn(const EnumName (&names)[N], Enum value) {
  for (const EnumName& e : names) {
    if (e.value == static_cast<int64_t>(value)) return e.name;
  }
  return "unknown";
}
template <typename Enum, size_t N>
StatusOr<Enum> ParseIn(const EnumName (&names)[N], std::string_view text, std::string_view what) {
  std::string expected;
  for (const EnumName& e : names) {
    if (e.name == text) return static_cast<Enum>(e.value);
    expected += (expected.empty() ? "" : ", ") + std::string(e.name);
  }
  return InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(text) +
                              "' (expected one of: " + expected + ")");
}

}  // namespace

std::string_view TilePipelineName(TilePipeline p) {
  return NameIn(kPipelines, p);
}
std::string_view TileSchedulerName(TileScheduler s) {
  return NameIn(kSchedulers, s);
}
std::string_view TileEpilogueName(TileEpilogue e) {
  return NameIn(kEpilogues, e);
}
StatusOr<TilePipeline> ParseTilePipeline(std::string_view name) {
  return ParseIn<TilePipeline>(kPipelines, name, "tile pipeline");
}
StatusOr<TileScheduler> ParseTileScheduler(std::string_view name) {
  return ParseIn<TileScheduler>(kSchedulers, name, "tile scheduler");
}
StatusOr<TileEpilogue> ParseTileEpilogue(std::string_view name) {
  return ParseIn<TileEpilogue>(kEpilogues, name, "tile epilogue");
}

const ConfigSchema& TileConfigSchema() {
  static const ConfigSchema schema{
      .provider = Provider::kTile,
      .name = "tile",
      .fields = kFields,
      .make_default = [] { return KernelConfig(C{}); },
      .describe = &Describe,
      .gemm_traits = &Traits,
  };
  return schema;
}

}  // namespace kselect
