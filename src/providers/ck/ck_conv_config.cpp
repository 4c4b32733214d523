#include "providers/ck/ck_conv_config.h"

#include <string>

#include "providers/config_table.h"

namespace kselect {
namespace {

using config_table::Field;
using E = FeatureEncoding;
using C = CkConvConfig;

// The CK conv names' known values, in feature-code order (lists only grow at the end: a model's
// codes keep their meaning). The tile sizes need no row here: the conv extractor's tile block
// reads them by field name.
constexpr std::string_view kPipelines[] = {"compv3", "compv4", "compv5",
                                           "compv6", "mem",    "basic_v1"};
constexpr std::string_view kSchedulers[] = {"intrawave", "interwave"};

constexpr ConfigField kFields[] = {
    Field<&C::tile_m>("tile_m").AtLeast(0).Key("tile").Json("tile").Column("tile_m"),
    Field<&C::tile_n>("tile_n").AtLeast(0).Key("tile").Json("tile").Column("tile_n"),
    Field<&C::tile_k>("tile_k").AtLeast(0).Key("tile").Json("tile").Column("tile_k"),
    Field<&C::pipeline>("pipeline")
        .Key("pipeline")
        .Json("pipeline")
        .Column("pipeline")
        .Categories(kPipelines)
        .Feature("ck_conv_pipeline", E::kNamedCategory),
    Field<&C::scheduler>("scheduler")
        .Key("scheduler")
        .Json("scheduler")
        .Column("scheduler")
        .Categories(kSchedulers)
        .Feature("ck_conv_scheduler", E::kNamedCategory),
    Field<&C::double_smem_buffer>("double_smem_buffer")
        .Key("dsb")
        .Json("double_smem_buffer")
        .Column("double_smem_buffer")
        .Feature("double_smem_buffer", E::kFlag),
    Field<&C::split_image>("split_image")
        .Key("si")
        .Json("split_image")
        .Column("split_image")
        .Feature("split_image", E::kFlag),
    config_table::DerivedColumn("split_k", FieldType::kInt,
                                [](const KernelConfig&) -> int64_t { return 1; }),
};

std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  return "ck_conv " + c.pipeline + " " + config_table::Dims(c.tile_m, c.tile_n, c.tile_k);
}

}  // namespace

const ConfigSchema& CkConvConfigSchema() {
  static const ConfigSchema schema{
      .provider = Provider::kCkConv,
      .name = "ck_conv",
      .fields = kFields,
      .make_default = [] { return KernelConfig(C{}); },
      .describe = &Describe,
  };
  return schema;
}

}  // namespace kselect
