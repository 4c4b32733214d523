#include "providers/ck/ck_tile_config.h"

#include <string>

#include "providers/config_table.h"

namespace kselect {
namespace {

using config_table::Field;
using E = FeatureEncoding;
using C = CkTileConfig;

// The CK names' known values, in feature-code order.
constexpr std::string_view kPipelines[] = {"compv3",       "compv4",   "compv5", "mem",
                                           "preshufflev2", "basic_v1", "compv6"};
constexpr std::string_view kSchedulers[] = {"intrawave", "interwave"};
constexpr std::string_view kEpilogues[] = {"default", "cshuffle"};

constexpr ConfigField kFields[] = {
    Field<&C::tile_m>("tile_m").AtLeast(0).Key("tile").Json("tile").Column("tile_m"),
    Field<&C::tile_n>("tile_n").AtLeast(0).Key("tile").Json("tile").Column("tile_n"),
    Field<&C::tile_k>("tile_k").AtLeast(0).Key("tile").Json("tile").Column("tile_k"),
    Field<&C::warp_m>("warp_m").Key("warp").Json("warp").Column("warp_m").Feature("warp_m",
                                                                                  E::kNumber),
    Field<&C::warp_n>("warp_n").Key("warp").Json("warp").Column("warp_n").Feature("warp_n",
                                                                                  E::kNumber),
    Field<&C::warp_k>("warp_k").Key("warp").Json("warp").Column("warp_k").Feature("warp_k",
                                                                                  E::kNumber),
    Field<&C::warp_tile_m>("warp_tile_m")
        .Key("warp_tile")
        .Json("warp_tile")
        .Column("warp_tile_m")
        .Feature("warp_tile_m", E::kNumber),
    Field<&C::warp_tile_n>("warp_tile_n")
        .Key("warp_tile")
        .Json("warp_tile")
        .Column("warp_tile_n")
        .Feature("warp_tile_n", E::kNumber),
    Field<&C::warp_tile_k>("warp_tile_k")
        .Key("warp_tile")
        .Json("warp_tile")
        .Column("warp_tile_k")
        .Feature("warp_tile_k", E::kNumber),
    Field<&C::pipeline>("pipeline")
        .Key("pipeline")
        .Json("pipeline")
        .Column("pipeline")
        .Categories(kPipelines)
        .Feature("ck_pipeline", E::kNamedCategory),
    Field<&C::scheduler>("scheduler")
        .Key("scheduler")
        .Json("scheduler")
        .Column("scheduler")
        .Categories(kSchedulers)
        .Feature("ck_scheduler", E::kNamedCategory),
    Field<&C::epilogue>("epilogue")
        .Key("epilogue")
        .Json("epilogue")
        .Column("epilogue")
        .Categories(kEpilogues)
        .Feature("ck_epilogue", E::kNamedCategory),
    Field<&C::pad_m>("pad_m").Key("pad_m").Json("pad").Column("pad_m").Feature("pad_m", E::kFlag),
    Field<&C::pad_n>("pad_n").Key("pad_n").Json("pad").Column("pad_n").Feature("pad_n", E::kFlag),
    Field<&C::pad_k>("pad_k").Key("pad_k").Json("pad").Column("pad_k").Feature("pad_k", E::kFlag),
    Field<&C::persistent>("persistent")
        .Key("persistent")
        .Json("persistent")
        .Column("persistent")
        .Feature("persistent", E::kFlag),
    Field<&C::vec_a>("vec_a").Key("vec").Json("vec").Column("vec_a").Feature("vec_a", E::kNumber),
    Field<&C::vec_b>("vec_b").Key("vec").Json("vec").Column("vec_b").Feature("vec_b", E::kNumber),
    Field<&C::vec_c>("vec_c").Key("vec").Json("vec").Column("vec_c").Feature("vec_c", E::kNumber),
    Field<&C::split_k>("split_k").Key("splitk").Json("split_k").Column("split_k"),
};

std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  using config_table::Dims;
  return "ck_tile " + c.pipeline + " " + Dims(c.tile_m, c.tile_n, c.tile_k) + " " +
         Dims(c.warp_m, c.warp_n, c.warp_k) + " " +
         Dims(c.warp_tile_m, c.warp_tile_n, c.warp_tile_k);
}

GemmKernelTraits Traits(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  GemmKernelTraits t;
  t.tile_m = c.tile_m;
  t.tile_n = c.tile_n;
  t.tile_k = c.tile_k;
  t.split_k = std::max(c.split_k, 1);
  // compv4 double-buffers LDS; the other CK pipelines hold one stage.
  t.stages = c.pipeline == "compv4" ? 2 : 1;
  t.threads = int64_t{c.warp_m} * c.warp_n * c.warp_k * 64;  // AMD wavefronts of 64
  t.padding = std::array<bool, 3>{c.pad_m, c.pad_n, c.pad_k};
  return t;
}

}  // namespace

void ApplyCkMemPipelinePadding(CkTileConfig& config) {
  if (config.pipeline == "mem") {
    config.pad_m = true;
    config.pad_n = true;
    config.pad_k = true;
  }
}

const ConfigSchema& CkTileConfigSchema() {
  static const ConfigSchema schema{
      .provider = Provider::kCkTile,
      .name = "ck_tile",
      .fields = kFields,
      .make_default = [] { return KernelConfig(C{}); },
      .describe = &Describe,
      .gemm_traits = &Traits,
  };
  return schema;
}

}  // namespace kselect
