#include "providers/cublaslt/cublaslt_config.h"

#include <string>

#include "providers/config_table.h"

namespace kselect {
namespace {

using config_table::Field;
using E = FeatureEncoding;
using S = SearchMove;
using C = CublasLtConfig;

// Every id is chosen from what cublasLtMatmulAlgoCapGetAttribute offers for the problem; the
// decoded sizes follow from the ids. Search groups: an algorithm's custom option and inner shape
// only mean something with that algorithm, stages with a tile, a reduction scheme with split-K.
constexpr ConfigField kFields[] = {
    Field<&C::algo_id>("algo_id")
        .AtLeast(0)
        .Key("algo")
        .Json("algo_id")
        .Column("cublaslt_algo_id")
        .Feature("cublaslt_algo_id", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("kernel"),
    Field<&C::tile_id>("tile_id")
        .AtLeast(0)
        .Key("tile")
        .Json("tile_id")
        .Column("cublaslt_tile_id")
        .Feature("cublaslt_tile_id", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("tile"),
    Field<&C::stages_id>("stages_id")
        .AtLeast(0)
        .Key("stages")
        .Json("stages_id")
        .Column("cublaslt_stages_id")
        .Feature("cublaslt_stages_id", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("tile"),
    Field<&C::split_k>("split_k")
        .AtLeast(0)
        .Key("splitk")
        .Json("split_k")
        .Column("split_k")
        .Search(S::kEnumerated)
        .SearchGroup("split_k"),
    Field<&C::reduction_scheme>("reduction_scheme")
        .AtLeast(0)
        .Key("reduction")
        .Json("reduction_scheme")
        .Column("cublaslt_reduction_scheme")
        .Feature("cublaslt_reduction_scheme", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("split_k"),
    Field<&C::swizzle>("swizzle")
        .AtLeast(0)
        .Key("swizzle")
        .Json("swizzle")
        .Column("swizzle")
        .Feature("cublaslt_swizzle", E::kNumber)
        .Search(S::kEnumerated),
    Field<&C::custom_option>("custom_option")
        .AtLeast(0)
        .Key("custom")
        .Json("custom_option")
        .Column("cublaslt_custom_option")
        .Feature("cublaslt_custom_option", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("kernel"),
    Field<&C::cluster_shape_id>("cluster_shape_id")
        .AtLeast(0)
        .Key("cluster")
        .Json("cluster_shape_id")
        .Column("cublaslt_cluster_shape_id")
        .Search(S::kEnumerated),
    Field<&C::inner_shape_id>("inner_shape_id")
        .AtLeast(0)
        .Key("inner")
        .Json("inner_shape_id")
        .Column("cublaslt_inner_shape_id")
        .Feature("cublaslt_inner_shape_id", E::kCategory)
        .Search(S::kEnumerated)
        .SearchGroup("kernel"),
    Field<&C::tile_m>("tile_m").AtLeast(0).Json("tile_m").Column("tile_m"),
    Field<&C::tile_n>("tile_n").AtLeast(0).Json("tile_n").Column("tile_n"),
    Field<&C::stage_k>("stage_k").AtLeast(0).Json("stage_k").Column("stage_k"),
    Field<&C::stages>("stages").AtLeast(0).Json("stages").Column("stages"),
    Field<&C::cluster_m>("cluster_m").AtLeast(0).Json("cluster_m").Column("cluster_m"),
    Field<&C::cluster_n>("cluster_n").AtLeast(0).Json("cluster_n").Column("cluster_n"),
    Field<&C::cluster_k>("cluster_k")
        .AtLeast(0)
        .Json("cluster_k")
        .Column("cluster_k")
        .Feature("cluster_k", E::kDefinedNumber),
};

// cublasLtReductionScheme_t by name (its values are bit flags: 1, 2, 4).
std::string ReductionSchemeLabel(int32_t scheme) {
  switch (scheme) {
    case 1:
      return "inplace";
    case 2:
      return "compute";
    case 4:
      return "output";
    default:
      return std::to_string(scheme);
  }
}

std::string Describe(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  std::string s = "cublaslt algo" + std::to_string(c.algo_id);
  if (c.tile_m > 0) s += " tile" + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n);
  if (c.stages > 0) s += " stages" + std::to_string(c.stage_k) + "x" + std::to_string(c.stages);
  if (c.split_k > 1) s += " splitk" + std::to_string(c.split_k);
  // Split-K configs differ only in where partial sums meet; without it two of them read alike.
  if (c.reduction_scheme != 0) s += " reduce-" + ReductionSchemeLabel(c.reduction_scheme);
  if (c.cluster_m > 0) s += " cluster" + config_table::Dims(c.cluster_m, c.cluster_n, c.cluster_k);
  if (c.swizzle) s += " swz";
  if (c.custom_option) s += " opt" + std::to_string(c.custom_option);
  if (c.inner_shape_id) s += " inner" + std::to_string(c.inner_shape_id);
  return s;
}

GemmKernelTraits Traits(const KernelConfig& config) {
  const C& c = std::get<C>(config);
  GemmKernelTraits t;
  t.tile_m = c.tile_m;
  t.tile_n = c.tile_n;
  t.tile_k = c.stage_k;
  t.split_k = std::max(c.split_k, 1);
  t.stages = c.stages;
  t.cluster_m = c.cluster_m;  // 0: the id is AUTO, the cluster undefined
  t.cluster_n = c.cluster_n;
  t.algo_id = c.algo_id;
  return t;
}

}  // namespace

const ConfigSchema& CublasLtConfigSchema() {
  static const ConfigSchema schema{
      .provider = Provider::kCublasLt,
      .name = "cublaslt",
      .fields = kFields,
      .make_default = [] { return KernelConfig(C{}); },
      .describe = &Describe,
      .gemm_traits = &Traits,
  };
  return schema;
}

}  // namespace kselect
